//! Every pcapng file of the shared corpus (by content, whatever its name) against the
//! manifest's packet counts and against tshark, packet by packet: time stamp, wire and
//! captured length, interface id within its section, and comments. The damaged files
//! deliver their good packets, then an error naming the offset.
//!
//! tshark is skipped with a message when missing, unless `TRACEKIT_REQUIRE_ORACLES=1`.

use std::fs;
use std::path::{Path, PathBuf};

use tracekit_core::{Error, ErrorKind, PacketKind};
use tracekit_io::{Input, ReadMode};
use tracekit_pcapng::{PcapngReader, PcapngReaderOptions, is_pcapng};
use tracekit_testdata::{corpus, corpus_dir, epoch_ns, have, manifest_count};

fn pcapng_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| is_pcapng(&fs::read(p).unwrap_or_default()))
        .collect();
    files.sort();
    files
}

#[derive(Debug, Clone, PartialEq)]
struct Rec {
    nanos: u64,
    wire: u32,
    cap: u32,
    local_iface: u32,
    comments: Vec<String>,
    data: Vec<u8>,
}

fn read_all(mut r: PcapngReader) -> (Vec<Rec>, Option<Error>, PcapngReader) {
    let mut recs = Vec::new();
    loop {
        match r.next_packet() {
            Ok(Some(p)) => {
                assert_eq!(p.meta().kind, PacketKind::Data);
                let meta = *p.meta();
                let comments = p
                    .options()
                    .map(|o| o.comments().map(str::to_string).collect())
                    .unwrap_or_default();
                let data = p.data().to_vec();
                let local_iface = r.interface(meta.interface).unwrap().local_id;
                recs.push(Rec {
                    nanos: meta.ts.as_unix_nanos(),
                    wire: meta.wire_len,
                    cap: data.len() as u32,
                    local_iface,
                    comments,
                    data,
                });
            }
            Ok(None) => return (recs, None, r),
            Err(e) => {
                assert!(
                    r.next_packet().unwrap().is_none(),
                    "reader must stay finished"
                );
                return (recs, Some(e), r);
            }
        }
    }
}

fn read_every_way(path: &Path) -> (Vec<Rec>, Option<Error>, PcapngReader) {
    let options = PcapngReaderOptions::default();
    let a = read_all(
        PcapngReader::from_input_with(Input::open(path, ReadMode::Mmap).unwrap(), options).unwrap(),
    );
    let b = read_all(
        PcapngReader::from_input_with(Input::open(path, ReadMode::Read).unwrap(), options).unwrap(),
    );
    let c =
        read_all(PcapngReader::from_reader(std::io::Cursor::new(fs::read(path).unwrap())).unwrap());
    assert!(
        a.0 == b.0 && a.0 == c.0,
        "{}: read modes differ",
        path.display()
    );
    let err = |e: &Option<Error>| {
        e.as_ref()
            .map(|e| format!("{} @{:?}", e.kind(), e.offset()))
    };
    assert_eq!(err(&a.1), err(&b.1));
    assert_eq!(err(&a.1), err(&c.1));
    a
}

#[test]
fn every_corpus_pcapng_matches_the_manifest() {
    let files = pcapng_files();
    assert!(files.len() >= 40, "found only {} pcapng files", files.len());
    for path in &files {
        let name = path.file_name().unwrap().to_str().unwrap();
        let (recs, err, _) = read_every_way(path);
        let want = manifest_count(name).unwrap();
        assert_eq!(recs.len() as u64, want, "{name}: count (error {err:?})");
        assert_eq!(
            err.is_some(),
            name.starts_with("corrupt__"),
            "{name}: {err:?}"
        );
    }
}

/// tshark's packets: (epoch ns or None for SPBs, frame.len, frame.cap_len, interface,
/// comments). Frames without an encapsulation (custom blocks shown as frames) are left
/// out: they are not packets.
type Frame = (Option<u64>, u32, u32, u32, Vec<String>);

fn tshark_frames(path: &Path) -> Vec<Frame> {
    let rows = tracekit_testdata::tshark_fields(
        path,
        &[
            "frame.encap_type",
            "frame.time_epoch",
            "frame.len",
            "frame.cap_len",
            "frame.interface_id",
            "frame.comment",
        ],
    );
    rows.iter()
        .filter(|c| !c[0].is_empty())
        .map(|c| {
            let nanos = (!c[1].is_empty()).then(|| epoch_ns(&c[1]));
            let comments = if c[5].is_empty() {
                Vec::new()
            } else {
                c[5].split('~').map(str::to_string).collect()
            };
            (
                nanos,
                c[2].parse().unwrap(),
                c[3].parse().unwrap(),
                c[4].parse().unwrap_or(0),
                comments,
            )
        })
        .collect()
}

#[test]
fn every_corpus_pcapng_matches_tshark() {
    if !have("tshark") {
        return;
    }
    for path in pcapng_files() {
        let name = path.file_name().unwrap().to_str().unwrap();
        let (recs, _, _) = read_every_way(&path);
        let frames = tshark_frames(&path);
        assert_eq!(frames.len(), recs.len(), "{name}: tshark packet count");
        for (i, (r, f)) in recs.iter().zip(&frames).enumerate() {
            let n = i + 1;
            assert_eq!(r.nanos, f.0.unwrap_or(0), "{name} packet {n}: time stamp");
            assert_eq!((r.wire, r.cap), (f.1, f.2), "{name} packet {n}: lengths");
            assert_eq!(r.local_iface, f.3, "{name} packet {n}: interface");
            assert_eq!(r.comments, f.4, "{name} packet {n}: comments");
        }
    }
}

#[test]
fn bad_block_length_delivers_four_then_names_offset_396() {
    let path = corpus("corrupt__100_packets_bad_blocklen.pcapng");
    let (recs, err, _) = read_every_way(&path);
    assert_eq!(recs.len(), 4);
    let err = err.unwrap();
    assert_eq!(err.offset(), Some(396));
    let msg = err.to_string();
    assert!(
        msg.contains("Enhanced Packet Block has a bad block length 90"),
        "{msg}"
    );
}

#[test]
fn cut_file_delivers_59_then_names_the_cut() {
    let path = corpus("corrupt__100_packets_truncated.pcapng");
    let (recs, err, _) = read_every_way(&path);
    assert_eq!(recs.len(), 59);
    let err = err.unwrap();
    assert_eq!(err.offset(), Some(5520));
    assert_eq!(err.packet(), Some(60));
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Truncated {
                needed: 76,
                available: 38,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn sections_interfaces_and_statistics_are_queryable() {
    // Three sections of alternating byte order; interface ids restart in each.
    let (recs, err, r) = read_every_way(&corpus("pcapnggen__test202_le.pcapng"));
    assert!(err.is_none());
    assert_eq!(recs.len(), 8);
    let orders: Vec<&str> = r.sections().iter().map(|s| s.byte_order.name()).collect();
    assert_eq!(orders, ["little", "big", "little"]);
    assert_eq!(r.interfaces().len(), 5);
    let locals: Vec<u32> = r.interfaces().iter().map(|i| i.local_id).collect();
    assert_eq!(locals, [0, 1, 0, 0, 1]); // sections with 2, 1 and 2 interfaces
    assert!(
        r.interfaces().iter().any(|i| i.stats.is_some()),
        "ISBs were read"
    );

    // Two interfaces with different resolutions (ns and µs).
    let (_, _, r) = read_every_way(&corpus("zeek__pcapng-multi-interface.pcapng"));
    let res: Vec<String> = r
        .interfaces()
        .iter()
        .map(|i| i.ts_resolution.to_string())
        .collect();
    assert_eq!(res, ["ns", "µs"]);

    // Names and descriptions.
    let (_, _, r) = read_every_way(&corpus("pcapnggen__test008_le.pcapng"));
    assert!(
        r.interfaces().iter().all(|i| i.name.is_some()),
        "{:?}",
        r.interfaces()
    );
}

#[test]
fn metadata_blocks_on_request() {
    let path = corpus("pcapnggen__test102_le.pcapng");
    let options = PcapngReaderOptions { deliver_meta: true };
    let mut r = PcapngReader::from_input_with(Input::open(&path, ReadMode::Read).unwrap(), options)
        .unwrap();
    let (mut data, mut meta, mut first_meta_type) = (0, 0, None);
    while let Some(p) = r.next_packet().unwrap() {
        match p.meta().kind {
            PacketKind::Data => data += 1,
            PacketKind::MetaRecord => {
                meta += 1;
                first_meta_type.get_or_insert(p.data()[..4].to_vec());
            }
        }
    }
    assert_eq!(data, 5);
    assert!(meta >= 8, "SHB, 3 IDBs, NRB, ISB, CB, DCB: got {meta}");
    // The first metadata record is the Section Header Block itself.
    assert_eq!(first_meta_type.unwrap(), [0x0a, 0x0d, 0x0d, 0x0a]);
}
