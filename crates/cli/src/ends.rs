//! `tracekit ends`: traffic per endpoint (traceends).

use std::io::Write;

use anyhow::Result;
use clap::{Args, ValueEnum};
use serde::Serialize;
use tracekit::Timestamp;
use tracekit::analysis::{EndpointKind, Endpoints};

use crate::Outcome;
use crate::numbered;
use crate::timefmt;

/// Traffic per endpoint (traceends): for every address, packets, bytes and application
/// bytes sent and received, and when it was first and last seen.
///
/// Bytes are IP lengths for IPv4 and IPv6 addresses (the IPv4 total length, the IPv6
/// payload length + 40) and wire lengths for MAC addresses; application bytes are the
/// transport payload the headers declare (0 without a transport header). Several files
/// add up into one table. Rows are in address order, or busiest first with `--sort`.
///
/// Example: `tracekit ends -A v6 --sort bytes --top 10 trace.pcap`
#[derive(Args)]
pub struct EndsArgs {
    /// Which addresses: mac, v4 or v6 (as traceends' -A).
    #[arg(short = 'A', long = "addresses", value_enum, default_value_t = Kind::V4)]
    addresses: Kind,
    /// Count only the packets matching this tcpdump filter expression.
    #[arg(short = 'f', long = "filter", value_name = "EXPR")]
    filter: Option<String>,
    /// Order rows by bytes or packets (sent + received), largest first.
    #[arg(long, value_enum)]
    sort: Option<Sort>,
    /// Print only the first N rows.
    #[arg(long, value_name = "N")]
    top: Option<usize>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// Trace files (`-` for standard input).
    #[arg(required = true)]
    files: Vec<String>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Kind {
    /// Ethernet addresses.
    Mac,
    /// IPv4 addresses.
    V4,
    /// IPv6 addresses.
    V6,
}

#[derive(Clone, Copy, ValueEnum)]
enum Sort {
    /// Bytes sent and received.
    Bytes,
    /// Packets sent and received.
    Packets,
}

#[derive(Serialize)]
struct RowJson {
    address: String,
    first_ns: u64,
    last_ns: u64,
    sent_packets: u64,
    sent_bytes: u64,
    sent_payload: u64,
    received_packets: u64,
    received_bytes: u64,
    received_payload: u64,
}

#[derive(Serialize)]
struct EndsJson<'a> {
    files: &'a [String],
    addresses: &'static str,
    packets: u64,
    without_address: u64,
    endpoints: Vec<RowJson>,
    error: Option<String>,
}

pub fn run(args: EndsArgs) -> Result<Outcome> {
    let kind = match args.addresses {
        Kind::Mac => EndpointKind::Mac,
        Kind::V4 => EndpointKind::Ipv4,
        Kind::V6 => EndpointKind::Ipv6,
    };
    let mut ends = Endpoints::new(kind);
    let mut packets = 0u64;
    let mut error = None;
    for file in &args.files {
        let ended = numbered::each_packet(file, args.filter.as_deref(), |_, p| {
            packets += 1;
            ends.add(p);
            Ok(true)
        })?;
        if let Some(e) = ended.error {
            error = Some(e);
            break;
        }
    }
    let mut rows = ends.rows();
    match args.sort {
        Some(Sort::Bytes) => {
            rows.sort_by_key(|(_, c)| std::cmp::Reverse(c.sent_bytes + c.received_bytes))
        }
        Some(Sort::Packets) => {
            rows.sort_by_key(|(_, c)| std::cmp::Reverse(c.sent_packets + c.received_packets))
        }
        None => {}
    }
    rows.truncate(args.top.unwrap_or(usize::MAX));
    // Buffered: a table of many rows is one write, not one per line.
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if args.json {
        let record = EndsJson {
            files: &args.files,
            addresses: match kind {
                EndpointKind::Mac => "mac",
                EndpointKind::Ipv4 => "v4",
                EndpointKind::Ipv6 => "v6",
            },
            packets,
            without_address: ends.skipped,
            endpoints: rows
                .iter()
                .map(|(a, c)| RowJson {
                    address: a.to_string(),
                    first_ns: c.first_ns,
                    last_ns: c.last_ns,
                    sent_packets: c.sent_packets,
                    sent_bytes: c.sent_bytes,
                    sent_payload: c.sent_payload,
                    received_packets: c.received_packets,
                    received_bytes: c.received_bytes,
                    received_payload: c.received_payload,
                })
                .collect(),
            error: error.as_ref().map(ToString::to_string),
        };
        serde_json::to_writer(&mut out, &record)?;
        writeln!(out)?;
    } else {
        let width = match kind {
            EndpointKind::Mac => 17,
            EndpointKind::Ipv4 => 15,
            EndpointKind::Ipv6 => 39,
        };
        writeln!(
            out,
            "{:<width$}  {:<23}  {:<23}  {:>10} {:>14} {:>14}  {:>10} {:>14} {:>14}",
            "address",
            "first seen (UTC)",
            "last seen (UTC)",
            "sent pkts",
            "sent bytes",
            "sent payload",
            "recv pkts",
            "recv bytes",
            "recv payload"
        )?;
        let time = |ns: u64| {
            let t = timefmt::utc(Timestamp::from_unix_nanos(ns));
            // Milliseconds are plenty for a table; --json has nanoseconds.
            t.get(..23).unwrap_or(&t).to_string()
        };
        for (a, c) in &rows {
            writeln!(
                out,
                "{:<width$}  {:<23}  {:<23}  {:>10} {:>14} {:>14}  {:>10} {:>14} {:>14}",
                a.to_string(),
                time(c.first_ns),
                time(c.last_ns),
                c.sent_packets,
                c.sent_bytes,
                c.sent_payload,
                c.received_packets,
                c.received_bytes,
                c.received_payload
            )?;
        }
        writeln!(
            out,
            "\n{} endpoints; {packets} packets, {} without an address of this kind",
            ends.len(),
            ends.skipped
        )?;
    }
    out.flush()?;
    drop(out);
    if let Some(e) = error {
        eprintln!(
            "tracekit ends: {e}\ntracekit ends: the figures above cover the {packets} packets before the damage"
        );
        return Ok(Outcome::Failed);
    }
    Ok(Outcome::Ok)
}
