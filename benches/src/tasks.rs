//! The benchmark tasks, written against the public tracekit API as a user would.

use tracekit::analysis::Ports;
use tracekit::{Error, ReadMode};

/// Task T1: count packets and captured bytes.
pub fn t1_count(uri: &str, mode: ReadMode) -> Result<(u64, u64), Error> {
    t1_count_with(uri, mode, 0)
}

/// Task T1 with a decompression thread count (0: one per core).
pub fn t1_count_with(uri: &str, mode: ReadMode, threads: usize) -> Result<(u64, u64), Error> {
    let options = tracekit::OpenOptions {
        read_mode: mode,
        threads,
        ..Default::default()
    };
    let mut source = tracekit::open_with(uri, &options)?;
    let mut bytes = 0u64;
    let packets = source.try_for_each(|p| {
        bytes += p.caplen() as u64;
        Ok::<(), Error>(())
    })?;
    Ok((packets, bytes))
}

/// Task T1 through a `next_packet` loop instead of [`tracekit::Source::try_for_each`]
/// (criterion `t1_count`: what the reader's own loop saves).
pub fn t1_count_next_packet(uri: &str) -> Result<(u64, u64), Error> {
    let mut source = tracekit::open(uri)?;
    let (mut packets, mut bytes) = (0u64, 0u64);
    while let Some(p) = source.next_packet()? {
        packets += 1;
        bytes += p.caplen() as u64;
    }
    Ok((packets, bytes))
}

/// Task T1 over the packets a tcpdump filter expression accepts.
pub fn t1_count_filtered(uri: &str, expr: &str) -> Result<(u64, u64), Error> {
    let mut source = tracekit::open(uri)?.with_filter(expr)?;
    let (mut packets, mut bytes) = (0u64, 0u64);
    source.try_for_each(|p| {
        packets += 1;
        bytes += p.caplen() as u64;
        Ok::<(), Error>(())
    })?;
    Ok((packets, bytes))
}

use tracekit::decode::dns::RData;
use tracekit::decode::{Decoded, TcpOption};

/// Task T2's result: TCP packets, and sums over their headers.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TcpSums {
    /// Packets with a TCP header.
    pub packets: u64,
    /// Sum of source and destination ports.
    pub ports: u64,
    /// Sum of sequence numbers.
    pub seq: u64,
    /// Packets with SYN set.
    pub syn: u64,
    /// Sum of payload lengths as the headers declare them.
    pub payload: u64,
}

/// Task T2: decode every packet down to TCP and sum header fields.
pub fn t2_tcp(uri: &str) -> Result<TcpSums, Error> {
    let mut source = tracekit::open(uri)?;
    let mut s = TcpSums::default();
    source.try_for_each(|p| {
        let d = Decoded::new(p);
        if let Some(tcp) = d.tcp() {
            s.packets += 1;
            s.ports += u64::from(tcp.src_port()) + u64::from(tcp.dst_port());
            s.seq += u64::from(tcp.seq_number());
            s.syn += u64::from(tcp.syn());
            s.payload += u64::from(d.payload_wire_len().unwrap_or(0));
        }
        Ok::<(), Error>(())
    })?;
    Ok(s)
}

/// Task T3's result: TCP option counts.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct OptionCounts {
    /// TCP packets.
    pub packets: u64,
    /// MSS options, and the sum of their values.
    pub mss: u64,
    /// Sum of MSS values.
    pub mss_sum: u64,
    /// Window-scale options.
    pub wscale: u64,
    /// SACK-permitted options.
    pub sack_permitted: u64,
    /// SACK blocks.
    pub sack_blocks: u64,
    /// Timestamp options.
    pub timestamps: u64,
    /// Other options.
    pub other: u64,
}

/// Task T3: walk every TCP packet's options.
pub fn t3_tcpopts(uri: &str) -> Result<OptionCounts, Error> {
    let mut source = tracekit::open(uri)?;
    let mut c = OptionCounts::default();
    source.try_for_each(|p| {
        let d = Decoded::new(p);
        let Some(tcp) = d.tcp() else { return Ok(()) };
        c.packets += 1;
        for o in tcp.options() {
            match o {
                TcpOption::Mss(v) => {
                    c.mss += 1;
                    c.mss_sum += u64::from(v);
                }
                TcpOption::WindowScale(_) => c.wscale += 1,
                TcpOption::SackPermitted => c.sack_permitted += 1,
                TcpOption::Sack(b) => c.sack_blocks += b.len() as u64,
                TcpOption::Timestamps { .. } => c.timestamps += 1,
                TcpOption::Unknown { .. } => c.other += 1,
            }
        }
        Ok::<(), Error>(())
    })?;
    Ok(c)
}

/// Task T4's result.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DnsCounts {
    /// DNS messages.
    pub messages: u64,
    /// Responses.
    pub responses: u64,
    /// Questions.
    pub questions: u64,
    /// Answer records.
    pub answers: u64,
    /// Sum of the lengths of question names' labels.
    pub name_bytes: u64,
    /// A and AAAA answers.
    pub addresses: u64,
}

/// Task T4: parse every DNS message: questions with their names, answers with their data.
pub fn t4_dns(uri: &str) -> Result<DnsCounts, Error> {
    let mut source = tracekit::open(uri)?;
    let mut c = DnsCounts::default();
    source.try_for_each(|p| {
        let d = Decoded::new(p);
        let Some(m) = d.dns() else { return Ok(()) };
        c.messages += 1;
        c.responses += u64::from(m.is_response());
        for q in m.questions() {
            c.questions += 1;
            for label in q.name.labels().flatten() {
                c.name_bytes += label.len() as u64;
            }
        }
        for r in m.answers() {
            c.answers += 1;
            if matches!(r.data(), RData::A(_) | RData::Aaaa(_)) {
                c.addresses += 1;
            }
        }
        Ok::<(), Error>(())
    })?;
    Ok(c)
}

/// Task T5 (the libtrace paper's "Ports" analysis): packets and application bytes per
/// transport protocol and port, for source and destination ports, as
/// [`tracekit::analysis::Ports`] counts them (the library type `tracekit ports` uses).
pub fn t5_ports(uri: &str) -> Result<Ports, Error> {
    let mut source = tracekit::open(uri)?;
    let mut ports = Ports::new();
    source.try_for_each(|p| {
        ports.add(p);
        Ok::<(), Error>(())
    })?;
    Ok(ports)
}

/// Task T8 (gzip writing): copies `input` into `output` as gzip-compressed pcap at level
/// 6 (the compression pipeline on `threads` threads, 0 for one per core); returns the
/// packets written.
pub fn t8_gzwrite(input: &str, output: &str, threads: usize) -> Result<u64, Error> {
    let mut source = tracekit::open(input)?;
    let options = tracekit::CreateOptions {
        format: Some(tracekit::Format::Pcap),
        ts_resolution: Some(source.ts_resolution()),
        snaplen: source.snaplen().filter(|s| *s != 0),
        link_type: source.declared_link_type(),
        compression: Some(tracekit::Compression::Gzip),
        level: Some(6),
        threads,
        ..Default::default()
    };
    let mut sink = tracekit::create(output, &options)?;
    let written = tracekit::copy(&mut source, &mut sink, |_| {}).map_err(|(e, _)| match e {
        tracekit::CopyError::Read(e) | tracekit::CopyError::Write(e) => e,
    })?;
    sink.finish()?;
    Ok(written)
}

/// A digest of the packets of `files` read one after the other (time stamp in ns, wire
/// length, captured bytes): equal digests mean the same packets in the same order,
/// whatever the format, compression or encoder. Returns (packets, digest).
pub fn digest(files: &[String]) -> Result<(u64, u64), Error> {
    use std::hash::Hasher;
    let mut h = std::hash::DefaultHasher::new();
    let mut packets = 0u64;
    for file in files {
        let mut source = tracekit::open(file)?;
        source.try_for_each(|p| {
            packets += 1;
            h.write_u64(p.ts().as_unix_nanos());
            h.write_u32(p.wire_len());
            h.write_usize(p.caplen());
            h.write(p.data());
            Ok::<(), Error>(())
        })?;
    }
    Ok((packets, h.finish()))
}

/// Task T9 (the libtrace paper's "Scans" analysis on the flow table): TCP connection
/// attempts that failed, per source; returns (failed attempts, sources with one, sources
/// with more than `threshold` distinct destinations).
pub fn t9_scans(uri: &str, threshold: usize) -> Result<(u64, usize, usize), Error> {
    use tracekit::flow::{FlowConfig, FlowTable, ScanDetector};
    let mut source = tracekit::open(uri)?;
    let mut table = FlowTable::new(FlowConfig::default());
    let mut scans = ScanDetector::new();
    source.try_for_each(|p| {
        table.add(p, &mut |r| scans.add(r));
        Ok::<(), Error>(())
    })?;
    table.finish(&mut |r| scans.add(r));
    Ok((
        scans.attempts(),
        scans.sources(),
        scans.scanners(threshold).len(),
    ))
}

/// What task T10 counts: TCP and UDP conversations (5-tuples, both directions) with
/// their packets and wire bytes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct FlowCounts {
    /// TCP conversations.
    pub tcp_flows: u64,
    /// Their packets.
    pub tcp_packets: u64,
    /// Their wire bytes.
    pub tcp_bytes: u64,
    /// UDP conversations.
    pub udp_flows: u64,
    /// Their packets.
    pub udp_packets: u64,
    /// Their wire bytes.
    pub udp_bytes: u64,
}

/// Task T10 (flows): the flow table over the trace (no timeouts, outer packets only, as
/// the peers count), TCP and UDP conversations summed at the end.
pub fn t10_flows(uri: &str) -> Result<FlowCounts, Error> {
    use tracekit::flow::{FlowConfig, FlowRecord, FlowTable};
    let mut source = tracekit::open(uri)?;
    let mut table = FlowTable::new(FlowConfig {
        idle_timeout_ns: 0,
        tunnels: false,
        ..FlowConfig::default()
    });
    let mut c = FlowCounts::default();
    let mut count = |r: &FlowRecord| match r.protocol() {
        6 => {
            c.tcp_flows += 1;
            c.tcp_packets += r.packets();
            c.tcp_bytes += r.wire_bytes();
        }
        17 => {
            c.udp_flows += 1;
            c.udp_packets += r.packets();
            c.udp_bytes += r.wire_bytes();
        }
        _ => {}
    };
    source.try_for_each(|p| {
        table.add(p, &mut count);
        Ok::<(), Error>(())
    })?;
    table.finish(&mut count);
    Ok(c)
}

/// What task T11 counts: TCP streams that carried data, and the bytes reassembled each
/// way (client: the side that opened the connection).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct StreamCounts {
    /// Streams with at least one byte delivered.
    pub streams: u64,
    /// Bytes from the clients.
    pub client_bytes: u64,
    /// Bytes from the servers.
    pub server_bytes: u64,
}

/// Task T11 (TCP streams): the flow table (no timeouts) with TCP stream reassembly
/// beside it; every stream's bytes delivered in order, once, and counted.
pub fn t11_streams(uri: &str) -> Result<StreamCounts, Error> {
    use tracekit::decode::Decoded;
    use tracekit::flow::{FlowConfig, FlowTable, StreamConfig, StreamHandler, TcpStreams};

    #[derive(Default)]
    struct Count {
        c: StreamCounts,
        seen: std::collections::HashSet<u64>,
    }
    impl StreamHandler for Count {
        fn data(&mut self, flow: u64, from_originator: bool, bytes: &[u8]) {
            if self.seen.insert(flow) {
                self.c.streams += 1;
            }
            if from_originator {
                self.c.client_bytes += bytes.len() as u64;
            } else {
                self.c.server_bytes += bytes.len() as u64;
            }
        }
    }

    let mut source = tracekit::open(uri)?;
    let mut table = FlowTable::new(FlowConfig {
        idle_timeout_ns: 0,
        tunnels: false,
        ..FlowConfig::default()
    });
    let mut streams = TcpStreams::new(StreamConfig::default());
    let mut count = Count::default();
    let mut ended = Vec::new();
    source.try_for_each(|p| {
        let d = Decoded::new(p);
        ended.clear();
        let placed = table.add_decoded(&d, p.ts(), p.wire_len(), 0, &mut |r| ended.push(r.id));
        for id in &ended {
            streams.end(*id, &mut count);
        }
        if let Some(placed) = placed {
            streams.segment(placed, &d, &mut count);
        }
        Ok::<(), Error>(())
    })?;
    streams.finish(&mut count);
    Ok(count.c)
}
