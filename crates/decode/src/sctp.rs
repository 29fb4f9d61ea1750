//! SCTP common headers and chunks.

use crate::anomaly::Anomaly;
use crate::bytes::{field_be16, field_be32};

mod field {
    use core::ops::Range;
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const VERIFICATION_TAG: Range<usize> = 4..8;
    pub const CHECKSUM: Range<usize> = 8..12;
    pub const LEN: usize = 12;
}

/// A chunk header: type, flags, length (of the header and value, without padding).
mod chunk {
    use core::ops::Range;
    pub const TYPE: usize = 0;
    pub const FLAGS: usize = 1;
    pub const LENGTH: Range<usize> = 2..4;
    pub const HEADER_LEN: usize = 4;
    /// Chunks are padded to a multiple of this.
    pub const ALIGN: usize = 4;
}

/// An SCTP common header whose 12 bytes were captured.
#[derive(Clone, Copy, Debug)]
pub struct SctpHeader<'a> {
    bytes: &'a [u8],
}

impl<'a> SctpHeader<'a> {
    /// Header length.
    pub const LEN: usize = field::LEN;

    /// A view of `bytes` if the header is there ([`Anomaly::SctpTruncated`] if not).
    pub fn new_checked(bytes: &'a [u8]) -> Result<SctpHeader<'a>, Anomaly> {
        if bytes.len() < field::LEN {
            return Err(Anomaly::SctpTruncated);
        }
        Ok(SctpHeader { bytes })
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

    /// Verification tag.
    #[inline]
    pub fn verification_tag(&self) -> u32 {
        field_be32(self.bytes, field::VERIFICATION_TAG)
    }

    /// Checksum field (CRC32c).
    #[inline]
    pub fn checksum(&self) -> u32 {
        field_be32(self.bytes, field::CHECKSUM)
    }

    /// The chunks that were captured, as `(type, flags, value)`; stops at a chunk whose
    /// length is below 4 or runs past the capture.
    pub fn chunks(&self) -> impl Iterator<Item = (u8, u8, &'a [u8])> + 'a {
        let mut rest = &self.bytes[field::LEN..];
        std::iter::from_fn(move || {
            let len = usize::from(crate::bytes::be16(rest, chunk::LENGTH.start)?);
            if len < chunk::HEADER_LEN || len > rest.len() {
                rest = &[];
                return None;
            }
            let c = (
                rest[chunk::TYPE],
                rest[chunk::FLAGS],
                &rest[chunk::HEADER_LEN..len],
            );
            rest = rest
                .get(len.next_multiple_of(chunk::ALIGN)..)
                .unwrap_or(&[]);
            Some(c)
        })
    }
}
