//! IPv4 headers, and the network walk for IPv4 packets.

use std::net::Ipv4Addr;

use crate::anomaly::{Anomalies, Anomaly};
use crate::bytes::{field_be16, field_be32};
use crate::checksum::internet_checksum;
use crate::net::{Fragment, L4State, NetInfo};

mod field {
    use core::ops::Range;
    pub const VER_IHL: usize = 0;
    pub const TOS: usize = 1;
    pub const TOTAL_LEN: Range<usize> = 2..4;
    pub const IDENT: Range<usize> = 4..6;
    pub const FLAGS_FRAG: Range<usize> = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Range<usize> = 10..12;
    pub const SRC: Range<usize> = 12..16;
    pub const DST: Range<usize> = 16..20;
    pub const FIXED_LEN: usize = 20;
}

/// Bits of the flags and fragment offset field.
mod frag {
    pub const DONT_FRAGMENT: u16 = 0x4000;
    pub const MORE_FRAGMENTS: u16 = 0x2000;
    /// The offset, in 8-byte units.
    pub const OFFSET_MASK: u16 = 0x1fff;
}

/// An IPv4 header whose fixed 20 bytes were captured, with version 4 and IHL of at least 5.
#[derive(Clone, Copy, Debug)]
pub struct Ipv4Header<'a> {
    bytes: &'a [u8],
}

impl<'a> Ipv4Header<'a> {
    /// Length of the fixed header.
    pub const FIXED_LEN: usize = field::FIXED_LEN;

    /// A view of `bytes` if the fixed header is there ([`Anomaly::Ipv4Truncated`]), the
    /// version is 4 ([`Anomaly::Ipv4BadVersion`]) and IHL ≥ 5 ([`Anomaly::Ipv4BadIhl`]).
    #[inline]
    pub fn new_checked(bytes: &'a [u8]) -> Result<Ipv4Header<'a>, Anomaly> {
        if bytes.len() < field::FIXED_LEN {
            return Err(Anomaly::Ipv4Truncated);
        }
        let h = Ipv4Header { bytes };
        if bytes[field::VER_IHL] >> 4 != 4 {
            return Err(Anomaly::Ipv4BadVersion);
        }
        if h.header_len() < field::FIXED_LEN {
            return Err(Anomaly::Ipv4BadIhl);
        }
        Ok(h)
    }

    /// Header length in bytes (IHL × 4).
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.bytes[field::VER_IHL] & 0xf) * 4
    }

    /// Type of service / DSCP+ECN byte.
    pub fn tos(&self) -> u8 {
        self.bytes[field::TOS]
    }

    /// Total length field.
    #[inline]
    pub fn total_len(&self) -> u16 {
        field_be16(self.bytes, field::TOTAL_LEN)
    }

    /// Identification field.
    #[inline]
    pub fn ident(&self) -> u16 {
        field_be16(self.bytes, field::IDENT)
    }

    #[inline]
    fn flags_frag(&self) -> u16 {
        field_be16(self.bytes, field::FLAGS_FRAG)
    }

    /// Don't-fragment flag.
    pub fn dont_frag(&self) -> bool {
        self.flags_frag() & frag::DONT_FRAGMENT != 0
    }

    /// More-fragments flag.
    #[inline]
    pub fn more_frags(&self) -> bool {
        self.flags_frag() & frag::MORE_FRAGMENTS != 0
    }

    /// Fragment offset in bytes.
    #[inline]
    pub fn frag_offset(&self) -> u16 {
        (self.flags_frag() & frag::OFFSET_MASK) << 3
    }

    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.bytes[field::TTL]
    }

    /// Protocol field.
    #[inline]
    pub fn protocol(&self) -> u8 {
        self.bytes[field::PROTOCOL]
    }

    /// Header checksum field.
    pub fn checksum(&self) -> u16 {
        field_be16(self.bytes, field::CHECKSUM)
    }

    /// Source address.
    #[inline]
    pub fn src(&self) -> Ipv4Addr {
        Ipv4Addr::from(field_be32(self.bytes, field::SRC))
    }

    /// Destination address.
    #[inline]
    pub fn dst(&self) -> Ipv4Addr {
        Ipv4Addr::from(field_be32(self.bytes, field::DST))
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

    /// [`Anomaly::Ipv4OptionOverrun`] when a captured option's length is below 2 or runs
    /// past the header.
    fn options_anomaly(&self) -> Option<Anomaly> {
        let mut opts = self.options();
        for _ in opts.by_ref() {}
        opts.overran().then_some(Anomaly::Ipv4OptionOverrun)
    }
}

/// Walks the IPv4 packet at `off` in `b` (the frame's useful bytes), of which `wire`
/// bytes were on the wire, noting what is wrong in `an`.
#[inline(always)]
pub(crate) fn walk(b: &[u8], off: usize, wire: usize, an: &mut Anomalies) -> NetInfo {
    let mut n = NetInfo {
        ip_off: off as u32,
        ..NetInfo::default()
    };
    let Some(ip) = b.get(off..) else { return n };
    let h = match Ipv4Header::new_checked(ip) {
        Ok(h) => h,
        Err(a) => {
            an.insert(a);
            return n;
        }
    };
    let hlen = h.header_len();
    n.version = 4;
    n.proto = h.protocol();
    let total = usize::from(h.total_len());
    let declared = if total == 0 {
        // TSO/LRO captures leave the length 0: the frame is the packet.
        ip.len().max(wire.min(usize::from(u16::MAX)))
    } else {
        total
    };
    if total != 0 && total < hlen {
        an.insert(Anomaly::Ipv4BadTotalLength);
        return n;
    }
    if declared > wire {
        an.insert(Anomaly::Ipv4LengthBeyondFrame);
    }
    n.declared_end = (off + declared) as u32;
    n.avail_end = (off + declared).min(b.len()) as u32;
    let (offset, more) = (h.frag_offset(), h.more_frags());
    if more || offset != 0 {
        n.frag = Some(Fragment {
            id: u32::from(h.ident()),
            offset,
            more,
        });
    }
    if hlen > ip.len() {
        an.insert(Anomaly::Ipv4OptionsTruncated);
        return n;
    }
    if let Some(a) = h.options_anomaly() {
        an.insert(a);
    }
    n.l4_off = (off + hlen) as u32;
    n.l4 = if offset != 0 {
        L4State::Fragment
    } else {
        L4State::Present
    };
    n.avail_end = n.avail_end.max(n.l4_off);
    n
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
                    // After the kind and length bytes.
                    let data = &self.bytes[2..len];
                    self.bytes = &self.bytes[len..];
                    return Some((kind, data));
                }
            }
        }
    }
}
