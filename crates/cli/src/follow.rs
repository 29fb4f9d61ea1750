//! `tracekit follow`: one TCP stream's reassembled bytes each way, like
//! `tshark -z follow,tcp,raw` (tracekit::flow::TcpStreams over a FlowTable).

use std::io::Write;
use std::net::SocketAddr;

use anyhow::{Result, bail};
use clap::Args;
use tracekit::decode::{Decoded, ip_proto};
use tracekit::flow::{
    Endpoint, FlowConfig, FlowKey, FlowTable, OverlapPolicy, StreamConfig, StreamEnd,
    StreamHandler, TcpStreams,
};

use crate::Outcome;
use crate::numbered::each_packet;

/// Write one TCP stream's payload, reassembled in sequence order, each way, as
/// `tshark -z follow,tcp,raw` does: a header naming the two nodes (node 0 sent the
/// stream's first packet), then one line of hex per piece delivered, node 1's indented
/// by a tab.
///
/// Streams are numbered as tshark's `tcp.stream`: TCP connections (tunnelled ones
/// included) in order of their first packet, from 0; a SYN with a new sequence number on
/// a used 5-tuple starts a new one. Retransmitted bytes are written once. Bytes the
/// capture missed but the peer acknowledged are reported on stderr as a gap, and writing
/// goes on after them; bytes captured after a hole the peer never acknowledged are left
/// out (said on stderr) unless --flush.
///
/// Example: `tracekit follow --stream 0 samples/sample.pcap`
#[derive(Args)]
pub struct FollowArgs {
    /// The stream's number (tshark's tcp.stream).
    #[arg(long, conflicts_with = "between", required_unless_present = "between")]
    stream: Option<u64>,
    /// The stream between these two endpoints (`ADDR:PORT`, IPv6 as `[ADDR]:PORT`; the
    /// first such connection).
    #[arg(long, num_args = 2, value_names = ["A", "B"])]
    between: Vec<SocketAddr>,
    /// Whose bytes win where buffered segments overlap (first, last, bsd, linux,
    /// windows).
    #[arg(long, default_value = "first", value_parser = parse_policy)]
    overlap_policy: OverlapPolicy,
    /// Also write the bytes captured after a hole that the peer never acknowledged
    /// (after the gap; by default they are left out, as tshark leaves them out).
    #[arg(long)]
    flush: bool,
    /// Trace file (`-` for standard input).
    file: String,
}

fn parse_policy(s: &str) -> Result<OverlapPolicy, String> {
    OverlapPolicy::from_name(s)
        .ok_or_else(|| format!("unknown policy '{s}' (known: first, last, bsd, linux, windows)"))
}

/// Collects the followed stream's pieces.
#[derive(Default)]
struct Followed {
    /// (from node 0, bytes)
    pieces: Vec<(bool, Vec<u8>)>,
    gaps: Vec<(bool, u64)>,
    overlaps_differ: u64,
    /// Whether node 0 is the flow's originator.
    node0_is_originator: bool,
}

impl StreamHandler for Followed {
    fn data(&mut self, _: u64, from_originator: bool, bytes: &[u8]) {
        self.pieces
            .push((from_originator == self.node0_is_originator, bytes.to_vec()));
    }
    fn gap(&mut self, _: u64, from_originator: bool, len: u64) {
        self.gaps
            .push((from_originator == self.node0_is_originator, len));
    }
    fn overlap_differs(&mut self, _: u64, _: bool) {
        self.overlaps_differ += 1;
    }
    fn end(&mut self, _: u64, _: bool, _: StreamEnd) {}
}

pub fn run(args: FollowArgs) -> Result<Outcome> {
    let wanted_key = match args.between.as_slice() {
        [a, b] => {
            let ep = |s: &SocketAddr| Endpoint {
                addr: s.ip(),
                port: s.port(),
            };
            match FlowKey::new(ep(a), ep(b), ip_proto::TCP) {
                Some((k, _)) => Some(k),
                None => bail!("--between: {a} and {b} are not of one IP version"),
            }
        }
        _ => None,
    };
    // No timeouts: tshark numbers streams over the whole trace.
    let mut table = FlowTable::new(FlowConfig {
        idle_timeout_ns: 0,
        ..FlowConfig::default()
    });
    let mut streams = TcpStreams::new(StreamConfig {
        policy: args.overlap_policy,
        deliver_unacknowledged: args.flush,
        // One stream is followed: keeping its last 64 KiB lets retransmissions that
        // carry other bytes be reported.
        keep_delivered: 1 << 16,
        ..StreamConfig::default()
    });
    let mut numbers: std::collections::HashMap<u64, u64> = Default::default();
    let mut target: Option<u64> = None;
    let mut nodes: Option<(Endpoint, Endpoint)> = None;
    let mut followed = Followed::default();
    let mut ended_target = false;
    let mut gone = Vec::new();
    let ended = each_packet(&args.file, None, |_, packet| {
        let mut level = 0u8;
        let mut d = Some(Decoded::new(packet));
        while let Some(cur) = d {
            if cur.ip_protocol() == Some(ip_proto::TCP)
                && cur.fragment().is_none_or(|f| f.is_first())
            {
                gone.clear();
                let placed =
                    table.add_decoded(&cur, packet.ts(), packet.wire_len(), level, &mut |r| {
                        gone.push(r.id)
                    });
                if let Some(t) = target
                    && gone.contains(&t)
                {
                    streams.end(t, &mut followed);
                    ended_target = true;
                }
                if let Some(p) = placed
                    && !ended_target
                {
                    let next = numbers.len() as u64;
                    let number = *numbers.entry(p.id).or_insert(next);
                    let is_target = match (args.stream, wanted_key) {
                        (Some(n), _) => number == n,
                        (None, Some(k)) => {
                            target.is_none_or(|t| t == p.id)
                                && table.get(&k).is_some_and(|r| r.id == p.id)
                        }
                        _ => false,
                    };
                    if is_target {
                        if target.is_none() {
                            target = Some(p.id);
                            // Node 0 sent the stream's first packet.
                            let (src, dst) = (
                                cur.src_addr()
                                    .unwrap_or(std::net::IpAddr::from([0, 0, 0, 0])),
                                cur.dst_addr()
                                    .unwrap_or(std::net::IpAddr::from([0, 0, 0, 0])),
                            );
                            nodes = Some((
                                Endpoint {
                                    addr: src,
                                    port: cur.src_port().unwrap_or(0),
                                },
                                Endpoint {
                                    addr: dst,
                                    port: cur.dst_port().unwrap_or(0),
                                },
                            ));
                            followed.node0_is_originator = p.from_originator;
                        }
                        streams.segment(p, &cur, &mut followed);
                    }
                }
            }
            d = cur.inner();
            level = level.saturating_add(1);
        }
        Ok(true)
    })?;
    streams.finish(&mut followed);
    let Some((n0, n1)) = nodes else {
        match args.stream {
            Some(n) => bail!(
                "{}: no TCP stream {n} (the trace has {})",
                args.file,
                numbers.len()
            ),
            None => bail!("{}: no TCP stream between the two endpoints", args.file),
        }
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let filter = match args.stream {
        Some(n) => format!("tcp.stream eq {n}"),
        None => format!("between {n0} and {n1}"),
    };
    writeln!(out)?;
    writeln!(out, "{}", "=".repeat(67))?;
    writeln!(out, "Follow: tcp,raw")?;
    writeln!(out, "Filter: {filter}")?;
    writeln!(out, "Node 0: {n0}")?;
    writeln!(out, "Node 1: {n1}")?;
    let mut line = String::new();
    for (node0, bytes) in &followed.pieces {
        line.clear();
        if !node0 {
            line.push('\t');
        }
        for b in bytes {
            line.push_str(&format!("{b:02x}"));
        }
        writeln!(out, "{line}")?;
    }
    writeln!(out, "{}", "=".repeat(67))?;
    out.flush()?;
    drop(out);
    for (node0, len) in &followed.gaps {
        eprintln!(
            "tracekit follow: {len} bytes from node {} were not captured (a gap)",
            if *node0 { 0 } else { 1 }
        );
    }
    let dropped = streams.stats().dropped;
    if dropped > 0 {
        eprintln!(
            "tracekit follow: {dropped} bytes captured after a hole the peer never acknowledged were left out (--flush writes them)"
        );
    }
    if followed.overlaps_differ > 0 {
        eprintln!(
            "tracekit follow: {} overlapping or retransmitted segments carried different bytes (the {} policy chose among buffered ones; delivered bytes stand)",
            followed.overlaps_differ,
            args.overlap_policy.name()
        );
    }
    if let Some(e) = ended.error {
        eprintln!(
            "tracekit follow: {e}\ntracekit follow: {}: the stream above covers the {} packets before the damage",
            args.file, ended.read
        );
        return Ok(Outcome::Failed);
    }
    Ok(Outcome::Ok)
}
