//! Creating a trace: the output format from the name or an option, and the [`Sink`] enum
//! over every writable format.

use std::io::{self, Write};

use tracekit_core::{
    CaptureSink, Error, InterfaceInfo, LinkType, Packet, SinkReport, TsResolution,
};
use tracekit_erf::{ErfWriter, ErfWriterOptions};
use tracekit_io::{CompressOptions, Compression, ParallelWriter};
use tracekit_pcap::{PcapWriter, PcapWriterOptions};
use tracekit_pcapng::{PcapngWriter, PcapngWriterOptions};

use crate::destination::{
    Background, Destination, InputFiles, Kept, Landing, SharedBytes, WriteFailure,
};
use crate::format::Format;

/// The most compression threads an output uses (more are clamped to it): each thread
/// holds two blocks of up to 4 MiB.
pub const MAX_COMPRESS_THREADS: usize = 256;

/// How [`create`] writes.
#[derive(Debug, Clone, Copy, Default)]
pub struct CreateOptions {
    /// The output format; by default taken from the file name (`x.pcap`), and pcap for
    /// standard output.
    pub format: Option<Format>,
    /// Time stamp resolution for pcap (default µs). pcapng always picks a resolution that
    /// keeps every time stamp exact (ns for µs/ns sources).
    pub ts_resolution: Option<TsResolution>,
    /// Whether time stamps may be rounded down to the output resolution (counted in the
    /// report). Without it, a packet whose time stamp would change is an error.
    pub allow_precision_loss: bool,
    /// Snap length: packets are cut to it (wire length kept); 0 means no limit, as
    /// tcpdump's `-s 0`.
    pub snaplen: Option<u32>,
    /// Link type for formats with one per file (pcap); default: the first packet's.
    pub link_type: Option<LinkType>,
    /// Compression; default: from the name's last extension (`.gz`, `.bz2`, `.zst`,
    /// `.xz`, `.lz4`), none for standard output.
    pub compression: Option<Compression>,
    /// Compression level in the codec's own range; default: the codec's.
    pub level: Option<i32>,
    /// Compression threads; 0 (default) means one per core; at most
    /// [`MAX_COMPRESS_THREADS`].
    pub threads: usize,
    /// Write straight into the named file. By default a regular file is written to a
    /// temporary file beside it, renamed into place by [`Sink::finish`], so that an
    /// existing file of that name is only replaced by a complete output; live captures
    /// write in place so that the file can be watched as it grows. Standard output,
    /// pipes and devices are always written directly.
    pub in_place: bool,
}

/// Where output bytes go: straight to the file or stream, or through the parallel
/// compressor.
enum Output {
    Plain(Background),
    Compressed(ParallelWriter<Box<dyn Write + Send>>),
}

impl Write for Output {
    #[inline]
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match self {
            Output::Plain(w) => w.write(data),
            Output::Compressed(w) => w.write(data),
        }
    }

    #[inline]
    fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        match self {
            Output::Plain(w) => w.write_all(data),
            Output::Compressed(w) => w.write_all(data),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Output::Plain(w) => w.flush(),
            Output::Compressed(w) => w.flush(),
        }
    }
}

impl Output {
    /// Writes `buf[range]`: queued with the buffer itself, without a copy, for the
    /// writer thread of a plain output; copied into the compressor otherwise.
    fn write_shared(&mut self, buf: SharedBytes, range: std::ops::Range<usize>) -> io::Result<()> {
        match self {
            Output::Plain(w) => w.queue_shared(buf, range),
            Output::Compressed(w) => match (*buf).as_ref().get(range) {
                Some(bytes) => w.write_all(bytes),
                None => Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "bytes to write lie outside their buffer",
                )),
            },
        }
    }

    /// Writes `data` on this thread, after everything before it (see
    /// [`Background::write_direct`]); copied into the compressor when compressed.
    fn write_direct(&mut self, data: &[u8]) -> io::Result<()> {
        match self {
            Output::Plain(w) => w.write_direct(data),
            Output::Compressed(w) => w.write_all(data),
        }
    }

    /// Completes the output; the compressed size when compressed.
    fn finish(self) -> Result<Option<u64>, Error> {
        match self {
            Output::Plain(mut w) => {
                w.flush()?;
                Ok(None)
            }
            Output::Compressed(w) => w.finish().map(|(_, bytes)| Some(bytes)),
        }
    }
}

/// An output trace of any supported format.
///
/// ```no_run
/// use tracekit::{CaptureSource, CreateOptions};
///
/// let mut source = tracekit::open("in.pcap")?;
/// let mut sink = tracekit::create("out.pcap", &CreateOptions::default())?;
/// while let Some(packet) = source.next_packet()? {
///     sink.write_packet(&packet)?;
/// }
/// let report = sink.finish()?;
/// if let Some(lost) = report.loss_summary() {
///     eprintln!("{lost}");
/// }
/// # Ok::<(), tracekit::Error>(())
/// ```
pub struct Sink {
    kind: SinkKind,
    format: Format,
    landing: Landing,
    tracker: Tracker,
}

/// Which written packets are known to be in the output: the end offset of each packet
/// still in a buffer, compared with the bytes the destination accepted.
///
/// Per packet this is a push onto a vector and one comparison: the ends are settled only
/// when the accepted count moves (when a buffer went out), and then all at once.
#[derive(Debug, Default)]
struct Tracker {
    /// Whether output offsets are file offsets (no compression), so that a count can be
    /// known at all.
    exact: bool,
    /// Packets recorded (durable or pending).
    recorded: u64,
    /// End offsets of recorded packets, in order; those before `head` are durable.
    ends: Vec<u64>,
    head: usize,
    /// The accepted count the ends were last settled against.
    settled_at: u64,
    /// Packets known to be in the output, and where the last of them ends.
    durable: u64,
    durable_end: u64,
}

impl Tracker {
    /// Notes the writer's position after a write, and what reached the output.
    #[inline]
    fn note(&mut self, (packets, end): (u64, u64), accepted: u64) {
        if !self.exact {
            return;
        }
        if packets > self.recorded {
            self.recorded = packets;
            self.ends.push(end);
        }
        if accepted != self.settled_at {
            self.settle(accepted);
        }
    }

    /// [`Tracker::note`] for a run of records written at once: they end at `base` plus
    /// each of `ends`, and the writer has `packets` in all.
    #[inline]
    fn note_run(&mut self, packets: u64, base: u64, ends: &[u32], accepted: u64) {
        if !self.exact {
            return;
        }
        self.recorded = packets;
        self.ends
            .extend(ends.iter().map(|&end| base + u64::from(end)));
        if accepted != self.settled_at {
            self.settle(accepted);
        }
    }

    fn settle(&mut self, accepted: u64) {
        self.settled_at = accepted;
        let pending = &self.ends[self.head..];
        let out = pending.partition_point(|&end| end <= accepted);
        if out > 0 {
            self.durable += out as u64;
            self.durable_end = pending[out - 1];
            self.head += out;
        }
        if self.head == self.ends.len() {
            self.ends.clear();
            self.head = 0;
        } else if self.head >= 4096 && self.head * 2 >= self.ends.len() {
            // Some packets stay pending across buffers (a record larger than one):
            // drop the settled prefix now and then so the vector stays bounded.
            self.ends.drain(..self.head);
            self.head = 0;
        }
    }

    fn salvage(mut self, landing: Landing) -> Kept {
        self.settle(landing.accepted());
        landing.salvage(self.durable, self.durable_end, self.exact)
    }
}

enum SinkKind {
    Pcap(PcapWriter<Output>),
    Pcapng(PcapngWriter<Output>),
    Erf(ErfWriter<Output>),
    /// ERF records into a DAG transmit stream (`dag:/dev/dag0,1`).
    #[cfg(feature = "dag")]
    Dag(Box<tracekit_dag::DagSink>),
}

/// Creates a trace for writing: a path or `-` for standard output. The format comes
/// from `options.format`, else from the name's extension (`.pcap`, `.cap`). See
/// [`CreateOptions::in_place`] for how a file is written.
pub fn create(uri: &str, options: &CreateOptions) -> Result<Sink, Error> {
    create_checked(uri, options, &InputFiles::default())
}

/// [`create`], refusing (before anything is written) an output that is one of
/// `inputs` under any name: a hard or symbolic link, `/dev/fd/N`, standard output.
pub fn create_checked(
    uri: &str,
    options: &CreateOptions,
    inputs: &InputFiles,
) -> Result<Sink, Error> {
    if let Some((scheme, rest)) = uri.split_once(':')
        && scheme.eq_ignore_ascii_case("dag")
        && !rest.is_empty()
    {
        return create_dag(uri, options);
    }
    if crate::source::is_live_uri(uri) {
        return Err(Error::unsupported(
            "writing to a live interface is not supported: name a trace file",
        )
        .with_path(uri));
    }
    inputs.check_output(uri)?;
    let (format, path) = match uri.split_once(':') {
        Some((scheme, rest)) if !rest.is_empty() && Format::from_name(scheme).is_some() => {
            (Format::from_name(scheme), rest)
        }
        _ => (None, uri),
    };
    let format = match options.format.or(format) {
        Some(f) => f,
        None if path == "-" => Format::Pcap,
        None => Format::from_file_name(path).ok_or_else(|| {
            Error::invalid_argument(format!(
                "cannot tell the output format from the name '{path}': name it .pcap, .pcapng or .erf, or give a format"
            ))
        })?,
    };
    let compression = options
        .compression
        .unwrap_or_else(|| Compression::from_file_name(path));
    let compress = CompressOptions {
        codec: compression,
        level: options.level,
        threads: options.threads.min(MAX_COMPRESS_THREADS),
    };
    let snaplen = options.snaplen.filter(|&s| s != 0);
    if compression != Compression::None {
        compress.checked_level().map_err(|e| e.with_path(path))?;
    } else if options.level.is_some() {
        return Err(Error::invalid_argument(
            "a compression level needs a codec (name the file .gz, .bz2, .zst, .xz or .lz4, or give one)",
        )
        .with_path(path));
    }
    if let Format::Legacy(kind) = format {
        return Err(read_only(kind).with_path(path));
    }
    let (destination, landing) = Destination::open(path, options.in_place)?;
    let file: Box<dyn Write + Send> = Box::new(destination.writer);
    let (out, exchange) = if compression == Compression::None {
        // Written on a thread of its own (the compressor has its own threads), which
        // takes the writer's full buffers whole.
        let background = Background::new(file).map_err(|e| Error::from(e).with_path(path))?;
        let exchange = background.exchange();
        (Output::Plain(background), Some(exchange))
    } else {
        let writer = ParallelWriter::new(file, compress).map_err(|e| e.with_path(path))?;
        (Output::Compressed(writer), None)
    };
    let mut kind = match format {
        Format::Pcap => {
            let defaults = PcapWriterOptions::default();
            let pcap_options = PcapWriterOptions {
                resolution: options.ts_resolution.unwrap_or(defaults.resolution),
                snaplen: snaplen.unwrap_or(defaults.snaplen),
                link_type: options.link_type,
                allow_precision_loss: options.allow_precision_loss,
                ..defaults
            };
            SinkKind::Pcap(PcapWriter::new(out, pcap_options).map_err(|e| e.with_path(path))?)
        }
        Format::Pcapng => {
            let ng_options = PcapngWriterOptions {
                snaplen,
                ..PcapngWriterOptions::default()
            };
            SinkKind::Pcapng(PcapngWriter::new(out, ng_options).map_err(|e| e.with_path(path))?)
        }
        Format::Erf => SinkKind::Erf(ErfWriter::new(out, ErfWriterOptions { snaplen })),
        Format::Legacy(kind) => return Err(read_only(kind).with_path(path)),
    };
    if let Some(exchange) = exchange {
        match &mut kind {
            SinkKind::Pcap(w) => w.hand_buffers_to(exchange),
            SinkKind::Pcapng(w) => w.hand_buffers_to(exchange),
            SinkKind::Erf(w) => w.hand_buffers_to(exchange),
            #[cfg(feature = "dag")]
            SinkKind::Dag(_) => {}
        }
    }
    let tracker = Tracker {
        exact: compression == Compression::None,
        ..Tracker::default()
    };
    Ok(Sink {
        kind,
        format,
        landing,
        tracker,
    })
}

/// A DAG transmit stream as a sink: the packets as ERF records.
#[cfg(feature = "dag")]
fn create_dag(uri: &str, options: &CreateOptions) -> Result<Sink, Error> {
    if options.format.is_some_and(|f| f != Format::Erf) {
        return Err(Error::invalid_argument(
            "a DAG card transmits ERF records: no other output format",
        )
        .with_path(uri));
    }
    let snaplen = options.snaplen.filter(|&s| s != 0);
    let sink = tracekit_dag::DagSink::open(uri, &ErfWriterOptions { snaplen })?;
    Ok(Sink {
        kind: SinkKind::Dag(Box::new(sink)),
        format: Format::Erf,
        landing: Landing::none(),
        tracker: Tracker::default(),
    })
}

#[cfg(not(feature = "dag"))]
fn create_dag(uri: &str, _: &CreateOptions) -> Result<Sink, Error> {
    Err(Error::unsupported(
        "DAG transmit (dag:) needs tracekit's `dag` feature (with `dag-emulator` or `libdag`)",
    )
    .with_path(uri))
}

impl Sink {
    /// The output format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Writes one packet. After an error, call [`Sink::salvage`] to learn (and keep)
    /// what the output holds.
    #[inline]
    pub fn write_packet(&mut self, packet: &Packet<'_>) -> Result<(), Error> {
        let position = match &mut self.kind {
            SinkKind::Pcap(w) => w.write_packet(packet).map(|()| (w.packets(), w.bytes())),
            SinkKind::Pcapng(w) => w.write_packet(packet).map(|()| (w.packets(), w.bytes())),
            SinkKind::Erf(w) => w.write_packet(packet).map(|()| (w.packets(), w.bytes())),
            #[cfg(feature = "dag")]
            SinkKind::Dag(w) => w.write_packet(packet).map(|()| (0, 0)),
        }?;
        self.tracker.note(position, self.landing.accepted());
        Ok(())
    }

    /// Whether records of a pcap file with `header` go into this sink as that file holds
    /// them (a pcap output of the same link type, byte order and resolution, its header
    /// written): see [`PcapWriter::takes_verbatim_from`].
    pub(crate) fn takes_verbatim_from(&self, header: &tracekit_pcap::FileHeader) -> bool {
        matches!(&self.kind, SinkKind::Pcap(w) if w.takes_verbatim_from(header))
    }

    /// The pcap output's snap length and its free buffer bytes (handing the buffer on
    /// when fewer than `min` are free): how large the next verbatim run may be.
    #[inline]
    pub(crate) fn verbatim_room(&mut self, min: usize) -> Result<(u32, usize), Error> {
        match &mut self.kind {
            SinkKind::Pcap(w) => Ok((w.options().snaplen, w.verbatim_room(min)?)),
            _ => Ok((0, 0)),
        }
    }

    /// Writes pcap records as their file holds them, each ending at one of `ends`
    /// (counted from the start of `records`): see [`PcapWriter::write_verbatim`].
    #[inline]
    pub(crate) fn write_verbatim(&mut self, records: &[u8], ends: &[u32]) -> Result<(), Error> {
        self.verbatim_run(ends, |w| w.write_verbatim(records, ends.len() as u64))
    }

    /// [`Sink::write_verbatim`] from a buffer the source shares
    /// (`tracekit_io::Input::share_windows`) or its file's mapping
    /// (`tracekit_io::Input::shared_mapping`): the records `buf[range]` are queued for
    /// the output's writer thread with the buffer itself, behind the bytes written
    /// before, and are not copied on this thread.
    pub(crate) fn write_verbatim_shared(
        &mut self,
        buf: SharedBytes,
        range: std::ops::Range<usize>,
        ends: &[u32],
    ) -> Result<(), Error> {
        self.verbatim_run(ends, |w| {
            w.write_verbatim_by(range.len(), ends.len() as u64, |out, before| {
                out.write_all(before)?;
                out.write_shared(buf, range)
            })
        })
    }

    /// [`Sink::write_verbatim`] written on this thread straight from `records`, with no
    /// copy and no hand-over (see `copy_verbatim`); how long the output's write calls
    /// took.
    pub(crate) fn write_verbatim_direct(
        &mut self,
        records: &[u8],
        ends: &[u32],
    ) -> Result<std::time::Duration, Error> {
        let mut took = std::time::Duration::ZERO;
        self.verbatim_run(ends, |w| {
            w.write_verbatim_by(records.len(), ends.len() as u64, |out, before| {
                let began = std::time::Instant::now();
                if !before.is_empty() {
                    out.write_direct(before)?;
                }
                out.write_direct(records)?;
                took = began.elapsed();
                Ok(())
            })
        })?;
        Ok(took)
    }

    /// A verbatim run written by `write` into the pcap writer, its records' ends (from
    /// where the writer was) noted for the count of packets out.
    #[inline]
    fn verbatim_run(
        &mut self,
        ends: &[u32],
        write: impl FnOnce(&mut PcapWriter<Output>) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let SinkKind::Pcap(w) = &mut self.kind else {
            return Err(Error::invalid_argument(
                "records as a pcap file holds them go into a pcap output only",
            ));
        };
        let base = w.bytes();
        write(w)?;
        self.tracker
            .note_run(w.packets(), base, ends, self.landing.accepted());
        Ok(())
    }

    /// Packets known to have reached the output so far (the rest are in buffers); 0 for
    /// compressed outputs, whose packets are only known to be out at [`Sink::finish`].
    pub fn packets_out(&self) -> u64 {
        self.tracker.durable
    }

    /// Tells the sink what the source knows of interface `id` (name, description, link
    /// type, resolution), before that interface's first packet. Formats that can store
    /// it (pcapng) do; the others ignore it.
    pub fn describe_interface(&mut self, id: u32, info: &InterfaceInfo) -> Result<(), Error> {
        match &mut self.kind {
            SinkKind::Pcap(_) | SinkKind::Erf(_) => Ok(()),
            #[cfg(feature = "dag")]
            SinkKind::Dag(_) => Ok(()),
            SinkKind::Pcapng(w) => w.describe_interface(id, info),
        }
    }

    /// Flushes, completes compression, renames a temporary file into place, and
    /// reports; `Ok` means the output is complete. On failure the output keeps every
    /// whole packet it can ([`Sink::finish_or_salvage`] says how many).
    pub fn finish(self) -> Result<SinkReport, Error> {
        self.finish_or_salvage().map_err(|f| f.error)
    }

    /// [`Sink::finish`], saying on failure what the output holds (see [`Kept`]).
    pub fn finish_or_salvage(self) -> Result<SinkReport, WriteFailure> {
        let Sink {
            kind,
            landing,
            tracker,
            ..
        } = self;
        let finished = (|| {
            let (out, mut report) = match kind {
                SinkKind::Pcap(w) => w.finish_into_inner()?,
                SinkKind::Pcapng(w) => w.finish_into_inner()?,
                SinkKind::Erf(w) => w.finish_into_inner()?,
                #[cfg(feature = "dag")]
                SinkKind::Dag(w) => return w.finish(),
            };
            if let Some(bytes) = out.finish()? {
                report.bytes = bytes;
            }
            Ok(report)
        })();
        match finished {
            Ok(report) => match landing.commit() {
                Ok(()) => Ok(report),
                Err(error) => Err(WriteFailure {
                    error,
                    kept: Kept::Nothing,
                }),
            },
            Err(error) => Err(WriteFailure {
                error,
                kept: tracker.salvage(landing),
            }),
        }
    }

    /// After a failed write: stops writing and keeps what can be kept — an uncompressed
    /// file is cut after its last whole packet and renamed into place; a compressed one,
    /// which cannot be completed, is removed. Says what the output holds.
    pub fn salvage(self) -> Kept {
        let Sink {
            kind,
            landing,
            tracker,
            ..
        } = self;
        // Dropping the writer hands its buffer to the output as far as it goes.
        drop(kind);
        tracker.salvage(landing)
    }
}

impl CaptureSink for Sink {
    fn write_packet(&mut self, packet: &Packet<'_>) -> Result<(), Error> {
        Sink::write_packet(self, packet)
    }

    fn finish(self: Box<Self>) -> Result<SinkReport, Error> {
        Sink::finish(*self)
    }
}

/// Legacy DAG formats are read, not written.
fn read_only(kind: tracekit_legacy::LegacyKind) -> Error {
    Error::unsupported(format!(
        "{} is a legacy format tracekit reads but does not write",
        kind.name()
    ))
}
