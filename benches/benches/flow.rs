//! Flow benchmarks: tasks T10 (flow table) and T11 (flow table with TCP stream
//! reassembly) as `tracekit-bench` runs them, reading the file with the reader's own
//! loop, with the rows under them so that each layer's cost is a difference:
//!
//! - `flows/{full,snap96}/read`: the packets counted, nothing decoded;
//! - `flows/{full,snap96}/decode`: [`Decoded::new`] and the IP view;
//! - `flows/{full,snap96}/table`: [`FlowTable::add`] for every packet, no timeouts (as
//!   `tracekit-bench t10`);
//! - `flows/full/streams`: the table and [`TcpStreams`] beside it (as `t11`).
//!
//! Packets held in memory would not do: at full size every packet's headers are then a
//! miss to memory (decoding alone took 25 ms against 4 ms at 96 bytes), where the
//! reader's block has just been copied into cache.
//!
//! Inputs: the generator's trace, whole and cut to 96 bytes (`target/bench-data/`).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tracekit::decode::Decoded;
use tracekit::flow::{FlowConfig, FlowTable, StreamConfig, StreamHandler, TcpStreams};
use tracekit::{Error, Packet};
use tracekit_bench::inputs;

/// Runs `f` on every packet of `path`.
fn each(path: &str, mut f: impl FnMut(&Packet<'_>)) {
    let mut source = tracekit::open(path).expect("open input");
    source
        .try_for_each(|p| {
            f(p);
            Ok::<(), Error>(())
        })
        .expect("read input");
}

fn table() -> FlowTable {
    FlowTable::new(FlowConfig {
        idle_timeout_ns: 0,
        tunnels: false,
        ..FlowConfig::default()
    })
}

/// Counts what the streams deliver.
#[derive(Default)]
struct Bytes(u64);

impl StreamHandler for Bytes {
    fn data(&mut self, _flow: u64, _from_originator: bool, bytes: &[u8]) {
        self.0 += bytes.len() as u64;
    }
}

fn benches(c: &mut Criterion) {
    let inputs = [
        ("full", inputs::generated("gen.pcap", 262_144)),
        ("snap96", inputs::generated("gen-snap96.pcap", 96)),
    ];
    for (name, path) in &inputs {
        let path = path.as_str();
        let mut group = c.benchmark_group(format!("flows/{name}"));
        group.throughput(Throughput::Elements(inputs::packets()));
        group.sample_size(15);
        group.bench_function("read", |b| {
            b.iter(|| {
                let mut n = 0u64;
                each(path, |p| n += p.caplen() as u64);
                black_box(n)
            })
        });
        group.bench_function("decode", |b| {
            b.iter(|| {
                let mut n = 0u64;
                each(path, |p| {
                    let d = Decoded::new(p);
                    n += u64::from(d.ip_view().is_some());
                });
                black_box(n)
            })
        });
        group.bench_function("table", |b| {
            b.iter(|| {
                let mut t = table();
                let mut flows = 0u64;
                each(path, |p| {
                    t.add(p, &mut |_| flows += 1);
                });
                t.finish(&mut |_| flows += 1);
                black_box(flows)
            })
        });
        if *name == "full" {
            group.bench_function("streams", |b| {
                b.iter(|| {
                    let mut t = table();
                    let mut streams = TcpStreams::new(StreamConfig::default());
                    let mut bytes = Bytes::default();
                    let mut ended = Vec::new();
                    each(path, |p| {
                        let d = Decoded::new(p);
                        ended.clear();
                        let placed =
                            t.add_decoded(&d, p.ts(), p.wire_len(), 0, &mut |r| ended.push(r.id));
                        for id in &ended {
                            streams.end(*id, &mut bytes);
                        }
                        if let Some(placed) = placed {
                            streams.segment(placed, &d, &mut bytes);
                        }
                    });
                    streams.finish(&mut bytes);
                    black_box(bytes.0)
                })
            });
        }
        group.finish();
    }
}

criterion_group!(flow_benches, benches);
criterion_main!(flow_benches);
