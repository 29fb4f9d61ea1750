//! IPv6 headers and extension headers.

use std::net::Ipv6Addr;

mod field {
    pub const PAYLOAD_LEN: usize = 4;
    pub const NEXT_HEADER: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC: usize = 8;
    pub const DST: usize = 24;
    pub const LEN: usize = 40;
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

    /// A view of `bytes` if the 40-byte header is there and the version is 6.
    pub fn new_checked(bytes: &'a [u8]) -> Option<Ipv6Header<'a>> {
        (bytes.len() >= field::LEN && bytes[0] >> 4 == 6).then_some(Ipv6Header { bytes })
    }

    /// Traffic class.
    pub fn traffic_class(&self) -> u8 {
        (u16::from_be_bytes([self.bytes[0], self.bytes[1]]) >> 4) as u8
    }

    /// Flow label.
    pub fn flow_label(&self) -> u32 {
        u32::from_be_bytes([0, self.bytes[1] & 0xf, self.bytes[2], self.bytes[3]])
    }

    /// Payload length field.
    pub fn payload_len(&self) -> u16 {
        u16::from_be_bytes([
            self.bytes[field::PAYLOAD_LEN],
            self.bytes[field::PAYLOAD_LEN + 1],
        ])
    }

    /// The next-header field of the fixed header (an extension header or the transport).
    pub fn next_header(&self) -> u8 {
        self.bytes[field::NEXT_HEADER]
    }

    /// Hop limit.
    pub fn hop_limit(&self) -> u8 {
        self.bytes[field::HOP_LIMIT]
    }

    /// Source address.
    pub fn src(&self) -> Ipv6Addr {
        let mut a = [0u8; 16];
        a.copy_from_slice(&self.bytes[field::SRC..field::SRC + 16]);
        Ipv6Addr::from(a)
    }

    /// Destination address.
    pub fn dst(&self) -> Ipv6Addr {
        let mut a = [0u8; 16];
        a.copy_from_slice(&self.bytes[field::DST..field::DST + 16]);
        Ipv6Addr::from(a)
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
        let h = ExtHeader {
            kind: self.next,
            next: bytes[0],
            bytes,
        };
        self.next = bytes[0];
        self.off += len;
        self.count += 1;
        Some(h)
    }
}

/// The number of extension headers the decoder follows.
pub(crate) const MAX_EXT: u8 = 16;

pub(crate) fn is_extension(nh: u8) -> bool {
    matches!(
        nh,
        ext::HOP_BY_HOP | ext::ROUTING | ext::FRAGMENT | ext::AH | ext::DEST_OPTS
    )
}

/// Length of the extension header `kind` at `off`, if its length byte was captured.
pub(crate) fn ext_len(kind: u8, b: &[u8], off: usize) -> Option<usize> {
    match kind {
        ext::FRAGMENT => Some(8),
        ext::AH => Some((usize::from(*b.get(off + 1)?) + 2) * 4),
        _ => Some((usize::from(*b.get(off + 1)?) + 1) * 8),
    }
}
