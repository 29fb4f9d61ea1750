//! Compressed traces, side by side in one run:
//!
//! - `read_compressed/*`: task T1 on the same packets compressed with each codec by
//!   tracekit, and gzip written by a single-stream encoder (`gzip -6`-like, flate2) that
//!   tracekit can only read sequentially; tracekit's own gzip with 1 and 2 threads.
//! - `write_compressed/*`: writing those packets as gzip level 6 and zstd level 3 with
//!   1 and 2 threads (task T8 is the gzip one).
//!
//! The input (50,000 generated packets, about 29 MB) is made in `target/bench-data/`.

use std::hint::black_box;
use std::io::Write;
use std::path::{Path, PathBuf};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tracekit::{CreateOptions, ReadMode, TsResolution};
use tracekit_bench::tasks::t1_count_with;
use tracekit_bench::traffic::{GenOptions, generate};

fn dir() -> PathBuf {
    std::env::var("TRACEKIT_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-data"))
}

fn packets() -> u64 {
    if std::env::args().any(|a| a == "--bench") {
        50_000
    } else {
        500
    }
}

fn base() -> PathBuf {
    let d = dir();
    std::fs::create_dir_all(&d).unwrap();
    let path = d.join(format!("{}-compress-base.pcap", packets()));
    if !path.exists() {
        let tmp = d.join("partial-compress-base.pcap");
        let options = CreateOptions {
            ts_resolution: Some(TsResolution::MICRO),
            ..Default::default()
        };
        let mut sink = tracekit::create(tmp.to_str().unwrap(), &options).unwrap();
        generate(
            GenOptions {
                packets: packets(),
                ..GenOptions::default()
            },
            |p| sink.write_packet(p).unwrap(),
        );
        sink.finish().unwrap();
        std::fs::rename(tmp, &path).unwrap();
    }
    path
}

/// `base` written through tracekit into `name` (codec from the extension).
fn written(base: &Path, name: &str, threads: usize) -> PathBuf {
    let out = dir().join(format!("{}-{name}", packets()));
    if !out.exists() {
        convert(base, &out, threads, None);
    }
    out
}

fn convert(base: &Path, out: &Path, threads: usize, level: Option<i32>) -> u64 {
    let mut source = tracekit::open(base.to_str().unwrap()).unwrap();
    let options = CreateOptions {
        threads,
        level,
        ..Default::default()
    };
    let mut sink = tracekit::create(out.to_str().unwrap(), &options).unwrap();
    tracekit::copy(&mut source, &mut sink, |_| {})
        .map_err(|(e, _)| format!("{e:?}"))
        .unwrap();
    sink.finish().unwrap().bytes
}

fn read_compressed(c: &mut Criterion) {
    let base = base();
    let size = std::fs::metadata(&base).unwrap().len();
    let expected = t1_count_with(base.to_str().unwrap(), ReadMode::Auto, 0).unwrap();
    // A single-stream gzip file as gzip -6 writes it.
    let single = dir().join(format!("{}-single-stream.pcap.gz", packets()));
    if !single.exists() {
        let mut e = flate2::write::GzEncoder::new(
            std::fs::File::create(&single).unwrap(),
            flate2::Compression::new(6),
        );
        e.write_all(&std::fs::read(&base).unwrap()).unwrap();
        e.finish().unwrap();
    }
    let mut group = c.benchmark_group("read_compressed");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(size));
    let mut cases: Vec<(String, PathBuf, usize)> = vec![
        ("gzip_single_stream".into(), single, 0),
        (
            "gzip_tracekit_1_thread".into(),
            written(&base, "tk.pcap.gz", 0),
            1,
        ),
        (
            "gzip_tracekit_2_threads".into(),
            written(&base, "tk.pcap.gz", 0),
            2,
        ),
    ];
    for ext in ["bz2", "zst", "xz", "lz4"] {
        cases.push((
            ext.to_string(),
            written(&base, &format!("tk.pcap.{ext}"), 0),
            0,
        ));
    }
    for (name, path, threads) in cases {
        let uri = path.to_str().unwrap().to_string();
        assert_eq!(
            t1_count_with(&uri, ReadMode::Auto, threads).unwrap(),
            expected,
            "{name}"
        );
        group.bench_function(name, |b| {
            b.iter(|| black_box(t1_count_with(&uri, ReadMode::Auto, threads).unwrap()))
        });
    }
    group.finish();
}

fn write_compressed(c: &mut Criterion) {
    let base = base();
    let size = std::fs::metadata(&base).unwrap().len();
    let mut group = c.benchmark_group("write_compressed");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(size));
    for (ext, level) in [("gz", 6), ("zst", 3)] {
        for threads in [1, 2] {
            let out = dir().join(format!("bench-out.pcap.{ext}"));
            group.bench_function(format!("{ext}_level{level}_{threads}_thread"), |b| {
                b.iter(|| black_box(convert(&base, &out, threads, Some(level))))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, read_compressed, write_compressed);
criterion_main!(benches);
