//! Core types of tracekit, shared by every format crate, the decoder and the facade.
//!
//! - [`Packet`] (borrowed bytes + [`Meta`]) and [`OwnedPacket`] (`packet.to_owned()`);
//! - [`Timestamp`]: 32.32 fixed point since the epoch, exact for µs, ns and ERF sources;
//! - [`LinkType`]: the pcap `LINKTYPE_*` registry, unknown values kept;
//! - [`ErfType`]: the ERF record types and what each carries, for the ERF reader and the
//!   decoder alike;
//! - [`CaptureSource`] / [`CaptureSink`]: what every format implements; `next_packet`
//!   lends the packet so a zero-copy buffer cannot be reused while it is borrowed;
//! - [`Error`]: one error type carrying the file, byte offset and packet number;
//! - [`RecordFormat`] / [`TraceInfo`]: what a trace-file format implements (its record
//!   parser and its self-description); the lending reader over it is written once.
//!
//! This crate depends on nothing heavier than `thiserror`: the decoder builds on it
//! alone. Reading files and compression live in `tracekit-io`.
//!
//! ```
//! use tracekit_core::{CaptureSource, LinkType, Meta, Packet, Timestamp};
//!
//! let frame = [0u8; 64];
//! let packet = Packet::new(&frame, Meta::new(Timestamp::from_nanos(1_700_000_000, 5), 1514, LinkType::ETHERNET));
//! assert!(packet.is_truncated());
//! assert_eq!(packet.ts().as_unix_nanos(), 1_700_000_000_000_000_005);
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod byteorder;
mod erf_type;
mod error;
mod interface;
mod linktype;
mod packet;
mod record;
mod source;
mod timestamp;

pub use byteorder::ByteOrder;
pub use erf_type::{ErfPayload, ErfType};
pub use error::{Error, ErrorKind, Result};
pub use interface::InterfaceInfo;
pub use linktype::LinkType;
pub use packet::{Direction, Meta, OwnedPacket, Packet, PacketKind, PacketOptions};

/// The largest snap length, and the default one: libpcap's `MAXIMUM_SNAPLEN` (256 KiB),
/// which tcpdump's `-s 0` means. Live capture refuses more, readers treat a record that
/// claims more as damage (see `tracekit_pcap::max_caplen_for` for the per-link bounds),
/// and filters assume it where a trace declares no snap length.
pub const MAX_SNAPLEN: u32 = 262_144;
pub use record::{Record, RecordFormat, TraceInfo, Walked, Window, walk_records};
pub use source::{CaptureSink, CaptureSource, Polled, SinkReport, Stats};
pub use timestamp::{TimeOutOfRange, Timestamp, TsResolution};
