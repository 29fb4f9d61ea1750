//! bzip2 decompression: one `bzip2 -9`-style stream of trace data (the corpus' pcap
//! files, repeated to 8 MiB: nine 900 kB blocks) read to its end through
//! `Input::decompress_with`, sequentially (libbz2 on one thread) and block-parallel
//! (`parbzip2`) with 2 and 4 workers. Throughput is in decompressed bytes.

use std::hint::black_box;
use std::io::{Cursor, Write};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tracekit_io::{Compression, Input};

/// The corpus' pcap files, concatenated and repeated to `len` bytes.
fn trace_data(len: usize) -> Vec<u8> {
    let mut files: Vec<_> = std::fs::read_dir(tracekit_testdata::corpus_dir())
        .expect("the corpus (../shared/corpus or $TRACEKIT_CORPUS)")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pcap"))
        .collect();
    files.sort();
    let all: Vec<u8> = files
        .iter()
        .flat_map(|f| std::fs::read(f).unwrap())
        .collect();
    all.iter().copied().cycle().take(len).collect()
}

/// Reads `packed` to its end; the number of bytes.
fn read_all(packed: &[u8], threads: usize) -> u64 {
    let raw = Input::from_reader(Cursor::new(packed.to_vec()));
    let mut input = Input::decompress_with(raw, Compression::Bzip2, threads).unwrap();
    let mut total = 0u64;
    loop {
        let have = input.fill(1).unwrap();
        if have == 0 {
            return total;
        }
        black_box(input.available()[have - 1]);
        input.consume(have);
        total += have as u64;
    }
}

fn bzip2_read(c: &mut Criterion) {
    let data = trace_data(8 << 20);
    let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::best());
    e.write_all(&data).unwrap();
    let packed = e.finish().unwrap();
    let mut group = c.benchmark_group("bzip2_read/trace-8MiB-level9");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(data.len() as u64));
    for (name, threads) in [("sequential", 1), ("parallel-2", 2), ("parallel-4", 4)] {
        assert_eq!(read_all(&packed, threads), data.len() as u64);
        group.bench_function(name, |b| b.iter(|| read_all(&packed, threads)));
    }
    group.finish();
}

criterion_group!(benches, bzip2_read);
criterion_main!(benches);
