//! tracekit-dag against the software card (dag-sys feature `dag-emulator`), fed with
//! corpus ERF files: what the card "receives" must come out of the capture exactly as
//! the file holds it (checked against tshark's reading of the file and against the file
//! reader), spread over streams by flow, with losses counted exactly, with poll
//! timeouts and stopping as documented; and what is transmitted must reach the card's
//! record log.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use dag_sys::emulator;
use tracekit_core::{CaptureSource, OwnedPacket};
use tracekit_dag::{DagOptions, DagSink, Polled};
use tracekit_erf::{ErfReader, ErfWriter, ErfWriterOptions};

/// A device path of its own for each test (settings are per device).
fn device() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(20);
    format!("/dev/dag{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

fn card(input: Option<&Path>, settings: &[(&str, &str)]) -> String {
    let dev = device();
    if let Some(input) = input {
        assert!(emulator::set_option(&dev, "DAGEMU_INPUT", input.to_str()));
    }
    for (k, v) in settings {
        assert!(emulator::set_option(&dev, k, Some(v)));
    }
    dev
}

/// A corpus file, decompressed into a temporary file when it is compressed (the card
/// plays plain ERF).
fn plain(name: &str, dir: &Path) -> PathBuf {
    let path = tracekit_testdata::corpus(name);
    if !name.ends_with(".gz") {
        return path;
    }
    let mut input = tracekit_io::Input::open(&path, Default::default()).unwrap();
    input.fill(tracekit_io::Compression::MAGIC_LEN).unwrap();
    let c = tracekit_io::Compression::detect(input.available());
    let mut input = tracekit_io::Input::decompress_with(input, c, 1).unwrap();
    let mut bytes = Vec::new();
    loop {
        if input.fill(1 << 16).unwrap() == 0 {
            break;
        }
        let n = input.available().len();
        bytes.extend_from_slice(input.available());
        input.consume(n);
    }
    let out = dir.join(name.trim_end_matches(".gz"));
    std::fs::write(&out, bytes).unwrap();
    out
}

fn file_packets(path: &Path) -> Vec<OwnedPacket> {
    let mut r = ErfReader::open(path).unwrap();
    let mut out = Vec::new();
    while let Some(p) = r.next_packet().unwrap() {
        out.push(p.to_owned());
    }
    out
}

fn drain(s: &mut impl CaptureSource) -> Vec<OwnedPacket> {
    let mut out = Vec::new();
    while let Some(p) = s.next_packet().unwrap() {
        out.push(p.to_owned());
    }
    out
}

const CORPUS: &[&str] = &[
    "libtrace__100_packets.erf",
    "libtrace__5_packets.erf",
    "erfconv__zeek__q-in-q_ext.erf",
    "erfconv__zeek__tunnels__6in4.erf",
    "libtrace__provenance.erf",
    "libtrace__fragtest.erf.gz",
];

/// Every record of the corpus ERF files comes out of one stream byte for byte, with
/// the file's time stamps, interfaces, loss counters and wire lengths: tshark's reading
/// of the file is the oracle for the header fields, tracekit's file reader for the
/// bytes (and the whole metadata).
#[test]
fn corpus_records_come_out_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let tshark = tracekit_testdata::have("tshark");
    for name in CORPUS {
        let path = plain(name, dir.path());
        let dev = card(
            Some(&path),
            &[("DAGEMU_END", "1"), ("DAGEMU_BUFFER", "65536")],
        );
        let mut s = tracekit_dag::open(&format!("dag:{dev}"), &DagOptions::default()).unwrap();
        let got = drain(&mut s);
        let want = file_packets(&path);
        assert_eq!(got.len(), want.len(), "{name}: packets");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.data(), w.data(), "{name}: packet {i} bytes");
            assert_eq!(g.meta(), w.meta(), "{name}: packet {i} metadata");
        }
        assert_eq!(s.stats().captured, want.len() as u64);
        assert_eq!(s.stats().dropped, 0);
        if tshark {
            let fields = tracekit_testdata::tshark_fields(
                &path,
                &["frame.time_epoch", "erf.flags.cap", "erf.lctr", "erf.wlen"],
            );
            assert_eq!(fields.len(), got.len(), "{name}: tshark's frames");
            for (i, (f, g)) in fields.iter().zip(&got).enumerate() {
                let m = g.meta();
                assert_eq!(
                    m.ts.as_unix_nanos(),
                    tracekit_testdata::epoch_ns(&f[0]),
                    "{name}: packet {i} time"
                );
                assert_eq!(
                    m.interface.to_string(),
                    f[1],
                    "{name}: packet {i} interface"
                );
                assert_eq!(m.loss.to_string(), f[2], "{name}: packet {i} lctr");
                if m.link != tracekit_core::LinkType::ERF {
                    assert_eq!(m.wire_len.to_string(), f[3], "{name}: packet {i} wlen");
                }
            }
        }
    }
}

/// With 2 and 4 receive streams, each read on a thread of its own, the union of the
/// streams is the input, every address pair (both directions) stays on one stream, and
/// the card's steering really spreads them.
#[test]
fn streams_split_the_input_by_flow() {
    let dir = tempfile::tempdir().unwrap();
    let path = plain("libtrace__fragtest.erf.gz", dir.path());
    let want = file_packets(&path);
    for n in [2u32, 4] {
        let dev = card(
            Some(&path),
            &[
                ("DAGEMU_END", "1"),
                ("DAGEMU_RX_STREAMS", &n.to_string()),
                ("DAGEMU_BUFFER", "32768"),
            ],
        );
        let uri = format!(
            "dag:{dev},{}",
            (0..n)
                .map(|i| (2 * i).to_string())
                .collect::<Vec<_>>()
                .join(",")
        );
        let streams = tracekit_dag::open_streams(&uri, &DagOptions::default()).unwrap();
        assert_eq!(streams.len(), n as usize);
        let per_stream: Vec<Vec<OwnedPacket>> = std::thread::scope(|scope| {
            let handles: Vec<_> = streams
                .into_iter()
                .map(|mut s| {
                    scope.spawn(move || {
                        let got = drain(&mut s);
                        assert_eq!(emulator::stream_drops(s.raw_fd(), s.stream()), 0);
                        got
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut got: Vec<(u64, Vec<u8>)> = per_stream
            .iter()
            .flatten()
            .map(|p| (p.meta().ts.to_erf(), p.data().to_vec()))
            .collect();
        let mut all: Vec<(u64, Vec<u8>)> = want
            .iter()
            .map(|p| (p.meta().ts.to_erf(), p.data().to_vec()))
            .collect();
        got.sort();
        all.sort();
        assert_eq!(got.len(), all.len(), "{n} streams: packets");
        assert!(got == all, "{n} streams: the union is not the input");
        let mut stream_of: HashMap<(String, String), usize> = HashMap::new();
        let mut used = HashSet::new();
        for (i, packets) in per_stream.iter().enumerate() {
            for p in packets {
                let d = tracekit_decode::Decoded::new(&p.as_packet());
                let (Some(a), Some(b)) = (d.src_addr(), d.dst_addr()) else {
                    continue;
                };
                let (a, b) = (a.to_string(), b.to_string());
                let key = if a <= b { (a, b) } else { (b, a) };
                let at = *stream_of.entry(key.clone()).or_insert(i);
                assert_eq!(at, i, "{n} streams: flow {key:?} on streams {at} and {i}");
                used.insert(i);
            }
        }
        assert_eq!(
            used.len(),
            n as usize,
            "{n} streams: some stream got no flow"
        );
    }
}

/// A slow reader behind a small buffer at a fixed arrival rate: the card drops records,
/// and the capture counts exactly the records it dropped (its own counter, and record
/// by record: each record's loss is the number of input records missing before it);
/// no record is torn.
#[test]
fn slow_reader_losses_are_counted_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let path = plain("libtrace__fragtest.erf.gz", dir.path());
    let want = file_packets(&path);
    let dev = card(
        Some(&path),
        &[
            ("DAGEMU_END", "1"),
            ("DAGEMU_RATE", "40000"),
            ("DAGEMU_BUFFER", "4096"),
        ],
    );
    let mut s = tracekit_dag::open(&format!("dag:{dev}"), &DagOptions::default()).unwrap();
    let mut got = Vec::new();
    while let Some(p) = s.next_packet().unwrap() {
        got.push(p.to_owned());
        if got.len() % 4 == 0 {
            std::thread::sleep(Duration::from_micros(400));
        }
    }
    let dropped = emulator::stream_drops(s.raw_fd(), 0);
    assert!(
        dropped > 0,
        "the reader was not slow enough to lose records"
    );
    // Record by record: each captured record is the input record after as many
    // missing ones as its loss counter says.
    let mut at = 0;
    let mut first_on = HashMap::new();
    let mut counted = 0u64;
    for (i, g) in got.iter().enumerate() {
        let lost = g.meta().loss as usize;
        at += lost;
        let w = &want[at];
        assert_eq!(g.data(), w.data(), "captured record {i} (input {at})");
        assert_eq!(g.meta().ts, w.meta().ts, "captured record {i} (input {at})");
        at += 1;
        // libtrace's rule: the first record of an interface reports losses from before
        // the capture, which are not counted.
        if first_on.insert(g.meta().interface, ()).is_some() {
            counted += lost as u64;
        }
    }
    let reported: u64 = got.iter().map(|p| u64::from(p.meta().loss)).sum();
    // Records dropped after the last captured one have no later record to report them.
    let unreported = (want.len() - at) as u64;
    assert_eq!(reported + unreported, dropped);
    assert_eq!(got.len() as u64 + dropped, want.len() as u64);
    assert_eq!(s.stats().dropped, counted);
    assert_eq!(s.stats().captured, got.len() as u64);
}

/// An idle stream returns within the maximum wait; stopping works while idle and while
/// packets are flowing.
#[test]
fn poll_timeouts_and_stop() {
    let options = DagOptions {
        max_wait: Duration::from_millis(50),
        ..Default::default()
    };
    // Idle: no input at all.
    let dev = card(None, &[]);
    let mut s = tracekit_dag::open(&format!("dag:{dev}"), &options).unwrap();
    for _ in 0..3 {
        let t = Instant::now();
        assert!(matches!(s.poll_packet().unwrap(), Polled::Idle));
        let waited = t.elapsed();
        assert!(
            waited >= Duration::from_millis(45) && waited < Duration::from_millis(500),
            "an idle poll took {waited:?} (maximum wait 50 ms)"
        );
    }
    let stop = s.stop_flag();
    let t = Instant::now();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            std::thread::sleep(Duration::from_millis(200));
            stop.store(true, Ordering::Relaxed);
        });
        assert!(s.next_packet().unwrap().is_none());
    });
    let took = t.elapsed();
    assert!(
        took >= Duration::from_millis(200) && took < Duration::from_millis(200 + 400),
        "stop while idle took {took:?}"
    );

    // Busy: an unpaced card with more records than the buffer holds keeps the stream
    // full; after the stop the reader gets at most the window in hand.
    let dir = tempfile::tempdir().unwrap();
    let path = plain("libtrace__fragtest.erf.gz", dir.path());
    let dev = card(Some(&path), &[("DAGEMU_BUFFER", "8192")]);
    let mut s = tracekit_dag::open(&format!("dag:{dev}"), &options).unwrap();
    let mut n = 0u64;
    while n < 100 {
        assert!(s.next_packet().unwrap().is_some());
        n += 1;
    }
    s.stop_flag().store(true, Ordering::Relaxed);
    let t = Instant::now();
    let mut after = 0;
    while s.next_packet().unwrap().is_some() {
        after += 1;
    }
    assert!(t.elapsed() < Duration::from_millis(500));
    assert!(after <= 8192 / 16, "{after} packets after the stop");
    assert!(n + after < 10_000, "the stop did not stop the capture");
}

/// Packets written to a transmit stream come out of the card's record log byte for byte
/// as tracekit's ERF writer writes them to a file, and read back as the input.
#[test]
fn transmitted_records_reach_the_log() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["libtrace__100_packets.erf", "libtrace__fragtest.erf.gz"] {
        let path = plain(name, dir.path());
        let log = dir.path().join(format!("{name}.tx.erf"));
        let dev = card(None, &[("DAGEMU_TX_LOG", log.to_str().unwrap())]);
        let mut tx = DagSink::open(&format!("dag:{dev},1"), &ErfWriterOptions::default()).unwrap();
        let mut file = ErfWriter::new(Vec::new(), ErfWriterOptions::default());
        let mut r = ErfReader::open(&path).unwrap();
        while let Some(p) = r.next_packet().unwrap() {
            tx.write_packet(&p).unwrap();
            file.write_packet(&p).unwrap();
        }
        let report = tx.finish().unwrap();
        let (expected, _) = file.finish_into_inner().unwrap();
        let sent = std::fs::read(&log).unwrap();
        assert_eq!(report.bytes, expected.len() as u64);
        assert!(
            sent == expected,
            "{name}: the log differs from the ERF file"
        );
        let back = file_packets(&log);
        let want = file_packets(&path);
        assert_eq!(back.len(), want.len());
        for (b, w) in back.iter().zip(&want) {
            // ERF pads records to 8 bytes: a cut packet reads back with the padding.
            assert!(b.data().starts_with(w.data()) && b.data().len() < w.data().len() + 8);
            assert_eq!(b.meta().ts, w.meta().ts);
        }
    }
}

/// Bad URIs and streams are refused with errors that say why.
#[test]
fn bad_uris_and_streams() {
    let e = tracekit_dag::open("dag:/dev/nodag", &DagOptions::default()).unwrap_err();
    assert!(e.to_string().contains("no such DAG card"), "{e}");
    let dev = card(None, &[]);
    let e = tracekit_dag::open(&format!("dag:{dev},1"), &DagOptions::default()).unwrap_err();
    assert!(e.to_string().contains("transmit stream"), "{e}");
    let e = tracekit_dag::open(&format!("dag:{dev},2"), &DagOptions::default()).unwrap_err();
    assert!(e.to_string().contains("1 receive stream"), "{e}");
    let e = tracekit_dag::open(&format!("dag:{dev},x"), &DagOptions::default()).unwrap_err();
    assert!(e.to_string().contains("not a number"), "{e}");
}

/// Several streams read in turn on one thread (`DagStreams`, which polls without
/// waiting): every packet once, and the capture ends with the card's input.
#[test]
fn streams_in_turn_end_with_the_input() {
    let path = tracekit_testdata::corpus("libtrace__100_packets.erf");
    let want = file_packets(&path);
    let dev = card(
        Some(&path),
        &[("DAGEMU_END", "1"), ("DAGEMU_RX_STREAMS", "3")],
    );
    let mut s = tracekit_dag::DagStreams::open(&format!("dag:{dev},0,2,4"), &DagOptions::default())
        .unwrap();
    let t = Instant::now();
    let mut got = drain(&mut s);
    assert!(t.elapsed() < Duration::from_secs(5));
    got.sort_by_key(|p| p.meta().ts);
    let mut sorted = want.clone();
    sorted.sort_by_key(|p| p.meta().ts);
    assert_eq!(got, sorted);
    assert_eq!(s.stats().captured, want.len() as u64);
}
