//! Input and output plumbing shared by the format crates: the in-place byte [`Input`]
//! (guarded memory mapping or large-block reads) and compression recognition.

mod compression;
mod input;
#[allow(unsafe_code)]
pub mod mmap;

pub use compression::Compression;
pub use input::{BLOCK_SIZE, Input, ReadMode};
