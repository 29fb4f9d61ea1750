//! Arbitrary packet sequences through the reassemblers: IP defragmentation (every
//! overlap policy), the flow table and TCP stream reassembly, all with small limits. No
//! panic, the limits hold, and each stream direction's bytes arrive at most once per
//! sequence position (delivered + gaps never run backwards).
//!
//! Input: records of [policy/flags byte][length (1 byte)][time step (1 byte)][bytes],
//! each bytes a raw IPv4 or IPv6 packet (link type RAW).
#![no_main]

use std::collections::HashMap;

use libfuzzer_sys::fuzz_target;
use tracekit_core::{LinkType, Meta, Packet, Timestamp};
use tracekit_decode::Decoded;
use tracekit_flow::{
    DefragConfig, Defragmenter, FlowConfig, FlowTable, OverlapPolicy, StreamConfig, StreamEnd,
    StreamHandler, TcpStreams,
};

/// Bytes delivered per (flow, direction), and whether the direction ended.
#[derive(Default)]
struct Check {
    delivered: HashMap<(u64, bool), (u64, bool)>,
}

impl StreamHandler for Check {
    fn data(&mut self, flow: u64, from_originator: bool, bytes: &[u8]) {
        assert!(!bytes.is_empty());
        let e = self.delivered.entry((flow, from_originator)).or_default();
        assert!(!e.1, "bytes after the end");
        e.0 += bytes.len() as u64;
    }
    fn gap(&mut self, flow: u64, from_originator: bool, len: u64) {
        assert!(len > 0);
        let e = self.delivered.entry((flow, from_originator)).or_default();
        assert!(!e.1, "a gap after the end");
    }
    fn end(&mut self, flow: u64, from_originator: bool, _: StreamEnd) {
        let e = self.delivered.entry((flow, from_originator)).or_default();
        assert!(!e.1, "ended twice");
        e.1 = true;
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, mut rest)) = data.split_first() else {
        return;
    };
    let policy = OverlapPolicy::ALL[usize::from(first) % 5];
    let dconfig = DefragConfig {
        max_datagrams: 8,
        max_bytes: 256 << 10,
        max_fragments: 16,
        timeout_ns: 5_000_000_000,
        policy,
    };
    let mut defrag = Defragmenter::new(dconfig);
    let mut table = FlowTable::new(FlowConfig {
        max_flows: 4,
        idle_timeout_ns: 3_000_000_000,
        active_timeout_ns: u64::from(first & 0x80) * 100_000_000,
        ..FlowConfig::default()
    });
    let sconfig = StreamConfig {
        max_window: 4096,
        max_buffered: 8192,
        policy,
        deliver_unacknowledged: first & 0x40 != 0,
        keep_delivered: usize::from(first & 0x20) * 2,
    };
    let mut streams = TcpStreams::new(sconfig);
    let mut check = Check::default();
    let mut ts = 1_700_000_000u64 * 1_000_000_000;
    let mut ended = Vec::new();
    while rest.len() >= 2 {
        let s = defrag.stats();
        assert!(s.bytes <= dconfig.max_bytes + 2 * 65_535 + 128);
        assert!(s.in_progress <= dconfig.max_datagrams);
        let len = usize::from(rest[0]) * 4;
        ts += u64::from(rest[1]) * 50_000_000;
        rest = &rest[2..];
        let bytes = &rest[..len.min(rest.len())];
        rest = &rest[bytes.len()..];
        let p = Packet::new(
            bytes,
            Meta::new(Timestamp::from_unix_nanos(ts), bytes.len() as u32, LinkType::RAW),
        );
        let Some(whole) = defrag.add(&p).packet() else {
            continue;
        };
        let d = Decoded::new(&whole);
        ended.clear();
        let placed = table.add_decoded(&d, whole.ts(), whole.wire_len(), 0, &mut |r| {
            assert!(r.packets() > 0);
            ended.push(r.id);
        });
        for id in &ended {
            streams.end(*id, &mut check);
        }
        assert!(table.len() <= 4);
        if let Some(placed) = placed {
            streams.segment(placed, &d, &mut check);
        }
        assert!(streams.stats().buffered <= sconfig.max_buffered);
        assert!(streams.len() <= 4 + 1);
    }
    table.finish(&mut |_| {});
    streams.finish(&mut check);
    assert_eq!(streams.stats().buffered, 0);
});
