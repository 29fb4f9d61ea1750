//! Traffic per endpoint (libtrace's traceends): for every MAC, IPv4 or IPv6 address,
//! packets, bytes and payload bytes sent and received, and when it was first and last
//! seen.

use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr};

use tracekit_core::Packet;
use tracekit_decode::Decoded;

/// An endpoint address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Endpoint {
    /// An Ethernet MAC address.
    Mac([u8; 6]),
    /// An IPv4 address.
    Ipv4(Ipv4Addr),
    /// An IPv6 address.
    Ipv6(Ipv6Addr),
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Mac(m) => write!(
                f,
                "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
                m[0], m[1], m[2], m[3], m[4], m[5]
            ),
            Endpoint::Ipv4(a) => a.fmt(f),
            Endpoint::Ipv6(a) => a.fmt(f),
        }
    }
}

/// Which addresses [`Endpoints`] counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndpointKind {
    /// Ethernet source and destination addresses; bytes are wire lengths.
    Mac,
    /// IPv4 source and destination addresses; bytes are IP total lengths.
    Ipv4,
    /// IPv6 source and destination addresses; bytes are IP lengths (payload length + 40).
    Ipv6,
}

/// One endpoint's figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EndpointCounts {
    /// Packets it sent.
    pub sent_packets: u64,
    /// Bytes it sent (see [`EndpointKind`]).
    pub sent_bytes: u64,
    /// Application bytes it sent (transport payload as the headers declare it; 0 where
    /// there is no transport header).
    pub sent_payload: u64,
    /// Packets it received.
    pub received_packets: u64,
    /// Bytes it received.
    pub received_bytes: u64,
    /// Application bytes it received.
    pub received_payload: u64,
    /// When it was first seen (ns since the epoch).
    pub first_ns: u64,
    /// When it was last seen (ns since the epoch).
    pub last_ns: u64,
}

impl EndpointCounts {
    fn seen(&mut self, ns: u64) {
        if self.sent_packets + self.received_packets == 0 || ns < self.first_ns {
            self.first_ns = ns;
        }
        self.last_ns = self.last_ns.max(ns);
    }

    fn merge(&mut self, o: &EndpointCounts) {
        let fresh = self.sent_packets + self.received_packets == 0;
        self.first_ns = if fresh {
            o.first_ns
        } else {
            self.first_ns.min(o.first_ns)
        };
        self.last_ns = self.last_ns.max(o.last_ns);
        self.sent_packets += o.sent_packets;
        self.sent_bytes += o.sent_bytes;
        self.sent_payload += o.sent_payload;
        self.received_packets += o.received_packets;
        self.received_bytes += o.received_bytes;
        self.received_payload += o.received_payload;
    }
}

/// Per-endpoint traffic of one address kind. Memory grows with the number of distinct
/// addresses, not with packets; nothing is allocated for a packet whose endpoints are
/// known already.
///
/// ```no_run
/// use tracekit::analysis::{EndpointKind, Endpoints};
/// let mut ends = Endpoints::new(EndpointKind::Ipv4);
/// let mut source = tracekit::open("trace.pcap")?;
/// while let Some(packet) = tracekit::CaptureSource::next_packet(&mut source)? {
///     ends.add(&packet);
/// }
/// for (addr, c) in ends.rows() {
///     println!("{addr}: {} packets sent, {} received", c.sent_packets, c.received_packets);
/// }
/// # Ok::<(), tracekit::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Endpoints {
    kind: EndpointKind,
    map: HashMap<Endpoint, EndpointCounts>,
    /// Packets that had no address of this kind.
    pub skipped: u64,
}

impl Endpoints {
    /// An empty table for addresses of `kind`.
    pub fn new(kind: EndpointKind) -> Endpoints {
        Endpoints {
            kind,
            map: HashMap::new(),
            skipped: 0,
        }
    }

    /// The kind of address counted.
    pub fn kind(&self) -> EndpointKind {
        self.kind
    }

    /// Counts one packet.
    pub fn add(&mut self, packet: &Packet<'_>) {
        let d = Decoded::new(packet);
        let ends = match self.kind {
            EndpointKind::Mac => d.ethernet().map(|e| {
                (
                    Endpoint::Mac(e.src()),
                    Endpoint::Mac(e.dst()),
                    u64::from(packet.wire_len()),
                )
            }),
            EndpointKind::Ipv4 => d.ipv4().map(|h| {
                (
                    Endpoint::Ipv4(h.src()),
                    Endpoint::Ipv4(h.dst()),
                    u64::from(h.total_len()),
                )
            }),
            EndpointKind::Ipv6 => d.ipv6().map(|h| {
                (
                    Endpoint::Ipv6(h.src()),
                    Endpoint::Ipv6(h.dst()),
                    u64::from(h.payload_len()) + 40,
                )
            }),
        };
        let Some((src, dst, bytes)) = ends else {
            self.skipped += 1;
            return;
        };
        let payload = u64::from(d.payload_wire_len().unwrap_or(0));
        let ns = packet.ts().as_unix_nanos();
        let s = self.map.entry(src).or_default();
        s.seen(ns);
        s.sent_packets += 1;
        s.sent_bytes += bytes;
        s.sent_payload += payload;
        let r = self.map.entry(dst).or_default();
        r.seen(ns);
        r.received_packets += 1;
        r.received_bytes += bytes;
        r.received_payload += payload;
    }

    /// Adds another table's figures (of the same kind) to this one.
    pub fn merge(&mut self, other: &Endpoints) {
        for (k, v) in &other.map {
            self.map.entry(*k).or_default().merge(v);
        }
        self.skipped += other.skipped;
    }

    /// The endpoints, in address order.
    pub fn rows(&self) -> Vec<(Endpoint, EndpointCounts)> {
        let mut rows: Vec<_> = self.map.iter().map(|(k, v)| (*k, *v)).collect();
        rows.sort_unstable_by_key(|r| r.0);
        rows
    }

    /// How many endpoints were seen.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no endpoint was seen.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}
