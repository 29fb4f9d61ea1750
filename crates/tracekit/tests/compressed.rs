//! Compressed traces: every compressed corpus file reads to the same packets as its
//! content decompressed by the system tool (gzip, bzip2, xz), and a cut stream delivers
//! every packet before the cut, then an error.

use std::process::Command;

use tracekit::OwnedPacket;
use tracekit_testdata::{corpus, corpus_uri, have, manifest};

fn read_all(uri: &str) -> (Vec<OwnedPacket>, Option<tracekit::Error>) {
    let mut s = tracekit::open(uri).unwrap();
    let mut out = Vec::new();
    loop {
        match s.next_packet() {
            Ok(Some(p)) => out.push(p.to_owned()),
            Ok(None) => return (out, None),
            Err(e) => return (out, Some(e)),
        }
    }
}

#[test]
fn every_compressed_corpus_file_matches_its_decompressed_content() {
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for entry in manifest() {
        let tool = match entry.container.split('(').next().unwrap_or("") {
            "gzip" => "gzip",
            "bzip2" => "bzip2",
            "xz" => "xz",
            _ => continue,
        };
        if entry.container.contains("legacy DAG")
            || entry.container.contains("truncated")
            || !have(tool)
        {
            continue;
        }
        let plain = dir.path().join(format!("{}.plain", entry.file));
        let out = Command::new(tool)
            .arg("-dc")
            .arg(corpus(&entry.file))
            .output()
            .unwrap();
        assert!(out.status.success(), "{tool} -dc {}", entry.file);
        std::fs::write(&plain, out.stdout).unwrap();
        let (a, err_a) = read_all(&corpus_uri(&entry.file));
        let (b, err_b) = read_all(plain.to_str().unwrap());
        assert!(
            err_a.is_none() && err_b.is_none(),
            "{}: {err_a:?} {err_b:?}",
            entry.file
        );
        assert_eq!(a.len(), b.len(), "{}", entry.file);
        assert!(a == b, "{}: packets differ", entry.file);
        if let Some(n) = entry.packets
            && !entry.container.contains("legacy")
        {
            assert_eq!(a.len() as u64, n, "{}: manifest count", entry.file);
        }
        let s = tracekit::open(&corpus_uri(&entry.file)).unwrap();
        assert_eq!(s.compression().name(), tool, "{}", entry.file);
        checked += 1;
    }
    assert!(checked >= 10, "checked {checked}");
}

#[test]
fn cut_stream_delivers_the_packets_before_the_cut() {
    let (packets, err) = read_all(&corpus_uri("corrupt__fragtest_truncated_stream.erf.gz"));
    assert_eq!(packets.len(), 5025);
    let err = err.unwrap();
    let msg = err.to_string();
    assert!(
        msg.contains("corrupt__fragtest_truncated_stream.erf.gz"),
        "{msg}"
    );
    assert!(msg.contains("gzip stream is damaged or cut short"), "{msg}");
    // the same packets as the first 5025 of the whole file
    let (whole, _) = read_all(&corpus_uri("libtrace__fragtest.erf.gz"));
    assert!(packets[..] == whole[..5025]);
}

/// The codec's command-line tool and the output name's extension.
fn tool_of(codec: tracekit::Compression) -> (&'static str, &'static str) {
    use tracekit::Compression as C;
    match codec {
        C::Gzip => ("gzip", "gz"),
        C::Bzip2 => ("bzip2", "bz2"),
        C::Zstd => ("zstd", "zst"),
        C::Xz => ("xz", "xz"),
        C::Lz4 => ("lz4", "lz4"),
        C::None => unreachable!(),
    }
}

/// Converts a corpus file into `out` (format and codec from the name) with `threads`.
fn write(input: &str, out: &std::path::Path, threads: usize) -> tracekit::SinkReport {
    let mut source = tracekit::open(input).unwrap();
    let options = tracekit::CreateOptions {
        ts_resolution: Some(source.ts_resolution()),
        threads,
        ..Default::default()
    };
    let mut sink = tracekit::create(out.to_str().unwrap(), &options).unwrap();
    tracekit::copy(&mut source, &mut sink, |_| {})
        .map_err(|(e, _)| format!("{e:?}"))
        .unwrap();
    sink.finish().unwrap()
}

#[test]
fn every_codec_and_format_is_accepted_by_the_system_tools() {
    use tracekit::Compression as C;
    let dir = tempfile::tempdir().unwrap();
    // Ethernet with ns time stamps: representable in all three formats; 1.6 MB, so that
    // every codec writes several blocks.
    let input = corpus_uri("zeek__smb__smb2.pcap");
    let (original, _) = read_all(&input);
    for format in ["pcap", "pcapng", "erf"] {
        let plain = dir.path().join(format!("plain.{format}"));
        write(&input, &plain, 0);
        let plain_bytes = std::fs::read(&plain).unwrap();
        for codec in [C::Gzip, C::Bzip2, C::Zstd, C::Xz, C::Lz4] {
            let (tool, ext) = tool_of(codec);
            let out = dir.path().join(format!("x.{format}.{ext}"));
            let report = write(&input, &out, 2);
            assert_eq!(
                report.bytes,
                std::fs::metadata(&out).unwrap().len(),
                "{format}.{ext}"
            );
            // tracekit reads it back: the same packets
            let s = tracekit::open(out.to_str().unwrap()).unwrap();
            assert_eq!((s.compression(), s.format_name()), (codec, format));
            let (back, err) = read_all(out.to_str().unwrap());
            assert!(err.is_none());
            assert_eq!(back.len(), original.len(), "{format}.{ext}");
            if !have(tool) {
                continue;
            }
            let test = Command::new(tool).arg("-t").arg(&out).output().unwrap();
            assert!(
                test.status.success(),
                "{tool} -t {format}.{ext}: {}",
                String::from_utf8_lossy(&test.stderr)
            );
            let unpacked = Command::new(tool).arg("-dc").arg(&out).output().unwrap();
            assert!(unpacked.status.success());
            assert!(
                unpacked.stdout == plain_bytes,
                "{tool} -dc {format}.{ext} differs from the plain output"
            );
        }
    }
    // pigz reads tracekit's multi-member gzip too
    if have("pigz") {
        let out = dir.path().join("x.pcap.gz");
        let unpacked = Command::new("pigz").arg("-dc").arg(&out).output().unwrap();
        assert!(unpacked.status.success());
        assert!(unpacked.stdout == std::fs::read(dir.path().join("plain.pcap")).unwrap());
    }
}

#[test]
fn compressed_output_does_not_depend_on_the_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus_uri("ndpi__1kxun.pcap");
    let one = dir.path().join("one.pcapng.zst");
    let two = dir.path().join("two.pcapng.zst");
    write(&input, &one, 1);
    write(&input, &two, 2);
    assert!(std::fs::read(&one).unwrap() == std::fs::read(&two).unwrap());
}
