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
        let d = tracekit::decode::Decoded::new(p);
        if let Some(udp) = d.udp()
            && udp.dst_port() == PORT
            && let Some(n) = d.payload().and_then(|b| b.get(..4))
        {
            let number = u32::from_be_bytes(n.try_into().unwrap());
            out.emit((self.member, number, udp.src_port()));
            self.total.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }
}

#[test]
fn fanout_members_run_the_file_workers_and_each_flow_stays_on_one() {
    if !is_root() {
        eprintln!("skipped: needs root for network namespaces");
        return;
    }
    let pair = VethPair::new("p");
    // 12 flows (source ports) of 40 frames each.
    let mut frames = Vec::new();
    for i in 0..480u32 {
        let flow = (i % 12) as u16;
        let mut b = PacketBuilder::new();
        b.ethernet(Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]));
        b.ipv4(Ipv4::new([10, 9, 0, 1 + flow as u8], [10, 9, 1, 1]));
        b.udp(Udp::new(40_000 + flow, PORT));
        let mut payload = i.to_be_bytes().to_vec();
        payload.resize(64, 0);
        b.payload(&payload);
        frames.push(b.build());
    }
    let b_ns = pair.b.clone();
    let members = std::thread::spawn(move || {
        enter_netns(&b_ns).unwrap();
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
    })
    .join()
    .unwrap();
    let stop = StopHandle::default();
    let mut members = members;
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
