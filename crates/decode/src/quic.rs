//! QUIC long headers (RFC 9000 §17.2, RFC 9369 §3.2 for version 2): the version and the
//! connection ids of each long-header packet a UDP datagram carries (several may be
//! coalesced, RFC 9000 §12.2). Short-header packets carry no version and a connection
//! id whose length only the connection knows: [`short_header_dcid`] reads it given that
//! length (`tracekit-flow`'s `QuicConnections` learns it from the long headers, as
//! tshark does). Payloads are encrypted: nothing past the header is read.
//!
//! ```
//! use tracekit_decode::quic;
//! // A version 1 Initial: DCID 4 bytes, SCID empty, no token, 1-byte payload length 1.
//! let d = [0xc0, 0, 0, 0, 1, 4, 0xaa, 0xbb, 0xcc, 0xdd, 0, 0, 1, 0x55];
//! let p = quic::long_headers(&d).next().unwrap();
//! assert_eq!(p.version(), 1);
//! assert_eq!(p.dcid(), &[0xaa, 0xbb, 0xcc, 0xdd]);
//! assert_eq!(p.kind(), quic::PacketKind::Initial);
//! ```

use crate::bytes::{be32, u8_at};

/// Byte offsets of the invariant long header (RFC 8999 §5.1).
mod field {
    pub const FIRST: usize = 0;
    pub const VERSION: usize = 1;
    pub const DCID_LEN: usize = 5;
    pub const DCID: usize = 6;
    /// The form bit of the first byte: a long header.
    pub const LONG_FORM: u8 = 0x80;
    /// Where a short header's destination connection id starts.
    pub const SHORT_DCID: usize = 1;
    /// Connection ids are at most 20 bytes in versions 1 and 2.
    pub const MAX_CID: usize = 20;
}

/// Versions.
pub mod version {
    /// Version negotiation (RFC 9000 §17.2.1).
    pub const NEGOTIATION: u32 = 0;
    /// QUIC version 1 (RFC 9000).
    pub const V1: u32 = 1;
    /// QUIC version 2 (RFC 9369).
    pub const V2: u32 = 0x6b33_43cf;
}

/// What a long-header packet is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketKind {
    /// Initial.
    Initial,
    /// 0-RTT.
    ZeroRtt,
    /// Handshake.
    Handshake,
    /// Retry.
    Retry,
    /// Version negotiation.
    VersionNegotiation,
}

/// The last IETF draft version (draft-34 was published as version 1).
const LAST_DRAFT: u32 = 0xff00_0022;

/// Whether `v` is a version whose long header this module reads: 1, 2 and the IETF
/// drafts (0xff000001..=0xff000022). Version negotiation packets (version 0) answer a
/// connection attempt and cannot be told from other UDP payloads on their own: they are
/// not read.
pub fn is_known_version(v: u32) -> bool {
    matches!(v, version::V1 | version::V2) || (0xff00_0001..=LAST_DRAFT).contains(&v)
}

/// One long-header packet.
#[derive(Clone, Copy, Debug)]
pub struct LongHeader<'a> {
    first: u8,
    version: u32,
    dcid: &'a [u8],
    scid: &'a [u8],
}

impl<'a> LongHeader<'a> {
    /// The version field.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The destination connection id.
    pub fn dcid(&self) -> &'a [u8] {
        self.dcid
    }

    /// The source connection id.
    pub fn scid(&self) -> &'a [u8] {
        self.scid
    }

    /// The packet type (version 2 numbers them differently from version 1).
    pub fn kind(&self) -> PacketKind {
        if self.version == version::NEGOTIATION {
            return PacketKind::VersionNegotiation;
        }
        let bits = (self.first >> 4) & 0x3;
        let v2 = self.version == version::V2;
        match (bits, v2) {
            (0, false) | (1, true) => PacketKind::Initial,
            (1, false) | (2, true) => PacketKind::ZeroRtt,
            (2, false) | (3, true) => PacketKind::Handshake,
            _ => PacketKind::Retry,
        }
    }
}

/// A QUIC variable-length integer at `at` (RFC 9000 §16), and its length.
fn varint(b: &[u8], at: usize) -> Option<(u64, usize)> {
    let first = u8_at(b, at)?;
    let len = 1usize << (first >> 6);
    let bytes = b.get(at..at.checked_add(len)?)?;
    let mut v = u64::from(first & 0x3f);
    for &x in &bytes[1..] {
        v = v << 8 | u64::from(x);
    }
    Some((v, len))
}

/// The long-header packets at the start of a UDP payload, coalesced ones included: the
/// iteration stops at a short-header packet, an unknown version, or a header the
/// capture cut.
pub fn long_headers(payload: &[u8]) -> LongHeaders<'_> {
    LongHeaders { rest: payload }
}

/// The iterator of [`long_headers`].
#[derive(Clone, Debug)]
pub struct LongHeaders<'a> {
    rest: &'a [u8],
}

impl<'a> LongHeaders<'a> {
    /// The header at the start of `b`, and where the next coalesced packet starts
    /// (`None` when nothing may follow).
    fn parse(b: &'a [u8]) -> Option<(LongHeader<'a>, Option<usize>)> {
        let first = u8_at(b, field::FIRST)?;
        if first & field::LONG_FORM == 0 {
            return None;
        }
        let version = be32(b, field::VERSION)?;
        // The fixed bit is not checked: RFC 9287 lets peers grease it.
        if !is_known_version(version) {
            return None;
        }
        let dcid_len = usize::from(u8_at(b, field::DCID_LEN)?);
        if dcid_len > field::MAX_CID {
            return None;
        }
        let dcid = b.get(field::DCID..field::DCID + dcid_len)?;
        let at = field::DCID + dcid_len;
        let scid_len = usize::from(u8_at(b, at)?);
        let scid = b.get(at + 1..at + 1 + scid_len)?;
        let h = LongHeader {
            first,
            version,
            dcid,
            scid,
        };
        let mut at = at + 1 + scid_len;
        let next = match h.kind() {
            PacketKind::Retry | PacketKind::VersionNegotiation => None,
            kind => {
                if kind == PacketKind::Initial {
                    let (token_len, n) = varint(b, at)?;
                    at = at
                        .checked_add(n)?
                        .checked_add(usize::try_from(token_len).ok()?)?;
                }
                let (len, n) = varint(b, at)?;
                Some(at + n + usize::try_from(len).ok()?)
            }
        };
        Some((h, next))
    }
}

impl<'a> LongHeaders<'a> {
    /// The bytes after the long-header packets iterated so far; once the iteration has
    /// ended, what follows the last of them (empty, or a short-header packet coalesced
    /// after them, or bytes that do not parse).
    pub fn remainder(&self) -> &'a [u8] {
        self.rest
    }
}

/// The destination connection id of the short-header (1-RTT) packet `b` starts with,
/// given the connection id length its connection uses; `None` when `b` does not start
/// with a short header (form bit clear) of that many bytes. (The fixed bit is not
/// checked: peers may grease it, RFC 9287, and tshark reads such packets.)
///
/// ```
/// use tracekit_decode::quic;
/// let d = [0x43, 1, 2, 3, 4, 5, 6, 7, 8, 0xee, 0xee];
/// assert_eq!(quic::short_header_dcid(&d, 8), Some(&[1, 2, 3, 4, 5, 6, 7, 8][..]));
/// assert_eq!(quic::short_header_dcid(&[0xc3, 0, 0], 2), None); // a long header
/// ```
pub fn short_header_dcid(b: &[u8], dcid_len: usize) -> Option<&[u8]> {
    let first = u8_at(b, field::FIRST)?;
    if first & field::LONG_FORM != 0 || dcid_len > field::MAX_CID {
        return None;
    }
    b.get(field::SHORT_DCID..field::SHORT_DCID + dcid_len)
}

impl<'a> Iterator for LongHeaders<'a> {
    type Item = LongHeader<'a>;

    fn next(&mut self) -> Option<LongHeader<'a>> {
        match Self::parse(self.rest) {
            Some((h, next)) => {
                self.rest = next.and_then(|n| self.rest.get(n..)).unwrap_or(&[]);
                Some(h)
            }
            // What is left (a short-header packet, say) stays for `remainder`.
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coalesced_and_rejected() {
        // A v1 Handshake (type 2) of 2 payload bytes, then a v1 0-RTT (type 1), then junk.
        let mut d = vec![0xe0, 0, 0, 0, 1, 1, 0x11, 0, 0x02, 0xaa, 0xbb];
        d.extend([0xd0, 0, 0, 0, 1, 2, 0x21, 0x22, 1, 0x33, 0x01, 0xcc]);
        d.extend([0x40, 1, 2, 3]);
        let v: Vec<_> = long_headers(&d)
            .map(|h| (h.kind(), h.dcid().to_vec()))
            .collect();
        assert_eq!(
            v,
            [
                (PacketKind::Handshake, vec![0x11]),
                (PacketKind::ZeroRtt, vec![0x21, 0x22])
            ]
        );
        // Version 2 numbers the Initial 1 (and has a token length).
        let d = [0x90, 0x6b, 0x33, 0x43, 0xcf, 0, 0, 0, 1, 0];
        assert_eq!(long_headers(&d).next().unwrap().kind(), PacketKind::Initial);
        // Unknown versions, version negotiation, short headers, a too-long DCID, a cut one.
        for bad in [
            &[0xc0, 0, 0, 0, 7, 0, 0, 0, 0][..],
            &[0x80, 0, 0, 0, 0, 0, 0],
            &[0x40, 0, 0, 0, 1, 0, 0],
            &[0xc0, 0, 0, 0, 1, 21],
            &[0xc0, 0, 0, 0, 1, 8, 1, 2],
            &[0xc0, 0xff, 0, 0, 0xa0, 0, 0, 0, 0],
        ] {
            assert!(long_headers(bad).next().is_none(), "{bad:?}");
        }
    }
}
