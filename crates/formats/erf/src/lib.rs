//! Endace ERF files for tracekit.
//!
//! - [`ErfReader`]: every record type: Ethernet (after its 2-byte pad), HDLC/PoS, IPv4,
//!   IPv6 and their colour variants as packets of that link type; everything else (META
//!   provenance, ATM, multichannel, ...) whole as `LINKTYPE_ERF`, so nothing is lost;
//!   chained extension headers; padding records skipped; capture length
//!   `min(rlen − framing, wlen)`; the loss counter as [`tracekit_core::Meta::loss`] and
//!   the interface as [`tracekit_core::Meta::interface`].
//! - [`ErfWriter`]: records from any source, type from the link type, 8-byte aligned.
//!   ERF has no captured-length field: a record's payload runs to `min(rlen, wlen)`, so a
//!   truncated packet (captured < wire length) whose record needs alignment padding reads
//!   back with up to 7 zero bytes more. The writer counts such packets in its report.
//! - [`looks_like_erf`]: content detection, stricter than libtrace's.
//!
//! ```
//! use tracekit_core::{LinkType, Meta, Packet, Timestamp};
//! use tracekit_erf::{ErfReader, ErfWriter, ErfWriterOptions, looks_like_erf};
//!
//! let mut w = ErfWriter::new(Vec::new(), ErfWriterOptions::default());
//! let frame = [0x11u8; 60];
//! let mut meta = Meta::new(Timestamp::from_nanos(1_700_000_000, 999), 60, LinkType::ETHERNET);
//! meta.interface = 2;
//! w.write_packet(&Packet::new(&frame, meta))?;
//! let (file, _) = w.finish_into_inner()?;
//! assert_eq!(file.len() % 8, 0);
//! assert!(looks_like_erf(&file));
//!
//! let mut r = ErfReader::from_reader(std::io::Cursor::new(file))?;
//! let p = r.next_packet()?.unwrap();
//! assert_eq!((p.data(), p.wire_len(), p.meta().interface), (&frame[..], 60, 2));
//! assert_eq!(p.ts().subsec_nanos(), 999);
//! # Ok::<(), tracekit_core::Error>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod reader;
pub mod record;
mod writer;

pub use reader::{ErfFormat, ErfNotes, ErfReader, ErfReaderOptions};
pub use record::{DETECT_LEN, DecodedRecord, decode_ethernet, decode_record, looks_like_erf};
pub use writer::{ErfWriter, ErfWriterOptions};
