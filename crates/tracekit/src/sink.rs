//! Creating a trace: the output format from the name or an option, and the [`Sink`] enum
//! over every writable format.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use tracekit_core::{
    CaptureSink, Error, InterfaceInfo, LinkType, Packet, SinkReport, TsResolution,
};
use tracekit_erf::{ErfWriter, ErfWriterOptions};
use tracekit_io::{CompressOptions, Compression, ParallelWriter};
use tracekit_pcap::{PcapWriter, PcapWriterOptions};
use tracekit_pcapng::{PcapngWriter, PcapngWriterOptions};

use crate::format::Format;

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
    /// Snap length: packets are cut to it (wire length kept).
    pub snaplen: Option<u32>,
    /// Link type for formats with one per file (pcap); default: the first packet's.
    pub link_type: Option<LinkType>,
    /// Compression; default: from the name's last extension (`.gz`, `.bz2`, `.zst`,
    /// `.xz`, `.lz4`), none for standard output.
    pub compression: Option<Compression>,
    /// Compression level in the codec's own range; default: the codec's.
    pub level: Option<i32>,
    /// Compression threads; 0 (default) means one per core.
    pub threads: usize,
}

/// Where output bytes go: straight to the file or stream, or through the parallel
/// compressor.
enum Output {
    Plain(Box<dyn Write + Send>),
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
}

enum SinkKind {
    Pcap(PcapWriter<Output>),
    Pcapng(PcapngWriter<Output>),
    Erf(ErfWriter<Output>),
}

/// Creates a trace for writing: a path or `-` for standard output. The format comes
/// from `options.format`, else from the name's extension (`.pcap`, `.cap`).
pub fn create(uri: &str, options: &CreateOptions) -> Result<Sink, Error> {
    if crate::source::is_live_uri(uri) {
        return Err(Error::unsupported(
            "writing to a live interface is not supported: name a trace file",
        )
        .with_path(uri));
    }
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
        threads: options.threads,
    };
    if compression != Compression::None {
        compress.checked_level().map_err(|e| e.with_path(path))?;
    } else if options.level.is_some() {
        return Err(Error::invalid_argument(
            "a compression level needs a codec (name the file .gz, .bz2, .zst, .xz or .lz4, or give one)",
        )
        .with_path(path));
    }
    let file: Box<dyn Write + Send> = if path == "-" {
        Box::new(io::stdout())
    } else {
        Box::new(File::create(Path::new(path)).map_err(|e| Error::from(e).with_path(path))?)
    };
    let out = if compression == Compression::None {
        Output::Plain(file)
    } else {
        Output::Compressed(ParallelWriter::new(file, compress).map_err(|e| e.with_path(path))?)
    };
    let kind = match format {
        Format::Pcap => {
            let defaults = PcapWriterOptions::default();
            let pcap_options = PcapWriterOptions {
                resolution: options.ts_resolution.unwrap_or(defaults.resolution),
                snaplen: options.snaplen.unwrap_or(defaults.snaplen),
                link_type: options.link_type,
                allow_precision_loss: options.allow_precision_loss,
                ..defaults
            };
            SinkKind::Pcap(PcapWriter::new(out, pcap_options).map_err(|e| e.with_path(path))?)
        }
        Format::Pcapng => {
            let ng_options = PcapngWriterOptions {
                snaplen: options.snaplen,
                ..PcapngWriterOptions::default()
            };
            SinkKind::Pcapng(PcapngWriter::new(out, ng_options).map_err(|e| e.with_path(path))?)
        }
        Format::Erf => SinkKind::Erf(ErfWriter::new(
            out,
            ErfWriterOptions {
                snaplen: options.snaplen,
            },
        )),
    };
    Ok(Sink { kind, format })
}

impl Sink {
    /// The output format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Writes one packet.
    #[inline]
    pub fn write_packet(&mut self, packet: &Packet<'_>) -> Result<(), Error> {
        match &mut self.kind {
            SinkKind::Pcap(w) => w.write_packet(packet),
            SinkKind::Pcapng(w) => w.write_packet(packet),
            SinkKind::Erf(w) => w.write_packet(packet),
        }
    }

    /// Tells the sink what the source knows of interface `id` (name, description, link
    /// type, resolution), before that interface's first packet. Formats that can store
    /// it (pcapng) do; the others ignore it.
    pub fn describe_interface(&mut self, id: u32, info: &InterfaceInfo) -> Result<(), Error> {
        match &mut self.kind {
            SinkKind::Pcap(_) | SinkKind::Erf(_) => Ok(()),
            SinkKind::Pcapng(w) => w.describe_interface(id, info),
        }
    }

    /// Flushes, completes compression, and reports; `Ok` means the output is complete.
    pub fn finish(self) -> Result<SinkReport, Error> {
        let (out, mut report) = match self.kind {
            SinkKind::Pcap(w) => w.finish_into_inner()?,
            SinkKind::Pcapng(w) => w.finish_into_inner()?,
            SinkKind::Erf(w) => w.finish_into_inner()?,
        };
        if let Some(bytes) = out.finish()? {
            report.bytes = bytes;
        }
        Ok(report)
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
