//! The parallel gzip reader (`tracekit_io::pargzip`) against the system tools: files made
//! by `gzip`, `pigz` and `bgzip` at levels 1, 6 and 9 from real traces (the corpus pcaps),
//! random bytes and a mix, decoded with small chunks (many chunks, many markers) must be
//! byte-exact with `gzip -dc`; damaged files (cut, a flipped bit) must give what the
//! sequential reader gives: the same bytes, then an error. A tool that is missing skips
//! its part with a message, unless `TRACEKIT_REQUIRE_ORACLES=1`.

use std::io::Write;
use std::process::{Command, Stdio};

use proptest::prelude::*;
use tracekit_io::pargzip::{Config, gunzip_file_parallel, gunzip_parallel};
use tracekit_io::{Compression, decompress_here};

/// Chunk sizes and worker counts every file is decoded with.
const SPLITS: [(usize, usize); 3] = [(16 << 10, 2), (100 << 10, 3), (1 << 20, 2)];

/// Runs `tool args` with `input` on stdin; its stdout.
fn pipe(tool: &str, args: &[&str], input: &[u8]) -> Vec<u8> {
    let mut child = Command::new(tool)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    out.stdout
}

/// The parallel reader's bytes and error, the same whether it reads `packed` from a
/// stream or decodes it in place in a mapped file (asserted here).
fn parallel(packed: &[u8], chunk: usize, workers: usize) -> (Vec<u8>, Option<String>) {
    let cfg = Config::with_chunk(workers, chunk);
    let mut got = Vec::new();
    let r = gunzip_parallel(std::io::Cursor::new(packed.to_vec()), cfg, |b| {
        got.extend_from_slice(b);
        true
    });
    let read = (got, r.err().map(|e| e.to_string()));
    let mut file = tempfile::tempfile().unwrap();
    std::io::Write::write_all(&mut file, packed).unwrap();
    let mut got = Vec::new();
    let r = gunzip_file_parallel(file, cfg, |b| {
        got.extend_from_slice(b);
        true
    });
    let mapped = (got, r.err().map(|e| e.to_string()));
    assert!(
        read == mapped,
        "read and mapped differ: {:?} / {:?}",
        read.1,
        mapped.1
    );
    read
}

fn sequential(packed: &[u8]) -> (Vec<u8>, Option<String>) {
    let mut got = Vec::new();
    let r = decompress_here(packed, Compression::Gzip, false, |b| {
        got.extend_from_slice(b);
        true
    });
    (got, r.err().map(|e| e.to_string()))
}

/// Every pcap of the corpus, one after the other (5.5 MB of real traffic).
fn trace() -> Vec<u8> {
    let dir = tracekit_testdata::corpus_dir();
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
        .collect();
    names.sort();
    names
        .iter()
        .flat_map(|p| std::fs::read(p).unwrap())
        .collect()
}

fn random(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Random stretches (stored blocks), text and runs (dynamic and fixed blocks).
fn mixed(seed: u64) -> Vec<u8> {
    let mut out = Vec::new();
    let mut x = seed;
    for i in 0..40 {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let len = 1000 + (x >> 40) as usize % 60_000;
        match i % 4 {
            0 => out.extend(random(len, x)),
            1 => out.extend(b"GET /index.html HTTP/1.1\r\nHost: example.org\r\n".repeat(len / 40)),
            2 => out.extend(std::iter::repeat_n((x >> 8) as u8, len)),
            _ => out.extend((0..len).map(|k| ((k as u64).wrapping_mul(x) >> 20) as u8 & 0x3f)),
        }
    }
    out
}

fn compress(tool: &str, level: u32, data: &[u8]) -> Vec<u8> {
    let level = format!("-{level}");
    match tool {
        "bgzip" => pipe(tool, &["-c", "-l", &level[1..]], data),
        _ => pipe(tool, &["-c", &level], data),
    }
}

#[test]
fn byte_exact_with_gzip_dc_for_gzip_pigz_and_bgzip_files() {
    if !tracekit_testdata::have("gzip") {
        return;
    }
    let inputs = [
        ("trace", trace()),
        ("random", random(3 << 20, 9)),
        ("mixed", mixed(3)),
    ];
    for tool in ["gzip", "pigz", "bgzip"] {
        if !tracekit_testdata::have(tool) {
            continue;
        }
        for level in [1, 6, 9] {
            for (what, data) in &inputs {
                let packed = compress(tool, level, data);
                let want = pipe("gzip", &["-dc"], &packed);
                assert!(want == *data, "{tool} -{level} {what}: gzip -dc disagrees");
                for (chunk, workers) in SPLITS {
                    let (got, err) = parallel(&packed, chunk, workers);
                    assert_eq!(err, None, "{tool} -{level} {what} chunk {chunk}");
                    assert!(
                        got == want,
                        "{tool} -{level} {what} chunk {chunk}: {} of {} bytes",
                        got.len(),
                        want.len()
                    );
                }
            }
        }
    }
}

#[test]
fn concatenated_files_and_an_empty_member_decode() {
    if !tracekit_testdata::have("gzip") {
        return;
    }
    let a = trace();
    let b = mixed(5);
    let mut packed = compress("gzip", 6, &a);
    packed.extend(compress("gzip", 1, b""));
    packed.extend(compress("gzip", 9, &b));
    packed.extend(compress("gzip", 1, &a[..100_000]));
    let want = pipe("gzip", &["-dc"], &packed);
    assert_eq!(want.len(), a.len() + b.len() + 100_000);
    for (chunk, workers) in SPLITS {
        let (got, err) = parallel(&packed, chunk, workers);
        assert_eq!(err, None, "chunk {chunk}");
        assert!(
            got == want,
            "chunk {chunk}: {} of {}",
            got.len(),
            want.len()
        );
    }
}

#[test]
fn damaged_files_give_what_the_sequential_reader_gives() {
    if !tracekit_testdata::have("gzip") {
        return;
    }
    let data = trace();
    let packed = compress("gzip", 6, &data);
    let n = packed.len();
    let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
    for cut in [n / 3, n / 2, n - 100, n - 8, n - 3] {
        cases.push((format!("cut at {cut}"), packed[..cut].to_vec()));
    }
    for bit in [
        n * 8 / 4 + 3,
        n * 8 / 2 + 5,
        n * 8 * 9 / 10,
        (n - 6) * 8 + 1,
    ] {
        let mut bad = packed.clone();
        bad[bit / 8] ^= 1 << (bit % 8);
        cases.push((format!("bit {bit} flipped"), bad));
    }
    for (what, bad) in cases {
        let (want, want_err) = sequential(&bad);
        let want_err =
            want_err.unwrap_or_else(|| panic!("{what}: the sequential reader saw nothing"));
        assert!(data.starts_with(&want[..want.len().min(n / 4)]));
        for (chunk, workers) in SPLITS {
            let (got, err) = parallel(&bad, chunk, workers);
            let err = err.unwrap_or_else(|| panic!("{what} chunk {chunk}: no error"));
            assert!(
                got == want,
                "{what} chunk {chunk}: {} bytes, the sequential reader {} ({want_err}; {err})",
                got.len(),
                want.len()
            );
            assert!(err.contains("gzip stream is damaged"), "{what}: {err}");
            assert!(
                err.contains(&format!("decompressed byte offset {}", got.len())),
                "{what}: {err}"
            );
        }
    }
}

#[test]
fn trailing_data_is_reported_after_every_byte() {
    let data = mixed(11);
    let mut packed = Vec::new();
    let mut w = flate2::write::GzEncoder::new(&mut packed, flate2::Compression::new(6));
    w.write_all(&data).unwrap();
    w.finish().unwrap();
    let end = packed.len();
    packed.extend_from_slice(b"not gzip at all");
    for (chunk, workers) in SPLITS {
        let (got, err) = parallel(&packed, chunk, workers);
        assert!(got == data, "chunk {chunk}");
        let err = err.unwrap();
        assert!(err.contains("trailing data after member 1"), "{err}");
        assert!(
            err.contains(&format!("15 bytes at compressed byte offset {end}")),
            "{err}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Random data, level and chunk boundaries: byte-exact with the input.
    #[test]
    fn random_chunk_boundaries_are_byte_exact(
        parts in proptest::collection::vec((0u8..3, 1usize..40_000, any::<u64>()), 1..20),
        level in 0u32..10,
        chunk in 1024usize..40_000,
        workers in 1usize..4,
    ) {
        let mut data = Vec::new();
        for (kind, len, seed) in parts {
            match kind {
                0 => data.extend(random(len, seed)),
                1 => data.extend((0..len).map(|k| b"abcdefgh"[(k * (seed as usize % 7 + 1)) % 8])),
                _ => data.extend((0..len).map(|k| (k as u64 ^ seed) as u8 & 0x0f)),
            }
        }
        let mut packed = Vec::new();
        let mut w = flate2::write::GzEncoder::new(&mut packed, flate2::Compression::new(level));
        w.write_all(&data).unwrap();
        w.finish().unwrap();
        let (got, err) = parallel(&packed, chunk, workers);
        prop_assert_eq!(err, None);
        prop_assert!(got == data, "{} of {} bytes", got.len(), data.len());
    }
}

/// Peak resident set of this process so far, in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmHWM in /proc/self/status");
    kb * 1024
}

/// 256 MiB of zeros (about 250 KiB compressed) decode with small chunks (each inflates
/// past the workers' output cap, so the sequencer streams them) in bounded memory,
/// measured in a child process.
#[test]
fn a_bomb_decodes_in_bounded_memory() {
    const BOMB: u64 = 256 << 20;
    const CHILD: &str = "TRACEKIT_PARGZIP_BOMB";
    if let Ok(path) = std::env::var(CHILD) {
        let file = std::fs::File::open(path).unwrap();
        let mut total = 0u64;
        let r = gunzip_parallel(file, Config::with_chunk(2, 16 << 10), |b| {
            assert!(b.iter().all(|&x| x == 0));
            total += b.len() as u64;
            true
        });
        println!("DELIVERED {total} {}", r.is_ok());
        println!("PEAK {}", peak_rss());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bomb.gz");
    let mut w = flate2::write::GzEncoder::new(
        std::fs::File::create(&path).unwrap(),
        flate2::Compression::new(6),
    );
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..BOMB >> 20 {
        w.write_all(&zeros).unwrap();
    }
    w.finish().unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["a_bomb_decodes_in_bounded_memory", "--exact", "--nocapture"])
        .env(CHILD, &path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains(&format!("DELIVERED {BOMB} true")),
        "{stdout}"
    );
    let peak: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("PEAK "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    eprintln!(
        "parallel gzip bomb: peak {:.1} MiB",
        peak as f64 / f64::from(1 << 20)
    );
    assert!(peak < 64 << 20, "peak {peak}");
}
