//! UDP headers.

use crate::anomaly::Anomaly;
use crate::bytes::field_be16;

mod field {
    use core::ops::Range;
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const LENGTH: Range<usize> = 4..6;
    pub const CHECKSUM: Range<usize> = 6..8;
    pub const LEN: usize = 8;
}

/// A UDP header whose 8 bytes were captured.
#[derive(Clone, Copy, Debug)]
pub struct UdpHeader<'a> {
    bytes: &'a [u8],
}

impl<'a> UdpHeader<'a> {
    /// Header length.
    pub const LEN: usize = field::LEN;

    /// A view of `bytes` if the header is there ([`Anomaly::UdpTruncated`] if not).
    #[inline]
    pub fn new_checked(bytes: &'a [u8]) -> Result<UdpHeader<'a>, Anomaly> {
        if bytes.len() < field::LEN {
            return Err(Anomaly::UdpTruncated);
        }
        Ok(UdpHeader { bytes })
    }

    /// Source port.
    #[inline]
    pub fn src_port(&self) -> u16 {
        field_be16(self.bytes, field::SRC_PORT)
    }

    /// Destination port.
    #[inline]
    pub fn dst_port(&self) -> u16 {
        field_be16(self.bytes, field::DST_PORT)
    }

    /// Length field (header and data).
    #[inline]
    pub fn length(&self) -> u16 {
        field_be16(self.bytes, field::LENGTH)
    }

    /// Checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        field_be16(self.bytes, field::CHECKSUM)
    }

    /// The length field, when it is plausible: at least the header, and at most `bound`.
    #[inline]
    pub(crate) fn len_within(&self, bound: usize) -> Option<usize> {
        let len = usize::from(self.length());
        (field::LEN..=bound).contains(&len).then_some(len)
    }

    /// [`Anomaly::UdpBadLength`] when the length field is below the header or beyond the
    /// `segment` the IP header leaves (a first fragment carries only part of the datagram
    /// its length covers, so `fragment` allows that).
    #[inline]
    pub(crate) fn length_anomaly(&self, segment: usize, fragment: bool) -> Option<Anomaly> {
        let len = usize::from(self.length());
        (len < field::LEN || (len > segment && !fragment)).then_some(Anomaly::UdpBadLength)
    }
}
