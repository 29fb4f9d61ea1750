//! Parallel inflate of an ordinary (single-member) gzip file, side by side in one run:
//!
//! - `gunzip/flate2`: flate2's streaming decoder (zlib-rs) on one thread, the sequential
//!   reader's engine;
//! - `gunzip/pargzip-N`: [`tracekit_io::pargzip`] with N workers (chunks of 4 MiB).
//!
//! The input is the corpus pcaps (`../shared/corpus` or `$TRACEKIT_CORPUS`) repeated to
//! about 40 MB, compressed at level 6; without the corpus, generated text.

use std::hint::black_box;
use std::io::Write;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tracekit_io::pargzip::{Config, gunzip_parallel};

mod common;

fn bench(c: &mut Criterion) {
    let data = common::corpus_repeated(40 << 20);
    let mut w = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    w.write_all(&data).unwrap();
    let packed = w.finish().unwrap();
    let mut group = c.benchmark_group("gunzip");
    group.throughput(Throughput::Bytes(data.len() as u64));
    group.sample_size(10);
    group.bench_function("flate2", |b| {
        let mut buf = vec![0u8; 1 << 20];
        b.iter(|| {
            let d = flate2::read::GzDecoder::new(&packed[..]);
            black_box(common::count_read(d, &mut buf))
        })
    });
    for workers in [1, 2] {
        group.bench_function(format!("pargzip-{workers}"), |b| {
            b.iter(|| {
                let mut total = 0;
                gunzip_parallel(
                    std::io::Cursor::new(packed.clone()),
                    Config::new(workers),
                    |block| {
                        total += block.len();
                        true
                    },
                )
                .unwrap();
                black_box(total)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
