//! Any bytes given to every decompressor (the first byte picks the codec and the thread
//! count, so the parallel gzip/bzip2/xz splitters are fuzzed too): no panic, no hang,
//! memory bounded (the output is consumed, never collected).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_io::{Compression, Input};

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
    let threads = 1 + usize::from(pick / 5 % 2);
    let raw = Input::from_reader(std::io::Cursor::new(rest.to_vec()));
    let Ok(mut input) = Input::decompress_with(raw, codec, threads) else {
        return;
    };
    // Read at most 64 MiB of output (decompression bombs are the caller's limit to set).
    let mut total = 0usize;
    while total < 64 << 20 {
        match input.fill(1 + total % 70_000) {
            Ok(0) | Err(_) => break,
            Ok(have) => {
                let take = have.min(1 + total % 70_000);
                std::hint::black_box(input.available()[take - 1]);
                input.consume(take);
                total += take;
            }
        }
    }
});
