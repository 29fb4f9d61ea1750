//! Any bytes as a bzip2 file, decoded block by block the way the parallel reader does
//! (the splitter's bit-level magic search, blocks re-framed for libbz2, false magics
//! joined over, CRCs combined in order) and by the sequential reader: no panic, no hang,
//! and the same result. Decoding runs on the fuzzer's thread through `decompress_here`
//! (the parallel reader's code without starting threads).
//!
//! Same result: when either succeeds, both do, with the same bytes. When both fail, one
//! output is a start of the other: both are libbz2's output for the same blocks, and the
//! sequential reader also loses what libbz2 produced in its failing call (which may hold
//! blocks before the damaged one), so it may deliver less.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_io::{Compression, decompress_here};

/// Output compared per input (as in the `decompress` target).
const OUTPUT_LIMIT: usize = 1 << 20;

fn run(data: &[u8], split: bool) -> (Vec<u8>, bool, bool) {
    let mut out = Vec::new();
    let result = decompress_here(data, Compression::Bzip2, split, |block| {
        out.extend_from_slice(block);
        out.len() < OUTPUT_LIMIT
    });
    let full = out.len() >= OUTPUT_LIMIT;
    out.truncate(OUTPUT_LIMIT);
    (out, result.is_ok(), full)
}

fuzz_target!(|data: &[u8]| {
    let (parallel, parallel_ok, parallel_full) = run(data, true);
    let (sequential, sequential_ok, sequential_full) = run(data, false);
    let common = parallel.len().min(sequential.len());
    assert!(
        parallel[..common] == sequential[..common],
        "the outputs differ within their first {common} bytes"
    );
    if parallel_full || sequential_full {
        // Stopped at the limit: only the start is compared (one may have failed later).
        return;
    }
    if parallel_ok || sequential_ok {
        assert_eq!(
            (parallel_ok, sequential_ok, parallel.len()),
            (true, true, sequential.len()),
            "one reader succeeds, the other does not, or their lengths differ"
        );
    }
});
