//! `PacketBatcher::push` over the packets of a corpus file held in memory: every field
//! (the default export) and the six default fields of `tracekit fields`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tracekit::OwnedPacket;
use tracekit_decode::Decoded;
use tracekit_decode::fields::Field;
use tracekit_export::PacketBatcher;

fn packets() -> Vec<OwnedPacket> {
    let path = tracekit_testdata::corpus("ndpi__1kxun.pcap");
    let mut source = tracekit::open(path.to_str().expect("UTF-8 path")).expect("corpus file");
    let mut out = Vec::new();
    while let Some(p) = source.next_packet().expect("readable") {
        out.push(p.to_owned());
    }
    out
}

fn bench(c: &mut Criterion) {
    let packets = packets();
    let mut group = c.benchmark_group("PacketBatcher::push");
    group.throughput(Throughput::Elements(packets.len() as u64));
    let sets: [(&str, &[Field]); 2] = [
        ("all fields", Field::ALL),
        (
            "six fields",
            &[
                Field::FrameNumber,
                Field::FrameTimeEpoch,
                Field::IpSrc,
                Field::IpDst,
                Field::IpProto,
                Field::FrameLen,
            ],
        ),
    ];
    for (name, fields) in sets {
        group.bench_function(name, |b| {
            let mut batcher = PacketBatcher::new(fields, 8192);
            b.iter(|| {
                let mut rows = 0;
                for (i, p) in packets.iter().enumerate() {
                    let p = p.as_packet();
                    if let Some(batch) = batcher.push(i as u64 + 1, &p, &Decoded::new(&p)) {
                        rows += batch.num_rows();
                    }
                }
                rows + batcher.finish().map_or(0, |b| b.num_rows())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
