//! UDP headers.

/// A UDP header whose 8 bytes were captured.
#[derive(Clone, Copy, Debug)]
pub struct UdpHeader<'a> {
    bytes: &'a [u8],
}

impl<'a> UdpHeader<'a> {
    /// Header length.
    pub const LEN: usize = 8;

    /// A view of `bytes` if the header is there.
    #[inline]
    pub fn new_checked(bytes: &'a [u8]) -> Option<UdpHeader<'a>> {
        (bytes.len() >= Self::LEN).then_some(UdpHeader { bytes })
    }

    /// Source port.
    #[inline]
    pub fn src_port(&self) -> u16 {
        u16::from_be_bytes([self.bytes[0], self.bytes[1]])
    }

    /// Destination port.
    #[inline]
    pub fn dst_port(&self) -> u16 {
        u16::from_be_bytes([self.bytes[2], self.bytes[3]])
    }

    /// Length field (header and data).
    #[inline]
    pub fn length(&self) -> u16 {
        u16::from_be_bytes([self.bytes[4], self.bytes[5]])
    }

    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        u16::from_be_bytes([self.bytes[6], self.bytes[7]])
    }
}
