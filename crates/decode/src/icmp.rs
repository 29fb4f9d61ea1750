//! ICMP and ICMPv6 headers.

/// An ICMP (v4) header whose 8 bytes were captured.
#[derive(Clone, Copy, Debug)]
pub struct IcmpHeader<'a> {
    bytes: &'a [u8],
}

impl<'a> IcmpHeader<'a> {
    /// Header length.
    pub const LEN: usize = 8;

    /// A view of `bytes` if the header is there.
    pub fn new_checked(bytes: &'a [u8]) -> Option<IcmpHeader<'a>> {
        (bytes.len() >= Self::LEN).then_some(IcmpHeader { bytes })
    }

    /// Type.
    pub fn icmp_type(&self) -> u8 {
        self.bytes[0]
    }

    /// Code.
    pub fn code(&self) -> u8 {
        self.bytes[1]
    }

    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        u16::from_be_bytes([self.bytes[2], self.bytes[3]])
    }

    /// The second 32-bit word (identifier and sequence for echo, unused or MTU for errors).
    pub fn rest_of_header(&self) -> u32 {
        u32::from_be_bytes([self.bytes[4], self.bytes[5], self.bytes[6], self.bytes[7]])
    }

    /// Whether this type quotes the offending packet (unreachable, source quench,
    /// redirect, time exceeded, parameter problem).
    pub fn is_error(&self) -> bool {
        matches!(self.icmp_type(), 3 | 4 | 5 | 11 | 12)
    }
}

/// An ICMPv6 header whose first 4 bytes were captured.
#[derive(Clone, Copy, Debug)]
pub struct Icmpv6Header<'a> {
    bytes: &'a [u8],
}

impl<'a> Icmpv6Header<'a> {
    /// Length of the type, code and checksum.
    pub const LEN: usize = 4;

    /// A view of `bytes` if the header is there.
    pub fn new_checked(bytes: &'a [u8]) -> Option<Icmpv6Header<'a>> {
        (bytes.len() >= Self::LEN).then_some(Icmpv6Header { bytes })
    }

    /// Type.
    pub fn icmp_type(&self) -> u8 {
        self.bytes[0]
    }

    /// Code.
    pub fn code(&self) -> u8 {
        self.bytes[1]
    }

    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        u16::from_be_bytes([self.bytes[2], self.bytes[3]])
    }

    /// The message body after type, code and checksum.
    pub fn body(&self) -> &'a [u8] {
        &self.bytes[4..]
    }

    /// Whether this type quotes the offending packet (types 1–4).
    pub fn is_error(&self) -> bool {
        (1..=4).contains(&self.icmp_type())
    }
}
