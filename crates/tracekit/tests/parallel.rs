//! `tracekit::parallel` against the single-threaded loop: every order and the reduce give
//! exactly what one thread gives, for 1, 2, 3 and 8 workers, on corpus traces (pcap,
//! pcapng, ERF, compressed) and on a generated trace that spans many read buffers; flow
//! affinity; damaged inputs; ticks.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use tracekit::analysis::{Ports, Protocols};
use tracekit::decode::Decoded;
use tracekit::parallel::{Distribution, Emit, Order, Parallel, Tick, TickEvery, Worker};
use tracekit::{CreateOptions, Error, Packet};
use tracekit_testdata::builder::{Ethernet, Ipv4, PacketBuilder, Tcp, Udp};
use tracekit_testdata::corpus;

const WORKERS: [usize; 4] = [1, 2, 3, 8];

/// The reader dealing by flow (the default), and workers taking turns at the input.
fn distributions() -> [Distribution; 2] {
    [Distribution::Flow, Distribution::Blocks]
}

/// What one packet is, for comparing runs: number, time, lengths and a digest of the
/// bytes (options included).
type Seen = (u64, u64, u32, usize, u64);

fn digest(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn seen(seq: u64, p: &Packet<'_>) -> Seen {
    let options = p.options().map_or(0, |o| digest(o.bytes()));
    (
        seq,
        p.ts().as_unix_nanos(),
        p.wire_len(),
        p.caplen(),
        digest(p.data()) ^ options.rotate_left(1),
    )
}

/// Emits what each packet is; counts ports and protocols; records its ticks.
#[derive(Default)]
struct Recorder {
    ports: Ports,
    protocols: Protocols,
    /// Packets since the last tick, per tick.
    per_tick: Vec<(u64, u64)>,
    since_tick: u64,
}

impl Worker for Recorder {
    type Item = Seen;

    fn packet(&mut self, p: &Packet<'_>, out: &mut Emit<'_, Seen>) -> Result<(), Error> {
        let d = Decoded::new(p);
        self.ports.add_decoded(&d);
        self.protocols.add_decoded(&d);
        self.since_tick += 1;
        let seq = out.seq();
        out.emit(seen(seq, p));
        Ok(())
    }

    fn tick(&mut self, tick: &Tick, _: &mut Emit<'_, Seen>) -> Result<(), Error> {
        self.per_tick
            .push((tick.index, std::mem::take(&mut self.since_tick)));
        Ok(())
    }
}

/// The single-threaded result: every packet in order, and the read error if any.
fn one_thread(uri: &str) -> (Vec<Seen>, Ports, Protocols, Option<String>) {
    let mut source = tracekit::open(uri).unwrap();
    let (mut all, mut ports, mut protocols) = (Vec::new(), Ports::new(), Protocols::default());
    let mut seq = 0;
    let error = loop {
        match source.next_packet() {
            Ok(Some(p)) => {
                all.push(seen(seq, &p));
                ports.add(&p);
                protocols.add(&p);
                seq += 1;
            }
            Ok(None) => break None,
            Err(e) => break Some(e.to_string()),
        }
    };
    (all, ports, protocols, error)
}

fn check_file(uri: &str) {
    let (want, want_ports, want_protocols, want_error) = one_thread(uri);
    for (workers, distribution) in WORKERS
        .into_iter()
        .flat_map(|w| distributions().map(|d| (w, d)))
    {
        for order in [Order::Stream, Order::Arrival] {
            let mut source = tracekit::open(uri).unwrap();
            let mut got = Vec::new();
            let done = Parallel::new(workers)
                .distribution(distribution.clone())
                .order(order)
                .run(
                    &mut source,
                    |_| Recorder::default(),
                    |seq, item| {
                        assert_eq!(seq, item.0);
                        got.push(item)
                    },
                )
                .unwrap();
            let what = format!("{uri}, {workers} workers, {distribution:?}, {order:?}");
            if order == Order::Arrival {
                got.sort();
            }
            assert_eq!(got.len(), want.len(), "{what}");
            if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
                panic!(
                    "{what}: the packets differ first at {i}: {:?} vs {:?}",
                    got[i], want[i]
                );
            }
            // The reduce.
            let mut ports = Ports::new();
            let mut protocols = Protocols::default();
            for w in &done.workers {
                ports.merge(&w.ports);
                protocols.merge(&w.protocols);
            }
            assert_eq!(ports.checksum(), want_ports.checksum(), "{what}");
            assert_eq!(ports.packets(), want_ports.packets(), "{what}");
            assert_eq!(protocols, want_protocols, "{what}");
            assert_eq!(done.stats.packets, want.len() as u64, "{what}");
            assert_eq!(
                done.stats.workers.iter().map(|w| w.packets).sum::<u64>(),
                want.len() as u64
            );
            assert_eq!(
                done.error.as_ref().map(|e| e.to_string()),
                want_error,
                "{what}: the error"
            );
            // Turns are taken at any input that shares its buffers (all of these), with
            // every distribution; an uncompressed file of more than two read buffers is
            // read ahead.
            let turns = workers > 1;
            assert_eq!(done.stats.turns, turns, "{what}");
            let ahead: u64 = done.stats.workers.iter().map(|w| w.read_ahead).sum();
            let plain = !uri.ends_with(".gz") && !uri.ends_with(".zst") && !uri.ends_with(".bz2");
            let big = std::fs::metadata(uri).unwrap().len() > 3 << 20;
            if turns && plain && big {
                assert!(ahead > 0, "{what}: no turn read ahead");
            } else if !(turns && plain) {
                assert_eq!(ahead, 0, "{what}");
            }
        }
    }
}

/// A trace of `n` packets over 300 flows (TCP and UDP, both directions, fragmented
/// datagrams among them), of sizes that cross many read buffers.
fn generated(dir: &Path, n: u32, name: &str) -> String {
    let path = dir.join(name);
    let uri = path.to_str().unwrap().to_string();
    let mut sink = tracekit::create(&uri, &CreateOptions::default()).unwrap();
    let payload = vec![0x5au8; 1400];
    for i in 0..n {
        let flow = i % 300;
        let (a, b) = (
            [10, 1, (flow >> 8) as u8, flow as u8],
            [10, 2, 0, (flow % 7) as u8],
        );
        let (src, dst) = if i % 3 == 0 { (b, a) } else { (a, b) };
        let len = 20 + (i as usize * 37) % 1300;
        let mut builder = PacketBuilder::new();
        builder.ethernet(Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]));
        if flow % 10 == 3 && i % 2 == 0 {
            // A fragment: the first carries the ports, the second none.
            let first = (i / 2) % 2 == 0;
            builder.ipv4(
                Ipv4::new(src, dst)
                    .id(flow as u16)
                    .protocol(17)
                    .fragment(if first { 0 } else { 185 }, first),
            );
            builder.payload(&payload[..len]);
        } else {
            builder.ipv4(Ipv4::new(src, dst));
            if flow % 2 == 0 {
                let ports = if src == a { (40_000, 80) } else { (80, 40_000) };
                builder.tcp(Tcp::new(ports.0, ports.1));
            } else {
                let ports = if src == a {
                    (50_000 + flow as u16, 53)
                } else {
                    (53, 50_000 + flow as u16)
                };
                builder.udp(Udp::new(ports.0, ports.1));
            }
            builder.payload(&payload[..len]);
        }
        let frame = builder.build();
        let ts = tracekit::Timestamp::from_nanos(1_700_000_000 + i / 1000, (i % 1000) * 1_000_000);
        let meta = tracekit::Meta::new(ts, frame.len() as u32, tracekit::LinkType::ETHERNET);
        sink.write_packet(&Packet::new(&frame, meta)).unwrap();
    }
    sink.finish().unwrap();
    uri
}

#[test]
fn every_order_and_the_reduce_match_one_thread_on_the_corpus() {
    for name in [
        "libtrace__100_packets.pcap",
        "libtrace__100_packets.pcapng",
        "libtrace__100_packets.erf",
        "libtrace__vlan.pcap.gz",
        "libtrace__vlan.pcap.bz2",
        "libtrace__fragtest.erf.gz",
        "ndpi__sites.pcapng",
        "pcapnggen__test010_le.pcapng",
    ] {
        let path = corpus(name);
        if path.exists() {
            check_file(path.to_str().unwrap());
        }
    }
}

#[test]
fn every_order_and_the_reduce_match_one_thread_across_many_buffers() {
    let dir = tempfile::tempdir().unwrap();
    let plain = generated(dir.path(), 20_000, "gen.pcap");
    check_file(&plain);
    let compressed = generated(dir.path(), 8_000, "gen.pcapng.zst");
    check_file(&compressed);
    // A mapping has no buffers to share: packets are copied, with the same result.
    let (want, ..) = one_thread(&plain);
    let options = tracekit::OpenOptions {
        read_mode: tracekit::ReadMode::Mmap,
        ..Default::default()
    };
    for workers in WORKERS {
        for distribution in distributions() {
            let mut source = tracekit::open_with(&plain, &options).unwrap();
            let run = Parallel::new(workers).distribution(distribution);
            let (got, done) = in_stream_order(&mut source, run);
            // One worker runs on the reader's packets in place: nothing to copy. Blocks
            // are dealt round-robin: there are no buffers to take turns at.
            assert_eq!(done.stats.copied, workers > 1, "{workers} workers");
            assert!(!done.stats.turns);
            assert!(got == want, "mapped, {workers} workers");
        }
    }
}

/// `run` over `source` with [`Recorder`]s, in stream order: what they emitted, and the
/// end of the run.
fn in_stream_order(
    source: &mut tracekit::Source,
    run: Parallel,
) -> (Vec<Seen>, tracekit::parallel::Finished<Recorder>) {
    let mut got = Vec::new();
    let done = run
        .order(Order::Stream)
        .run(source, |_| Recorder::default(), |_, item| got.push(item))
        .unwrap();
    (got, done)
}

/// Worker 0 runs on the reader thread with its share of the packets: none, some or all,
/// by flow and round-robin, the result is that of one thread, and the packets each
/// worker saw follow the share.
#[test]
fn the_readers_share_moves_packets_not_results() {
    let dir = tempfile::tempdir().unwrap();
    let uri = generated(dir.path(), 12_000, "share.pcap");
    let (want, ..) = one_thread(&uri);
    for distribution in [Distribution::Flow, Distribution::RoundRobin] {
        for (workers, share) in [(2, 0.0), (2, 0.2), (2, 0.5), (2, 1.0), (3, 0.0), (4, 1.0)] {
            let what = format!("{distribution:?}, {workers} workers, share {share}");
            let mut source = tracekit::open(&uri).unwrap();
            let run = Parallel::new(workers)
                .reader_share(share)
                .distribution(distribution.clone());
            let (got, done) = in_stream_order(&mut source, run);
            assert!(got == want, "{what}");
            let per: Vec<u64> = done.stats.workers.iter().map(|w| w.packets).collect();
            assert_eq!(per.len(), workers, "{what}");
            assert_eq!(per.iter().sum::<u64>(), want.len() as u64, "{what}");
            let own = per[0] as f64 / want.len() as f64;
            match share {
                0.0 => assert_eq!(per[0], 0, "{what}: {per:?}"),
                1.0 => assert_eq!(per[0], want.len() as u64, "{what}: {per:?}"),
                // Round-robin follows the share to a bucket; flows, roughly.
                _ => assert!((own - share).abs() < 0.1, "{what}: {per:?}"),
            }
        }
    }
}

#[test]
fn flows_and_fragments_stay_on_one_worker_in_file_order() {
    let dir = tempfile::tempdir().unwrap();
    let uri = generated(dir.path(), 6_000, "flows.pcap");
    for file in [
        uri,
        corpus("libtrace__fragtest.erf.gz")
            .to_str()
            .unwrap()
            .to_string(),
    ] {
        if !Path::new(&file).exists() {
            continue;
        }
        for workers in [2usize, 3, 8] {
            /// Emits (address pair, worker) for every IP packet.
            struct Affinity(usize);
            impl Worker for Affinity {
                type Item = ((std::net::IpAddr, std::net::IpAddr, u8), usize);
                fn packet(
                    &mut self,
                    p: &Packet<'_>,
                    out: &mut Emit<'_, Self::Item>,
                ) -> Result<(), Error> {
                    let d = Decoded::new(p);
                    if let (Some(a), Some(b), Some(proto)) =
                        (d.src_addr(), d.dst_addr(), d.ip_protocol())
                    {
                        out.emit(((a.min(b), a.max(b), proto), self.0));
                    }
                    Ok(())
                }
            }
            let mut source = tracekit::open(&file).unwrap();
            let mut owner: HashMap<_, usize> = HashMap::new();
            let mut last_seq: HashMap<_, u64> = HashMap::new();
            Parallel::new(workers)
                .distribution(Distribution::Flow)
                .run(&mut source, Affinity, |seq, (flow, w)| {
                    let first = *owner.entry(flow).or_insert(w);
                    assert_eq!(first, w, "{file}: a flow on two workers");
                    let last = last_seq.insert(flow, seq);
                    assert!(last.is_none_or(|l| l < seq), "{file}: a flow out of order");
                })
                .unwrap();
            assert!(owner.len() > 10, "{file}: {} flows", owner.len());
            let used: std::collections::HashSet<usize> = owner.values().copied().collect();
            assert!(used.len() > 1, "{file}: every flow on one worker");
        }
    }
}

#[test]
fn a_damaged_file_gives_exactly_the_packets_before_the_damage() {
    for name in [
        "corrupt__100_packets_truncated.pcapng",
        "corrupt__100_packets_bad_caplen.pcap",
        "corrupt__100_packets_rlen_short.erf",
        "corrupt__fragtest_truncated_stream.erf.gz",
    ] {
        let path = corpus(name);
        if !path.exists() {
            continue;
        }
        let uri = path.to_str().unwrap();
        let (want, _, _, error) = one_thread(uri);
        assert!(error.is_some(), "{name} is damaged");
        check_file(uri);
        for workers in WORKERS {
            for distribution in distributions() {
                let mut source = tracekit::open(uri).unwrap();
                let mut n = 0;
                let done = Parallel::new(workers)
                    .distribution(distribution)
                    .run(&mut source, |_| Recorder::default(), |_, _| n += 1)
                    .unwrap();
                assert_eq!(n, want.len(), "{name}, {workers} workers");
                assert_eq!(
                    done.error.map(|e| e.to_string()),
                    error,
                    "{name}, {workers} workers"
                );
            }
        }
    }
}

/// A file of many read buffers, damaged mid-way: workers taking turns read its bytes
/// ahead, and still give exactly the packets before the damage and the same error as one
/// thread — for a cut and for a record with an impossible length.
#[test]
fn a_large_damaged_file_gives_exactly_the_packets_before_the_damage() {
    let dir = tempfile::tempdir().unwrap();
    let uri = generated(dir.path(), 20_000, "whole.pcap");
    let bytes = std::fs::read(&uri).unwrap();
    // Record starts: a 24-byte file header, then 16-byte record headers.
    let mut starts = Vec::new();
    let mut at = 24;
    while at + 16 <= bytes.len() {
        starts.push(at);
        let caplen = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        at += 16 + caplen;
    }
    assert_eq!(starts.len(), 20_000);
    let cut = dir.path().join("cut.pcap");
    std::fs::write(&cut, &bytes[..bytes.len() * 7 / 10]).unwrap();
    let mut bad = bytes.clone();
    let at = starts[12_345];
    bad[at + 8..at + 12].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
    let bad_caplen = dir.path().join("bad-caplen.pcap");
    std::fs::write(&bad_caplen, &bad).unwrap();
    for path in [cut, bad_caplen] {
        let uri = path.to_str().unwrap();
        let (want, _, _, error) = one_thread(uri);
        assert!(error.is_some(), "{uri} is damaged");
        assert!(want.len() > 10_000, "{uri}: {}", want.len());
        check_file(uri);
    }
}

#[test]
fn ticks_come_at_the_same_point_for_every_worker() {
    let dir = tempfile::tempdir().unwrap();
    let uri = generated(dir.path(), 10_000, "ticks.pcap");
    // A tick before every packet also puts one before the first packet of each buffer,
    // which workers taking turns carry over.
    for every in [
        TickEvery::Packets(777),
        TickEvery::Packets(1),
        TickEvery::TraceTime(1_000_000_000),
    ] {
        // One worker's intervals are the reference.
        let interval_counts = |workers: usize, distribution: Distribution| -> Vec<u64> {
            let mut source = tracekit::open(&uri).unwrap();
            let done = Parallel::new(workers)
                .distribution(distribution)
                .tick_every(every)
                .run(&mut source, |_| Recorder::default(), |_, _| {})
                .unwrap();
            let ticks = done.workers[0].per_tick.len();
            let mut sums = vec![0u64; ticks];
            for w in &done.workers {
                assert_eq!(w.per_tick.len(), ticks, "every worker gets every tick");
                for (i, (index, count)) in w.per_tick.iter().enumerate() {
                    assert_eq!(*index, i as u64);
                    sums[i] += count;
                }
            }
            sums
        };
        let want = interval_counts(1, Distribution::Flow);
        match every {
            // 10,000 packets: a tick before packets 777, 1554, ...
            TickEvery::Packets(n) => {
                assert_eq!(want.len() as u64, 9_999 / n);
                assert!(want.iter().all(|c| *c == n));
            }
            // 1,000 packets per second of trace time.
            TickEvery::TraceTime(_) => {
                assert_eq!(want.len(), 9);
                assert!(want.iter().all(|c| *c == 1_000));
            }
        }
        for workers in [2, 3, 8] {
            for distribution in distributions() {
                let what = format!("{every:?}, {workers} workers, {distribution:?}");
                assert_eq!(interval_counts(workers, distribution), want, "{what}");
            }
        }
    }
}

#[test]
fn a_worker_error_stops_the_run_and_says_where() {
    struct FailAt(u64);
    impl Worker for FailAt {
        type Item = u64;
        fn packet(&mut self, _: &Packet<'_>, out: &mut Emit<'_, u64>) -> Result<(), Error> {
            if out.seq() == self.0 {
                return Err(Error::invalid_argument("this packet is refused"));
            }
            let seq = out.seq();
            out.emit(seq);
            Ok(())
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let uri = generated(dir.path(), 5_000, "fail.pcap");
    for workers in WORKERS {
        for distribution in distributions() {
            let what = format!("{workers} workers, {distribution:?}");
            let mut source = tracekit::open(&uri).unwrap();
            let mut got = Vec::new();
            let done = Parallel::new(workers)
                .distribution(distribution)
                .order(Order::Stream)
                .run(&mut source, |_| FailAt(1234), |_, seq| got.push(seq))
                .unwrap();
            // In stream order, exactly the packets before the failing one.
            assert!(got == (0..1234).collect::<Vec<u64>>(), "{what}");
            let error = done.error.expect("the worker's error");
            assert_eq!(error.packet(), Some(1235), "{what}: {error}");
            assert!(error.to_string().contains("refused"));
        }
    }
}

#[test]
fn the_sorted_combiner_and_finish_match_one_thread() {
    /// Emits each packet's (caplen, seq); at the end, its packet count.
    #[derive(Default)]
    struct Sizes(u64);
    impl Worker for Sizes {
        type Item = (u32, u64);
        fn packet(&mut self, p: &Packet<'_>, out: &mut Emit<'_, (u32, u64)>) -> Result<(), Error> {
            self.0 += 1;
            let seq = out.seq();
            out.emit((p.caplen() as u32, seq));
            Ok(())
        }
        fn finish(&mut self, out: &mut Emit<'_, (u32, u64)>) -> Result<(), Error> {
            // After every packet: the count, tagged with the run's packet total.
            let total = out.seq();
            out.emit((u32::MAX, total * 1_000_000 + self.0));
            Ok(())
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let uri = generated(dir.path(), 12_000, "sorted.pcap.gz");
    let (all, ..) = one_thread(&uri);
    let total = all.len() as u64;
    let mut want: Vec<(u32, u64)> = all.iter().map(|s| (s.3 as u32, s.0)).collect();
    // Stable: equal sizes keep stream order.
    want.sort_by_key(|x| x.0);
    for (workers, distribution) in WORKERS
        .into_iter()
        .flat_map(|w| distributions().map(|d| (w, d)))
    {
        let mut source = tracekit::open(&uri).unwrap();
        let (done, items) = Parallel::new(workers)
            .distribution(distribution.clone())
            .run_sorted(&mut source, |_| Sizes::default(), |x: &(u32, u64)| x.0)
            .unwrap();
        assert!(done.error.is_none());
        let (packets, finished) = items.split_at(want.len());
        assert!(packets == want.as_slice(), "{workers} workers");
        // One finish item per worker, each with the run's total and its own count.
        assert_eq!(finished.len(), workers);
        let counts: u64 = finished
            .iter()
            .map(|&(_, v)| {
                assert_eq!(v / 1_000_000, total);
                v % 1_000_000
            })
            .sum();
        assert_eq!(counts, total, "{workers} workers");
        // In stream order, finish items come after every packet's.
        let mut source = tracekit::open(&uri).unwrap();
        let mut last_seq = Vec::new();
        Parallel::new(workers)
            .distribution(distribution)
            .order(Order::Stream)
            .run(
                &mut source,
                |_| Sizes::default(),
                |seq, item| last_seq.push((seq, item.0)),
            )
            .unwrap();
        assert!(last_seq.windows(2).all(|w| w[0].0 <= w[1].0));
        assert!(last_seq[..all.len()].iter().all(|x| x.1 != u32::MAX));
        assert!(
            last_seq[all.len()..]
                .iter()
                .all(|x| x == &(total, u32::MAX))
        );
    }
}

#[test]
fn a_long_gap_in_time_gets_one_tick() {
    // Packets at 0.5 s, 1.5 s, 2.5 s, then 3,000,000.5 s and 3,000,001.5 s: with 1-second
    // ticks, one per boundary up to 2 s, then one at 3,000,000 s (not three million),
    // then one at 3,000,001 s.
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().join("gap.pcap").to_str().unwrap().to_string();
    let mut sink = tracekit::create(&uri, &CreateOptions::default()).unwrap();
    let mut b = PacketBuilder::new();
    b.ethernet(Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]));
    b.ipv4(Ipv4::new([10, 0, 0, 1], [10, 0, 0, 2]));
    b.udp(Udp::new(1, 2));
    let frame = b.build();
    for s in [0u32, 1, 2, 3_000_000, 3_000_001] {
        let ts = tracekit::Timestamp::from_nanos(s, 500_000_000);
        let meta = tracekit::Meta::new(ts, frame.len() as u32, tracekit::LinkType::ETHERNET);
        sink.write_packet(&Packet::new(&frame, meta)).unwrap();
    }
    sink.finish().unwrap();
    for workers in WORKERS {
        #[derive(Default)]
        struct Times(Vec<(u64, Option<u64>)>);
        impl Worker for Times {
            type Item = ();
            fn packet(&mut self, _: &Packet<'_>, _: &mut Emit<'_, ()>) -> Result<(), Error> {
                Ok(())
            }
            fn tick(&mut self, t: &Tick, _: &mut Emit<'_, ()>) -> Result<(), Error> {
                self.0.push((t.packets, t.time));
                Ok(())
            }
        }
        for distribution in distributions() {
            let mut source = tracekit::open(&uri).unwrap();
            let done = Parallel::new(workers)
                .distribution(distribution)
                .tick_every(TickEvery::TraceTime(1_000_000_000))
                .run(&mut source, |_| Times::default(), |_, _| {})
                .unwrap();
            let s = 1_000_000_000u64;
            let want = vec![
                (1, Some(s)),
                (2, Some(2 * s)),
                (3, Some(3_000_000 * s)),
                (4, Some(3_000_001 * s)),
            ];
            for w in &done.workers {
                assert_eq!(w.0, want, "{workers} workers");
            }
        }
    }
}

/// Packets a worker saw: their numbers and capture lengths.
struct Chosen {
    index: usize,
    seen: Vec<(u64, usize)>,
}

impl Worker for Chosen {
    type Item = Seen;

    fn packet(&mut self, p: &Packet<'_>, out: &mut Emit<'_, Seen>) -> Result<(), Error> {
        self.seen.push((out.seq(), p.caplen()));
        out.emit(seen(out.seq(), p));
        Ok(())
    }
}

/// A user's chooser decides the worker of every packet (here by capture length), over a
/// trace of many buffers that the workers take turns at reading: each worker gets
/// exactly the packets chosen for it, in file order, and together they are the file.
#[test]
fn a_users_chooser_decides_each_packets_worker() {
    let dir = tempfile::tempdir().unwrap();
    let uri = generated(dir.path(), 20_000, "chosen.pcap");
    let (want, ..) = one_thread(&uri);
    for workers in [2, 3] {
        let chooser: tracekit::parallel::Chooser = Arc::new(|p: &Packet<'_>| p.caplen() as u64);
        let mut source = tracekit::open(&uri).unwrap();
        let run = Parallel::new(workers).distribution(Distribution::By(chooser));
        let mut got = Vec::new();
        let done = run
            .order(Order::Stream)
            .run(
                &mut source,
                |index| Chosen {
                    index,
                    seen: Vec::new(),
                },
                |_, item| got.push(item),
            )
            .unwrap();
        assert!(done.stats.turns, "{workers} workers");
        assert!(got == want, "{workers} workers: not the file's packets");
        let mut all = 0;
        for w in &done.workers {
            assert!(
                !w.seen.is_empty(),
                "{workers} workers: worker {} idle",
                w.index
            );
            assert!(w.seen.windows(2).all(|p| p[0].0 < p[1].0), "file order");
            for &(seq, caplen) in &w.seen {
                assert_eq!(caplen % workers, w.index, "packet {seq}");
                assert_eq!(caplen, want[seq as usize].3, "packet {seq}");
            }
            all += w.seen.len();
        }
        assert_eq!(all, want.len());
    }
}

/// What a [`Distribution::FlowLevels`] worker is told about each packet: (packet,
/// worker, the levels 0-7 that are its own as bits, the stream's clock in ns).
type LevelNote = (u64, usize, u8, Option<u64>);

struct LevelRecorder(usize);

impl Worker for LevelRecorder {
    type Item = LevelNote;

    fn packet(&mut self, _: &Packet<'_>, out: &mut Emit<'_, LevelNote>) -> Result<(), Error> {
        let levels = out.levels();
        let bits = (0..8).fold(0u8, |b, l| b | (u8::from(levels.contains(l)) << l));
        let clock = out.clock().map(|c| c.as_unix_nanos());
        let seq = out.seq();
        out.emit((seq, self.0, bits, clock));
        Ok(())
    }
}

/// [`Distribution::FlowLevels`], with the reader dealing (a mapped file) and with the
/// workers taking turns (a file read): every level of every packet is one worker's; an
/// IPv6 flow carried in IPv4 through twelve outer address pairs is one worker's at
/// level 1 whichever worker has its outer level; and a packet stamped earlier than one
/// before it (or not at all) carries the stream's clock, the latest time stamp so far.
#[test]
fn flow_levels_share_tunnelled_packets_out_by_level_and_pass_the_clock() {
    use tracekit_testdata::builder::Ipv6;
    let eth = || Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
    let (mut frames, mut secs) = (Vec::new(), Vec::new());
    let t0 = 1_700_000_000u32;
    let inner = PacketBuilder::new()
        .ipv6(Ipv6::between("2001:db8::1", "2001:db8::2"))
        .udp(Udp::new(6000, 7000))
        .payload(b"inside")
        .build();
    let mut tunnelled = Vec::new();
    let payload = [0x55u8; 1400];
    // About 4 MB: several buffers, so that the clock goes from turn to turn.
    for k in 0..3000u32 {
        let frame = if k % 50 == 0 {
            tunnelled.push(frames.len() as u64);
            PacketBuilder::new()
                .ethernet(eth())
                .ipv4(Ipv4::new([192, 0, 2, 1], [198, 51, 100, (k / 50) as u8]).protocol(41))
                .payload(&inner)
                .build()
        } else {
            let [_, _, a, b] = k.to_be_bytes();
            PacketBuilder::new()
                .ethernet(eth())
                .ipv4(Ipv4::new([10, 1, a, b], [10, 2, a, b]))
                .tcp(Tcp::new(1000, 80))
                .payload(&payload)
                .build()
        };
        frames.push(frame);
        // Time jumps ahead at packet 5; the packets after it are stamped earlier.
        secs.push(if k == 5 { t0 + 100_000 } else { t0 + k });
    }
    let mut clock = 0u64;
    let want_clock: Vec<Option<u64>> = secs
        .iter()
        .map(|&s| {
            let ns = u64::from(s) * 1_000_000_000;
            let note = (ns < clock).then_some(clock);
            clock = clock.max(ns);
            note
        })
        .collect();
    assert!(want_clock.iter().filter(|c| c.is_some()).count() > 2900);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("levels.pcap");
    std::fs::write(&path, tracekit_testdata::pcap_at(&frames, &secs)).unwrap();
    for read_mode in [tracekit::ReadMode::Read, tracekit::ReadMode::Mmap] {
        for workers in [2, 3, 8] {
            let what = format!("{read_mode:?}, {workers} workers");
            let options = tracekit::OpenOptions {
                read_mode,
                ..Default::default()
            };
            let mut source = tracekit::open_with(path.to_str().unwrap(), &options).unwrap();
            let mut got: Vec<LevelNote> = Vec::new();
            let done = Parallel::new(workers)
                .distribution(Distribution::FlowLevels)
                .run(&mut source, LevelRecorder, |_, n| got.push(n))
                .unwrap();
            assert_eq!(
                done.stats.turns,
                read_mode == tracekit::ReadMode::Read,
                "{what}"
            );
            let mut per: HashMap<u64, Vec<LevelNote>> = HashMap::new();
            for n in got {
                per.entry(n.0).or_default().push(n);
            }
            assert_eq!(per.len(), frames.len(), "{what}: every packet is dealt");
            let mut inner_workers = std::collections::BTreeSet::new();
            for (seq, notes) in &per {
                let all = notes.iter().fold(0u8, |b, n| {
                    assert_eq!(b & n.2, 0, "{what}: packet {seq}: a level twice");
                    b | n.2
                });
                assert_eq!(all, u8::MAX, "{what}: packet {seq}: levels not dealt");
                for n in notes {
                    assert_eq!(n.3, want_clock[*seq as usize], "{what}: packet {seq}");
                }
                if tunnelled.contains(seq) {
                    let owner = notes.iter().find(|n| n.2 & 0b10 != 0).unwrap().1;
                    inner_workers.insert(owner);
                } else {
                    assert_eq!(notes.len(), 1, "{what}: packet {seq} has no tunnel");
                }
            }
            assert_eq!(
                inner_workers.len(),
                1,
                "{what}: the inner flow is one worker's"
            );
            // The outer pairs are spread: some tunnelled packet went to two workers.
            assert!(
                tunnelled.iter().any(|s| per[s].len() == 2),
                "{what}: no tunnelled packet was shared out"
            );
        }
    }
}
