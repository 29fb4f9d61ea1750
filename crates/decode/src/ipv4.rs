//! IPv4 headers.

use std::net::Ipv4Addr;

use crate::bytes::be16;
use crate::checksum::internet_checksum;

mod field {
    pub const VER_IHL: usize = 0;
    pub const TOS: usize = 1;
    pub const TOTAL_LEN: usize = 2;
    pub const IDENT: usize = 4;
    pub const FLAGS_FRAG: usize = 6;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: usize = 10;
    pub const SRC: usize = 12;
    pub const DST: usize = 16;
    pub const FIXED_LEN: usize = 20;
}

/// An IPv4 header whose fixed 20 bytes were captured, with version 4 and IHL of at least 5.
#[derive(Clone, Copy, Debug)]
pub struct Ipv4Header<'a> {
    bytes: &'a [u8],
}

impl<'a> Ipv4Header<'a> {
    /// Length of the fixed header.
    pub const FIXED_LEN: usize = field::FIXED_LEN;

    /// A view of `bytes` if the fixed header is there, the version is 4 and IHL ≥ 5.
    pub fn new_checked(bytes: &'a [u8]) -> Option<Ipv4Header<'a>> {
        let b0 = *bytes.get(field::VER_IHL)?;
        (bytes.len() >= field::FIXED_LEN && b0 >> 4 == 4 && b0 & 0xf >= 5)
            .then_some(Ipv4Header { bytes })
    }

    fn u16_at(&self, i: usize) -> u16 {
        u16::from_be_bytes([self.bytes[i], self.bytes[i + 1]])
    }

    /// Header length in bytes (IHL × 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.bytes[field::VER_IHL] & 0xf) * 4
    }

    /// Type of service / DSCP+ECN byte.
    pub fn tos(&self) -> u8 {
        self.bytes[field::TOS]
    }

    /// Total length field.
    pub fn total_len(&self) -> u16 {
        self.u16_at(field::TOTAL_LEN)
    }

    /// Identification field.
    pub fn ident(&self) -> u16 {
        self.u16_at(field::IDENT)
    }

    /// Don't-fragment flag.
    pub fn dont_frag(&self) -> bool {
        self.bytes[field::FLAGS_FRAG] & 0x40 != 0
    }

    /// More-fragments flag.
    pub fn more_frags(&self) -> bool {
        self.bytes[field::FLAGS_FRAG] & 0x20 != 0
    }

    /// Fragment offset in bytes.
    pub fn frag_offset(&self) -> u16 {
        (self.u16_at(field::FLAGS_FRAG) & 0x1fff) << 3
    }

    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.bytes[field::TTL]
    }

    /// Protocol field.
    pub fn protocol(&self) -> u8 {
        self.bytes[field::PROTOCOL]
    }

    /// Header checksum field.
    pub fn checksum(&self) -> u16 {
        self.u16_at(field::CHECKSUM)
    }

    /// Source address.
    pub fn src(&self) -> Ipv4Addr {
        let b = &self.bytes[field::SRC..field::SRC + 4];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }

    /// Destination address.
    pub fn dst(&self) -> Ipv4Addr {
        let b = &self.bytes[field::DST..field::DST + 4];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }

    /// The options that were captured, as `(kind, data)`; stops at end-of-list, at the
    /// header end or at the capture end, and at an option whose length overruns.
    pub fn options(&self) -> OptionIter<'a> {
        let end = self.header_len().min(self.bytes.len());
        OptionIter {
            bytes: self.bytes.get(field::FIXED_LEN..end).unwrap_or(&[]),
            overrun: false,
        }
    }

    /// Whether the header checksum is right (only when the whole header was captured).
    pub fn checksum_ok(&self) -> Option<bool> {
        let h = self.bytes.get(..self.header_len())?;
        Some(internet_checksum(h, 0) == 0)
    }
}

/// Iterator over IPv4 (and, with the same encoding, TCP) options.
#[derive(Clone, Debug)]
pub struct OptionIter<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) overrun: bool,
}

impl OptionIter<'_> {
    /// Whether iteration stopped at an option whose length was below 2 or ran past the
    /// header.
    pub fn overran(&self) -> bool {
        self.overrun
    }
}

impl<'a> Iterator for OptionIter<'a> {
    type Item = (u8, &'a [u8]);

    fn next(&mut self) -> Option<(u8, &'a [u8])> {
        loop {
            let (&kind, rest) = self.bytes.split_first()?;
            match kind {
                0 => {
                    self.bytes = &[];
                    return None;
                }
                1 => {
                    self.bytes = rest;
                    continue;
                }
                _ => {
                    let len = match rest.first() {
                        Some(&l) if l >= 2 && usize::from(l) <= self.bytes.len() => usize::from(l),
                        _ => {
                            self.overrun = true;
                            self.bytes = &[];
                            return None;
                        }
                    };
                    let data = &self.bytes[2..len];
                    self.bytes = &self.bytes[len..];
                    return Some((kind, data));
                }
            }
        }
    }
}

pub(crate) fn total_len(b: &[u8]) -> Option<u16> {
    be16(b, field::TOTAL_LEN)
}
