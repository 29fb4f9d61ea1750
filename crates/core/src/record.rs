//! What a trace-file format implements: a record parser ([`RecordFormat`]) and a
//! description of the trace ([`TraceInfo`]). The loop that lends packets, the filtered
//! loop, re-lending the current packet and the position are written once, over any
//! format, by the reader that owns the format (`tracekit_io::Reader`).

use crate::{ByteOrder, Error, InterfaceInfo, LinkType, Meta, TsResolution};

/// Where a record's bytes lie in its reader's input window, and what the format says of
/// it. Positions are window positions (see `tracekit_io::Input::window`), valid until the
/// reader advances.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// Start of the captured bytes.
    pub start: usize,
    /// Number of captured bytes.
    pub len: usize,
    /// The packet's metadata.
    pub meta: Meta,
    /// Per-packet options (pcapng): start and length in the window; length 0 for none.
    pub options: (usize, usize),
    /// Byte order of the options.
    pub order: ByteOrder,
}

impl Record {
    /// A record of no bytes, for a reader's storage before the first record.
    pub const EMPTY: Record = Record {
        start: 0,
        len: 0,
        meta: Meta {
            ts: crate::Timestamp::NONE,
            wire_len: 0,
            link: LinkType(0),
            interface: 0,
            direction: crate::Direction::Unknown,
            loss: 0,
            kind: crate::PacketKind::Data,
        },
        options: (0, 0),
        order: ByteOrder::Little,
    };

    /// A record without per-packet options.
    #[inline(always)]
    pub fn new(start: usize, len: usize, meta: Meta) -> Record {
        Record {
            start,
            len,
            meta,
            options: (0, 0),
            order: ByteOrder::Little,
        }
    }
}

/// The bytes of a format's input window, by the indices records give
/// (`tracekit_io::Input` is the one implementation).
pub trait Window {
    /// `len` bytes from window index `start`; both must lie in the current window.
    fn window(&self, start: usize, len: usize) -> &[u8];
}

/// A trace-file format: it parses records, one at a time, out of the input it was given.
///
/// `next_record` is the format's one piece of work (`try_for_each_record` may walk many
/// records at once); opening (`start`) reads what comes before the first record (a file
/// header, a section header) and `input` gives the reader the window the records point
/// into.
pub trait RecordFormat: Sized {
    /// The byte input records are parsed from (`tracekit_io::Input`).
    type Input: Window;
    /// How the format is read (which metadata records are handed out, say).
    type Options: Default;

    /// Reads what precedes the first record, from an input positioned at the start of
    /// the trace.
    fn start(input: Self::Input, options: Self::Options) -> Result<Self, Error>;

    /// Reads the next record into `record` (where its bytes lie in the input window, and
    /// its metadata; every field set) and returns `true`; `false` at the end. After an
    /// error, later calls return `false`.
    ///
    /// The record is written in place rather than returned: it is 80 bytes, and moving
    /// it through `Result<Option<_>>` and into the reader cost a tenth of a pcapng read.
    fn next_record(&mut self, record: &mut Record) -> Result<bool, Error>;

    /// Reads every record left, calling `f` with each in turn (and the input its bytes
    /// lie in), until the end, the first damage or the first error of `f`; returns how
    /// many records `f` took. A record `f` fails on has been consumed, as after
    /// [`next_record`](Self::next_record); a damaged one ends the walk with the error
    /// `next_record` gives.
    ///
    /// The loop is this one for every format: `next_record` reads a record, and
    /// [`walk_window`](Self::walk_window) hands it to `f`, then whatever records the
    /// format takes from its window without `next_record`.
    ///
    /// `f` is given the record's captured bytes too (the window slice
    /// `record.start..record.start + record.len`).
    #[inline(always)]
    fn try_for_each_record<E: From<Error>>(
        &mut self,
        mut f: impl FnMut(&Self::Input, &Record, &[u8]) -> Result<(), E>,
    ) -> Result<u64, E> {
        // `f` is called in `walk_window` only, where it is inlined (a second call site
        // kept a large `f` from being inlined at either).
        let mut n = 0u64;
        let mut pending = None;
        loop {
            let (taken, result) = self.walk_window(pending.take(), &mut f);
            n += taken;
            result?;
            let mut record = Record::EMPTY;
            if !self.next_record(&mut record)? {
                return Ok(n);
            }
            pending = Some(record);
        }
    }

    /// Hands `f` the record `first` (read by `next_record`), if any, then the records
    /// that lie wholly in the current window and that the format takes without
    /// `next_record` (none by default; pcap and pcapng walk their packet records, ERF its
    /// plain Ethernet records, with the window, the position and the counters in
    /// registers, through [`walk_records`]), up to the first they
    /// do not; consumes and counts those as `next_record` does. Returns how many records
    /// `f` took, and `f`'s error (the record it failed on is consumed).
    #[inline(always)]
    fn walk_window<E>(
        &mut self,
        first: Option<Record>,
        f: &mut impl FnMut(&Self::Input, &Record, &[u8]) -> Result<(), E>,
    ) -> (u64, Result<(), E>) {
        let Some(record) = first else {
            return (0, Ok(()));
        };
        let input = self.input();
        match f(input, &record, input.window(record.start, record.len)) {
            Ok(()) => (1, Ok(())),
            Err(e) => (0, Err(e)),
        }
    }

    /// The input the records point into.
    fn input(&self) -> &Self::Input;

    /// The input, to change how it keeps its buffers (sharing them with other threads).
    fn input_mut(&mut self) -> &mut Self::Input;

    /// Packets the capture lost, as far as the trace records it (pcapng interface
    /// statistics, ERF loss counters).
    fn dropped(&self) -> u64 {
        0
    }

    /// Copying records as the file holds them: takes the packet records at the start of
    /// the window, while they lie wholly in it, each as the walk would take it (no note,
    /// no error, nothing to normalise) with at most `max_caplen` captured bytes, and
    /// together at most `max_bytes` bytes. `each` is called after each record taken with
    /// where it ends (headers and data) counted from the first; when it returns `false`
    /// the run ends after that record. Consumes and counts the records as `next_record`
    /// does and returns the bytes they take; the caller finds them in the window at the
    /// position it had before (`Input::window`).
    ///
    /// For a writer of the same format, variant and byte order, whose records are then
    /// these bytes (the pcap writer's, fed by a pcap reader). None by default: the caller
    /// then reads the next record with `next_record`.
    #[inline]
    fn take_verbatim(
        &mut self,
        max_bytes: usize,
        max_caplen: u32,
        each: impl FnMut(usize) -> bool,
    ) -> usize {
        let _ = (max_bytes, max_caplen, each);
        0
    }

    /// After [`take_verbatim`](Self::take_verbatim): when the next record is one a run
    /// would take but crosses the window's end, the bytes it needs from the window's
    /// position (header and data), for the caller to bring it in with `Input::fill`
    /// and go on with runs. `None` when the next record is for `next_record` (a note,
    /// damage, a kind runs do not take), or when no format does runs.
    #[inline]
    fn verbatim_shortfall(&self, max_caplen: u32) -> Option<usize> {
        let _ = max_caplen;
        None
    }
}

/// What a window walk did (see [`walk_records`]): the bytes it walked past, the records it
/// took out of the window (`consumed`), the records `f` took (`taken`: the first one too)
/// and `f`'s error.
#[derive(Debug)]
pub struct Walked<E> {
    /// Bytes of the window walked past: what the format consumes from its input.
    pub bytes: usize,
    /// Records taken from the window (not counting `first`): what the format counts.
    pub consumed: u64,
    /// Records `f` took, `first` included.
    pub taken: u64,
    /// `f`'s error, on the record it failed on (which is consumed).
    pub result: Result<(), E>,
}

/// The loop of a format's [`RecordFormat::walk_window`], written once: hands `f` the
/// record `first` (already read by `next_record`), then, while `step` finds one, each
/// record at byte `off` of `window` (the unread bytes of `input`'s window), until the
/// first `step` declines or `f` fails.
///
/// `step(window, off)` returns a record that lies wholly in `window` from `off` (its
/// `start` a position of `input`'s window, as `next_record` gives), its captured bytes,
/// and the bytes the record occupies in `window` (its header and padding included, more
/// than 0); or `None` for a record the format leaves to `next_record` (one that crosses
/// the window's end, needs a note or an error, or is of a kind the walk does not take).
/// `step` counts what the format counts per record, only for a record it returns (the
/// one it declines is counted again by `next_record`); the caller consumes
/// [`Walked::bytes`] and counts [`Walked::consumed`].
#[inline(always)]
pub fn walk_records<'w, I: Window, E>(
    input: &I,
    window: &'w [u8],
    mut first: Option<Record>,
    f: &mut impl FnMut(&I, &Record, &[u8]) -> Result<(), E>,
    mut step: impl FnMut(&'w [u8], usize) -> Option<(Record, &'w [u8], usize)>,
) -> Walked<E> {
    let (mut off, mut consumed, mut taken) = (0usize, 0u64, 0u64);
    let mut result = Ok(());
    loop {
        let (record, data) = match first.take() {
            Some(record) => (record, input.window(record.start, record.len)),
            None => {
                let Some((record, data, len)) = step(window, off) else {
                    break;
                };
                debug_assert!(len > 0, "a walk step that takes no bytes");
                off += len;
                consumed += 1;
                (record, data)
            }
        };
        if let Err(e) = f(input, &record, data) {
            result = Err(e);
            break;
        }
        taken += 1;
    }
    Walked {
        bytes: off,
        consumed,
        taken,
        result,
    }
}

/// What a trace says about itself, for `info` and for writers that copy it: every
/// format and live source describes itself through this one interface.
pub trait TraceInfo {
    /// The format with its variant, e.g. `pcap (µs, little-endian)`.
    fn description(&self) -> String;

    /// Oddities met and accepted so far, one sentence each.
    fn notes_described(&self) -> Vec<String> {
        Vec::new()
    }

    /// The snap length the trace declares (the largest of its interfaces'), if any.
    fn snaplen(&self) -> Option<u32> {
        None
    }

    /// The link type the trace declares for all its packets, if it declares one.
    fn declared_link_type(&self) -> Option<LinkType> {
        None
    }

    /// What is known of interface `id` (as in [`Meta::interface`]).
    fn interface_info(&self, id: u32) -> Option<InterfaceInfo> {
        let _ = id;
        None
    }

    /// The finest time stamp resolution of the trace, as far as known.
    fn ts_resolution(&self) -> TsResolution;
}
