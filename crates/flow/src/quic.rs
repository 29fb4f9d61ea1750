//! QUIC connection ids, learned from long headers, for reading short headers.
//!
//! A short-header (1-RTT) packet starts with its destination connection id but does not
//! say how long it is: the peer chose it and announced it as the source connection id of
//! its long-header packets (RFC 9000 §5.1, §17.2). [`QuicConnections`] remembers, per
//! direction of each UDP address pair, the connection id the other side announced last,
//! and reads a short header as belonging to the connection when it starts with that id
//! (as tshark follows QUIC connections by their ids: ids issued later inside encrypted
//! NEW_CONNECTION_ID frames are unknown to both). It is a [`FieldState`] (also through
//! [`crate::FieldTracker`]), so `tracekit fields --reassemble` prints the DCIDs of
//! short-header packets (`quic.dcid`).
//!
//! A connection that migrates to another address or port is not followed. Memory is
//! bounded by the number of directions kept ([`QuicConnections::new`]); when full, an
//! arbitrary one is forgotten and counted ([`QuicConnections::evicted`]).
//!
//! ```
//! use tracekit_core::LinkType;
//! use tracekit_decode::Decoded;
//! use tracekit_decode::fields::{Field, write_field_with};
//! use tracekit_flow::QuicConnections;
//! use tracekit_testdata::builder::{Ipv4, PacketBuilder, Udp};
//!
//! let datagram = |server: bool, payload: &[u8]| {
//!     let (a, b) = ([10, 0, 0, 1], [10, 0, 0, 2]);
//!     let (src, dst, sp, dp) = if server { (b, a, 443, 5000) } else { (a, b, 5000, 443) };
//!     PacketBuilder::new().ipv4(Ipv4::new(src, dst)).udp(Udp::new(sp, dp)).payload(payload).build()
//! };
//! // The server's Handshake packet: version 1, DCID 1 byte, SCID 4 bytes, length 1.
//! let handshake = datagram(true, &[0xe0, 0, 0, 0, 1, 1, 0xcc, 4, 0xa, 0xb, 0xc, 0xd, 1, 0]);
//! // Then the client's short-header packet to the server's connection id.
//! let short = datagram(false, &[0x41, 0xa, 0xb, 0xc, 0xd, 0x99, 0x99]);
//!
//! let mut quic = QuicConnections::new(QuicConnections::DEFAULT_MAX);
//! let mut dcid = String::new();
//! for f in [&handshake, &short] {
//!     let d = Decoded::from_bytes(f, LinkType::RAW, f.len() as u32);
//!     quic.observe(&d);
//!     dcid.clear();
//!     let p = tracekit_core::Packet::new(f, tracekit_core::Meta::new(
//!         tracekit_core::Timestamp::ZERO, f.len() as u32, LinkType::RAW));
//!     write_field_with(&mut dcid, Field::QuicDcid, 1, &p, &d, &quic);
//! }
//! assert_eq!(dcid, "0a0b0c0d");
//! ```

use std::net::IpAddr;

use rustc_hash::FxHashMap;
use tracekit_decode::Decoded;
use tracekit_decode::fields::FieldState;
use tracekit_decode::quic::PacketKind;

/// One direction of a UDP address pair: source address and port, destination address
/// and port.
type Direction = (IpAddr, u16, IpAddr, u16);

/// How many tunnel levels [`QuicConnections`] looks through for QUIC.
const MAX_LEVELS: usize = 8;

/// Connection ids are at most 20 bytes (RFC 9000 §17.2).
const MAX_CID: usize = 20;

/// A connection id, kept inline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cid {
    len: u8,
    bytes: [u8; MAX_CID],
}

impl Cid {
    fn new(id: &[u8]) -> Option<Cid> {
        let mut bytes = [0; MAX_CID];
        bytes.get_mut(..id.len())?.copy_from_slice(id);
        Some(Cid {
            len: id.len() as u8,
            bytes,
        })
    }

    fn as_slice(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// The connection ids QUIC peers announced (see the module documentation).
#[derive(Clone, Debug)]
pub struct QuicConnections {
    ids: FxHashMap<Direction, Cid>,
    max: usize,
    evicted: u64,
}

impl QuicConnections {
    /// A default bound on the directions kept.
    pub const DEFAULT_MAX: usize = 65_536;

    /// A tracker that keeps at most `max_directions` directions (at least 1).
    pub fn new(max_directions: usize) -> QuicConnections {
        QuicConnections {
            ids: FxHashMap::default(),
            max: max_directions.max(1),
            evicted: 0,
        }
    }

    /// Learns from the long-header packets of the first level of `d` that carries
    /// QUIC: each source connection id is the one the other side will send to.
    pub fn observe(&mut self, d: &Decoded<'_>) {
        let Some((level, headers)) = levels(d).find_map(|l| l.quic().map(|q| (l, q))) else {
            return;
        };
        let Some(key) = direction(&level) else {
            return;
        };
        let back = (key.2, key.3, key.0, key.1);
        for h in headers.filter(|h| h.kind() != PacketKind::VersionNegotiation) {
            let Some(id) = Cid::new(h.scid()) else {
                continue;
            };
            if self.ids.get(&back) == Some(&id) {
                continue;
            }
            if self.ids.len() >= self.max
                && !self.ids.contains_key(&back)
                && let Some(old) = self.ids.keys().next().copied()
            {
                self.ids.remove(&old);
                self.evicted += 1;
            }
            self.ids.insert(back, id);
        }
    }

    /// The connection id a peer announced for the short-header packets sent in the
    /// direction of the UDP datagram at decode level `d`, if one did.
    pub fn announced(&self, d: &Decoded<'_>) -> Option<&[u8]> {
        d.udp()?;
        self.ids.get(&direction(d)?).map(Cid::as_slice)
    }

    /// The destination connection id of the short-header packet `packet` (bytes of the
    /// UDP datagram at decode level `d`), if it starts with the id announced for its
    /// direction.
    pub fn short_dcid<'a>(&self, d: &Decoded<'a>, packet: &'a [u8]) -> Option<&'a [u8]> {
        let id = self.announced(d)?;
        let dcid = tracekit_decode::quic::short_header_dcid(packet, id.len())?;
        (dcid == id).then_some(dcid)
    }

    /// How many directions are known.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// How many directions were forgotten to stay within the bound.
    pub fn evicted(&self) -> u64 {
        self.evicted
    }
}

impl FieldState for QuicConnections {
    fn quic_short_dcid<'a>(&self, d: &Decoded<'a>, packet: &'a [u8]) -> Option<&'a [u8]> {
        self.short_dcid(d, packet)
    }
}

fn direction(d: &Decoded<'_>) -> Option<Direction> {
    Some((d.src_addr()?, d.src_port()?, d.dst_addr()?, d.dst_port()?))
}

/// `d` and the packets its tunnels carry, outermost first.
fn levels<'a>(d: &Decoded<'a>) -> impl Iterator<Item = Decoded<'a>> {
    std::iter::successors(Some(d.clone()), |l| l.inner()).take(MAX_LEVELS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracekit_core::LinkType;
    use tracekit_testdata::builder::{Ipv4, PacketBuilder, Udp};

    /// Client 10.0.0.1 (a port below 443) and server 10.0.0.2:443.
    fn datagram(src_port: u16, dst_port: u16, payload: &[u8]) -> Vec<u8> {
        let (client, server) = ([10, 0, 0, 1], [10, 0, 0, 2]);
        let (src, dst) = if src_port == 443 {
            (server, client)
        } else {
            (client, server)
        };
        PacketBuilder::new()
            .ipv4(Ipv4::new(src, dst))
            .udp(Udp::new(src_port, dst_port))
            .payload(payload)
            .build()
    }

    /// A version 1 Handshake packet with a 1-byte DCID and a `scid_len`-byte SCID.
    fn handshake(scid_len: u8) -> Vec<u8> {
        let mut p = vec![0xe0, 0, 0, 0, 1, 1, 0xcc, scid_len];
        p.extend((0..scid_len).map(|i| i + 1));
        p.extend([1, 0]);
        p
    }

    #[test]
    fn bounded_and_counted() {
        let mut q = QuicConnections::new(2);
        for port in 1..=5u16 {
            let f = datagram(port, 443, &handshake(8));
            q.observe(&Decoded::from_bytes(&f, LinkType::RAW, f.len() as u32));
        }
        assert_eq!((q.len(), q.evicted()), (2, 3));
        // The same direction again changes nothing.
        let f = datagram(5, 443, &handshake(8));
        q.observe(&Decoded::from_bytes(&f, LinkType::RAW, f.len() as u32));
        assert_eq!((q.len(), q.evicted()), (2, 3));
        // A later SCID of another length replaces the first.
        let f = datagram(5, 443, &handshake(4));
        q.observe(&Decoded::from_bytes(&f, LinkType::RAW, f.len() as u32));
        let short = [0x40, 1, 2, 3, 4, 9];
        let back = datagram(443, 5, &short);
        let d = Decoded::from_bytes(&back, LinkType::RAW, back.len() as u32);
        assert_eq!(q.announced(&d), Some(&[1, 2, 3, 4][..]));
        let p = d.payload().unwrap();
        assert_eq!(q.short_dcid(&d, p), Some(&[1, 2, 3, 4][..]));
        // A short header with another id is not this connection's.
        let other = datagram(443, 5, &[0x40, 1, 2, 3, 5, 9]);
        let d = Decoded::from_bytes(&other, LinkType::RAW, other.len() as u32);
        assert_eq!(q.short_dcid(&d, d.payload().unwrap()), None);
        // The other direction learned nothing.
        let same = datagram(5, 443, &short);
        let d = Decoded::from_bytes(&same, LinkType::RAW, same.len() as u32);
        assert_eq!(q.announced(&d), None);
    }
}
