//! Test support shared by tracekit's crates: where the conformance corpus is, what its
//! manifest says, how to ask the oracles (tshark and friends), and a [`builder`] that
//! writes packets with consistent lengths and checksums.
//!
//! The corpus is `../shared/corpus` from the repository root, or `$TRACEKIT_CORPUS`.
//! Oracles may be missing on a developer machine: [`have`] then says so and the caller
//! skips its comparison, unless `TRACEKIT_REQUIRE_ORACLES=1` (set in CI), which turns a
//! missing oracle into a failure.
//!
//! A test that compares tracekit with tshark on a corpus file, and a packet built for a
//! unit test:
//!
//! ```
//! use tracekit_testdata::builder::{Ethernet, Ipv4, PacketBuilder, Udp};
//! use tracekit_testdata::{corpus, have, manifest_count, tshark_frames};
//!
//! let path = corpus("zeek__dns__mdns.pcap");
//! // The corpus is the workspace's (`../shared/corpus` or $TRACEKIT_CORPUS).
//! if have("tshark") && path.exists() {
//!     // (time stamp ns, frame.len, frame.cap_len) per packet, as tshark reads them
//!     let frames = tshark_frames(&path);
//!     assert_eq!(Some(frames.len() as u64), manifest_count("zeek__dns__mdns.pcap"));
//! }
//!
//! let frame = PacketBuilder::new()
//!     .ethernet(Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]))
//!     .ipv4(Ipv4::new([10, 0, 0, 1], [10, 0, 0, 2]))
//!     .udp(Udp::new(5353, 53))
//!     .payload(b"query")
//!     .build(); // lengths and checksums filled in
//! assert_eq!(frame.len(), 14 + 20 + 8 + 5);
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub mod builder;

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
    tshark_fields_with(path, &[], fields)
}

/// [`tshark_fields`] with more tshark arguments (`-o` preferences, ...) before the
/// field list.
pub fn tshark_fields_with(path: &Path, options: &[&str], fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.args(["-n", "-r"]).arg(path).args(options);
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

/// Writes a classic pcap file (µs, little-endian, Ethernet unless `link` says otherwise)
/// of `frames`, each `(bytes, captured length)`: the record keeps the first `captured`
/// bytes and gives the whole length as the wire length. Frame `i` is stamped
/// 1,700,000,000 + `i` seconds. For tests that hand crafted frames to tshark.
pub fn write_pcap(path: &Path, link: u32, frames: &[(Vec<u8>, usize)]) {
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&65535u32.to_le_bytes());
    out.extend_from_slice(&link.to_le_bytes());
    for (i, (f, cap)) in frames.iter().enumerate() {
        let cap = (*cap).min(f.len());
        out.extend_from_slice(&(1_700_000_000 + i as u32).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&(cap as u32).to_le_bytes());
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(&f[..cap]);
    }
    std::fs::write(path, out).expect("the pcap file is written");
}

/// A classic pcap file (µs, little-endian, Ethernet) of whole `frames`, frame `i`
/// stamped `secs[i]` seconds: for traces whose time stamps go back.
pub fn pcap_at(frames: &[Vec<u8>], secs: &[u32]) -> Vec<u8> {
    assert_eq!(frames.len(), secs.len(), "a time stamp per frame");
    let mut out = Vec::new();
    for v in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, 1] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for (f, t) in frames.iter().zip(secs) {
        for v in [*t, 0, f.len() as u32, f.len() as u32] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(f);
    }
    out
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

/// Network namespaces for the live-capture tests (they need root).
pub mod netns {
    use std::process::Command;

    /// Whether the tests run as root; says so when they do not (the live tests then
    /// skip).
    pub fn is_root() -> bool {
        let out = Command::new("id").arg("-u").output().expect("id runs");
        let root = String::from_utf8_lossy(&out.stdout).trim() == "0";
        if !root {
            eprintln!("not root: skipping this live capture test (it creates network namespaces)");
        }
        root
    }

    fn ip(args: &[&str]) {
        let out = Command::new("ip")
            .args(args)
            .output()
            .expect("ip (iproute2) runs");
        assert!(
            out.status.success(),
            "ip {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Two network namespaces joined by a veth pair: `va` in `a`, `vb` in `b`, both up,
    /// IPv6 off (so that no router solicitation joins the traffic), `lo` up in `b`.
    /// Both namespaces are deleted on drop.
    pub struct VethPair {
        /// The namespace holding `va`.
        pub a: String,
        /// The namespace holding `vb`.
        pub b: String,
    }

    impl VethPair {
        /// Creates the pair; `tag` keeps the names of concurrent tests apart.
        pub fn new(tag: &str) -> VethPair {
            let id = std::process::id();
            let pair = VethPair {
                a: format!("tk{id}{tag}a"),
                b: format!("tk{id}{tag}b"),
            };
            for ns in [&pair.a, &pair.b] {
                ip(&["netns", "add", ns]);
                for key in ["all", "default"] {
                    let setting = format!("net.ipv6.conf.{key}.disable_ipv6=1");
                    ip(&["netns", "exec", ns, "sysctl", "-qw", &setting]);
                }
            }
            ip(&[
                "link", "add", "va", "netns", &pair.a, "type", "veth", "peer", "name", "vb",
                "netns", &pair.b,
            ]);
            ip(&["-n", &pair.a, "link", "set", "va", "up"]);
            ip(&["-n", &pair.b, "link", "set", "vb", "up"]);
            ip(&["-n", &pair.b, "link", "set", "lo", "up"]);
            pair
        }
    }

    impl Drop for VethPair {
        fn drop(&mut self) {
            for ns in [&self.a, &self.b] {
                let _ = Command::new("ip").args(["netns", "del", ns]).output();
            }
        }
    }
}
