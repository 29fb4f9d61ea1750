//! The busiest flows or endpoints per interval (libtrace's tracetop and tracetopends).

use std::collections::HashMap;
use std::net::IpAddr;

use tracekit_core::Packet;
use tracekit_decode::{Decoded, FlowKey};

use super::Count;

/// What [`Top`] ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopBy {
    /// Flows: the 5-tuple, both directions together.
    Flows,
    /// IP addresses: each packet counts for its source and its destination.
    Endpoints,
}

/// A ranked item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TopKey {
    /// A flow, with its lower (address, port) end first. Packets without a flow key
    /// (non-first fragments, cut TCP/UDP headers: see `Decoded::flow_key`) are counted
    /// in the totals but rank under no flow.
    Flow(FlowKey),
    /// An IP address.
    Endpoint(IpAddr),
}

/// One interval's ranking.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// Where the interval starts (ns since the epoch, a multiple of the interval).
    pub start_ns: u64,
    /// The interval's length in ns.
    pub interval_ns: u64,
    /// Packets in the interval.
    pub packets: u64,
    /// Wire bytes in the interval.
    pub bytes: u64,
    /// How many flows or endpoints were seen.
    pub distinct: usize,
    /// The busiest, by bytes (then packets), at most the number asked for.
    pub rows: Vec<(TopKey, Count)>,
}

/// Ranks flows or endpoints by traffic over consecutive intervals of packet time. The
/// table grows with the items of one interval and is emptied after each.
///
/// ```no_run
/// use tracekit::analysis::{Top, TopBy};
/// let mut top = Top::new(TopBy::Flows, 1_000_000_000, 10);
/// let mut source = tracekit::open("trace.pcap")?;
/// while let Some(packet) = tracekit::CaptureSource::next_packet(&mut source)? {
///     if let Some(s) = top.add(&packet) {
///         println!("{} flows in the second from {}", s.distinct, s.start_ns);
///     }
/// }
/// # Ok::<(), tracekit::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Top {
    by: TopBy,
    interval_ns: u64,
    limit: usize,
    start: Option<u64>,
    total: Count,
    table: HashMap<TopKey, Count>,
}

impl Top {
    /// Ranks by `by` over intervals of `interval_ns` (at least 1), keeping the `limit`
    /// busiest.
    pub fn new(by: TopBy, interval_ns: u64, limit: usize) -> Top {
        Top {
            by,
            interval_ns: interval_ns.max(1),
            limit,
            start: None,
            total: Count::default(),
            table: HashMap::new(),
        }
    }

    /// Counts a packet. When it is the first of a later interval, the finished
    /// interval's ranking is returned first (quiet intervals in between give none).
    pub fn add(&mut self, packet: &Packet<'_>) -> Option<Snapshot> {
        let ns = packet.ts().as_unix_nanos();
        let slot = ns - ns % self.interval_ns;
        let done = match self.start {
            Some(s) if slot > s => self.finish(),
            _ => None,
        };
        if self.start.is_none() {
            self.start = Some(slot);
        }
        let wire = u64::from(packet.wire_len());
        self.total.packets += 1;
        self.total.bytes += wire;
        let d = Decoded::new(packet);
        match self.by {
            TopBy::Flows => {
                if let Some(k) = d.flow_key() {
                    let r = k.reversed();
                    let k = if (r.src, r.src_port) < (k.src, k.src_port) {
                        r
                    } else {
                        k
                    };
                    bump(&mut self.table, TopKey::Flow(k), wire);
                }
            }
            TopBy::Endpoints => {
                if let (Some(s), Some(t)) = (d.src_addr(), d.dst_addr()) {
                    bump(&mut self.table, TopKey::Endpoint(s), wire);
                    if t != s {
                        bump(&mut self.table, TopKey::Endpoint(t), wire);
                    }
                }
            }
        }
        done
    }

    /// Ends the current interval and returns its ranking (none before any packet).
    pub fn finish(&mut self) -> Option<Snapshot> {
        let start_ns = self.start.take()?;
        let mut rows: Vec<(TopKey, Count)> = self.table.drain().collect();
        let distinct = rows.len();
        rows.sort_unstable_by(|a, b| {
            (b.1.bytes, b.1.packets, a.0).cmp(&(a.1.bytes, a.1.packets, b.0))
        });
        rows.truncate(self.limit);
        let total = std::mem::take(&mut self.total);
        Some(Snapshot {
            start_ns,
            interval_ns: self.interval_ns,
            packets: total.packets,
            bytes: total.bytes,
            distinct,
            rows,
        })
    }
}

fn bump(table: &mut HashMap<TopKey, Count>, key: TopKey, wire: u64) {
    let c = table.entry(key).or_default();
    c.packets += 1;
    c.bytes += wire;
}
