//! Compressed traces: every compressed corpus file reads to the same packets as its
//! content decompressed by the system tool (gzip, bzip2, xz), and a cut stream delivers
//! every packet before the cut, then an error.

use std::process::Command;

use tracekit::{CaptureSource, OwnedPacket};
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
