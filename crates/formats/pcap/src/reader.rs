//! Zero-copy pcap reader.

use tracekit_core::{
    Direction, Error, InterfaceInfo, LinkType, Meta, PacketKind, Record, RecordFormat, Timestamp,
    TraceInfo, TsResolution, walk_records,
};
use tracekit_io::{Input, Reader};

use crate::header::{ByteOrder, FILE_HEADER_LEN, FileHeader};

/// libpcap's default bound on a record's captured length (`MAXIMUM_SNAPLEN`).
pub const DEFAULT_MAX_CAPLEN: u32 = tracekit_core::MAX_SNAPLEN;

/// The largest captured length libpcap accepts for a link type (`max_snaplen_for_dlt`):
/// a record claiming more is damage, not data.
pub fn max_caplen_for(link: LinkType) -> u32 {
    match link {
        LinkType::DBUS => 128 * 1024 * 1024,
        LinkType::EBHSCR => 8 * 1024 * 1024,
        LinkType::USBPCAP => 1024 * 1024,
        _ => DEFAULT_MAX_CAPLEN,
    }
}

/// Oddities a reader met and accepted, as tcpdump/libpcap accept them. Each counts the
/// records concerned and remembers the first one (1-based packet number).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PcapNotes {
    /// Records whose captured length exceeds the header's snap length.
    pub caplen_over_snaplen: u64,
    /// First such record.
    pub first_caplen_over_snaplen: Option<u64>,
    /// Records whose captured length exceeds their wire length.
    pub caplen_over_wire_len: u64,
    /// Records whose sub-second field was a whole second or more (carried into seconds).
    pub fraction_overflow: u64,
}

impl PcapNotes {
    /// Human-readable notes, one per kind of oddity; empty when there were none.
    pub fn describe(&self, snaplen: u32) -> Vec<String> {
        let mut out = Vec::new();
        if self.caplen_over_snaplen > 0 {
            out.push(format!(
                "{} record(s) captured more than the snap length of {snaplen} bytes (first: packet {}); accepted, as tcpdump does",
                self.caplen_over_snaplen,
                self.first_caplen_over_snaplen.unwrap_or(0)
            ));
        }
        if self.caplen_over_wire_len > 0 {
            out.push(format!(
                "{} record(s) have a captured length larger than their wire length",
                self.caplen_over_wire_len
            ));
        }
        if self.fraction_overflow > 0 {
            out.push(format!(
                "{} record(s) have a sub-second field of a second or more (carried into the seconds)",
                self.fraction_overflow
            ));
        }
        out
    }
}

/// Reads a classic pcap file or stream, lending each packet from the input buffer.
///
/// Damaged input: every complete record before the damage is delivered, then an error
/// naming the byte offset, the packet number and the reason; later calls return
/// `Ok(None)`.
///
/// ```no_run
/// use tracekit_core::CaptureSource;
/// use tracekit_pcap::PcapReader;
///
/// let mut reader = PcapReader::open("trace.pcap")?;
/// let (mut packets, mut bytes) = (0u64, 0u64);
/// while let Some(p) = reader.next_packet()? {
///     packets += 1;
///     bytes += p.caplen() as u64;
/// }
/// println!("{packets} packets, {bytes} bytes, link type {}", reader.header().link_type);
/// # Ok::<(), tracekit_core::Error>(())
/// ```
pub type PcapReader = Reader<PcapFormat>;

/// The pcap format's state: the file header and what was met so far. A [`PcapReader`]
/// owns it and lends the packets; its accessors are reached through the reader.
pub struct PcapFormat {
    input: Input,
    header: FileHeader,
    record_len: usize,
    max_caplen: u32,
    packets: u64,
    notes: PcapNotes,
    done: bool,
    /// Whether the file's byte order is not this machine's.
    swapped: bool,
    /// The file's resolution, when it is one of the two that get a conversion with
    /// constant divisors.
    ts_kind: TsKind,
}

/// How record time stamps are converted; picked once from the file header. With the
/// resolution a constant, the carry check and the conversion to a binary fraction
/// compile to a few multiplications, where a resolution read per packet cost a table
/// lookup and a general division (callgrind: 49 of 200 instructions per record).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TsKind {
    Micro,
    Nano,
    Other,
}

impl RecordFormat for PcapFormat {
    type Input = Input;
    type Options = ();

    /// Reads the file header from an input positioned at it.
    fn start(mut input: Input, _: ()) -> Result<PcapFormat, Error> {
        let have = input.fill(FILE_HEADER_LEN)?;
        if have < FILE_HEADER_LEN {
            return Err(input.cut_error("pcap file header", FILE_HEADER_LEN as u64));
        }
        let header = FileHeader::parse(&input.available()[..FILE_HEADER_LEN])
            .map_err(|e| e.with_shared_path(input.path()))?;
        input.consume(FILE_HEADER_LEN);
        Ok(PcapFormat {
            record_len: header.record_header_len(),
            max_caplen: max_caplen_for(header.link_type),
            input,
            packets: 0,
            notes: PcapNotes::default(),
            done: false,
            swapped: header.byte_order != ByteOrder::NATIVE,
            ts_kind: match header.resolution {
                TsResolution::MICRO => TsKind::Micro,
                TsResolution::NANO => TsKind::Nano,
                _ => TsKind::Other,
            },
            header,
        })
    }

    #[inline(always)]
    fn next_record(&mut self, record: &mut Record) -> Result<bool, Error> {
        self.next_record_in(record)
    }

    /// The standard (16-byte header) records that lie wholly in the window, up to the
    /// first that crosses its end or would need a note or an error (none in a
    /// modified-format file).
    #[inline(always)]
    fn walk_window<E>(
        &mut self,
        first: Option<Record>,
        f: &mut impl FnMut(&Input, &Record, &[u8]) -> Result<(), E>,
    ) -> (u64, Result<(), E>) {
        let input = &self.input;
        // A modified-format file's records (longer headers) all take `next_record`.
        let window = if self.header.modified || self.done {
            &[]
        } else {
            input.available()
        };
        let base = input.window_pos();
        // Within both bounds a record needs no note: larger ones take `next_record`.
        let limit = self.max_caplen.min(self.header.snaplen);
        let swapped = self.swapped;
        let link = self.header.link_type;
        let per_sec = self.units_per_second();
        let mut overflow = 0u64;
        let walked = walk_records(
            input,
            window,
            first,
            f,
            #[inline(always)]
            |window, off| {
                let head = window.get(off..).and_then(<[u8]>::first_chunk::<16>)?;
                let field =
                    |i: usize| u32::from_ne_bytes([head[i], head[i + 1], head[i + 2], head[i + 3]]);
                let mut fields = [field(0), field(4), field(8), field(12)];
                if swapped {
                    fields = fields.map(u32::swap_bytes);
                }
                let [ts_sec, ts_frac, caplen, wire_len] = fields;
                if caplen > limit || caplen > wire_len {
                    return None;
                }
                let start = off + 16;
                let end = start + caplen as usize;
                if end > window.len() {
                    return None;
                }
                let data = &window[start..end];
                let ts = self.timestamp(ts_sec, ts_frac);
                overflow += u64::from(u64::from(ts_frac) >= per_sec);
                let meta = Meta::new(ts, wire_len, link);
                let record = Record::new(base + start, caplen as usize, meta);
                Some((record, data, 16 + caplen as usize))
            },
        );
        self.input.consume(walked.bytes);
        self.packets += walked.consumed;
        self.notes.fraction_overflow += overflow;
        (walked.taken, walked.result)
    }

    /// The standard records the walk takes, whose fraction is below a second (a larger
    /// one is read, counted in the notes and normalised by `next_record`).
    #[inline]
    fn take_verbatim(
        &mut self,
        max_bytes: usize,
        max_caplen: u32,
        mut each: impl FnMut(usize) -> bool,
    ) -> usize {
        if self.header.modified || self.done {
            return 0;
        }
        let window = self.input.available();
        let window = &window[..window.len().min(max_bytes)];
        let limit = self.max_caplen.min(self.header.snaplen).min(max_caplen);
        let per_sec = self.units_per_second();
        let swapped = self.swapped;
        let (mut off, mut taken) = (0usize, 0u64);
        while let Some(head) = window.get(off..).and_then(<[u8]>::first_chunk::<16>) {
            let field =
                |i: usize| u32::from_ne_bytes([head[i], head[i + 1], head[i + 2], head[i + 3]]);
            let mut fields = [field(4), field(8), field(12)];
            if swapped {
                fields = fields.map(u32::swap_bytes);
            }
            let [ts_frac, caplen, wire_len] = fields;
            let end = off + 16 + caplen as usize;
            if caplen > limit
                || caplen > wire_len
                || u64::from(ts_frac) >= per_sec
                || end > window.len()
            {
                break;
            }
            off = end;
            taken += 1;
            if !each(off) {
                break;
            }
        }
        self.input.consume(off);
        self.packets += taken;
        off
    }

    /// A standard record whose header or data the window does not hold whole.
    #[inline]
    fn verbatim_shortfall(&self, max_caplen: u32) -> Option<usize> {
        if self.header.modified || self.done {
            return None;
        }
        let window = self.input.available();
        let Some(head) = window.first_chunk::<16>() else {
            return Some(16);
        };
        let mut caplen = u32::from_ne_bytes([head[8], head[9], head[10], head[11]]);
        if self.swapped {
            caplen = caplen.swap_bytes();
        }
        let limit = self.max_caplen.min(self.header.snaplen).min(max_caplen);
        let need = 16 + caplen as usize;
        (caplen <= limit && need > window.len()).then_some(need)
    }

    fn input(&self) -> &Input {
        &self.input
    }

    fn input_mut(&mut self) -> &mut Input {
        &mut self.input
    }
}

impl TraceInfo for PcapFormat {
    fn description(&self) -> String {
        self.header.describe()
    }

    fn notes_described(&self) -> Vec<String> {
        self.notes.describe(self.header.snaplen)
    }

    fn snaplen(&self) -> Option<u32> {
        Some(self.header.snaplen)
    }

    fn declared_link_type(&self) -> Option<LinkType> {
        Some(self.header.link_type)
    }

    fn interface_info(&self, id: u32) -> Option<InterfaceInfo> {
        (id == 0).then(|| {
            let h = &self.header;
            InterfaceInfo {
                snaplen: h.snaplen,
                ts_resolution: h.resolution,
                fcs_len: h.fcs_len.map(|f| f as u8),
                ..InterfaceInfo::new(h.link_type)
            }
        })
    }

    fn ts_resolution(&self) -> TsResolution {
        self.header.resolution
    }
}

impl PcapFormat {
    /// The file header.
    pub fn header(&self) -> &FileHeader {
        &self.header
    }

    /// Oddities accepted so far.
    pub fn notes(&self) -> &PcapNotes {
        &self.notes
    }

    /// The next record: where its bytes are in the input window, and its metadata.
    #[inline(always)]
    fn next_record_in(&mut self, record: &mut Record) -> Result<bool, Error> {
        if self.done {
            return Ok(false);
        }
        let hl = self.record_len;
        let have = self.input.fill(hl)?;
        if have < hl {
            self.done = true;
            if have == 0 {
                return Ok(false);
            }
            return Err(self
                .input
                .cut_error("record header", hl as u64)
                .with_packet(self.packets + 1));
        }
        let h = self.input.available();
        // The four fields in native order, then one branch for a swapped file (not a
        // conditional move per field).
        let head: [u8; 16] = *h.first_chunk().unwrap_or(&[0; 16]);
        let field = |i: usize| u32::from_ne_bytes([head[i], head[i + 1], head[i + 2], head[i + 3]]);
        let mut f = [field(0), field(4), field(8), field(12)];
        if self.swapped {
            f = f.map(u32::swap_bytes);
        }
        let [ts_sec, ts_frac, caplen, wire_len] = f;
        let (interface, direction) = if self.header.modified {
            // ifindex (4), protocol (2), pkt_type (1), pad (1)
            let ifindex = self.header.byte_order.u32(&h[16..20]);
            let direction = match h[22] {
                0..=3 => Direction::Inbound,
                4 => Direction::Outbound,
                _ => Direction::Unknown,
            };
            (ifindex, direction)
        } else {
            (0, Direction::Unknown)
        };
        if caplen > self.max_caplen {
            return Err(self.bad_caplen(caplen));
        }
        if caplen > self.header.snaplen || caplen > wire_len {
            self.note_lengths(caplen, wire_len);
        }
        let total = hl + caplen as usize;
        if self.input.fill(total)? < total {
            self.done = true;
            return Err(self
                .input
                .cut_error("record", total as u64)
                .with_packet(self.packets + 1));
        }
        let start = self.input.window_pos() + hl;
        self.input.consume(total);
        self.packets += 1;
        let ts = self.timestamp(ts_sec, ts_frac);
        if u64::from(ts_frac) >= self.units_per_second() {
            self.notes.fraction_overflow += 1;
        }
        let meta = Meta {
            ts,
            wire_len,
            link: self.header.link_type,
            interface,
            direction,
            loss: 0,
            kind: PacketKind::Data,
        };
        *record = Record::new(start, caplen as usize, meta);
        Ok(true)
    }

    /// A record's time stamp (a sub-second field of a whole second or more carried
    /// into the seconds).
    #[inline(always)]
    fn timestamp(&self, ts_sec: u32, ts_frac: u32) -> Timestamp {
        let (secs, frac) = (u64::from(ts_sec), u64::from(ts_frac));
        match self.ts_kind {
            TsKind::Micro => Timestamp::from_units(secs, frac, TsResolution::MICRO),
            TsKind::Nano => Timestamp::from_units(secs, frac, TsResolution::NANO),
            TsKind::Other => Timestamp::from_units(secs, frac, self.header.resolution),
        }
    }

    /// Units of the file's time stamp resolution in a second (constants for the two
    /// common ones).
    #[inline(always)]
    fn units_per_second(&self) -> u64 {
        match self.ts_kind {
            TsKind::Micro => 1_000_000,
            TsKind::Nano => 1_000_000_000,
            TsKind::Other => self.header.resolution.units_per_second(),
        }
    }

    #[cold]
    fn bad_caplen(&mut self, caplen: u32) -> Error {
        self.done = true;
        Error::malformed(format!(
            "record claims a captured length of {caplen} bytes, more than the maximum of {} for link type {} (snap length {}): the record header is damaged",
            self.max_caplen, self.header.link_type, self.header.snaplen
        ))
        .with_shared_path(self.input.path())
        .with_offset(self.input.position())
        .with_packet(self.packets + 1)
    }

    #[cold]
    fn note_lengths(&mut self, caplen: u32, wire_len: u32) {
        if caplen > self.header.snaplen {
            self.notes.caplen_over_snaplen += 1;
            if self.notes.first_caplen_over_snaplen.is_none() {
                self.notes.first_caplen_over_snaplen = Some(self.packets + 1);
            }
        }
        if caplen > wire_len {
            self.notes.caplen_over_wire_len += 1;
        }
    }
}
