//! Opening a trace: URIs, content detection, and the [`Source`] enum over every format.

use std::path::Path;

#[cfg(all(feature = "live", target_os = "linux"))]
use tracekit_afpacket::{AfPacket, FanoutGroup, GroupId};
use tracekit_core::{
    CaptureSource, Error, InterfaceInfo, LinkType, Packet, Polled, Stats, TraceInfo, TsResolution,
};
use tracekit_erf::{ErfReader, ErfReaderOptions};
use tracekit_filter::Filter;
use tracekit_io::{Compression, Input, ReadMode};
use tracekit_legacy::LegacyReader;
use tracekit_pcap::PcapReader;
use tracekit_pcapng::{PcapngReader, PcapngReaderOptions};

use crate::format::Format;

/// How [`open_with`] opens a trace.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenOptions {
    /// Read regular files through a mapping or `read()` (default: the measured faster).
    pub read_mode: ReadMode,
    /// Insist on a format instead of detecting it from the content.
    pub format: Option<Format>,
    /// Whether meta records (pcapng non-packet blocks, ERF provenance) are handed out as
    /// packets of kind [`tracekit_core::PacketKind::MetaRecord`].
    pub meta_records: MetaRecords,
    /// Decompression threads for gzip written by tracekit (0: one per core; 1: one).
    pub threads: usize,
}

/// Which meta records (ERF META provenance, pcapng non-packet blocks) a source hands out
/// as packets of kind [`PacketKind::MetaRecord`](tracekit_core::PacketKind::MetaRecord).
///
/// ```
/// use tracekit::{MetaRecords, OpenOptions, PacketKind};
/// # fn main() -> Result<(), tracekit::Error> {
/// # let dir = tempfile::tempdir().unwrap();
/// # let path = dir.path().join("trace.pcap");
/// # let path = path.to_str().unwrap();
/// # {
/// #     let frame = [0u8; 60];
/// #     let mut sink = tracekit::create(path, &Default::default())?;
/// #     let meta = tracekit::Meta::new(tracekit::Timestamp::from_nanos(1, 0), 60, tracekit::LinkType::ETHERNET);
/// #     sink.write_packet(&tracekit::Packet::new(&frame, meta))?;
/// #     sink.finish()?;
/// # }
/// let options = OpenOptions { meta_records: MetaRecords::Skip, ..OpenOptions::default() };
/// let mut source = tracekit::open_with(path, &options)?;
/// while let Some(packet) = source.next_packet()? {
///     assert_eq!(packet.meta().kind, PacketKind::Data);
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MetaRecords {
    /// Each format's default, the one tshark counts: ERF META records are handed out,
    /// pcapng non-packet blocks are parsed and skipped.
    #[default]
    FormatDefault,
    /// Every meta record is handed out.
    Deliver,
    /// No meta record is handed out.
    Skip,
}

/// An open trace of any supported format. Dispatch per packet is one `match`.
///
/// ```no_run
/// use tracekit::CaptureSource;
///
/// let mut source = tracekit::open("trace.pcap")?;
/// println!("{} ({})", source.format_name(), source.format_description());
/// while let Some(packet) = source.next_packet()? {
///     println!("{} {} bytes", packet.ts(), packet.caplen());
/// }
/// # Ok::<(), tracekit::Error>(())
/// ```
pub struct Source {
    kind: SourceKind,
    compression: Compression,
    filter: Option<Filter>,
    filtered: u64,
}

enum SourceKind {
    Pcap(PcapReader),
    Pcapng(PcapngReader),
    Erf(ErfReader),
    Legacy(LegacyReader),
    #[cfg(all(feature = "live", target_os = "linux"))]
    Live(Box<AfPacket>),
    /// One receive stream of a DAG card.
    #[cfg(feature = "dag")]
    Dag(Box<tracekit_dag::DagStream>),
    /// Several receive streams of a DAG card, read in turn.
    #[cfg(feature = "dag")]
    DagStreams(Box<tracekit_dag::DagStreams>),
}

/// The URI schemes of live capture (libtrace's `int:`/`pcapint:` included), in one place.
pub const LIVE_SCHEMES: &[&str] = &["afpacket", "ring", "int", "pcapint"];

/// Whether `uri` names a live capture (`afpacket:eth0`, `ring:eth0`, `dag:/dev/dag0`, ...).
pub fn is_live_uri(uri: &str) -> bool {
    matches!(split_uri(uri), (Some(scheme), _) if LIVE_SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()) || scheme.eq_ignore_ascii_case("dag"))
}

/// A DAG card's receive streams: `dag:/dev/dag0` (stream 0), `dag:/dev/dag0,2`, or
/// several (`dag:/dev/dag0,0,2,4`, read in turn; for one thread per stream use
/// [`tracekit_dag::open_streams`] with
/// [`crate::parallel::Parallel::run_members`]).
#[cfg(feature = "dag")]
fn open_dag(uri: &str, options: &OpenOptions) -> Result<Source, Error> {
    let dag_options = tracekit_dag::DagOptions {
        skip_meta: options.meta_records == MetaRecords::Skip,
        ..Default::default()
    };
    let mut streams = tracekit_dag::open_streams(uri, &dag_options)?;
    let kind = if streams.len() == 1 {
        SourceKind::Dag(Box::new(streams.remove(0)))
    } else {
        SourceKind::DagStreams(Box::new(tracekit_dag::DagStreams::new(streams)))
    };
    Ok(Source {
        kind,
        compression: Compression::None,
        filter: None,
        filtered: 0,
    })
}

/// The URI schemes [`open`] knows besides [`LIVE_SCHEMES`].
pub const FILE_SCHEMES: &[&str] = &[
    "file",
    "pcap",
    "pcapng",
    "erf",
    "dag",
    "legacyatm",
    "legacyeth",
    "legacypos",
    "legacynzix",
    "tsh",
    "fr+",
    "atmhdr",
];

/// Splits `scheme:rest` for the schemes tracekit knows; anything else is a path.
fn split_uri(uri: &str) -> (Option<&str>, &str) {
    if let Some((scheme, rest)) = uri.split_once(':') {
        let lower = scheme.to_ascii_lowercase();
        let known =
            FILE_SCHEMES.contains(&lower.as_str()) || LIVE_SCHEMES.contains(&lower.as_str());
        if known && !rest.is_empty() {
            return (Some(scheme), rest);
        }
    }
    (None, uri)
}

/// The error for a path that does not exist, told better when the name was meant as
/// something else: an unknown URI scheme (`pcapfile:x`, `odp:eth0`) lists the known
/// ones, and a network interface's bare name (`eth0`) suggests `afpacket:eth0`.
fn not_a_file(uri: &str, e: Error) -> Error {
    if let Some((scheme, _)) = uri.split_once(':') {
        // Two letters at least: `C:` is a Windows drive, not a scheme.
        let scheme_like = scheme.len() >= 2
            && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c));
        if scheme_like {
            let known: Vec<String> = FILE_SCHEMES
                .iter()
                .chain(LIVE_SCHEMES)
                .map(|s| format!("{s}:"))
                .collect();
            return Error::invalid_argument(format!(
                "unknown scheme '{scheme}:' and no such file (known schemes: {}; a file whose name \
                 has a colon: file:{uri})",
                known.join(", ")
            ))
            .with_path(uri);
        }
    }
    let is_interface =
        !uri.contains('/') && !uri.is_empty() && Path::new("/sys/class/net").join(uri).exists();
    if is_interface {
        return Error::from(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!(
                "no such file; {uri} is a network interface: for a live capture open afpacket:{uri}"
            ),
        ))
        .with_path(uri);
    }
    e
}

/// A live capture on `iface`, set up from the environment and `TRACEKIT_CONFIG`: when
/// they name a fan-out group for it, the capture joins that group (several processes
/// opening `afpacket:eth0` then share its packets).
#[cfg(all(feature = "live", target_os = "linux"))]
fn open_live(iface: &str) -> Result<Source, Error> {
    let group = FanoutGroup::configured(iface)?;
    let (_, _, id, options) = group.settings();
    let cap = match id {
        GroupId::Fixed(_) => group
            .members(1)
            .open()?
            .pop()
            .ok_or_else(|| Error::invalid_argument("no member opened"))?,
        GroupId::Unique => AfPacket::open(iface, options.clone())?,
    };
    Ok(Source {
        kind: SourceKind::Live(Box::new(cap)),
        compression: Compression::None,
        filter: None,
        filtered: 0,
    })
}

/// A live capture URI (`afpacket:eth0`) opened as `members` sockets of one fan-out group
/// — the kernel spreads packets by flow (the group's mode and ring options as for
/// [`open`], from the environment and `TRACEKIT_CONFIG`; a hash of the flow by default)
/// — for [`crate::parallel::Parallel::run_members`], one worker per member.
#[cfg(all(feature = "live", target_os = "linux"))]
pub fn open_members(uri: &str, members: usize) -> Result<Vec<Source>, Error> {
    let iface = match split_uri(uri) {
        (Some(scheme), iface) if LIVE_SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()) => {
            iface
        }
        _ => {
            return Err(Error::invalid_argument(format!(
                "{uri}: not a live capture (afpacket:IFACE)"
            )));
        }
    };
    let group = FanoutGroup::configured(iface)?.members(members.max(1));
    Ok(group
        .open()?
        .into_iter()
        .map(|cap| Source {
            kind: SourceKind::Live(Box::new(cap)),
            compression: Compression::None,
            filter: None,
            filtered: 0,
        })
        .collect())
}

/// Opens a trace: a path (format detected from the content, never the extension), `-`
/// for standard input, or `FORMAT:path` to insist on a format. `afpacket:IFACE` (or
/// `ring:IFACE`) opens a live capture on a Linux interface.
///
/// A name that is no file is told apart from a typo'd URI: an unknown scheme lists the
/// known ones ([`FILE_SCHEMES`], [`LIVE_SCHEMES`]), and a network interface's bare name
/// suggests its live URI.
///
/// ```
/// let e = tracekit::open("pcapfile:trace.pcap").err().unwrap();
/// assert!(e.to_string().contains("unknown scheme 'pcapfile:'"));
/// assert!(e.to_string().contains("pcapng:"));
/// # #[cfg(target_os = "linux")]
/// assert!(tracekit::open("lo").err().unwrap().to_string().contains("afpacket:lo"));
/// ```
pub fn open(uri: &str) -> Result<Source, Error> {
    open_with(uri, &OpenOptions::default())
}

/// [`open`] with options.
pub fn open_with(uri: &str, options: &OpenOptions) -> Result<Source, Error> {
    let (scheme, rest) = split_uri(uri);
    let mut forced = options.format;
    if let Some(scheme) = scheme {
        match scheme.to_ascii_lowercase().as_str() {
            "file" => {}
            #[cfg(all(feature = "live", target_os = "linux"))]
            live if LIVE_SCHEMES.contains(&live) => return open_live(rest),
            #[cfg(not(all(feature = "live", target_os = "linux")))]
            live if LIVE_SCHEMES.contains(&live) => {
                return Err(Error::unsupported(format!(
                    "live capture ({live}:) needs tracekit's `live` feature (Linux only)"
                ))
                .with_path(uri));
            }
            #[cfg(feature = "dag")]
            "dag" => return open_dag(uri, options),
            #[cfg(not(feature = "dag"))]
            "dag" => {
                return Err(Error::unsupported(format!(
                    "DAG capture ({scheme}:) needs tracekit's `dag` feature (with `dag-emulator` or `libdag`)"
                ))
                .with_path(uri));
            }
            name => forced = Format::from_name(name),
        }
    }
    let mut input = if rest == "-" {
        Input::stdin()
    } else {
        match Input::open(Path::new(rest), options.read_mode) {
            Ok(input) => input,
            Err(e) if scheme.is_none() && e.is_not_found() => return Err(not_a_file(uri, e)),
            Err(e) => return Err(e),
        }
    };
    // Compression first (by magic, whatever the name), then the format of what it holds.
    input.fill(Compression::MAGIC_LEN)?;
    let compression = Compression::detect(input.available());
    if compression != Compression::None {
        input = Input::decompress_with(input, compression, options.threads)?;
    }
    input.fill(Format::SNIFF_LEN)?;
    let detected = Format::detect(input.available()).map_err(|e| {
        let e = e
            .with_shared_path(input.path())
            .with_offset(input.position());
        if compression == Compression::None {
            e
        } else {
            e.in_decompressed_data()
        }
    });
    let format = match (forced, detected) {
        // Legacy files have no magic number: named, they are believed.
        (Some(f @ Format::Legacy(_)), _) => f,
        (Some(f), Ok(d)) if f != d => {
            return Err(Error::invalid_argument(format!(
                "asked to read {f}, but the content is {d}"
            ))
            .with_shared_path(input.path()));
        }
        (_, Ok(d)) => d,
        // A forced format is trusted when detection is merely unsure (ERF time stamps
        // before 1995, say); its reader validates the content.
        (Some(f), Err(e)) if matches!(e.kind(), tracekit_core::ErrorKind::UnknownFormat(_)) => f,
        (_, Err(e)) => return Err(e),
    };
    let kind = match format {
        Format::Pcap => SourceKind::Pcap(PcapReader::from_input(input)?),
        Format::Pcapng => SourceKind::Pcapng(PcapngReader::from_input_with(
            input,
            PcapngReaderOptions {
                deliver_meta: options.meta_records == MetaRecords::Deliver,
            },
        )?),
        Format::Erf => SourceKind::Erf(ErfReader::from_input_with(
            input,
            ErfReaderOptions {
                skip_meta: options.meta_records == MetaRecords::Skip,
            },
        )?),
        Format::Legacy(kind) => SourceKind::Legacy(LegacyReader::from_input_with(input, kind)?),
    };
    Ok(Source {
        kind,
        compression,
        filter: None,
        filtered: 0,
    })
}

impl Source {
    /// Keeps only the packets that match a tcpdump filter expression (compiled by
    /// libpcap once per link type met; needs the `libpcap` feature). Metadata records
    /// never match. Filtered-out packets are counted in [`Stats::filtered`].
    ///
    /// ```no_run
    /// use tracekit::CaptureSource;
    /// let mut web = tracekit::open("trace.pcapng")?.with_filter("tcp port 80")?;
    /// while let Some(p) = web.next_packet()? {
    ///     println!("{} bytes", p.caplen());
    /// }
    /// println!("{} packets filtered out", web.stats().filtered);
    /// # Ok::<(), tracekit::Error>(())
    /// ```
    pub fn with_filter(self, expr: &str) -> Result<Source, Error> {
        let snaplen = self
            .snaplen()
            .filter(|s| *s != 0)
            .unwrap_or(tracekit_core::MAX_SNAPLEN);
        Ok(self.with_filter_program(Filter::new(expr, snaplen)?))
    }

    /// Keeps only the packets a prepared [`Filter`] accepts (e.g. from `tcpdump -ddd`
    /// output, for builds without libpcap).
    pub fn with_filter_program(mut self, filter: Filter) -> Source {
        self.filter = Some(filter);
        self
    }

    /// What the trace (or live capture) says about itself.
    fn info(&self) -> &dyn TraceInfo {
        match &self.kind {
            SourceKind::Pcap(r) => r.format(),
            SourceKind::Pcapng(r) => r.format(),
            SourceKind::Erf(r) => r.format(),
            SourceKind::Legacy(r) => r.format(),
            #[cfg(all(feature = "live", target_os = "linux"))]
            SourceKind::Live(c) => &**c,
            #[cfg(feature = "dag")]
            SourceKind::Dag(d) => &**d,
            #[cfg(feature = "dag")]
            SourceKind::DagStreams(d) => &**d,
        }
    }

    /// The input a trace file is read from; `None` for a live capture.
    fn input(&self) -> Option<&Input> {
        match &self.kind {
            SourceKind::Pcap(r) => Some(r.input()),
            SourceKind::Pcapng(r) => Some(r.input()),
            SourceKind::Erf(r) => Some(r.input()),
            SourceKind::Legacy(r) => Some(r.input()),
            #[cfg(all(feature = "live", target_os = "linux"))]
            SourceKind::Live(_) => None,
            #[cfg(feature = "dag")]
            SourceKind::Dag(_) | SourceKind::DagStreams(_) => None,
        }
    }

    /// The trace format; `None` for a live capture.
    pub fn format(&self) -> Option<Format> {
        match &self.kind {
            SourceKind::Pcap(_) => Some(Format::Pcap),
            SourceKind::Pcapng(_) => Some(Format::Pcapng),
            SourceKind::Erf(_) => Some(Format::Erf),
            SourceKind::Legacy(r) => Some(Format::Legacy(r.format().kind())),
            #[cfg(all(feature = "live", target_os = "linux"))]
            SourceKind::Live(_) => None,
            #[cfg(feature = "dag")]
            SourceKind::Dag(_) | SourceKind::DagStreams(_) => None,
        }
    }

    /// The name of the format or live source (`pcap`, `pcapng`, `erf`, `afpacket`,
    /// `dag`).
    pub fn format_name(&self) -> &'static str {
        #[cfg(feature = "dag")]
        if matches!(self.kind, SourceKind::Dag(_) | SourceKind::DagStreams(_)) {
            return "dag";
        }
        self.format().map_or("afpacket", Format::name)
    }

    /// The format with its variant, e.g. `pcap (µs, little-endian)`.
    pub fn format_description(&self) -> String {
        self.info().description()
    }

    /// Compression of the input.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// The snap length the trace declares (the largest of its interfaces'), if any.
    pub fn snaplen(&self) -> Option<u32> {
        self.info().snaplen()
    }

    /// The link type the trace declares for all its packets (pcap's header), if any.
    pub fn declared_link_type(&self) -> Option<LinkType> {
        self.info().declared_link_type()
    }

    /// What the source knows of interface `id` (as in [`tracekit_core::Meta::interface`]).
    pub fn interface_info(&self, id: u32) -> Option<InterfaceInfo> {
        self.info().interface_info(id)
    }

    /// The finest time stamp resolution of the trace, as far as known: for pcapng, of the
    /// interfaces described so far, and nanoseconds before any is (which holds the common
    /// µs and ns resolutions exactly).
    pub fn ts_resolution(&self) -> TsResolution {
        self.info().ts_resolution()
    }

    /// Bytes of the (decompressed) input consumed so far.
    pub fn position(&self) -> u64 {
        self.input().map_or(0, Input::position)
    }

    /// Size of the input when known (regular files), for progress display.
    pub fn size_hint(&self) -> Option<u64> {
        self.input().and_then(Input::size_hint)
    }

    /// Oddities met and accepted so far (e.g. captured length above the snap length).
    pub fn notes(&self) -> Vec<String> {
        self.info().notes_described()
    }

    /// The live capture, when the source is one (`afpacket:IFACE`): its counters, its
    /// stop handle.
    #[cfg(all(feature = "live", target_os = "linux"))]
    pub fn as_live(&self) -> Option<&AfPacket> {
        match &self.kind {
            SourceKind::Live(c) => Some(c),
            _ => None,
        }
    }

    /// The same, to change (e.g. [`AfPacket::set_stop_handle`]).
    #[cfg(all(feature = "live", target_os = "linux"))]
    pub fn as_live_mut(&mut self) -> Option<&mut AfPacket> {
        match &mut self.kind {
            SourceKind::Live(c) => Some(c),
            _ => None,
        }
    }

    /// Makes a DAG source end once `stop` is set (within the poll maximum wait), e.g.
    /// from a Ctrl-C handler; other sources are not affected (an AF_PACKET capture takes
    /// its stop handle through [`Source::as_live_mut`]).
    pub fn set_stop_flag(&mut self, stop: std::sync::Arc<std::sync::atomic::AtomicBool>) {
        #[cfg(feature = "dag")]
        if let Some(streams) = self.as_dag_mut() {
            for s in streams {
                s.set_stop_flag(stop.clone());
            }
        }
        let _ = stop;
    }

    /// The DAG receive streams, when the source is a DAG card (`dag:/dev/dag0`): their
    /// counters, their stop flags ([`tracekit_dag::DagStream::set_stop_flag`]).
    #[cfg(feature = "dag")]
    pub fn as_dag_mut(&mut self) -> Option<&mut [tracekit_dag::DagStream]> {
        match &mut self.kind {
            SourceKind::Dag(d) => Some(std::slice::from_mut(&mut **d)),
            SourceKind::DagStreams(d) => Some(d.streams_mut()),
            _ => None,
        }
    }

    /// The pcap reader, when the trace is pcap.
    pub fn as_pcap(&self) -> Option<&PcapReader> {
        match &self.kind {
            SourceKind::Pcap(r) => Some(r),
            _ => None,
        }
    }

    /// A pcap trace read without a filter: its reader, whose records can be copied as
    /// they are ([`Source::take_verbatim`]).
    pub(crate) fn verbatim_pcap(&self) -> Option<&PcapReader> {
        match &self.kind {
            SourceKind::Pcap(r) if self.filter.is_none() => Some(r),
            _ => None,
        }
    }

    /// [`Source::verbatim_pcap`], to read on.
    fn verbatim_pcap_mut(&mut self) -> Option<&mut PcapReader> {
        match &mut self.kind {
            SourceKind::Pcap(r) if self.filter.is_none() => Some(r),
            _ => None,
        }
    }

    /// Takes the next records as the file holds them
    /// ([`tracekit_io::Reader::take_verbatim`]) and returns how many bytes they take
    /// from [`Source::window_pos`] on; 0 unless [`Source::verbatim_pcap`].
    #[inline]
    pub(crate) fn take_verbatim(
        &mut self,
        max_bytes: usize,
        max_caplen: u32,
        each: impl FnMut(usize) -> bool,
    ) -> usize {
        self.verbatim_pcap_mut()
            .map_or(0, |r| r.take_verbatim(max_bytes, max_caplen, each).len())
    }

    /// Lets the writer of verbatim records hold the pcap reader's window buffers
    /// ([`Input::share_windows`]), so that records go out of the buffer they were read
    /// into: for an uncompressed stream or file read with `read()`. Whether it does.
    pub(crate) fn share_verbatim_windows(&mut self) -> bool {
        let Some(r) = self.verbatim_pcap_mut() else {
            return false;
        };
        let input = r.input_mut();
        input.compression() == Compression::None && !input.is_mapped() && input.share_windows()
    }

    /// The pcap reader's file mapping, when it is mapped ([`Input::shared_mapping`]):
    /// positions in its window ([`Source::window_pos`]) are offsets in it.
    pub(crate) fn verbatim_mapping(&self) -> Option<crate::destination::SharedBytes> {
        let map = self.verbatim_pcap()?.input().shared_mapping()?;
        Some(map)
    }

    /// Goes on reading the pcap file through a mapping, for its runs to be handed out
    /// of it ([`tracekit_io::Reader::map_input`]); whether it does.
    pub(crate) fn map_verbatim_input(&mut self) -> bool {
        self.verbatim_pcap_mut().is_some_and(|r| r.map_input())
    }

    /// After [`Source::take_verbatim`]: brings a record that crosses the pcap reader's
    /// window end into the window ([`tracekit_io::Reader::refill_verbatim`]).
    pub(crate) fn refill_verbatim(&mut self, max_caplen: u32) -> Result<bool, Error> {
        self.verbatim_pcap_mut()
            .map_or(Ok(false), |r| r.refill_verbatim(max_caplen))
    }

    /// Ends [`Source::share_verbatim_windows`] ([`Input::stop_sharing_windows`]).
    pub(crate) fn stop_sharing_verbatim_windows(&mut self) {
        if let Some(r) = self.verbatim_pcap_mut() {
            r.input_mut().stop_sharing_windows();
        }
    }

    /// Sharing: how often the pcap reader's window moved to another buffer
    /// ([`Input::generation`]).
    pub(crate) fn window_generation(&self) -> u64 {
        self.verbatim_pcap().map_or(0, |r| r.input().generation())
    }

    /// Where the pcap reader is in its window ([`Input::window_pos`]).
    pub(crate) fn window_pos(&self) -> usize {
        self.verbatim_pcap().map_or(0, |r| r.input().window_pos())
    }

    /// `len` bytes of the pcap reader's current window from `start` (positions as
    /// [`Source::window_pos`] gave them since the window last moved).
    pub(crate) fn window_bytes(&self, start: usize, len: usize) -> &[u8] {
        self.verbatim_pcap()
            .map_or(&[], |r| r.input().window(start, len))
    }

    /// Sharing: the buffer that held the pcap reader's window in `generation`, once it
    /// moved on ([`Input::take_retired`]; earlier ones not taken are let go).
    pub(crate) fn take_retired_window(
        &mut self,
        generation: u64,
    ) -> Option<std::sync::Arc<Vec<u8>>> {
        self.verbatim_pcap_mut()?
            .input_mut()
            .take_retired(generation)
    }

    /// The packet the last [`CaptureSource::next_packet`] returned, lent again without
    /// reading further (`None` before the first packet, at the end and after an error).
    /// This is how a merge compares the inputs' next time stamps without copying
    /// packets: advance, look at the time stamp, and lend the packet only when chosen.
    #[inline(always)]
    pub fn current_packet(&self) -> Option<Packet<'_>> {
        match &self.kind {
            SourceKind::Pcap(r) => r.current_packet(),
            SourceKind::Pcapng(r) => r.current_packet(),
            SourceKind::Erf(r) => r.current_packet(),
            SourceKind::Legacy(r) => r.current_packet(),
            #[cfg(all(feature = "live", target_os = "linux"))]
            SourceKind::Live(c) => c.current_packet(),
            #[cfg(feature = "dag")]
            SourceKind::Dag(d) => d.current_packet(),
            #[cfg(feature = "dag")]
            SourceKind::DagStreams(d) => d.current_packet(),
        }
    }

    /// The input of a trace file (`None` for live capture), to share its buffers with
    /// other threads ([`tracekit_io::Input::share_windows`]).
    pub fn input_mut(&mut self) -> Option<&mut tracekit_io::Input> {
        match &mut self.kind {
            SourceKind::Pcap(r) => Some(r.input_mut()),
            SourceKind::Pcapng(r) => Some(r.input_mut()),
            SourceKind::Erf(r) => Some(r.input_mut()),
            // None for the legacy kinds lent from the reader's own buffer.
            SourceKind::Legacy(r) => r.input_mut(),
            #[cfg(all(feature = "live", target_os = "linux"))]
            SourceKind::Live(_) => None,
            #[cfg(feature = "dag")]
            SourceKind::Dag(_) | SourceKind::DagStreams(_) => None,
        }
    }

    /// The pcapng reader (sections, interfaces, statistics), when the trace is pcapng.
    pub fn as_pcapng(&self) -> Option<&PcapngReader> {
        match &self.kind {
            SourceKind::Pcapng(r) => Some(r),
            _ => None,
        }
    }
}

impl Source {
    /// The next packet, lent until the next call; `Ok(None)` at the end of the trace
    /// (a live source ends once stopped: [`Source::set_stop_flag`]). The same as
    /// [`CaptureSource::next_packet`], callable without importing the trait.
    ///
    /// ```
    /// # fn main() -> Result<(), tracekit::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let path = dir.path().join("trace.pcap");
    /// # let path = path.to_str().unwrap();
    /// # {
    /// #     let frame = [0u8; 60];
    /// #     let mut sink = tracekit::create(path, &Default::default())?;
    /// #     let meta = tracekit::Meta::new(tracekit::Timestamp::from_nanos(1, 0), 60, tracekit::LinkType::ETHERNET);
    /// #     sink.write_packet(&tracekit::Packet::new(&frame, meta))?;
    /// #     sink.finish()?;
    /// # }
    /// let mut source = tracekit::open(path)?;
    /// let mut bytes = 0u64;
    /// while let Some(packet) = source.next_packet()? {
    ///     bytes += u64::from(packet.wire_len());
    /// }
    /// assert!(bytes > 0);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// A loop that hands `&packet` to a function that is not inlined (a sink's
    /// `write_packet`) runs faster when it borrows the packet where this call put it
    /// ([`Source::try_for_each`], or `let next = source.next_packet(); let Ok(Some(packet))
    /// = &next else { .. }`):
    /// moved into a binding of its own, the packet is copied just after its fields were
    /// stored, and that copy waits for the stores. Writing 400,000 96-byte records: 15.2
    /// against 11.8 ms (criterion `write_format/snap96`, `pcap` and `pcap_borrowed`).
    #[inline(always)]
    pub fn next_packet(&mut self) -> Result<Option<Packet<'_>>, Error> {
        let compressed = self.compression != Compression::None;
        let next = if self.filter.is_some() {
            self.next_filtered()
        } else {
            match &mut self.kind {
                SourceKind::Pcap(r) => r.next_packet(),
                SourceKind::Pcapng(r) => r.next_packet(),
                SourceKind::Erf(r) => r.next_packet(),
                SourceKind::Legacy(r) => r.next_packet(),
                #[cfg(all(feature = "live", target_os = "linux"))]
                SourceKind::Live(c) => c.next_packet(),
                #[cfg(feature = "dag")]
                SourceKind::Dag(d) => d.next_packet(),
                #[cfg(feature = "dag")]
                SourceKind::DagStreams(d) => d.next_packet(),
            }
        };
        next.map_err(|e| marked(e, compressed))
    }

    /// Calls `f` with every packet left, in turn, lent where [`Source::next_packet`] put
    /// it (the borrowing loop, which copies nothing), until the end of the trace or the
    /// first error of the source or of `f`; returns the number of packets `f` took.
    ///
    /// ```
    /// # fn main() -> Result<(), tracekit::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let path = dir.path().join("trace.pcap");
    /// # let path = path.to_str().unwrap();
    /// # {
    /// #     let frame = [0u8; 60];
    /// #     let mut sink = tracekit::create(path, &Default::default())?;
    /// #     let meta = tracekit::Meta::new(tracekit::Timestamp::from_nanos(1, 0), 60, tracekit::LinkType::ETHERNET);
    /// #     sink.write_packet(&tracekit::Packet::new(&frame, meta))?;
    /// #     sink.finish()?;
    /// # }
    /// let copy = dir.path().join("copy.pcap");
    /// let mut source = tracekit::open(path)?;
    /// let mut sink = tracekit::create(copy.to_str().unwrap(), &Default::default())?;
    /// let n = source.try_for_each(|packet| sink.write_packet(packet))?;
    /// sink.finish()?;
    /// assert_eq!(n, 1);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// The fastest way through a trace: the format is picked once, not per packet, and
    /// a file reader's loop keeps each record in registers (T1 on 318,000 96-byte
    /// records: see the README's Performance section).
    #[inline]
    pub fn try_for_each<E: From<Error>>(
        &mut self,
        mut f: impl FnMut(&Packet<'_>) -> Result<(), E>,
    ) -> Result<u64, E> {
        if self.filter.is_some() {
            return each(self, f);
        }
        let compressed = self.compression != Compression::None;
        // The file readers' loops: `f` inlined into each (a closure in argument position
        // takes the attribute), so that what the reader built in registers reaches it
        // there rather than through memory.
        let mut g = |p: &Packet<'_>| f(p).map_err(Stop::User);
        let run = match &mut self.kind {
            SourceKind::Pcap(r) => r.try_for_each(
                #[inline(always)]
                |p| g(p),
            ),
            SourceKind::Pcapng(r) => r.try_for_each(
                #[inline(always)]
                |p| g(p),
            ),
            SourceKind::Erf(r) => r.try_for_each(
                #[inline(always)]
                |p| g(p),
            ),
            SourceKind::Legacy(r) => each(r, &mut g),
            #[cfg(all(feature = "live", target_os = "linux"))]
            SourceKind::Live(c) => each(c.as_mut(), g),
            #[cfg(feature = "dag")]
            SourceKind::Dag(d) => each(d.as_mut(), g),
            #[cfg(feature = "dag")]
            SourceKind::DagStreams(d) => each(d.as_mut(), g),
        };
        run.map_err(|stop| match stop {
            Stop::Source(e) => E::from(marked(e, compressed)),
            Stop::User(e) => e,
        })
    }

    /// The source's counters so far (packets received, dropped by the kernel or card,
    /// filtered out). The same as [`CaptureSource::stats`], without the trait import.
    pub fn stats(&self) -> Stats {
        let mut stats = match &self.kind {
            SourceKind::Pcap(r) => r.stats(),
            SourceKind::Pcapng(r) => r.stats(),
            SourceKind::Erf(r) => r.stats(),
            SourceKind::Legacy(r) => r.stats(),
            #[cfg(all(feature = "live", target_os = "linux"))]
            SourceKind::Live(c) => c.stats(),
            #[cfg(feature = "dag")]
            SourceKind::Dag(d) => d.stats(),
            #[cfg(feature = "dag")]
            SourceKind::DagStreams(d) => d.stats(),
        };
        stats.filtered = self.filtered;
        stats.captured = stats.received.saturating_sub(self.filtered);
        stats
    }
}

impl CaptureSource for Source {
    #[inline(always)]
    fn next_packet(&mut self) -> Result<Option<Packet<'_>>, Error> {
        Source::next_packet(self)
    }

    /// A live capture waits at most `timeout` (its filter applied), as does one DAG
    /// stream without a filter; other sources read their next packet.
    fn next_packet_within(&mut self, timeout: std::time::Duration) -> Result<Polled<'_>, Error> {
        #[cfg(all(feature = "live", target_os = "linux"))]
        if let SourceKind::Live(_) = self.kind {
            let SourceKind::Live(c) = &mut self.kind else {
                unreachable!("matched just above")
            };
            let filtered = &mut self.filtered;
            return match self.filter.as_mut() {
                Some(filter) => c.poll_matching(
                    &mut |p: &Packet<'_>| {
                        let pass = filter.matches(p)?;
                        *filtered += u64::from(!pass);
                        Ok(pass)
                    },
                    Some(timeout),
                ),
                None => c.poll_matching(&mut |_| Ok(true), Some(timeout)),
            };
        }
        #[cfg(feature = "dag")]
        if self.filter.is_none() && matches!(self.kind, SourceKind::Dag(_)) {
            let SourceKind::Dag(d) = &mut self.kind else {
                unreachable!("matched just above")
            };
            return d.next_packet_within(timeout);
        }
        let _ = timeout;
        Ok(match Source::next_packet(self)? {
            Some(p) => Polled::Packet(p),
            None => Polled::Ended,
        })
    }

    fn stats(&self) -> Stats {
        Source::stats(self)
    }
}

impl Source {
    /// The filtered path, out of line so that the unfiltered one stays small enough to
    /// inline the readers.
    #[cold]
    #[inline(never)]
    fn next_filtered(&mut self) -> Result<Option<Packet<'_>>, Error> {
        let Some(filter) = self.filter.as_mut() else {
            return Ok(None);
        };
        let filtered = &mut self.filtered;
        let mut keep = |p: &Packet<'_>| -> Result<bool, Error> {
            let pass = filter.matches(p)?;
            *filtered += u64::from(!pass);
            Ok(pass)
        };
        match &mut self.kind {
            SourceKind::Pcap(r) => r.next_matching(&mut keep),
            SourceKind::Pcapng(r) => r.next_matching(&mut keep),
            SourceKind::Erf(r) => r.next_matching(&mut keep),
            SourceKind::Legacy(r) => r.next_matching(&mut keep),
            #[cfg(all(feature = "live", target_os = "linux"))]
            SourceKind::Live(c) => c.next_matching(&mut keep),
            #[cfg(feature = "dag")]
            SourceKind::Dag(d) => d.next_matching(&mut keep),
            #[cfg(feature = "dag")]
            SourceKind::DagStreams(d) => d.next_matching(&mut keep),
        }
    }
}

/// A reader's error, its offsets marked as decompressed ones when the file is
/// compressed (a reader's offsets there count decompressed bytes).
#[inline]
fn marked(e: Error, compressed: bool) -> Error {
    if compressed {
        e.in_decompressed_data()
    } else {
        e
    }
}

/// Why a [`Source::try_for_each`] loop stopped: the source's error (its offsets still to
/// be marked as decompressed ones) or the caller's.
enum Stop<E> {
    Source(Error),
    User(E),
}

impl<E> From<Error> for Stop<E> {
    fn from(e: Error) -> Stop<E> {
        Stop::Source(e)
    }
}

/// The `next_packet` loop behind [`Source::try_for_each`], for sources with no loop of
/// their own.
#[inline(always)]
fn each<S: CaptureSource + ?Sized, E: From<Error>>(
    source: &mut S,
    mut f: impl FnMut(&Packet<'_>) -> Result<(), E>,
) -> Result<u64, E> {
    let mut n = 0u64;
    loop {
        let next = source.next_packet();
        match next {
            Ok(Some(ref packet)) => f(packet)?,
            Ok(None) => return Ok(n),
            Err(e) => return Err(E::from(e)),
        }
        n += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_schemes() {
        assert_eq!(split_uri("pcap:/tmp/x"), (Some("pcap"), "/tmp/x"));
        assert_eq!(split_uri("/tmp/a:b.pcap"), (None, "/tmp/a:b.pcap"));
        assert_eq!(split_uri("weird:thing"), (None, "weird:thing"));
        assert_eq!(split_uri("-"), (None, "-"));
    }
}
