//! tracekit: read, write and convert packet traces through one safe, zero-copy API.
//!
//! - [`open`] a trace by path (format detected from the content, never the name), `-` for
//!   standard input, or `pcap:path` to insist on a format; read it with
//!   [`CaptureSource::next_packet`], which lends each packet straight from the input
//!   buffer.
//! - [`create`] an output trace, its format taken from the name (`x.pcap`) or from
//!   [`CreateOptions`]; [`Sink::finish`] says whether the output is complete and what the
//!   format could not carry. A file is written under a temporary name beside it and
//!   renamed into place when complete; [`create_checked`] also refuses an output that is
//!   one of the [`InputFiles`] under another name (compared by device and inode). When a
//!   write fails (disk full), [`Sink::salvage`] cuts the file after its last whole packet
//!   and says how many it holds ([`Kept`]).
//! - [`Summary`] accumulates capinfos-style figures.
//!
//! Formats: classic pcap ([`tracekit_pcap`]), pcapng ([`tracekit_pcapng`]), ERF
//! ([`tracekit_erf`]) and, read only and named by prefix, legacy DAG files
//! ([`tracekit_legacy`]); compression and live capture plug in here as they land, each as one
//! more arm of the [`Source`]/[`Sink`] enums. [`copy`] copies a trace into a sink with its interface
//! descriptions.
//!
//! ```no_run
//! use tracekit::{CaptureSource, CreateOptions, Summary, TsResolution};
//!
//! // Copy the first 100 packets of a trace into a nanosecond pcap.
//! let mut source = tracekit::open("in.pcap")?;
//! let options = CreateOptions { ts_resolution: Some(TsResolution::NANO), ..Default::default() };
//! let mut sink = tracekit::create("first100.pcap", &options)?;
//! let mut summary = Summary::default();
//! while let Some(packet) = source.next_packet()? {
//!     if summary.packets == 100 {
//!         break;
//!     }
//!     summary.add(&packet);
//!     sink.write_packet(&packet)?;
//! }
//! sink.finish()?;
//! println!("{} packets, {} bytes", summary.packets, summary.captured_bytes);
//! # Ok::<(), tracekit::Error>(())
//! ```

#![forbid(unsafe_code)]

pub mod analysis;
pub mod anon;
mod copy;
mod destination;
pub mod diff;
mod format;
pub mod merge;
pub mod parallel;
mod parts;
pub mod replay;
mod sink;
mod source;
mod summary;

pub use copy::{CopyError, InterfaceDescriber, copy, copy_rewriting_while, copy_while};
pub use destination::{FileId, InputFiles, Kept, WriteFailure};
pub use format::Format;
pub use parts::{Cut, Part, PartFailure, PartNames, PartWriter, PartsDone};
pub use sink::{CreateOptions, MAX_COMPRESS_THREADS, Sink, create, create_checked};
#[cfg(all(feature = "live", target_os = "linux"))]
pub use source::open_members;
pub use source::{LIVE_SCHEMES, Metadata, OpenOptions, Source, is_live_uri, open, open_with};
pub use summary::Summary;

/// Live capture on Linux (feature `live`, on by default): AF_PACKET rings and fan-out.
#[cfg(all(feature = "live", target_os = "linux"))]
pub use tracekit_afpacket as live;
pub use tracekit_core::{
    ByteOrder, CaptureSink, CaptureSource, Direction, Error, ErrorKind, InterfaceInfo, LinkType,
    MAX_SNAPLEN, Meta, OwnedPacket, Packet, PacketKind, PacketOptions, SinkReport, Stats,
    Timestamp, TsResolution,
};
/// Endace DAG capture and transmit (feature `dag`): receive streams, several streams,
/// transmit sinks.
#[cfg(feature = "dag")]
pub use tracekit_dag as dag;
pub use tracekit_filter::Filter;
pub use tracekit_io::{Compression, ReadMode};
pub use {
    tracekit_core as core, tracekit_decode as decode, tracekit_erf as erf,
    tracekit_filter as filter, tracekit_flow as flow, tracekit_io as io, tracekit_legacy as legacy,
    tracekit_pcap as pcap,
    tracekit_pcapng as pcapng,
};
