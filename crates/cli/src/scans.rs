//! `tracekit scans`: the libtrace paper's Scans analysis over the flow table.

use std::io::Write;

use anyhow::Result;
use clap::Args;
use serde::Serialize;
use tracekit::flow::{FlowConfig, FlowTable, ScanDetector};

use crate::Outcome;
use crate::flows::{FlowsWorker, end_flows};
use crate::numbered::each_packet;

/// Sources that sent TCP SYNs to more than N distinct destinations (address and port)
/// without completing the handshakes (the libtrace paper's "Scans" analysis).
///
/// A connection attempt is a TCP flow whose originator sent a SYN; it failed unless the
/// SYN-ACK and the originator's ACK followed. Flows are those of `tracekit flows`
/// (tunnelled connections included, timeouts as there).
///
/// Example: `tracekit scans --threshold 20 samples/sample.pcap`
#[derive(Args)]
pub struct ScansArgs {
    /// Report sources with more than this many distinct failed destinations.
    #[arg(long, short = 't', default_value_t = 100)]
    threshold: usize,
    /// Analyse only the packets matching this tcpdump filter expression.
    #[arg(short = 'f', long = "filter", value_name = "EXPR")]
    filter: Option<String>,
    /// One JSON object per scanner and line.
    #[arg(long)]
    json: bool,
    /// Threads, the reading thread among them, which works too (1, the default:
    /// everything on one thread; 0: one per core). Packets are spread by address pair, so
    /// each flow stays on one worker's flow table; the ended flows are counted here, and
    /// the figures are those of one thread (unless a source passes the detector's caps,
    /// 65,536 destinations or a million sources, where which ones are kept depends on
    /// the order the flows end in).
    #[arg(long, default_value_t = 1, value_parser = crate::parse_workers)]
    threads: usize,
    /// Trace file (`-` for standard input).
    file: String,
}

#[derive(Serialize)]
struct ScannerJson {
    source: String,
    destinations: usize,
    hosts: usize,
    capped: bool,
}

pub fn run(args: ScansArgs) -> Result<Outcome> {
    let mut scans = ScanDetector::new();
    let ended = if crate::numbered::is_parallel(args.threads) {
        let (mut workers, ended, _) = crate::numbered::run_parallel(
            &args.file,
            args.filter.as_deref(),
            tracekit::parallel::Parallel::new(args.threads),
            |_| FlowsWorker::plain(FlowConfig::default()),
            |_, r| scans.add(&r),
        )?;
        end_flows(&mut workers, &mut |r| scans.add(r));
        ended
    } else {
        let mut table = FlowTable::new(FlowConfig::default());
        let ended = each_packet(&args.file, args.filter.as_deref(), |_, packet| {
            table.add(packet, &mut |r| scans.add(r));
            Ok(true)
        })?;
        table.finish(&mut |r| scans.add(r));
        ended
    };
    let scanners = scans.scanners(args.threshold);
    // Buffered: a table of many rows is one write, not one per line.
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if args.json {
        for s in &scanners {
            let j = ScannerJson {
                source: s.source.to_string(),
                destinations: s.destinations,
                hosts: s.hosts,
                capped: s.capped,
            };
            serde_json::to_writer(&mut out, &j)?;
            writeln!(out)?;
        }
    } else {
        writeln!(
            out,
            "{:>39} {:>12} {:>8}",
            "source", "destinations", "hosts"
        )?;
        for s in &scanners {
            let more = if s.capped { "+" } else { "" };
            writeln!(
                out,
                "{:>39} {:>12} {:>8}",
                s.source.to_string(),
                format!("{}{more}", s.destinations),
                s.hosts
            )?;
        }
        writeln!(
            out,
            "\n{} failed TCP connection attempts from {} sources; {} sources above {}",
            scans.attempts(),
            scans.sources(),
            scanners.len(),
            args.threshold
        )?;
    }
    out.flush()?;
    drop(out);
    if scans.dropped_sources() > 0 {
        eprintln!(
            "tracekit scans: {} attempts from sources beyond the first {} were not counted",
            scans.dropped_sources(),
            ScanDetector::MAX_SOURCES
        );
    }
    if let Some(e) = ended.error {
        eprintln!(
            "tracekit scans: {e}\ntracekit scans: {}: the figures above cover the {} packets before the damage",
            args.file, ended.read
        );
        return Ok(Outcome::Failed);
    }
    Ok(Outcome::Ok)
}
