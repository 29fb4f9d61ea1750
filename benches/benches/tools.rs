//! Writing and the trace tools' hot paths, with the disk out of the picture (every output
//! goes to `io::sink()`), on the generated trace at full size and cut to 96 bytes:
//!
//! - `write_format/*`: read the trace and write it as pcap, pcapng and ERF (`read_only` is
//!   the same loop without a writer), and copy it as `tracekit convert` does into a
//!   `Sink` on /dev/null (`sink_copy_while` packet by packet, `sink_copy_until` with
//!   verbatim runs, written on the reading thread as /dev/null takes them at once, and
//!   `sink_copy_until_handed_over` with the runs handed to the output's writer thread, as
//!   they are for a file or a pipe), and into a file (`sink_copy_until_shared_into_file`,
//!   the runs handed over in the reader's windows, and `sink_copy_until_mapped_into_file`,
//!   the input mapped once writes are slow and the runs handed over in the mapping);
//! - `merge/*`: `tracekit::merge::Merge` over the trace's two halves, written as pcap,
//!   and the same with `--dedup`'s duplicate check;
//! - `analysis/*`: the Ports table (`tracekit ports`) and the protocol breakdown
//!   (`tracekit stats`).
//!
//! `benches/compare.sh` runs `tracekit merge` and `tracekit split` beside mergecap and
//! editcap on files.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tracekit::analysis::{Ports, Protocols};
use tracekit::erf::{ErfWriter, ErfWriterOptions};
use tracekit::merge::{Dedup, Merge, MergeOptions};
use tracekit::pcap::{PcapWriter, PcapWriterOptions};
use tracekit::pcapng::{PcapngWriter, PcapngWriterOptions};
use tracekit::{CreateOptions, TsResolution};
use tracekit_bench::inputs::{dir, generated, packets};

fn inputs() -> [(&'static str, String); 2] {
    [
        ("full", generated("gen.pcap", 262_144)),
        ("snap96", generated("gen-snap96.pcap", 96)),
    ]
}

/// The first and second half of `path`'s packets, as two files (made once).
fn halves(path: &str, name: &str) -> [String; 2] {
    let names = [0, 1].map(|h| {
        dir()
            .join(format!("{}-{name}-half{h}.pcap", packets()))
            .to_str()
            .unwrap()
            .to_string()
    });
    if !std::path::Path::new(&names[1]).exists() {
        let options = CreateOptions {
            ts_resolution: Some(TsResolution::MICRO),
            ..Default::default()
        };
        let mut source = tracekit::open(path).unwrap();
        let mut sinks = names
            .clone()
            .map(|n| tracekit::create(&n, &options).unwrap());
        let half = packets() / 2;
        let mut n = 0;
        while let Some(p) = source.next_packet().unwrap() {
            sinks[usize::from(n >= half)].write_packet(&p).unwrap();
            n += 1;
        }
        for s in sinks {
            s.finish().unwrap();
        }
    }
    names
}

fn pcap_options() -> PcapWriterOptions {
    PcapWriterOptions {
        resolution: TsResolution::MICRO,
        ..PcapWriterOptions::default()
    }
}

fn write_format(c: &mut Criterion) {
    for (name, path) in inputs() {
        let bytes = std::fs::metadata(&path).unwrap().len();
        let mut group = c.benchmark_group(format!("write_format/{name}"));
        group.throughput(Throughput::Bytes(bytes));
        group.sample_size(10);
        group.bench_function("read_only", |b| {
            b.iter(|| {
                let mut s = tracekit::open(&path).unwrap();
                let mut n = 0u64;
                while let Some(p) = s.next_packet().unwrap() {
                    n += black_box(p.caplen()) as u64;
                }
                n
            })
        });
        group.bench_function("pcap", |b| {
            b.iter(|| {
                let mut s = tracekit::open(&path).unwrap();
                let mut w = PcapWriter::new(std::io::sink(), pcap_options()).unwrap();
                while let Some(p) = s.next_packet().unwrap() {
                    w.write_packet(&p).unwrap();
                }
                w.finish_into_inner().unwrap().1.packets
            })
        });
        // The same, with the packet borrowed where `next_packet` put it (`try_for_each`):
        // moved into a binding of its own (above) it is copied right after the reader
        // stored it, and that copy waits for the stores (see `tracekit::copy_while`).
        group.bench_function("pcap_borrowed", |b| {
            b.iter(|| {
                let mut s = tracekit::open(&path).unwrap();
                let mut w = PcapWriter::new(std::io::sink(), pcap_options()).unwrap();
                s.try_for_each(|p| w.write_packet(p)).unwrap();
                w.finish_into_inner().unwrap().1.packets
            })
        });
        // What `tracekit convert` does, into /dev/null: a `Sink` (its writer thread, its
        // count of packets out) fed packet by packet (`copy_while`), and by the verbatim
        // runs a pcap input gets from `copy_until` when the output keeps its byte order
        // and resolution.
        let convert_options = CreateOptions {
            format: Some(tracekit::Format::Pcap),
            ts_resolution: Some(TsResolution::MICRO),
            ..Default::default()
        };
        group.bench_function("sink_copy_while", |b| {
            b.iter(|| {
                let mut s = tracekit::open(&path).unwrap();
                let mut sink = tracekit::create("/dev/null", &convert_options).unwrap();
                let n = tracekit::copy_while(&mut s, &mut sink, |_| true).unwrap();
                sink.finish().unwrap();
                n
            })
        });
        group.bench_function("sink_copy_until", |b| {
            b.iter(|| {
                let mut s = tracekit::open(&path).unwrap();
                let mut sink = tracekit::create("/dev/null", &convert_options).unwrap();
                let n = tracekit::copy_until(&mut s, &mut sink, || true).unwrap();
                sink.finish().unwrap();
                n
            })
        });
        group.bench_function("sink_copy_until_handed_over", |b| {
            b.iter(|| {
                let mut s = tracekit::open(&path).unwrap();
                let mut sink = tracekit::create("/dev/null", &convert_options).unwrap();
                let now = std::time::Duration::ZERO;
                let n = tracekit::copy_until_handing_over_after(&mut s, &mut sink, || true, now, 0)
                    .unwrap();
                sink.finish().unwrap();
                n
            })
        });
        // Into a file (its page cache), as `tracekit convert` writes one: the runs
        // handed to the writer thread in the reader's shared windows (copied out of the
        // input's page cache first), and in a mapping of the input made when writes turn
        // out slow (`copy_until` maps for records of fewer than 256 bytes on average).
        let file = dir().join("write_format-out.pcap");
        let file = file.to_str().unwrap();
        for (name, map_below) in [
            ("sink_copy_until_shared_into_file", 0),
            ("sink_copy_until_mapped_into_file", usize::MAX),
        ] {
            group.bench_function(name, |b| {
                b.iter(|| {
                    let mut s = tracekit::open(&path).unwrap();
                    let mut sink = tracekit::create(file, &convert_options).unwrap();
                    let slow = std::time::Duration::from_micros(50);
                    let n = tracekit::copy_until_handing_over_after(
                        &mut s,
                        &mut sink,
                        || true,
                        slow,
                        map_below,
                    )
                    .unwrap();
                    sink.finish().unwrap();
                    n
                })
            });
        }
        group.bench_function("pcapng", |b| {
            b.iter(|| {
                let mut s = tracekit::open(&path).unwrap();
                let mut w =
                    PcapngWriter::new(std::io::sink(), PcapngWriterOptions::default()).unwrap();
                while let Some(p) = s.next_packet().unwrap() {
                    w.write_packet(&p).unwrap();
                }
                w.finish_into_inner().unwrap().1.packets
            })
        });
        group.bench_function("erf", |b| {
            b.iter(|| {
                let mut s = tracekit::open(&path).unwrap();
                let mut w = ErfWriter::new(std::io::sink(), ErfWriterOptions::default());
                while let Some(p) = s.next_packet().unwrap() {
                    w.write_packet(&p).unwrap();
                }
                w.finish_into_inner().unwrap().1.packets
            })
        });
        group.finish();
    }
}

fn merge(c: &mut Criterion) {
    for (name, path) in inputs() {
        let [a, b] = halves(&path, name);
        let bytes = std::fs::metadata(&path).unwrap().len();
        let mut group = c.benchmark_group(format!("merge/{name}"));
        group.throughput(Throughput::Bytes(bytes));
        group.sample_size(10);
        let run = |dedup: bool| {
            let sources = vec![tracekit::open(&a).unwrap(), tracekit::open(&b).unwrap()];
            let mut m = Merge::new(sources, MergeOptions::default());
            let mut d = dedup.then(|| Dedup::new(Dedup::DEFAULT_WINDOW));
            let mut w = PcapWriter::new(std::io::sink(), pcap_options()).unwrap();
            while let Some((_, p)) = m.next_packet() {
                if let Some(d) = d.as_mut()
                    && d.is_duplicate(&p)
                {
                    continue;
                }
                w.write_packet(&p).unwrap();
            }
            w.finish_into_inner().unwrap().1.packets
        };
        assert_eq!(run(false), packets());
        group.bench_function("two_halves", |bch| bch.iter(|| black_box(run(false))));
        group.bench_function("two_halves_dedup", |bch| bch.iter(|| black_box(run(true))));
        group.finish();
    }
}

fn analysis(c: &mut Criterion) {
    let (_, path) = inputs().into_iter().nth(1).unwrap();
    let mut group = c.benchmark_group("analysis/snap96");
    group.sample_size(10);
    group.bench_function("ports", |b| {
        let mut ports = Ports::new();
        b.iter(|| {
            let mut s = tracekit::open(&path).unwrap();
            while let Some(p) = s.next_packet().unwrap() {
                ports.add(&p);
            }
            ports.packets()
        })
    });
    group.bench_function("protocols", |b| {
        b.iter(|| {
            let mut s = tracekit::open(&path).unwrap();
            let mut protocols = Protocols::default();
            while let Some(p) = s.next_packet().unwrap() {
                protocols.add(&p);
            }
            protocols.packets
        })
    });
    group.finish();
}

criterion_group!(benches, write_format, merge, analysis);
criterion_main!(benches);
