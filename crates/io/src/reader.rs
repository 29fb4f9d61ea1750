//! The lending reader over any [`RecordFormat`]: the packet loop, the filtered loop,
//! re-lending the current packet, position and size, written once for every format.

use std::io::Read;
use std::ops::Deref;
use std::path::Path;

use tracekit_core::{
    CaptureSource, Error, Packet, PacketKind, PacketOptions, Record, RecordFormat, Stats,
};

use crate::{Input, ReadMode};

/// Reads a trace of format `F`, lending each packet from the input window until the next
/// call. The format's own accessors (its header, interfaces, notes) are reached through
/// `Deref`: `reader.header()` on a pcap reader.
///
/// Damaged input: every complete record before the damage is delivered, then the
/// format's error (byte offset, packet number, reason); later calls return `Ok(None)`.
pub struct Reader<F> {
    format: F,
    /// The record last read: where its bytes lie in the input window. Written in place
    /// by the format.
    record: Record,
    /// Whether `record` is the packet last handed out (not before the first, nor after
    /// the end or an error).
    lent: bool,
    /// Packet records (not metadata records) read, before any filter.
    records: u64,
}

impl<F: RecordFormat<Input = Input>> Reader<F> {
    /// Opens a file, read the default way ([`ReadMode::Auto`]), with default options.
    pub fn open(path: impl AsRef<Path>) -> Result<Reader<F>, Error> {
        Reader::open_with(path, ReadMode::Auto)
    }

    /// Opens a file with an explicit read mode (mapping or `read()`).
    pub fn open_with(path: impl AsRef<Path>, mode: ReadMode) -> Result<Reader<F>, Error> {
        Reader::from_input(Input::open(path, mode)?)
    }

    /// Reads from any byte stream (stdin, a pipe).
    pub fn from_reader(reader: impl Read + Send + 'static) -> Result<Reader<F>, Error> {
        Reader::from_input(Input::from_reader(reader))
    }

    /// Reads from a prepared [`Input`] positioned at the start of the trace, with default
    /// options.
    pub fn from_input(input: Input) -> Result<Reader<F>, Error> {
        Reader::from_input_with(input, F::Options::default())
    }

    /// Reads from a prepared [`Input`] with the format's options.
    pub fn from_input_with(input: Input, options: F::Options) -> Result<Reader<F>, Error> {
        Ok(Reader {
            format: F::start(input, options)?,
            record: Record::EMPTY,
            lent: false,
            records: 0,
        })
    }

    /// The format's state (header, interfaces, notes); also reached through `Deref`.
    pub fn format(&self) -> &F {
        &self.format
    }

    /// The underlying input (size hint, mapping state).
    pub fn input(&self) -> &Input {
        self.format.input()
    }

    /// The underlying input, to share its buffers with other threads
    /// ([`Input::share_windows`]).
    pub fn input_mut(&mut self) -> &mut Input {
        self.format.input_mut()
    }

    /// Byte offset of the next record (in the decompressed stream).
    pub fn position(&self) -> u64 {
        self.format.input().position()
    }

    /// Size of the input when known (regular files), for progress display.
    pub fn size_hint(&self) -> Option<u64> {
        self.format.input().size_hint()
    }

    /// Packet records read so far (metadata records not counted).
    pub fn packets_read(&self) -> u64 {
        self.records
    }

    /// The next packet, borrowed from the input buffer until the next call.
    #[inline(always)]
    pub fn next_packet(&mut self) -> Result<Option<Packet<'_>>, Error> {
        // Not `next_where(|_| Ok(true))`: lending a packet only to ask a constant slices
        // the window twice, and the bounds checks of the first lend do not fold away.
        // The record is read into a local and lent from it, then stored: lending from
        // the stored copy would load what was just stored in pieces, and such loads
        // stall on store forwarding (measured: a pcap read 60 % slower).
        self.lent = false;
        let mut record = Record::EMPTY;
        if !self.format.next_record(&mut record)? {
            return Ok(None);
        }
        self.records += u64::from(record.meta.kind == PacketKind::Data);
        self.record = record;
        self.lent = true;
        Ok(Some(lend(self.format.input(), &record)))
    }

    /// Calls `f` with every packet left, in turn, until the end, the first damage or the
    /// first error of `f`; returns the number of packets `f` took. The same packets as a
    /// `next_packet` loop, but the loop is this reader's own: the record stays in
    /// registers and is stored for [`current_packet`](Self::current_packet) only when
    /// `f` fails (then the failing packet is the current one), where the `next_packet`
    /// loop stores every record and hands each packet out through a `Result` in memory.
    #[inline(always)]
    pub fn try_for_each<E: From<Error>>(
        &mut self,
        mut f: impl FnMut(&Packet<'_>) -> Result<(), E>,
    ) -> Result<u64, E> {
        self.lent = false;
        let Reader {
            format,
            record: stored,
            lent,
            records,
        } = self;
        format.try_for_each_record(
            #[inline(always)]
            |input, record, data| {
                *records += u64::from(record.meta.kind == PacketKind::Data);
                f(&lend_data(input, record, data)).inspect_err(|_| {
                    *stored = *record;
                    *lent = true;
                })
            },
        )
    }

    /// The next records as the file holds them, headers included, to be copied into a
    /// file of the same format, variant and byte order (see
    /// [`RecordFormat::take_verbatim`]: which records, and how `each` is called). Empty
    /// when the next record is not one to copy so (none of this format, one that crosses
    /// the window's end or needs a note, the end of the input, damage): read it with
    /// `next_packet`, which also reports damage. Nothing is lent afterwards
    /// ([`current_packet`](Self::current_packet) is `None`).
    #[inline]
    pub fn take_verbatim(
        &mut self,
        max_bytes: usize,
        max_caplen: u32,
        mut each: impl FnMut(usize) -> bool,
    ) -> &[u8] {
        self.lent = false;
        let start = self.format.input().window_pos();
        let mut taken = 0u64;
        let len = self.format.take_verbatim(
            max_bytes,
            max_caplen,
            #[inline(always)]
            |end| {
                taken += 1;
                each(end)
            },
        );
        self.records += taken;
        self.format.input().window(start, len)
    }

    /// Goes on reading the file through a mapping ([`Input::map_from_here`]); whether it
    /// does. Nothing is lent afterwards ([`current_packet`](Self::current_packet) is
    /// `None`).
    pub fn map_input(&mut self) -> bool {
        self.lent = false;
        self.format.input_mut().map_from_here()
    }

    /// After [`take_verbatim`](Self::take_verbatim): brings a record that crosses the
    /// window's end into the window ([`RecordFormat::verbatim_shortfall`]), so that the
    /// next run starts with it; `true` when it is there. `false` when the next record is
    /// for `next_packet` (or the input ends inside it: `next_packet` reports that). The
    /// window may move to another buffer either way.
    pub fn refill_verbatim(&mut self, max_caplen: u32) -> Result<bool, Error> {
        let Some(need) = self.format.verbatim_shortfall(max_caplen) else {
            return Ok(false);
        };
        Ok(self.format.input_mut().fill(need)? >= need)
    }

    /// The next packet for which `keep` says yes (a filter), borrowed until the next call.
    #[inline]
    pub fn next_matching(
        &mut self,
        keep: &mut dyn FnMut(&Packet<'_>) -> Result<bool, Error>,
    ) -> Result<Option<Packet<'_>>, Error> {
        self.next_where(keep)
    }

    /// The one loop behind `next_matching` and filtered reading.
    #[inline(always)]
    pub fn next_where(
        &mut self,
        mut keep: impl FnMut(&Packet<'_>) -> Result<bool, Error>,
    ) -> Result<Option<Packet<'_>>, Error> {
        self.lent = false;
        while self.format.next_record(&mut self.record)? {
            self.records += u64::from(self.record.meta.kind == PacketKind::Data);
            if keep(&lend(self.format.input(), &self.record))? {
                self.lent = true;
                return Ok(Some(lend(self.format.input(), &self.record)));
            }
        }
        Ok(None)
    }

    /// The packet the last `next_packet` (or `next_matching`) call returned, lent again
    /// without reading further; `None` before the first packet and after the end or an
    /// error. A merge peeks at time stamps this way without copying packets.
    #[inline]
    pub fn current_packet(&self) -> Option<Packet<'_>> {
        self.lent.then(|| lend(self.format.input(), &self.record))
    }
}

/// The packet a record describes, borrowed from the input window.
#[inline(always)]
fn lend<'a>(input: &'a Input, record: &Record) -> Packet<'a> {
    lend_data(input, record, input.window(record.start, record.len))
}

/// The packet a record describes, its captured bytes `data` already sliced from the
/// window.
#[inline(always)]
fn lend_data<'a>(input: &'a Input, record: &Record, data: &'a [u8]) -> Packet<'a> {
    let packet = Packet::new(data, record.meta);
    if record.options.1 == 0 {
        return packet;
    }
    packet.with_options(Some(PacketOptions::new(
        input.window(record.options.0, record.options.1),
        record.order,
    )))
}

impl<F> Deref for Reader<F> {
    type Target = F;

    fn deref(&self) -> &F {
        &self.format
    }
}

impl<F: RecordFormat<Input = Input>> CaptureSource for Reader<F> {
    #[inline]
    fn next_packet(&mut self) -> Result<Option<Packet<'_>>, Error> {
        Reader::next_packet(self)
    }

    fn stats(&self) -> Stats {
        Stats {
            received: self.records,
            captured: self.records,
            dropped: self.format.dropped(),
            ..Stats::default()
        }
    }
}
