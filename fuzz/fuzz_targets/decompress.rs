//! Any bytes given to every decompressor (the first byte picks the codec and whether the
//! parallel readers' splitting is used): no panic, no hang, memory bounded whatever the
//! size fields claim (run with `-rss_limit_mb=512`). Decoding runs on the fuzzer's thread
//! through `decompress_here`, the same code as the threaded readers without starting
//! threads for each input; the output is consumed, never collected.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_io::{Compression, decompress_here};

/// Output read per input: one block (a splitter still deals several members, and a
/// decoder's memory does not depend on how much is read); more makes inflating under
/// coverage instrumentation the whole cost. A bomb is the caller's limit to set.
const OUTPUT_LIMIT: u64 = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let codec = [
        Compression::Gzip,
        Compression::Bzip2,
        Compression::Zstd,
        Compression::Xz,
        Compression::Lz4,
    ][usize::from(pick % 5)];
    let split = pick / 5 % 2 == 1;
    let mut total = 0u64;
    let _ = decompress_here(rest, codec, split, |block| {
        std::hint::black_box(block.last());
        total += block.len() as u64;
        total < OUTPUT_LIMIT
    });
});
