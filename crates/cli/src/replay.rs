//! `tracekit replay`: send a trace's packets on an interface (tracereplay).

use std::io::Write;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use serde::Serialize;
use tracekit::decode::{Decoded, LinkKind};
use tracekit::replay::Pacer;
use tracekit_afpacket::Injector;

use crate::Outcome;

/// Send a trace's Ethernet frames on an interface (tracereplay), at the trace's own pace,
/// at a speed factor, or as fast as possible, then print what was sent.
///
/// Frames go out as captured (a frame cut by the snap length is sent cut, and counted);
/// packets without an Ethernet header (other link types) are skipped and counted. The
/// first packet goes at once and every later one when its time stamp says, relative to
/// the first, divided by `--speed`; a time stamp that goes backwards sends at once. Needs
/// the right to open a packet socket (root or CAP_NET_RAW). A frame the interface
/// refuses (larger than its MTU, say) stops the replay with an error naming the packet.
///
/// Example: `tracekit replay --speed 10 trace.pcap -i eth1`
#[derive(Args)]
pub struct ReplayArgs {
    /// Trace file (`-` for standard input).
    file: String,
    /// The interface to send on.
    #[arg(short = 'i', long = "interface", value_name = "IFACE")]
    interface: String,
    /// Speed factor (2: twice as fast as captured).
    #[arg(long, default_value_t = 1.0, value_parser = parse_speed, conflicts_with = "fast")]
    speed: f64,
    /// As fast as possible.
    #[arg(long)]
    fast: bool,
    /// Send only the packets matching this tcpdump filter expression.
    #[arg(short = 'f', long = "filter", value_name = "EXPR")]
    filter: Option<String>,
    /// Print the summary as one JSON object.
    #[arg(long)]
    json: bool,
}

fn parse_speed(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|e| format!("{e}"))?;
    if !(v.is_finite() && v > 0.0) {
        return Err("a positive factor".to_string());
    }
    Ok(v)
}

#[derive(Serialize, Default)]
struct Summary {
    packets: u64,
    bytes: u64,
    seconds: f64,
    packets_per_second: f64,
    megabits_per_second: f64,
    skipped_not_ethernet: u64,
    truncated: u64,
    error: Option<String>,
}

pub fn run(args: ReplayArgs) -> Result<Outcome> {
    let injector = Injector::open(&args.interface)
        .with_context(|| format!("cannot send on {}", args.interface))?;
    let mut source = crate::open_source(&args.file)?;
    if let Some(expr) = &args.filter {
        source = source
            .with_filter(expr)
            .with_context(|| format!("filter '{expr}'"))?;
    }
    let mut pacer = Pacer::new((!args.fast).then_some(args.speed));
    let stop = crate::ctrl_c_stop();
    let mut s = Summary::default();
    let mut start = None;
    let mut index = 0u64;
    let outcome = loop {
        if stop.is_stopped() {
            break Outcome::Interrupted;
        }
        let packet = match source.next_packet() {
            Ok(Some(p)) => p,
            Ok(None) => break Outcome::Ok,
            Err(e) => {
                s.error = Some(e.to_string());
                break Outcome::Failed;
            }
        };
        index += 1;
        let d = Decoded::new(&packet);
        let link = d.link();
        if link.kind != LinkKind::Ethernet {
            s.skipped_not_ethernet += 1;
            continue;
        }
        pacer.wait(packet.ts().as_unix_nanos());
        start.get_or_insert_with(Instant::now);
        if let Err(e) = injector.send(link.bytes) {
            s.error = Some(format!(
                "{}: packet {index} ({} bytes): {e}",
                args.file,
                link.bytes.len()
            ));
            break Outcome::Failed;
        }
        s.packets += 1;
        s.bytes += link.bytes.len() as u64;
        s.truncated += u64::from(packet.is_truncated());
    };
    s.seconds = start.map_or(0.0, |t| t.elapsed().as_secs_f64());
    if s.seconds > 0.0 {
        s.packets_per_second = s.packets as f64 / s.seconds;
        s.megabits_per_second = s.bytes as f64 * 8.0 / 1e6 / s.seconds;
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &s)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "{} packets ({} bytes) sent on {} in {:.3} s: {:.0} packets/s, {:.3} Mbit/s; {} skipped (not Ethernet), {} sent as cut by the capture",
            s.packets,
            s.bytes,
            args.interface,
            s.seconds,
            s.packets_per_second,
            s.megabits_per_second,
            s.skipped_not_ethernet,
            s.truncated
        )?;
    }
    out.flush()?;
    if let Some(e) = &s.error {
        eprintln!("tracekit replay: {e}");
    }
    Ok(outcome)
}
