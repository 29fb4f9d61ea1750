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

/// `data` as one bzip2 stream at level 1 whose first block is longer than any encoder
/// writes: `pairs` +1/-1 steps (4 bits each) are added to the first code length of the
/// block's first Huffman table. libbz2, `bzip2` and `lbzip2` read such a block; its CRC
/// and the stream's are unchanged (they cover the decoded bytes).
fn overlong_stream(data: &[u8], pairs: usize) -> Vec<u8> {
    let mut packed = Vec::new();
    let mut w = bzip2::write::BzEncoder::new(&mut packed, bzip2::Compression::new(1));
    std::io::Write::write_all(&mut w, data).unwrap();
    w.finish().unwrap();
    let bits: Vec<bool> = packed
        .iter()
        .flat_map(|b| (0..8).rev().map(move |i| b >> i & 1 == 1))
        .collect();
    let mut at = 0;
    let mut get = |n: usize| {
        let v = bits[at..at + n]
            .iter()
            .fold(0u64, |v, &b| v << 1 | u64::from(b));
        at += n;
        v
    };
    // "BZh1", the block magic, its CRC, the randomised bit, the BWT origin.
    get(32 + 48 + 32 + 1 + 24);
    let used = get(16).count_ones() as usize;
    get(16 * used);
    get(3); // tables
    for _ in 0..get(15) {
        while get(1) == 1 {} // a selector: ones ended by a zero
    }
    let first_length = get(5);
    // 10 is +1 and 11 is -1; a length must stay within 1..=20 after each step.
    let step: [bool; 4] = if first_length < 20 {
        [true, false, true, true]
    } else {
        [true, true, true, false]
    };
    // The stream ends with the 80-bit end marker and CRC, then zeros to a byte.
    let end = (bits.len() - 87..=bits.len() - 80)
        .rev()
        .find(|&p| {
            bits[p..p + 48]
                .iter()
                .fold(0u64, |v, &b| v << 1 | u64::from(b))
                == 0x1772_4538_5090
                && !bits[p + 80..].contains(&true)
        })
        .expect("the end-of-stream marker");
    let mut out_bits = bits[..at].to_vec();
    for _ in 0..pairs {
        out_bits.extend_from_slice(&step);
    }
    out_bits.extend_from_slice(&bits[at..end + 80]);
    out_bits.resize(out_bits.len().div_ceil(8) * 8, false);
    out_bits
        .chunks(8)
        .map(|c| c.iter().fold(0u8, |v, &b| v << 1 | u8::from(b)))
        .collect()
}

#[test]
fn a_block_longer_than_any_encoder_writes_is_read_on_one_thread_after_the_blocks_before() {
    // Three streams: ordinary blocks, one over-long block (400 kB, where a level-1 block
    // takes at most 290,000 bytes), ordinary blocks again.
    let (a, b, c) = (
        trace_data(1_500_000),
        random_data(3000),
        trace_data(400_000),
    );
    let mut file = Vec::new();
    for part in [&a, &c] {
        let mut w = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(1));
        std::io::Write::write_all(&mut w, part).unwrap();
        let stream = w.finish().unwrap();
        if part == &a {
            file.extend(stream);
            file.extend(overlong_stream(&b, 800_000));
        } else {
            file.extend(stream);
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("overlong.bz2");
    std::fs::write(&path, &file).unwrap();
    let expected = [&a[..], &b[..], &c[..]].concat();
    if have("bzip2") {
        let (by_bzip2, ok) = bzip2_dc(&path);
        assert!(
            ok && by_bzip2 == expected,
            "bzip2 -dc reads the crafted file"
        );
    }
    // A regular file: the blocks before in parallel, then the whole file again on one
    // thread, leaving out what was delivered.
    for threads in [1, 2, 3] {
        let (got, err) = read(&path, threads);
        assert!(err.is_none(), "{threads} threads: {err:?}");
        assert_eq!(got.len(), expected.len(), "{threads} threads");
        assert!(got == expected, "{threads} threads: bytes differ");
    }
    // The same while the reader holds unread bytes when the long block is met (a record
    // that straddles the switch), with and without windows shared with other threads.
    for share in [false, true] {
        let raw = Input::open(&path, ReadMode::Read).unwrap();
        let mut input = Input::decompress_with(raw, Compression::Bzip2, 2).unwrap();
        if share {
            assert!(input.share_windows());
        }
        let mut got = Vec::new();
        loop {
            let have = input.fill(4096).unwrap();
            if have == 0 {
                break;
            }
            let take = have.min(1000);
            got.extend_from_slice(&input.available()[..take]);
            input.consume(take);
            if share {
                while input
                    .take_retired(input.generation().saturating_sub(1))
                    .is_some()
                {}
            }
        }
        assert!(got == expected, "sharing {share}: {} bytes", got.len());
    }
    // An input that cannot be read again: every byte before the block, then the error
    // naming it.
    let raw = Input::from_reader(std::io::Cursor::new(file.clone()));
    let mut input = Input::decompress_with(raw, Compression::Bzip2, 2).unwrap();
    let mut got = Vec::new();
    let err = loop {
        match input.fill(1) {
            Ok(0) => panic!("the over-long block is not read without a file"),
            Ok(have) => {
                got.extend_from_slice(&input.available()[..have]);
                input.consume(have);
            }
            Err(e) => break e.to_string(),
        }
    };
    assert!(
        got == a,
        "every block before the long one: {} bytes",
        got.len()
    );
    assert!(
        err.contains("stream 2") && err.contains("longer than a level-1 block can be"),
        "{err}"
    );
    let (got, err) = read_here(&path);
    assert!(got == a, "on the calling thread too: {} bytes", got.len());
    assert!(err.is_some_and(|e| e.contains("longer than a level-1 block")));
}
