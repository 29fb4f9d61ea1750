//! TCP stream reassembly: per direction, payload bytes handed to a [`StreamHandler`] in
//! sequence order, each byte once.
//!
//! [`TcpStreams`] works beside a [`FlowTable`](crate::FlowTable): the table says which
//! flow a segment belongs to ([`Placed`]) and when a flow ends; the streams keep, per
//! flow and direction, the next sequence number expected and a bounded window of
//! segments that arrived early. In-order data goes to the handler straight from the
//! packet (no copy); early data is copied into the window until the bytes before it
//! arrive. Retransmitted bytes already delivered are dropped (counted), and compared
//! with what was delivered as far as [`StreamConfig::keep_delivered`] keeps it. Where buffered
//! segments overlap, an [`OverlapPolicy`] chooses the bytes, and overlapping bytes that
//! differ are reported. A hole that is never filled is reported as a gap with its size
//! when the stream ends, resets or runs out of window, and delivery goes on after it.
//! Sequence numbers wrap (serial arithmetic throughout).
//!
//! [`StreamEvents`] is a [`StreamHandler`] that collects the events, for tests and
//! small tools.

use rustc_hash::FxHashMap;
use tracekit_decode::Decoded;

use crate::defrag::OverlapPolicy;
use crate::table::Placed;

/// Limits and policy of [`TcpStreams`].
#[derive(Clone, Copy, Debug)]
pub struct StreamConfig {
    /// Bytes of early (out-of-order) data held per direction, counted from the next
    /// byte expected (default 1 MiB). A segment beyond it forces a gap.
    pub max_window: usize,
    /// Bytes of early data held over all streams (default 64 MiB).
    pub max_buffered: usize,
    /// Which bytes win where buffered segments overlap (default
    /// [`OverlapPolicy::First`], as tshark's stream following keeps them).
    pub policy: OverlapPolicy,
    /// When a stream ends (or resets) with bytes buffered behind a hole that the peer
    /// never acknowledged: deliver them after a gap (`true`, the default), or drop them
    /// (counted in [`StreamStats::dropped`]), as tshark's stream following does.
    pub deliver_unacknowledged: bool,
    /// Bytes of delivered data kept per direction (default 0: none) so that a
    /// retransmission of them can be compared: retransmitted bytes that differ from
    /// what was delivered are reported like differing overlaps (the delivered bytes
    /// stand). Costs a copy of every delivered byte when not 0.
    pub keep_delivered: usize,
}

impl Default for StreamConfig {
    fn default() -> StreamConfig {
        StreamConfig {
            max_window: 1 << 20,
            max_buffered: 64 << 20,
            policy: OverlapPolicy::First,
            deliver_unacknowledged: true,
            keep_delivered: 0,
        }
    }
}

/// How a direction of a stream ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamEnd {
    /// Its FIN, after every byte before it.
    Fin,
    /// A RST (from either side).
    Reset,
    /// The flow ended (timeout, eviction, end of trace) without FIN or RST.
    Ended,
}

/// Receives a stream's bytes and events. `flow` is the flow's
/// [`FlowRecord::id`](crate::FlowRecord::id); `from_originator` the direction.
pub trait StreamHandler {
    /// The next bytes of one direction, in order.
    fn data(&mut self, flow: u64, from_originator: bool, bytes: &[u8]);
    /// `len` bytes of one direction are missing (never captured) before the next data.
    fn gap(&mut self, flow: u64, from_originator: bool, len: u64) {
        let _ = (flow, from_originator, len);
    }
    /// Overlapping segments carried different bytes (the policy chose).
    fn overlap_differs(&mut self, flow: u64, from_originator: bool) {
        let _ = (flow, from_originator);
    }
    /// A direction ended; no more bytes follow for it.
    fn end(&mut self, flow: u64, from_originator: bool, how: StreamEnd) {
        let _ = (flow, from_originator, how);
    }
}

/// What [`TcpStreams`] counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamStats {
    /// Segments with payload seen.
    pub segments: u64,
    /// Bytes delivered.
    pub delivered: u64,
    /// Bytes seen again after their delivery (retransmissions), dropped.
    pub retransmitted: u64,
    /// Segments that arrived early and were buffered.
    pub out_of_order: u64,
    /// Segments overlapping buffered bytes.
    pub overlaps: u64,
    /// ... of which with different bytes.
    pub overlaps_differ: u64,
    /// Gaps reported.
    pub gaps: u64,
    /// Bytes missing in those gaps.
    pub gap_bytes: u64,
    /// Segments that did not fit the window or the overall limit (each forced a gap).
    pub window_full: u64,
    /// Bytes buffered behind an unacknowledged hole and dropped at the stream's end
    /// (see [`StreamConfig::deliver_unacknowledged`]).
    pub dropped: u64,
    /// Bytes buffered now, over all streams.
    pub buffered: usize,
    /// The most bytes buffered at once.
    pub peak_buffered: usize,
}

/// One direction.
#[derive(Default)]
struct Half {
    /// The next sequence number to deliver, once known.
    next: Option<u32>,
    /// Early bytes: `window[i]` is the byte at `next + i` where `owner[i] != 0`.
    window: Vec<u8>,
    /// Per window byte: 0 not received, else 1 + the index in `segs` of its segment.
    owner: Vec<u16>,
    /// (start, end) offsets in the window of the buffered segments, for the policy.
    segs: Vec<(u32, u32)>,
    /// Where the FIN is (the sequence number after the last byte), once seen.
    fin: Option<u32>,
    ended: bool,
    /// Whether any byte was delivered.
    delivered: bool,
    /// The highest acknowledgment number the peer sent: bytes before it reached the
    /// peer, so a hole before it was lost by the capture, not by the network.
    acked: Option<u32>,
    /// The last delivered bytes (up to twice [`StreamConfig::keep_delivered`]), ending
    /// at `next`.
    delivered_tail: Vec<u8>,
}

impl Half {
    /// Removes the first `n` window bytes; how many there were.
    fn shift(&mut self, n: usize) -> usize {
        let n = n.min(self.window.len());
        self.window.drain(..n);
        self.owner.drain(..n);
        let n32 = n as u32;
        for s in &mut self.segs {
            *s = (s.0.saturating_sub(n32), s.1.saturating_sub(n32));
        }
        if self.window.is_empty() {
            self.segs.clear();
        }
        n
    }
}

/// `a - b` in sequence space, as a signed distance.
fn distance(a: u32, b: u32) -> i64 {
    i64::from(a.wrapping_sub(b) as i32)
}

/// TCP stream reassembly for the flows of a [`FlowTable`](crate::FlowTable); see the
/// module documentation.
pub struct TcpStreams {
    config: StreamConfig,
    streams: FxHashMap<u64, [Half; 2]>,
    stats: StreamStats,
}

impl TcpStreams {
    /// No streams yet.
    pub fn new(config: StreamConfig) -> TcpStreams {
        TcpStreams {
            config,
            streams: FxHashMap::default(),
            stats: StreamStats::default(),
        }
    }

    /// The counters.
    pub fn stats(&self) -> StreamStats {
        self.stats
    }

    /// Streams with state now.
    pub fn len(&self) -> usize {
        self.streams.len()
    }

    /// Whether no stream has state.
    pub fn is_empty(&self) -> bool {
        self.streams.is_empty()
    }

    /// Takes the TCP segment in `d`, which the flow table placed in `placed` (other
    /// packets are ignored).
    pub fn segment(&mut self, placed: Placed, d: &Decoded<'_>, h: &mut impl StreamHandler) {
        let Some(tcp) = d.tcp() else {
            return;
        };
        let Some(payload) = d.payload() else {
            return;
        };
        // Bytes the capture cut are not there to deliver: the segment counts only as
        // far as it was captured (the rest becomes a gap if nothing fills it).
        let flow = placed.id;
        let dir = usize::from(!placed.from_originator);
        let flags = tcp.flag_byte();
        let (syn, fin, rst) = (flags & 0x02 != 0, flags & 0x01 != 0, flags & 0x04 != 0);
        let halves = self.streams.entry(flow).or_default();
        let half = &mut halves[dir];
        if half.ended {
            return;
        }
        let mut seq = tcp.seq_number();
        if syn {
            seq = seq.wrapping_add(1);
            // A SYN with another sequence number before any byte of this direction was
            // delivered or buffered restarts the direction (as tshark takes it).
            if half.next.is_none() || (!half.delivered && half.window.is_empty()) {
                half.next = Some(seq);
            }
        }
        let next = *half.next.get_or_insert(seq);
        if fin {
            let declared = d.payload_wire_len().unwrap_or(payload.len() as u32);
            half.fin.get_or_insert(seq.wrapping_add(declared));
        }
        if !payload.is_empty() {
            self.stats.segments += 1;
            let at = distance(seq, next);
            let len = payload.len() as i64;
            if at < 0 && self.config.keep_delivered > 0 {
                self.compare_delivered(flow, dir, at, payload, h);
            }
            if at + len <= 0 {
                self.stats.retransmitted += payload.len() as u64;
            } else if at <= 0 && self.streams_half(flow, dir).window.is_empty() {
                // The usual case: in order (perhaps partly retransmitted), nothing
                // buffered: straight from the packet.
                let fresh = &payload[(-at) as usize..];
                self.stats.retransmitted += (-at) as u64;
                self.deliver_direct(flow, dir, fresh, h);
            } else {
                self.buffer(flow, dir, at, payload, h);
                self.drain(flow, dir, h);
                self.resolve_acked(flow, dir, h);
            }
        }
        self.check_fin(flow, dir, h);
        // The peer's acknowledgment: holes before it will not be filled.
        if flags & 0x10 != 0 {
            let ack = tcp.ack_number();
            let other = 1 - dir;
            let peer = self.streams_half(flow, other);
            if peer.acked.is_none_or(|a| distance(ack, a) > 0) {
                peer.acked = Some(ack);
            }
            self.resolve_acked(flow, other, h);
            self.check_fin(flow, other, h);
        }
        if rst {
            // A reset ends both directions, after whatever was buffered.
            for side in 0..2 {
                self.settle(flow, side, h);
                self.finish_half(flow, side, StreamEnd::Reset, h);
            }
        }
    }

    /// Ends flow `flow`'s stream (when the flow table ends the flow): buffered bytes are
    /// delivered with their gaps, and each direction not yet ended ends.
    pub fn end(&mut self, flow: u64, h: &mut impl StreamHandler) {
        if !self.streams.contains_key(&flow) {
            return;
        }
        for side in 0..2 {
            self.settle(flow, side, h);
            self.finish_half(flow, side, StreamEnd::Ended, h);
        }
        self.streams.remove(&flow);
    }

    /// Ends every stream, in order of flow id.
    pub fn finish(&mut self, h: &mut impl StreamHandler) {
        let mut ids: Vec<u64> = self.streams.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            self.end(id, h);
        }
    }

    fn streams_half(&mut self, flow: u64, dir: usize) -> &mut Half {
        &mut self.streams.entry(flow).or_default()[dir]
    }

    fn deliver_direct(&mut self, flow: u64, dir: usize, bytes: &[u8], h: &mut impl StreamHandler) {
        let kept = self.config.keep_delivered;
        let half = self.streams_half(flow, dir);
        let next = half.next.unwrap_or(0);
        // Nothing past the FIN.
        let bytes = match half.fin {
            Some(fin) => &bytes[..bytes.len().min(distance(fin, next).max(0) as usize)],
            None => bytes,
        };
        half.next = Some(next.wrapping_add(bytes.len() as u32));
        if kept > 0 {
            keep(&mut half.delivered_tail, bytes, kept);
        }
        if !bytes.is_empty() {
            half.delivered = true;
            self.stats.delivered += bytes.len() as u64;
            h.data(flow, dir == 0, bytes);
        }
    }

    /// Compares the part of a segment starting `at` (< 0) bytes before the next expected
    /// one with the delivered bytes kept, reporting a difference.
    fn compare_delivered(
        &mut self,
        flow: u64,
        dir: usize,
        at: i64,
        payload: &[u8],
        h: &mut impl StreamHandler,
    ) {
        let half = self.streams_half(flow, dir);
        let kept = half.delivered_tail.len() as i64;
        // Segment bytes i with at + i in [-kept, 0) were delivered and are kept.
        let first = (-kept - at).max(0);
        let last = (-at).min(payload.len() as i64);
        if first >= last {
            return;
        }
        let old = &half.delivered_tail[(kept + at + first) as usize..(kept + at + last) as usize];
        if old != &payload[first as usize..last as usize] {
            self.stats.overlaps_differ += 1;
            h.overlap_differs(flow, dir == 0);
        }
    }

    /// Buffers a segment starting `at` bytes after the next expected one.
    fn buffer(
        &mut self,
        flow: u64,
        dir: usize,
        at: i64,
        payload: &[u8],
        h: &mut impl StreamHandler,
    ) {
        let (max_window, max_buffered, policy) = (
            self.config.max_window,
            self.config.max_buffered,
            self.config.policy,
        );
        // Drop what was delivered already.
        let skip = (-at).max(0) as usize;
        let at = at.max(0) as usize;
        let data = &payload[skip..];
        self.stats.retransmitted += skip as u64;
        let end = at + data.len();
        let grow = end.saturating_sub(self.streams_half(flow, dir).window.len());
        let too_many = self.streams_half(flow, dir).segs.len() >= usize::from(u16::MAX);
        if end > max_window || self.stats.buffered + grow * 3 > max_buffered || too_many {
            // No room: give up on the hole before this segment.
            self.stats.window_full += 1;
            let start = self
                .streams_half(flow, dir)
                .next
                .unwrap_or(0)
                .wrapping_add(at as u32);
            self.flush(flow, dir, h);
            let half = self.streams_half(flow, dir);
            let ahead = distance(start, half.next.unwrap_or(0));
            let data = if ahead > 0 {
                half.next = Some(start);
                self.stats.gaps += 1;
                self.stats.gap_bytes += ahead as u64;
                h.gap(flow, dir == 0, ahead as u64);
                data
            } else {
                &data[((-ahead) as usize).min(data.len())..]
            };
            self.deliver_direct(flow, dir, data, h);
            return;
        }
        self.stats.out_of_order += u64::from(at > 0);
        self.stats.buffered += grow * 3;
        self.stats.peak_buffered = self.stats.peak_buffered.max(self.stats.buffered);
        let half = self.streams_half(flow, dir);
        if half.window.len() < end {
            half.window.resize(end, 0);
            half.owner.resize(end, 0);
        }
        half.segs.push((at as u32, end as u32));
        let number = half.segs.len() as u16;
        let (mut overlap, mut differs) = (false, false);
        for (i, &byte) in data.iter().enumerate() {
            let p = at + i;
            let owner = half.owner[p];
            if owner == 0 {
                half.owner[p] = number;
                half.window[p] = byte;
                continue;
            }
            overlap = true;
            differs |= half.window[p] != byte;
            let old = half.segs[usize::from(owner) - 1];
            if policy_later_wins(policy, (at as u32, end as u32), old) {
                half.owner[p] = number;
                half.window[p] = byte;
            }
        }
        if overlap {
            self.stats.overlaps += 1;
        }
        if differs {
            self.stats.overlaps_differ += 1;
            h.overlap_differs(flow, dir == 0);
        }
    }

    /// Delivers the bytes at the front of the window that are there (from the window,
    /// without a copy).
    fn drain(&mut self, flow: u64, dir: usize, h: &mut impl StreamHandler) {
        let Some(halves) = self.streams.get_mut(&flow) else {
            return;
        };
        let half = &mut halves[dir];
        let ready = half.owner.iter().take_while(|&&o| o != 0).count();
        if ready == 0 {
            return;
        }
        let next = half.next.unwrap_or(0);
        let n = match half.fin {
            Some(fin) => ready.min(distance(fin, next).max(0) as usize),
            None => ready,
        };
        if n > 0 {
            half.delivered = true;
            self.stats.delivered += n as u64;
            h.data(flow, dir == 0, &half.window[..n]);
            if self.config.keep_delivered > 0 {
                let Half {
                    delivered_tail,
                    window,
                    ..
                } = half;
                keep(delivered_tail, &window[..n], self.config.keep_delivered);
            }
        }
        half.next = Some(next.wrapping_add(ready as u32));
        let removed = half.shift(ready);
        self.stats.buffered = self.stats.buffered.saturating_sub(removed * 3);
    }

    /// Removes the first `n` window bytes of a direction (delivered or given up).
    fn shift(&mut self, flow: u64, dir: usize, n: usize) {
        if let Some(halves) = self.streams.get_mut(&flow) {
            let removed = halves[dir].shift(n);
            self.stats.buffered = self.stats.buffered.saturating_sub(removed * 3);
        }
    }

    /// At a stream's end: delivers what is buffered after gaps, or drops it (see
    /// [`StreamConfig::deliver_unacknowledged`]).
    fn settle(&mut self, flow: u64, dir: usize, h: &mut impl StreamHandler) {
        if self.config.deliver_unacknowledged {
            self.flush(flow, dir, h);
        } else if let Some(halves) = self.streams.get_mut(&flow) {
            let half = &mut halves[dir];
            let held = half.owner.iter().filter(|&&o| o != 0).count();
            let len = half.window.len();
            let removed = half.shift(len);
            self.stats.dropped += held as u64;
            self.stats.buffered = self.stats.buffered.saturating_sub(removed * 3);
        }
    }

    /// Gives up on holes before the peer's acknowledgment (the capture lost those
    /// bytes): reports them as gaps and delivers what follows.
    fn resolve_acked(&mut self, flow: u64, dir: usize, h: &mut impl StreamHandler) {
        loop {
            let Some(halves) = self.streams.get_mut(&flow) else {
                return;
            };
            let half = &mut halves[dir];
            let (Some(acked), Some(next)) = (half.acked, half.next) else {
                return;
            };
            let upto = distance(acked, next);
            if upto <= 0 || half.window.is_empty() || half.ended {
                return;
            }
            let hole = half.owner.iter().take_while(|&&o| o == 0).count();
            if hole > 0 {
                let n = hole.min(upto as usize);
                half.next = Some(next.wrapping_add(n as u32));
                let removed = half.shift(n);
                self.stats.buffered = self.stats.buffered.saturating_sub(removed * 3);
                self.stats.gaps += 1;
                self.stats.gap_bytes += n as u64;
                h.gap(flow, dir == 0, n as u64);
            }
            self.drain(flow, dir, h);
        }
    }

    /// Delivers everything buffered, reporting the holes as gaps.
    fn flush(&mut self, flow: u64, dir: usize, h: &mut impl StreamHandler) {
        loop {
            let half = self.streams_half(flow, dir);
            if half.window.is_empty() {
                return;
            }
            let hole = half.owner.iter().take_while(|&&o| o == 0).count();
            if hole == half.window.len() {
                let n = hole;
                self.shift(flow, dir, n);
                return;
            }
            if hole > 0 {
                let next = half.next.unwrap_or(0);
                half.next = Some(next.wrapping_add(hole as u32));
                self.shift(flow, dir, hole);
                self.stats.gaps += 1;
                self.stats.gap_bytes += hole as u64;
                h.gap(flow, dir == 0, hole as u64);
            }
            self.drain(flow, dir, h);
        }
    }

    /// Ends a direction whose FIN has been reached.
    fn check_fin(&mut self, flow: u64, dir: usize, h: &mut impl StreamHandler) {
        let half = self.streams_half(flow, dir);
        if let (Some(fin), Some(next)) = (half.fin, half.next)
            && distance(next, fin) >= 0
            && !half.ended
        {
            self.finish_half(flow, dir, StreamEnd::Fin, h);
        }
    }

    fn finish_half(&mut self, flow: u64, dir: usize, how: StreamEnd, h: &mut impl StreamHandler) {
        let len = {
            let half = self.streams_half(flow, dir);
            if half.ended {
                return;
            }
            half.ended = true;
            half.window.len()
        };
        self.shift(flow, dir, len);
        h.end(flow, dir == 0, how);
    }
}

/// Appends `bytes` to `tail`, keeping at least the last `keep` bytes (and at most twice
/// as many, so that trimming is rare).
fn keep(tail: &mut Vec<u8>, bytes: &[u8], keep: usize) {
    if bytes.len() >= keep {
        tail.clear();
        tail.extend_from_slice(&bytes[bytes.len() - keep..]);
        return;
    }
    tail.extend_from_slice(bytes);
    if tail.len() > 2 * keep {
        let cut = tail.len() - keep;
        tail.drain(..cut);
    }
}

fn policy_later_wins(policy: OverlapPolicy, new: (u32, u32), old: (u32, u32)) -> bool {
    match policy {
        OverlapPolicy::First => false,
        OverlapPolicy::Last => true,
        OverlapPolicy::Bsd => new.0 < old.0,
        OverlapPolicy::Linux => new.0 <= old.0,
        OverlapPolicy::Windows => new.0 < old.0 && new.1 > old.1,
    }
}

/// One event of a stream, as [`StreamEvents`] collects them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamEvent {
    /// Bytes in order.
    Data {
        /// The flow.
        flow: u64,
        /// The direction.
        from_originator: bool,
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// Missing bytes.
    Gap {
        /// The flow.
        flow: u64,
        /// The direction.
        from_originator: bool,
        /// How many.
        len: u64,
    },
    /// Overlapping bytes differed.
    OverlapDiffers {
        /// The flow.
        flow: u64,
        /// The direction.
        from_originator: bool,
    },
    /// A direction ended.
    End {
        /// The flow.
        flow: u64,
        /// The direction.
        from_originator: bool,
        /// How.
        how: StreamEnd,
    },
}

/// A [`StreamHandler`] that keeps every event (copying the data: for tests and small
/// tools, not for the fast path).
#[derive(Clone, Debug, Default)]
pub struct StreamEvents {
    /// The events in order.
    pub events: Vec<StreamEvent>,
}

impl StreamEvents {
    /// The bytes delivered for `flow` in one direction, joined.
    pub fn bytes(&self, flow: u64, from_originator: bool) -> Vec<u8> {
        let mut out = Vec::new();
        for e in &self.events {
            if let StreamEvent::Data {
                flow: f,
                from_originator: o,
                bytes,
            } = e
                && *f == flow
                && *o == from_originator
            {
                out.extend_from_slice(bytes);
            }
        }
        out
    }
}

impl StreamHandler for StreamEvents {
    fn data(&mut self, flow: u64, from_originator: bool, bytes: &[u8]) {
        self.events.push(StreamEvent::Data {
            flow,
            from_originator,
            bytes: bytes.to_vec(),
        });
    }
    fn gap(&mut self, flow: u64, from_originator: bool, len: u64) {
        self.events.push(StreamEvent::Gap {
            flow,
            from_originator,
            len,
        });
    }
    fn overlap_differs(&mut self, flow: u64, from_originator: bool) {
        self.events.push(StreamEvent::OverlapDiffers {
            flow,
            from_originator,
        });
    }
    fn end(&mut self, flow: u64, from_originator: bool, how: StreamEnd) {
        self.events.push(StreamEvent::End {
            flow,
            from_originator,
            how,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracekit_core::LinkType;
    use tracekit_testdata::builder::{Ethernet, Ipv4, PacketBuilder, Tcp, tcp_flags};

    const ACK: u8 = tcp_flags::ACK;

    /// A segment from the client (`orig`) or the server.
    fn seg(orig: bool, flags: u8, seq: u32, ack: u32, data: &[u8]) -> Vec<u8> {
        let (src, dst, sp, dp) = if orig {
            ([10, 0, 0, 1], [10, 0, 0, 2], 40000, 80)
        } else {
            ([10, 0, 0, 2], [10, 0, 0, 1], 80, 40000)
        };
        PacketBuilder::new()
            .ethernet(Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]))
            .ipv4(Ipv4::new(src, dst))
            .tcp(Tcp::new(sp, dp).flags(flags).seq(seq).ack(ack))
            .payload(data)
            .build()
    }

    fn run(config: StreamConfig, segments: &[Vec<u8>]) -> (StreamEvents, StreamStats) {
        let mut streams = TcpStreams::new(config);
        let mut events = StreamEvents::default();
        for f in segments {
            let d = Decoded::from_bytes(f, LinkType::ETHERNET, f.len() as u32);
            let orig = d.src_port() == Some(40000);
            let placed = Placed {
                id: 1,
                from_originator: orig,
            };
            streams.segment(placed, &d, &mut events);
        }
        streams.finish(&mut events);
        let stats = streams.stats();
        (events, stats)
    }

    #[test]
    fn out_of_order_retransmitted_and_wrapping_segments_arrive_once_in_order() {
        // The client's ISN is just below the wrap.
        let isn = u32::MAX - 3;
        let s = |off: u32| isn.wrapping_add(1).wrapping_add(off);
        let segments = [
            seg(true, tcp_flags::SYN, isn, 0, b""),
            seg(false, tcp_flags::SYN | ACK, 7000, s(0), b""),
            seg(true, ACK, s(0), 7001, b"abc"),
            seg(true, ACK, s(6), 7001, b"ghi"), // early
            seg(true, ACK, s(0), 7001, b"abc"), // retransmitted
            seg(true, ACK, s(3), 7001, b"def"), // fills the hole
            seg(false, ACK, 7001, s(9), b"hello"),
            seg(true, ACK | tcp_flags::FIN, s(9), 7006, b""),
        ];
        let (ev, stats) = run(StreamConfig::default(), &segments);
        assert_eq!(ev.bytes(1, true), b"abcdefghi");
        assert_eq!(ev.bytes(1, false), b"hello");
        assert_eq!(stats.retransmitted, 3);
        assert_eq!(stats.out_of_order, 1);
        assert!(ev.events.contains(&StreamEvent::End {
            flow: 1,
            from_originator: true,
            how: StreamEnd::Fin
        }));
    }

    #[test]
    fn overlapping_buffered_segments_follow_the_policy_and_differences_are_reported() {
        let segments = |_: ()| {
            vec![
                seg(true, tcp_flags::SYN, 100, 0, b""),
                // Bytes 4..8 early, then 2..6 with other bytes, then the first 2.
                seg(true, ACK, 105, 0, b"EEEE"),
                seg(true, ACK, 103, 0, b"XXXX"),
                seg(true, ACK, 101, 0, b"aa"),
            ]
        };
        let policies = [
            (OverlapPolicy::First, "aaXXEEEE"),
            (OverlapPolicy::Last, "aaXXXXEE"),
            (OverlapPolicy::Bsd, "aaXXXXEE"),
            (OverlapPolicy::Windows, "aaXXEEEE"),
        ];
        for (policy, want) in policies {
            let config = StreamConfig {
                policy,
                ..StreamConfig::default()
            };
            let (ev, stats) = run(config, &segments(()));
            assert_eq!(ev.bytes(1, true), want.as_bytes(), "{policy:?}");
            assert_eq!(stats.overlaps_differ, 1);
            assert!(ev.events.contains(&StreamEvent::OverlapDiffers {
                flow: 1,
                from_originator: true
            }));
        }
    }

    #[test]
    fn retransmissions_that_differ_from_delivered_bytes_are_reported_when_kept() {
        let segments = [
            seg(true, tcp_flags::SYN, 0, 0, b""),
            seg(true, ACK, 1, 0, b"hello world"),
            seg(true, ACK, 7, 0, b"world"),  // the same bytes again
            seg(true, ACK, 7, 0, b"WORLD!"), // other bytes, and one new
        ];
        let (ev, stats) = run(StreamConfig::default(), &segments);
        assert_eq!(ev.bytes(1, true), b"hello world!");
        assert_eq!(stats.overlaps_differ, 0, "nothing kept, nothing compared");
        let config = StreamConfig {
            keep_delivered: 8,
            ..StreamConfig::default()
        };
        let (ev, stats) = run(config, &segments);
        assert_eq!(ev.bytes(1, true), b"hello world!");
        assert_eq!(stats.overlaps_differ, 1);
        assert_eq!(stats.retransmitted, 10);
    }

    #[test]
    fn holes_become_gaps_when_acknowledged_or_at_the_end() {
        let segments = [
            seg(true, tcp_flags::SYN, 0, 0, b""),
            seg(true, ACK, 1, 0, b"ab"),
            seg(true, ACK, 6, 0, b"fg"),  // 3 bytes missing before
            seg(false, ACK, 0, 8, b""),   // the server got them all
            seg(true, ACK, 10, 0, b"jk"), // 2 more missing, never acknowledged
        ];
        let (ev, stats) = run(StreamConfig::default(), &segments);
        assert_eq!(ev.bytes(1, true), b"abfgjk");
        assert_eq!((stats.gaps, stats.gap_bytes), (2, 5));
        let gaps: Vec<u64> = ev
            .events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::Gap { len, .. } => Some(*len),
                _ => None,
            })
            .collect();
        assert_eq!(gaps, [3, 2]);
        // tshark's way: what follows an unacknowledged hole is dropped.
        let config = StreamConfig {
            deliver_unacknowledged: false,
            ..StreamConfig::default()
        };
        let (ev, stats) = run(config, &segments);
        assert_eq!(ev.bytes(1, true), b"abfg");
        assert_eq!(stats.dropped, 2);
    }

    #[test]
    fn the_window_limit_forces_a_gap_and_a_reset_ends_both_ways() {
        let config = StreamConfig {
            max_window: 16,
            ..StreamConfig::default()
        };
        let segments = [
            seg(true, tcp_flags::SYN, 0, 0, b""),
            seg(true, ACK, 1, 0, b"ab"),
            seg(true, ACK, 4, 0, b"d"),            // early, fits
            seg(true, ACK, 100, 0, b"far"),        // beyond the window
            seg(false, tcp_flags::RST, 0, 0, b""), // reset
            seg(true, ACK, 103, 0, b"after"),      // ignored
        ];
        let (ev, stats) = run(config, &segments);
        assert_eq!(ev.bytes(1, true), b"abdfar");
        assert_eq!(stats.window_full, 1);
        // One byte missing before "d", 95 before "far".
        assert_eq!(stats.gap_bytes, 1 + 95);
        let resets = ev
            .events
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    StreamEvent::End {
                        how: StreamEnd::Reset,
                        ..
                    }
                )
            })
            .count();
        assert_eq!(resets, 2);
    }
}
