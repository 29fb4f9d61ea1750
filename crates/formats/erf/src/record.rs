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

/// One record decoded from its bytes: the header fields and the packet it carries. The
/// file reader and the DAG capture (`tracekit-dag`) both decode records with
/// [`decode_record`], so there is one ERF record parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodedRecord {
    /// The record type (bit 7, the extension-header bit, removed).
    pub erf_type: ErfType,
    /// The flags byte.
    pub flags: u8,
    /// Bytes of the header and the extension headers.
    pub framing: usize,
    /// Where the packet starts in the record: after the type header for the link-layer
    /// types, 0 for those handed out whole as `LINKTYPE_ERF`.
    pub data_at: usize,
    /// Captured bytes of the packet: `min(rlen − framing − type header, wlen)`, or the
    /// whole record for `LINKTYPE_ERF`.
    pub caplen: usize,
    /// The packet's metadata: time stamp, wire length, link type, interface (flag bits
    /// 0-1), loss (`lctr`, 0 for colour types), kind (META records are
    /// [`tracekit_core::PacketKind::MetaRecord`]).
    pub meta: tracekit_core::Meta,
}

impl DecodedRecord {
    /// The record's packet bytes, from `record` (the bytes given to [`decode_record`]).
    #[inline(always)]
    pub fn packet<'a>(&self, record: &'a [u8]) -> &'a [u8] {
        &record[self.data_at..self.data_at + self.caplen]
    }
}

/// Decodes the common record, Ethernet without extension headers, the way
/// [`decode_record`] does; `None` for every other record. Readers try it first: its
/// result needs none of the general path's branches (type table, extension headers,
/// colour types), and [`decode_record`] itself starts with it.
#[inline(always)]
pub fn decode_ethernet(record: &[u8]) -> Option<DecodedRecord> {
    use tracekit_core::{Direction, LinkType, Meta, PacketKind, Timestamp};
    let b = record;
    let rlen = b.len();
    let at = HEADER_LEN + ErfPayload::Ethernet.type_header_len();
    if rlen < at || b[field::TYPE] != ErfType::ETH.0 {
        return None;
    }
    let flags = b[field::FLAGS];
    let wlen = u16::from_be_bytes([b[field::WLEN.start], b[field::WLEN.start + 1]]);
    Some(DecodedRecord {
        erf_type: ErfType::ETH,
        flags,
        framing: HEADER_LEN,
        data_at: at,
        caplen: (rlen - at).min(usize::from(wlen)),
        meta: Meta {
            ts: Timestamp::from_erf(u64::from_le_bytes(
                b[field::TS].try_into().unwrap_or_default(),
            )),
            wire_len: u32::from(wlen),
            link: LinkType::ETHERNET,
            interface: u32::from(flags & 0x03),
            direction: Direction::Unknown,
            loss: u32::from(u16::from_be_bytes([
                b[field::LCTR.start],
                b[field::LCTR.start + 1],
            ])),
            kind: PacketKind::Data,
        },
    })
}

/// Decodes one record; `record` is exactly its `rlen` bytes (at least [`HEADER_LEN`]).
/// The error says what is wrong with it (extension headers past its end, no room for
/// its type header); the caller adds where it is.
#[inline(always)]
pub fn decode_record(record: &[u8]) -> Result<DecodedRecord, tracekit_core::Error> {
    match decode_ethernet(record) {
        Some(rec) => Ok(rec),
        None => decode_other(record),
    }
}

/// The general path of [`decode_record`]: every record type, extension headers,
/// colour types (for a reader that tried [`decode_ethernet`] already).
#[inline(always)]
pub(crate) fn decode_other(record: &[u8]) -> Result<DecodedRecord, tracekit_core::Error> {
    use tracekit_core::{Direction, Error, LinkType, Meta, PacketKind, Timestamp};
    let b = record;
    let rlen = b.len();
    if rlen < HEADER_LEN {
        return Err(Error::malformed(format!(
            "bad ERF record length {rlen} (a record holds at least its 16-byte header)"
        )));
    }
    let ts = u64::from_le_bytes(b[field::TS].try_into().unwrap_or_default());
    let raw_type = b[field::TYPE];
    let flags = b[field::FLAGS];
    let lctr = u16::from_be_bytes([b[field::LCTR.start], b[field::LCTR.start + 1]]);
    let wlen = usize::from(u16::from_be_bytes([
        b[field::WLEN.start],
        b[field::WLEN.start + 1],
    ]));
    let t = ErfType::from_type_byte(raw_type);
    let payload = t.payload();
    // Extension headers: a chain of 8-byte headers, bit 7 of each first byte saying that
    // another follows.
    let mut framing = HEADER_LEN;
    let mut more = raw_type & 0x80 != 0;
    while more {
        match b.get(framing..framing + EXT_LEN) {
            Some(ext) => more = ext[0] & 0x80 != 0,
            None => {
                return Err(Error::malformed(format!(
                    "ERF extension headers run past the end of the {rlen}-byte record"
                )));
            }
        }
        framing += EXT_LEN;
    }
    let (data_at, caplen, link, wire_len) = match payload {
        // The record exactly as stored (padding included, so that it can be written back
        // bit for bit); the wire length is that of its header and extension headers plus
        // `wlen`.
        ErfPayload::Record => (0, rlen, LinkType::ERF, framing + wlen),
        _ => {
            let at = framing + payload.type_header_len();
            if rlen < at {
                return Err(Error::malformed(format!(
                    "ERF {t} record of {rlen} bytes has no room for its {}-byte pad",
                    payload.type_header_len()
                )));
            }
            let cap = (rlen - at).min(wlen);
            (at, cap, payload.link_type(&b[at..at + cap]), wlen)
        }
    };
    let loss = if lctr != 0 && !t.is_colour() {
        u32::from(lctr)
    } else {
        0
    };
    Ok(DecodedRecord {
        erf_type: t,
        flags,
        framing,
        data_at,
        caplen,
        meta: Meta {
            ts: Timestamp::from_erf(ts),
            wire_len: wire_len as u32,
            link,
            interface: u32::from(flags & 0x03),
            direction: Direction::Unknown,
            loss,
            kind: if t == ErfType::META {
                PacketKind::MetaRecord
            } else {
                PacketKind::Data
            },
        },
    })
}

/// Seconds of 1995-01-01. A record with an earlier time stamp (libtrace refuses them
/// all) is taken for ERF by detection only with the varying-length flag that every
/// writer of current ERF sets, and a record length that is a multiple of 4 (records are
/// padded to 4 or 8 bytes).
pub const DETECT_MIN_SECS: u32 = 788_918_400;

/// How many bytes detection needs to see two records of any length: the longest record
/// and the next record's header.
pub const DETECT_LEN: usize = 65_535 + HEADER_LEN;

/// Flag bit: varying-length record.
const FLAG_VARYING_LENGTH: u8 = 0x04;

/// Largest gap between the time stamps of neighbouring records that detection accepts.
pub const MAX_NEIGHBOUR_GAP_SECS: u32 = 30 * 86_400;

/// Whether `head` (the first bytes of some content) looks like ERF records. Stricter
/// than libtrace's rule: the content must not start like pcap or pcapng, and the record
/// headers present in `head` (up to 8) must each have a known, non-legacy type, a record
/// length that holds its header and extension headers, and a time stamp within 30 days
/// of the previous record's, on or after 1995 unless the record carries the marks of
/// [`DETECT_MIN_SECS`]. Once two records in a row passed, a later bad one is
/// damage for the reader to report, not a reason to doubt the format.
pub fn looks_like_erf(head: &[u8]) -> bool {
    let good = leading_good_records(head);
    good >= 2 || (good == 1 && record_is_everything(head))
}

/// Whether the first record is exactly all of `head` (a one-record file). A first
/// record longer than `head` proves nothing: random bytes have long "records" most of
/// the time. Give [`DETECT_LEN`] bytes (or the whole input) to see two records.
fn record_is_everything(head: &[u8]) -> bool {
    usize::from(u16::from_be_bytes([head[10], head[11]])) == head.len()
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
        let flags = h[field::FLAGS];
        if secs < DETECT_MIN_SECS && (flags & FLAG_VARYING_LENGTH == 0 || rlen % 4 != 0) {
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

#[cfg(test)]
mod decode_tests {
    use super::*;

    /// The Ethernet shortcut gives what the general path gives, over lengths (short,
    /// cut by `wlen`, padded), flags (interfaces, card errors) and loss counters; and
    /// it declines every other record.
    #[test]
    fn ethernet_shortcut_agrees_with_the_general_path() {
        let mut checked = 0;
        for rlen in [18usize, 19, 24, 64, 80, 96, 1518] {
            for wlen in [0u16, 1, 46, 60, 62, 1514, 9000] {
                for flags in [0u8, 0x01, 0x03, 0x04, 0x08, 0x3f] {
                    for lctr in [0u16, 1, 0xffff] {
                        let mut rec = vec![0u8; rlen];
                        rec[0..8].copy_from_slice(&0x5f00_0000_8000_0000u64.to_le_bytes());
                        rec[field::TYPE] = ErfType::ETH.0;
                        rec[field::FLAGS] = flags;
                        rec[field::RLEN].copy_from_slice(&(rlen as u16).to_be_bytes());
                        rec[field::LCTR].copy_from_slice(&lctr.to_be_bytes());
                        rec[field::WLEN].copy_from_slice(&wlen.to_be_bytes());
                        for (i, byte) in rec[HEADER_LEN..].iter_mut().enumerate() {
                            *byte = i as u8;
                        }
                        let fast = decode_ethernet(&rec).expect("an Ethernet record");
                        assert_eq!(Some(fast), decode_other(&rec).ok(), "{rlen} {wlen} {flags}");
                        assert_eq!(fast.packet(&rec).len(), (rlen - 18).min(usize::from(wlen)));
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 7 * 7 * 6 * 3);
        // Not the shortcut's: extension headers, colour Ethernet, other types, no room.
        let mut ext = [0u8; 32];
        ext[field::TYPE] = 0x80 | ErfType::ETH.0;
        ext[field::RLEN].copy_from_slice(&32u16.to_be_bytes());
        assert_eq!(decode_ethernet(&ext), None);
        assert_eq!(decode_record(&ext).unwrap().framing, HEADER_LEN + EXT_LEN);
        for t in [
            ErfType::COLOR_ETH,
            ErfType::IPV4,
            ErfType::META,
            ErfType::PAD,
        ] {
            let mut other = [0u8; 32];
            other[field::TYPE] = t.0;
            assert_eq!(decode_ethernet(&other), None, "{t}");
        }
        let mut short = [0u8; 17];
        short[field::TYPE] = ErfType::ETH.0;
        assert_eq!(decode_ethernet(&short), None);
        assert!(decode_record(&short).is_err());
    }
}

#[cfg(test)]
mod detection_tests {
    use super::*;

    /// Random bytes are not taken for ERF, even with the near-epoch rule (xorshift
    /// generator, fixed seed: the same 20,000 buffers every run).
    #[test]
    fn random_bytes_are_not_erf() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut buf = [0u8; 512];
        let mut accepted = 0;
        for _ in 0..20_000 {
            for b in buf.chunks_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                b.copy_from_slice(&x.to_le_bytes());
            }
            accepted += usize::from(looks_like_erf(&buf));
        }
        assert_eq!(accepted, 0);
    }

    /// A record 1 s after the epoch with the varying-length marks is ERF; the same
    /// record without them is not.
    #[test]
    fn near_epoch_needs_the_varying_length_marks() {
        let mut rec = [0u8; 80];
        rec[0..8].copy_from_slice(&(1u64 << 32).to_le_bytes());
        rec[field::TYPE] = ErfType::ETH.0;
        rec[field::FLAGS] = FLAG_VARYING_LENGTH;
        rec[10..12].copy_from_slice(&80u16.to_be_bytes());
        rec[14..16].copy_from_slice(&60u16.to_be_bytes());
        let two: Vec<u8> = [rec, rec].concat();
        assert!(looks_like_erf(&two));
        let mut unmarked = rec;
        unmarked[field::FLAGS] = 0;
        assert!(!looks_like_erf(&[unmarked, unmarked].concat()));
        let mut odd = rec;
        odd[10..12].copy_from_slice(&78u16.to_be_bytes());
        assert!(!looks_like_erf(&[odd, odd].concat()[..156]));
    }
}
