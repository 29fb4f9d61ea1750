//! `dag:` URIs through the facade, against the software DAG card fed with a corpus ERF
//! file: `open` of one stream, of a stream other than 0, of several streams, and
//! `create` of a transmit stream; the file reader's packets of the same file are the
//! reference.

use std::sync::atomic::{AtomicU32, Ordering};

use dag_sys::emulator::set_option;
use tracekit::{CaptureSource, CreateOptions, OwnedPacket};

fn device(settings: &[(&str, &str)]) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(40);
    let dev = format!("/dev/dag{}", NEXT.fetch_add(1, Ordering::Relaxed));
    for (k, v) in settings {
        assert!(set_option(&dev, k, Some(v)));
    }
    dev
}

fn all(s: &mut impl CaptureSource) -> Vec<OwnedPacket> {
    let mut out = Vec::new();
    while let Some(p) = s.next_packet().unwrap() {
        out.push(p.to_owned());
    }
    out
}

fn input() -> String {
    tracekit_testdata::corpus_uri("libtrace__100_packets.erf")
}

#[test]
fn open_one_stream_is_the_file() {
    let dev = device(&[("DAGEMU_INPUT", &input()), ("DAGEMU_END", "1")]);
    let mut s = tracekit::open(&format!("dag:{dev}")).unwrap();
    assert_eq!(s.format_name(), "dag");
    assert!(tracekit::is_live_uri(&format!("dag:{dev}")));
    let got = all(&mut s);
    let want = all(&mut tracekit::open(&input()).unwrap());
    assert_eq!(got, want);
    assert_eq!(s.stats().captured, 100);
}

/// Stream 2 of a two-stream card gets its flows only, in input order; with both
/// streams (read in turn) every packet arrives.
#[test]
fn open_other_and_several_streams() {
    let want = all(&mut tracekit::open(&input()).unwrap());
    // Paced, so that the records steered to the stream nobody reads are dropped there
    // instead of holding the card.
    let dev = device(&[
        ("DAGEMU_INPUT", &input()),
        ("DAGEMU_END", "1"),
        ("DAGEMU_RX_STREAMS", "2"),
        ("DAGEMU_RATE", "100000"),
    ]);
    let got = all(&mut tracekit::open(&format!("dag:{dev},2")).unwrap());
    assert!(
        !got.is_empty() && got.len() < want.len(),
        "{} packets",
        got.len()
    );
    let mut rest = want.iter();
    for g in &got {
        assert!(rest.any(|w| w == g), "stream 2 packet not in input order");
    }

    let dev = device(&[
        ("DAGEMU_INPUT", &input()),
        ("DAGEMU_END", "1"),
        ("DAGEMU_RX_STREAMS", "2"),
    ]);
    let mut both = tracekit::open(&format!("dag:{dev},0,2")).unwrap();
    let mut got = all(&mut both);
    assert_eq!(both.stats().captured, want.len() as u64);
    got.sort_by_key(|p| p.meta().ts);
    let mut sorted = want.clone();
    sorted.sort_by_key(|p| p.meta().ts);
    assert_eq!(got, sorted);
}

#[test]
fn create_a_transmit_stream() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("tx.erf");
    let dev = device(&[("DAGEMU_TX_LOG", log.to_str().unwrap())]);
    let mut sink = tracekit::create(&format!("dag:{dev},1"), &CreateOptions::default()).unwrap();
    let mut src = tracekit::open(&input()).unwrap();
    tracekit::copy(&mut src, &mut sink, |_| {}).unwrap();
    let report = sink.finish().unwrap();
    assert_eq!(report.packets, 100);
    let back = all(&mut tracekit::open(log.to_str().unwrap()).unwrap());
    let want = all(&mut tracekit::open(&input()).unwrap());
    assert_eq!(back.len(), want.len());
    for (b, w) in back.iter().zip(&want) {
        assert_eq!(b.meta().ts, w.meta().ts);
        assert!(b.data().starts_with(w.data()));
    }
}

/// Four receive streams, one worker each through `Parallel::run_members`: every packet
/// is processed once, and each address pair is seen by one worker only, with the same
/// packet count per pair as in the file.
#[test]
fn parallel_workers_one_per_stream() {
    use std::collections::HashMap;
    use tracekit::parallel::{Emit, Parallel, Worker};
    use tracekit::{Error, Packet};

    #[derive(Default)]
    struct Pairs(HashMap<(String, String), u64>);
    impl Worker for Pairs {
        type Item = ();
        fn packet(&mut self, p: &Packet<'_>, _: &mut Emit<'_, ()>) -> Result<(), Error> {
            *self.0.entry(pair(p)).or_default() += 1;
            Ok(())
        }
    }
    fn pair(p: &Packet<'_>) -> (String, String) {
        let d = tracekit::decode::Decoded::new(p);
        let a = d.src_addr().map(|a| a.to_string()).unwrap_or_default();
        let b = d.dst_addr().map(|a| a.to_string()).unwrap_or_default();
        if a <= b { (a, b) } else { (b, a) }
    }

    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("fragtest.erf");
    let mut gz =
        tracekit::open(&tracekit_testdata::corpus_uri("libtrace__fragtest.erf.gz")).unwrap();
    let mut out = tracekit::create(plain.to_str().unwrap(), &CreateOptions::default()).unwrap();
    tracekit::copy(&mut gz, &mut out, |_| {}).unwrap();
    out.finish().unwrap();
    let mut want: HashMap<(String, String), u64> = HashMap::new();
    let mut file = tracekit::open(plain.to_str().unwrap()).unwrap();
    let mut total = 0u64;
    while let Some(p) = file.next_packet().unwrap() {
        *want.entry(pair(&p)).or_default() += 1;
        total += 1;
    }

    let dev = device(&[
        ("DAGEMU_INPUT", plain.to_str().unwrap()),
        ("DAGEMU_END", "1"),
        ("DAGEMU_RX_STREAMS", "4"),
        ("DAGEMU_BUFFER", "65536"),
    ]);
    let streams =
        tracekit::dag::open_streams(&format!("dag:{dev},0,2,4,6"), &Default::default()).unwrap();
    let stop = streams[0].stop_flag();
    let done = Parallel::new(4)
        .stop_flag(stop)
        .run_members(streams, |_| Pairs::default(), |_, _| {})
        .unwrap();
    assert!(done.error.is_none(), "{:?}", done.error);
    assert_eq!(done.stats.packets, total);
    let mut seen: HashMap<(String, String), u64> = HashMap::new();
    for w in &done.workers {
        assert!(w.0.values().sum::<u64>() > 0, "a worker got nothing");
        for (k, n) in &w.0 {
            if k.0.is_empty() && k.1.is_empty() {
                // Not IP: the card sends it to the first stream; counted below.
                *seen.entry(k.clone()).or_default() += n;
                continue;
            }
            assert!(
                seen.insert(k.clone(), *n).is_none(),
                "pair {k:?} on two workers"
            );
        }
    }
    assert_eq!(seen, want);
}
