//! Hostile compressed input: size fields that lie, decompression bombs of every codec
//! (memory peak measured in a child process), trailing data after the last unit, and
//! damage that only a checksum can see.
//!
//! The bomb tests re-run this test binary as a child (`TRACEKIT_HOSTILE_CHILD` names the
//! case) so that the peak resident size (`VmHWM`) is the decompression's own, not that of
//! whatever else the test harness ran in the same process.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use tracekit_io::{CompressOptions, Compression, Input, ParallelWriter, ReadMode};

const CHILD: &str = "TRACEKIT_HOSTILE_CHILD";

/// The memory a decompression may use, whatever the file claims: the decoders' windows
/// and a few 1 MiB blocks per worker (the test binary itself takes a few MiB).
const BOUND: u64 = 64 << 20;

/// Decompressed size of the bombs: more than the bound, so that a reader that keeps a
/// stream (or what a size field claims) in memory fails the test.
const BOMB: u64 = 192 << 20;

const CODECS: [Compression; 5] = [
    Compression::Gzip,
    Compression::Bzip2,
    Compression::Zstd,
    Compression::Xz,
    Compression::Lz4,
];

/// Peak resident set of this process so far, in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("VmHWM in /proc/self/status");
    let kb: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb * 1024
}

/// Reads `path` (compressed with `codec`) to its end with `threads`: the bytes delivered
/// and the error that ended it, if any. The bytes are checked to be zeros, not kept.
fn drain_file(path: &Path, codec: Compression, threads: usize) -> (u64, Option<String>) {
    let raw = Input::open(path, ReadMode::Read).unwrap();
    let mut input = match Input::decompress_with(raw, codec, threads) {
        Ok(i) => i,
        Err(e) => return (0, Some(e.to_string())),
    };
    let mut total = 0u64;
    loop {
        // Ask for one byte: whatever is there comes out before an error.
        match input.fill(1) {
            Ok(0) => return (total, None),
            Ok(have) => {
                let take = have;
                assert!(input.available()[..take].iter().all(|&b| b == 0));
                input.consume(take);
                total += take as u64;
            }
            Err(e) => return (total, Some(e.to_string())),
        }
    }
}

/// In the child: runs the case `codec:threads:path:expected` and prints the peak.
fn child_case(case: &str) {
    let mut parts = case.splitn(4, ':');
    let codec = Compression::from_name(parts.next().unwrap()).unwrap();
    let threads: usize = parts.next().unwrap().parse().unwrap();
    let expected = parts.next().unwrap().to_string();
    let path = PathBuf::from(parts.next().unwrap());
    let (total, err) = drain_file(&path, codec, threads);
    println!("DELIVERED {total}");
    println!("ERROR {}", err.unwrap_or_default());
    println!("EXPECTED {expected}");
    println!("PEAK {}", peak_rss());
}

/// Runs `test` of this binary in a child on `path`; returns (peak, delivered, error).
fn in_child(test: &str, codec: Compression, threads: usize, path: &Path) -> (u64, u64, String) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(
            CHILD,
            format!("{}:{threads}:-:{}", codec.name(), path.display()),
        )
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child {codec} {threads}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let field = |name: &str| -> String {
        stdout
            .lines()
            .find_map(|l| l.split_once(name).map(|(_, value)| value))
            .unwrap_or_else(|| panic!("{name} in {stdout}"))
            .trim()
            .to_string()
    };
    (
        field("PEAK ").parse().unwrap(),
        field("DELIVERED ").parse().unwrap(),
        field("ERROR"),
    )
}

/// Streams `len` zero bytes into `w` in 1 MiB writes.
fn write_zeros(w: &mut dyn Write, len: u64) {
    let zeros = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        let n = left.min(zeros.len() as u64) as usize;
        w.write_all(&zeros[..n]).unwrap();
        left -= n as u64;
    }
}

/// A bomb: `len` zeros compressed with `codec` as one unit (member, stream, frame),
/// written by streaming.
fn bomb(dir: &Path, codec: Compression, len: u64) -> PathBuf {
    let path = dir.join(format!("bomb.{}", codec.name()));
    let file = BufWriter::new(File::create(&path).unwrap());
    match codec {
        Compression::Gzip => {
            let mut e = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
            write_zeros(&mut e, len);
            e.finish().unwrap().flush().unwrap();
        }
        Compression::Bzip2 => {
            let mut e = bzip2::write::BzEncoder::new(file, bzip2::Compression::fast());
            write_zeros(&mut e, len);
            e.finish().unwrap().flush().unwrap();
        }
        Compression::Zstd => {
            let mut e = zstd::stream::write::Encoder::new(file, 1).unwrap();
            write_zeros(&mut e, len);
            e.finish().unwrap().flush().unwrap();
        }
        Compression::Xz => {
            let mut e = liblzma::write::XzEncoder::new(file, 0);
            write_zeros(&mut e, len);
            e.finish().unwrap().flush().unwrap();
        }
        Compression::Lz4 => {
            let mut e = lz4_flex::frame::FrameEncoder::new(file);
            write_zeros(&mut e, len);
            e.finish().unwrap().flush().unwrap();
        }
        Compression::None => unreachable!(),
    }
    path
}

/// A gzip member in tracekit's layout (`TK` size field) around raw deflate data, with
/// the given CRC and ISIZE; the size field is the member's real size unless `tk` is set.
fn tk_member(deflate: &[u8], crc: u32, isize: u32, tk: Option<u32>) -> Vec<u8> {
    let total = (20 + deflate.len() + 8) as u32;
    let mut m = vec![
        0x1f, 0x8b, 8, 0x04, 0, 0, 0, 0, 0, 0xff, 8, 0, b'T', b'K', 4, 0,
    ];
    m.extend_from_slice(&tk.unwrap_or(total).to_le_bytes());
    m.extend_from_slice(deflate);
    m.extend_from_slice(&crc.to_le_bytes());
    m.extend_from_slice(&isize.to_le_bytes());
    m
}

/// A tracekit-layout member holding `len` zeros (an honest one: about 1 KiB of deflate
/// data per MiB), written by streaming.
fn tk_zero_member(len: u64) -> Vec<u8> {
    let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
    write_zeros(&mut e, len);
    let deflate = e.finish().unwrap();
    let mut crc = crc32fast::Hasher::new();
    let zeros = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        let n = left.min(1 << 20) as usize;
        crc.update(&zeros[..n]);
        left -= n as u64;
    }
    tk_member(&deflate, crc.finalize(), len as u32, None)
}

fn peak_report(what: &str, peak: u64) {
    eprintln!("{what}: peak {:.1} MiB", peak as f64 / f64::from(1 << 20));
}

#[test]
fn bombs_of_every_codec_decompress_in_bounded_memory() {
    if let Ok(case) = std::env::var(CHILD) {
        return child_case(&case);
    }
    let dir = tempfile::tempdir().unwrap();
    let mut peaks = Vec::new();
    for codec in CODECS {
        let path = bomb(dir.path(), codec, BOMB);
        let threads: &[usize] = match codec {
            // the parallel stream path and the sequential one (a gzip file without size
            // fields is always read sequentially; see the next test for tracekit's)
            Compression::Bzip2 | Compression::Xz => &[1, 4],
            _ => &[1],
        };
        for &t in threads {
            let (peak, delivered, err) = in_child(
                "bombs_of_every_codec_decompress_in_bounded_memory",
                codec,
                t,
                &path,
            );
            peak_report(&format!("{codec} bomb, {t} threads"), peak);
            assert_eq!((delivered, err.as_str()), (BOMB, ""), "{codec} {t}");
            assert!(peak < BOUND, "{codec} {t} threads: peak {peak}");
            peaks.push(peak);
        }
        std::fs::remove_file(path).unwrap();
    }
}

#[test]
fn tracekit_gzip_members_that_inflate_far_are_streamed() {
    if let Ok(case) = std::env::var(CHILD) {
        return child_case(&case);
    }
    let dir = tempfile::tempdir().unwrap();
    // An honest tracekit-layout member of BOMB zeros (its deflate data is about 190 KiB,
    // under the splitter's limit), twice.
    let member = tk_zero_member(BOMB);
    assert!(member.len() < tracekit_io::MAX_SPLIT_MEMBER);
    let path = dir.path().join("far.gz");
    let mut f = File::create(&path).unwrap();
    f.write_all(&member).unwrap();
    f.write_all(&member).unwrap();
    drop(f);
    for t in [2, 4] {
        let (peak, delivered, err) = in_child(
            "tracekit_gzip_members_that_inflate_far_are_streamed",
            Compression::Gzip,
            t,
            &path,
        );
        peak_report(&format!("tracekit-layout gzip bomb, {t} threads"), peak);
        assert_eq!((delivered, err.as_str()), (2 * BOMB, ""), "{t} threads");
        assert!(peak < BOUND, "{t} threads: peak {peak}");
    }
}

#[test]
fn gzip_size_fields_that_lie_cost_no_memory() {
    if let Ok(case) = std::env::var(CHILD) {
        return child_case(&case);
    }
    let dir = tempfile::tempdir().unwrap();
    let zeros = [0u8; 5];
    let deflate = {
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(&zeros).unwrap();
        e.finish().unwrap()
    };
    let crc = crc32fast::hash(&zeros);
    let cases = [
        // ISIZE claims 4 GiB: the data is 5 bytes, the trailer is wrong.
        (
            "isize",
            tk_member(&deflate, crc, 0xffff_fff0, None),
            "trailer (ISIZE) says 4294967280",
        ),
        // The TK field claims 4 GiB on a 33-byte file: the sequential path reads it.
        ("tk", tk_member(&deflate, crc, 5, Some(0xffff_ffff)), ""),
        // ISIZE says 1 MiB (under the whole-member limit) for 5 bytes.
        (
            "isize-1m",
            tk_member(&deflate, crc, 1 << 20, None),
            "inflates to 5 bytes, its trailer (ISIZE) says 1048576",
        ),
        // ISIZE says 1 byte for 5: a real reason, not "buffer too small".
        (
            "isize-small",
            tk_member(&deflate, crc, 1, None),
            "inflates to more than the 1 bytes its trailer (ISIZE) gives",
        ),
        // Both lie, twice.
        (
            "both",
            [
                tk_member(&deflate, crc, 0xffff_ffff, Some(0xffff_fff0)),
                tk_member(&deflate, crc, 0xffff_ffff, Some(0xffff_fff0)),
            ]
            .concat(),
            "",
        ),
    ];
    for (name, bytes, want) in cases {
        let path = dir.path().join(format!("{name}.gz"));
        std::fs::write(&path, &bytes).unwrap();
        for t in [1, 2] {
            let (peak, delivered, err) = in_child(
                "gzip_size_fields_that_lie_cost_no_memory",
                Compression::Gzip,
                t,
                &path,
            );
            peak_report(&format!("gzip size lie {name}, {t} threads"), peak);
            assert!(peak < 64 << 20, "{name} {t}: peak {peak}");
            if want.is_empty() {
                // Either the data (the sequential decoder ignores the size field) or a
                // clear error naming the member.
                assert!(
                    (delivered % 5 == 0
                        && delivered > 0
                        && (err.is_empty() || err.contains("member")))
                        || err.contains("member"),
                    "{name} {t}: {delivered} {err}"
                );
            } else if t > 1 {
                // Only the parallel reader trusts the layout; the sequential one reads
                // the member as plain gzip (its own ISIZE check names the failure).
                assert!(err.contains(want), "{name} {t}: {err}");
                assert!(err.contains("member 1"), "{name} {t}: {err}");
            } else {
                assert!(!err.is_empty(), "{name} {t}: a lying trailer is an error");
            }
        }
    }
}

/// `data` written by tracekit's parallel writer with `codec` (several units).
fn written(data: &[u8], codec: Compression) -> Vec<u8> {
    let mut w = ParallelWriter::new(
        Vec::new(),
        CompressOptions {
            codec,
            level: Some(if codec == Compression::Xz { 0 } else { 1 }),
            threads: 2,
        },
    )
    .unwrap();
    w.write_all(data).unwrap();
    w.finish().unwrap().0
}

/// Reads `packed` to the end or the first error; the bytes and the error.
fn read_all(packed: Vec<u8>, codec: Compression, threads: usize) -> (Vec<u8>, Option<String>) {
    let raw = Input::from_reader(io::Cursor::new(packed));
    let mut input = Input::decompress_with(raw, codec, threads).unwrap();
    let mut got = Vec::new();
    loop {
        match input.fill(1) {
            Ok(0) => return (got, None),
            Ok(have) => {
                let take = have;
                got.extend_from_slice(&input.available()[..take]);
                input.consume(take);
            }
            Err(e) => return (got, Some(e.to_string())),
        }
    }
}

/// Bytes that compress, but not to nothing.
fn sample(len: usize) -> Vec<u8> {
    let mut x = 0x1234_5678u32;
    (0..len)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            if i % 7 < 3 {
                (x % 26) as u8 + b'a'
            } else {
                b' '
            }
        })
        .collect()
}

#[test]
fn trailing_data_after_every_codec_keeps_every_byte_before_it() {
    let data = sample(5 << 20);
    for codec in CODECS {
        let packed = written(&data, codec);
        for garbage in [
            &b"\n"[..],
            &[0xa5; 16][..],
            b"this is not compressed at all",
        ] {
            let mut with = packed.clone();
            with.extend_from_slice(garbage);
            for threads in [1, 2] {
                let (got, err) = read_all(with.clone(), codec, threads);
                assert!(
                    got == data,
                    "{codec} {threads}: {} of {}",
                    got.len(),
                    data.len()
                );
                let err = err.unwrap_or_else(|| panic!("{codec} {threads}: no error"));
                assert!(err.contains("trailing data"), "{codec} {threads}: {err}");
                assert!(
                    err.contains(&format!("compressed byte offset {}", packed.len())),
                    "{codec} {threads}: {err}"
                );
                assert!(
                    err.contains(&format!("decompressed byte offset {}", data.len())),
                    "{codec} {threads}: {err}"
                );
                let n = garbage.len();
                assert!(
                    err.contains(&format!("{n} byte{} at", if n == 1 { "" } else { "s" })),
                    "{codec} {threads}: {err}"
                );
            }
        }
    }
}

#[test]
fn xz_stream_padding_and_skippable_frames_are_not_trailing_data() {
    let data = sample(100_000);
    let mut xz = written(&data, Compression::Xz);
    xz.extend_from_slice(&[0; 8]);
    for threads in [1, 2] {
        let (got, err) = read_all(xz.clone(), Compression::Xz, threads);
        assert!(got == data && err.is_none(), "{threads}: {err:?}");
    }
    xz.extend_from_slice(&[0; 3]);
    let (got, err) = read_all(xz, Compression::Xz, 1);
    assert!(got == data, "{} of {}", got.len(), data.len());
    assert!(
        err.as_deref().unwrap_or("").contains("trailing data"),
        "{err:?}"
    );
    for codec in [Compression::Zstd, Compression::Lz4] {
        let mut packed = written(&data, codec);
        packed.extend_from_slice(&[0x5a, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 1, 2, 3]);
        packed.extend(written(&data, codec));
        let (got, err) = read_all(packed, codec, 1);
        assert!(err.is_none(), "{codec}: {err:?}");
        assert!(got == [&data[..], &data[..]].concat(), "{codec}");
    }
}

#[test]
fn damage_in_zstd_and_lz4_frames_is_detected() {
    let data = sample(6 << 20);
    for codec in [Compression::Zstd, Compression::Lz4] {
        let packed = written(&data, codec);
        // Several places, several kinds of damage, each in the middle of a frame.
        for (at, pattern) in [
            (packed.len() / 2, 0xffu8),
            (packed.len() / 3, 0x00),
            (packed.len() * 3 / 4, 0x5a),
        ] {
            let mut damaged = packed.clone();
            for b in &mut damaged[at..at + 64] {
                *b ^= pattern | 1;
            }
            let (got, err) = read_all(damaged, codec, 1);
            let err = err.unwrap_or_else(|| panic!("{codec} at {at}: damage not detected"));
            assert!(got.len() < data.len(), "{codec} at {at}");
            assert!(
                got[..] == data[..got.len()] || err.contains("frame"),
                "{codec}"
            );
            assert!(err.contains("frame "), "{codec} at {at}: {err}");
            assert!(err.contains("compressed byte offset"), "{codec}: {err}");
        }
    }
}

#[test]
fn cut_units_of_every_codec_end_in_an_error() {
    let data = sample(3 << 20);
    for codec in CODECS {
        let packed = written(&data, codec);
        for cut in [packed.len() - 1, packed.len() - 5, packed.len() / 2] {
            for threads in [1, 2] {
                let (got, err) = read_all(packed[..cut].to_vec(), codec, threads);
                assert!(got[..] == data[..got.len()], "{codec} {cut} {threads}");
                assert!(
                    err.is_some(),
                    "{codec} cut at {cut} of {} with {threads} threads: no error ({} bytes)",
                    packed.len(),
                    got.len()
                );
            }
        }
    }
}

#[test]
fn decompressing_on_this_thread_matches_the_threaded_readers() {
    let data = sample(3 << 20);
    for codec in CODECS {
        let mut packed = written(&data, codec);
        for split in [false, true] {
            let mut got = Vec::new();
            let n = tracekit_io::decompress_here(&packed[..], codec, split, |b| {
                got.extend_from_slice(b);
                true
            })
            .unwrap();
            assert_eq!(n, data.len() as u64);
            assert!(got == data, "{codec} {split}");
        }
        packed.push(b'\n');
        let mut got = 0;
        let err = tracekit_io::decompress_here(&packed[..], codec, true, |b| {
            got += b.len();
            true
        })
        .unwrap_err();
        assert_eq!(got, data.len());
        assert!(err.to_string().contains("trailing data"), "{err}");
    }
}
