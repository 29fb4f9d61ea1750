//! The flow table's bounds: no allocation per packet once its flows exist, and a hostile
//! trace (a million SYNs to distinct ports) held to `max_flows` with every eviction
//! counted. The allocations counted are the test thread's own.

#[path = "../../../benches/tests/counting/mod.rs"]
mod counting;

use tracekit_core::{LinkType, Meta, Packet, Timestamp};
use tracekit_decode::Decoded;
use tracekit_flow::{EndReason, FlowConfig, FlowTable, StreamConfig, StreamHandler, TcpStreams};

/// Counts the bytes delivered.
#[derive(Default)]
struct Delivered(u64);

impl StreamHandler for Delivered {
    fn data(&mut self, _: u64, _: bool, bytes: &[u8]) {
        self.0 += bytes.len() as u64;
    }
}
use tracekit_testdata::builder::{Ethernet, Ipv4, PacketBuilder, Tcp, tcp_flags};

/// Offset of the TCP destination port in the template frame.
const DST_PORT: usize = 14 + 20 + 2;

fn template(flags: u8) -> Vec<u8> {
    PacketBuilder::new()
        .ethernet(Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]))
        .ipv4(Ipv4::new([10, 0, 0, 1], [10, 0, 0, 2]))
        .tcp(Tcp::new(40000, 80).flags(flags).seq(1))
        .payload(b"0123456789")
        .build()
}

/// Feeds `packets` packets spread over `flows` destination ports; returns the records.
fn run(table: &mut FlowTable, frame: &mut [u8], packets: u32, flows: u32) -> u64 {
    let mut ended = 0u64;
    for i in 0..packets {
        let port = (1000 + i % flows) as u16;
        frame[DST_PORT..DST_PORT + 2].copy_from_slice(&port.to_be_bytes());
        let ts = Timestamp::from_micros(1_700_000_000 + i / 1000, i % 1000);
        let p = Packet::new(frame, Meta::new(ts, frame.len() as u32, LinkType::ETHERNET));
        table.add(&p, &mut |_| ended += 1);
    }
    ended
}

#[test]
fn no_allocation_per_packet_and_a_million_syns_stay_bounded() {
    // The same 200 flows, 10,000 or 30,000 packets: the same allocations (the table's
    // growth to 200 flows), none per packet.
    let mut frame = template(tcp_flags::ACK | tcp_flags::PSH);
    let count = |packets: u32, frame: &mut Vec<u8>| {
        counting::allocations_here(|| {
            let mut table = FlowTable::new(FlowConfig::default());
            run(&mut table, frame, packets, 200);
            assert_eq!(table.len(), 200);
        })
    };
    let small = count(10_000, &mut frame);
    let large = count(30_000, &mut frame);
    assert_eq!(
        small, large,
        "{small} allocations for 10,000 packets, {large} for 30,000"
    );

    // A million SYNs to distinct ports against a table of 10,000 flows, with TCP stream
    // reassembly beside it (streams end with their flows).
    let mut frame = template(tcp_flags::SYN);
    let config = FlowConfig {
        max_flows: 10_000,
        idle_timeout_ns: 0,
        ..FlowConfig::default()
    };
    let mut table = FlowTable::new(config);
    let mut streams = TcpStreams::new(StreamConfig::default());
    let mut counted = Delivered::default();
    let (mut evicted, mut ended) = (0u64, 0u64);
    let mut gone = Vec::new();
    for i in 0..1_000_000u32 {
        let port = (i % 60_000) as u16;
        frame[DST_PORT..DST_PORT + 2].copy_from_slice(&port.to_be_bytes());
        // A distinct source address per round of ports.
        frame[14 + 12..14 + 16].copy_from_slice(&(0x0a00_0000 + i / 60_000).to_be_bytes());
        let ts = Timestamp::from_micros(1_700_000_000, i % 1_000_000);
        let p = Packet::new(
            &frame,
            Meta::new(ts, frame.len() as u32, LinkType::ETHERNET),
        );
        let d = Decoded::new(&p);
        gone.clear();
        let placed = table.add_decoded(&d, ts, p.wire_len(), 0, &mut |r| {
            ended += 1;
            evicted += u64::from(r.end == EndReason::Evicted);
            gone.push(r.id);
        });
        for id in &gone {
            streams.end(*id, &mut counted);
        }
        streams.segment(placed.unwrap(), &d, &mut counted);
        assert!(streams.len() <= 10_000);
    }
    let stats = table.stats();
    assert_eq!(stats.created, 1_000_000);
    assert_eq!(stats.peak, 10_000);
    assert_eq!(table.len(), 10_000);
    assert_eq!(stats.evicted, 990_000);
    assert_eq!((evicted, ended), (990_000, 990_000));
    assert_eq!(streams.stats().buffered, 0);
    // Each SYN carried 10 bytes of data: delivered once per connection.
    assert_eq!(streams.stats().delivered, 10_000_000);
    assert_eq!(counted.0, 10_000_000);
}
