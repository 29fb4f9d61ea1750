//! Whole-trace figures, as capinfos and libtrace's tracestats report them.

use tracekit_core::{LinkType, Packet, Timestamp};

/// Packet and byte counts, time span and link types of a trace, accumulated packet by
/// packet with no allocation on the way (link types are few).
///
/// `first_ts`/`last_ts` are the earliest and latest time stamps (as capinfos reports),
/// which differ from the first and last packets' when time stamps go backwards. Packets
/// without a time stamp (pcapng Simple Packet Blocks) are left out of them, as capinfos
/// does.
///
/// ```
/// use tracekit::{LinkType, Meta, Packet, Summary, Timestamp};
/// let mut s = Summary::default();
/// for (secs, len) in [(10, 60), (12, 1514), (11, 100)] {
///     let data = vec![0u8; len];
///     s.add(&Packet::new(&data, Meta::new(Timestamp::from_micros(secs, 0), len as u32, LinkType::ETHERNET)));
/// }
/// assert_eq!((s.packets, s.captured_bytes), (3, 1674));
/// assert_eq!(s.duration_ns(), Some(2_000_000_000));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Packets seen.
    pub packets: u64,
    /// Sum of captured lengths.
    pub captured_bytes: u64,
    /// Sum of wire lengths.
    pub wire_bytes: u64,
    /// Earliest time stamp.
    pub first_ts: Option<Timestamp>,
    /// Latest time stamp.
    pub last_ts: Option<Timestamp>,
    /// Link types in the order first seen.
    pub link_types: Vec<LinkType>,
}

impl Summary {
    /// Accounts for one packet.
    #[inline]
    pub fn add(&mut self, packet: &Packet<'_>) {
        self.packets += 1;
        self.captured_bytes += packet.caplen() as u64;
        self.wire_bytes += u64::from(packet.wire_len());
        let ts = packet.ts();
        match (self.first_ts, self.last_ts) {
            _ if !ts.is_known() => {}
            (Some(first), Some(last)) => {
                if ts < first {
                    self.first_ts = Some(ts);
                }
                if ts > last {
                    self.last_ts = Some(ts);
                }
            }
            _ => {
                self.first_ts = Some(ts);
                self.last_ts = Some(ts);
            }
        }
        let link = packet.link_type();
        if self.link_types.last() != Some(&link) && !self.link_types.contains(&link) {
            self.link_types.push(link);
        }
    }

    /// Latest minus earliest time stamp, in nanoseconds.
    pub fn duration_ns(&self) -> Option<u64> {
        match (self.first_ts, self.last_ts) {
            (Some(a), Some(b)) => Some(b.as_unix_nanos() - a.as_unix_nanos()),
            _ => None,
        }
    }
}
