//! Records per second through a DAG receive stream of the software card against the
//! same records read from an ERF file with tracekit's file reader (the goal: the capture
//! path costs at most 1.2× the file path per record).
//!
//! Input: the corpus's `libtrace__fragtest.erf.gz` (10,000 records, mostly cut to
//! 64-80 bytes, where per-record cost dominates) decompressed and repeated 10 times:
//! 100,000 records. Each iteration times the reading of every record only: opening the
//! card (or the file) is outside the timed part. The card's own thread copies records
//! into the stream as a card's DMA would, on another core.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tracekit_core::CaptureSource;
use tracekit_dag::DagOptions;
use tracekit_erf::ErfReader;

const COPIES: usize = 10;

fn input(dir: &Path) -> (PathBuf, u64) {
    let gz = tracekit_testdata::corpus("libtrace__fragtest.erf.gz");
    let mut input = tracekit_io::Input::open(&gz, Default::default()).unwrap();
    input.fill(tracekit_io::Compression::MAGIC_LEN).unwrap();
    let c = tracekit_io::Compression::detect(input.available());
    let mut input = tracekit_io::Input::decompress_with(input, c, 1).unwrap();
    let mut bytes = Vec::new();
    while input.fill(1 << 16).unwrap() > 0 {
        let n = input.available().len();
        bytes.extend_from_slice(input.available());
        input.consume(n);
    }
    let path = dir.join("fragtest-x10.erf");
    std::fs::write(&path, bytes.repeat(COPIES)).unwrap();
    let records = count(&mut ErfReader::open(&path).unwrap()).0;
    (path, records)
}

/// Records and captured bytes.
fn count(s: &mut impl CaptureSource) -> (u64, u64) {
    let (mut n, mut bytes) = (0u64, 0u64);
    while let Some(p) = s.next_packet().unwrap() {
        n += 1;
        bytes += p.caplen() as u64;
    }
    (n, bytes)
}

/// The software card playing `path` (one device, opened again for each run), with a
/// stream buffer of `buffer` bytes.
fn card(path: &Path, buffer: u32, min_data: u64) -> tracekit_dag::DagStream {
    const DEV: &str = "/dev/dag100";
    let set = |k: &str, v: &str| assert!(dag_sys::emulator::set_option(DEV, k, Some(v)));
    set("DAGEMU_INPUT", path.to_str().unwrap());
    set("DAGEMU_END", "1");
    set("DAGEMU_BUFFER", &buffer.to_string());
    let options = DagOptions {
        min_data,
        ..Default::default()
    };
    tracekit_dag::open(&format!("dag:{DEV}"), &options).unwrap()
}

fn capture_vs_file(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let (path, records) = input(dir.path());
    let expected = count(&mut ErfReader::open(&path).unwrap());
    assert_eq!(
        count(&mut card(&path, 4 << 20, 16)),
        expected,
        "same records both ways"
    );
    let mut group = c.benchmark_group("dag_vs_erf_file");
    group.sample_size(30);
    group.throughput(Throughput::Elements(records));
    group.bench_function("erf_file", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let mut r = ErfReader::open(&path).unwrap();
                let t = Instant::now();
                black_box(count(&mut r));
                total += t.elapsed();
            }
            total
        })
    });
    // tracekit's capture path alone: the card has received every record (its buffer
    // holds them all) before the clock starts, as after a burst.
    group.bench_function("dag_stream_backlog", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let mut s = card(&path, 32 << 20, 16);
                while dag_sys::emulator::records_received(s.raw_fd()) < records {
                    std::thread::sleep(Duration::from_micros(200));
                }
                let t = Instant::now();
                black_box(count(&mut s));
                total += t.elapsed();
            }
            total
        })
    });
    // Reading while the card's thread is still copying records in (4 MiB buffer): this
    // adds the hand-off between the card's thread and the reader (its wake-ups), with
    // libtrace's minimum data (one record header) and with libpcap's (64 KiB).
    for (name, min_data) in [("dag_stream_live", 16u64), ("dag_stream_live_64k", 65536)] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let mut s = card(&path, 4 << 20, min_data);
                    let t = Instant::now();
                    black_box(count(&mut s));
                    total += t.elapsed();
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group!(benches, capture_vs_file);
criterion_main!(benches);
