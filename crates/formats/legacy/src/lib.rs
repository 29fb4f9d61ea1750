//! Legacy trace files for tracekit, read only: the fixed-size records that DAG cards
//! wrote before ERF (ATM, Ethernet, PoS, NZIX), NLANR's TSH and FR+ header traces, and
//! the ATM cell header captures of Auckland VII. None has a file header; each record
//! holds one packet. The kind is named by the caller with libtrace's URI prefixes
//! (`legacyatm:`, `legacyeth:`, `legacypos:`, `legacynzix:`, `tsh:`, `fr+:`, `atmhdr:`);
//! only TSH is recognised by content ([`looks_like_tsh`]).
//!
//! | kind | record | packet | link type | wire length | time stamp |
//! |---|---|---|---|---|---|
//! | [`LegacyKind::Atm`] | 64 bytes | the cell's 48 payload bytes | `ATM_RFC1483` | 48 | ERF 32.32, little-endian |
//! | [`LegacyKind::Ethernet`] | 64 | up to 54 bytes of the frame | `ETHERNET` | recorded (16 bits LE) | ERF 32.32 |
//! | [`LegacyKind::Pos`] | 64 | up to 48 bytes of the frame | `PPP_HDLC`, `C_HDLC` or `PPP` by its first bytes | recorded (32 bits BE) | ERF 32.32 |
//! | [`LegacyKind::Nzix`] | 68 | up to 54 bytes of the frame | `ETHERNET` | recorded (32 bits LE) | 30-bit µs counter + start from the file name |
//! | [`LegacyKind::Tsh`], [`LegacyKind::FrPlus`] | 44 | the IPv4 header and 16 bytes of transport header | `RAW` (IPv4) | the IP total length | seconds + µs, big-endian |
//! | [`LegacyKind::AtmHeader`] | 12 | an ERF ATM record of the cell header | `ERF` | 16 + 53 | ERF 32.32 |
//!
//! In detail, with where libtrace 3 differs:
//!
//! - **ATM** (`legacyatm:`): time stamp, 4 bytes (a CRC, unused), the 4-byte cell header
//!   (no HEC), and the cell's 48 payload bytes. A packet is the 48 payload bytes as
//!   `LINKTYPE_ATM_RFC1483` (LLC/SNAP-encapsulated traffic, as these traces carry).
//! - **Ethernet** (`legacyeth:`): time stamp, the frame's wire length (16 bits,
//!   little-endian) and its first 54 bytes, cut to the wire length.
//! - **PoS** (`legacypos:`): time stamp, the captured and wire lengths (32 bits each,
//!   big-endian) and the first 48 bytes of the frame, cut to the wire length; the link
//!   type is PPP in HDLC framing when the frame starts `ff 03`, Cisco HDLC when it starts
//!   `0f 00` or `8f 00`, and PPP otherwise (as libtrace decides).
//! - **NZIX** (`legacynzix:`, the NZIX-I traces): a 32-bit time stamp field, a CRC and the
//!   wire length (32 bits each, little-endian), then 56 bytes: the Ethernet frame's first
//!   26 bytes, 2 bytes of padding the capture put inside the IP header, and the frame's
//!   next 28 bytes. A packet is the 54 frame bytes joined around the padding (as libtrace
//!   moves them), cut to the wire length. Records whose wire length is 0 carry a GPS time
//!   stamp, not a frame, and are skipped (as libtrace does). The time stamp field's upper
//!   30 bits are a microsecond counter that starts with the trace and wraps every
//!   2^30 µs (about 1073.7 s); the trace's start is only in its file name
//!   (`YYYYMMDD-HHMMSS`, New Zealand local time, e.g. `20000101-120000.gz`). A name
//!   without one gives time stamps counted from the Unix epoch, with a note.
//!   The counter never runs backwards, so tracekit reads a smaller value as a wrap.
//!   libtrace 3 instead counts a wrap whenever the counter moves by more than 2^29 µs
//!   either way: a gap of more than about 537 s between two records, or a first record
//!   whose counter is past 2^29, gains an extra 1073.7 s there, and a step back of less
//!   than 2^29 µs goes back in time. libtrace's pcap output also gives each frame a
//!   wire length 4 bytes shorter than recorded (it takes an FCS off) and cuts the
//!   captured bytes to that.
//! - **TSH** (`tsh:`) and **FR+** (`fr+:`): seconds (32 bits), an interface number
//!   (8 bits) and microseconds (24 bits), all big-endian, then the packet's IPv4 header
//!   (20 bytes; options are not kept) and the first 16 bytes after it. A packet is those
//!   36 bytes, cut to the IP total length, which is its wire length, as `LINKTYPE_RAW`;
//!   the interface number becomes [`Meta::interface`](tracekit_core::Meta::interface).
//!   FR+ has the same layout (libtrace reads both with one decoder). libtrace 3 gives
//!   the same packets but drops the interface number from its pcap output (and its
//!   direction for these packets is that number, whatever it means).
//! - **ATM cell headers** (`atmhdr:`, Auckland VII): the time stamp's fraction and
//!   seconds (32 bits each, little-endian: the bytes of an ERF time stamp), then the
//!   cell's 4-byte header. No pcap link type holds a bare cell header, so a packet is the
//!   ERF ATM record libtrace writes for it: a 16-byte ERF header (the time stamp, type 3,
//!   interface 0, rlen 20, no loss, wlen 53) and the cell header, as `LINKTYPE_ERF`
//!   (wire length 16 + 53, as tracekit's ERF reader counts such records). libtrace's
//!   own pcap output of these records holds no bytes at all.
//!
//! A file whose length is not a whole number of records ends with an error naming the
//! cut record, after every whole one. Records that cannot be of the kind (a TSH
//! microsecond field of a second or more, a TSH record without an IPv4 header, an NZIX
//! wire length past 65535) end the trace with an error naming the record and its offset.
//! The legacy DAG kinds and ATM cell headers have no field that could tell garbage from
//! a record.
//!
//! Detection: TSH records put an IPv4 header and a microsecond count at fixed places, so
//! [`looks_like_tsh`] checks the first eight records. The others are named, never
//! guessed: the DAG kinds' records and ATM cell header records hold a time stamp and
//! bytes of any value, and a test for plausible time stamps every 12 or 64 bytes would
//! also accept other files whose records start with one (ERF, the other legacy kinds);
//! NZIX records could be recognised, but the files are too rare to be worth the risk of
//! taking another file for one.
//!
//! ```
//! use tracekit_legacy::{LegacyKind, LegacyReader};
//!
//! // One TSH record: 1.25 s after the epoch on interface 3, a 1500-byte IPv4 packet.
//! let mut rec = vec![0u8; LegacyKind::Tsh.record_len()];
//! rec[..4].copy_from_slice(&1u32.to_be_bytes());
//! rec[4..8].copy_from_slice(&((3 << 24) | 250_000u32).to_be_bytes());
//! rec[8] = 0x45;
//! rec[10..12].copy_from_slice(&1500u16.to_be_bytes());
//! assert!(tracekit_legacy::looks_like_tsh(&rec));
//! let mut r = LegacyReader::from_reader(std::io::Cursor::new(rec), LegacyKind::Tsh)?;
//! let p = r.next_packet()?.unwrap();
//! assert_eq!((p.caplen(), p.wire_len(), p.meta().interface), (36, 1500, 3));
//! assert_eq!(p.ts().subsec_micros(), 250_000);
//! assert!(r.next_packet()?.is_none());
//! # Ok::<(), tracekit_core::Error>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod format;
mod nzix;
mod reader;

pub use format::LegacyFormat;
pub use reader::LegacyReader;

/// The size of a legacy DAG record (ATM, Ethernet, PoS); the other kinds:
/// [`LegacyKind::record_len`].
pub const RECORD_LEN: usize = 64;

/// Which kind of legacy file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum LegacyKind {
    /// Legacy DAG ATM cells (libtrace's `legacyatm:`).
    #[default]
    Atm,
    /// Legacy DAG Ethernet frames (`legacyeth:`).
    Ethernet,
    /// Legacy DAG Packet over SONET frames (`legacypos:`).
    Pos,
    /// Legacy DAG NZIX Ethernet frames (`legacynzix:`).
    Nzix,
    /// NLANR TSH: IPv4 and transport headers (`tsh:`).
    Tsh,
    /// NLANR FR+: the TSH layout (`fr+:`).
    FrPlus,
    /// ATM cell headers (`atmhdr:`).
    AtmHeader,
}

impl LegacyKind {
    /// Every kind, in the order of the fuzz target's selector byte.
    pub const ALL: [LegacyKind; 7] = [
        LegacyKind::Atm,
        LegacyKind::Ethernet,
        LegacyKind::Pos,
        LegacyKind::Nzix,
        LegacyKind::Tsh,
        LegacyKind::FrPlus,
        LegacyKind::AtmHeader,
    ];

    /// libtrace's name for the format (its URI prefix).
    pub fn name(self) -> &'static str {
        match self {
            LegacyKind::Atm => "legacyatm",
            LegacyKind::Ethernet => "legacyeth",
            LegacyKind::Pos => "legacypos",
            LegacyKind::Nzix => "legacynzix",
            LegacyKind::Tsh => "tsh",
            LegacyKind::FrPlus => "fr+",
            LegacyKind::AtmHeader => "atmhdr",
        }
    }

    /// The kind libtrace names `name` (case-insensitive).
    pub fn from_name(name: &str) -> Option<LegacyKind> {
        LegacyKind::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(name))
    }

    /// The size of each of its records.
    pub fn record_len(self) -> usize {
        match self {
            LegacyKind::Atm | LegacyKind::Ethernet | LegacyKind::Pos => RECORD_LEN,
            LegacyKind::Nzix => 68,
            LegacyKind::Tsh | LegacyKind::FrPlus => 44,
            LegacyKind::AtmHeader => 12,
        }
    }

    /// What a record is called in errors.
    fn record_name(self) -> &'static str {
        match self {
            LegacyKind::Atm | LegacyKind::Ethernet | LegacyKind::Pos => {
                "a 64-byte legacy DAG record"
            }
            LegacyKind::Nzix => "a 68-byte NZIX record",
            LegacyKind::Tsh | LegacyKind::FrPlus => "a 44-byte TSH record",
            LegacyKind::AtmHeader => "a 12-byte ATM cell header record",
        }
    }

    /// Where a record's packet bytes start, and how many a packet has at most.
    fn payload(self) -> (usize, usize) {
        match self {
            LegacyKind::Atm => (16, 48),
            LegacyKind::Ethernet => (10, 54),
            LegacyKind::Pos => (16, 48),
            LegacyKind::Nzix => (12, 54),
            LegacyKind::Tsh | LegacyKind::FrPlus => (8, 36),
            LegacyKind::AtmHeader => (0, 20),
        }
    }
}

/// Whether `head`, the first bytes of a file, look like TSH records: every whole record
/// among the first eight has a microsecond field below 1,000,000 and an IPv4 header
/// (version 4, header length at least 20 bytes, total length at least the header's) at
/// its place. A lone record must be all of `head`.
pub fn looks_like_tsh(head: &[u8]) -> bool {
    const LEN: usize = 44;
    let whole = (head.len() / LEN).min(8);
    if whole == 0 || (whole == 1 && head.len() != LEN) {
        return false;
    }
    head.chunks_exact(LEN).take(whole).all(|r| {
        let micros = u32::from_be_bytes([0, r[5], r[6], r[7]]);
        let (version, ihl) = (r[8] >> 4, usize::from(r[8] & 0x0f));
        let total = usize::from(u16::from_be_bytes([r[10], r[11]]));
        micros < 1_000_000 && version == 4 && ihl >= 5 && total >= ihl * 4
    })
}
