//! Whole-trace analyses built on the decoder: the libtrace paper's Ports analysis and a
//! protocol breakdown. Both accumulate packet by packet without allocating.

mod ends;
mod report;
mod top;

pub use ends::{Endpoint, EndpointCounts, EndpointKind, Endpoints};
pub use report::{Count, MAX_SEGMENT, Report, SIZE_BUCKETS, server_port, syn_option};
pub use top::{Snapshot, Top, TopBy, TopKey};
use tracekit_core::Packet;
use tracekit_decode::Anomaly;
use tracekit_decode::{Decoded, Transport, ip_proto};

/// The transport protocols [`Ports`] counts.
const PROTOCOLS: [u8; 2] = [ip_proto::TCP, ip_proto::UDP];
const PORTS: usize = 65_536;

/// The libtrace paper's "Ports" analysis: packets and application bytes (transport
/// payload, wire length) per transport protocol and port, counted once under the source
/// port and once under the destination port.
///
/// What cannot be attributed to a port is counted apart, never guessed: non-first IP
/// fragments (they carry no transport header), TCP/UDP packets whose header was cut by
/// the capture, and everything that is not TCP or UDP.
///
/// ```no_run
/// use tracekit::analysis::Ports;
/// let mut ports = Ports::new();
/// let mut source = tracekit::open("samples/sample.pcap")?;
/// while let Some(packet) = tracekit::CaptureSource::next_packet(&mut source)? {
///     ports.add(&packet);
/// }
/// for row in ports.rows().filter(|r| r.port == 53) {
///     println!("{} 53: {} packets from, {} packets to", row.protocol_name(), row.src_packets, row.dst_packets);
/// }
/// # Ok::<(), tracekit::Error>(())
/// ```
#[derive(Clone)]
pub struct Ports {
    /// Indexed by `(protocol index * 2 + destination) * 65536 + port`: (packets, bytes).
    table: Box<[(u64, u64)]>,
    /// Non-first fragments of TCP or UDP datagrams.
    pub fragments: u64,
    /// TCP/UDP packets whose header was not captured completely.
    pub truncated: u64,
    /// Packets that are not TCP or UDP (or not IP).
    pub other: u64,
}

/// One port's figures in [`Ports::rows`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRow {
    /// The IP protocol number (6 TCP, 17 UDP).
    pub protocol: u8,
    /// The port.
    pub port: u16,
    /// Packets with this source port.
    pub src_packets: u64,
    /// Application bytes of those packets.
    pub src_bytes: u64,
    /// Packets with this destination port.
    pub dst_packets: u64,
    /// Application bytes of those packets.
    pub dst_bytes: u64,
}

impl PortRow {
    /// "tcp" or "udp".
    pub fn protocol_name(&self) -> &'static str {
        if self.protocol == ip_proto::UDP {
            "udp"
        } else {
            "tcp"
        }
    }
}

impl Default for Ports {
    fn default() -> Ports {
        Ports::new()
    }
}

impl Ports {
    /// An empty table (4 MiB, allocated once; its pages come from the kernel as they
    /// are first used).
    pub fn new() -> Ports {
        Ports {
            table: vec![(0, 0); PROTOCOLS.len() * 2 * PORTS].into_boxed_slice(),
            fragments: 0,
            truncated: 0,
            other: 0,
        }
    }

    /// An empty table written through at once, for a worker of a parallel run.
    ///
    /// A counter's first update reads its page before writing it; a page first read is
    /// the kernel's shared zero page, replaced on the write with a TLB flush on every CPU
    /// the process runs on. In a parallel run those flushes are inter-processor
    /// interrupts (on a VM, exits to the hypervisor): 8 % of a 2-worker `ports` run's
    /// time. Writing the table first costs about 2 ms on one thread, so [`Ports::new`]
    /// does not.
    pub fn new_written() -> Ports {
        let cells = PROTOCOLS.len() * 2 * PORTS;
        let mut table: Vec<(u64, u64)> = Vec::with_capacity(cells);
        // Seen by the optimiser as used: else the allocation and the zeroing below are
        // folded into one zeroed allocation, whose pages the kernel lends lazily again.
        std::hint::black_box(table.as_mut_ptr());
        table.resize(cells, (0, 0));
        Ports {
            table: table.into_boxed_slice(),
            fragments: 0,
            truncated: 0,
            other: 0,
        }
    }

    /// Accounts for one packet.
    #[inline]
    pub fn add(&mut self, packet: &Packet<'_>) {
        self.add_decoded(&Decoded::new(packet));
    }

    /// Accounts for one packet already being decoded (sharing its memoized layers).
    pub fn add_decoded(&mut self, d: &Decoded<'_>) {
        let (udp, src, dst) = match d.transport() {
            Some(Transport::Tcp(h)) => (false, h.src_port(), h.dst_port()),
            Some(Transport::Udp(h)) => (true, h.src_port(), h.dst_port()),
            Some(Transport::Truncated {
                protocol: ip_proto::TCP | ip_proto::UDP,
                ..
            }) => {
                self.truncated += 1;
                return;
            }
            Some(_) => {
                self.other += 1;
                return;
            }
            // No transport header here: a non-first fragment, or not TCP/UDP at all.
            None => {
                match (d.ip_protocol(), d.fragment()) {
                    (Some(ip_proto::TCP | ip_proto::UDP), Some(f)) if !f.is_first() => {
                        self.fragments += 1
                    }
                    (Some(ip_proto::TCP | ip_proto::UDP), _) => self.truncated += 1,
                    _ => self.other += 1,
                }
                return;
            }
        };
        let Some(bytes) = d.payload_wire_len() else {
            self.truncated += 1;
            return;
        };
        let base = usize::from(udp) * 2 * PORTS;
        let e = &mut self.table[base + usize::from(src)];
        e.0 += 1;
        e.1 += u64::from(bytes);
        let e = &mut self.table[base + PORTS + usize::from(dst)];
        e.0 += 1;
        e.1 += u64::from(bytes);
    }

    /// (packets, bytes) for `protocol` (6 or 17) and `port`, as source port
    /// (`dst == false`) or destination port.
    pub fn get(&self, protocol: u8, dst: bool, port: u16) -> (u64, u64) {
        let p = usize::from(protocol == ip_proto::UDP);
        self.table[(p * 2 + usize::from(dst)) * PORTS + usize::from(port)]
    }

    /// Every (protocol, port) seen as source or destination, TCP first, by port.
    pub fn rows(&self) -> impl Iterator<Item = PortRow> + '_ {
        PROTOCOLS
            .iter()
            .enumerate()
            .flat_map(move |(p, &protocol)| {
                let src = &self.table[p * 2 * PORTS..(p * 2 + 1) * PORTS];
                let dst = &self.table[(p * 2 + 1) * PORTS..(p * 2 + 2) * PORTS];
                src.iter()
                    .zip(dst)
                    .enumerate()
                    .filter(|(_, (s, d))| s.0 != 0 || d.0 != 0)
                    .map(move |(port, (s, d))| PortRow {
                        protocol,
                        port: port as u16,
                        src_packets: s.0,
                        src_bytes: s.1,
                        dst_packets: d.0,
                        dst_bytes: d.1,
                    })
            })
    }

    /// Packets attributed to ports (each counted once, under its source port).
    pub fn packets(&self) -> u64 {
        (0..PROTOCOLS.len())
            .map(|p| {
                self.table[p * 2 * PORTS..(p * 2 + 1) * PORTS]
                    .iter()
                    .map(|e| e.0)
                    .sum::<u64>()
            })
            .sum()
    }

    /// Application bytes attributed to ports (each packet counted once).
    pub fn bytes(&self) -> u64 {
        (0..PROTOCOLS.len())
            .map(|p| {
                self.table[p * 2 * PORTS..(p * 2 + 1) * PORTS]
                    .iter()
                    .map(|e| e.1)
                    .sum::<u64>()
            })
            .sum()
    }

    /// Adds another table's counts (a parallel run's workers, reduced).
    pub fn merge(&mut self, other: &Ports) {
        for (a, b) in self.table.iter_mut().zip(other.table.iter()) {
            a.0 += b.0;
            a.1 += b.1;
        }
        self.fragments += other.fragments;
        self.truncated += other.truncated;
        self.other += other.other;
    }

    /// A checksum over the whole table, for comparing implementations: the sum over
    /// non-empty cells of `(index + 1) * (packets * 31 + bytes)`, wrapping, where
    /// index is `(protocol (0 TCP, 1 UDP) * 2 + destination) * 65536 + port`.
    pub fn checksum(&self) -> u64 {
        let mut h = 0u64;
        for (i, (p, b)) in self.table.iter().enumerate() {
            if *p != 0 {
                h = h
                    .wrapping_add((i as u64 + 1).wrapping_mul(p.wrapping_mul(31).wrapping_add(*b)));
            }
        }
        h
    }
}

/// A protocol breakdown of a trace: network and transport protocols of the outermost
/// level, IP fragments, and the decoder's anomalies (all tunnel levels) by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protocols {
    /// Packets.
    pub packets: u64,
    /// IPv4 packets.
    pub ipv4: u64,
    /// IPv6 packets.
    pub ipv6: u64,
    /// Packets that are not IP (or whose IP header was not captured).
    pub other_network: u64,
    /// IP packets carrying TCP (fragments included).
    pub tcp: u64,
    /// IP packets carrying UDP.
    pub udp: u64,
    /// IP packets carrying ICMP or ICMPv6.
    pub icmp: u64,
    /// IP packets carrying anything else.
    pub other_transport: u64,
    /// IP fragments (first and later ones).
    pub fragments: u64,
    /// Packets with at least one anomaly.
    pub with_anomalies: u64,
    /// Count per anomaly, indexed by the anomaly's bit.
    anomalies: [u64; 64],
}

impl Default for Protocols {
    fn default() -> Protocols {
        Protocols {
            packets: 0,
            ipv4: 0,
            ipv6: 0,
            other_network: 0,
            tcp: 0,
            udp: 0,
            icmp: 0,
            other_transport: 0,
            fragments: 0,
            with_anomalies: 0,
            anomalies: [0; 64],
        }
    }
}

impl Protocols {
    /// Accounts for one packet.
    #[inline]
    pub fn add(&mut self, packet: &Packet<'_>) {
        self.add_decoded(&Decoded::new(packet));
    }

    /// Accounts for one packet already being decoded.
    pub fn add_decoded(&mut self, d: &Decoded<'_>) {
        self.packets += 1;
        match d.ip_version() {
            Some(4) => self.ipv4 += 1,
            Some(6) => self.ipv6 += 1,
            _ => self.other_network += 1,
        }
        if let Some(proto) = d.ip_protocol() {
            match proto {
                ip_proto::TCP => self.tcp += 1,
                ip_proto::UDP => self.udp += 1,
                ip_proto::ICMP | ip_proto::ICMPV6 => self.icmp += 1,
                _ => self.other_transport += 1,
            }
        }
        if d.fragment().is_some() {
            self.fragments += 1;
        }
        let anomalies = d.anomalies();
        if !anomalies.is_empty() {
            self.with_anomalies += 1;
            for a in anomalies.iter() {
                self.anomalies[a as usize] += 1;
            }
        }
    }

    /// Adds another breakdown's counts (a parallel run's workers, reduced).
    pub fn merge(&mut self, other: &Protocols) {
        self.packets += other.packets;
        self.ipv4 += other.ipv4;
        self.ipv6 += other.ipv6;
        self.other_network += other.other_network;
        self.tcp += other.tcp;
        self.udp += other.udp;
        self.icmp += other.icmp;
        self.other_transport += other.other_transport;
        self.fragments += other.fragments;
        self.with_anomalies += other.with_anomalies;
        for (a, b) in self.anomalies.iter_mut().zip(other.anomalies.iter()) {
            *a += b;
        }
    }

    /// Packets per anomaly, for the anomalies seen, in the decoder's order.
    pub fn anomalies(&self) -> impl Iterator<Item = (Anomaly, u64)> + '_ {
        Anomaly::ALL
            .iter()
            .map(|&a| (a, self.anomalies[a as usize]))
            .filter(|(_, n)| *n != 0)
    }
}
