//! Reading benchmarks, run side by side in one criterion run:
//!
//! - `t1_count/*`: task T1 (count packets and captured bytes) on a page-cached synthetic
//!   TCP trace: tracekit (`Source::try_for_each`) with its default read mode, forced to
//!   mmap and to `read()`, tracekit's `next_packet` loop, and libpcap (`pcap_open_offline` + `pcap_next_ex`, the loop of the peer
//!   harness's libpcap T1) through its C API.
//! - two inputs: `tcp.pcap` (full-size packets, mixed sizes) and `tcp-snap96.pcap` (the
//!   same packets cut to 96 bytes, where per-packet cost dominates).
//!
//! Inputs are generated into `target/bench-data/` on first use (or taken from
//! `TRACEKIT_BENCH_DIR`).

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tracekit::{CreateOptions, ReadMode};
use tracekit_bench::tasks::{t1_count, t1_count_next_packet};
use tracekit_bench::{inputs, libpcap};

fn input(name: &str, snaplen: u32) -> String {
    inputs::generated(name, snaplen)
}

fn libpcap_t1(path: &str) -> (u64, u64) {
    libpcap::count(path)
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
        assert_eq!(t1_count_next_packet(&path).unwrap(), expected);
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
        group.bench_function("tracekit_next_packet", |b| {
            b.iter(|| black_box(t1_count_next_packet(&path).unwrap()))
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
