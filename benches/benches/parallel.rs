//! `tracekit::parallel` benchmarks, side by side in one criterion run:
//!
//! - `parallel_overhead/*`: a worker that only counts, against the plain single-threaded
//!   loop: through `Parallel` with one worker (run by the reader thread: the machinery's
//!   fixed cost), and with two workers where the reader's takes no share (`dealt_1`:
//!   every packet dealt to a worker thread, so the difference per packet is what dealing
//!   costs: choosing, position lists, hand-over, lending from shared buffers).
//! - `parallel_ports/*` and `parallel_scans/*`: the libtrace paper's Ports and Scans
//!   analyses on one thread, and through `Parallel` with 1 and 2 workers (2 threads: the
//!   reader runs worker 0 on its share).
//!   `blocks_2`: 2 workers taking turns at the input's buffers
//!   ([`Distribution::Blocks`]), each reading and processing its own.
//! - `parallel_flows/*`: the flow table (`tracekit-bench t10`) on one thread and on 2
//!   workers.
//! - `parallel_share/*`: Ports and Scans on 2 workers with the reader's share from 0 to
//!   0.3 (the default is 0.09).
//!
//! Inputs: the generator's trace at full size and cut to 96 bytes (`target/bench-data/`).

use std::collections::{HashMap, HashSet};
use std::hint::black_box;
use std::net::IpAddr;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tracekit::analysis::Ports;
use tracekit::decode::Decoded;
use tracekit::flow::{FlowConfig, FlowTable};
use tracekit::parallel::{Distribution, Emit, Parallel, Worker};
use tracekit::{Error, Packet};
use tracekit_bench::inputs;

struct Count(u64, u64);

impl Worker for Count {
    type Item = ();
    fn packet(&mut self, p: &Packet<'_>, _: &mut Emit<'_, ()>) -> Result<(), Error> {
        self.0 += 1;
        self.1 += p.caplen() as u64;
        Ok(())
    }
}

struct PortsWorker(Ports);

impl Worker for PortsWorker {
    type Item = ();
    fn packet(&mut self, p: &Packet<'_>, _: &mut Emit<'_, ()>) -> Result<(), Error> {
        self.0.add(p);
        Ok(())
    }
}

#[derive(Default)]
struct Scans(HashMap<IpAddr, HashSet<(IpAddr, u16)>>);

impl Worker for Scans {
    type Item = ();
    fn packet(&mut self, p: &Packet<'_>, _: &mut Emit<'_, ()>) -> Result<(), Error> {
        let d = Decoded::new(p);
        if let (Some(tcp), Some(src), Some(dst)) = (d.tcp(), d.src_addr(), d.dst_addr())
            && tcp.syn()
            && !tcp.ack()
        {
            self.0.entry(src).or_default().insert((dst, tcp.dst_port()));
        }
        Ok(())
    }
}

/// The flow table (no timeouts, as in `tracekit-bench t10`): records handed out.
struct Flows(FlowTable, u64);

impl Flows {
    fn new() -> Flows {
        Flows(
            FlowTable::new(FlowConfig {
                idle_timeout_ns: 0,
                tunnels: false,
                ..FlowConfig::default()
            }),
            0,
        )
    }

    /// Flows ended and still open.
    fn flows(&self) -> u64 {
        self.1 + self.0.len() as u64
    }
}

impl Worker for Flows {
    type Item = ();
    fn packet(&mut self, p: &Packet<'_>, _: &mut Emit<'_, ()>) -> Result<(), Error> {
        let ended = &mut self.1;
        self.0.add(p, &mut |_| *ended += 1);
        Ok(())
    }
}

/// The plain loop with one worker value.
fn one_thread<W: Worker<Item = ()>>(path: &str, mut w: W) -> W {
    let mut source = tracekit::open(path).unwrap();
    let mut items = Vec::new();
    let mut seq = 0;
    while let Some(p) = source.next_packet().unwrap() {
        w.packet(&p, &mut Emit::new(seq, &mut items)).unwrap();
        seq += 1;
    }
    w
}

fn parallel<W: Worker>(path: &str, workers: usize, make: impl Fn(usize) -> W + Sync) -> Vec<W> {
    run(path, Parallel::new(workers), make)
}

fn run<W: Worker>(path: &str, run: Parallel, make: impl Fn(usize) -> W + Sync) -> Vec<W> {
    let mut source = tracekit::open(path).unwrap();
    run.run(&mut source, make, |_, _| {}).unwrap().workers
}

/// Workers taking turns at the input's buffers ([`Distribution::Blocks`]).
fn blocks(workers: usize) -> Parallel {
    Parallel::new(workers).distribution(Distribution::Blocks)
}

fn benches(c: &mut Criterion) {
    for (name, snaplen) in [("tcp.pcap", 65535u32), ("tcp-snap96.pcap", 96)] {
        let path = inputs::generated(name, snaplen);
        let packets = inputs::packets();
        // Same answers, or the comparison means nothing.
        let want = one_thread(&path, Count(0, 0));
        for got in [
            parallel(&path, 2, |_| Count(0, 0)),
            run(&path, blocks(2), |_| Count(0, 0)),
        ] {
            assert_eq!(got.iter().map(|w| w.0).sum::<u64>(), want.0);
            assert_eq!(got.iter().map(|w| w.1).sum::<u64>(), want.1);
        }

        let mut group = c.benchmark_group(format!("parallel_overhead/{name}"));
        group.sample_size(15);
        group.throughput(Throughput::Elements(packets));
        group.bench_function("one_thread", |b| {
            b.iter(|| black_box(one_thread(&path, Count(0, 0)).0))
        });
        group.bench_function("parallel_1", |b| {
            b.iter(|| black_box(parallel(&path, 1, |_| Count(0, 0)).len()))
        });
        group.bench_function("dealt_1", |b| {
            let all_dealt = || Parallel::new(2).reader_share(0.0);
            b.iter(|| black_box(run(&path, all_dealt(), |_| Count(0, 0)).len()))
        });
        group.finish();

        let mut group = c.benchmark_group(format!("parallel_ports/{name}"));
        group.sample_size(15);
        group.throughput(Throughput::Elements(packets));
        group.bench_function("one_thread", |b| {
            b.iter(|| black_box(one_thread(&path, PortsWorker(Ports::new())).0.checksum()))
        });
        for workers in [1usize, 2] {
            group.bench_function(format!("parallel_{workers}"), |b| {
                b.iter(|| {
                    black_box(parallel(&path, workers, |_| PortsWorker(Ports::new_written())).len())
                })
            });
        }
        group.bench_function("blocks_2", |b| {
            b.iter(|| black_box(run(&path, blocks(2), |_| PortsWorker(Ports::new_written())).len()))
        });
        group.finish();

        let mut group = c.benchmark_group(format!("parallel_flows/{name}"));
        group.sample_size(15);
        group.throughput(Throughput::Elements(packets));
        group.bench_function("one_thread", |b| {
            b.iter(|| black_box(one_thread(&path, Flows::new()).flows()))
        });
        group.bench_function("parallel_2", |b| {
            b.iter(|| {
                let w = parallel(&path, 2, |_| Flows::new());
                black_box(w.iter().map(Flows::flows).sum::<u64>())
            })
        });
        group.finish();

        let mut group = c.benchmark_group(format!("parallel_scans/{name}"));
        group.sample_size(15);
        group.throughput(Throughput::Elements(packets));
        group.bench_function("one_thread", |b| {
            b.iter(|| black_box(one_thread(&path, Scans::default()).0.len()))
        });
        for workers in [1usize, 2] {
            group.bench_function(format!("parallel_{workers}"), |b| {
                b.iter(|| black_box(parallel(&path, workers, |_| Scans::default()).len()))
            });
        }
        group.bench_function("blocks_2", |b| {
            b.iter(|| black_box(run(&path, blocks(2), |_| Scans::default()).len()))
        });
        group.finish();

        if snaplen == 96 {
            let mut group = c.benchmark_group(format!("parallel_share/{name}"));
            group.sample_size(15);
            group.throughput(Throughput::Elements(packets));
            for share in [0.0, 0.1, 0.2, 0.3] {
                let two = || Parallel::new(2).reader_share(share);
                group.bench_function(format!("ports_{share}"), |b| {
                    b.iter(|| {
                        black_box(run(&path, two(), |_| PortsWorker(Ports::new_written())).len())
                    })
                });
                group.bench_function(format!("scans_{share}"), |b| {
                    b.iter(|| black_box(run(&path, two(), |_| Scans::default()).len()))
                });
            }
            group.finish();
        }
    }
}

criterion_group!(parallel_benches, benches);
criterion_main!(parallel_benches);
