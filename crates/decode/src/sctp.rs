//! SCTP common headers.

/// An SCTP common header whose 12 bytes were captured.
#[derive(Clone, Copy, Debug)]
pub struct SctpHeader<'a> {
    bytes: &'a [u8],
}

impl<'a> SctpHeader<'a> {
    /// Header length.
    pub const LEN: usize = 12;

    /// A view of `bytes` if the header is there.
    pub fn new_checked(bytes: &'a [u8]) -> Option<SctpHeader<'a>> {
        (bytes.len() >= Self::LEN).then_some(SctpHeader { bytes })
    }

    /// Source port.
    pub fn src_port(&self) -> u16 {
        u16::from_be_bytes([self.bytes[0], self.bytes[1]])
    }

    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        u16::from_be_bytes([self.bytes[2], self.bytes[3]])
    }

    /// Verification tag.
    pub fn verification_tag(&self) -> u32 {
        u32::from_be_bytes([self.bytes[4], self.bytes[5], self.bytes[6], self.bytes[7]])
    }

    /// The chunks that were captured, as `(type, flags, value)`; stops at a chunk whose
    /// length is below 4 or runs past the capture.
    pub fn chunks(&self) -> impl Iterator<Item = (u8, u8, &'a [u8])> + 'a {
        let mut rest = &self.bytes[Self::LEN..];
        std::iter::from_fn(move || {
            let len = usize::from(u16::from_be_bytes([*rest.get(2)?, *rest.get(3)?]));
            if len < 4 || len > rest.len() {
                rest = &[];
                return None;
            }
            let chunk = (rest[0], rest[1], &rest[4..len]);
            let padded = (len + 3) & !3;
            rest = rest.get(padded..).unwrap_or(&[]);
            Some(chunk)
        })
    }
}
