//! Test support shared by tracekit's crates: where the conformance corpus is, what its
//! manifest says, and how to ask the oracles (tshark and friends).
//!
//! The corpus is `../shared/corpus` from the repository root, or `$TRACEKIT_CORPUS`.
//! Oracles may be missing on a developer machine: [`have`] then says so and the caller
//! skips its comparison, unless `TRACEKIT_REQUIRE_ORACLES=1` (set in CI), which turns a
//! missing oracle into a failure.

#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The corpus directory.
pub fn corpus_dir() -> PathBuf {
    std::env::var("TRACEKIT_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"))
}

/// A corpus file's path.
pub fn corpus(name: &str) -> PathBuf {
    corpus_dir().join(name)
}

/// A corpus file's path as a string (for URIs).
pub fn corpus_uri(name: &str) -> String {
    corpus(name)
        .to_str()
        .expect("corpus paths are UTF-8")
        .to_string()
}

/// One row of the corpus manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// File name.
    pub file: String,
    /// The container column, e.g. `pcap usec LE`, `ERF`, `gzip(ERF)`.
    pub container: String,
    /// The leading number of the packet-count column (capinfos' count, or the
    /// manifest author's structural walker's when capinfos could not read the file).
    pub packets: Option<u64>,
}

/// Every row of `MANIFEST.md`.
pub fn manifest() -> Vec<Entry> {
    let text = std::fs::read_to_string(corpus_dir().join("MANIFEST.md"))
        .expect("../shared/corpus/MANIFEST.md (or $TRACEKIT_CORPUS)");
    text.lines()
        .filter_map(|line| {
            let cols: Vec<&str> = line.split('|').map(str::trim).collect();
            if cols.len() < 6 || !cols[1].contains("__") {
                return None;
            }
            let digits: String = cols[4].chars().take_while(char::is_ascii_digit).collect();
            Some(Entry {
                file: cols[1].to_string(),
                container: cols[2].to_string(),
                packets: digits.parse().ok(),
            })
        })
        .collect()
}

/// The manifest's packet count of a file.
pub fn manifest_count(file: &str) -> Option<u64> {
    manifest().into_iter().find(|e| e.file == file)?.packets
}

/// Whether the oracles are required (`TRACEKIT_REQUIRE_ORACLES=1`).
pub fn oracles_required() -> bool {
    std::env::var("TRACEKIT_REQUIRE_ORACLES").as_deref() == Ok("1")
}

/// Whether `tool` can be run; when it cannot, fails if oracles are required and
/// otherwise prints that the comparison is skipped.
pub fn have(tool: &str) -> bool {
    let present = Command::new(tool).arg("--version").output().is_ok();
    if !present {
        assert!(
            !oracles_required(),
            "{tool} is required (TRACEKIT_REQUIRE_ORACLES=1) but missing"
        );
        eprintln!("{tool} not installed: skipping this comparison");
    }
    present
}

/// `seconds.fraction` (as tshark and capinfos print time stamps) in integer nanoseconds.
pub fn epoch_ns(text: &str) -> u64 {
    let (secs, frac) = text.split_once('.').unwrap_or((text, ""));
    let frac = format!("{frac:0<9}");
    secs.parse::<u64>().expect("seconds") * 1_000_000_000
        + frac[..9].parse::<u64>().expect("fraction")
}

/// `tshark -T fields` for `fields` over every frame of `path` (columns split on `|`,
/// several values of one field joined with `~`).
pub fn tshark_fields(path: &Path, fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.args(["-n", "-r"]).arg(path);
    cmd.args(["-T", "fields", "-E", "separator=|", "-E", "aggregator=~"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("tshark runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split('|').map(str::to_string).collect())
        .collect()
}

/// tshark's (epoch nanoseconds, `frame.len`, `frame.cap_len`) for every frame of `path`.
pub fn tshark_frames(path: &Path) -> Vec<(u64, u32, u32)> {
    tshark_fields(path, &["frame.time_epoch", "frame.len", "frame.cap_len"])
        .iter()
        .map(|c| {
            let len = c[1].parse().expect("frame.len");
            let cap = c[2].parse().expect("frame.cap_len");
            (epoch_ns(&c[0]), len, cap)
        })
        .collect()
}
