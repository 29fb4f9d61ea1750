//! ICMP and ICMPv6 headers.

use crate::anomaly::Anomaly;
use crate::bytes::{field_be16, field_be32};

mod field {
    use core::ops::Range;
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Range<usize> = 2..4;
    /// ICMP (v4) only: identifier and sequence, or unused / next-hop MTU.
    pub const REST_OF_HEADER: Range<usize> = 4..8;
    pub const LEN: usize = 8;
    /// ICMPv6: type, code and checksum; the message body follows.
    pub const V6_LEN: usize = 4;
}

/// ICMP types that quote the offending packet: destination unreachable, source quench,
/// redirect, time exceeded, parameter problem.
const ERROR_TYPES: [u8; 5] = [3, 4, 5, 11, 12];

/// ICMPv6 types that quote the offending packet: destination unreachable, packet too
/// big, time exceeded, parameter problem.
const V6_ERROR_TYPES: core::ops::RangeInclusive<u8> = 1..=4;

/// An ICMP (v4) header whose 8 bytes were captured.
#[derive(Clone, Copy, Debug)]
pub struct IcmpHeader<'a> {
    bytes: &'a [u8],
}

impl<'a> IcmpHeader<'a> {
    /// Header length.
    pub const LEN: usize = field::LEN;

    /// A view of `bytes` if the header is there ([`Anomaly::IcmpTruncated`] if not).
    pub fn new_checked(bytes: &'a [u8]) -> Result<IcmpHeader<'a>, Anomaly> {
        if bytes.len() < field::LEN {
            return Err(Anomaly::IcmpTruncated);
        }
        Ok(IcmpHeader { bytes })
    }

    /// Type.
    #[inline]
    pub fn icmp_type(&self) -> u8 {
        self.bytes[field::TYPE]
    }

    /// Code.
    #[inline]
    pub fn code(&self) -> u8 {
        self.bytes[field::CODE]
    }

    /// Checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        field_be16(self.bytes, field::CHECKSUM)
    }

    /// The second 32-bit word (identifier and sequence for echo, unused or MTU for errors).
    #[inline]
    pub fn rest_of_header(&self) -> u32 {
        field_be32(self.bytes, field::REST_OF_HEADER)
    }

    /// Whether this type quotes the offending packet (unreachable, source quench,
    /// redirect, time exceeded, parameter problem).
    pub fn is_error(&self) -> bool {
        ERROR_TYPES.contains(&self.icmp_type())
    }
}

/// Neighbour discovery (RFC 4861 §4.3–4.4).
pub(crate) mod nd {
    use core::ops::Range;
    pub const SOLICITATION: u8 = 135;
    pub const ADVERTISEMENT: u8 = 136;
    /// The target address, after type, code, checksum and 4 reserved or flag bytes.
    pub const TARGET: Range<usize> = 8..24;
}

/// An ICMPv6 header whose first 4 bytes were captured.
#[derive(Clone, Copy, Debug)]
pub struct Icmpv6Header<'a> {
    bytes: &'a [u8],
}

impl<'a> Icmpv6Header<'a> {
    /// Length of the type, code and checksum.
    pub const LEN: usize = field::V6_LEN;

    /// A view of `bytes` if the header is there ([`Anomaly::Icmpv6Truncated`] if not).
    pub fn new_checked(bytes: &'a [u8]) -> Result<Icmpv6Header<'a>, Anomaly> {
        if bytes.len() < field::V6_LEN {
            return Err(Anomaly::Icmpv6Truncated);
        }
        Ok(Icmpv6Header { bytes })
    }

    /// Type.
    #[inline]
    pub fn icmp_type(&self) -> u8 {
        self.bytes[field::TYPE]
    }

    /// Code.
    #[inline]
    pub fn code(&self) -> u8 {
        self.bytes[field::CODE]
    }

    /// Checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        field_be16(self.bytes, field::CHECKSUM)
    }

    /// The message body after type, code and checksum.
    pub fn body(&self) -> &'a [u8] {
        &self.bytes[field::V6_LEN..]
    }

    /// Whether this type quotes the offending packet (types 1–4).
    pub fn is_error(&self) -> bool {
        V6_ERROR_TYPES.contains(&self.icmp_type())
    }

    /// The target address of a neighbour solicitation (type 135) or advertisement (136)
    /// (RFC 4861 §4.3–4.4: after 4 reserved or flag bytes), if it was captured.
    pub fn nd_target(&self) -> Option<std::net::Ipv6Addr> {
        if !matches!(self.icmp_type(), nd::SOLICITATION | nd::ADVERTISEMENT) {
            return None;
        }
        let b: [u8; 16] = self.bytes.get(nd::TARGET)?.try_into().ok()?;
        Some(b.into())
    }
}
