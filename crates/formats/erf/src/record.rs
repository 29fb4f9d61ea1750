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

use tracekit_core::LinkType;

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

/// Record types (`ERF_TYPE_*`).
pub mod types {
    /// Legacy (pre-ERF) record.
    pub const LEGACY: u8 = 0;
    /// PoS with HDLC framing.
    pub const HDLC_POS: u8 = 1;
    /// Ethernet.
    pub const ETH: u8 = 2;
    /// ATM cell.
    pub const ATM: u8 = 3;
    /// Reassembled AAL5 frame.
    pub const AAL5: u8 = 4;
    /// Multichannel HDLC.
    pub const MC_HDLC: u8 = 5;
    /// Multichannel raw.
    pub const MC_RAW: u8 = 6;
    /// Multichannel ATM.
    pub const MC_ATM: u8 = 7;
    /// Multichannel raw link.
    pub const MC_RAW_CHANNEL: u8 = 8;
    /// Multichannel AAL5.
    pub const MC_AAL5: u8 = 9;
    /// Colour HDLC PoS.
    pub const COLOR_HDLC_POS: u8 = 10;
    /// Colour Ethernet.
    pub const COLOR_ETH: u8 = 11;
    /// Multichannel AAL2.
    pub const MC_AAL2: u8 = 12;
    /// IP counter.
    pub const IP_COUNTER: u8 = 13;
    /// TCP flow counter.
    pub const TCP_FLOW_COUNTER: u8 = 14;
    /// DSM colour HDLC PoS.
    pub const DSM_COLOR_HDLC_POS: u8 = 15;
    /// DSM colour Ethernet.
    pub const DSM_COLOR_ETH: u8 = 16;
    /// Colour multichannel HDLC PoS.
    pub const COLOR_MC_HDLC_POS: u8 = 17;
    /// AAL2.
    pub const AAL2: u8 = 18;
    /// Colour hash PoS.
    pub const COLOR_HASH_POS: u8 = 19;
    /// Colour hash Ethernet.
    pub const COLOR_HASH_ETH: u8 = 20;
    /// InfiniBand.
    pub const INFINIBAND: u8 = 21;
    /// IPv4.
    pub const IPV4: u8 = 22;
    /// IPv6.
    pub const IPV6: u8 = 23;
    /// Raw link.
    pub const RAW_LINK: u8 = 24;
    /// InfiniBand link.
    pub const INFINIBAND_LINK: u8 = 25;
    /// Provenance metadata (TLVs).
    pub const META: u8 = 27;
    /// Omni-Path SnC.
    pub const OPA_SNC: u8 = 28;
    /// Omni-Path 9B.
    pub const OPA_9B: u8 = 29;
    /// Padding record.
    pub const PAD: u8 = 48;
}

/// Whether `t` (bit 7 cleared) is a record type this crate knows.
pub fn is_known_type(t: u8) -> bool {
    matches!(t, 1..=25 | 27..=29 | types::PAD)
}

/// Whether the loss-counter field of type `t` holds a colour instead.
pub fn is_colour_type(t: u8) -> bool {
    use types::*;
    matches!(
        t,
        COLOR_HDLC_POS
            | COLOR_ETH
            | DSM_COLOR_HDLC_POS
            | DSM_COLOR_ETH
            | COLOR_MC_HDLC_POS
            | COLOR_HASH_POS
            | COLOR_HASH_ETH
    )
}

/// How the payload of a record type is handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload {
    /// An Ethernet frame after a 2-byte offset/pad field.
    Ethernet,
    /// An HDLC frame (PPP in HDLC framing or Cisco HDLC, told apart by its first bytes).
    Hdlc,
    /// A raw IPv4 packet.
    Ipv4,
    /// A raw IPv6 packet.
    Ipv6,
    /// Anything else: the whole record, header included, as `LINKTYPE_ERF`.
    Record,
}

/// The payload kind of a record type.
pub fn payload_of(t: u8) -> Payload {
    use types::*;
    match t {
        ETH | COLOR_ETH | DSM_COLOR_ETH | COLOR_HASH_ETH => Payload::Ethernet,
        HDLC_POS | COLOR_HDLC_POS | DSM_COLOR_HDLC_POS | COLOR_HASH_POS => Payload::Hdlc,
        IPV4 => Payload::Ipv4,
        IPV6 => Payload::Ipv6,
        _ => Payload::Record,
    }
}

/// The link type of an HDLC payload: PPP in HDLC framing starts with address 0xFF and
/// control 0x03; anything else is Cisco HDLC.
pub fn hdlc_link_type(frame: &[u8]) -> LinkType {
    if frame.starts_with(&[0xff, 0x03]) {
        LinkType::PPP_HDLC
    } else {
        LinkType::C_HDLC
    }
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
        let t = raw_type & 0x7f;
        if t == types::LEGACY || !is_known_type(t) {
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
        if rlen < framing || (payload_of(t) == Payload::Ethernet && rlen < framing + 2) {
            return checked;
        }
        checked += 1;
        off += rlen;
    }
    checked
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
        rec[field::TYPE] = types::ETH;
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
