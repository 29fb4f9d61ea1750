//! Zero-copy ERF reader.

use tracekit_core::{
    Error, InterfaceInfo, LinkType, Record, RecordFormat, TraceInfo, TsResolution, walk_records,
};
use tracekit_io::{Input, Reader};

use crate::record::{
    DecodedRecord, ErfPayload, ErfType, HEADER_LEN, decode_ethernet, decode_other, field,
};

/// How an [`ErfReader`] reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ErfReaderOptions {
    /// Skip `ERF_TYPE_META` provenance records instead of handing them out as packets of
    /// kind [`PacketKind::MetaRecord`](tracekit_core::PacketKind::MetaRecord).
    pub skip_meta: bool,
}

/// Oddities the reader met and accepted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ErfNotes {
    /// Padding records (skipped).
    pub pad_records: u64,
    /// Records flagged as truncated by the capture card.
    pub truncated: u64,
    /// Records flagged with a receive error.
    pub rx_errors: u64,
    /// Records flagged with a DS error.
    pub ds_errors: u64,
    /// Records handed out whole as `LINKTYPE_ERF` (types without a link-layer mapping).
    pub encapsulated: u64,
    /// Link-layer records whose extension headers were skipped (they are not part of
    /// the packet, so a conversion does not carry them).
    pub extension_headers: u64,
}

/// Reads an ERF file or stream, lending each record's payload from the input buffer.
///
/// - Ethernet, HDLC/PoS, IPv4 and IPv6 records (and their colour variants) become packets
///   of that link type: the payload after the header, the extension headers and the
///   type header, cut to `min(rlen − framing, wlen)`; `wlen` is the wire length.
/// - Every other record type (META provenance, ATM, multichannel, ...) is handed out whole
///   as `LINKTYPE_ERF`: the record exactly as stored, so nothing is lost (its captured
///   length can exceed its wire length by the record's padding); META records have kind
///   [`PacketKind::MetaRecord`](tracekit_core::PacketKind::MetaRecord) unless skipped.
/// - The loss counter becomes [`Meta::loss`](tracekit_core::Meta::loss) (not for colour types, where the field is a
///   colour), the 2-bit interface [`Meta::interface`](tracekit_core::Meta::interface).
pub type ErfReader = Reader<ErfFormat>;

/// The ERF format's state: options, loss counters, the link type seen per interface, and
/// what was met so far. An [`ErfReader`] owns it and lends the records.
pub struct ErfFormat {
    input: Input,
    options: ErfReaderOptions,
    packets: u64,
    lost: u64,
    last_link: [Option<LinkType>; 4],
    notes: ErfNotes,
    done: bool,
}

impl RecordFormat for ErfFormat {
    type Input = Input;
    type Options = ErfReaderOptions;

    /// ERF has no file header: reading starts at the first record.
    fn start(input: Input, options: ErfReaderOptions) -> Result<ErfFormat, Error> {
        Ok(ErfFormat {
            input,
            options,
            packets: 0,
            lost: 0,
            last_link: [None; 4],
            notes: ErfNotes::default(),
            done: false,
        })
    }

    #[inline(always)]
    fn next_record(&mut self, record: &mut Record) -> Result<bool, Error> {
        self.next_record_in(record)
    }

    /// The Ethernet records without extension headers (what [`decode_ethernet`] takes)
    /// that lie wholly in the window, up to the first record of any other kind, one
    /// that crosses the window's end, one with a loss count or the card's error flags,
    /// or the first of an interface whose latest record was of another link type (or
    /// that had none yet): those, padding and errors go through `next_record`.
    #[inline(always)]
    fn walk_window<E>(
        &mut self,
        first: Option<Record>,
        f: &mut impl FnMut(&Input, &Record, &[u8]) -> Result<(), E>,
    ) -> (u64, Result<(), E>) {
        let input = &self.input;
        let window = if self.done { &[] } else { input.available() };
        let base = input.window_pos();
        // Interfaces whose latest record was Ethernet: their records change nothing of
        // `last_link` (the others' first record takes `next_record`, which notes it).
        let ethernet = self
            .last_link
            .iter()
            .enumerate()
            .filter(|(_, l)| **l == Some(LinkType::ETHERNET))
            .fold(0u8, |m, (i, _)| m | 1 << i);
        let walked = walk_records(
            input,
            window,
            first,
            f,
            #[inline(always)]
            |window, off| {
                let head = window.get(off..).and_then(<[u8]>::first_chunk::<16>)?;
                let rlen = usize::from(u16::from_be_bytes([
                    head[field::RLEN.start],
                    head[field::RLEN.start + 1],
                ]));
                // Shorter than a header, another type: `next_record` says what.
                let b = window.get(off..off + rlen)?;
                let rec = decode_ethernet(b)?;
                // Losses and the card's flags (rare) are counted by `next_record`: the
                // walk keeps no counter but its own.
                if rec.meta.loss != 0
                    || rec.flags & 0x38 != 0
                    || ethernet & (1 << rec.meta.interface) == 0
                {
                    return None;
                }
                let record = Record::new(base + off + rec.data_at, rec.caplen, rec.meta);
                Some((record, rec.packet(b), rlen))
            },
        );
        self.input.consume(walked.bytes);
        self.packets += walked.consumed;
        (walked.taken, walked.result)
    }

    fn input(&self) -> &Input {
        &self.input
    }

    fn input_mut(&mut self) -> &mut Input {
        &mut self.input
    }

    fn dropped(&self) -> u64 {
        self.lost
    }
}

impl TraceInfo for ErfFormat {
    fn description(&self) -> String {
        "ERF (32.32 time stamps)".to_string()
    }

    fn notes_described(&self) -> Vec<String> {
        self.notes.describe()
    }

    /// What is known of interface `id` (0-3): the link type of its latest record.
    fn interface_info(&self, id: u32) -> Option<InterfaceInfo> {
        let link = (*self.last_link.get(id as usize)?)?;
        Some(InterfaceInfo {
            ts_resolution: TsResolution::ERF,
            ..InterfaceInfo::new(link)
        })
    }

    fn ts_resolution(&self) -> TsResolution {
        TsResolution::ERF
    }
}

impl ErfNotes {
    /// Human-readable notes, one per kind of oddity; empty when there were none.
    pub fn describe(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.pad_records > 0 {
            out.push(format!("{} padding record(s) skipped", self.pad_records));
        }
        if self.encapsulated > 0 {
            out.push(format!(
                "{} record(s) of types without a link-layer mapping handed out whole (LINKTYPE_ERF)",
                self.encapsulated
            ));
        }
        if self.extension_headers > 0 {
            out.push(format!(
                "{} record(s) had ERF extension headers, which are not part of the packets (not carried by a conversion)",
                self.extension_headers
            ));
        }
        if self.truncated + self.rx_errors + self.ds_errors > 0 {
            out.push(format!(
                "records flagged by the card: {} truncated, {} receive errors, {} DS errors",
                self.truncated, self.rx_errors, self.ds_errors
            ));
        }
        out
    }
}

impl ErfFormat {
    /// Oddities accepted so far.
    pub fn notes(&self) -> &ErfNotes {
        &self.notes
    }

    fn error_here(&mut self, e: Error) -> Error {
        self.done = true;
        e.with_shared_path(self.input.path())
            .with_offset(self.input.position())
            .with_packet(self.packets + 1)
    }

    /// The next record: where its handed-out bytes are in the input window, and its
    /// metadata.
    #[inline(always)]
    fn next_record_in(&mut self, record: &mut Record) -> Result<bool, Error> {
        loop {
            if self.done {
                return Ok(false);
            }
            let have = self.input.fill(HEADER_LEN)?;
            if have < HEADER_LEN {
                self.done = true;
                if have == 0 {
                    return Ok(false);
                }
                return Err(self
                    .input
                    .cut_error("ERF record header", HEADER_LEN as u64)
                    .with_packet(self.packets + 1));
            }
            let h = self.input.available();
            let rlen = usize::from(u16::from_be_bytes([
                h[field::RLEN.start],
                h[field::RLEN.start + 1],
            ]));
            if rlen < HEADER_LEN {
                return Err(self.error_here(Error::malformed(format!(
                    "bad ERF record length {rlen} (a record holds at least its 16-byte header)"
                ))));
            }
            // The window already seen usually holds the whole record: no second look.
            let b = if h.len() >= rlen {
                &h[..rlen]
            } else {
                if self.input.fill(rlen)? < rlen {
                    self.done = true;
                    return Err(self
                        .input
                        .cut_error("ERF record", rlen as u64)
                        .with_packet(self.packets + 1));
                }
                &self.input.available()[..rlen]
            };
            // The common record takes a path of its own (its type and framing are
            // constants there, so counting its oddities folds to the flags test).
            if let Some(rec) = decode_ethernet(b) {
                self.notes.count(&rec);
                self.hand_out(record, rlen, &rec);
                return Ok(true);
            }
            let rec = match decode_other(b) {
                Ok(rec) => rec,
                Err(e) => return Err(self.error_here(e)),
            };
            // Padding and skipped META records are not packets; a PAD record's bytes
            // were still checked like any record's.
            if rec.erf_type == ErfType::PAD {
                self.notes.pad_records += 1;
                self.input.consume(rlen);
                continue;
            }
            if rec.erf_type == ErfType::META && self.options.skip_meta {
                self.input.consume(rlen);
                continue;
            }
            self.notes.count(&rec);
            self.hand_out(record, rlen, &rec);
            return Ok(true);
        }
    }

    /// Hands out `rec`, the record of `rlen` bytes at the current position, as the next
    /// packet: counts its losses, notes its interface's link type, moves past it.
    #[inline(always)]
    fn hand_out(&mut self, record: &mut Record, rlen: usize, rec: &DecodedRecord) {
        self.lost += u64::from(rec.meta.loss);
        self.last_link[rec.meta.interface as usize] = Some(rec.meta.link);
        let start = self.input.window_pos();
        self.input.consume(rlen);
        self.packets += 1;
        *record = Record::new(start + rec.data_at, rec.caplen, rec.meta);
    }
}

impl ErfNotes {
    /// Counts what is odd about a record handed out as a packet (its extension headers,
    /// its type, its flags).
    #[inline(always)]
    pub fn count(&mut self, rec: &DecodedRecord) {
        if rec.framing > HEADER_LEN && rec.erf_type.payload() != ErfPayload::Record {
            self.extension_headers += 1;
        }
        if rec.erf_type.payload() == ErfPayload::Record {
            self.encapsulated += 1;
        }
        if rec.flags & 0x38 != 0 {
            self.note_flags(rec.flags);
        }
    }

    #[cold]
    fn note_flags(&mut self, flags: u8) {
        if flags & 0x08 != 0 {
            self.truncated += 1;
        }
        if flags & 0x10 != 0 {
            self.rx_errors += 1;
        }
        if flags & 0x20 != 0 {
            self.ds_errors += 1;
        }
    }
}
