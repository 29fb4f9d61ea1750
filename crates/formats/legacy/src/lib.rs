//! Legacy DAG trace files for tracekit: the fixed-size records DAG cards wrote before
//! ERF, read only. Every record is 64 bytes and starts with an ERF-style 64-bit
//! little-endian 32.32 time stamp; the file has no header and no magic number, so the
//! kind is named by the caller (`legacyatm:`, `legacyeth:`, `legacypos:` as libtrace
//! names them), never guessed.
//!
//! - ATM ([`LegacyKind::Atm`]): time stamp, 4 bytes (a CRC, unused), the 4-byte cell
//!   header (no HEC), and the cell's 48 payload bytes. A packet is the 48 payload bytes
//!   as `LINKTYPE_ATM_RFC1483` (LLC/SNAP-encapsulated traffic, as these traces carry);
//!   its wire length is 48.
//! - Ethernet ([`LegacyKind::Ethernet`]): time stamp, the frame's wire length (16 bits,
//!   little-endian; the frame check sequence included) and its first 54 bytes. A packet
//!   is those bytes, cut to the wire length, as `LINKTYPE_ETHERNET`, with the wire length
//!   as recorded.
//! - PoS ([`LegacyKind::Pos`]): time stamp, the captured and wire lengths (32 bits each,
//!   big-endian) and the first 48 bytes of the frame. A packet is those bytes, cut to the
//!   wire length; the link type is PPP in HDLC framing when the frame starts `ff 03`,
//!   Cisco HDLC when it starts `0f 00` or `8f 00`, and PPP otherwise (as libtrace
//!   decides).
//!
//! A file whose length is not a multiple of 64 ends with an error naming the cut
//! record, after every whole one.
//!
//! ```
//! use tracekit_legacy::{LegacyKind, LegacyReader, RECORD_LEN};
//!
//! // One legacy Ethernet record: 1.5 s after the epoch, a 60-byte frame.
//! let mut rec = vec![0u8; RECORD_LEN];
//! rec[..8].copy_from_slice(&((1u64 << 32) | (1u64 << 31)).to_le_bytes());
//! rec[8..10].copy_from_slice(&60u16.to_le_bytes());
//! rec[10..].fill(0xab);
//! let mut r = LegacyReader::from_input_with(
//!     tracekit_io::Input::from_reader(std::io::Cursor::new(rec)),
//!     LegacyKind::Ethernet,
//! )?;
//! let p = r.next_packet()?.unwrap();
//! assert_eq!((p.caplen(), p.wire_len(), p.ts().subsec_nanos()), (54, 60, 500_000_000));
//! # Ok::<(), tracekit_core::Error>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

use tracekit_core::{
    Error, LinkType, Meta, Record, RecordFormat, Timestamp, TraceInfo, TsResolution,
};
use tracekit_io::{Input, Reader};

/// The size of every legacy record.
pub const RECORD_LEN: usize = 64;

/// Which kind of legacy DAG file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum LegacyKind {
    /// ATM cells (libtrace's `legacyatm:`).
    #[default]
    Atm,
    /// Ethernet frames (`legacyeth:`).
    Ethernet,
    /// Packet over SONET frames (`legacypos:`).
    Pos,
}

impl LegacyKind {
    /// libtrace's name for the format.
    pub fn name(self) -> &'static str {
        match self {
            LegacyKind::Atm => "legacyatm",
            LegacyKind::Ethernet => "legacyeth",
            LegacyKind::Pos => "legacypos",
        }
    }

    /// Where a record's packet bytes start, and how many there are at most.
    fn payload(self) -> (usize, usize) {
        match self {
            LegacyKind::Atm => (16, 48),
            LegacyKind::Ethernet => (10, 54),
            LegacyKind::Pos => (16, 48),
        }
    }
}

/// Reads a legacy DAG file, lending each record's packet from the input buffer.
pub type LegacyReader = Reader<LegacyFormat>;

/// The legacy formats' state. A [`LegacyReader`] owns it and lends the records.
pub struct LegacyFormat {
    input: Input,
    kind: LegacyKind,
    packets: u64,
    done: bool,
}

impl RecordFormat for LegacyFormat {
    type Input = Input;
    type Options = LegacyKind;

    /// Legacy files have no header: reading starts at the first record.
    fn start(input: Input, kind: LegacyKind) -> Result<LegacyFormat, Error> {
        Ok(LegacyFormat {
            input,
            kind,
            packets: 0,
            done: false,
        })
    }

    fn next_record(&mut self, record: &mut Record) -> Result<bool, Error> {
        if self.done {
            return Ok(false);
        }
        let have = self.input.fill(RECORD_LEN)?;
        if have < RECORD_LEN {
            self.done = true;
            if have == 0 {
                return Ok(false);
            }
            return Err(self
                .input
                .cut_error(self.kind.name(), RECORD_LEN as u64)
                .with_packet(self.packets + 1));
        }
        let b = &self.input.available()[..RECORD_LEN];
        let ts = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
        let (at, room) = self.kind.payload();
        let (wire, link) = match self.kind {
            LegacyKind::Atm => (48, LinkType::ATM_RFC1483),
            LegacyKind::Ethernet => (
                u32::from(u16::from_le_bytes([b[8], b[9]])),
                LinkType::ETHERNET,
            ),
            LegacyKind::Pos => {
                let wire = u32::from_be_bytes([b[12], b[13], b[14], b[15]]);
                let link = match (b[at], b[at + 1]) {
                    (0xff, 0x03) => LinkType::PPP_HDLC,
                    (0x0f | 0x8f, 0x00) => LinkType::C_HDLC,
                    _ => LinkType::PPP,
                };
                (wire, link)
            }
        };
        let caplen = room.min(wire as usize);
        let start = self.input.window_pos();
        self.input.consume(RECORD_LEN);
        self.packets += 1;
        *record = Record::new(
            start + at,
            caplen,
            Meta::new(Timestamp::from_erf(ts), wire, link),
        );
        Ok(true)
    }

    fn input(&self) -> &Input {
        &self.input
    }

    fn input_mut(&mut self) -> &mut Input {
        &mut self.input
    }
}

impl LegacyFormat {
    /// The kind of legacy file.
    pub fn kind(&self) -> LegacyKind {
        self.kind
    }
}

impl TraceInfo for LegacyFormat {
    fn description(&self) -> String {
        format!("legacy DAG ({}, 64-byte records)", self.kind.name())
    }

    fn declared_link_type(&self) -> Option<LinkType> {
        match self.kind {
            LegacyKind::Atm => Some(LinkType::ATM_RFC1483),
            LegacyKind::Ethernet => Some(LinkType::ETHERNET),
            // PPP, PPP in HDLC framing or Cisco HDLC, record by record.
            LegacyKind::Pos => None,
        }
    }

    fn snaplen(&self) -> Option<u32> {
        Some(self.kind.payload().1 as u32)
    }

    fn ts_resolution(&self) -> TsResolution {
        TsResolution::ERF
    }
}
