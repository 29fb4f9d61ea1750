//! Input and output plumbing shared by the format crates: the in-place byte [`Input`]
//! (guarded memory mapping or large-block reads) and compression recognition.

mod compress;
mod compression;
mod decompress;
mod input;
#[allow(unsafe_code)]
pub mod mmap;

pub use compress::{CompressOptions, GZIP_MEMBER_SUBFIELD, ParallelWriter};
pub use compression::Compression;
pub use decompress::DECOMPRESSED_BLOCK;
pub use input::{BLOCK_SIZE, Input, ReadMode};

/// Flushes a buffered writer and returns the writer inside; a failure to flush is the
/// error (the output is then incomplete). Every file writer ends this way.
pub fn finish_buffered<W: std::io::Write>(
    mut out: std::io::BufWriter<W>,
) -> Result<W, crate::Error> {
    std::io::Write::flush(&mut out)?;
    out.into_inner()
        .map_err(|e| crate::Error::from(e.into_error()))
}
