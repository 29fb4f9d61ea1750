//! The record layouts: one fixed-size record per packet, parsed in place.

use tracekit_core::{
    Error, LinkType, Meta, Record, RecordFormat, Timestamp, TraceInfo, TsResolution,
};
use tracekit_io::Input;

use crate::LegacyKind;
use crate::nzix::{NzixClock, NzixStart};

/// Named byte ranges of each layout (offsets from the start of a record).
mod field {
    /// Legacy DAG ATM, Ethernet and PoS: the ERF-style 32.32 time stamp, little-endian.
    pub const DAG_TS: usize = 0;
    /// Legacy Ethernet: the wire length, 16 bits little-endian.
    pub const ETH_WLEN: usize = 8;
    /// Legacy PoS: the wire length, 32 bits big-endian.
    pub const POS_WLEN: usize = 12;

    /// NZIX: the 32-bit counter field (little-endian), then a CRC, then the wire length
    /// (32 bits little-endian).
    pub const NZIX_TS: usize = 0;
    /// NZIX: the wire length.
    pub const NZIX_LEN: usize = 8;
    /// NZIX: where the frame's bytes start.
    pub const NZIX_FRAME: usize = 12;

    /// TSH: seconds (32 bits big-endian).
    pub const TSH_SECS: usize = 0;
    /// TSH: the interface number (8 bits) and microseconds (24 bits), big-endian.
    pub const TSH_IFACE_USECS: usize = 4;
    /// TSH: the IPv4 header (20 bytes), then 16 bytes of the transport header.
    pub const TSH_IP: usize = 8;

    /// ATM cell header capture: the time stamp's fraction and seconds, each 32 bits
    /// little-endian (the bytes of an ERF time stamp).
    pub const ATMHDR_TS: usize = 0;
    /// ATM cell header capture: the cell's 4-byte header (no HEC).
    pub const ATMHDR_CELL: usize = 8;
}

/// NZIX: the frame's first part (Ethernet header and the first 12 bytes of the IP
/// header), then 2 bytes of padding, then its second part.
pub(crate) const NZIX_HEAD: usize = 26;
/// NZIX: the padding the capture put inside the IP header.
pub(crate) const NZIX_PAD: usize = 2;
/// NZIX: bytes of the frame a record holds.
pub(crate) const NZIX_CAPTURED: usize = 54;
/// The ERF header put before an ATM cell header: time stamp, type, flags, rlen, lctr,
/// wlen.
pub(crate) const ERF_HEADER: usize = 16;
/// ERF's record type for an ATM cell.
const ERF_TYPE_ATM: u8 = 3;
/// An ATM cell's length on the wire (5-byte header, 48-byte payload).
const ATM_CELL_WIRE: u16 = 53;

/// The legacy formats' state. A [`LegacyReader`](crate::LegacyReader) owns it and lends
/// the records.
pub struct LegacyFormat {
    input: Input,
    kind: LegacyKind,
    /// Whole records read (NZIX time-stamp-only records included).
    records: u64,
    /// Packets handed out.
    packets: u64,
    done: bool,
    nzix_clock: NzixClock,
    nzix_start: NzixStart,
    /// NZIX records without a frame (GPS time stamp records), skipped.
    skipped: u64,
}

impl RecordFormat for LegacyFormat {
    type Input = Input;
    type Options = LegacyKind;

    /// The files have no header: reading starts at the first record. An NZIX file's
    /// start time is read from its name.
    fn start(input: Input, kind: LegacyKind) -> Result<LegacyFormat, Error> {
        let nzix_start = match (kind, input.path()) {
            (LegacyKind::Nzix, Some(path)) => {
                let name = path.file_name().map(|n| n.to_string_lossy());
                NzixStart::from_file_name(name.as_deref().unwrap_or(""))
                    .map_err(|e| e.with_shared_path(Some(path)))?
            }
            _ => NzixStart::Unknown,
        };
        Ok(LegacyFormat {
            input,
            kind,
            records: 0,
            packets: 0,
            done: false,
            nzix_clock: NzixClock::default(),
            nzix_start,
            skipped: 0,
        })
    }

    fn next_record(&mut self, record: &mut Record) -> Result<bool, Error> {
        let len = self.kind.record_len();
        loop {
            if self.done {
                return Ok(false);
            }
            let have = self.input.fill(len)?;
            if have < len {
                self.done = true;
                if have == 0 {
                    return Ok(false);
                }
                return Err(self
                    .input
                    .cut_error(self.kind.record_name(), len as u64)
                    .with_packet(self.packets + 1));
            }
            let start = self.input.window_pos();
            let b = &self.input.available()[..len];
            let parsed = match self.kind {
                LegacyKind::Atm | LegacyKind::Ethernet | LegacyKind::Pos => {
                    Some(dag_record(self.kind, b))
                }
                LegacyKind::Nzix => nzix_record(&mut self.nzix_clock, self.nzix_start, b),
                LegacyKind::Tsh | LegacyKind::FrPlus => Some(tsh_record(b)),
                LegacyKind::AtmHeader => Some(Ok(atmhdr_record(b))),
            };
            self.records += 1;
            let Some(parsed) = parsed else {
                self.skipped += 1;
                self.input.consume(len);
                continue;
            };
            let (at, caplen, meta) = match parsed {
                Ok(p) => p,
                Err(reason) => {
                    self.done = true;
                    return Err(Error::malformed(format!(
                        "{} record {}: {reason}",
                        self.kind.name(),
                        self.records
                    ))
                    .with_shared_path(self.input.path())
                    .with_offset(self.input.position())
                    .with_packet(self.packets + 1));
                }
            };
            self.input.consume(len);
            self.packets += 1;
            *record = Record::new(start + at, caplen, meta);
            return Ok(true);
        }
    }

    fn input(&self) -> &Input {
        &self.input
    }

    fn input_mut(&mut self) -> &mut Input {
        &mut self.input
    }
}

/// Where a record's packet bytes start, how many of them there are, and the metadata;
/// or why the record cannot be read.
type Parsed = Result<(usize, usize, Meta), String>;

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn le64(b: &[u8], at: usize) -> u64 {
    u64::from(le32(b, at)) | (u64::from(le32(b, at + 4)) << 32)
}

/// Legacy DAG ATM, Ethernet and PoS records (64 bytes).
fn dag_record(kind: LegacyKind, b: &[u8]) -> Parsed {
    let ts = Timestamp::from_erf(le64(b, field::DAG_TS));
    let (at, room) = kind.payload();
    let (wire, link) = match kind {
        LegacyKind::Ethernet => (
            u32::from(u16::from_le_bytes([
                b[field::ETH_WLEN],
                b[field::ETH_WLEN + 1],
            ])),
            LinkType::ETHERNET,
        ),
        LegacyKind::Pos => {
            let link = match (b[at], b[at + 1]) {
                (0xff, 0x03) => LinkType::PPP_HDLC,
                (0x0f | 0x8f, 0x00) => LinkType::C_HDLC,
                _ => LinkType::PPP,
            };
            (be32(b, field::POS_WLEN), link)
        }
        _ => (48, LinkType::ATM_RFC1483),
    };
    Ok((at, room.min(wire as usize), Meta::new(ts, wire, link)))
}

/// TSH and FR+ records (44 bytes): time stamp, interface, IPv4 header, 16 bytes of the
/// transport header.
fn tsh_record(b: &[u8]) -> Parsed {
    let secs = be32(b, field::TSH_SECS);
    let word = be32(b, field::TSH_IFACE_USECS);
    let micros = word & 0x00ff_ffff;
    if micros >= 1_000_000 {
        return Err(format!(
            "microseconds field {micros} is not below 1000000 (not a TSH record?)"
        ));
    }
    let ip = &b[field::TSH_IP..];
    if ip[0] >> 4 != 4 {
        return Err(format!(
            "no IPv4 header where TSH keeps one (first byte {:#04x}, IP version {})",
            ip[0],
            ip[0] >> 4
        ));
    }
    let wire = u32::from(u16::from_be_bytes([ip[2], ip[3]]));
    let mut meta = Meta::new(Timestamp::from_micros(secs, micros), wire, LinkType::RAW);
    meta.interface = word >> 24;
    let room = LegacyKind::Tsh.payload().1;
    Ok((field::TSH_IP, room.min(wire as usize), meta))
}

/// ATM cell header records (12 bytes). The packet is the cell header behind an ERF
/// header, which the reader writes; here: where the cell header lies.
fn atmhdr_record(b: &[u8]) -> (usize, usize, Meta) {
    let ts = Timestamp::from_erf(le64(b, field::ATMHDR_TS));
    let meta = Meta::new(
        ts,
        (ERF_HEADER as u32) + u32::from(ATM_CELL_WIRE),
        LinkType::ERF,
    );
    (field::ATMHDR_TS, b.len(), meta)
}

/// The ERF record of an ATM cell header capture record (`record`: its 12 bytes) into
/// `out` (20 bytes): the record's time stamp, type ATM, interface 0, rlen 20, no loss,
/// wlen 53 (the cell on the wire), then the cell header.
pub(crate) fn atmhdr_as_erf(record: &[u8], out: &mut [u8]) {
    out[..8].copy_from_slice(&record[field::ATMHDR_TS..field::ATMHDR_TS + 8]);
    out[8] = ERF_TYPE_ATM;
    out[9] = 0;
    out[10..12].copy_from_slice(&((ERF_HEADER + 4) as u16).to_be_bytes());
    out[12..14].copy_from_slice(&[0, 0]);
    out[14..16].copy_from_slice(&ATM_CELL_WIRE.to_be_bytes());
    out[16..20].copy_from_slice(&record[field::ATMHDR_CELL..field::ATMHDR_CELL + 4]);
}

/// The captured bytes of an NZIX record's frame (`raw`: the record from its frame on),
/// joined around the padding into `out`; returns how many (the wire length's worth, at
/// most 54).
pub(crate) fn nzix_join(raw: &[u8], wire: u32, out: &mut [u8]) -> usize {
    out[..NZIX_HEAD].copy_from_slice(&raw[..NZIX_HEAD]);
    out[NZIX_HEAD..NZIX_CAPTURED].copy_from_slice(&raw[NZIX_HEAD + NZIX_PAD..]);
    NZIX_CAPTURED.min(wire as usize)
}

/// NZIX records (68 bytes); `None` for a record without a frame (wire length 0: a GPS
/// time stamp record), which is skipped. The packet bytes handed on are the raw 56 from
/// the frame on; the reader joins them around the padding.
fn nzix_record(clock: &mut NzixClock, start: NzixStart, b: &[u8]) -> Option<Parsed> {
    let wire = le32(b, field::NZIX_LEN);
    if wire == 0 {
        return None;
    }
    if wire > u32::from(u16::MAX) {
        return Some(Err(format!(
            "wire length {wire} is beyond any Ethernet frame (not an NZIX record?)"
        )));
    }
    let micros = clock.advance(le32(b, field::NZIX_TS));
    let meta = Meta::new(start.timestamp(micros), wire, LinkType::ETHERNET);
    Some(Ok((field::NZIX_FRAME, NZIX_CAPTURED + NZIX_PAD, meta)))
}

impl LegacyFormat {
    /// The kind of legacy file.
    pub fn kind(&self) -> LegacyKind {
        self.kind
    }

    /// Records read so far, including those without a packet (NZIX GPS records).
    pub fn records_read(&self) -> u64 {
        self.records
    }
}

impl TraceInfo for LegacyFormat {
    fn description(&self) -> String {
        let what = match self.kind {
            LegacyKind::Atm | LegacyKind::Ethernet | LegacyKind::Pos => "legacy DAG",
            LegacyKind::Nzix => "legacy DAG NZIX",
            LegacyKind::Tsh | LegacyKind::FrPlus => "NLANR TSH",
            LegacyKind::AtmHeader => "ATM cell headers",
        };
        format!(
            "{what} ({}, {}-byte records)",
            self.kind.name(),
            self.kind.record_len()
        )
    }

    fn notes_described(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.kind == LegacyKind::Nzix {
            if self.nzix_start == NzixStart::Unknown {
                notes.push(
                    "the file name carries no NZIX start time (YYYYMMDD-HHMMSS): time stamps \
                     count from 1970-01-01 00:00:00 UTC"
                        .to_string(),
                );
            }
            if self.skipped > 0 {
                notes.push(format!(
                    "{} NZIX records without a frame (GPS time stamps) skipped",
                    self.skipped
                ));
            }
        }
        notes
    }

    fn declared_link_type(&self) -> Option<LinkType> {
        match self.kind {
            LegacyKind::Atm => Some(LinkType::ATM_RFC1483),
            LegacyKind::Ethernet | LegacyKind::Nzix => Some(LinkType::ETHERNET),
            // PPP, PPP in HDLC framing or Cisco HDLC, record by record.
            LegacyKind::Pos => None,
            LegacyKind::Tsh | LegacyKind::FrPlus => Some(LinkType::RAW),
            LegacyKind::AtmHeader => Some(LinkType::ERF),
        }
    }

    fn snaplen(&self) -> Option<u32> {
        Some(self.kind.payload().1 as u32)
    }

    fn ts_resolution(&self) -> TsResolution {
        match self.kind {
            LegacyKind::Nzix | LegacyKind::Tsh | LegacyKind::FrPlus => TsResolution::MICRO,
            _ => TsResolution::ERF,
        }
    }
}
