//! `dag:` URIs end to end through the `tracekit` command, against the software DAG card
//! (the tests build the command with the `dag-emulator` feature), fed with corpus ERF
//! files: `info`, `capture` into every output format, and `convert` to a transmit
//! stream; tshark's reading of the corpus file is the oracle.

use std::path::Path;
use std::process::Command;

use tracekit_testdata::{corpus, have, tshark_frames};

fn tracekit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tracekit"))
}

/// The command with the software card set to play `input` once and end.
fn on_card(input: &Path) -> Command {
    let mut c = tracekit();
    c.env("DAGEMU_INPUT", input).env("DAGEMU_END", "1");
    c
}

fn run(mut c: Command) -> String {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{:?}: {}",
        c,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn info_on_a_card_reads_the_whole_input() {
    let input = corpus("libtrace__100_packets.erf");
    let mut c = on_card(&input);
    c.args(["info", "--json", "dag:/dev/dag0"]);
    let v: serde_json::Value = serde_json::from_str(run(c).trim()).unwrap();
    assert_eq!(v["format"], "dag");
    if !have("tshark") {
        return;
    }
    let frames = tshark_frames(&input);
    assert_eq!(v["packets"], frames.len() as u64);
    assert_eq!(v["first_ts_ns"], frames[0].0);
    assert_eq!(v["last_ts_ns"], frames[frames.len() - 1].0);
    let wire: u64 = frames.iter().map(|f| u64::from(f.1)).sum();
    assert_eq!(v["wire_bytes"], wire);
}

/// `capture -i dag:...` into pcap, pcapng and ERF: every packet, time and length, as
/// tshark reads them from the corpus file (time stamps within the 1 ns tshark's own
/// rounding of binary fractions differs by between formats).
#[test]
fn capture_from_a_card_into_every_format() {
    if !have("tshark") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for name in ["libtrace__100_packets.erf", "erfconv__zeek__q-in-q_ext.erf"] {
        let input = corpus(name);
        let want = tshark_frames(&input);
        for ext in ["pcap", "pcapng", "erf", "pcapng.gz"] {
            let out = dir.path().join(format!("{name}.{ext}"));
            let mut c = on_card(&input);
            c.args(["capture", "-i", "dag:/dev/dag0,0", "-w"]).arg(&out);
            run(c);
            let got = tshark_frames(&out);
            assert_eq!(got.len(), want.len(), "{name} -> {ext}");
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(g.0.abs_diff(w.0) <= 1, "{name} -> {ext}: packet {i} time");
                assert_eq!(g.1, w.1, "{name} -> {ext}: packet {i} length");
                if ext != "erf" {
                    assert_eq!(g.2, w.2, "{name} -> {ext}: packet {i} captured length");
                }
            }
        }
    }
}

/// `convert trace.erf dag:/dev/dag0,1` transmits every packet: the card's record log
/// holds them (time and wire length as tshark reads them from the input file).
#[test]
fn convert_to_a_transmit_stream() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus("libtrace__100_packets.erf");
    let log = dir.path().join("sent.erf");
    let mut c = tracekit();
    c.env("DAGEMU_TX_LOG", &log)
        .arg("convert")
        .arg(&input)
        .arg("dag:/dev/dag0,1");
    run(c);
    assert!(log.exists());
    if !have("tshark") {
        return;
    }
    let want = tshark_frames(&input);
    let got = tshark_frames(&log);
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!((g.0, g.1), (w.0, w.1));
    }
}

#[test]
fn dag_errors_name_the_card() {
    let out = tracekit()
        .args(["info", "dag:/dev/nodag"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/dev/nodag") && err.contains("no such DAG card"),
        "{err}"
    );
    let out = tracekit()
        .args([
            "capture",
            "-i",
            "dag:/dev/dag0",
            "--members",
            "2",
            "-w",
            "x.pcap",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("AF_PACKET options"));
}
