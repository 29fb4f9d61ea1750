//! pcapng files for tracekit.
//!
//! - [`PcapngReader`]: every block type of the format: Section Header (both byte orders,
//!   several sections per file, unknown section length), Interface Description (link
//!   type, snap length, `if_tsresol` 10^-n and 2^-n, `if_tsoffset`, name, description,
//!   FCS length), Enhanced Packet (`epb_flags` direction, `epb_dropcount`, comments),
//!   Simple Packet, the obsolete Packet Block, Name Resolution, Interface Statistics,
//!   Decryption Secrets, custom and unknown blocks (skipped, never fatal, or handed out as
//!   metadata on request). Time stamps use integer arithmetic only. Packets are lent
//!   straight out of the input buffer.
//! - [`PcapngWriter`]: one section, one IDB per (interface, link type, resolution) seen,
//!   EPBs in a resolution that keeps every time stamp exact (ns unless the source was
//!   binary), direction flags, drop counts and comments carried over.
//!
//! ```
//! use tracekit_core::{Direction, LinkType, Meta, Packet, Timestamp};
//! use tracekit_pcapng::{PcapngReader, PcapngWriter, PcapngWriterOptions};
//!
//! let mut w = PcapngWriter::new(Vec::new(), PcapngWriterOptions::default())?;
//! let frame = [0xabu8; 60];
//! let mut meta = Meta::new(Timestamp::from_nanos(1_700_000_000, 42), 60, LinkType::ETHERNET);
//! meta.direction = Direction::Outbound;
//! w.write_packet(&Packet::new(&frame, meta))?;
//! let (file, _report) = w.finish_into_inner()?;
//!
//! let mut r = PcapngReader::from_reader(std::io::Cursor::new(file))?;
//! let p = r.next_packet()?.unwrap();
//! assert_eq!(p.ts().subsec_nanos(), 42);
//! assert_eq!(p.meta().direction, Direction::Outbound);
//! # Ok::<(), tracekit_core::Error>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod block;
mod interface;
mod reader;
mod writer;

pub use interface::{Interface, InterfaceStats, Section};
pub use reader::{META_LINK_TYPE, PcapngFormat, PcapngNotes, PcapngReader, PcapngReaderOptions};
pub use writer::{PcapngWriter, PcapngWriterOptions};

/// Whether `head` starts like a pcapng file (a Section Header Block with a valid
/// byte-order magic).
pub fn is_pcapng(head: &[u8]) -> bool {
    use tracekit_core::ByteOrder;
    head.len() >= 12
        && ByteOrder::Little.u32(&head[0..4]) == block::SHB
        && (ByteOrder::Little.u32(&head[8..12]) == block::BYTE_ORDER_MAGIC
            || ByteOrder::Big.u32(&head[8..12]) == block::BYTE_ORDER_MAGIC)
}
