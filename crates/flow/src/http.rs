//! HTTP/1.x heads split over TCP segments, joined as tshark joins them.
//!
//! A request or response head that does not end in the segment that starts it (no empty
//! line yet) is held per TCP direction; the in-order segments after it are appended
//! until the head ends, and the head is then the fields of the segment that completed
//! it, as tshark shows it with TCP reassembly (its default). The segments before show no
//! head. (tshark by default also waits for a message's body, `http.desegment_body`, and
//! shows the fields on the segment that ends the body; this tracker does not follow
//! bodies.) [`HttpHeads`] is a [`FieldState`] (through [`FieldTracker`], which `tracekit
//! fields --reassemble` uses).
//!
//! Bounded: at most [`HttpHeads::MAX_HEAD`] bytes per head (a longer one is given up)
//! and a bound on the directions held at once (an arbitrary one is dropped when full,
//! counted in [`HttpHeads::evicted`]). Only the packet's outermost TCP level is followed;
//! a segment out of order, or the capture cutting one, ends the wait (the next head
//! starts afresh).
//!
//! ```
//! use tracekit_core::LinkType;
//! use tracekit_decode::Decoded;
//! use tracekit_decode::fields::{Field, write_field_with};
//! use tracekit_flow::FieldTracker;
//! use tracekit_testdata::builder::{Ipv4, PacketBuilder, Tcp};
//!
//! let head = b"GET /index.html HTTP/1.1\r\nHost: example.org\r\n\r\n";
//! let segment = |seq: u32, data: &[u8]| {
//!     PacketBuilder::new()
//!         .ipv4(Ipv4::new([10, 0, 0, 1], [10, 0, 0, 2]))
//!         .tcp(Tcp::new(40000, 80).seq(seq))
//!         .payload(data)
//!         .build()
//! };
//! let frames = [segment(1, &head[..20]), segment(21, &head[20..])];
//! let mut tracker = FieldTracker::default();
//! let mut hosts = Vec::new();
//! for f in &frames {
//!     let d = Decoded::from_bytes(f, LinkType::RAW, f.len() as u32);
//!     tracker.observe(&d);
//!     let p = tracekit_core::Packet::new(f, tracekit_core::Meta::new(
//!         tracekit_core::Timestamp::ZERO, f.len() as u32, LinkType::RAW));
//!     let mut host = String::new();
//!     write_field_with(&mut host, Field::HttpHost, 1, &p, &d, &tracker);
//!     hosts.push(host);
//! }
//! assert_eq!(hosts, ["", "example.org"]);
//! ```

use std::net::IpAddr;

use rustc_hash::FxHashMap;
use tracekit_decode::Decoded;
use tracekit_decode::fields::{FieldState, HeadState};
use tracekit_decode::http::{self, Head};

use crate::QuicConnections;

/// One TCP direction: source address and port, destination address and port.
type Direction = (IpAddr, u16, IpAddr, u16);

/// A head waiting for its end.
#[derive(Clone, Debug)]
struct Pending {
    next_seq: u32,
    bytes: Vec<u8>,
}

/// What the packet observed last shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Current {
    Packet,
    Hidden,
    Joined,
}

/// HTTP heads split over TCP segments (see the module documentation).
#[derive(Clone, Debug)]
pub struct HttpHeads {
    pending: FxHashMap<Direction, Pending>,
    max: usize,
    evicted: u64,
    current: Current,
    /// The head the last packet completed.
    joined: Vec<u8>,
}

impl Default for HttpHeads {
    fn default() -> HttpHeads {
        HttpHeads::new(HttpHeads::DEFAULT_MAX)
    }
}

impl HttpHeads {
    /// A default bound on the directions waiting at once.
    pub const DEFAULT_MAX: usize = 4096;
    /// The longest head joined.
    pub const MAX_HEAD: usize = 64 * 1024;

    /// A tracker holding at most `max_directions` unfinished heads at once (at least 1).
    pub fn new(max_directions: usize) -> HttpHeads {
        HttpHeads {
            pending: FxHashMap::default(),
            max: max_directions.max(1),
            evicted: 0,
            current: Current::Packet,
            joined: Vec::new(),
        }
    }

    /// Follows the TCP segment `d` (call it for every packet, in capture order).
    pub fn observe(&mut self, d: &Decoded<'_>) {
        self.current = Current::Packet;
        // One look-up of the IP walk for every question below.
        let Some(v) = d.ip_view() else {
            return;
        };
        let Some(tcp) = v.tcp() else {
            return;
        };
        let (wire_len, Some(payload)) = v.payload_with_wire_len() else {
            return;
        };
        if payload.is_empty() {
            return;
        }
        let whole = wire_len == Some(payload.len() as u32);
        let (Some(src), Some(dst)) = (d.src_addr(), d.dst_addr()) else {
            return;
        };
        let key = (src, tcp.src_port(), dst, tcp.dst_port());
        let seq = tcp.seq_number();
        if let Some(p) = self.pending.get_mut(&key) {
            if seq == p.next_seq && whole && p.bytes.len() + payload.len() <= Self::MAX_HEAD {
                p.bytes.extend_from_slice(payload);
                p.next_seq = seq.wrapping_add(payload.len() as u32);
                let done = Head::parse(&p.bytes).is_some_and(|h| h.is_complete());
                if done {
                    if let Some(p) = self.pending.remove(&key) {
                        // The joined bytes are handed over, not copied.
                        self.joined = p.bytes;
                    }
                    self.current = Current::Joined;
                } else {
                    self.current = Current::Hidden;
                }
                return;
            }
            // Out of order, cut, or too long: the wait ends.
            self.pending.remove(&key);
        }
        let starts = match Head::parse(payload) {
            Some(h) => !h.is_complete(),
            None => http::starts_unfinished(payload),
        };
        if !starts || !whole {
            return;
        }
        if self.pending.len() >= self.max
            && let Some(old) = self.pending.keys().next().copied()
        {
            self.pending.remove(&old);
            self.evicted += 1;
        }
        self.pending.insert(
            key,
            Pending {
                next_seq: seq.wrapping_add(payload.len() as u32),
                bytes: payload.to_vec(),
            },
        );
        self.current = Current::Hidden;
    }

    /// What the packet observed last shows as its HTTP head.
    pub fn head(&self) -> HeadState<'_> {
        match self.current {
            Current::Packet => HeadState::Packet,
            Current::Hidden => HeadState::Hidden,
            Current::Joined => match Head::parse(&self.joined) {
                Some(h) => HeadState::Joined(h),
                None => HeadState::Packet,
            },
        }
    }

    /// How many directions wait for the end of a head.
    pub fn waiting(&self) -> usize {
        self.pending.len()
    }

    /// How many waits were dropped to stay within the bound.
    pub fn evicted(&self) -> u64 {
        self.evicted
    }
}

/// The connection state `tracekit fields --reassemble` keeps for the fields that need
/// more than one packet: QUIC connection ids ([`QuicConnections`]) and HTTP heads split
/// over segments ([`HttpHeads`]). Observe every packet in order, then print its fields
/// with it as their [`FieldState`].
#[derive(Clone, Debug)]
pub struct FieldTracker {
    /// QUIC connection ids.
    pub quic: QuicConnections,
    /// HTTP heads.
    pub http: HttpHeads,
}

impl Default for FieldTracker {
    fn default() -> FieldTracker {
        FieldTracker {
            quic: QuicConnections::new(QuicConnections::DEFAULT_MAX),
            http: HttpHeads::default(),
        }
    }
}

impl FieldTracker {
    /// Follows packet `d`.
    pub fn observe(&mut self, d: &Decoded<'_>) {
        self.quic.observe(d);
        self.http.observe(d);
    }
}

impl FieldState for FieldTracker {
    fn quic_short_dcid<'a>(&self, d: &Decoded<'a>, packet: &'a [u8]) -> Option<&'a [u8]> {
        self.quic.short_dcid(d, packet)
    }

    fn http_head(&self, _: &Decoded<'_>) -> HeadState<'_> {
        self.http.head()
    }
}

impl FieldState for HttpHeads {
    fn quic_short_dcid<'a>(&self, _: &Decoded<'a>, _: &'a [u8]) -> Option<&'a [u8]> {
        None
    }

    fn http_head(&self, _: &Decoded<'_>) -> HeadState<'_> {
        self.head()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracekit_core::LinkType;
    use tracekit_testdata::builder::{Ipv4, PacketBuilder, Tcp};

    fn segment(port: u16, seq: u32, data: &[u8]) -> Vec<u8> {
        PacketBuilder::new()
            .ipv4(Ipv4::new([10, 0, 0, 1], [10, 0, 0, 2]))
            .tcp(Tcp::new(port, 80).seq(seq))
            .payload(data)
            .build()
    }

    fn states(h: &mut HttpHeads, frames: &[Vec<u8>]) -> Vec<String> {
        frames
            .iter()
            .map(|f| {
                h.observe(&Decoded::from_bytes(f, LinkType::RAW, f.len() as u32));
                match h.head() {
                    HeadState::Packet => "packet".to_string(),
                    HeadState::Hidden => "hidden".to_string(),
                    HeadState::Joined(head) => {
                        String::from_utf8_lossy(head.host().unwrap_or(b"?")).into_owned()
                    }
                }
            })
            .collect()
    }

    #[test]
    fn joins_in_order_and_gives_up_otherwise() {
        let head = b"GET / HTTP/1.1\r\nHost: a.example\r\n\r\n";
        let mut h = HttpHeads::new(8);
        // Three pieces in order; a whole head alone; a piece out of order ends the wait.
        let frames = [
            segment(1, 100, &head[..10]),
            segment(1, 110, &head[10..20]),
            segment(1, 120, &head[20..]),
            segment(2, 1, head),
            segment(3, 1, &head[..10]),
            segment(3, 50, &head[10..]),
        ];
        assert_eq!(
            states(&mut h, &frames),
            [
                "hidden",
                "hidden",
                "a.example",
                "packet",
                "hidden",
                "packet"
            ]
        );
        assert_eq!(h.waiting(), 0);
    }

    #[test]
    fn bounded() {
        let mut h = HttpHeads::new(2);
        let frames: Vec<Vec<u8>> = (1..=5)
            .map(|p| segment(p, 1, b"GET / HTTP/1.1\r\n"))
            .collect();
        states(&mut h, &frames);
        assert_eq!((h.waiting(), h.evicted()), (2, 3));
    }
}
