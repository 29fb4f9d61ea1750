//! Reading benchmarks, run side by side in one criterion run:
//!
//! - `t1_count/*`: task T1 (count packets and captured bytes) on a page-cached synthetic
//!   TCP trace: tracekit with its default read mode, tracekit forced to mmap and to
//!   `read()`, and libpcap (`pcap_open_offline` + `pcap_next_ex`, the loop of the peer
//!   harness's libpcap T1) through its C API.
//! - two inputs: `tcp.pcap` (full-size packets, mixed sizes) and `tcp-snap96.pcap` (the
//!   same packets cut to 96 bytes, where per-packet cost dominates).
//!
//! Inputs are generated into `target/bench-data/` on first use (or taken from
//! `TRACEKIT_BENCH_DIR`).

use std::ffi::{CString, c_char, c_int, c_void};
use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tracekit::{CreateOptions, ReadMode, TsResolution};
use tracekit_bench::tasks::t1_count;
use tracekit_bench::traffic::{GenOptions, generate};

/// Packets in each input. `cargo bench` passes `--bench`; under `cargo test` the
/// benchmarks run once as a smoke test, on small inputs.
fn packets() -> u64 {
    if std::env::args().any(|a| a == "--bench") {
        400_000
    } else {
        2_000
    }
}

fn bench_dir() -> PathBuf {
    std::env::var("TRACEKIT_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-data"))
}

fn input(name: &str, snaplen: u32) -> String {
    let dir = bench_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{}-{name}", packets()));
    if !path.exists() {
        let options = CreateOptions {
            ts_resolution: Some(TsResolution::MICRO),
            snaplen: Some(snaplen),
            ..CreateOptions::default()
        };
        let tmp = dir.join(format!("partial-{name}"));
        let mut sink = tracekit::create(tmp.to_str().unwrap(), &options).unwrap();
        let gen_options = GenOptions {
            packets: packets(),
            ..GenOptions::default()
        };
        generate(gen_options, |p| {
            sink.write_packet(&p.snapped(snaplen as usize)).unwrap()
        });
        sink.finish().unwrap();
        std::fs::rename(tmp, &path).unwrap();
    }
    path.to_str().unwrap().to_string()
}

#[repr(C)]
struct PcapPkthdr {
    ts_sec: i64,
    ts_usec: i64,
    caplen: u32,
    len: u32,
}

#[link(name = "pcap")]
unsafe extern "C" {
    fn pcap_open_offline(fname: *const c_char, errbuf: *mut c_char) -> *mut c_void;
    fn pcap_next_ex(p: *mut c_void, hdr: *mut *mut PcapPkthdr, data: *mut *const u8) -> c_int;
    fn pcap_close(p: *mut c_void);
}

/// Task T1 through libpcap, as the peer harness's libpcap implementation does it.
fn libpcap_t1(path: &str) -> (u64, u64) {
    let name = CString::new(path).unwrap();
    let mut errbuf = [0 as c_char; 256];
    // SAFETY: name is NUL-terminated; errbuf has PCAP_ERRBUF_SIZE (256) bytes.
    let p = unsafe { pcap_open_offline(name.as_ptr(), errbuf.as_mut_ptr()) };
    assert!(!p.is_null(), "libpcap could not open {path}");
    let (mut packets, mut bytes) = (0u64, 0u64);
    loop {
        let mut hdr: *mut PcapPkthdr = std::ptr::null_mut();
        let mut data: *const u8 = std::ptr::null();
        // SAFETY: p is an open handle; hdr and data are out-pointers libpcap fills.
        let rc = unsafe { pcap_next_ex(p, &mut hdr, &mut data) };
        if rc != 1 {
            break;
        }
        packets += 1;
        // SAFETY: on rc == 1 libpcap points hdr at a valid header until the next call.
        bytes += u64::from(unsafe { (*hdr).caplen });
    }
    // SAFETY: p came from pcap_open_offline and is closed once.
    unsafe { pcap_close(p) };
    (packets, bytes)
}

fn t1(c: &mut Criterion) {
    for (name, snaplen) in [("tcp.pcap", 65535u32), ("tcp-snap96.pcap", 96)] {
        let path = input(name, snaplen);
        let size = std::fs::metadata(&path).unwrap().len();
        // Same answer from every implementation, or the comparison means nothing.
        let expected = libpcap_t1(&path);
        for mode in [ReadMode::Auto, ReadMode::Mmap, ReadMode::Read] {
            assert_eq!(t1_count(&path, mode).unwrap(), expected);
        }
        let mut group = c.benchmark_group(format!("t1_count/{name}"));
        group.sample_size(20);
        group.throughput(Throughput::Bytes(size));
        group.bench_function("libpcap", |b| b.iter(|| black_box(libpcap_t1(&path))));
        group.bench_function("tracekit", |b| {
            b.iter(|| black_box(t1_count(&path, ReadMode::Auto).unwrap()))
        });
        group.bench_function("tracekit_mmap", |b| {
            b.iter(|| black_box(t1_count(&path, ReadMode::Mmap).unwrap()))
        });
        group.bench_function("tracekit_read", |b| {
            b.iter(|| black_box(t1_count(&path, ReadMode::Read).unwrap()))
        });
        group.finish();
    }
}

/// The same packets in each format, written by tracekit from the pcap input.
fn same_packets_in(format: &str, pcap: &str) -> String {
    let path = format!("{}.{format}", pcap.trim_end_matches(".pcap"));
    if !Path::new(&path).exists() {
        let partial = format!("{path}.partial");
        let mut source = tracekit::open(pcap).unwrap();
        let options = CreateOptions {
            format: tracekit::Format::from_name(format),
            ..CreateOptions::default()
        };
        let mut sink = tracekit::create(&partial, &options).unwrap();
        tracekit::copy(&mut source, &mut sink, |_| {})
            .map_err(|(e, _)| format!("{e:?}"))
            .unwrap();
        sink.finish().unwrap();
        std::fs::rename(partial, &path).unwrap();
    }
    format!("{format}:{path}")
}

/// Reading the same packets from pcap, pcapng and ERF (the bound: pcapng and ERF
/// within 15 % of pcap).
fn formats(c: &mut Criterion) {
    for (name, snaplen) in [("tcp.pcap", 65535u32), ("tcp-snap96.pcap", 96)] {
        let pcap = input(name, snaplen);
        let expected = t1_count(&pcap, ReadMode::Auto).unwrap();
        let mut group = c.benchmark_group(format!("read_format/{name}"));
        group.sample_size(20);
        group.throughput(Throughput::Elements(expected.0));
        for format in ["pcap", "pcapng", "erf"] {
            let uri = if format == "pcap" {
                pcap.clone()
            } else {
                same_packets_in(format, &pcap)
            };
            // ERF pads truncated packets to 8 bytes: same packet count, bytes may differ
            assert_eq!(
                t1_count(&uri, ReadMode::Auto).unwrap().0,
                expected.0,
                "{uri}"
            );
            group.bench_function(format, |b| {
                b.iter(|| black_box(t1_count(&uri, ReadMode::Auto).unwrap()))
            });
        }
        group.finish();
    }
}

/// The filter VM: T1 with `tcp port 80 or udp port 53` against T1 without a filter, on
/// the same packets (the difference is the VM's cost per packet).
fn filter(c: &mut Criterion) {
    for (name, snaplen) in [("tcp.pcap", 65535u32), ("tcp-snap96.pcap", 96)] {
        let path = input(name, snaplen);
        let mut group = c.benchmark_group(format!("filter/{name}"));
        group.sample_size(20);
        group.throughput(Throughput::Elements(
            t1_count(&path, ReadMode::Auto).unwrap().0,
        ));
        group.bench_function("no_filter", |b| {
            b.iter(|| black_box(t1_count(&path, ReadMode::Auto).unwrap()))
        });
        let expr = "tcp port 80 or udp port 53";
        group.bench_function("tcp_port_80_or_udp_port_53", |b| {
            b.iter(|| black_box(tracekit_bench::tasks::t1_count_filtered(&path, expr).unwrap()))
        });
        group.finish();
    }
}

criterion_group!(benches, t1, formats, filter);
criterion_main!(benches);
