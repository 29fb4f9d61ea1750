//! Bounds-checked big- and little-endian reads: every read of packet bytes goes through
//! these or through a view whose length was checked once.

use core::ops::Range;

#[inline(always)]
pub(crate) fn u8_at(b: &[u8], i: usize) -> Option<u8> {
    b.get(i).copied()
}

#[inline(always)]
pub(crate) fn be16(b: &[u8], i: usize) -> Option<u16> {
    let s = b.get(i..i.checked_add(2)?)?;
    Some(u16::from_be_bytes([s[0], s[1]]))
}

#[inline(always)]
pub(crate) fn be32(b: &[u8], i: usize) -> Option<u32> {
    let s = b.get(i..i.checked_add(4)?)?;
    Some(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

#[inline(always)]
pub(crate) fn le16(b: &[u8], i: usize) -> Option<u16> {
    let s = b.get(i..i.checked_add(2)?)?;
    Some(u16::from_le_bytes([s[0], s[1]]))
}

#[inline(always)]
pub(crate) fn le32(b: &[u8], i: usize) -> Option<u32> {
    let s = b.get(i..i.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

#[inline(always)]
pub(crate) fn le64(b: &[u8], i: usize) -> Option<u64> {
    let s = b.get(i..i.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_le_bytes(a))
}

// Reads of a named field inside a view whose length was checked when it was made (so
// the field is always there; the slice index cannot fail).

#[inline(always)]
pub(crate) fn field_be16(b: &[u8], f: Range<usize>) -> u16 {
    let s = &b[f];
    u16::from_be_bytes([s[0], s[1]])
}

#[inline(always)]
pub(crate) fn field_be32(b: &[u8], f: Range<usize>) -> u32 {
    let s = &b[f];
    u32::from_be_bytes([s[0], s[1], s[2], s[3]])
}
