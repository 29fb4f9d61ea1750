//! `tracekit stats`: packets and bytes per filter (libtrace's tracestats), and a protocol
//! breakdown.

use std::io::Write;

use anyhow::Result;
use clap::Args;
use serde::Serialize;
use tracekit::analysis::Protocols;
use tracekit::decode::Decoded;

use crate::Outcome;
use crate::numbered;

/// Count packets and bytes per filter and in total, like libtrace's tracestats; without
/// filters, also a protocol breakdown (IPv4/IPv6/other, TCP/UDP/ICMP/other, fragments,
/// and the decoder's anomalies by name).
///
/// Bytes are wire bytes (the packets' length on the wire); captured bytes are given
/// too. A damaged file gives the figures of its good packets, the error, and exit
/// status 1.
///
/// Example: `tracekit stats -f tcp -f "udp port 53" samples/sample.pcap`
#[derive(Args)]
pub struct StatsArgs {
    /// Count the packets matching this tcpdump filter expression (repeatable).
    #[arg(short = 'f', long = "filter", value_name = "EXPR")]
    filters: Vec<String>,
    /// Print one JSON object per file.
    #[arg(long)]
    json: bool,
    /// Threads (0, the default: one per core; 1: everything on one thread). The threads
    /// take turns at the file, each reading the next megabyte and counting its packets,
    /// and the counts are added up: the figures are those of one thread. On a live interface, one
    /// PACKET_FANOUT member per thread (0: one per core), the kernel spreading by flow.
    #[arg(long, default_value_t = 0, value_parser = crate::parse_workers)]
    threads: usize,
    /// Print the parallel run's figures (packets per worker, waits) to stderr.
    #[arg(long)]
    stats: bool,
    /// Join IP fragments before counting (filters then see whole datagrams; runs on one
    /// thread).
    #[arg(long)]
    reassemble: bool,
    /// Trace files (`-` for standard input).
    #[arg(required = true)]
    files: Vec<String>,
}

#[derive(Serialize, Default, Clone, Copy)]
struct Counts {
    packets: u64,
    captured_bytes: u64,
    wire_bytes: u64,
}

impl Counts {
    #[inline]
    fn add(&mut self, p: &tracekit::Packet<'_>) {
        self.packets += 1;
        self.captured_bytes += p.caplen() as u64;
        self.wire_bytes += u64::from(p.wire_len());
    }

    fn merge(&mut self, o: &Counts) {
        self.packets += o.packets;
        self.captured_bytes += o.captured_bytes;
        self.wire_bytes += o.wire_bytes;
    }
}

/// Everything `stats` counts for one file: one per worker in a parallel run.
struct Tally {
    filters: Vec<tracekit::Filter>,
    total: Counts,
    per_filter: Vec<Counts>,
    protocols: Option<Protocols>,
}

impl Tally {
    fn new(filters: Vec<tracekit::Filter>) -> Tally {
        Tally {
            per_filter: vec![Counts::default(); filters.len()],
            protocols: filters.is_empty().then(Protocols::default),
            filters,
            total: Counts::default(),
        }
    }

    fn add(&mut self, p: &tracekit::Packet<'_>) -> Result<(), tracekit::Error> {
        self.total.add(p);
        for (f, c) in self.filters.iter_mut().zip(self.per_filter.iter_mut()) {
            if f.matches(p)? {
                c.add(p);
            }
        }
        if let Some(protocols) = self.protocols.as_mut() {
            protocols.add_decoded(&Decoded::new(p));
        }
        Ok(())
    }

    fn merge(&mut self, o: &Tally) {
        self.total.merge(&o.total);
        for (a, b) in self.per_filter.iter_mut().zip(&o.per_filter) {
            a.merge(b);
        }
        if let (Some(a), Some(b)) = (self.protocols.as_mut(), o.protocols.as_ref()) {
            a.merge(b);
        }
    }
}

impl tracekit::parallel::Worker for Tally {
    type Item = ();

    fn packet(
        &mut self,
        p: &tracekit::Packet<'_>,
        _: &mut tracekit::parallel::Emit<'_, ()>,
    ) -> Result<(), tracekit::Error> {
        self.add(p)
    }
}

#[derive(Serialize)]
struct FilterJson<'a> {
    filter: &'a str,
    #[serde(flatten)]
    counts: Counts,
}

#[derive(Serialize)]
struct ProtocolsJson {
    ipv4: u64,
    ipv6: u64,
    other_network: u64,
    tcp: u64,
    udp: u64,
    icmp: u64,
    other_transport: u64,
    fragments: u64,
    with_anomalies: u64,
    anomalies: serde_json::Map<String, serde_json::Value>,
}

#[derive(Serialize)]
struct StatsJson<'a> {
    file: &'a str,
    #[serde(flatten)]
    total: Counts,
    filters: Vec<FilterJson<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    protocols: Option<ProtocolsJson>,
    error: Option<String>,
}

pub fn run(args: StatsArgs) -> Result<Outcome> {
    let filters = numbered::compile_all(&args.filters)?;
    let mut outcome = Outcome::Ok;
    let parallel = numbered::is_parallel(args.threads) && !args.reassemble;
    for (i, file) in args.files.iter().enumerate() {
        let mut tally = Tally::new(filters.clone());
        let ended = if parallel {
            numbered::parallel(file, None, args.threads, |_| Tally::new(filters.clone())).map(
                |(workers, ended, stats)| {
                    for w in &workers {
                        tally.merge(w);
                    }
                    if args.stats {
                        eprintln!("tracekit stats: {file}: {stats}");
                    }
                    ended
                },
            )
        } else {
            let mut defrag = numbered::defragmenter(args.reassemble);
            numbered::each_packet_joined(file, None, defrag.as_mut(), |_, p| {
                tally.add(p)?;
                Ok(true)
            })
        };
        let Tally {
            total,
            per_filter,
            protocols,
            ..
        } = tally;
        let ended = match ended {
            Ok(e) => e,
            Err(e) if crate::is_broken_pipe(&e) => return Err(e),
            Err(e) => {
                eprintln!("tracekit stats: {e:#}");
                outcome = Outcome::Failed;
                continue;
            }
        };
        let mut out = std::io::stdout().lock();
        if args.json {
            let record = StatsJson {
                file,
                total,
                filters: args
                    .filters
                    .iter()
                    .zip(&per_filter)
                    .map(|(f, c)| FilterJson {
                        filter: f,
                        counts: *c,
                    })
                    .collect(),
                protocols: protocols.as_ref().map(protocols_json),
                error: ended.error.as_ref().map(ToString::to_string),
            };
            serde_json::to_writer(&mut out, &record)?;
            writeln!(out)?;
        } else {
            if i > 0 {
                writeln!(out)?;
            }
            writeln!(out, "{file}:")?;
            let width = args
                .filters
                .iter()
                .map(|f| f.len())
                .chain([5])
                .max()
                .unwrap_or(5);
            writeln!(
                out,
                "  {:<width$}  {:>12}  {:>15}  {:>15}",
                "filter", "packets", "wire bytes", "captured bytes"
            )?;
            for (f, c) in args.filters.iter().zip(&per_filter) {
                print_counts(&mut out, f, c, width)?;
            }
            print_counts(&mut out, "total", &total, width)?;
            if let Some(p) = &protocols {
                print_protocols(&mut out, p)?;
            }
        }
        out.flush()?;
        drop(out);
        if let Some(e) = ended.error {
            eprintln!(
                "tracekit stats: {e}\ntracekit stats: {file}: the figures above cover the {} packets before the damage",
                total.packets
            );
            outcome = Outcome::Failed;
        }
    }
    Ok(outcome)
}

fn protocols_json(p: &Protocols) -> ProtocolsJson {
    ProtocolsJson {
        ipv4: p.ipv4,
        ipv6: p.ipv6,
        other_network: p.other_network,
        tcp: p.tcp,
        udp: p.udp,
        icmp: p.icmp,
        other_transport: p.other_transport,
        fragments: p.fragments,
        with_anomalies: p.with_anomalies,
        anomalies: p
            .anomalies()
            .map(|(a, n)| (a.name().to_string(), n.into()))
            .collect(),
    }
}

fn print_counts(out: &mut impl Write, name: &str, c: &Counts, width: usize) -> std::io::Result<()> {
    writeln!(
        out,
        "  {name:<width$}  {:>12}  {:>15}  {:>15}",
        c.packets, c.wire_bytes, c.captured_bytes
    )
}

fn print_protocols(out: &mut impl Write, p: &Protocols) -> std::io::Result<()> {
    let share = |n: u64| {
        if p.packets == 0 {
            0.0
        } else {
            n as f64 * 100.0 / p.packets as f64
        }
    };
    writeln!(out, "  protocols:")?;
    for (name, n) in [
        ("IPv4", p.ipv4),
        ("IPv6", p.ipv6),
        ("other network", p.other_network),
        ("TCP", p.tcp),
        ("UDP", p.udp),
        ("ICMP", p.icmp),
        ("other transport", p.other_transport),
        ("IP fragments", p.fragments),
        ("with anomalies", p.with_anomalies),
    ] {
        writeln!(out, "    {name:<24}  {n:>12}  {:>6.2}%", share(n))?;
    }
    let mut anomalies = p.anomalies().peekable();
    if anomalies.peek().is_some() {
        writeln!(out, "  anomalies:")?;
        for (a, n) in anomalies {
            writeln!(out, "    {:<24}  {n:>12}", a.name())?;
        }
    }
    Ok(())
}
