//! `tracekit anon`'s hot path with the file I/O out of the picture: the generated trace's
//! packets are loaded into memory once, then each iteration copies every packet into one
//! reused buffer (as `tracekit::copy_rewriting_while` does) and rewrites its addresses
//! with Crypto-PAn, starting from a fresh anonymiser (cold address cache), as one run
//! of the command does.
//!
//! - `anon/copy_only`: the copies alone, the floor under the others;
//! - `anon/zero`: checksums zeroed, as `compare.sh`'s row and traceanon 3 do;
//! - `anon/update`: checksums mended incrementally (the command's default).
//!
//! `benches/compare.sh`'s `anon` row runs the command beside traceanon on a file.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tracekit::LinkType;
use tracekit::anon::{Anonymizer, Checksums, Method, key_from_text};
use tracekit_bench::inputs::generated;

/// Every packet's bytes back to back, and each one's (end, link type, length on the wire).
struct Loaded {
    bytes: Vec<u8>,
    packets: Vec<(usize, LinkType, u32)>,
}

fn load(path: &str) -> Loaded {
    let mut source = tracekit::open(path).unwrap();
    let mut loaded = Loaded {
        bytes: Vec::new(),
        packets: Vec::new(),
    };
    while let Some(p) = source.next_packet().unwrap() {
        loaded.bytes.extend_from_slice(p.data());
        let meta = p.meta();
        loaded
            .packets
            .push((loaded.bytes.len(), meta.link, meta.wire_len));
    }
    loaded
}

/// Copies every packet into `buf` and hands it to `rewrite`.
fn each_packet(
    loaded: &Loaded,
    buf: &mut Vec<u8>,
    mut rewrite: impl FnMut(&mut [u8], LinkType, u32),
) {
    let mut start = 0;
    for &(end, link, wire_len) in &loaded.packets {
        buf.clear();
        buf.extend_from_slice(&loaded.bytes[start..end]);
        rewrite(buf, link, wire_len);
        start = end;
    }
}

fn anon(c: &mut Criterion) {
    let loaded = load(&generated("gen.pcap", 262_144));
    let key = key_from_text("tracekit-compare-key-32-bytes-ok");
    let mut group = c.benchmark_group("anon");
    group.throughput(Throughput::Bytes(loaded.bytes.len() as u64));
    group.sample_size(20);
    let mut buf = Vec::new();
    group.bench_function("copy_only", |b| {
        b.iter(|| {
            each_packet(&loaded, &mut buf, |data, _, _| {
                black_box(data);
            })
        })
    });
    for (name, checksums) in [("zero", Checksums::Zero), ("update", Checksums::Update)] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut anon = Anonymizer::new(Method::cryptopan(&key), true, true, checksums);
                each_packet(&loaded, &mut buf, |data, link, wire_len| {
                    anon.rewrite(data, link, wire_len);
                });
                black_box(anon.stats())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, anon);
criterion_main!(benches);
