//! Live capture on a veth pair between two network namespaces the test creates (and
//! always removes). Frames are injected on one end and captured on the other, so every
//! count is known. Needs root; without it each test says so and passes.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use tracekit_afpacket::{
    AfPacket, FanoutGroup, GroupId, Injector, KernelFilter, MemberThreads, Options, Polled,
    RingStats, StopHandle, enter_netns,
};
use tracekit_core::{CaptureSource, OwnedPacket};
use tracekit_testdata::builder::tcp_flags::{ACK, PSH};
use tracekit_testdata::builder::{Ethernet, Ipv4, PacketBuilder, Tcp, Udp, Vlan};
use tracekit_testdata::netns::{VethPair, is_root};

/// The test namespaces, with helpers to run code inside them.
struct Pair(VethPair);

impl Pair {
    fn new(tag: &str) -> Pair {
        Pair(VethPair::new(tag))
    }

    /// Runs `f` on a thread inside namespace `ns` and returns its result.
    fn run_in<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
        let ns = ns.to_string();
        std::thread::spawn(move || {
            enter_netns(&ns).unwrap();
            f()
        })
        .join()
        .unwrap()
    }

    /// Opens captures (or anything) inside namespace b; sockets stay in b.
    fn in_b<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        Pair::run_in(&self.0.b, f)
    }

    /// Sends one UDP frame on `va` over and over, from a thread, until the returned
    /// flag is cleared; join the handle then.
    fn flood(
        &self,
    ) -> (
        std::sync::Arc<std::sync::atomic::AtomicBool>,
        std::thread::JoinHandle<()>,
    ) {
        let sending = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let (a, flag) = (self.0.a.clone(), sending.clone());
        let sender = std::thread::spawn(move || {
            enter_netns(&a).unwrap();
            let inj = Injector::open("va").unwrap();
            let f = frame(17, [10, 0, 0, 1], [10, 0, 0, 2], 1, 2, 100, 0);
            while flag.load(std::sync::atomic::Ordering::Relaxed) {
                inj.send(&f).unwrap();
            }
        });
        (sending, sender)
    }

    /// Injects `frames` on `va`.
    fn send(&self, frames: Vec<Vec<u8>>) {
        Pair::run_in(&self.0.a, move || {
            let inj = Injector::open("va").unwrap();
            for f in &frames {
                inj.send(f).unwrap();
            }
        });
    }
}

const SRC_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
/// Not the peer's address: the frames are seen by the capture and dropped by the stack.
const DST_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];

/// An Ethernet/IPv4 frame with a TCP (6) or UDP (17) header and `payload` bytes; the
/// payload starts with `seq`.
fn frame(
    proto: u8,
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    payload: usize,
    seq: u32,
) -> Vec<u8> {
    tagged(&[], proto, (src, sport), (dst, dport), payload, seq)
}

/// The same frame with VLAN `tags` after the MAC addresses (outermost first).
fn tagged(
    tags: &[Vlan],
    proto: u8,
    (src, sport): ([u8; 4], u16),
    (dst, dport): ([u8; 4], u16),
    payload: usize,
    seq: u32,
) -> Vec<u8> {
    let mut body = vec![0u8; payload];
    if payload >= 4 {
        body[..4].copy_from_slice(&seq.to_be_bytes());
    }
    let mut b = PacketBuilder::new();
    b.ethernet(Ethernet::new(SRC_MAC, DST_MAC));
    for tag in tags {
        b.vlan(*tag);
    }
    b.ipv4(Ipv4::new(src, dst));
    if proto == 6 {
        b.tcp(Tcp::new(sport, dport).flags(PSH | ACK));
    } else {
        b.udp(Udp::new(sport, dport));
    }
    b.payload(&body).build()
}

fn ours(p: &[u8]) -> bool {
    p.len() >= 12 && p[0..6] == DST_MAC && p[6..12] == SRC_MAC
}

/// Reads from `cap` until `want` of our frames arrived or `limit` passed.
fn collect(cap: &mut AfPacket, want: usize, limit: Duration) -> Vec<OwnedPacket> {
    let end = Instant::now() + limit;
    let mut got = Vec::new();
    while got.len() < want && Instant::now() < end {
        if let Some(block) = cap.next_block(Some(Duration::from_millis(50))).unwrap() {
            got.extend(
                block
                    .packets()
                    .filter(|p| ours(p.data()))
                    .map(|p| p.to_owned()),
            );
        }
    }
    got
}

/// A flow in canonical form (the lower endpoint first).
fn flow_key(p: &[u8]) -> ([u8; 6], [u8; 6], u8) {
    let ip = &p[14..];
    let a = [ip[12], ip[13], ip[14], ip[15], ip[20], ip[21]];
    let b = [ip[16], ip[17], ip[18], ip[19], ip[22], ip[23]];
    (a.min(b), a.max(b), ip[9])
}

#[test]
fn every_packet_is_captured_and_fanout_keeps_each_flow_on_one_member() {
    if !is_root() {
        return;
    }
    let pair = Pair::new("f");
    // 24 flows (TCP and UDP), both directions, 20 packets each way.
    let mut frames = Vec::new();
    for n in 0..24u8 {
        let proto = if n % 2 == 0 { 6 } else { 17 };
        let (a, b) = ([10, 0, 0, 1 + n], [10, 0, 1, 200 - n]);
        let (pa, pb) = (40_000 + u16::from(n), 80 + u16::from(n));
        for i in 0..20u32 {
            frames.push(frame(proto, a, b, pa, pb, 100 + n as usize, i));
            frames.push(frame(proto, b, a, pb, pa, 60, i));
        }
    }
    let sent = frames.len();
    for members in [1usize, 2, 4] {
        let mut caps = pair.in_b(move || {
            FanoutGroup::new("vb")
                .members(members)
                .mode("hash".parse().unwrap())
                .group(GroupId::Unique)
                .options(Options {
                    block_size: 256 << 10,
                    block_nr: 16,
                    ..Options::default()
                })
                .open()
                .unwrap()
        });
        assert_eq!(caps.len(), members);
        let id = caps[0].fanout_group().unwrap().0;
        assert!(caps.iter().all(|c| c.fanout_group().unwrap().0 == id));
        pair.send(frames.clone());
        // Each member on its own thread.
        let handles: Vec<_> = caps
            .drain(..)
            .map(|mut cap| {
                std::thread::spawn(move || {
                    let got = collect(&mut cap, usize::MAX, Duration::from_millis(700));
                    let stats = cap.ring_stats().unwrap();
                    (got, stats)
                })
            })
            .collect();
        let results: Vec<(Vec<OwnedPacket>, RingStats)> =
            handles.into_iter().map(|h| h.join().unwrap()).collect();
        let total: usize = results.iter().map(|r| r.0.len()).sum();
        assert_eq!(total, sent, "{members} members: captured");
        let mut owner: HashMap<_, usize> = HashMap::new();
        for (m, (got, stats)) in results.iter().enumerate() {
            assert_eq!(stats.dropped, 0);
            assert!(stats.received >= got.len() as u64);
            for p in got {
                let k = flow_key(p.data());
                let first = *owner.entry(k).or_insert(m);
                assert_eq!(first, m, "{members} members: a flow on two members");
            }
        }
        assert_eq!(owner.len(), 24);
        if members > 1 {
            let used: HashSet<usize> = owner.values().copied().collect();
            assert!(
                used.len() > 1,
                "{members} members: every flow on one member"
            );
        }
        // Every packet is the frame sent, byte for byte.
        let sent_set: HashSet<&Vec<u8>> = frames.iter().collect();
        for (got, _) in &results {
            for p in got {
                assert!(sent_set.contains(&p.data().to_vec()));
                assert_eq!(p.meta().wire_len as usize, p.data().len());
            }
        }
    }
}

#[test]
fn member_threads_hand_out_every_member_packet_once() {
    if !is_root() {
        return;
    }
    let pair = Pair::new("m");
    let mut frames = Vec::new();
    for n in 0..16u8 {
        let (a, b) = ([10, 0, 2, 1 + n], [10, 0, 3, 200 - n]);
        for i in 0..25u32 {
            frames.push(frame(
                17,
                a,
                b,
                50_000 + u16::from(n),
                53,
                64 + n as usize,
                i,
            ));
        }
    }
    let members = pair.in_b(|| {
        FanoutGroup::new("vb")
            .members(3)
            .mode("hash".parse().unwrap())
            .group(GroupId::Unique)
            .options(Options {
                block_size: 128 << 10,
                block_nr: 8,
                latency: Duration::from_millis(10),
                ..Options::default()
            })
            .open()
            .unwrap()
    });
    let stop = StopHandle::default();
    let mut group = MemberThreads::start(members, stop.clone());
    assert_eq!(group.members(), 3);
    pair.send(frames.clone());
    let mut got: Vec<Vec<u8>> = Vec::new();
    let end = Instant::now() + Duration::from_secs(5);
    while got.len() < frames.len() && Instant::now() < end {
        if let Polled::Packet(p) = group.poll(Duration::from_millis(50)).unwrap()
            && ours(p.data())
        {
            assert_eq!(p.meta().wire_len as usize, p.data().len());
            got.push(p.data().to_vec());
        }
    }
    stop.stop();
    // After the stop, the members end and the stream ends.
    let ended = Instant::now() + Duration::from_secs(5);
    loop {
        match group.poll(Duration::from_millis(50)).unwrap() {
            Polled::Ended => break,
            Polled::Packet(p) => assert!(!ours(p.data()), "a packet handed out twice"),
            Polled::Idle => assert!(Instant::now() < ended, "members did not stop"),
        }
    }
    let stats = group.finish().unwrap();
    assert_eq!(stats.len(), 3);
    // Every frame sent, each exactly once (the payload numbers differ per flow).
    let mut want = frames.clone();
    want.sort();
    got.sort();
    assert_eq!(got.len(), want.len());
    assert_eq!(got, want);
    let delivered: u64 = stats.iter().map(|s| s.delivered).sum();
    assert!(delivered >= want.len() as u64);
    assert_eq!(stats.iter().map(|s| s.dropped).sum::<u64>(), 0);
}

#[test]
fn vlan_tags_stripped_by_the_kernel_are_put_back() {
    if !is_root() {
        return;
    }
    let pair = Pair::new("v");
    let plain = frame(17, [10, 0, 0, 1], [10, 0, 0, 2], 1000, 2000, 80, 1);
    let (a, b) = ([10, 0, 0, 1], [10, 0, 0, 2]);
    let dot1q = tagged(&[Vlan::new(100).pcp(3)], 17, (a, 1000), (b, 2001), 80, 2);
    let qinq = tagged(
        &[Vlan::service(200), Vlan::new(100)],
        6,
        (a, 1000),
        (b, 2002),
        80,
        3,
    );
    for reinsert in [true, false] {
        let mut cap = pair.in_b(move || {
            AfPacket::open(
                "vb",
                Options {
                    reinsert_vlan: reinsert,
                    block_size: 256 << 10,
                    block_nr: 4,
                    ..Options::default()
                },
            )
            .unwrap()
        });
        pair.send(vec![plain.clone(), dot1q.clone(), qinq.clone()]);
        let got = collect(&mut cap, 3, Duration::from_secs(2));
        assert_eq!(got.len(), 3);
        if reinsert {
            for (p, want) in got.iter().zip([&plain, &dot1q, &qinq]) {
                assert_eq!(p.data(), &want[..]);
                assert_eq!(p.meta().wire_len as usize, want.len());
            }
        } else {
            // Without re-insertion the kernel's view: the outer tag is gone.
            assert_eq!(got[1].data().len(), dot1q.len() - 4);
            assert_eq!(&got[1].data()[12..14], &[0x08, 0x00]);
            assert_eq!(&got[2].data()[12..16], &[0x81, 0x00, 0x00, 100]);
        }
    }
}

#[test]
fn snap_length_and_kernel_filters() {
    if !is_root() {
        return;
    }
    let pair = Pair::new("s");
    let mut frames = Vec::new();
    for i in 0..30u32 {
        frames.push(frame(17, [10, 0, 0, 1], [10, 0, 0, 2], 7000, 5001, 300, i));
        frames.push(frame(17, [10, 0, 0, 1], [10, 0, 0, 2], 7000, 5002, 50, i));
        frames.push(frame(6, [10, 0, 0, 1], [10, 0, 0, 2], 7000, 5001, 500, i));
        frames.push(tagged(
            &[Vlan::new(100)],
            17,
            ([10, 0, 0, 1], 7000),
            ([10, 0, 0, 2], 5001),
            40,
            i,
        ));
    }
    let run = |options: Options, want: usize| -> (Vec<OwnedPacket>, bool) {
        let mut cap = pair.in_b(move || AfPacket::open("vb", options).unwrap());
        pair.send(frames.clone());
        let got = collect(&mut cap, want, Duration::from_secs(2));
        // Nothing more arrives.
        let more = collect(&mut cap, 1, Duration::from_millis(100));
        assert!(more.is_empty());
        (got, cap.kernel_filtered())
    };
    let small = Options {
        block_size: 256 << 10,
        block_nr: 8,
        ..Options::default()
    };
    // Snap length 64, enforced in the kernel (`ret #64`).
    let (got, _) = run(
        Options {
            snaplen: 64,
            ..small.clone()
        },
        120,
    );
    assert_eq!(got.len(), 120);
    for (p, f) in got.iter().zip(&frames) {
        assert_eq!(p.data(), &f[..f.len().min(64)]);
        assert_eq!(p.meta().wire_len as usize, f.len());
    }
    // A VLAN-insensitive filter runs in the kernel.
    let filter = |e: &str| Some(tracekit_afpacket::compile_filter(e, 262_144).unwrap());
    let (got, kernel) = run(
        Options {
            filter: filter("udp port 5001"),
            ..small.clone()
        },
        30,
    );
    assert!(kernel);
    assert_eq!(
        got.len(),
        30,
        "tcpdump's `udp port 5001` does not match tagged frames"
    );
    assert!(
        got.iter()
            .all(|p| p.data()[12..14] == [0x08, 0x00] && p.data()[23] == 17)
    );
    // A VLAN filter runs in user space, on the re-tagged frames.
    let (got, kernel) = run(
        Options {
            filter: filter("vlan 100 and udp port 5001"),
            ..small.clone()
        },
        30,
    );
    assert!(!kernel);
    assert_eq!(got.len(), 30);
    assert!(
        got.iter()
            .all(|p| p.data()[12..16] == [0x81, 0x00, 0x00, 100])
    );
    // A negation too (the stripped tag would change the kernel's verdict).
    let (got, kernel) = run(
        Options {
            filter: filter("not tcp"),
            ..small.clone()
        },
        90,
    );
    assert!(!kernel);
    assert_eq!(got.len(), 90);
    // A program longer than the kernel takes (a long host list: about 4,400 instructions)
    // filters in user space; forced into the kernel, it is refused with a message.
    let mut hosts: Vec<String> = (0..1300)
        .map(|i| format!("host 10.9.{}.{}", i / 256, i % 256))
        .collect();
    hosts.push("host 10.0.0.2".into());
    let long = hosts.join(" or ");
    let (got, kernel) = run(
        Options {
            filter: filter(&long),
            ..small.clone()
        },
        90,
    );
    assert!(!kernel);
    assert_eq!(got.len(), 90);
    let forced = Options {
        filter: filter(&long),
        kernel_filter: KernelFilter::On,
        ..small.clone()
    };
    let refused = pair.in_b(move || AfPacket::open("vb", forced).err().map(|e| e.to_string()));
    let message = refused.expect("a program over 4,096 instructions cannot go to the kernel");
    assert!(message.contains("limit of 4096"), "{message}");
    // Forced into the kernel, user space still checks the re-tagged frames.
    let (got, kernel) = run(
        Options {
            filter: filter("udp"),
            kernel_filter: KernelFilter::On,
            ..small
        },
        60,
    );
    assert!(kernel);
    assert_eq!(got.len(), 60);
}

#[test]
fn statistics_under_overflow_match_the_kernel() {
    if !is_root() {
        return;
    }
    let pair = Pair::new("o");
    let frames: Vec<Vec<u8>> = (0..3000u32)
        .map(|i| frame(17, [10, 0, 0, 1], [10, 0, 0, 2], 9, 9, 1000, i))
        .collect();
    let mut cap = pair.in_b(move || {
        AfPacket::open(
            "vb",
            Options {
                block_size: 128 << 10,
                block_nr: 4,
                ..Options::default()
            },
        )
        .unwrap()
    });
    // A late reader: everything is sent before the first read.
    pair.send(frames);
    std::thread::sleep(Duration::from_millis(100));
    let mut delivered = 0u64;
    let mut ours_seen = 0usize;
    while let Some(block) = cap.next_block(Some(Duration::from_millis(100))).unwrap() {
        for p in block.packets() {
            delivered += 1;
            ours_seen += usize::from(ours(p.data()));
        }
    }
    let s = cap.ring_stats().unwrap();
    assert!(s.dropped > 0, "{s:?}");
    assert!(ours_seen < 3000 && ours_seen > 100, "{ours_seen}");
    // The kernel's accounting: what it accepted is what was delivered plus what it
    // dropped (`tp_packets` includes `tp_drops`).
    assert_eq!(s.received, s.delivered + s.dropped, "{s:?}");
    assert_eq!(s.delivered, delivered);
    assert!(s.received >= 3000);
    assert!(s.freezes >= 1);
    // Counters are cumulative: reading again adds nothing new.
    let again = cap.ring_stats().unwrap();
    assert_eq!((again.received, again.dropped), (s.received, s.dropped));
    let generic = cap.stats();
    assert_eq!(
        (generic.received, generic.dropped, generic.captured),
        (s.received, s.dropped, delivered)
    );
}

#[test]
fn loopback_packets_are_not_doubled() {
    if !is_root() {
        return;
    }
    let pair = Pair::new("l");
    let counts = pair.in_b(|| {
        let mut counts = Vec::new();
        for fanout in [None, Some("hash|ignore_outgoing"), Some("hash")] {
            let options = Options {
                block_size: 256 << 10,
                block_nr: 4,
                ..Options::default()
            };
            let mut caps = match fanout {
                None => vec![AfPacket::open("lo", options).unwrap()],
                Some(mode) => FanoutGroup::new("lo")
                    .members(2)
                    .mode(mode.parse().unwrap())
                    .options(options)
                    .open()
                    .unwrap(),
            };
            let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            let port = rx.local_addr().unwrap().port();
            let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            for i in 0..200u32 {
                tx.send_to(&i.to_be_bytes(), ("127.0.0.1", port)).unwrap();
            }
            let mut n = 0;
            for cap in &mut caps {
                let end = Instant::now() + Duration::from_millis(300);
                while Instant::now() < end {
                    if let Some(b) = cap.next_block(Some(Duration::from_millis(50))).unwrap() {
                        n += b
                            .packets()
                            .filter(|p| {
                                let d = p.data();
                                d.len() > 37
                                    && d[23] == 17
                                    && u16::from_be_bytes([d[36], d[37]]) == port
                            })
                            .count();
                    }
                }
            }
            counts.push(n);
        }
        counts
    });
    // Alone or with the group flag: each datagram once. Plain `hash` groups drop the
    // outgoing copy in user space too (loopback rule).
    assert_eq!(counts, vec![200, 200, 200]);
}

#[test]
fn stop_ends_reading_under_continuous_traffic() {
    if !is_root() {
        return;
    }
    let pair = Pair::new("t");
    // Small blocks and a slow reader: a full block is always waiting.
    let mut cap = pair.in_b(|| {
        AfPacket::open(
            "vb",
            Options {
                block_size: 128 << 10,
                block_nr: 16,
                ..Options::default()
            },
        )
        .unwrap()
    });
    let stop = cap.stop_handle();
    let stopped = cap.stop_handle();
    let (sending, sender) = pair.flood();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        stop.stop();
    });
    let started = Instant::now();
    let mut n = 0u64;
    // Bounded so that a reader that ignores the flag fails the test instead of hanging.
    while started.elapsed() < Duration::from_secs(4) {
        match cap.next_block(Some(Duration::from_millis(100))).unwrap() {
            Some(block) => {
                n += block.packets().count() as u64;
                std::thread::sleep(Duration::from_millis(3));
            }
            None if stopped.is_stopped() => break,
            None => {}
        }
    }
    let took = started.elapsed();
    sending.store(false, std::sync::atomic::Ordering::Relaxed);
    sender.join().unwrap();
    stopper.join().unwrap();
    assert!(n > 0);
    assert!(took < Duration::from_secs(2), "stopping took {took:?}");
}

/// `next_packet_within` under continuous traffic that a user-space filter drops entirely:
/// the ring is full of blocks, none of their packets pass, and the call still comes back
/// idle once its time is up (after the block it is in), instead of reading every block
/// there is (so that a parallel run's worker can send on time).
#[test]
fn a_filter_that_drops_everything_still_lets_the_timeout_end() {
    if !is_root() {
        return;
    }
    let pair = Pair::new("w");
    let mut cap = pair.in_b(|| {
        AfPacket::open(
            "vb",
            Options {
                block_size: 128 << 10,
                block_nr: 32,
                // A VLAN filter runs in user space: the kernel hands every frame up.
                filter: Some(tracekit_afpacket::compile_filter("vlan 999", 262_144).unwrap()),
                ..Options::default()
            },
        )
        .unwrap()
    });
    assert!(!cap.kernel_filtered());
    let (sending, sender) = pair.flood();
    // The ring fills while nobody reads: 32 blocks of about 680 frames each.
    std::thread::sleep(Duration::from_millis(400));
    let mut per_call = Vec::new();
    for _ in 0..3 {
        let before = CaptureSource::stats(&cap).filtered;
        let polled = cap.next_packet_within(Duration::ZERO).unwrap();
        assert!(matches!(polled, Polled::Idle), "{polled:?}");
        per_call.push(CaptureSource::stats(&cap).filtered - before);
    }
    sending.store(false, std::sync::atomic::Ordering::Relaxed);
    sender.join().unwrap();
    // At most the block in hand and one more: well under the ring's 32.
    assert!(per_call[0] > 0, "{per_call:?}");
    assert!(per_call.iter().all(|&n| n < 4 * 700), "{per_call:?}");
}
