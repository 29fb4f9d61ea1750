//! Hostile compressed traces, read through the facade: trailing data after the last
//! member/stream/frame, damage appended or injected anywhere, and error offsets that
//! say which stream they count in. Every packet before the damage must come out.

use std::io::Write;
use std::path::Path;

use proptest::prelude::*;
use tracekit::{Compression, OpenOptions, OwnedPacket};
use tracekit_io::{CompressOptions, ParallelWriter};
use tracekit_testdata::{corpus, manifest};

fn read_with(path: &Path, threads: usize) -> (Vec<OwnedPacket>, Option<tracekit::Error>) {
    let options = OpenOptions {
        threads,
        ..Default::default()
    };
    let mut s = match tracekit::open_with(path.to_str().unwrap(), &options) {
        Ok(s) => s,
        Err(e) => return (Vec::new(), Some(e)),
    };
    let mut out = Vec::new();
    loop {
        match s.next_packet() {
            Ok(Some(p)) => out.push(p.to_owned()),
            Ok(None) => return (out, None),
            Err(e) => return (out, Some(e)),
        }
    }
}

/// Every intact compressed corpus file, plus zstd and lz4 copies of a few made here.
fn compressed_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = manifest()
        .into_iter()
        .filter(|e| {
            ["gzip(", "bzip2(", "xz("]
                .iter()
                .any(|c| e.container.starts_with(c))
                && !e.container.contains("legacy")
                && !e.file.starts_with("corrupt__")
        })
        .map(|e| corpus(&e.file))
        .collect();
    for (name, ext) in [
        ("libtrace__vlan.pcap", "zst"),
        ("libtrace__100_packets.erf", "lz4"),
        ("zeek__pcapng-multi-interface.pcapng", "zst"),
        ("libtrace__100_packets.pcapng", "lz4"),
    ] {
        let out = dir.join(format!("{name}.{ext}"));
        let mut source = tracekit::open(corpus(name).to_str().unwrap()).unwrap();
        let options = tracekit::CreateOptions {
            ts_resolution: Some(source.ts_resolution()),
            threads: 2,
            ..Default::default()
        };
        let mut sink = tracekit::create(out.to_str().unwrap(), &options).unwrap();
        tracekit::copy(&mut source, &mut sink, |_| {})
            .map_err(|(e, _)| format!("{e:?}"))
            .unwrap();
        sink.finish().unwrap();
        files.push(out);
    }
    files
}

#[test]
fn trailing_bytes_after_a_compressed_trace_lose_no_packet() {
    let dir = tempfile::tempdir().unwrap();
    let files = compressed_files(dir.path());
    assert!(files.len() >= 12, "{files:?}");
    for file in files {
        let (clean, err) = read_with(&file, 1);
        assert!(err.is_none(), "{}: {err:?}", file.display());
        assert!(!clean.is_empty(), "{}", file.display());
        let bytes = std::fs::read(&file).unwrap();
        let name = file.file_name().unwrap().to_str().unwrap();
        for (k, garbage) in [&b"\n"[..], &[0x17; 16][..], b"garbage appended by a tool\n"]
            .iter()
            .enumerate()
        {
            let with = dir.path().join(format!("trailing-{k}-{name}"));
            let mut f = std::fs::File::create(&with).unwrap();
            f.write_all(&bytes).unwrap();
            f.write_all(garbage).unwrap();
            drop(f);
            for threads in [1, 2] {
                let (got, err) = read_with(&with, threads);
                assert_eq!(got.len(), clean.len(), "{name} + {k}, {threads} threads");
                assert!(got == clean, "{name} + {k}, {threads} threads");
                let msg = err
                    .unwrap_or_else(|| panic!("{name} + {k}: no note of the trailing data"))
                    .to_string();
                assert!(msg.contains("trailing data"), "{msg}");
                assert!(
                    msg.contains(&format!("compressed byte offset {}", bytes.len())),
                    "{msg}"
                );
                assert!(msg.contains("decompressed byte offset"), "{msg}");
                assert!(msg.contains(name), "{msg}");
            }
        }
    }
}

#[test]
fn errors_in_compressed_traces_say_which_offsets_they_count() {
    let (packets, err) = read_with(&corpus("corrupt__fragtest_truncated_stream.erf.gz"), 0);
    assert_eq!(packets.len(), 5025);
    let msg = err.unwrap().to_string();
    assert!(msg.contains("decompressed byte offset"), "{msg}");
    assert!(msg.contains("member 1"), "{msg}");
    assert!(msg.contains("compressed byte offset 0"), "{msg}");
    // A reader's own error (a record cut inside a gzip file) counts decompressed bytes.
    let dir = tempfile::tempdir().unwrap();
    let plain = std::fs::read(corpus("libtrace__100_packets.pcap")).unwrap();
    let cut = dir.path().join("cut.pcap.gz");
    let (packed, _) = units(&plain[..plain.len() - 10], Compression::Gzip, 1 << 20);
    std::fs::write(&cut, packed).unwrap();
    let (_, err) = read_with(&cut, 1);
    let msg = err.unwrap().to_string();
    assert!(msg.contains("at decompressed byte offset"), "{msg}");
}

/// Record ends (decompressed offsets) of a plain pcap file.
fn pcap_record_ends(plain: &[u8]) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut at = 24;
    while at + 16 <= plain.len() {
        let caplen =
            u32::from_le_bytes([plain[at + 8], plain[at + 9], plain[at + 10], plain[at + 11]]);
        at += 16 + caplen as usize;
        if at > plain.len() {
            break;
        }
        ends.push(at);
    }
    ends
}

/// `plain` cut into `chunk`-byte pieces, each written by tracekit's writer as one unit:
/// the compressed file and where each unit ends in it and in `plain`.
fn units(plain: &[u8], codec: Compression, chunk: usize) -> (Vec<u8>, Vec<(usize, usize)>) {
    let mut packed = Vec::new();
    let mut ends = Vec::new();
    let mut plain_end = 0;
    for piece in plain.chunks(chunk) {
        let mut w = ParallelWriter::new(
            Vec::new(),
            CompressOptions {
                codec,
                level: Some(if codec == Compression::Xz { 0 } else { 1 }),
                threads: 1,
            },
        )
        .unwrap();
        w.write_all(piece).unwrap();
        packed.extend(w.finish().unwrap().0);
        plain_end += piece.len();
        ends.push((packed.len(), plain_end));
    }
    (packed, ends)
}

#[test]
fn every_packet_before_damage_comes_out() {
    let plain = std::fs::read(corpus("ndpi__1kxun.pcap")).unwrap();
    let original = read_with(&corpus("ndpi__1kxun.pcap"), 1).0;
    let record_ends = pcap_record_ends(&plain);
    assert_eq!(record_ends.len(), original.len());
    let codecs = [
        Compression::Gzip,
        Compression::Bzip2,
        Compression::Zstd,
        Compression::Xz,
        Compression::Lz4,
    ];
    // Compressed once per codec and unit size; the cases choose where the damage goes.
    let made = std::cell::RefCell::new(std::collections::HashMap::new());
    let dir = tempfile::tempdir().unwrap();
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(48));
    let strategy = (
        0..codecs.len(),
        prop::sample::select(vec![60_000usize, 250_000]),
        0.0..1.0f64,
        any::<bool>(),
        prop::collection::vec(any::<u8>(), 1..64),
        1usize..3,
    );
    runner
        .run(
            &strategy,
            |(codec, chunk, where_, inject, mut garbage, threads)| {
                let codec = codecs[codec];
                let (packed, ends) = made
                    .borrow_mut()
                    .entry((codec, chunk))
                    .or_insert_with(|| units(&plain, codec, chunk))
                    .clone();
                let at = ((packed.len() as f64) * where_) as usize;
                // Not a magic of any codec, not xz padding.
                garbage[0] = 0xa5;
                let mut damaged = packed.clone();
                if inject {
                    for (k, b) in garbage.iter().enumerate() {
                        if let Some(byte) = damaged.get_mut(at + k) {
                            *byte ^= b | 1;
                        }
                    }
                } else {
                    damaged.truncate(at);
                    damaged.extend_from_slice(&garbage);
                }
                // The packets inside units that end before the damage must come out.
                let intact = ends
                    .iter()
                    .take_while(|(compressed_end, _)| *compressed_end <= at)
                    .last()
                    .map_or(0, |&(_, plain_end)| plain_end);
                let safe = record_ends.iter().take_while(|&&e| e <= intact).count();
                let path = dir.path().join(format!("damaged.pcap.{}", codec.name()));
                std::fs::write(&path, &damaged).unwrap();
                let (got, err) = read_with(&path, threads);
                prop_assert!(
                    got.len() >= safe,
                    "{codec} {chunk} at {at} inject {inject} threads {threads}: {} of {safe} \
                     packets; {err:?}",
                    got.len()
                );
                prop_assert!(got[..safe] == original[..safe], "{codec}: packets differ");
                if !inject {
                    prop_assert!(err.is_some(), "{codec} at {at}: appended damage unseen");
                }
                Ok(())
            },
        )
        .unwrap();
}
