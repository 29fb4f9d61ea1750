//! The flow table: bidirectional flows with per-direction counters, a TCP state machine
//! and a Zeek-style history, idle and active timeouts on trace time, and a bounded size.
//!
//! Flows live in a slab (`Vec`) indexed through a hash map keyed by the fixed-size
//! [`FlowKey`]; a doubly linked list through the slab keeps them in order of last
//! activity, so idle expiry and eviction take the head in O(1). Once the table has grown
//! to its working size, updating it allocates nothing.

use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;
use tracekit_core::{Packet, Timestamp};
use tracekit_decode::{Decoded, ip_proto};

use crate::key::{Endpoint, FlowKey, KeyOptions, Side};
use crate::order::{Links, NIL, Order};

/// Nanoseconds per second.
const SECOND: u64 = 1_000_000_000;

/// How a [`FlowTable`] keys, times out and bounds its flows.
#[derive(Clone, Copy, Debug)]
pub struct FlowConfig {
    /// A flow with no packet for this long (trace time, nanoseconds) is ended
    /// ([`EndReason::Idle`]); 0 never ends a flow for idleness. Default 300 s (Zeek's TCP
    /// inactivity timeout).
    pub idle_timeout_ns: u64,
    /// A flow older than this (trace time since its first packet, nanoseconds) is ended
    /// at its next packet ([`EndReason::Active`]) and a new record started for the same
    /// key; 0 (the default) never.
    pub active_timeout_ns: u64,
    /// At most this many flows at once; a new flow beyond it evicts the least recently
    /// active one ([`EndReason::Evicted`], counted in [`FlowStats::evicted`]). Default
    /// 262,144 (about 60 MB).
    pub max_flows: usize,
    /// Which fields beyond the 5-tuple tell flows apart.
    pub key: KeyOptions,
    /// Count each tunnelled packet also in the flows of the packets it carries (at tunnel
    /// level 1, 2, ...), as tshark's conversation tables and Zeek do. Default on.
    pub tunnels: bool,
}

impl Default for FlowConfig {
    fn default() -> FlowConfig {
        FlowConfig {
            idle_timeout_ns: 300 * SECOND,
            active_timeout_ns: 0,
            max_flows: 262_144,
            key: KeyOptions::default(),
            tunnels: true,
        }
    }
}

/// Packets and bytes one way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirectionStats {
    /// Packets.
    pub packets: u64,
    /// Bytes on the wire (the frame's wire length, link header included, as tshark's
    /// conversation statistics count them).
    pub wire_bytes: u64,
    /// Application bytes: the transport payload's length as the headers declare it
    /// (whatever the capture kept).
    pub payload_bytes: u64,
}

/// The TCP state of a flow, from the flags seen so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpState {
    /// The originator sent a SYN; no answer yet.
    SynSent,
    /// The responder answered with SYN-ACK.
    SynReceived,
    /// The three-way handshake completed.
    Established,
    /// The originator sent a FIN; the responder has not.
    FinOriginator,
    /// The responder sent a FIN; the originator has not.
    FinResponder,
    /// Both sides sent a FIN.
    Closed,
    /// A side sent a RST.
    Reset,
    /// Picked up after the handshake (no SYN seen), not closed.
    Midstream,
}

impl TcpState {
    /// A short name: `syn_sent`, `syn_received`, `established`, `fin_orig`,
    /// `fin_resp`, `closed`, `reset`, `midstream`.
    pub fn name(self) -> &'static str {
        match self {
            TcpState::SynSent => "syn_sent",
            TcpState::SynReceived => "syn_received",
            TcpState::Established => "established",
            TcpState::FinOriginator => "fin_orig",
            TcpState::FinResponder => "fin_resp",
            TcpState::Closed => "closed",
            TcpState::Reset => "reset",
            TcpState::Midstream => "midstream",
        }
    }
}

/// Why a flow record was handed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndReason {
    /// No packet for the idle timeout.
    Idle,
    /// Older than the active timeout (the flow goes on under a new record).
    Active,
    /// Evicted to make room for a new flow (the table was full).
    Evicted,
    /// A new TCP connection reused the 5-tuple (a SYN whose sequence number differs
    /// from the first one its side sent, the rule tshark uses to start a new stream).
    Reused,
    /// The end of the trace ([`FlowTable::finish`]).
    End,
}

impl EndReason {
    /// `idle`, `active`, `evicted`, `reused` or `end`.
    pub fn name(self) -> &'static str {
        match self {
            EndReason::Idle => "idle",
            EndReason::Active => "active",
            EndReason::Evicted => "evicted",
            EndReason::Reused => "reused",
            EndReason::End => "end",
        }
    }
}

/// A Zeek-style connection history (`conn.log`'s `history`): one letter per event,
/// upper case for the originator and lower case for the responder, in the order
/// recorded.
///
/// | letter | event | recorded |
/// |---|---|---|
/// | `S` | a SYN without ACK | once per direction |
/// | `H` | a SYN-ACK | once per direction |
/// | `A` | a pure ACK (no payload, no SYN, FIN or RST) | once per direction |
/// | `D` | a packet with payload | once per direction |
/// | `F` | a FIN | once per direction |
/// | `R` | a RST | once per direction |
/// | `T` | a packet whose payload ends at or before the highest sequence number already sent that way (a retransmission) | at the 1st, 10th, 100th, ... |
/// | `W` | a zero window advertisement (not on a SYN, FIN or RST) | at the 1st, 10th, 100th, ... |
/// | `Q` | a SYN with FIN or RST | once per direction |
/// | `^` | roles flipped: the first packet seen was the responder's SYN-ACK | once |
///
/// `T` and `W` follow Zeek's logarithmic rule: the letter is recorded when the event is
/// first seen, again when it has been seen 10 times, again at 100, and so on, so
/// `TTt` says the originator retransmitted 10 to 99 times and the responder 1 to 9
/// times. Zeek's other letters are not recorded: `C` (bad checksum: checksums are not
/// verified on the flow table's path), `G` (content gap: the table does not reassemble
/// streams; [`crate::stream`] reports gaps), `I` (inconsistent flags). Zeek also repeats
/// `S`, `H`, `F` and `R` when their sequence number changes; here they are recorded once
/// per direction (a SYN with a new sequence number starts a new record instead, see
/// [`EndReason::Reused`]). At most 32 letters are kept; later ones are dropped.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct History {
    letters: [u8; History::CAPACITY],
    len: u8,
    seen: u32,
    /// How often `T` and `W` were seen, originator then responder (`T` at 0 and 1,
    /// `W` at 2 and 3).
    repeats: [u32; 4],
}

impl History {
    const CAPACITY: usize = 32;
    /// The letters recorded once per direction.
    const LETTERS: &'static [u8] = b"SHADFRQ^";

    const fn empty() -> History {
        History {
            letters: [0; History::CAPACITY],
            len: 0,
            seen: 0,
            repeats: [0; 4],
        }
    }

    /// Notes `letter` (upper case) for the originator (`orig`) or the responder: once
    /// per direction, or for `T` and `W` on Zeek's logarithmic scale.
    fn note(&mut self, letter: u8, orig: bool) {
        let scaled = match letter {
            b'T' => Some(0),
            b'W' => Some(2),
            _ => None,
        };
        if let Some(base) = scaled {
            let n = &mut self.repeats[base + usize::from(!orig)];
            *n = n.saturating_add(1);
            if is_power_of_ten(*n) {
                self.push(letter, orig);
            }
            return;
        }
        let Some(i) = History::LETTERS.iter().position(|&l| l == letter) else {
            return;
        };
        let bit = 1u32 << (i * 2 + usize::from(!orig));
        if self.seen & bit != 0 {
            return;
        }
        self.seen |= bit;
        self.push(letter, orig);
    }

    fn push(&mut self, letter: u8, orig: bool) {
        let Some(slot) = self.letters.get_mut(usize::from(self.len)) else {
            return;
        };
        *slot = if orig {
            letter
        } else {
            letter.to_ascii_lowercase()
        };
        self.len += 1;
    }

    /// How many retransmissions (`T` events) the originator (`orig`) or the responder
    /// sent, counted in full (the letters only show the order of magnitude).
    pub fn retransmissions(&self, orig: bool) -> u32 {
        self.repeats[usize::from(!orig)]
    }

    /// How many zero window advertisements (`W` events) the originator (`orig`) or the
    /// responder sent.
    pub fn zero_windows(&self, orig: bool) -> u32 {
        self.repeats[2 + usize::from(!orig)]
    }

    /// The letters.
    pub fn as_str(&self) -> &str {
        // Only ASCII letters from LETTERS are ever stored.
        std::str::from_utf8(&self.letters[..usize::from(self.len)]).unwrap_or("")
    }
}

/// 1, 10, 100, ...: the counts at which Zeek records a `T` or `W` again.
fn is_power_of_ten(n: u32) -> bool {
    matches!(
        n,
        1 | 10
            | 100
            | 1_000
            | 10_000
            | 100_000
            | 1_000_000
            | 10_000_000
            | 100_000_000
            | 1_000_000_000
    )
}

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// TCP flags seen, per flow.
mod seen {
    pub const SYN_ORIG: u16 = 1;
    pub const SYNACK_RESP: u16 = 1 << 1;
    pub const ACK_ORIG_AFTER_SYNACK: u16 = 1 << 2;
    pub const FIN_ORIG: u16 = 1 << 3;
    pub const FIN_RESP: u16 = 1 << 4;
    pub const RST_ORIG: u16 = 1 << 5;
    pub const RST_RESP: u16 = 1 << 6;
    pub const FLIPPED: u16 = 1 << 7;
    /// The same, the other way round: the responder opened a connection on this flow
    /// (it was first seen with the other side's packets).
    pub const SYN_RESP: u16 = 1 << 8;
    pub const SYNACK_ORIG: u16 = 1 << 9;
    pub const ACK_RESP_AFTER_SYNACK: u16 = 1 << 10;
}

/// A flow: what [`FlowTable`] hands out when it ends one, and what
/// [`FlowTable::get`] shows of a live one.
#[derive(Clone, Copy, Debug)]
pub struct FlowRecord {
    /// The key.
    pub key: FlowKey,
    /// A number given in order of creation, from 0 (also across [`EndReason::Active`]
    /// and [`EndReason::Reused`] restarts).
    pub id: u64,
    /// Which side of the key the originator is: the sender of the first packet, or its
    /// receiver when that packet was a SYN-ACK.
    pub originator: Side,
    /// Time stamp of the first packet.
    pub first: Timestamp,
    /// The latest time stamp seen.
    pub last: Timestamp,
    /// From the originator to the responder.
    pub orig: DirectionStats,
    /// From the responder to the originator.
    pub resp: DirectionStats,
    /// Non-first IP fragments counted in this flow (they have no ports: such a flow has
    /// port 0 on both sides unless fragments were reassembled first).
    pub fragments: u64,
    /// TCP or UDP packets counted here whose transport header the capture cut (their
    /// ports were captured; tshark leaves such packets out of its conversations).
    pub truncated: u64,
    /// The TCP flags seen (see `seen`).
    tcp_seen: u16,
    /// The history letters.
    pub history: History,
    /// Why the record was handed out ([`EndReason::End`] for a live flow).
    pub end: EndReason,
}

impl FlowRecord {
    /// The originator's endpoint.
    pub fn src(&self) -> Endpoint {
        self.key.endpoint(self.originator)
    }

    /// The responder's endpoint.
    pub fn dst(&self) -> Endpoint {
        self.key.endpoint(self.originator.other())
    }

    /// The IP protocol number.
    pub fn protocol(&self) -> u8 {
        self.key.protocol()
    }

    /// What [`FlowRecord::counts`] holds, as flow records' columns name it.
    pub const COUNT_NAMES: [&'static str; 8] = [
        "packets",
        "bytes",
        "packets_ab",
        "packets_ba",
        "bytes_ab",
        "bytes_ba",
        "payload_ab",
        "payload_ba",
    ];

    /// The counters in the order of [`FlowRecord::COUNT_NAMES`]: packets and wire bytes
    /// both ways, then packets, wire bytes and payload bytes originator to responder
    /// (`_ab`) and back (`_ba`).
    pub fn counts(&self) -> [u64; 8] {
        let (a, b) = (&self.orig, &self.resp);
        [
            self.packets(),
            self.wire_bytes(),
            a.packets,
            b.packets,
            a.wire_bytes,
            b.wire_bytes,
            a.payload_bytes,
            b.payload_bytes,
        ]
    }

    /// Packets both ways.
    pub fn packets(&self) -> u64 {
        self.orig.packets + self.resp.packets
    }

    /// Wire bytes both ways.
    pub fn wire_bytes(&self) -> u64 {
        self.orig.wire_bytes + self.resp.wire_bytes
    }

    /// The TCP state (`None` for other protocols).
    pub fn tcp_state(&self) -> Option<TcpState> {
        if self.key.protocol() != ip_proto::TCP {
            return None;
        }
        let s = self.tcp_seen;
        let has = |b| s & b != 0;
        Some(if has(seen::RST_ORIG | seen::RST_RESP) {
            TcpState::Reset
        } else if has(seen::FIN_ORIG) && has(seen::FIN_RESP) {
            TcpState::Closed
        } else if has(seen::FIN_ORIG) {
            TcpState::FinOriginator
        } else if has(seen::FIN_RESP) {
            TcpState::FinResponder
        } else if has(seen::SYN_ORIG | seen::SYNACK_RESP) && has(seen::ACK_ORIG_AFTER_SYNACK) {
            TcpState::Established
        } else if has(seen::SYNACK_RESP) {
            TcpState::SynReceived
        } else if has(seen::SYN_ORIG) {
            TcpState::SynSent
        } else {
            TcpState::Midstream
        })
    }

    /// Who tried to open a TCP connection on this flow (sent a SYN without ACK): the
    /// originator, or the responder when only it did (a flow first seen with the other
    /// side's packets, a RST for example); `None` when nobody did.
    pub fn attempted_by(&self) -> Option<Endpoint> {
        if self.key.protocol() != ip_proto::TCP {
            None
        } else if self.tcp_seen & seen::SYN_ORIG != 0 {
            Some(self.src())
        } else if self.tcp_seen & seen::SYN_RESP != 0 {
            Some(self.dst())
        } else {
            None
        }
    }

    /// Whether a three-way handshake completed (a SYN, the SYN-ACK, then the opener's
    /// ACK).
    pub fn handshake_completed(&self) -> bool {
        let by_orig = seen::SYN_ORIG | seen::SYNACK_RESP | seen::ACK_ORIG_AFTER_SYNACK;
        let by_resp = seen::SYN_RESP | seen::SYNACK_ORIG | seen::ACK_RESP_AFTER_SYNACK;
        self.tcp_seen & by_orig == by_orig || self.tcp_seen & by_resp == by_resp
    }

    /// Zeek's `conn_state` for TCP (`S0`, `S1`, `SF`, `REJ`, `S2`, `S3`, `RSTO`,
    /// `RSTR`, `RSTOS0`, `RSTRH`, `SH`, `SHR`, `OTH`); for other protocols `S0` when
    /// only the originator sent, `SF` when both did.
    pub fn conn_state(&self) -> &'static str {
        if self.key.protocol() != ip_proto::TCP {
            return if self.resp.packets == 0 { "S0" } else { "SF" };
        }
        let s = self.tcp_seen;
        let has = |b| s & b != 0;
        let syn = has(seen::SYN_ORIG);
        let synack = has(seen::SYNACK_RESP);
        let established = syn && synack;
        let (fo, fr) = (has(seen::FIN_ORIG), has(seen::FIN_RESP));
        let (ro, rr) = (has(seen::RST_ORIG), has(seen::RST_RESP));
        match () {
            _ if rr && syn && !synack => "REJ",
            _ if ro && established => "RSTO",
            _ if rr && established => "RSTR",
            _ if ro && syn && !synack => "RSTOS0",
            _ if rr && synack && !syn => "RSTRH",
            _ if ro || rr => "OTH",
            _ if fo && fr => "SF",
            _ if fo && established => "S2",
            _ if fr && established => "S3",
            _ if fo && syn && !synack => "SH",
            _ if fr && synack && !syn => "SHR",
            _ if established => "S1",
            _ if syn && !synack && self.resp.packets == 0 => "S0",
            _ => "OTH",
        }
    }

    fn new(key: FlowKey, id: u64, originator: Side, ts: Timestamp) -> FlowRecord {
        FlowRecord {
            key,
            id,
            originator,
            first: ts,
            last: ts,
            orig: DirectionStats::default(),
            resp: DirectionStats::default(),
            fragments: 0,
            truncated: 0,
            tcp_seen: 0,
            history: History::empty(),
            end: EndReason::End,
        }
    }
}

/// Per direction TCP sequence tracking (for retransmissions and port reuse).
#[derive(Clone, Copy, Debug, Default)]
struct SeqTrack {
    /// One past the highest sequence number of payload sent, once any was.
    next: Option<u32>,
    /// The first sequence number seen this way (a SYN's, or the first segment's when
    /// the flow was picked up midstream).
    base: Option<u32>,
}

/// `a` is before `b` in sequence space (RFC 1982 serial arithmetic).
fn seq_before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

struct Slot {
    record: FlowRecord,
    seq: [SeqTrack; 2],
    /// The table clock when the flow last saw a packet.
    touched: u64,
    /// The table clock at the flow's first packet.
    born: u64,
    live: bool,
}

/// What the table counted beside the flows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowStats {
    /// Packets offered.
    pub packets: u64,
    /// Packets (or tunnel levels) that were not IP and so in no flow.
    pub not_ip: u64,
    /// Flows created.
    pub created: u64,
    /// Flows ended by the idle timeout.
    pub idle: u64,
    /// Records cut by the active timeout.
    pub active: u64,
    /// Flows evicted because the table was full.
    pub evicted: u64,
    /// TCP connections that reused a flow's 5-tuple.
    pub reused: u64,
    /// The most flows held at once.
    pub peak: usize,
}

/// Where a packet went: the flow's slot and which side sent it (see
/// [`FlowTable::add_decoded`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placed {
    /// The flow's creation number ([`FlowRecord::id`]).
    pub id: u64,
    /// Whether the packet went from the originator to the responder.
    pub from_originator: bool,
}

/// A table of bidirectional flows; see the crate documentation for an example.
pub struct FlowTable {
    config: FlowConfig,
    /// The live flows' slot numbers, hashed by the key each slot holds. A map from key
    /// to slot would hold every key twice; this index is 4 bytes a flow (plus hashbrown's
    /// control byte), small enough to stay in cache, and the key comparison reads the
    /// slot that the packet updates next anyway: one cache miss a lookup, not two.
    map: HashTable<u32>,
    slots: Vec<Slot>,
    /// The LRU list's links, one per slot, apart from the slots: a packet moves its flow
    /// to the back, which touches the neighbours' links (8 bytes each in a compact
    /// array, not a cache line of each neighbour's slot).
    links: Vec<Links>,
    /// Each slot's key hash, apart from the slots for the same reason: growing the index
    /// rehashes every flow, which would otherwise read every slot.
    hashes: Vec<u64>,
    free: Vec<u32>,
    /// Live flows, least recently used first.
    order: Order,
    /// Trace time (ns since the epoch): the latest time stamp seen.
    now: u64,
    next_id: u64,
    stats: FlowStats,
}

impl FlowTable {
    /// An empty table.
    pub fn new(config: FlowConfig) -> FlowTable {
        FlowTable {
            config: FlowConfig {
                max_flows: config.max_flows.clamp(1, NIL as usize - 1),
                ..config
            },
            map: HashTable::new(),
            slots: Vec::new(),
            links: Vec::new(),
            hashes: Vec::new(),
            free: Vec::new(),
            order: Order::EMPTY,
            now: 0,
            next_id: 0,
            stats: FlowStats::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &FlowConfig {
        &self.config
    }

    /// What the table counted so far.
    pub fn stats(&self) -> FlowStats {
        self.stats
    }

    /// Flows held now.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no flow is held.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The live flow with this key, if any.
    pub fn get(&self, key: &FlowKey) -> Option<&FlowRecord> {
        self.find(key, hash(key))
            .map(|i| &self.slots[i as usize].record)
    }

    /// The slot of the live flow with this key, whose hash is `h`.
    #[inline]
    fn find(&self, key: &FlowKey, h: u64) -> Option<u32> {
        let slots = &self.slots;
        self.map
            .find(h, |&i| slots[i as usize].record.key == *key)
            .copied()
    }

    /// Counts a packet in its flow (and, with [`FlowConfig::tunnels`], the packets it
    /// carries in theirs); `emit` receives every flow this ends (timeouts, eviction,
    /// port reuse). Returns where the outermost IP packet went, `None` if it is not IP.
    pub fn add(
        &mut self,
        packet: &Packet<'_>,
        emit: &mut impl FnMut(&FlowRecord),
    ) -> Option<Placed> {
        self.add_levels(packet, |_| true, emit)
    }

    /// [`add`](Self::add) for one of several tables that share a trace out by tunnel
    /// level (`tracekit::parallel::Distribution::FlowLevels`): the packet is counted
    /// only at the levels (0: the outermost packet) for which `mine` says yes; its other
    /// levels are another table's. Returns `None` when level 0 is not this table's.
    pub fn add_levels(
        &mut self,
        packet: &Packet<'_>,
        mine: impl Fn(usize) -> bool,
        emit: &mut impl FnMut(&FlowRecord),
    ) -> Option<Placed> {
        let d = Decoded::new(packet);
        let placed = if mine(0) {
            self.add_decoded(&d, packet.ts(), packet.wire_len(), 0, emit)
        } else {
            None
        };
        // A packet counted at level 0 moved the time on; any other does it here.
        if placed.is_none() {
            self.advance(packet.ts());
        }
        if self.config.tunnels {
            let mut inner = d.inner();
            let mut level = 1u8;
            while let Some(i) = inner {
                if mine(usize::from(level)) {
                    self.add_decoded(&i, packet.ts(), packet.wire_len(), level, emit);
                }
                inner = i.inner();
                level = level.saturating_add(1);
            }
        }
        placed
    }

    /// Moves the table's trace time on to `ts` (if known and later): every packet of
    /// the trace moves it, whether it is counted in a flow or not ([`add`](Self::add)
    /// does this; a caller that holds packets back, such as a defragmenter, calls this
    /// for the ones it keeps). Flows time out at the next packet counted.
    #[inline]
    pub fn advance(&mut self, ts: Timestamp) {
        if ts.is_known() {
            self.now = self.now.max(ts.as_unix_nanos());
        }
    }

    /// Counts one decoded IP packet (at tunnel `level`) of `wire_len` bytes seen at
    /// `ts` in its flow; see [`add`](Self::add).
    pub fn add_decoded(
        &mut self,
        d: &Decoded<'_>,
        ts: Timestamp,
        wire_len: u32,
        level: u8,
        emit: &mut impl FnMut(&FlowRecord),
    ) -> Option<Placed> {
        if level == 0 {
            self.stats.packets += 1;
        }
        // The view and the key apart, not as one nested tuple: the key (48 bytes) then
        // stays where `of_view` built it, where the tuple was moved through the stack
        // three times, each load waiting for the narrower stores before it (about 40 %
        // of this function's time on T10).
        let Some(v) = d.ip_view() else {
            self.stats.not_ip += 1;
            return None;
        };
        let Some((key, side)) = FlowKey::of_view(&v, d, self.config.key, level) else {
            self.stats.not_ip += 1;
            return None;
        };
        if ts.is_known() {
            self.now = self.now.max(ts.as_unix_nanos());
        }
        self.expire_idle(emit);
        let tcp = v.tcp();
        let flags = tcp.map_or(0, |t| t.flag_byte());
        let syn_only = flags & (TCP_SYN | TCP_ACK) == TCP_SYN;
        let h = hash(&key);
        let mut idx = match self.find(&key, h) {
            Some(i) => i,
            None => self.create(key, h, side, flags, ts, emit),
        };
        // A SYN whose sequence number differs from the first one its side sent starts a
        // new connection on the same 5-tuple (as tshark starts a new TCP stream).
        if syn_only {
            let base = self.slots[idx as usize].seq[side.index()].base;
            if base.is_some() && base != tcp.map(|t| t.seq_number()) {
                self.stats.reused += 1;
                self.end(idx, EndReason::Reused, emit);
                idx = self.create(key, h, side, flags, ts, emit);
            }
        }
        if self.config.active_timeout_ns > 0 {
            let slot = &self.slots[idx as usize];
            if self.now.saturating_sub(slot.born) >= self.config.active_timeout_ns {
                let (originator, tcp_seen) = (slot.record.originator, slot.record.tcp_seen);
                self.stats.active += 1;
                self.end(idx, EndReason::Active, emit);
                idx = self.create(key, h, originator, 0, ts, emit);
                // The TCP state goes on; the history starts again.
                self.slots[idx as usize].record.tcp_seen = tcp_seen;
            }
        }
        self.touch(idx);
        let slot = &mut self.slots[idx as usize];
        let r = &mut slot.record;
        if ts.is_known() && (!r.last.is_known() || ts > r.last) {
            r.last = ts;
        }
        if !r.first.is_known() {
            r.first = ts;
        }
        let from_orig = side == r.originator;
        let (wire_payload, captured) = v.payload_with_wire_len();
        let payload = u64::from(wire_payload.unwrap_or(0));
        let dir = if from_orig { &mut r.orig } else { &mut r.resp };
        dir.packets += 1;
        dir.wire_bytes += u64::from(wire_len);
        dir.payload_bytes += payload;
        if v.fragment().is_some_and(|f| !f.is_first()) {
            r.fragments += 1;
        } else if matches!(key.protocol(), ip_proto::TCP | ip_proto::UDP) && captured.is_none() {
            r.truncated += 1;
        }
        match tcp {
            Some(t) => {
                let track = &mut slot.seq[side.index()];
                tcp_update(
                    r,
                    track,
                    from_orig,
                    flags,
                    t.seq_number(),
                    t.window(),
                    payload as u32,
                );
            }
            None if payload > 0 => r.history.note(b'D', from_orig),
            None => {}
        }
        Some(Placed {
            id: r.id,
            from_originator: from_orig,
        })
    }

    /// The table's trace time: the latest time stamp it was given (nanoseconds since
    /// the epoch; 0 before any). Tables that share one trace between them (one per
    /// worker) end it at the latest of theirs: [`expire`](Self::expire), then
    /// [`finish`](Self::finish), as one table would have.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Ends every flow idle at trace time `now` (nanoseconds since the epoch), for a
    /// caller whose trace went quiet.
    pub fn expire(&mut self, now: u64, emit: &mut impl FnMut(&FlowRecord)) {
        self.now = self.now.max(now);
        self.expire_idle(emit);
    }

    /// Ends every remaining flow ([`EndReason::End`]), in order of creation.
    pub fn finish(&mut self, emit: &mut impl FnMut(&FlowRecord)) {
        // In slot order, which is creation order until slots are reused: the sort then
        // finds one run and is linear.
        let mut live: Vec<(u64, u32)> = self
            .slots
            .iter()
            .zip(0u32..)
            .filter(|(s, _)| s.live)
            .map(|(s, i)| (s.record.id, i))
            .collect();
        live.sort_unstable();
        // Everything goes: the map is emptied at once rather than flow by flow.
        self.map.clear();
        self.order = Order::EMPTY;
        for (_, i) in live {
            let slot = &mut self.slots[i as usize];
            slot.live = false;
            self.links[i as usize] = Links::NONE;
            slot.record.end = EndReason::End;
            self.free.push(i);
            emit(&self.slots[i as usize].record);
        }
    }

    fn expire_idle(&mut self, emit: &mut impl FnMut(&FlowRecord)) {
        let idle = self.config.idle_timeout_ns;
        if idle == 0 {
            return;
        }
        while let Some(h) = self.order.first() {
            if self.now.saturating_sub(self.slots[h as usize].touched) < idle {
                break;
            }
            self.stats.idle += 1;
            self.end(h, EndReason::Idle, emit);
        }
    }

    /// Starts a flow for `key`, whose hash is `h`, in a free slot.
    fn create(
        &mut self,
        key: FlowKey,
        h: u64,
        sender: Side,
        flags: u8,
        ts: Timestamp,
        emit: &mut impl FnMut(&FlowRecord),
    ) -> u32 {
        if self.map.len() >= self.config.max_flows
            && let Some(oldest) = self.order.first()
        {
            self.stats.evicted += 1;
            self.end(oldest, EndReason::Evicted, emit);
        }
        // A SYN-ACK first: its receiver opened the connection.
        let flipped = flags & (TCP_SYN | TCP_ACK) == (TCP_SYN | TCP_ACK);
        let originator = if flipped { sender.other() } else { sender };
        let mut record = FlowRecord::new(key, self.next_id, originator, ts);
        if flipped {
            record.tcp_seen |= seen::FLIPPED;
            record.history.note(b'^', true);
        }
        self.next_id += 1;
        self.stats.created += 1;
        let slot = Slot {
            record,
            seq: [SeqTrack::default(); 2],
            touched: self.now,
            born: self.now,
            live: true,
        };
        let idx = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = slot;
                self.hashes[i as usize] = h;
                i
            }
            None => {
                self.slots.push(slot);
                self.links.push(Links::NONE);
                self.hashes.push(h);
                (self.slots.len() - 1) as u32
            }
        };
        let hashes = &self.hashes;
        self.map.insert_unique(h, idx, |&i| hashes[i as usize]);
        self.stats.peak = self.stats.peak.max(self.map.len());
        self.order.push_back(&mut self.links, idx);
        idx
    }

    fn end(&mut self, idx: u32, reason: EndReason, emit: &mut impl FnMut(&FlowRecord)) {
        self.order.remove(&mut self.links, idx);
        let slot = &mut self.slots[idx as usize];
        slot.live = false;
        slot.record.end = reason;
        let found = self
            .map
            .find_entry(self.hashes[idx as usize], |&i| i == idx);
        debug_assert!(found.is_ok(), "a live flow's slot is in the index");
        if let Ok(entry) = found {
            entry.remove();
        }
        self.free.push(idx);
        emit(&self.slots[idx as usize].record);
    }

    fn touch(&mut self, idx: u32) {
        self.slots[idx as usize].touched = self.now;
        self.order.move_to_back(&mut self.links, idx);
    }
}

/// A key's hash for the index: FxHash, as the crate's other maps use (the key is a few
/// machine words, hashed in three multiplications).
#[inline]
fn hash(key: &FlowKey) -> u64 {
    FxBuildHasher.hash_one(key)
}

const TCP_FIN: u8 = 0x01;
const TCP_SYN: u8 = 0x02;
const TCP_RST: u8 = 0x04;
const TCP_ACK: u8 = 0x10;

/// Updates the TCP state and history of `r` for a segment.
fn tcp_update(
    r: &mut FlowRecord,
    track: &mut SeqTrack,
    from_orig: bool,
    flags: u8,
    seq: u32,
    window: u16,
    payload: u32,
) {
    let (syn, ack, fin, rst) = (
        flags & TCP_SYN != 0,
        flags & TCP_ACK != 0,
        flags & TCP_FIN != 0,
        flags & TCP_RST != 0,
    );
    let h = &mut r.history;
    if syn && (fin || rst) {
        h.note(b'Q', from_orig);
    }
    if syn || track.base.is_none() {
        track.base = Some(seq);
    }
    if syn {
        if ack {
            h.note(b'H', from_orig);
            r.tcp_seen |= if from_orig {
                seen::SYNACK_ORIG
            } else {
                seen::SYNACK_RESP
            };
        } else {
            h.note(b'S', from_orig);
            r.tcp_seen |= if from_orig {
                seen::SYN_ORIG
            } else {
                seen::SYN_RESP
            };
        }
    } else if ack && from_orig && r.tcp_seen & seen::SYNACK_RESP != 0 {
        r.tcp_seen |= seen::ACK_ORIG_AFTER_SYNACK;
    } else if ack && !from_orig && r.tcp_seen & seen::SYNACK_ORIG != 0 {
        r.tcp_seen |= seen::ACK_RESP_AFTER_SYNACK;
    }
    if fin {
        h.note(b'F', from_orig);
        r.tcp_seen |= if from_orig {
            seen::FIN_ORIG
        } else {
            seen::FIN_RESP
        };
    }
    if rst {
        h.note(b'R', from_orig);
        r.tcp_seen |= if from_orig {
            seen::RST_ORIG
        } else {
            seen::RST_RESP
        };
    }
    if payload > 0 {
        // The payload starts after the SYN's sequence number.
        let start = if syn { seq.wrapping_add(1) } else { seq };
        let end = start.wrapping_add(payload);
        match track.next {
            // A keep-alive (one byte just below the next sequence number) repeats
            // acknowledged data on purpose; tshark does not call it a retransmission.
            Some(next) if payload == 1 && end == next && !syn && !fin && !rst => {
                h.note(b'D', from_orig)
            }
            Some(next) if !seq_before(next, end) => h.note(b'T', from_orig),
            _ => h.note(b'D', from_orig),
        }
        if track.next.is_none_or(|n| seq_before(n, end)) {
            track.next = Some(end);
        }
    } else if ack && !syn && !fin && !rst {
        h.note(b'A', from_orig);
    }
    // As tshark's and Zeek's zero window: not on a SYN, FIN or RST.
    if window == 0 && !syn && !fin && !rst {
        h.note(b'W', from_orig);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_notes_each_letter_once_per_direction() {
        let mut h = History::empty();
        for (l, o) in [
            (b'S', true),
            (b'H', false),
            (b'A', true),
            (b'D', true),
            (b'D', true),
            (b'D', false),
            (b'F', true),
            (b'F', false),
        ] {
            h.note(l, o);
        }
        assert_eq!(h.as_str(), "ShADdFf");
    }

    #[test]
    fn retransmissions_and_zero_windows_repeat_at_powers_of_ten() {
        let mut h = History::empty();
        h.note(b'S', true);
        // Letters after the n-th event: 1 -> T, 10 -> TT, 100 -> TTT.
        for n in 1..=100u32 {
            h.note(b'T', true);
            let expected = match n {
                1..=9 => 1,
                10..=99 => 2,
                _ => 3,
            };
            assert_eq!(h.as_str().matches('T').count(), expected, "after {n}");
        }
        for _ in 0..9 {
            h.note(b'W', false);
        }
        h.note(b'T', false);
        h.note(b'W', false);
        h.note(b'S', true);
        assert_eq!(h.as_str(), "STTTwtw");
        assert_eq!(h.retransmissions(true), 100);
        assert_eq!(h.retransmissions(false), 1);
        assert_eq!(h.zero_windows(false), 10);
        assert_eq!(h.zero_windows(true), 0);
    }

    #[test]
    fn history_is_bounded() {
        let mut h = History::empty();
        for _ in 0..100_000 {
            for l in *b"SHADFRTWQ^" {
                h.note(l, true);
                h.note(l, false);
            }
        }
        assert_eq!(h.as_str().len(), History::CAPACITY);
        assert_eq!(h.retransmissions(true), 100_000);
        // Once-letters stay once per direction.
        assert_eq!(h.as_str().matches('S').count(), 1);
    }

    use tracekit_core::{LinkType, Meta};
    use tracekit_testdata::builder::{Ethernet, Ipv4, PacketBuilder, Udp};

    /// A UDP packet from 10.0.0.1:`sport` to 10.0.0.2:53 at second `secs`.
    fn udp(table: &mut FlowTable, sport: u16, secs: u32, ended: &mut Vec<FlowRecord>) {
        let f = PacketBuilder::new()
            .ethernet(Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]))
            .ipv4(Ipv4::new([10, 0, 0, 1], [10, 0, 0, 2]))
            .udp(Udp::new(sport, 53))
            .payload(b"query")
            .build();
        let ts = Timestamp::from_micros(1_700_000_000 + secs, 0);
        let p = Packet::new(&f, Meta::new(ts, f.len() as u32, LinkType::ETHERNET));
        table.add(&p, &mut |r| ended.push(*r));
    }

    #[test]
    fn timeouts_on_trace_time_and_eviction_of_the_least_recently_active() {
        let mut ended = Vec::new();
        let mut t = FlowTable::new(FlowConfig {
            idle_timeout_ns: 10 * SECOND,
            active_timeout_ns: 100 * SECOND,
            max_flows: 2,
            ..FlowConfig::default()
        });
        udp(&mut t, 1, 0, &mut ended);
        udp(&mut t, 2, 1, &mut ended);
        udp(&mut t, 1, 2, &mut ended); // 1 is now the most recent
        udp(&mut t, 3, 3, &mut ended); // full: 2 goes
        assert_eq!(ended.len(), 1);
        assert_eq!((ended[0].src().port, ended[0].end), (2, EndReason::Evicted));
        udp(&mut t, 3, 20, &mut ended); // 1 idle since 2 s, 3's own flow idle since 3 s
        assert_eq!(ended.len(), 3);
        assert!(ended[1..].iter().all(|r| r.end == EndReason::Idle));
        assert_eq!(ended[1].src().port, 1);
        assert_eq!(ended[1].orig.packets, 2);
        // Port 3 again, every 5 s: never idle, cut at 100 s by the active timeout.
        for s in (25..=130).step_by(5) {
            udp(&mut t, 3, s, &mut ended);
        }
        let active: Vec<&FlowRecord> = ended
            .iter()
            .filter(|r| r.end == EndReason::Active)
            .collect();
        assert_eq!(active.len(), 1);
        assert_eq!(active[0].first.secs(), 1_700_000_020);
        // 20, 25, ..., 115 s: the packet at 120 s starts the next record.
        assert_eq!(active[0].orig.packets, 20);
        let s = t.stats();
        assert_eq!((s.evicted, s.idle, s.active, s.created), (1, 2, 1, 5));
    }

    #[test]
    fn sequence_comparison_wraps() {
        assert!(seq_before(u32::MAX - 5, 3));
        assert!(!seq_before(3, u32::MAX - 5));
        assert!(seq_before(1, 2));
    }
}
