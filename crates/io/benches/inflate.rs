//! The deflate decoder of the parallel gzip reader (`tracekit_io::inflate`), one thread,
//! its two loops side by side in one run, against flate2 (zlib-rs) on the same stream:
//!
//! - `inflate/bytes`: from the stream's start, byte output (a chunk whose window is known);
//! - `inflate/markers`: from the first block start found after 1 MiB, 16-bit output with
//!   the unknown window as markers (what a worker does with every chunk but the first);
//! - `inflate/find`: the block finder's search from 64 positions spread over the stream;
//! - `inflate/flate2`: zlib-rs on the whole raw stream.
//!
//! The input is the corpus pcaps (`../shared/corpus` or `$TRACEKIT_CORPUS`) repeated to
//! about 24 MB, deflated at level 6; without the corpus, generated text.

use std::hint::black_box;
use std::io::Write;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tracekit_io::inflate_bench as bench;

mod common;

fn bench_inflate(c: &mut Criterion) {
    let data = common::corpus_repeated(24 << 20);
    let mut w = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(6));
    w.write_all(&data).unwrap();
    let packed = w.finish().unwrap();
    let mut bytes = Vec::new();
    assert_eq!(bench::bytes(&packed, &mut bytes), data.len());
    assert_eq!(&bytes[..data.len()], &data[..]);
    let mut marks = Vec::new();
    let tail = bench::markers(&packed, 8 << 20, &mut marks);
    assert!(tail > 0 && tail < data.len());

    let mut group = c.benchmark_group("inflate");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(data.len() as u64));
    group.bench_function("flate2", |b| {
        let mut buf = vec![0u8; 1 << 20];
        b.iter(|| {
            let d = flate2::read::DeflateDecoder::new(&packed[..]);
            black_box(common::count_read(d, &mut buf))
        })
    });
    group.bench_function("bytes", |b| {
        b.iter(|| black_box(bench::bytes(&packed, &mut bytes)))
    });
    group.throughput(Throughput::Bytes(tail as u64));
    group.bench_function("markers", |b| {
        b.iter(|| black_box(bench::markers(&packed, 8 << 20, &mut marks)))
    });
    // Two streams: from the start and from the block after 8 MiB, one after the other
    // and side by side.
    let mut whole = Vec::new();
    let head = bench::markers(&packed, 0, &mut whole);
    let mut outs = [Vec::new(), Vec::new()];
    let (pa, pb) = bench::markers_pair(&packed, 8 << 20, &mut outs);
    assert_eq!((pa, pb), (head, tail));
    assert_eq!(&outs[0][..pa], &whole[..head]);
    assert_eq!(&outs[1][..pb], &marks[..tail]);
    group.throughput(Throughput::Bytes((head + tail) as u64));
    group.bench_function("markers-two-after", |b| {
        b.iter(|| {
            black_box(bench::markers(&packed, 0, &mut whole));
            black_box(bench::markers(&packed, 8 << 20, &mut marks))
        })
    });
    group.bench_function("markers-two-paired", |b| {
        b.iter(|| black_box(bench::markers_pair(&packed, 8 << 20, &mut outs)))
    });
    group.finish();

    let mut group = c.benchmark_group("inflate");
    group.sample_size(10);
    let step = packed.len() * 8 / 64;
    group.bench_function("find", |b| {
        b.iter(|| {
            let mut sum = 0usize;
            for k in 0..64 {
                sum += bench::find(&packed, k * step).unwrap_or(0);
            }
            black_box(sum)
        })
    });
    group.finish();
}

criterion_group!(benches, bench_inflate);
criterion_main!(benches);
