//! ERF files of the shared corpus against the manifest and tshark, record by record; the
//! damaged file; and content detection over every corpus file, compressed ones
//! decompressed first with the system tools: every ERF file is recognised, nothing else.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use tracekit_core::{Error, LinkType, PacketKind};
use tracekit_erf::{ErfReader, ErfReaderOptions, looks_like_erf};
use tracekit_io::{Input, ReadMode};
use tracekit_testdata::{Entry, corpus, have, manifest};

/// The decompressed bytes of a corpus file (gzip/bzip2/xz by magic, via the system
/// tools), or the bytes themselves. `None` when the tool failed (a damaged stream).
fn contents(path: &Path) -> Option<Vec<u8>> {
    let raw = fs::read(path).unwrap();
    let tool = match raw.get(..3) {
        Some([0x1f, 0x8b, _]) => "gzip",
        Some([b'B', b'Z', b'h']) => "bzip2",
        Some([0xfd, b'7', b'z']) => "xz",
        _ => return Some(raw),
    };
    let out = Command::new(tool).arg("-dc").arg(path).output().ok()?;
    out.status.success().then_some(out.stdout)
}

fn erf_files(manifest: &[Entry]) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = manifest
        .iter()
        .filter(|e| e.container == "ERF")
        .map(|e| corpus(&e.file))
        .collect();
    files.sort();
    files
}

#[derive(Debug, PartialEq)]
struct Rec {
    nanos: u64,
    wire: u32,
    cap: u32,
    link: LinkType,
    kind: PacketKind,
    framing: u32,
}

fn read_all(mut r: ErfReader) -> (Vec<Rec>, Option<Error>) {
    let mut recs = Vec::new();
    loop {
        match r.next_packet() {
            Ok(Some(p)) => {
                let m = *p.meta();
                // Whole records (LINKTYPE_ERF) carry their header and extension headers.
                let framing = if m.link == LinkType::ERF {
                    let d = p.data();
                    let mut f = 16;
                    let mut more = d[8] & 0x80 != 0;
                    while more {
                        more = d[f] & 0x80 != 0;
                        f += 8;
                    }
                    f as u32
                } else {
                    0
                };
                recs.push(Rec {
                    nanos: m.ts.as_unix_nanos(),
                    wire: m.wire_len,
                    cap: p.caplen() as u32,
                    link: m.link,
                    kind: m.kind,
                    framing,
                });
            }
            Ok(None) => return (recs, None),
            Err(e) => {
                assert!(r.next_packet().unwrap().is_none());
                return (recs, Some(e));
            }
        }
    }
}

fn read_both_ways(path: &Path) -> (Vec<Rec>, Option<Error>) {
    let options = ErfReaderOptions::default();
    let a = read_all(
        ErfReader::from_input_with(Input::open(path, ReadMode::Mmap).unwrap(), options).unwrap(),
    );
    let b = read_all(
        ErfReader::from_input_with(Input::open(path, ReadMode::Read).unwrap(), options).unwrap(),
    );
    assert!(a.0 == b.0, "{}: read modes differ", path.display());
    a
}

#[test]
fn every_erf_file_matches_manifest_and_tshark() {
    let manifest = manifest();
    let files = erf_files(&manifest);
    assert!(files.len() >= 7, "{files:?}");
    let tshark = have("tshark");
    for path in &files {
        let name = path.file_name().unwrap().to_str().unwrap();
        let (recs, err) = read_both_ways(path);
        let want = manifest
            .iter()
            .find(|e| e.file == name)
            .and_then(|e| e.packets);
        assert_eq!(Some(recs.len() as u64), want, "{name}: count ({err:?})");
        assert_eq!(
            err.is_some(),
            name.starts_with("corrupt__"),
            "{name}: {err:?}"
        );
        // tshark does not open the damaged file at all; it has a test of its own.
        if !tshark || name.starts_with("corrupt__") {
            continue;
        }
        let frames = tracekit_testdata::tshark_frames(path);
        assert_eq!(frames.len(), recs.len(), "{name}: tshark count");
        for (i, (r, f)) in recs.iter().zip(&frames).enumerate() {
            assert_eq!(r.nanos, f.0, "{name} record {}: time stamp", i + 1);
            assert_eq!(
                r.wire - r.framing,
                f.1,
                "{name} record {}: wire length",
                i + 1
            );
            // whole records carry their padding; tshark shows min(rlen - framing, wlen)
            let cap = if r.link == LinkType::ERF {
                (r.cap - r.framing).min(r.wire - r.framing)
            } else {
                r.cap
            };
            assert_eq!(cap, f.2, "{name} record {}: captured length", i + 1);
        }
    }
}

#[test]
fn record_kinds() {
    let (recs, _) = read_both_ways(&corpus("libtrace__provenance.erf"));
    assert!(
        recs.iter().all(|r| r.kind == PacketKind::MetaRecord
            && r.link == LinkType::ERF
            && r.framing == 24)
    );
    let skip = ErfReaderOptions { skip_meta: true };
    let path = corpus("libtrace__provenance.erf");
    let (none, _) = read_all(
        ErfReader::from_input_with(Input::open(&path, ReadMode::Read).unwrap(), skip).unwrap(),
    );
    assert!(none.is_empty());
    let (recs, _) = read_both_ways(&corpus("libtrace__large_legacy.gz"));
    assert!(
        recs.iter()
            .all(|r| r.link == LinkType::ERF && r.kind == PacketKind::Data),
        "ATM cells are whole records"
    );
    let (recs, _) = read_both_ways(&corpus("erfconv__zeek__q-in-q_ext.erf"));
    assert!(
        recs.iter().all(|r| r.link == LinkType::ETHERNET),
        "extension headers are skipped"
    );
}

#[test]
fn short_rlen_delivers_three_then_names_it() {
    let (recs, err) = read_both_ways(&corpus("corrupt__100_packets_rlen_short.erf"));
    assert_eq!(recs.len(), 3);
    let err = err.unwrap();
    assert_eq!((err.offset(), err.packet()), (Some(204), Some(4)));
    assert!(err.to_string().contains("bad ERF record length 8"), "{err}");
}

#[test]
fn detection_finds_every_erf_file_and_nothing_else() {
    let manifest = manifest();
    let mut checked = 0;
    for Entry {
        file: name,
        container,
        ..
    } in &manifest
    {
        let path = corpus(name);
        let Some(bytes) = contents(&path) else {
            continue;
        };
        let head = &bytes[..bytes.len().min(512)];
        let is_erf = container == "ERF" || container.contains("(ERF)");
        // The damaged record 4 is past the first records the detector looks at.
        assert_eq!(looks_like_erf(head), is_erf, "{name} ({container})");
        checked += 1;
    }
    assert!(checked >= 125, "checked only {checked} files");
}
