//! The facade's examples `ports` and `scans` (the libtrace paper's programs written with
//! the public API) print what `tracekit ports` and `tracekit scans` print on the same
//! corpus traces; and each stays within the 60 lines the README promises.

use std::path::PathBuf;
use std::process::Command;

use tracekit_testdata::corpus;

/// The example's binary, built by `cargo test --workspace --all-targets` beside the CLI
/// (built here when a narrower `cargo test` left it out).
fn example(name: &str) -> PathBuf {
    let cli = PathBuf::from(env!("CARGO_BIN_EXE_tracekit"));
    let path = cli.parent().unwrap().join("examples").join(name);
    if !path.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "-p", "tracekit", "--example", name])
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building example {name}");
    }
    path
}

fn stdout(mut cmd: Command) -> String {
    let out = cmd.output().expect("runs");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

const TRACES: &[&str] = &[
    "libtrace__fragtest.erf.gz",
    "zeek__rotation.pcap",
    "libtrace__100_packets.pcap",
];

#[test]
fn ports_example_prints_the_table_of_tracekit_ports() {
    for name in TRACES {
        let file = corpus(name);
        for workers in ["1", "2"] {
            let mut ex = Command::new(example("ports"));
            ex.arg(&file).arg(workers);
            let ours = stdout(ex);
            let mut cli = Command::new(env!("CARGO_BIN_EXE_tracekit"));
            cli.arg("ports").arg(&file);
            let theirs = stdout(cli);
            // The CLI's table, without the totals after the blank line.
            let table = theirs.split("\n\n").next().unwrap().to_string() + "\n";
            assert!(table.lines().count() > 2, "{name}: a table with rows");
            assert_eq!(ours, table, "{name}, {workers} workers");
        }
    }
}

#[test]
fn scans_example_prints_what_tracekit_scans_prints() {
    for name in TRACES {
        let file = corpus(name);
        for threshold in ["1", "3"] {
            let mut ex = Command::new(example("scans"));
            ex.arg(&file).arg(threshold);
            let ours = stdout(ex);
            let mut cli = Command::new(env!("CARGO_BIN_EXE_tracekit"));
            cli.args(["scans", "-t", threshold]).arg(&file);
            assert_eq!(ours, stdout(cli), "{name}, threshold {threshold}");
        }
    }
    // The fragments trace has scanners above 1: the comparison covered rows.
    let mut ex = Command::new(example("scans"));
    ex.arg(corpus(TRACES[0])).arg("1");
    assert!(stdout(ex).lines().count() > 4);
}

/// Non-blank, non-comment lines, as the README counts them against libtrace's.
fn code_lines(name: &str) -> usize {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../tracekit/examples/{name}.rs"));
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .count()
}

#[test]
fn examples_are_short() {
    assert!(
        code_lines("ports") <= 60,
        "ports.rs: {}",
        code_lines("ports")
    );
    assert!(
        code_lines("scans") <= 60,
        "scans.rs: {}",
        code_lines("scans")
    );
}
