//! Classic pcap files for tracekit.
//!
//! - [`PcapReader`]: the four classic variants (µs and ns magic, little- and big-endian)
//!   plus Kuznetzov's "modified" records, from a path (memory-mapped or read in large
//!   blocks) or from any `Read` (stdin, pipes). Packets are lent straight out of the
//!   input buffer: no per-packet copy or allocation.
//! - [`PcapWriter`]: µs or ns time stamps, snap length, link type, refusing to drop
//!   time-stamp precision unless allowed, and reporting what pcap cannot carry.
//!
//! Damaged files: every complete record before the damage is delivered, then an error
//! with the byte offset, the packet number and the reason (record header cut short,
//! record cut short, captured length beyond libpcap's bound). A captured length above the
//! header's snap length is accepted and noted, as tcpdump does.
//!
//! ```
//! use tracekit_core::{LinkType, Meta, Packet, Timestamp};
//! use tracekit_pcap::{PcapReader, PcapWriter, PcapWriterOptions};
//!
//! let mut w = PcapWriter::new(Vec::new(), PcapWriterOptions::default())?;
//! for i in 0..3u32 {
//!     let frame = [i as u8; 64];
//!     let meta = Meta::new(Timestamp::from_micros(1_700_000_000 + i, 250), 1514, LinkType::ETHERNET);
//!     w.write_packet(&Packet::new(&frame, meta))?;
//! }
//! let (file, _report) = w.finish_into_inner()?;
//!
//! let mut r = PcapReader::from_reader(std::io::Cursor::new(file))?;
//! let mut wire = 0;
//! while let Some(p) = r.next_packet()? {
//!     wire += p.wire_len();
//! }
//! assert_eq!(wire, 3 * 1514);
//! # Ok::<(), tracekit_core::Error>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod header;
mod reader;
mod writer;

pub use header::{ByteOrder, FILE_HEADER_LEN, FileHeader};
pub use reader::{DEFAULT_MAX_CAPLEN, PcapFormat, PcapNotes, PcapReader, max_caplen_for};
pub use writer::{PcapWriter, PcapWriterOptions};
