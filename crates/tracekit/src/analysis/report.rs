//! The families of counts libtrace's tracereport prints, accumulated packet by packet:
//! time span and rate, directions, network protocols, transport protocols, server ports,
//! IPv4 TTL and TOS (and IPv6 hop limit and traffic class), ECN codepoints, TCP options
//! and the option sets of SYNs, TCP segment sizes, and errors (checksums, decoder
//! anomalies), plus what plots want: traffic per second and a packet-size histogram.

use std::collections::HashMap;

use tracekit_core::{Direction, Packet};
use tracekit_decode::{Anomaly, Decoded, TcpOption, ip_proto};

/// Packets and wire bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Count {
    /// Packets.
    pub packets: u64,
    /// Bytes on the wire.
    pub bytes: u64,
}

impl Count {
    #[inline]
    fn add(&mut self, bytes: u64) {
        self.packets += 1;
        self.bytes += bytes;
    }

    fn merge(&mut self, o: &Count) {
        self.packets += o.packets;
        self.bytes += o.bytes;
    }
}

/// The options a SYN carries, as a set: one bit each.
pub mod syn_option {
    /// Maximum segment size.
    pub const MSS: u8 = 1;
    /// Window scale.
    pub const WINDOW_SCALE: u8 = 2;
    /// SACK permitted (or SACK blocks).
    pub const SACK: u8 = 4;
    /// Timestamps.
    pub const TIMESTAMPS: u8 = 8;
    /// T/TCP (kinds 11, 12, 13).
    pub const TTCP: u8 = 16;
    /// Any other kind.
    pub const OTHER: u8 = 32;
    /// The names of the bits, in bit order.
    pub const NAMES: [&str; 6] = ["MSS", "WS", "SACK", "TS", "T/TCP", "other"];
}

/// Segment sizes above this are counted together (tracereport drops them).
pub const MAX_SEGMENT: usize = 65_535;

/// Packet-size histogram bucket upper bounds (wire length, inclusive); the last bucket
/// holds everything larger.
pub const SIZE_BUCKETS: [u32; 8] = [64, 128, 256, 512, 1024, 1518, 9018, u32::MAX];

/// The most seconds the per-second series keeps before it merges neighbours (so that a
/// trace with wild time stamps cannot make it grow without bound).
const MAX_SERIES: usize = 4096;

/// tracereport's families of counts over a set of packets. Fixed tables, plus maps that
/// grow only with new keys (EtherTypes, ports, segment sizes): no allocation for a
/// packet whose keys were seen before.
///
/// ```no_run
/// use tracekit::analysis::Report;
/// let mut report = Report::new();
/// let mut source = tracekit::open("trace.pcap")?;
/// while let Some(packet) = tracekit::CaptureSource::next_packet(&mut source)? {
///     report.add(&packet);
/// }
/// println!("{} TCP packets", report.protocol(6).packets);
/// # Ok::<(), tracekit::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Report {
    /// Packets.
    pub packets: u64,
    /// Wire bytes.
    pub wire_bytes: u64,
    /// Captured bytes.
    pub captured_bytes: u64,
    /// The earliest and latest time stamps (ns since the epoch).
    pub span: Option<(u64, u64)>,
    /// By direction: inbound, outbound, unknown.
    pub directions: [Count; 3],
    network: HashMap<u16, Count>,
    protocols: Box<[Count; 256]>,
    ports: HashMap<(u8, u16), Count>,
    ttl: Box<[Count; 256]>,
    hop_limit: Box<[Count; 256]>,
    tos: Box<[Count; 256]>,
    traffic_class: Box<[Count; 256]>,
    /// ECN codepoints (Not-ECT, ECT(1), ECT(0), CE) of IPv4 (index 0) and IPv6 (1)
    /// packets.
    pub ecn: [[Count; 4]; 2],
    tcp_options: Box<[u64; 256]>,
    /// TCP packets that carry options.
    pub tcp_with_options: u64,
    /// SYN (index 0) and SYN/ACK (index 1) packets by their set of options
    /// ([`syn_option`] bits).
    pub syn_options: [[u64; 64]; 2],
    /// SYN and SYN/ACK packets whose header has no room for options at all.
    pub syn_without_option_space: [u64; 2],
    segments: HashMap<u32, Count>,
    /// IPv4 headers whose checksum is wrong (fully captured headers only).
    pub ipv4_checksum_errors: u64,
    /// Packets with at least one decoder anomaly.
    pub with_anomalies: u64,
    anomalies: [u64; 64],
    /// Packets per wire-length bucket ([`SIZE_BUCKETS`]).
    pub sizes: [Count; SIZE_BUCKETS.len()],
    series: Vec<(u64, Count)>,
    series_step: u64,
}

impl Default for Report {
    fn default() -> Report {
        Report::new()
    }
}

fn table() -> Box<[Count; 256]> {
    Box::new([Count::default(); 256])
}

impl Report {
    /// An empty report.
    pub fn new() -> Report {
        Report {
            packets: 0,
            wire_bytes: 0,
            captured_bytes: 0,
            span: None,
            directions: [Count::default(); 3],
            network: HashMap::new(),
            protocols: table(),
            ports: HashMap::new(),
            ttl: table(),
            hop_limit: table(),
            tos: table(),
            traffic_class: table(),
            ecn: [[Count::default(); 4]; 2],
            tcp_options: Box::new([0; 256]),
            tcp_with_options: 0,
            syn_options: [[0; 64]; 2],
            syn_without_option_space: [0; 2],
            segments: HashMap::new(),
            ipv4_checksum_errors: 0,
            with_anomalies: 0,
            anomalies: [0; 64],
            sizes: [Count::default(); SIZE_BUCKETS.len()],
            series: Vec::new(),
            series_step: 1,
        }
    }

    /// Counts one packet.
    pub fn add(&mut self, packet: &Packet<'_>) {
        let wire = u64::from(packet.wire_len());
        let ns = packet.ts().as_unix_nanos();
        self.packets += 1;
        self.wire_bytes += wire;
        self.captured_bytes += packet.caplen() as u64;
        self.span = Some(match self.span {
            None => (ns, ns),
            Some((a, b)) => (a.min(ns), b.max(ns)),
        });
        let dir = match packet.meta().direction {
            Direction::Inbound => 0,
            Direction::Outbound => 1,
            _ => 2,
        };
        self.directions[dir].add(wire);
        let bucket = SIZE_BUCKETS
            .iter()
            .position(|&b| packet.wire_len() <= b)
            .unwrap_or(SIZE_BUCKETS.len() - 1);
        self.sizes[bucket].add(wire);
        self.add_to_series(
            ns / 1_000_000_000,
            Count {
                packets: 1,
                bytes: wire,
            },
        );

        let d = Decoded::new(packet);
        if d.layer3().is_some() {
            self.network.entry(d.ethertype()).or_default().add(wire);
        }
        if let Some(h) = d.ipv4() {
            self.ttl[usize::from(h.ttl())].add(wire);
            self.tos[usize::from(h.tos())].add(wire);
            self.ecn[0][usize::from(h.tos() & 3)].add(wire);
            if h.checksum_ok() == Some(false) {
                self.ipv4_checksum_errors += 1;
            }
        } else if let Some(h) = d.ipv6() {
            self.hop_limit[usize::from(h.hop_limit())].add(wire);
            self.traffic_class[usize::from(h.traffic_class())].add(wire);
            self.ecn[1][usize::from(h.traffic_class() & 3)].add(wire);
        }
        if let Some((_, proto)) = d.transport_offset() {
            self.protocols[usize::from(proto)].add(wire);
            let (sp, dp) = match proto {
                ip_proto::TCP | ip_proto::UDP | ip_proto::SCTP => {
                    (d.src_port().unwrap_or(0), d.dst_port().unwrap_or(0))
                }
                _ => (0, 0),
            };
            self.ports
                .entry((proto, server_port(sp, dp)))
                .or_default()
                .add(wire);
        }
        if let Some(tcp) = d.tcp() {
            self.add_tcp(&d, &tcp, wire);
        }
        let anomalies = d.anomalies();
        if !anomalies.is_empty() {
            self.with_anomalies += 1;
            for a in anomalies.iter() {
                self.anomalies[a as usize] += 1;
            }
        }
    }

    fn add_tcp(&mut self, d: &Decoded<'_>, tcp: &tracekit_decode::TcpHeader<'_>, wire: u64) {
        let mut set = 0u8;
        let mut any = false;
        for opt in tcp.options() {
            any = true;
            let (kind, bit) = match opt {
                TcpOption::Mss(_) => (2, syn_option::MSS),
                TcpOption::WindowScale(_) => (3, syn_option::WINDOW_SCALE),
                TcpOption::SackPermitted => (4, syn_option::SACK),
                TcpOption::Sack(_) => (5, syn_option::SACK),
                TcpOption::Timestamps { .. } => (8, syn_option::TIMESTAMPS),
                TcpOption::Unknown { kind, .. } => (
                    kind,
                    match kind {
                        2 => syn_option::MSS,
                        3 => syn_option::WINDOW_SCALE,
                        4 | 5 => syn_option::SACK,
                        8 => syn_option::TIMESTAMPS,
                        11..=13 => syn_option::TTCP,
                        _ => syn_option::OTHER,
                    },
                ),
            };
            self.tcp_options[usize::from(kind)] += 1;
            set |= bit;
        }
        self.tcp_with_options += u64::from(any);
        if tcp.syn() {
            let i = usize::from(tcp.ack());
            self.syn_options[i][usize::from(set)] += 1;
            if tcp.header_len() <= 20 {
                self.syn_without_option_space[i] += 1;
            }
        }
        if let Some(ip) = d.ipv4() {
            let seg = u32::from(ip.total_len()).saturating_sub(ip.header_len() as u32);
            self.segments.entry(seg).or_default().add(wire);
        }
    }

    fn add_to_series(&mut self, sec: u64, count: Count) {
        let slot = sec - sec % self.series_step;
        if let Some(i) = self.series.iter().rposition(|(s, _)| *s == slot) {
            self.series[i].1.merge(&count);
        } else if self.series.len() >= MAX_SERIES {
            self.coarsen();
            self.add_to_series(sec, count);
        } else {
            self.series.push((slot, count));
        }
    }

    /// Doubles the series' step, merging neighbouring slots.
    fn coarsen(&mut self) {
        self.series_step *= 2;
        let step = self.series_step;
        let mut merged: Vec<(u64, Count)> = Vec::with_capacity(self.series.len() / 2 + 1);
        let mut old = std::mem::take(&mut self.series);
        old.sort_by_key(|(s, _)| *s);
        for (s, c) in old {
            let slot = s - s % step;
            match merged.last_mut() {
                Some((m, mc)) if *m == slot => mc.merge(&c),
                _ => merged.push((slot, c)),
            }
        }
        self.series = merged;
    }

    /// Adds another report's counts to this one.
    pub fn merge(&mut self, o: &Report) {
        self.packets += o.packets;
        self.wire_bytes += o.wire_bytes;
        self.captured_bytes += o.captured_bytes;
        self.span = match (self.span, o.span) {
            (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
            (x, y) => x.or(y),
        };
        for (a, b) in self.directions.iter_mut().zip(&o.directions) {
            a.merge(b);
        }
        for (k, v) in &o.network {
            self.network.entry(*k).or_default().merge(v);
        }
        for (k, v) in &o.ports {
            self.ports.entry(*k).or_default().merge(v);
        }
        for (k, v) in &o.segments {
            self.segments.entry(*k).or_default().merge(v);
        }
        for (mine, theirs) in [
            (&mut self.protocols, &o.protocols),
            (&mut self.ttl, &o.ttl),
            (&mut self.hop_limit, &o.hop_limit),
            (&mut self.tos, &o.tos),
            (&mut self.traffic_class, &o.traffic_class),
        ] {
            for (a, b) in mine.iter_mut().zip(theirs.iter()) {
                a.merge(b);
            }
        }
        for (a, b) in self.ecn.iter_mut().flatten().zip(o.ecn.iter().flatten()) {
            a.merge(b);
        }
        for (a, b) in self.sizes.iter_mut().zip(&o.sizes) {
            a.merge(b);
        }
        for (a, b) in self.tcp_options.iter_mut().zip(o.tcp_options.iter()) {
            *a += b;
        }
        self.tcp_with_options += o.tcp_with_options;
        for i in 0..2 {
            for (a, b) in self.syn_options[i].iter_mut().zip(&o.syn_options[i]) {
                *a += b;
            }
            self.syn_without_option_space[i] += o.syn_without_option_space[i];
        }
        self.ipv4_checksum_errors += o.ipv4_checksum_errors;
        self.with_anomalies += o.with_anomalies;
        for (a, b) in self.anomalies.iter_mut().zip(&o.anomalies) {
            *a += b;
        }
        while self.series_step < o.series_step {
            self.coarsen();
        }
        for (sec, c) in &o.series {
            self.add_to_series(*sec, *c);
        }
    }

    /// Packets and bytes per EtherType of the network layer, in EtherType order.
    pub fn network(&self) -> Vec<(u16, Count)> {
        sorted(&self.network)
    }

    /// Packets and bytes of one IP protocol (transport header present).
    pub fn protocol(&self, proto: u8) -> Count {
        self.protocols[usize::from(proto)]
    }

    /// The IP protocols seen, with their counts.
    pub fn protocols(&self) -> impl Iterator<Item = (u8, Count)> + '_ {
        nonzero(&self.protocols)
    }

    /// Packets and bytes per (IP protocol, server port), in order. The server port is
    /// the one of the two that looks like a service (see [`server_port`]); protocols
    /// without ports count under port 0.
    pub fn ports(&self) -> Vec<((u8, u16), Count)> {
        sorted(&self.ports)
    }

    /// IPv4 TTLs seen.
    pub fn ttl(&self) -> impl Iterator<Item = (u8, Count)> + '_ {
        nonzero(&self.ttl)
    }

    /// IPv6 hop limits seen.
    pub fn hop_limit(&self) -> impl Iterator<Item = (u8, Count)> + '_ {
        nonzero(&self.hop_limit)
    }

    /// IPv4 TOS bytes seen.
    pub fn tos(&self) -> impl Iterator<Item = (u8, Count)> + '_ {
        nonzero(&self.tos)
    }

    /// IPv6 traffic classes seen.
    pub fn traffic_class(&self) -> impl Iterator<Item = (u8, Count)> + '_ {
        nonzero(&self.traffic_class)
    }

    /// TCP option kinds seen (NOP and end-of-list not counted), with how many times.
    pub fn tcp_options(&self) -> impl Iterator<Item = (u8, u64)> + '_ {
        self.tcp_options
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| (k as u8, *n))
    }

    /// IPv4 TCP segment sizes (IP total length minus IP header), in order.
    pub fn segment_sizes(&self) -> Vec<(u32, Count)> {
        sorted(&self.segments)
    }

    /// Packets per decoder anomaly seen.
    pub fn anomalies(&self) -> impl Iterator<Item = (Anomaly, u64)> + '_ {
        Anomaly::ALL
            .iter()
            .map(|&a| (a, self.anomalies[a as usize]))
            .filter(|(_, n)| *n > 0)
    }

    /// Packets and bytes per time slot (seconds since the epoch, slots of
    /// [`series_step`](Self::series_step) seconds), in time order.
    pub fn series(&self) -> Vec<(u64, Count)> {
        let mut s = self.series.clone();
        s.sort_by_key(|(t, _)| *t);
        s
    }

    /// The width of the time slots in seconds (1 unless the trace spans more than
    /// 4096 seconds with traffic).
    pub fn series_step(&self) -> u64 {
        self.series_step
    }
}

fn sorted<K: Copy + Ord>(m: &HashMap<K, Count>) -> Vec<(K, Count)> {
    let mut v: Vec<_> = m.iter().map(|(k, c)| (*k, *c)).collect();
    v.sort_unstable_by_key(|(k, _)| *k);
    v
}

fn nonzero(t: &[Count; 256]) -> impl Iterator<Item = (u8, Count)> + '_ {
    t.iter()
        .enumerate()
        .filter(|(_, c)| c.packets > 0)
        .map(|(i, c)| (i as u8, *c))
}

/// Which of two ports is the server's, by the usual ranking (as libtrace ranks them):
/// equal ports give the destination; otherwise the first rule one port meets and the
/// other does not decides, where both meet a rule the lower port wins: privileged
/// server ports (below 512), then registered server ports (5000 and up), then
/// privileged client ports (512-1023, preferred when the other is 1024-4999), then
/// 1024-4999 (the other port wins), then the dynamic range; else the lower port.
pub fn server_port(src: u16, dst: u16) -> u16 {
    if src == dst {
        return dst;
    }
    let lower = src.min(dst);
    let rules: [fn(u16) -> bool; 2] = [|p| p < 512, |p| p >= 5000];
    for rule in rules {
        match (rule(src), rule(dst)) {
            (true, true) => return lower,
            (true, false) => return src,
            (false, true) => return dst,
            _ => {}
        }
    }
    let root_client = |p: u16| (512..1024).contains(&p);
    let user_client = |p: u16| (1024..5000).contains(&p);
    match (root_client(src), root_client(dst)) {
        (true, true) => return lower,
        (true, false) => return if user_client(dst) { src } else { dst },
        (false, true) => return if user_client(src) { dst } else { src },
        _ => {}
    }
    match (user_client(src), user_client(dst)) {
        (true, true) => return lower,
        (true, false) => return dst,
        (false, true) => return src,
        _ => {}
    }
    let dynamic = |p: u16| p > 49152 && p < 65535;
    match (dynamic(src), dynamic(dst)) {
        (true, false) => dst,
        (false, true) => src,
        _ => lower,
    }
}

#[cfg(test)]
mod tests {
    use super::server_port;

    #[test]
    fn server_ports() {
        assert_eq!(server_port(40000, 80), 80);
        assert_eq!(server_port(80, 40000), 80);
        assert_eq!(server_port(53, 53), 53);
        assert_eq!(server_port(22, 80), 22);
        assert_eq!(server_port(3000, 8080), 8080);
        assert_eq!(server_port(600, 2000), 600);
        assert_eq!(server_port(600, 0), 0);
        assert_eq!(server_port(1500, 2500), 1500);
    }
}
