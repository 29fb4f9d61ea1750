//! Cisco ISL (Inter-Switch Link): a 26-byte header in front of a whole frame, and a
//! 4-byte CRC after it.
//!
//! An ISL frame looks like an 802.3 frame sent to 01:00:0C:00:00 or 0C:00:0C:00:00 (the
//! sixth "address" byte is the frame type and user bits); its length counts from the
//! byte after the length field to the end of the encapsulated frame, whose own FCS it
//! includes. The decoder reads through the encapsulated Ethernet frame (frame type 0),
//! as Wireshark does; [`crate::Decoded::isl`] gives the header (the VLAN id is
//! tshark's `isl.vlan_id`).

use crate::bytes::{field_be16, u8_at};

pub(crate) mod field {
    use core::ops::Range;
    /// The first five bytes of the destination: one of [`super::DST_PREFIXES`].
    pub const DST_PREFIX: Range<usize> = 0..5;
    /// Frame type (high nibble) and user bits (low nibble).
    pub const TYPE_USER: usize = 5;
    pub const SRC: Range<usize> = 6..12;
    /// Bytes from the LLC header to the end of the encapsulated frame.
    pub const LENGTH: Range<usize> = 12..14;
    /// Where the length starts counting.
    pub const COUNTED_FROM: usize = 14;
    /// The high-order source address bits (HSA), after the AA AA 03 LLC header.
    pub const HSA: Range<usize> = 17..20;
    /// The VLAN id (15 bits) and the BPDU bit.
    pub const VLAN_BPDU: Range<usize> = 20..22;
    pub const INDEX: Range<usize> = 22..24;
    pub const LEN: usize = 26;
    /// Frame type 0: Ethernet.
    pub const TYPE_ETHERNET: u8 = 0;
}

/// The destination prefixes that mark an ISL frame.
pub(crate) const DST_PREFIXES: [[u8; 5]; 2] = [
    [0x01, 0x00, 0x0C, 0x00, 0x00],
    [0x0C, 0x00, 0x0C, 0x00, 0x00],
];

/// Whether the Ethernet-looking header at `off` in `b` is an ISL header.
#[inline]
pub(crate) fn is_isl(b: &[u8], off: usize) -> bool {
    b.get(off + field::DST_PREFIX.start..off + field::DST_PREFIX.end)
        .is_some_and(|p| DST_PREFIXES.iter().any(|d| d == p))
}

/// The frame type of the ISL header at `off`, if captured.
pub(crate) fn frame_type(b: &[u8], off: usize) -> Option<u8> {
    u8_at(b, off + field::TYPE_USER).map(|v| v >> 4)
}

/// An ISL header whose 26 bytes were captured.
#[derive(Clone, Copy, Debug)]
pub struct IslHeader<'a> {
    bytes: &'a [u8],
}

impl<'a> IslHeader<'a> {
    /// Header length.
    pub const LEN: usize = field::LEN;

    /// A view of `bytes` if it starts with a whole ISL header (`None` if it is shorter or
    /// its destination is not one of ISL's).
    pub fn new_checked(bytes: &'a [u8]) -> Option<IslHeader<'a>> {
        (bytes.len() >= field::LEN && is_isl(bytes, 0)).then_some(IslHeader { bytes })
    }

    /// Frame type: 0 Ethernet, 1 Token Ring, 2 FDDI, 3 ATM.
    pub fn frame_type(&self) -> u8 {
        self.bytes[field::TYPE_USER] >> 4
    }

    /// The user bits (priority for Ethernet frames).
    pub fn user(&self) -> u8 {
        self.bytes[field::TYPE_USER] & 0x0f
    }

    /// Source address (the sending switch).
    pub fn src(&self) -> [u8; 6] {
        let mut a = [0; 6];
        a.copy_from_slice(&self.bytes[field::SRC]);
        a
    }

    /// The length field: bytes from the LLC header to the end of the encapsulated frame.
    pub fn length(&self) -> u16 {
        field_be16(self.bytes, field::LENGTH)
    }

    /// The high-order bits of the source address (normally Cisco's 00:00:0C).
    pub fn hsa(&self) -> u32 {
        let s = &self.bytes[field::HSA];
        u32::from_be_bytes([0, s[0], s[1], s[2]])
    }

    /// The VLAN id (15 bits), tshark's `isl.vlan_id`.
    pub fn vlan_id(&self) -> u16 {
        field_be16(self.bytes, field::VLAN_BPDU) >> 1
    }

    /// The BPDU bit: the frame is a BPDU, CDP or VTP frame.
    pub fn bpdu(&self) -> bool {
        field_be16(self.bytes, field::VLAN_BPDU) & 1 != 0
    }

    /// The port index of the sending switch.
    pub fn index(&self) -> u16 {
        field_be16(self.bytes, field::INDEX)
    }
}
