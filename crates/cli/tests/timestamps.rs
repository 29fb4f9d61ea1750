//! Every time stamp a format can store is represented: pcapng and pcap-ns time stamps
//! past 2106 read, print and convert exactly; Simple Packet Blocks have none; ERF near
//! the epoch is recognised.

use std::path::Path;
use std::process::Command;

use tracekit::{CreateOptions, LinkType, Meta, Packet, Timestamp, TsResolution};
use tracekit_testdata::{corpus, epoch_ns, have, tshark_fields};

fn tracekit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tracekit"))
}

fn run(args: &[&str]) -> (bool, String, String) {
    let out = tracekit().args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The last second of 32-bit time (2106-02-07 06:28:15) plus half a second, and
/// 2107-01-01 00:00:00.000000001.
const LATE: [(u64, u64); 3] = [
    (4_294_967_295, 500_000_000),
    (4_294_967_296, 0),
    (4_323_283_200, 1),
];

fn write_late(path: &Path, format: &str) {
    let options = CreateOptions {
        ts_resolution: Some(TsResolution::NANO),
        ..Default::default()
    };
    let mut sink = tracekit::create(&format!("{format}:{}", path.display()), &options).unwrap();
    let frame = [0u8; 60];
    for (secs, nanos) in LATE {
        let ts = Timestamp::from_unix_nanos(secs * 1_000_000_000 + nanos);
        sink.write_packet(&Packet::new(&frame, Meta::new(ts, 60, LinkType::ETHERNET)))
            .unwrap();
    }
    sink.finish().unwrap();
}

#[test]
fn pcapng_past_2106_reads_prints_and_converts_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let ng = dir.path().join("late.pcapng");
    write_late(&ng, "pcapng");
    let want: Vec<String> = LATE.iter().map(|(s, n)| format!("{s}.{n:09}")).collect();

    // read back through the library
    let mut src = tracekit::open(ng.to_str().unwrap()).unwrap();
    let mut got = Vec::new();
    while let Some(p) = src.next_packet().unwrap() {
        got.push(p.ts().to_string());
    }
    assert_eq!(got, want);

    // printed by the CLI, as tshark prints them
    let (ok, out, err) = run(&["fields", "-e", "frame.time_epoch", ng.to_str().unwrap()]);
    assert!(ok, "{err}");
    let printed: Vec<&str> = out.lines().collect();
    assert_eq!(printed, want);
    if have("tshark") {
        let theirs: Vec<String> = tshark_fields(&ng, &["frame.time_epoch"])
            .into_iter()
            .map(|row| row[0].clone())
            .collect();
        assert_eq!(theirs, want, "tshark");
    }

    // info: first and last, in nanoseconds
    let (ok, out, err) = run(&["info", "--json", ng.to_str().unwrap()]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["first_ts_ns"], 4_294_967_295_500_000_000u64);
    assert_eq!(v["last_ts_ns"], 4_323_283_200_000_000_001u64);

    // converted to pcapng again (and to ERF, which cannot hold them: a clear refusal)
    let again = dir.path().join("again.pcapng");
    let (ok, _, err) = run(&["convert", ng.to_str().unwrap(), again.to_str().unwrap()]);
    assert!(ok, "{err}");
    let (ok, out, _) = run(&["fields", "-e", "frame.time_epoch", again.to_str().unwrap()]);
    assert!(ok);
    assert_eq!(out.lines().collect::<Vec<_>>(), want);
    let pcap = dir.path().join("late.pcap");
    let (ok, _, err) = run(&["convert", ng.to_str().unwrap(), pcap.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("after 2106"), "{err}");
}

#[test]
fn pcap_ns_carried_fraction_goes_past_2106() {
    // A pcap-ns record at the last 32-bit second whose nanosecond field holds 1.5 s: the
    // carry gives 4294967296.5, not a wrap to 1970.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("carry.pcap");
    let mut file = Vec::new();
    file.extend_from_slice(&0xa1b2_3c4du32.to_le_bytes());
    file.extend_from_slice(&2u16.to_le_bytes());
    file.extend_from_slice(&4u16.to_le_bytes());
    file.extend_from_slice(&[0; 8]);
    file.extend_from_slice(&65535u32.to_le_bytes());
    file.extend_from_slice(&1u32.to_le_bytes());
    file.extend_from_slice(&u32::MAX.to_le_bytes());
    file.extend_from_slice(&1_500_000_000u32.to_le_bytes());
    file.extend_from_slice(&60u32.to_le_bytes());
    file.extend_from_slice(&60u32.to_le_bytes());
    file.extend_from_slice(&[0; 60]);
    std::fs::write(&path, file).unwrap();
    let (ok, out, err) = run(&["fields", "-e", "frame.time_epoch", path.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "4294967296.500000000");
}

/// A Simple Packet Block has no time stamp: `fields` prints none for it, as tshark does,
/// and `info` leaves it out of first and last. When no packet has one, first and last
/// are null (capinfos: "n/a"). (capinfos 3.6 also says "n/a" for a file that mixes SPBs
/// and timed packets; tracekit reports the timed packets' span, which tshark's
/// `frame.time_epoch` column gives.)
#[test]
fn simple_packet_blocks_have_no_time_stamp() {
    if !have("tshark") {
        return;
    }
    for name in [
        "pcapnggen__test010_le.pcapng",
        "pcapnggen__test010_be.pcapng",
        "pcapnggen__test011_le.pcapng",
        "pcapnggen__test011_be.pcapng",
        "pcapnggen__test016_le.pcapng",
        "pcapnggen__test016_be.pcapng",
    ] {
        let path = corpus(name);
        let theirs: Vec<String> = tshark_fields(&path, &["frame.time_epoch"])
            .into_iter()
            .map(|row| row[0].clone())
            .collect();
        let (ok, out, err) = run(&["fields", "-e", "frame.time_epoch", path.to_str().unwrap()]);
        assert!(ok, "{name}: {err}");
        assert_eq!(out.lines().collect::<Vec<_>>(), theirs, "{name}");
        let timed: Vec<u64> = theirs
            .iter()
            .filter(|t| !t.is_empty())
            .map(|t| epoch_ns(t))
            .collect();
        let (ok, json, err) = run(&["info", "--json", path.to_str().unwrap()]);
        assert!(ok, "{name}: {err}");
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["packets"], theirs.len(), "{name}");
        match (timed.iter().min(), timed.iter().max()) {
            (Some(first), Some(last)) => {
                assert_eq!(v["first_ts_ns"], *first, "{name}");
                assert_eq!(v["last_ts_ns"], *last, "{name}");
            }
            _ => {
                assert!(v["first_ts_ns"].is_null(), "{name}: {}", v["first_ts_ns"]);
                assert!(v["last_ts_ns"].is_null(), "{name}");
                if have("capinfos") {
                    let out = Command::new("capinfos")
                        .args(["-T", "-r", "-a"])
                        .arg(&path)
                        .output()
                        .unwrap();
                    assert!(
                        String::from_utf8_lossy(&out.stdout).contains("n/a"),
                        "{name}"
                    );
                }
            }
        }
    }
}

#[test]
fn erf_one_second_after_the_epoch_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("early.erf");
    let mut sink = tracekit::create(path.to_str().unwrap(), &CreateOptions::default()).unwrap();
    let frame = [0u8; 60];
    for (secs, nanos) in [(1, 0), (1, 500_000_000), (2, 250_000_000)] {
        let ts = Timestamp::from_nanos(secs, nanos);
        sink.write_packet(&Packet::new(&frame, Meta::new(ts, 60, LinkType::ETHERNET)))
            .unwrap();
    }
    sink.finish().unwrap();
    // detected from the content, no `erf:` needed
    let (ok, out, err) = run(&["fields", "-e", "frame.time_epoch", path.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["1.000000000", "1.500000000", "2.250000000"]
    );
}
