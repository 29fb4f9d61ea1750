//! `tracekit report`: tracereport's families of counts, as text, JSON or an HTML page.

use std::io::Write;

use anyhow::{Context, Result};
use clap::Args;
use serde::Serialize;
use tracekit::Timestamp;
use tracekit::analysis::{Count, EndpointKind, Endpoints, Report, SIZE_BUCKETS, syn_option};

use crate::Outcome;
use crate::numbered;
use crate::timefmt;

/// A report on one or more traces (tracereport): time span and rate, directions,
/// network and transport protocols, server ports, IPv4 TTL and TOS (IPv6 hop limit and
/// traffic class), ECN codepoints, TCP options and the option sets of SYNs, TCP segment
/// sizes, errors, packet sizes.
///
/// Bytes are wire lengths. Server ports: of a packet's two ports, the one that looks
/// like a service (privileged ports, then 5000 and up, ...), as tracereport picks it.
/// Segment sizes are IPv4 TCP segments (IP total length minus IP header). Errors are
/// IPv4 header checksums that are wrong and the decoder's anomalies by name. Several
/// files add up into one report; `--json` prints one object.
///
/// Example: `tracekit report --json trace.pcap`
#[derive(Args)]
pub struct ReportArgs {
    /// Count only the packets matching this tcpdump filter expression.
    #[arg(short = 'f', long = "filter", value_name = "EXPR")]
    filter: Option<String>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// Also write a self-contained HTML page with plots (traffic over time, protocol
    /// mix, packet sizes, top ports and talkers) and tables to this file.
    #[arg(long, value_name = "OUT.html")]
    html: Option<String>,
    /// Trace files (`-` for standard input).
    #[arg(required = true)]
    files: Vec<String>,
}

#[derive(Serialize)]
struct Row<K: Serialize> {
    key: K,
    name: Option<String>,
    packets: u64,
    bytes: u64,
}

fn rows<K: Serialize>(
    it: impl IntoIterator<Item = (K, Count)>,
    name: impl Fn(&K) -> Option<String>,
) -> Vec<Row<K>> {
    it.into_iter()
        .map(|(k, c)| Row {
            name: name(&k),
            key: k,
            packets: c.packets,
            bytes: c.bytes,
        })
        .collect()
}

#[derive(Serialize)]
struct SynJson {
    options: Vec<&'static str>,
    syn: u64,
    synack: u64,
}

#[derive(Serialize)]
struct ReportJson<'a> {
    files: &'a [String],
    packets: u64,
    wire_bytes: u64,
    captured_bytes: u64,
    first_ns: Option<u64>,
    last_ns: Option<u64>,
    packets_per_second: Option<f64>,
    directions: Vec<Row<&'static str>>,
    network: Vec<Row<u16>>,
    protocols: Vec<Row<u8>>,
    ports: Vec<Row<(u8, u16)>>,
    ttl: Vec<Row<u8>>,
    hop_limit: Vec<Row<u8>>,
    tos: Vec<Row<u8>>,
    traffic_class: Vec<Row<u8>>,
    ecn_ipv4: Vec<Row<&'static str>>,
    ecn_ipv6: Vec<Row<&'static str>>,
    tcp_with_options: u64,
    tcp_options: Vec<(u8, u64)>,
    syn_options: Vec<SynJson>,
    syn_without_option_space: [u64; 2],
    segment_sizes: Vec<Row<u32>>,
    ipv4_checksum_errors: u64,
    with_anomalies: u64,
    anomalies: Vec<(&'static str, u64)>,
    sizes: Vec<Row<String>>,
    series_step: u64,
    series: Vec<Row<u64>>,
    error: Option<String>,
}

/// A few IP protocol names (those tracereport's /etc/protocols gives, as Debian names
/// them).
pub fn protocol_name(p: u8) -> Option<&'static str> {
    Some(match p {
        1 => "icmp",
        2 => "igmp",
        4 => "ipencap",
        6 => "tcp",
        17 => "udp",
        41 => "ipv6",
        47 => "gre",
        50 => "esp",
        51 => "ah",
        58 => "ipv6-icmp",
        89 => "ospf",
        103 => "pim",
        112 => "vrrp",
        132 => "sctp",
        _ => return None,
    })
}

/// Names of common EtherTypes.
pub fn ethertype_name(t: u16) -> Option<&'static str> {
    Some(match t {
        0x0800 => "IPv4",
        0x0806 => "ARP",
        0x86dd => "IPv6",
        0x8035 => "RARP",
        0x888e => "EAPOL",
        0x88cc => "LLDP",
        0x8863 => "PPPoE discovery",
        0x8864 => "PPPoE session",
        0x9000 => "loopback",
        // Below 0x0600 the field is an 802.3 length, and an LLC header follows.
        1..0x0600 => "802.3 length",
        _ => return None,
    })
}

const ECN: [&str; 4] = ["Not-ECT", "ECT(1)", "ECT(0)", "CE"];
const DIRECTIONS: [&str; 3] = ["inbound", "outbound", "unknown"];

fn tcp_option_name(k: u8) -> Option<&'static str> {
    Some(match k {
        2 => "MSS",
        3 => "window scale",
        4 => "SACK permitted",
        5 => "SACK",
        8 => "timestamps",
        19 => "MD5",
        28 => "user timeout",
        29 => "TCP-AO",
        30 => "MPTCP",
        34 => "fast open",
        _ => return None,
    })
}

fn syn_set_names(set: usize) -> Vec<&'static str> {
    syn_option::NAMES
        .iter()
        .enumerate()
        .filter(|(i, _)| set & (1 << i) != 0)
        .map(|(_, n)| *n)
        .collect()
}

fn size_label(i: usize) -> String {
    let lo = if i == 0 { 0 } else { SIZE_BUCKETS[i - 1] + 1 };
    match SIZE_BUCKETS[i] {
        u32::MAX => format!("{lo}+"),
        hi => format!("{lo}-{hi}"),
    }
}

fn pps(r: &Report) -> Option<f64> {
    let (a, b) = r.span?;
    (b > a).then(|| r.packets as f64 / ((b - a) as f64 / 1e9))
}

pub fn run(args: ReportArgs) -> Result<Outcome> {
    let mut report = Report::new();
    // The page's top talkers.
    let mut talkers = args.html.as_ref().map(|_| {
        (
            Endpoints::new(EndpointKind::Ipv4),
            Endpoints::new(EndpointKind::Ipv6),
        )
    });
    let mut packets = 0u64;
    let mut error = None;
    for file in &args.files {
        let ended = numbered::each_packet(file, args.filter.as_deref(), |_, p| {
            packets += 1;
            report.add(p);
            if let Some((v4, v6)) = talkers.as_mut() {
                v4.add(p);
                v6.add(p);
            }
            Ok(true)
        })?;
        if let Some(e) = ended.error {
            error = Some(e);
            break;
        }
    }
    if let (Some(path), Some((v4, v6))) = (&args.html, &talkers) {
        let page = crate::report_html::page(&args.files, &report, &[v4, v6])
            .map_err(|e| anyhow::anyhow!("drawing the plots: {e}"))?;
        std::fs::write(path, page).with_context(|| format!("cannot write {path}"))?;
    }
    // Buffered: a table of many rows is one write, not one per line.
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let r = &report;
    if args.json {
        let name = |n: Option<&'static str>| n.map(str::to_string);
        let record = ReportJson {
            files: &args.files,
            packets: r.packets,
            wire_bytes: r.wire_bytes,
            captured_bytes: r.captured_bytes,
            first_ns: r.span.map(|s| s.0),
            last_ns: r.span.map(|s| s.1),
            packets_per_second: pps(r),
            directions: rows(DIRECTIONS.iter().copied().zip(r.directions), |_| None),
            network: rows(r.network(), |t| name(ethertype_name(*t))),
            protocols: rows(r.protocols(), |p| name(protocol_name(*p))),
            ports: rows(r.ports(), |(p, _)| name(protocol_name(*p))),
            ttl: rows(r.ttl(), |_| None),
            hop_limit: rows(r.hop_limit(), |_| None),
            tos: rows(r.tos(), |_| None),
            traffic_class: rows(r.traffic_class(), |_| None),
            ecn_ipv4: rows(ECN.iter().copied().zip(r.ecn[0]), |_| None),
            ecn_ipv6: rows(ECN.iter().copied().zip(r.ecn[1]), |_| None),
            tcp_with_options: r.tcp_with_options,
            tcp_options: r.tcp_options().collect(),
            syn_options: (0..64)
                .filter(|&s| r.syn_options[0][s] + r.syn_options[1][s] > 0)
                .map(|s| SynJson {
                    options: syn_set_names(s),
                    syn: r.syn_options[0][s],
                    synack: r.syn_options[1][s],
                })
                .collect(),
            syn_without_option_space: r.syn_without_option_space,
            segment_sizes: rows(r.segment_sizes(), |_| None),
            ipv4_checksum_errors: r.ipv4_checksum_errors,
            with_anomalies: r.with_anomalies,
            anomalies: r.anomalies().map(|(a, n)| (a.name(), n)).collect(),
            sizes: rows(
                (0..SIZE_BUCKETS.len()).map(|i| (size_label(i), r.sizes[i])),
                |_| None,
            ),
            series_step: r.series_step(),
            series: rows(r.series(), |_| None),
            error: error.as_ref().map(ToString::to_string),
        };
        serde_json::to_writer(&mut out, &record)?;
        writeln!(out)?;
    } else {
        print_text(&mut out, r)?;
    }
    out.flush()?;
    drop(out);
    if let Some(e) = error {
        eprintln!(
            "tracekit report: {e}\ntracekit report: the figures above cover the {packets} packets before the damage"
        );
        return Ok(Outcome::Failed);
    }
    Ok(Outcome::Ok)
}

fn section(out: &mut impl Write, title: &str, header: &str) -> std::io::Result<()> {
    writeln!(out, "\n== {title}")?;
    writeln!(out, "{header:<24} {:>14} {:>16}", "packets", "bytes")
}

fn line(out: &mut impl Write, label: &str, c: Count) -> std::io::Result<()> {
    writeln!(out, "{label:<24} {:>14} {:>16}", c.packets, c.bytes)
}

fn labelled(v: impl std::fmt::Display, name: Option<&str>) -> String {
    match name {
        Some(n) => format!("{v} ({n})"),
        None => v.to_string(),
    }
}

fn print_text(out: &mut impl Write, r: &Report) -> std::io::Result<()> {
    writeln!(out, "== summary")?;
    if let Some((a, b)) = r.span {
        let t = |ns| timefmt::utc(Timestamp::from_unix_nanos(ns));
        writeln!(out, "start:          {}", t(a))?;
        writeln!(out, "end:            {}", t(b))?;
        writeln!(out, "duration:       {}", timefmt::seconds(b - a))?;
    }
    writeln!(out, "packets:        {}", r.packets)?;
    writeln!(out, "wire bytes:     {}", r.wire_bytes)?;
    writeln!(out, "captured bytes: {}", r.captured_bytes)?;
    if let Some(rate) = pps(r) {
        writeln!(out, "average rate:   {rate:.2} packets/s")?;
    }
    section(out, "directions", "direction")?;
    for (d, c) in DIRECTIONS.iter().zip(r.directions) {
        line(out, d, c)?;
    }
    section(out, "network protocols", "EtherType")?;
    for (t, c) in r.network() {
        line(out, &labelled(format!("0x{t:04x}"), ethertype_name(t)), c)?;
    }
    section(out, "transport protocols", "IP protocol")?;
    for (p, c) in r.protocols() {
        line(out, &labelled(p, protocol_name(p)), c)?;
    }
    section(out, "server ports", "protocol/port")?;
    for ((p, port), c) in r.ports() {
        let proto = protocol_name(p).map_or_else(|| p.to_string(), str::to_string);
        line(out, &format!("{proto}/{port}"), c)?;
    }
    section(out, "IPv4 TTL", "TTL")?;
    for (v, c) in r.ttl() {
        line(out, &v.to_string(), c)?;
    }
    section(out, "IPv6 hop limit", "hop limit")?;
    for (v, c) in r.hop_limit() {
        line(out, &v.to_string(), c)?;
    }
    section(out, "IPv4 TOS", "TOS")?;
    for (v, c) in r.tos() {
        line(out, &format!("0x{v:02x}"), c)?;
    }
    section(out, "IPv6 traffic class", "traffic class")?;
    for (v, c) in r.traffic_class() {
        line(out, &format!("0x{v:02x}"), c)?;
    }
    for (v, ecn) in ["IPv4", "IPv6"].iter().zip(r.ecn) {
        section(out, &format!("{v} ECN"), "codepoint")?;
        for (n, c) in ECN.iter().zip(ecn) {
            line(out, n, c)?;
        }
    }
    writeln!(
        out,
        "\n== TCP options ({} TCP packets with options)",
        r.tcp_with_options
    )?;
    writeln!(out, "{:<24} {:>14}", "option", "times")?;
    for (k, n) in r.tcp_options() {
        writeln!(out, "{:<24} {n:>14}", labelled(k, tcp_option_name(k)))?;
    }
    let (syns, synacks): (u64, u64) =
        (r.syn_options[0].iter().sum(), r.syn_options[1].iter().sum());
    writeln!(out, "\n== SYN options ({syns} SYNs, {synacks} SYN/ACKs)")?;
    writeln!(
        out,
        "{:<32} {:>10} {:>8} {:>10} {:>8}",
        "options", "SYN", "%", "SYN/ACK", "%"
    )?;
    let pct = |n: u64, of: u64| {
        if of == 0 {
            0.0
        } else {
            n as f64 * 100.0 / of as f64
        }
    };
    for s in 0..64 {
        let (a, b) = (r.syn_options[0][s], r.syn_options[1][s]);
        if a + b == 0 {
            continue;
        }
        let names = syn_set_names(s);
        let label = if names.is_empty() {
            "none".to_string()
        } else {
            names.join(",")
        };
        writeln!(
            out,
            "{label:<32} {a:>10} {:>7.2}% {b:>10} {:>7.2}%",
            pct(a, syns),
            pct(b, synacks)
        )?;
    }
    section(out, "IPv4 TCP segment sizes", "size")?;
    for (s, c) in r.segment_sizes() {
        line(out, &s.to_string(), c)?;
    }
    writeln!(out, "\n== errors")?;
    writeln!(
        out,
        "IPv4 header checksum errors: {}",
        r.ipv4_checksum_errors
    )?;
    writeln!(out, "packets with anomalies:      {}", r.with_anomalies)?;
    for (a, n) in r.anomalies() {
        writeln!(out, "  {:<30} {n}", a.name())?;
    }
    section(out, "packet sizes (wire length)", "bytes")?;
    for (i, c) in r.sizes.iter().enumerate() {
        line(out, &size_label(i), *c)?;
    }
    Ok(())
}
