//! `tracekit ports`: the libtrace paper's Ports analysis.

use std::io::Write;

use anyhow::Result;
use clap::Args;
use serde::Serialize;
use tracekit::analysis::{PortRow, Ports};

use crate::Outcome;
use crate::columns::aligned;
use crate::numbered;

/// Packets and application bytes per transport protocol and port, for source and
/// destination ports (the libtrace paper's "Ports" analysis).
///
/// Application bytes are the transport payload's length on the wire. Non-first IP
/// fragments (no transport header), TCP/UDP packets whose header was cut by the
/// capture, and packets that are not TCP or UDP are counted on their own lines, never
/// attributed to a guessed port.
///
/// Example: `tracekit ports --json samples/sample.pcap`
#[derive(Args)]
pub struct PortsArgs {
    /// Analyse only the packets matching this tcpdump filter expression.
    #[arg(short = 'f', long = "filter", value_name = "EXPR")]
    filter: Option<String>,
    /// Print one JSON object: the rows, the separate counts and the table's checksum.
    #[arg(long)]
    json: bool,
    /// Threads (0, the default: one per core; 1: everything on one thread). The threads
    /// take turns at the file, each reading the next megabyte and counting its packets,
    /// and the tables are added up: the figures are those of one thread. On a live interface, one
    /// PACKET_FANOUT member per thread (0: one per core), the kernel spreading by flow.
    #[arg(long, default_value_t = 0, value_parser = crate::parse_workers)]
    threads: usize,
    /// Print the parallel run's figures (packets per worker, waits) to stderr.
    #[arg(long)]
    stats: bool,
    /// Join IP fragments before counting (their datagrams then count under their ports;
    /// runs on one thread).
    #[arg(long)]
    reassemble: bool,
    /// Trace file (`-` for standard input).
    file: String,
}

#[derive(Serialize)]
struct RowJson {
    protocol: &'static str,
    port: u16,
    src_packets: u64,
    src_bytes: u64,
    dst_packets: u64,
    dst_bytes: u64,
}

#[derive(Serialize)]
struct PortsJson<'a> {
    file: &'a str,
    packets: u64,
    attributed_packets: u64,
    attributed_bytes: u64,
    fragments: u64,
    truncated: u64,
    other: u64,
    checksum: u64,
    ports: Vec<RowJson>,
    error: Option<String>,
}

/// A parallel worker: its own table.
struct PortsWorker(Ports);

impl tracekit::parallel::Worker for PortsWorker {
    type Item = ();

    fn packet(
        &mut self,
        packet: &tracekit::Packet<'_>,
        _: &mut tracekit::parallel::Emit<'_, ()>,
    ) -> Result<(), tracekit::Error> {
        self.0.add(packet);
        Ok(())
    }
}

pub fn run(args: PortsArgs) -> Result<Outcome> {
    let mut ports;
    let mut packets = 0u64;
    let ended = if numbered::is_parallel(args.threads) && !args.reassemble {
        let (workers, ended, stats) =
            numbered::parallel(&args.file, args.filter.as_deref(), args.threads, |_| {
                PortsWorker(Ports::new_written())
            })?;
        // Added up into the first worker's table (a table is 4 MiB: a fresh one would
        // cost its page faults and a pass more).
        let mut workers = workers.into_iter();
        ports = workers.next().map_or_else(Ports::new, |w| w.0);
        for w in workers {
            ports.merge(&w.0);
        }
        packets = ended.read;
        if args.stats {
            eprintln!("tracekit ports: {stats}");
        }
        ended
    } else {
        ports = Ports::new();
        let mut defrag = numbered::defragmenter(args.reassemble);
        numbered::each_packet_joined(
            &args.file,
            args.filter.as_deref(),
            defrag.as_mut(),
            |_, p| {
                packets += 1;
                ports.add(p);
                Ok(true)
            },
        )?
    };
    // Buffered: a table of many rows is one write, not one per line.
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if args.json {
        let record = PortsJson {
            file: &args.file,
            packets,
            attributed_packets: ports.packets(),
            attributed_bytes: ports.bytes(),
            fragments: ports.fragments,
            truncated: ports.truncated,
            other: ports.other,
            checksum: ports.checksum(),
            ports: ports.rows().map(row_json).collect(),
            error: ended.error.as_ref().map(ToString::to_string),
        };
        serde_json::to_writer(&mut out, &record)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "{:<5} {:>5} {:>12} {:>15} {:>12} {:>15}",
            "proto", "port", "src packets", "src bytes", "dst packets", "dst bytes"
        )?;
        // The header's layout, padded by `aligned` (std pads a character at a time).
        for r in ports.rows() {
            aligned(&mut out, r.protocol_name(), 5, false)?;
            out.write_all(b" ")?;
            aligned(&mut out, r.port, 5, true)?;
            out.write_all(b" ")?;
            aligned(&mut out, r.src_packets, 12, true)?;
            out.write_all(b" ")?;
            aligned(&mut out, r.src_bytes, 15, true)?;
            out.write_all(b" ")?;
            aligned(&mut out, r.dst_packets, 12, true)?;
            out.write_all(b" ")?;
            aligned(&mut out, r.dst_bytes, 15, true)?;
            out.write_all(b"\n")?;
        }
        writeln!(out)?;
        writeln!(out, "packets analysed:        {packets}")?;
        writeln!(
            out,
            "attributed to ports:     {} ({} application bytes)",
            ports.packets(),
            ports.bytes()
        )?;
        writeln!(out, "non-first fragments:     {}", ports.fragments)?;
        writeln!(out, "truncated TCP/UDP:       {}", ports.truncated)?;
        writeln!(out, "not TCP/UDP:             {}", ports.other)?;
    }
    out.flush()?;
    drop(out);
    if let Some(e) = ended.error {
        eprintln!(
            "tracekit ports: {e}\ntracekit ports: {}: the figures above cover the {packets} packets before the damage",
            args.file
        );
        return Ok(Outcome::Failed);
    }
    Ok(Outcome::Ok)
}

fn row_json(r: PortRow) -> RowJson {
    RowJson {
        protocol: r.protocol_name(),
        port: r.port,
        src_packets: r.src_packets,
        src_bytes: r.src_bytes,
        dst_packets: r.dst_packets,
        dst_bytes: r.dst_bytes,
    }
}
