//! Parallel inflate of an ordinary (single-member) gzip file, side by side in one run:
//!
//! - `gunzip/flate2`: flate2's streaming decoder (zlib-rs) on one thread, the sequential
//!   reader's engine;
//! - `gunzip/pargzip-N`: [`tracekit_io::pargzip`] with N workers (chunks of 4 MiB).
//!
//! The input is the corpus pcaps (`../shared/corpus` or `$TRACEKIT_CORPUS`) repeated to
//! about 40 MB, compressed at level 6; without the corpus, generated text.

use std::hint::black_box;
use std::io::{Read, Write};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tracekit_io::pargzip::{Config, gunzip_parallel};

fn plain() -> Vec<u8> {
    let dir = std::env::var("TRACEKIT_CORPUS").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpus").to_string()
    });
    let mut pcaps: Vec<Vec<u8>> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
        .filter_map(|p| std::fs::read(p).ok())
        .collect();
    if pcaps.is_empty() {
        pcaps.push(
            (0..1_000_000u32)
                .flat_map(|i| format!("line {i} of generated text {}\n", i % 97).into_bytes())
                .collect(),
        );
    }
    let mut out = Vec::new();
    while out.len() < 40 << 20 {
        for p in &pcaps {
            out.extend_from_slice(p);
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let data = plain();
    let mut w = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    w.write_all(&data).unwrap();
    let packed = w.finish().unwrap();
    let mut group = c.benchmark_group("gunzip");
    group.throughput(Throughput::Bytes(data.len() as u64));
    group.sample_size(10);
    group.bench_function("flate2", |b| {
        b.iter(|| {
            let mut d = flate2::read::GzDecoder::new(&packed[..]);
            let mut buf = vec![0u8; 1 << 20];
            let mut total = 0;
            loop {
                let n = d.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                total += n;
            }
            black_box(total)
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
