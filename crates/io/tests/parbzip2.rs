//! Parallel bzip2 (blocks of one stream decoded on several threads) against the system
//! tools: files made by bzip2, pbzip2 and lbzip2 at levels 1, 5 and 9, from trace data
//! (the corpus' pcap files) and from random bytes, single- and multi-stream, read with 2
//! and 3 threads, must give exactly what `bzip2 -dc` gives. Cut and bit-flipped files
//! must deliver every block that `bzip2recover` + `bzip2 -dc` decode before the damage,
//! the same bytes as our sequential reader, then an error naming the damaged block.
//!
//! The tools are oracles: missing ones are skipped with a message unless
//! `TRACEKIT_REQUIRE_ORACLES=1`.

use std::path::{Path, PathBuf};
use std::process::Command;

use tracekit_io::{Compression, Input, ReadMode, decompress_here};
use tracekit_testdata::{corpus_dir, have};

/// Trace data: the corpus' plain pcap files, concatenated, up to `limit` bytes.
fn trace_data(limit: usize) -> Vec<u8> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("the corpus (../shared/corpus or $TRACEKIT_CORPUS)")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pcap"))
        .collect();
    names.sort();
    let mut out = Vec::new();
    for name in names {
        out.extend(std::fs::read(name).unwrap());
        if out.len() >= limit {
            break;
        }
    }
    out.truncate(limit);
    out
}

/// Bytes bzip2 cannot compress (xorshift).
fn random_data(len: usize) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// `tool` run on `input` with `args`, its standard output (it must succeed).
fn run(tool: &str, args: &[&str], input: &Path) -> Vec<u8> {
    let out = Command::new(tool).args(args).arg(input).output().unwrap();
    assert!(
        out.status.success(),
        "{tool} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// What `bzip2 -dc` writes for `path`, and whether it succeeded.
fn bzip2_dc(path: &Path) -> (Vec<u8>, bool) {
    let out = Command::new("bzip2").arg("-dc").arg(path).output().unwrap();
    (out.stdout, out.status.success())
}

/// Reads `path` as bzip2 with `threads`: every byte delivered, and the error.
fn read(path: &Path, threads: usize) -> (Vec<u8>, Option<String>) {
    let raw = Input::open(path, ReadMode::Read).unwrap();
    let mut input = Input::decompress_with(raw, Compression::Bzip2, threads).unwrap();
    let mut out = Vec::new();
    loop {
        match input.fill(1) {
            Ok(0) => return (out, None),
            Ok(have) => {
                out.extend_from_slice(&input.available()[..have]);
                input.consume(have);
            }
            Err(e) => return (out, Some(e.to_string())),
        }
    }
}

/// The same through the splitting path on this thread.
fn read_here(path: &Path) -> (Vec<u8>, Option<String>) {
    let file = std::fs::File::open(path).unwrap();
    let mut out = Vec::new();
    let r = decompress_here(file, Compression::Bzip2, true, |b| {
        out.extend_from_slice(b);
        true
    });
    (out, r.err().map(|e| e.to_string()))
}

/// Checks that tracekit's parallel readers give `bzip2 -dc`'s output for `path`.
fn check_whole(path: &Path, what: &str) -> Vec<u8> {
    let (expected, ok) = bzip2_dc(path);
    assert!(ok, "bzip2 -dc {what}");
    for threads in [2, 3] {
        let (got, err) = read(path, threads);
        assert!(err.is_none(), "{what}, {threads} threads: {err:?}");
        assert_eq!(got.len(), expected.len(), "{what}, {threads} threads");
        assert!(got == expected, "{what}, {threads} threads: bytes differ");
    }
    let (got, err) = read_here(path);
    assert!(err.is_none() && got == expected, "{what}, on one thread");
    expected
}

/// The compressors and their arguments before the level (pbzip2 writes a stream per
/// block, bzip2 and lbzip2 one stream).
const TOOLS: [(&str, &[&str]); 3] = [
    ("bzip2", &["-c"]),
    ("pbzip2", &["-c", "-p2"]),
    ("lbzip2", &["-c", "-n2"]),
];

#[test]
fn files_of_every_tool_and_level_decode_as_bzip2_decodes_them() {
    if !have("bzip2") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let datasets = [
        ("trace", trace_data(3_000_000)),
        ("random", random_data(1_300_000)),
    ];
    let mut multi = Vec::new();
    let mut checked = 0;
    for (name, data) in &datasets {
        let plain = dir.path().join(name);
        std::fs::write(&plain, data).unwrap();
        for (tool, args) in TOOLS {
            if !have(tool) {
                continue;
            }
            for level in ["-1", "-5", "-9"] {
                let packed = run(tool, &[args, &[level]].concat(), &plain);
                let what = format!("{name} data, {tool} {level}");
                let path = dir.path().join(format!("{name}{level}.{tool}.bz2"));
                std::fs::write(&path, &packed).unwrap();
                let out = check_whole(&path, &what);
                assert!(out == *data, "{what}: bzip2 -dc gives the original back");
                if level == "-1" {
                    multi.extend_from_slice(&packed);
                }
                checked += 1;
            }
        }
    }
    // Everything at level 1 one after the other: many streams of every kind.
    let path = dir.path().join("multi.bz2");
    std::fs::write(&path, &multi).unwrap();
    check_whole(&path, "streams of every tool, concatenated");
    assert!(checked >= 6, "checked {checked}");
}

#[test]
fn corpus_bzip2_files_decode_as_bzip2_decodes_them() {
    if !have("bzip2") {
        return;
    }
    let mut n = 0;
    for entry in std::fs::read_dir(corpus_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "bz2") {
            check_whole(&path, &path.display().to_string());
            n += 1;
        }
    }
    assert!(n >= 3, "{n} bzip2 files in the corpus");
}

/// The output of every block of `path` before the first that does not decode, by
/// `bzip2recover` (which writes each block it finds as a file of its own) and `bzip2 -dc`
/// on each; and how many blocks that is.
fn good_blocks(path: &Path) -> (Vec<u8>, usize) {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("damaged.bz2");
    std::fs::copy(path, &copy).unwrap();
    let _ = Command::new("bzip2recover").arg(&copy).output().unwrap();
    let mut parts: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("rec"))
        .collect();
    parts.sort();
    let mut out = Vec::new();
    let mut good = 0;
    for part in parts {
        let (bytes, ok) = bzip2_dc(&part);
        if !ok {
            break;
        }
        out.extend(bytes);
        good += 1;
    }
    (out, good)
}

#[test]
fn damaged_files_deliver_what_comes_before_the_damage() {
    if !have("bzip2") || !have("bzip2recover") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = trace_data(1_500_000);
    let plain = dir.path().join("plain");
    std::fs::write(&plain, &data).unwrap();
    let packed = run("bzip2", &["-c", "-1"], &plain);
    let n = packed.len();
    let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
    for cut in [n / 7, n / 3, n / 2 + 11, n - 200, n - 3] {
        cases.push((format!("cut at {cut} of {n}"), packed[..cut].to_vec()));
    }
    for at in [n / 5, n / 2, 4 * n / 5] {
        for bit in [0x01u8, 0x20] {
            let mut bad = packed.clone();
            bad[at] ^= bit;
            cases.push((format!("bit {bit:#04x} of byte {at} flipped"), bad));
        }
    }
    for (what, bytes) in cases {
        let path = dir.path().join("damaged.bz2");
        std::fs::write(&path, &bytes).unwrap();
        assert!(!bzip2_dc(&path).1, "{what}: bzip2 -dc fails");
        let (good, blocks) = good_blocks(&path);
        assert!(data.starts_with(&good), "{what}: bzip2recover's blocks");
        let (sequential, seq_err) = read(&path, 1);
        assert!(seq_err.is_some(), "{what}: the sequential reader fails");
        for threads in [2, 3] {
            let (got, err) = read(&path, threads);
            let err = err.unwrap_or_else(|| panic!("{what}, {threads} threads: no error"));
            assert!(
                got.starts_with(&good),
                "{what}, {threads} threads: {} bytes, the good blocks hold {}",
                got.len(),
                good.len()
            );
            assert!(
                got == sequential,
                "{what}, {threads} threads: {} bytes, the sequential reader gave {}",
                got.len(),
                sequential.len()
            );
            assert!(err.contains("damaged"), "{what}: {err}");
            assert!(err.contains("damaged.bz2"), "{what}: {err}");
            if good.len() < data.len() {
                assert!(
                    err.contains(&format!("block {}", blocks + 1)),
                    "{what}: {err}"
                );
            }
        }
        let (here, err) = read_here(&path);
        assert!(here == sequential && err.is_some(), "{what}: on one thread");
    }
}
