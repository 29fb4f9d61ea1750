//! `Parallel::run_members` on a live AF_PACKET fan-out group: the same `Worker` as for
//! files, one per member; every injected frame is processed exactly once, each flow by
//! one worker, and the run stops through the members' stop handle. Needs root (it makes
//! network namespaces); skipped otherwise.
#![cfg(all(target_os = "linux", feature = "live"))]

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tracekit::live::{FanoutGroup, GroupId, Injector, Options, StopHandle, enter_netns};
use tracekit::parallel::{Emit, Parallel, Worker};
use tracekit::{Error, Packet};
use tracekit_testdata::builder::{Ethernet, Ipv4, PacketBuilder, Udp};
use tracekit_testdata::netns::{VethPair, is_root};

/// Our frames carry this UDP destination port; the payload's first 4 bytes number them.
const PORT: u16 = 4789;

/// Emits (member, frame number, flow) for each of our frames; counts them.
struct Seen {
    member: usize,
    total: Arc<AtomicU64>,
}

impl Worker for Seen {
    type Item = (usize, u32, u16);
    fn packet(&mut self, p: &Packet<'_>, out: &mut Emit<'_, Self::Item>) -> Result<(), Error> {
        if let Some((number, flow)) = ours(p) {
            out.emit((self.member, number, flow));
            self.total.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }
}

/// One of our frames' number and flow (its UDP source port); `None` for other traffic.
fn ours(p: &Packet<'_>) -> Option<(u32, u16)> {
    let d = tracekit::decode::Decoded::new(p);
    let udp = d.udp().filter(|u| u.dst_port() == PORT)?;
    let n = d.payload()?.get(..4)?;
    Some((u32::from_be_bytes(n.try_into().ok()?), udp.src_port()))
}

/// `count` of our frames over `flows` flows (source address and port), each payload
/// `payload` bytes starting with the frame's number.
fn numbered_frames(count: u32, flows: u32, payload: usize) -> Vec<Vec<u8>> {
    (0..count)
        .map(|i| {
            let flow = (i % flows) as u16;
            let mut b = PacketBuilder::new();
            b.ethernet(Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]));
            b.ipv4(Ipv4::new([10, 9, 0, 1 + flow as u8], [10, 9, 1, 1]));
            b.udp(Udp::new(40_000 + flow, PORT));
            let mut bytes = i.to_be_bytes().to_vec();
            bytes.resize(payload, 0);
            b.payload(&bytes);
            b.build()
        })
        .collect()
}

#[test]
fn fanout_members_run_the_file_workers_and_each_flow_stays_on_one() {
    if !is_root() {
        eprintln!("skipped: needs root for network namespaces");
        return;
    }
    let pair = VethPair::new("p");
    // 12 flows (source ports) of 40 frames each.
    let frames = numbered_frames(480, 12, 64);
    let mut members = open_members(&pair, 3);
    let stop = StopHandle::default();
    for m in &mut members {
        m.set_stop_handle(stop.clone());
    }
    let total = Arc::new(AtomicU64::new(0));
    // Inject once the run has started; stop when every frame was seen (or 10 s).
    let sender = {
        let (a_ns, frames, total, stop) =
            (pair.a.clone(), frames.clone(), total.clone(), stop.clone());
        std::thread::spawn(move || {
            enter_netns(&a_ns).unwrap();
            std::thread::sleep(Duration::from_millis(200));
            let inj = Injector::open("va").unwrap();
            for f in &frames {
                inj.send(f).unwrap();
            }
            let end = Instant::now() + Duration::from_secs(10);
            while total.load(Ordering::Relaxed) < frames.len() as u64 && Instant::now() < end {
                std::thread::sleep(Duration::from_millis(10));
            }
            stop.stop();
        })
    };
    let mut got = Vec::new();
    let done = Parallel::new(0)
        .stop_flag(stop.flag())
        .run_members(
            members,
            |member| Seen {
                member,
                total: total.clone(),
            },
            |_, item| got.push(item),
        )
        .unwrap();
    sender.join().unwrap();
    assert!(done.error.is_none(), "{:?}", done.error);
    assert_eq!(done.workers.len(), 3);
    // Every frame exactly once.
    let mut numbers: Vec<u32> = got.iter().map(|x| x.1).collect();
    numbers.sort_unstable();
    assert_eq!(numbers, (0..480).collect::<Vec<u32>>());
    // Each flow on one member (the kernel's flow hash).
    let mut member_of: HashMap<u16, usize> = HashMap::new();
    for &(member, _, flow) in &got {
        assert_eq!(
            *member_of.entry(flow).or_insert(member),
            member,
            "flow {flow}"
        );
    }
    assert!(done.stats.packets >= 480);
    assert_eq!(
        done.stats.workers.iter().map(|w| w.packets).sum::<u64>(),
        done.stats.packets
    );
}

/// `n` members of a fresh fan-out group on the pair's `vb` end (opened inside its
/// namespace).
fn open_members(pair: &VethPair, n: usize) -> Vec<tracekit::live::AfPacket> {
    let b_ns = pair.b.clone();
    std::thread::spawn(move || {
        enter_netns(&b_ns).unwrap();
        FanoutGroup::new("vb")
            .members(n)
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
    })
    .join()
    .unwrap()
}

/// Holds our frames' numbers back and emits them only when the run sends on time.
struct Held {
    numbers: Vec<u32>,
}

impl Worker for Held {
    type Item = Vec<u32>;
    fn packet(&mut self, p: &Packet<'_>, _: &mut Emit<'_, Self::Item>) -> Result<(), Error> {
        if let Some((number, _)) = ours(p) {
            self.numbers.push(number);
        }
        Ok(())
    }
    fn flush(&mut self, out: &mut Emit<'_, Self::Item>) -> Result<(), Error> {
        if !self.numbers.is_empty() {
            out.emit(std::mem::take(&mut self.numbers));
        }
        Ok(())
    }
}

#[test]
fn quiet_members_send_what_their_workers_hold_and_publish_their_counters() {
    if !is_root() {
        eprintln!("skipped: needs root for network namespaces");
        return;
    }
    let pair = VethPair::new("q");
    let frames = numbered_frames(100, 8, 32);
    let mut members = open_members(&pair, 2);
    let stop = StopHandle::default();
    for m in &mut members {
        m.set_stop_handle(stop.clone());
    }
    // The combiner counts what reached it; the sender stops the run only once all 100
    // did (or after 10 s), so they must come while the members are quiet, not at the end.
    let combined = Arc::new(AtomicU64::new(0));
    let watch = tracekit::parallel::MemberWatch::new();
    let published = Arc::new(AtomicU64::new(0));
    let sender = {
        let (a_ns, combined, stop, watch, published) = (
            pair.a.clone(),
            combined.clone(),
            stop.clone(),
            watch.clone(),
            published.clone(),
        );
        std::thread::spawn(move || {
            enter_netns(&a_ns).unwrap();
            std::thread::sleep(Duration::from_millis(200));
            let inj = Injector::open("va").unwrap();
            for f in &frames {
                inj.send(f).unwrap();
            }
            let end = Instant::now() + Duration::from_secs(10);
            while combined.load(Ordering::Relaxed) < 100 && Instant::now() < end {
                std::thread::sleep(Duration::from_millis(10));
            }
            // The members' counters as published during the run.
            std::thread::sleep(Duration::from_millis(200));
            let live: u64 = watch.stats().iter().map(|s| s.captured).sum();
            published.store(live, Ordering::Relaxed);
            stop.stop();
            combined.load(Ordering::Relaxed)
        })
    };
    let mut got = Vec::new();
    let done = Parallel::new(2)
        .stop_flag(stop.flag())
        .watch(watch.clone())
        .run_members(
            members,
            |_| Held {
                numbers: Vec::new(),
            },
            |_, numbers: Vec<u32>| {
                combined.fetch_add(numbers.len() as u64, Ordering::Relaxed);
                got.extend(numbers);
            },
        )
        .unwrap();
    let before_stop = sender.join().unwrap();
    assert!(done.error.is_none(), "{:?}", done.error);
    assert_eq!(
        before_stop, 100,
        "held frames reached the combiner before the stop"
    );
    got.sort_unstable();
    assert_eq!(got, (0..100).collect::<Vec<u32>>());
    // Each member's own counters: published while running, and at the end.
    assert!(published.load(Ordering::Relaxed) >= 100);
    assert_eq!(watch.stats().len(), 2);
    for w in &done.stats.workers {
        let source = w.source.expect("a member's counters");
        assert_eq!(source.captured, w.packets);
        assert!(source.received >= source.captured, "{source:?}");
        assert_eq!(source.dropped, 0);
    }
    assert!(done.stats.to_string().contains("its member received"));
}
