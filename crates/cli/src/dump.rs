//! `tracekit dump`: a per-layer, human-readable decode of each packet.

use std::io::Write;

use std::fmt::Write as _;

use anyhow::Result;
use clap::Args;
use tracekit::decode::Decoded;
use tracekit::decode::dump::write_layers;

use crate::Outcome;
use crate::numbered::{self, each_packet};
use crate::timefmt;

/// Print every layer of every packet in readable form (like `tracepktdump` or
/// `tcpdump -v`), with anomalies and the layers inside tunnels.
///
/// Example: `tracekit dump -c 5 -f "udp port 53" samples/sample.pcap`
#[derive(Args)]
pub struct DumpArgs {
    /// Stop after this many packets.
    #[arg(short = 'c', long = "count", value_name = "N")]
    count: Option<u64>,
    /// Print only packets matching this tcpdump filter expression.
    #[arg(short = 'f', long = "filter", value_name = "EXPR")]
    filter: Option<String>,
    /// Also print the captured bytes in hex.
    #[arg(short = 'x', long)]
    hex: bool,
    /// Threads, the reading thread among them, which works too (0: one per core; 1, the
    /// default: everything on one thread). Packets are decoded in parallel and printed
    /// in file order: the output is that of one thread.
    #[arg(long, default_value_t = 1, value_parser = crate::parse_workers)]
    threads: usize,
    /// Trace file (`-` for standard input).
    file: String,
}

pub fn run(args: DumpArgs) -> Result<Outcome> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut text = String::new();
    let mut shown = 0u64;
    let live = crate::is_live(&args.file);
    if args.count == Some(0) {
        return Ok(Outcome::Ok);
    }
    let hex = args.hex;
    let ended = if numbered::is_parallel(args.threads) && !live {
        numbered::ordered_text(
            &args.file,
            args.filter.as_deref(),
            args.threads,
            args.count,
            |number, packet, text| format_packet(text, number, packet, hex),
            &mut out,
        )?
        .0
    } else {
        each_packet(&args.file, args.filter.as_deref(), |number, packet| {
            shown += 1;
            text.clear();
            format_packet(&mut text, number, packet, hex);
            out.write_all(text.as_bytes())?;
            if live {
                out.flush()?;
            }
            Ok(args.count.is_none_or(|c| shown < c))
        })?
    };
    out.flush()?;
    match ended.error {
        Some(e) => {
            eprintln!(
                "tracekit dump: {e}\ntracekit dump: {}: the packets above are those before the damage",
                args.file
            );
            Ok(Outcome::Failed)
        }
        None => Ok(Outcome::Ok),
    }
}

/// One packet's text: a summary line, its layers, its bytes in hex with `hex`.
fn format_packet(text: &mut String, number: u64, packet: &tracekit::Packet<'_>, hex: bool) {
    let m = packet.meta();
    let _ = writeln!(
        text,
        "Packet {number}: {} caplen {} wire {} link {}{}",
        timefmt::utc(m.ts),
        packet.caplen(),
        m.wire_len,
        m.link,
        if m.interface != 0 {
            format!(" interface {}", m.interface)
        } else {
            String::new()
        }
    );
    let d = Decoded::new(packet);
    let _ = write_layers(text, &d, "  ");
    if hex {
        for (i, chunk) in packet.data().chunks(16).enumerate() {
            let _ = write!(text, "  {:04x}: ", i * 16);
            for b in chunk {
                let _ = write!(text, "{b:02x} ");
            }
            text.push('\n');
        }
    }
    text.push('\n');
}
