//! A traffic generator for live-capture benchmarks: sends UDP/IPv4 frames over many flows
//! on an interface (a veth end, normally) at a fixed rate or as fast as it can.
//!
//! `tracekit-livegen IFACE COUNT [RATE_PPS (0: as fast as possible)] [FRAME_BYTES] [FLOWS] [THREADS]`
//!
//! With several threads, each sends its share of COUNT at its share of the rate.
//!
//! Prints `sent N`, `seconds S` and `rate R` (packets per second achieved). Frames go to a
//! MAC address that is not the peer's, so the receiving stack drops them after the
//! capture taps have seen them.

use std::time::{Duration, Instant};

use tracekit_afpacket::Injector;
use tracekit_testdata::builder::{Ethernet, Ipv4, PacketBuilder, Udp};

/// The frame of flow `flow`: `size` bytes (at least 60) of UDP from 10.1.x.y to
/// 10.2.0.1 port 9 (discard), zero payload. Made once per flow, before sending starts.
fn frame(flow: u32, size: usize) -> Vec<u8> {
    let zeros = vec![0u8; size.max(60) - (14 + 20 + 8)];
    PacketBuilder::new()
        .ethernet(Ethernet::new(
            [0x02, 0, 0, 0, 0, 0x01],
            [0x02, 0, 0, 0, 0, 0x02],
        ))
        .ipv4(Ipv4::new(
            [10, 1, (flow >> 8) as u8, flow as u8],
            [10, 2, 0, 1],
        ))
        .udp(Udp::new(10_000 + (flow % 50_000) as u16, 9))
        .payload(&zeros)
        .build()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: tracekit-livegen IFACE COUNT [RATE_PPS] [FRAME_BYTES] [FLOWS]");
        std::process::exit(2);
    }
    let num = |i: usize, default: u64| -> u64 {
        args.get(i).map_or(default, |s| {
            s.parse().unwrap_or_else(|_| {
                eprintln!("tracekit-livegen: '{s}' is not a number");
                std::process::exit(2)
            })
        })
    };
    let count = num(2, 0);
    let rate = num(3, 0);
    let size = num(4, 128) as usize;
    let flows = num(5, 256).max(1) as u32;
    let threads = num(6, 1).max(1);
    let frames: Vec<Vec<u8>> = (0..flows).map(|f| frame(f, size)).collect();
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            let (frames, iface) = (&frames, &args[1]);
            s.spawn(move || {
                let injector = match Injector::open(iface) {
                    Ok(i) => i,
                    Err(e) => {
                        eprintln!("tracekit-livegen: {e}");
                        std::process::exit(1);
                    }
                };
                let mine = count / threads + u64::from(t < count % threads);
                // Pacing in bursts of 32: packet i is due i / rate after the start.
                let per_packet =
                    (rate > 0).then(|| Duration::from_secs_f64(threads as f64 / rate as f64));
                for i in 0..mine {
                    if let Some(p) = per_packet
                        && i % 32 == 0
                    {
                        let due = p.mul_f64(i as f64);
                        while start.elapsed() < due {
                            std::hint::spin_loop();
                        }
                    }
                    let flow = (i * threads + t) % u64::from(flows);
                    if let Err(e) = injector.send(&frames[flow as usize]) {
                        eprintln!("tracekit-livegen: {e}");
                        std::process::exit(1);
                    }
                }
            });
        }
    });
    let secs = start.elapsed().as_secs_f64();
    println!(
        "sent {count}\nseconds {secs:.3}\nrate {:.0}",
        count as f64 / secs
    );
}
