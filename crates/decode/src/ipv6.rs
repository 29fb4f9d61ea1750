//! IPv6 headers and extension headers, and the network walk for IPv6 packets.

use std::net::Ipv6Addr;

use crate::anomaly::{Anomalies, Anomaly};
use crate::bytes::{be16, be32, field_be16, field_be32, u8_at};
use crate::net::{Fragment, L4State, NetInfo};

mod field {
    use core::ops::Range;
    /// Version (4 bits), traffic class (8), flow label (20).
    pub const VER_TC_FLOW: Range<usize> = 0..4;
    pub const PAYLOAD_LEN: Range<usize> = 4..6;
    pub const NEXT_HEADER: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC: Range<usize> = 8..24;
    pub const DST: Range<usize> = 24..40;
    pub const LEN: usize = 40;
}

/// Extension headers: next header and length (in 8-byte units after the first 8; for
/// AH in 4-byte units after the first 8), then the fragment header's fields.
mod ext_field {
    pub const NEXT_HEADER: usize = 0;
    pub const LEN: usize = 1;
    /// The fragment header: offset (13 bits, in 8-byte units) and M flag, then the id.
    pub const FRAG_OFFSET_FLAGS: usize = 2;
    pub const FRAG_IDENT: usize = 4;
    pub const FRAG_LEN: usize = 8;
    pub const FRAG_OFFSET_MASK: u16 = 0xfff8;
    pub const FRAG_MORE: u16 = 0x0001;
}

/// Extension header numbers the decoder walks.
pub mod ext {
    /// Hop-by-hop options.
    pub const HOP_BY_HOP: u8 = 0;
    /// Routing header.
    pub const ROUTING: u8 = 43;
    /// Fragment header.
    pub const FRAGMENT: u8 = 44;
    /// Encapsulating security payload: the walk stops here.
    pub const ESP: u8 = 50;
    /// Authentication header.
    pub const AH: u8 = 51;
    /// No next header.
    pub const NO_NEXT: u8 = 59;
    /// Destination options.
    pub const DEST_OPTS: u8 = 60;
}

/// An IPv6 header whose 40 bytes were captured, with version 6.
#[derive(Clone, Copy, Debug)]
pub struct Ipv6Header<'a> {
    bytes: &'a [u8],
}

impl<'a> Ipv6Header<'a> {
    /// Header length.
    pub const LEN: usize = field::LEN;

    /// A view of `bytes` if the 40-byte header is there ([`Anomaly::Ipv6Truncated`]) and
    /// the version is 6 ([`Anomaly::Ipv6BadVersion`]).
    #[inline]
    pub fn new_checked(bytes: &'a [u8]) -> Result<Ipv6Header<'a>, Anomaly> {
        if bytes.len() < field::LEN {
            return Err(Anomaly::Ipv6Truncated);
        }
        let h = Ipv6Header { bytes };
        if h.ver_tc_flow() >> 28 != 6 {
            return Err(Anomaly::Ipv6BadVersion);
        }
        Ok(h)
    }

    #[inline]
    fn ver_tc_flow(&self) -> u32 {
        field_be32(self.bytes, field::VER_TC_FLOW)
    }

    /// Traffic class.
    pub fn traffic_class(&self) -> u8 {
        (self.ver_tc_flow() >> 20) as u8
    }

    /// Flow label.
    pub fn flow_label(&self) -> u32 {
        self.ver_tc_flow() & 0x000f_ffff
    }

    /// Payload length field.
    #[inline]
    pub fn payload_len(&self) -> u16 {
        field_be16(self.bytes, field::PAYLOAD_LEN)
    }

    /// The next-header field of the fixed header (an extension header or the transport).
    #[inline]
    pub fn next_header(&self) -> u8 {
        self.bytes[field::NEXT_HEADER]
    }

    /// Hop limit.
    pub fn hop_limit(&self) -> u8 {
        self.bytes[field::HOP_LIMIT]
    }

    fn addr(&self, f: core::ops::Range<usize>) -> Ipv6Addr {
        let mut a = [0u8; 16];
        a.copy_from_slice(&self.bytes[f]);
        Ipv6Addr::from(a)
    }

    /// Source address.
    #[inline]
    pub fn src(&self) -> Ipv6Addr {
        self.addr(field::SRC)
    }

    /// Destination address.
    #[inline]
    pub fn dst(&self) -> Ipv6Addr {
        self.addr(field::DST)
    }

    /// The extension headers that were captured, in order.
    pub fn extensions(&self) -> ExtIter<'a> {
        ExtIter {
            bytes: self.bytes,
            next: self.next_header(),
            off: field::LEN,
            count: 0,
        }
    }
}

/// One IPv6 extension header.
#[derive(Clone, Copy, Debug)]
pub struct ExtHeader<'a> {
    /// Its header number (0, 43, 44, 51, 60).
    pub kind: u8,
    /// The header number that follows it.
    pub next: u8,
    /// Its bytes, including the next-header and length bytes.
    pub bytes: &'a [u8],
}

/// Iterator over captured IPv6 extension headers; stops at the transport, at ESP, at
/// the capture end and after 16 headers.
#[derive(Clone, Debug)]
pub struct ExtIter<'a> {
    bytes: &'a [u8],
    next: u8,
    off: usize,
    count: u8,
}

impl<'a> Iterator for ExtIter<'a> {
    type Item = ExtHeader<'a>;

    fn next(&mut self) -> Option<ExtHeader<'a>> {
        if !is_extension(self.next) || self.count >= MAX_EXT {
            return None;
        }
        let len = ext_len(self.next, self.bytes, self.off)?;
        let bytes = self.bytes.get(self.off..self.off.checked_add(len)?)?;
        let next = bytes[ext_field::NEXT_HEADER];
        let h = ExtHeader {
            kind: self.next,
            next,
            bytes,
        };
        self.next = next;
        self.off += len;
        self.count += 1;
        Some(h)
    }
}

/// The number of extension headers the decoder follows.
const MAX_EXT: u8 = 16;

fn is_extension(nh: u8) -> bool {
    matches!(
        nh,
        ext::HOP_BY_HOP | ext::ROUTING | ext::FRAGMENT | ext::AH | ext::DEST_OPTS
    )
}

/// Length of the extension header `kind` at `off`, if its length byte was captured.
fn ext_len(kind: u8, b: &[u8], off: usize) -> Option<usize> {
    match kind {
        ext::FRAGMENT => Some(ext_field::FRAG_LEN),
        ext::AH => Some((usize::from(u8_at(b, off + ext_field::LEN)?) + 2) * 4),
        _ => Some((usize::from(u8_at(b, off + ext_field::LEN)?) + 1) * 8),
    }
}

/// Walks the IPv6 packet at `off` in `b` (the frame's useful bytes) and its extension
/// headers, of which `wire` bytes were on the wire, noting what is wrong in `an`.
#[inline(always)]
pub(crate) fn walk(b: &[u8], off: usize, wire: usize, an: &mut Anomalies) -> NetInfo {
    let mut n = NetInfo {
        ip_off: off as u32,
        ..NetInfo::default()
    };
    let Some(ip) = b.get(off..) else { return n };
    let h = match Ipv6Header::new_checked(ip) {
        Ok(h) => h,
        Err(a) => {
            an.insert(a);
            return n;
        }
    };
    n.version = 6;
    let plen = usize::from(h.payload_len());
    let mut nh = h.next_header();
    let declared = if plen == 0 && nh == ext::HOP_BY_HOP {
        // jumbogram: the length is in an option; take the frame
        ip.len().max(wire)
    } else {
        field::LEN + plen
    };
    if declared > wire {
        an.insert(Anomaly::Ipv6BadPayloadLength);
    }
    let declared_end = off + declared;
    n.declared_end = declared_end as u32;
    n.avail_end = declared_end.min(b.len()) as u32;
    // An extension header that needs bytes up to `need` overruns the payload length, or
    // else was cut by the capture.
    let cut = |need: usize| {
        if need > declared_end {
            Anomaly::Ipv6ExtOverrun
        } else {
            Anomaly::Ipv6ExtTruncated
        }
    };
    let mut cur = off + field::LEN;
    let mut count = 0u8;
    let mut state = L4State::Present;
    while is_extension(nh) {
        if count == MAX_EXT {
            an.insert(Anomaly::Ipv6TooManyExt);
            state = L4State::Absent;
            break;
        }
        if nh == ext::HOP_BY_HOP && count > 0 {
            an.insert(Anomaly::Ipv6HopByHopNotFirst);
        }
        let (Some(len), Some(next)) = (ext_len(nh, b, cur), u8_at(b, cur + ext_field::NEXT_HEADER))
        else {
            an.insert(cut(cur + ext_field::LEN + 1));
            state = L4State::Absent;
            break;
        };
        if cur + len > b.len().min(declared_end) {
            an.insert(cut(cur + len));
            state = L4State::Absent;
            break;
        }
        if nh == ext::FRAGMENT {
            let ff = be16(b, cur + ext_field::FRAG_OFFSET_FLAGS).unwrap_or(0);
            let f = Fragment {
                id: be32(b, cur + ext_field::FRAG_IDENT).unwrap_or(0),
                offset: ff & ext_field::FRAG_OFFSET_MASK,
                more: ff & ext_field::FRAG_MORE != 0,
            };
            n.frag = Some(f);
            if f.offset == 0 && !f.more {
                an.insert(Anomaly::FragmentUseless);
            }
            if f.offset != 0 {
                state = L4State::Fragment;
            }
        }
        nh = next;
        cur += len;
        count += 1;
        if state == L4State::Fragment {
            break;
        }
    }
    n.proto = nh;
    if state != L4State::Absent && nh != ext::NO_NEXT {
        n.l4_off = cur as u32;
        n.l4 = state;
    }
    n.avail_end = n.avail_end.max(n.l4_off);
    n
}
