//! TCP stream reassembly over a trace: every TCP stream's bytes each way, in order, once,
//! with gaps reported; prints a line per stream direction with its byte count, a
//! checksum of its bytes and its first bytes as text.
//!
//! ```text
//! cargo run --release -p tracekit --example tcp_streams -- trace.pcap
//! ```

use std::collections::HashMap;

use tracekit::decode::Decoded;
use tracekit::flow::{FlowConfig, FlowTable, StreamConfig, StreamEnd, StreamHandler, TcpStreams};

/// One direction so far: bytes, a running FNV-1a hash, the first 40 bytes, gap bytes.
type Direction = (u64, u64, Vec<u8>, u64);

/// Per (flow, direction).
#[derive(Default)]
struct Summary {
    seen: HashMap<(u64, bool), Direction>,
}

impl StreamHandler for Summary {
    fn data(&mut self, flow: u64, from_originator: bool, bytes: &[u8]) {
        let e = self.seen.entry((flow, from_originator)).or_insert((
            0,
            0xcbf2_9ce4_8422_2325,
            Vec::new(),
            0,
        ));
        e.0 += bytes.len() as u64;
        for &b in bytes {
            e.1 = (e.1 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        let room = 40usize.saturating_sub(e.2.len());
        e.2.extend_from_slice(&bytes[..room.min(bytes.len())]);
    }

    fn gap(&mut self, flow: u64, from_originator: bool, len: u64) {
        self.seen
            .entry((flow, from_originator))
            .or_insert((0, 0xcbf2_9ce4_8422_2325, Vec::new(), 0))
            .3 += len;
    }

    fn end(&mut self, flow: u64, from_originator: bool, how: StreamEnd) {
        if let Some((n, hash, first, gaps)) = self.seen.remove(&(flow, from_originator)) {
            let text: String = first
                .iter()
                .map(|&b| {
                    if b.is_ascii_graphic() || b == b' ' {
                        b as char
                    } else {
                        '.'
                    }
                })
                .collect();
            let dir = if from_originator { "->" } else { "<-" };
            println!(
                "flow {flow:>5} {dir} {n:>10} bytes  fnv {hash:016x}  gaps {gaps:>6}  {how:?}  {text}"
            );
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let file = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "samples/sample.pcap".to_string());
    let mut source = tracekit::open(&file)?;
    let mut table = FlowTable::new(FlowConfig::default());
    let mut streams = TcpStreams::new(StreamConfig::default());
    let mut summary = Summary::default();
    let mut ended = Vec::new();
    while let Some(packet) = source.next_packet()? {
        let d = Decoded::new(&packet);
        ended.clear();
        let placed = table.add_decoded(&d, packet.ts(), packet.wire_len(), 0, &mut |r| {
            ended.push(r.id)
        });
        // Streams end with their flows: their state stays as bounded as the table.
        for id in &ended {
            streams.end(*id, &mut summary);
        }
        if let Some(p) = placed {
            streams.segment(p, &d, &mut summary);
        }
    }
    streams.finish(&mut summary);
    let s = streams.stats();
    eprintln!(
        "{} bytes delivered, {} retransmitted, {} segments out of order, {} gaps ({} bytes)",
        s.delivered, s.retransmitted, s.out_of_order, s.gaps, s.gap_bytes
    );
    Ok(())
}
