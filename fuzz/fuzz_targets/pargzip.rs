//! The parallel gzip reader against flate2's sequential one (`decompress_here` without
//! splitting): the same verdict (error or not) for any input, the same bytes, or before
//! an error at least the sequential reader's bytes (flate2 drops the output of the read
//! call that fails). The first
//! byte picks the chunk size (small, so inputs span several chunks), the worker count and
//! whether the rest is used as gzip data as it is or compressed first (which reaches the
//! deep paths: markers, verification, members), with a bit then flipped in it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_io::pargzip::{Config, gunzip_parallel};
use tracekit_io::{Compression, decompress_here};

/// Output compared per input, at most.
const OUTPUT_LIMIT: usize = 4 << 20;

fn collect(run: impl FnOnce(&mut dyn FnMut(&[u8]) -> bool) -> bool) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let ok = run(&mut |b| {
        out.extend_from_slice(b);
        out.len() < OUTPUT_LIMIT
    });
    (out, ok)
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let chunk = 1024 + usize::from(pick & 0x0f) * 512;
    let workers = 1 + usize::from(pick >> 4 & 3);
    let packed = if pick & 0x40 != 0 {
        let mut w = flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::new(u32::from(pick >> 4 & 3) * 3),
        );
        std::io::Write::write_all(&mut w, rest).unwrap();
        let mut packed = w.finish().unwrap();
        if pick & 0x80 != 0 && !packed.is_empty() {
            let bit = rest.len() * 7 % (packed.len() * 8);
            packed[bit / 8] ^= 1 << (bit % 8);
        }
        packed
    } else {
        rest.to_vec()
    };
    let (want, want_ok) = collect(|out| {
        decompress_here(&packed[..], Compression::Gzip, false, out).is_ok()
    });
    let (got, got_ok) = collect(|out| {
        gunzip_parallel(std::io::Cursor::new(packed.clone()), Config::with_chunk(workers, chunk), out)
            .is_ok()
    });
    if want.len() < OUTPUT_LIMIT && got.len() < OUTPUT_LIMIT {
        assert_eq!(got_ok, want_ok, "verdicts differ");
        if got_ok {
            assert!(got == want, "{} bytes, sequentially {}", got.len(), want.len());
        } else {
            // Before an error flate2 drops what inflated in the failing read call; the
            // parallel reader hands out every symbol before the damage.
            assert!(got.starts_with(&want), "{} bytes, sequentially {}", got.len(), want.len());
        }
    } else {
        let n = want.len().min(got.len());
        assert!(got[..n] == want[..n]);
    }
});
