//! The ERF record header and record types.
//!
//! ```text
//! offset  field
//!      0  timestamp   u64 little-endian, 32.32 fixed point seconds since the epoch
//!      8  type        bits 0-6 record type; bit 7: an extension header follows
//!      9  flags       bits 0-1 interface; 2 varying length; 3 truncated; 4 rx error; 5 DS error
//!     10  rlen        u16 big-endian: record length, this header included
//!     12  lctr/color  u16 big-endian: loss counter, or colour for the colour types
//!     14  wlen        u16 big-endian: length on the wire
//!     16  extension headers, 8 bytes each (bit 7 of the first byte: another follows)
//!         type-specific header (Ethernet: 2 bytes, offset and pad), then the frame
//! ```

/// Size of the fixed record header.
pub const HEADER_LEN: usize = 16;
/// Size of one extension header.
pub const EXT_LEN: usize = 8;

/// Named byte ranges of the header.
pub(crate) mod field {
    use std::ops::Range;
    pub const TS: Range<usize> = 0..8;
    pub const TYPE: usize = 8;
    pub const FLAGS: usize = 9;
    pub const RLEN: Range<usize> = 10..12;
    pub const LCTR: Range<usize> = 12..14;
    pub const WLEN: Range<usize> = 14..16;
}

/// Record types and what they carry: one table, in `tracekit-core`, shared with the
/// decoder.
pub use tracekit_core::{ErfPayload, ErfType};

/// Seconds of 1995-01-01: time stamps before it are not taken for ERF by detection
/// (the rule libtrace uses).
pub const DETECT_MIN_SECS: u32 = 788_918_400;

/// Largest gap between the time stamps of neighbouring records that detection accepts.
pub const MAX_NEIGHBOUR_GAP_SECS: u32 = 30 * 86_400;

/// Whether `head` (the first bytes of some content) looks like ERF records. Stricter
/// than libtrace's rule: the content must not start like pcap or pcapng, and the record
/// headers present in `head` (up to 8) must each have a known, non-legacy type, a record
/// length that holds its header and extension headers, and a time stamp on or after 1995
/// within 30 days of the previous record's. Once two records in a row passed, a later bad one is
/// damage for the reader to report, not a reason to doubt the format.
pub fn looks_like_erf(head: &[u8]) -> bool {
    let good = leading_good_records(head);
    good >= 2 || (good == 1 && record_span_ends_input(head))
}

/// Whether the first record ends exactly at or beyond the end of `head` (a one-record
/// file, or a first record longer than the sniffed bytes).
fn record_span_ends_input(head: &[u8]) -> bool {
    let rlen = usize::from(u16::from_be_bytes([head[10], head[11]]));
    rlen >= head.len() || head.len() - rlen < HEADER_LEN
}

/// How many records from the start pass the checks, stopping at the first that fails.
fn leading_good_records(head: &[u8]) -> usize {
    if head.len() < HEADER_LEN {
        return 0;
    }
    let magic = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
    if matches!(
        magic,
        0xa1b2_c3d4 | 0xd4c3_b2a1 | 0xa1b2_3c4d | 0x4d3c_b2a1 | 0x0a0d_0d0a
    ) {
        return 0;
    }
    let mut off = 0usize;
    let mut previous_secs = None;
    let mut checked = 0;
    while off + HEADER_LEN <= head.len() && checked < 8 {
        let h = &head[off..];
        let raw_type = h[field::TYPE];
        let t = ErfType::from_type_byte(raw_type);
        if t == ErfType::LEGACY || !t.is_known() {
            return checked;
        }
        let rlen = usize::from(u16::from_be_bytes([h[10], h[11]]));
        let ts = u64::from_le_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]);
        let secs = (ts >> 32) as u32;
        if secs < DETECT_MIN_SECS {
            return checked;
        }
        // Neighbouring records of a real trace are close in time.
        if previous_secs.is_some_and(|p: u32| secs.abs_diff(p) > MAX_NEIGHBOUR_GAP_SECS) {
            return checked;
        }
        previous_secs = Some(secs);
        // Extension headers must fit in the record.
        let mut framing = HEADER_LEN;
        let mut more = raw_type & 0x80 != 0;
        while more {
            if framing + EXT_LEN > rlen {
                return checked;
            }
            match h.get(framing) {
                Some(b) => more = b & 0x80 != 0,
                None => break,
            }
            framing += EXT_LEN;
        }
        if rlen < framing + t.payload().type_header_len() {
            return checked;
        }
        checked += 1;
        off += rlen;
    }
    checked
}
