//! Generated benchmark inputs, cached in `target/bench-data/` (or `$TRACEKIT_BENCH_DIR`).

use std::path::{Path, PathBuf};

use tracekit::{CreateOptions, TsResolution};

use crate::traffic::{GenOptions, generate};

/// Packets per input: 400,000 under `cargo bench` (which passes `--bench`), 2,000 when the
/// benchmarks run once as tests.
pub fn packets() -> u64 {
    if std::env::args().any(|a| a == "--bench") {
        400_000
    } else {
        2_000
    }
}

/// Where inputs are kept.
pub fn dir() -> PathBuf {
    std::env::var("TRACEKIT_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-data"))
}

/// The generator's [`packets`] packets cut to `snaplen`, as a µs pcap file named
/// `{packets}-{name}`; written on first use.
pub fn generated(name: &str, snaplen: u32) -> String {
    let dir = dir();
    std::fs::create_dir_all(&dir).expect("bench-data directory");
    let path = dir.join(format!("{}-{name}", packets()));
    if !path.exists() {
        let options = CreateOptions {
            ts_resolution: Some(TsResolution::MICRO),
            snaplen: Some(snaplen),
            ..CreateOptions::default()
        };
        let tmp = dir.join(format!("partial-{}-{name}", std::process::id()));
        let mut sink =
            tracekit::create(tmp.to_str().expect("UTF-8 path"), &options).expect("create input");
        generate(
            GenOptions {
                packets: packets(),
                ..GenOptions::default()
            },
            |p| {
                sink.write_packet(&p.snapped(snaplen as usize))
                    .expect("write input")
            },
        );
        sink.finish().expect("finish input");
        std::fs::rename(tmp, &path).expect("rename input");
    }
    path.to_str().expect("UTF-8 path").to_string()
}

/// Writes the generator's first `packets` packets, whole, as a pcap file `{packets}.pcap`
/// in `dir`; returns its path (for tests that compare runs of different lengths).
pub fn write_pcap(dir: &Path, packets: u64) -> String {
    let path = dir.join(format!("{packets}.pcap"));
    let uri = path.to_str().expect("UTF-8 path").to_string();
    let mut sink = tracekit::create(&uri, &CreateOptions::default()).expect("create trace");
    generate(
        GenOptions {
            packets,
            ..GenOptions::default()
        },
        |p| sink.write_packet(p).expect("write trace"),
    );
    sink.finish().expect("finish trace");
    uri
}
