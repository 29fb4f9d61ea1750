//! Input and output plumbing for tracekit's file formats.
//!
//! - [`Input`]: the in-place byte input that the pcap, pcapng and ERF readers parse from:
//!   a guarded memory mapping of a regular file, or large recycled blocks read from any
//!   `Read` (pipes, stdin, decompressors);
//! - [`Compression`]: gzip, bzip2, zstd, xz and lz4 recognised by magic and by file name,
//!   decompressed on a worker thread (in parallel for multi-member gzip, for any other
//!   gzip file through [`pargzip`], for multi-stream xz and, block by block, for every
//!   bzip2 file), and written by [`ParallelWriter`] on worker threads (zstd and lz4 with
//!   checksums). Decompression works in memory bounded by the codecs' windows and the
//!   number of workers, whatever sizes a file claims; bytes after the last complete
//!   member/stream/frame are reported as trailing data after every byte before them;
//!   [`decompress_here`] runs the same decoders on the calling thread.
//!
//! This crate is separate from `tracekit-core` so that the decoder and the core types
//! build without codecs, threads or `libc`.
//!
//! ```
//! use std::io::Read;
//! use tracekit_io::{Compression, Input};
//!
//! let mut packed = Vec::new();
//! {
//!     let mut w = flate2::write::GzEncoder::new(&mut packed, flate2::Compression::fast());
//!     std::io::Write::write_all(&mut w, b"hello, trace").unwrap();
//!     w.finish().unwrap();
//! }
//! assert_eq!(Compression::detect(&packed), Compression::Gzip);
//! let raw = Input::from_reader(std::io::Cursor::new(packed));
//! let mut input = Input::decompress(raw, Compression::Gzip).unwrap();
//! let mut text = String::new();
//! input.read_to_string(&mut text).unwrap();
//! assert_eq!(text, "hello, trace");
//! ```

// `unsafe` is confined to the file-mapping corner (`mmap`), which allows it locally.
#![deny(unsafe_code)]
#![deny(missing_docs)]

mod bzblock;
mod compress;
mod compression;
mod decompress;
mod inflate;
mod input;
#[allow(unsafe_code)]
pub mod mmap;
mod output;
mod parbzip2;
pub mod pargzip;
mod reader;

pub use compress::{CompressOptions, GZIP_MEMBER_SUBFIELD, ParallelWriter};

/// Reads from `r` into `buf[*len..]` until `*len` reaches `want` (reads may go past it,
/// up to the end of `buf`) or the stream ends; returns whether it ended. `*len` counts
/// every byte read, those before an error too. Retries interrupted reads.
pub(crate) fn read_until<R: std::io::Read + ?Sized>(
    r: &mut R,
    buf: &mut [u8],
    len: &mut usize,
    want: usize,
) -> std::io::Result<bool> {
    while *len < want {
        match r.read(&mut buf[*len..]) {
            Ok(0) => return Ok(true),
            Ok(k) => *len += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(false)
}
pub use compression::Compression;
pub use decompress::{DECOMPRESSED_BLOCK, MAX_SPLIT_MEMBER, MAX_WHOLE_INFLATE, decompress_here};
/// The deflate decoder's loops, for `benches/inflate.rs` only.
#[doc(hidden)]
pub use inflate::bench as inflate_bench;
pub use input::{BLOCK_SIZE, Input, ReadMode};
pub use output::{BufferExchange, RecordBuffer, WRITE_BUFFER, count_record};
pub use reader::Reader;
