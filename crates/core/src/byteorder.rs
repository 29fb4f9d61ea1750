//! Byte order of the numbers in a capture file (pcap and pcapng are written in the
//! writer's native order; ERF is fixed).

/// Byte order of a file or section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ByteOrder {
    /// Little-endian (written by x86 and most ARM hosts).
    Little,
    /// Big-endian.
    Big,
}

impl ByteOrder {
    /// The byte order of this machine.
    pub const NATIVE: ByteOrder = if cfg!(target_endian = "big") {
        ByteOrder::Big
    } else {
        ByteOrder::Little
    };

    /// Reads a `u16` from the first 2 bytes of `b` (which must have them).
    #[inline]
    pub fn u16(self, b: &[u8]) -> u16 {
        let a: [u8; 2] = b[..2].try_into().unwrap_or([0; 2]);
        match self {
            ByteOrder::Little => u16::from_le_bytes(a),
            ByteOrder::Big => u16::from_be_bytes(a),
        }
    }

    /// Reads a `u32` from the first 4 bytes of `b` (which must have them).
    #[inline]
    pub fn u32(self, b: &[u8]) -> u32 {
        let a: [u8; 4] = b[..4].try_into().unwrap_or([0; 4]);
        match self {
            ByteOrder::Little => u32::from_le_bytes(a),
            ByteOrder::Big => u32::from_be_bytes(a),
        }
    }

    /// Reads a `u64` from the first 8 bytes of `b` (which must have them).
    #[inline]
    pub fn u64(self, b: &[u8]) -> u64 {
        let a: [u8; 8] = b[..8].try_into().unwrap_or([0; 8]);
        match self {
            ByteOrder::Little => u64::from_le_bytes(a),
            ByteOrder::Big => u64::from_be_bytes(a),
        }
    }

    /// The bytes of a `u16`.
    #[inline]
    pub fn put_u16(self, v: u16) -> [u8; 2] {
        match self {
            ByteOrder::Little => v.to_le_bytes(),
            ByteOrder::Big => v.to_be_bytes(),
        }
    }

    /// The bytes of a `u32`.
    #[inline]
    pub fn put_u32(self, v: u32) -> [u8; 4] {
        match self {
            ByteOrder::Little => v.to_le_bytes(),
            ByteOrder::Big => v.to_be_bytes(),
        }
    }

    /// `words` one after another at the start of `out` (4 bytes each), the byte order
    /// chosen once for all of them rather than once per word: how the writers store a
    /// record header's fields straight into their buffer.
    #[inline]
    pub fn put_u32s<const N: usize>(self, words: [u32; N], out: &mut [u8]) {
        let words = match self {
            ByteOrder::Little => words.map(u32::to_le),
            ByteOrder::Big => words.map(u32::to_be),
        };
        for (at, v) in out.chunks_exact_mut(4).zip(words) {
            at.copy_from_slice(&v.to_ne_bytes());
        }
    }

    /// The bytes of a `u64`.
    #[inline]
    pub fn put_u64(self, v: u64) -> [u8; 8] {
        match self {
            ByteOrder::Little => v.to_le_bytes(),
            ByteOrder::Big => v.to_be_bytes(),
        }
    }

    /// `little` or `big`.
    pub fn name(self) -> &'static str {
        match self {
            ByteOrder::Little => "little",
            ByteOrder::Big => "big",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_orders() {
        for o in [ByteOrder::Little, ByteOrder::Big] {
            assert_eq!(o.u16(&o.put_u16(0x1234)), 0x1234);
            assert_eq!(o.u32(&o.put_u32(0x1234_5678)), 0x1234_5678);
            assert_eq!(
                o.u64(&o.put_u64(0x1122_3344_5566_7788)),
                0x1122_3344_5566_7788
            );
        }
        assert_eq!(ByteOrder::Big.u32(&[0, 0, 1, 2]), 0x102);
    }
}
