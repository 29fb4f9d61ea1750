//! IPv4 and IPv6 defragmentation with bounded memory, trace-time timeouts and named
//! overlap policies.
//!
//! [`Defragmenter::add`] takes every packet: a packet that is not a fragment passes
//! through untouched (no copy); a fragment is kept until its datagram is complete, and
//! the fragment that completes it comes back as a whole packet (the first fragment's
//! link-layer header, the IP header rewritten: length, fragment fields, IPv4 checksum,
//! the IPv6 fragment header removed) in a buffer the defragmenter reuses, ready for
//! [`tracekit_decode::Decoded`].
//!
//! Fragments are reassembled at every tunnel level, as tshark does: an IP datagram
//! fragmented inside a tunnel (IP-in-IP, 6in4, GRE, VXLAN, Geneve, GTP-U, Teredo, ...)
//! is joined too. The outermost fragmented level of a packet is the one reassembled;
//! its key holds the tunnel context (the level, the addresses of the enclosing IP
//! header and the tunnel's identifier: GRE key, VXLAN or Geneve VNI, GTP-U TEID), so
//! equal IDs in two tunnels never mix. The UDP ports of a UDP tunnel are not part of
//! the key: VXLAN and Geneve senders derive the source port from the inner headers,
//! which a non-first fragment lacks. The whole packet keeps the first fragment's outer
//! headers, their lengths grown to carry the whole inner datagram (IPv4 total length
//! and header checksum, IPv6 payload length, UDP length, GTP-U length); a UDP tunnel's
//! checksum is
//! not recomputed: over IPv4 it is set to 0 (none), over IPv6 it is left as it was and
//! no longer matches. When an outer datagram completes and carries a tunnel whose inner
//! datagram is a fragment, that fragment is taken in turn (both levels).
//!
//! Overlapping fragments are resolved by an [`OverlapPolicy`], the target-based
//! policies of Novak's "Target-Based Fragmentation Reassembly" as Snort and Suricata
//! name them. What goes wrong is counted in [`DefragStats`] by [`DefragAnomaly`] name.

use rustc_hash::FxHashMap;
use tracekit_core::{Meta, Packet};
use tracekit_decode::{Decoded, Tunnel, ipv6_ext};

use crate::order::{Linked, Links, NIL, Order};

/// Which fragment's bytes win where fragments overlap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OverlapPolicy {
    /// The bytes that arrived first.
    First,
    /// The bytes that arrived last.
    Last,
    /// BSD: the earlier fragment's bytes, unless the later fragment starts before it.
    Bsd,
    /// Linux: the earlier fragment's bytes, unless the later fragment starts before it
    /// or at the same offset.
    Linux,
    /// Windows: the earlier fragment's bytes, unless the later fragment starts before
    /// it and ends after it.
    Windows,
}

impl OverlapPolicy {
    /// Every policy.
    pub const ALL: [OverlapPolicy; 5] = [
        OverlapPolicy::First,
        OverlapPolicy::Last,
        OverlapPolicy::Bsd,
        OverlapPolicy::Linux,
        OverlapPolicy::Windows,
    ];

    /// `first`, `last`, `bsd`, `linux` or `windows`.
    pub fn name(self) -> &'static str {
        match self {
            OverlapPolicy::First => "first",
            OverlapPolicy::Last => "last",
            OverlapPolicy::Bsd => "bsd",
            OverlapPolicy::Linux => "linux",
            OverlapPolicy::Windows => "windows",
        }
    }

    /// The policy named `name` (see [`name`](Self::name)).
    pub fn from_name(name: &str) -> Option<OverlapPolicy> {
        OverlapPolicy::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }

    /// Whether a fragment covering `new` (start, end) that arrived after one covering
    /// `old` wins the bytes they share.
    fn later_wins(self, new: (u32, u32), old: (u32, u32)) -> bool {
        match self {
            OverlapPolicy::First => false,
            OverlapPolicy::Last => true,
            OverlapPolicy::Bsd => new.0 < old.0,
            OverlapPolicy::Linux => new.0 <= old.0,
            OverlapPolicy::Windows => new.0 < old.0 && new.1 > old.1,
        }
    }
}

/// What can go wrong with fragments (a closed set; each is counted in
/// [`DefragStats`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefragAnomaly {
    /// A fragment overlapped bytes already held (resolved by the policy).
    Overlap,
    /// ... and the overlapping bytes differed.
    OverlapDiffers,
    /// Fragments disagree about the datagram's end: a second last fragment with another
    /// end, or a last fragment ending before data already held (teardrop-style); the
    /// datagram is dropped. Also noted, but reassembled: data past the last fragment's
    /// end (cut off there) and a fragment that is not the last with a length that is
    /// not a multiple of 8.
    Inconsistent,
    /// The datagram would be longer than 65,535 bytes. It is dropped.
    TooLarge,
    /// More fragments than [`DefragConfig::max_fragments`]. The datagram is dropped.
    TooManyFragments,
    /// Not completed within the timeout; dropped.
    Timeout,
    /// Dropped to keep within [`DefragConfig::max_datagrams`] or
    /// [`DefragConfig::max_bytes`] (the oldest datagram goes first).
    Evicted,
    /// A fragment cut by the capture (its bytes are not all there): passed through as
    /// it is, not reassembled.
    Truncated,
}

/// Limits and policy of a [`Defragmenter`].
#[derive(Clone, Copy, Debug)]
pub struct DefragConfig {
    /// Datagrams in progress at once (default 4,096).
    pub max_datagrams: usize,
    /// Bytes held for datagrams in progress (default 32 MiB; at least 256 KiB).
    pub max_bytes: usize,
    /// Fragments per datagram (default 255, the most allowed).
    pub max_fragments: usize,
    /// A datagram not completed this long (trace time, nanoseconds) after its first
    /// fragment is dropped (default 60 s; 0 never).
    pub timeout_ns: u64,
    /// How overlaps are resolved (default [`OverlapPolicy::Bsd`], Suricata's and
    /// Snort's default).
    pub policy: OverlapPolicy,
}

impl Default for DefragConfig {
    fn default() -> DefragConfig {
        DefragConfig {
            max_datagrams: 4096,
            max_bytes: 32 << 20,
            max_fragments: 255,
            timeout_ns: 60_000_000_000,
            policy: OverlapPolicy::Bsd,
        }
    }
}

/// Counters of a [`Defragmenter`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DefragStats {
    /// Fragments taken in.
    pub fragments: u64,
    /// Datagrams completed.
    pub reassembled: u64,
    /// Fragments that overlapped held bytes.
    pub overlaps: u64,
    /// ... of which with different bytes.
    pub overlaps_differ: u64,
    /// Fragments found inconsistent (see [`DefragAnomaly::Inconsistent`]).
    pub inconsistent: u64,
    /// Datagrams dropped as too large.
    pub too_large: u64,
    /// Datagrams dropped for too many fragments.
    pub too_many_fragments: u64,
    /// Datagrams dropped at their timeout.
    pub timed_out: u64,
    /// Datagrams evicted by the limits.
    pub evicted: u64,
    /// Fragments cut by the capture, passed through.
    pub truncated: u64,
    /// Datagrams in progress now.
    pub in_progress: usize,
    /// Bytes held now.
    pub bytes: usize,
    /// The most bytes held at once.
    pub peak_bytes: usize,
}

impl DefragStats {
    fn count(&mut self, a: DefragAnomaly) {
        match a {
            DefragAnomaly::Overlap => self.overlaps += 1,
            DefragAnomaly::OverlapDiffers => self.overlaps_differ += 1,
            DefragAnomaly::Inconsistent => self.inconsistent += 1,
            DefragAnomaly::TooLarge => self.too_large += 1,
            DefragAnomaly::TooManyFragments => self.too_many_fragments += 1,
            DefragAnomaly::Timeout => self.timed_out += 1,
            DefragAnomaly::Evicted => self.evicted += 1,
            DefragAnomaly::Truncated => self.truncated += 1,
        }
    }
}

/// What became of a packet given to [`Defragmenter::add`].
#[derive(Clone, Copy, Debug)]
pub enum Defragged<'a> {
    /// Not a fragment (or one that cannot be reassembled: see
    /// [`DefragAnomaly::Truncated`]): the packet itself.
    Pass(Packet<'a>),
    /// The fragment completed its datagram: the whole packet.
    Complete(Packet<'a>),
    /// The fragment is held until its datagram is complete.
    Held,
    /// The fragment's datagram was dropped for this reason.
    Dropped(DefragAnomaly),
}

impl<'a> Defragged<'a> {
    /// The packet to go on with: the original or the reassembled one.
    pub fn packet(&self) -> Option<Packet<'a>> {
        match self {
            Defragged::Pass(p) | Defragged::Complete(p) => Some(*p),
            _ => None,
        }
    }
}

/// What one level of [`Defragmenter::add`] did.
enum Level {
    Pass,
    Held,
    Dropped(DefragAnomaly),
    Complete(Meta),
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct FragKey {
    src: [u8; 16],
    dst: [u8; 16],
    id: u32,
    protocol: u8,
    version: u8,
    /// The tunnel context of a fragment inside a tunnel (all zero outside one).
    tunnel: TunnelContext,
}

/// What identifies the tunnel a fragmented datagram travels in.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
struct TunnelContext {
    /// The tunnel level (0: not in a tunnel).
    level: u8,
    /// The enclosing IP header's source and destination addresses.
    outer_src: [u8; 16],
    outer_dst: [u8; 16],
    /// GRE key, VXLAN or Geneve VNI, GTP-U TEID (0 when the tunnel has none).
    id: u32,
}

/// An enclosing layer of a fragment found inside a tunnel: where its IP header and (for
/// a UDP tunnel) its UDP header are, whose lengths grow when the datagram is joined.
#[derive(Clone, Copy, Default)]
struct Enclosing {
    ip: usize,
    version: u8,
    udp: Option<usize>,
    /// A GTP-U header, whose length field counts what follows its first 8 bytes.
    gtp: Option<usize>,
}

/// The most enclosing layers followed (the decoder's default tunnel depth).
const MAX_LEVELS: usize = tracekit_decode::DEFAULT_MAX_DEPTH as usize;

/// Where in a packet the outermost fragment is.
struct Located<'p> {
    /// The decode of the level that is a fragment.
    level: Decoded<'p>,
    /// Where that level's bytes start in the packet.
    base: usize,
    context: TunnelContext,
    enclosing: [Enclosing; MAX_LEVELS],
    enclosing_len: usize,
}

/// Buffers of a finished datagram larger than this are freed rather than kept for the
/// next one, so that idle slots hold little memory.
const KEEP_CAPACITY: usize = 4096;
/// The largest IP datagram.
const MAX_DATAGRAM: u32 = 65_535;

#[derive(Default)]
struct Datagram {
    /// The fragment data by offset.
    data: Vec<u8>,
    /// Per byte of `data`: 0 when not yet received, else the fragment number (1-based,
    /// in arrival order) that supplied it.
    owner: Vec<u8>,
    /// (start, end) of each fragment, in arrival order.
    frags: Vec<(u32, u32)>,
    /// The first fragment's bytes up to its fragmentable part (link layer, IP header,
    /// for IPv6 the extension headers before the fragment header); empty until it
    /// arrives.
    header: Vec<u8>,
    /// Where the IP header starts in `header`.
    ip_off: usize,
    /// IPv6: where in `header` the next-header byte that named the fragment header is,
    /// and the fragment header's own next header.
    next_header_at: usize,
    next_header: u8,
    /// The first fragment's enclosing layers (inside a tunnel).
    enclosing: [Enclosing; MAX_LEVELS],
    enclosing_len: usize,
    /// The datagram's data length, once the last fragment was seen.
    total: Option<u32>,
    /// Bytes received (each byte once).
    filled: u32,
    /// Table clock at the first fragment.
    born: u64,
    key: Option<FragKey>,
    links: Links,
}

impl Linked for Datagram {
    fn links(&self) -> &Links {
        &self.links
    }

    fn links_mut(&mut self) -> &mut Links {
        &mut self.links
    }
}

impl Datagram {
    fn held(&self) -> usize {
        self.data.len() + self.owner.len() + self.header.len()
    }
}

/// Reassembles IPv4 and IPv6 datagrams; see the module documentation.
pub struct Defragmenter {
    config: DefragConfig,
    map: FxHashMap<FragKey, u32>,
    slots: Vec<Datagram>,
    free: Vec<u32>,
    /// Datagrams in progress, oldest first.
    order: Order,
    now: u64,
    out: Vec<u8>,
    /// The previous whole packet while a datagram inside it is looked at (swapped with
    /// `out`, so nesting allocates nothing once warm).
    spare: Vec<u8>,
    /// The data length (after the IP headers) of the last datagram completed.
    last_len: usize,
    stats: DefragStats,
}

/// A fragment as found in a packet.
struct Piece<'p> {
    key: FragKey,
    enclosing: [Enclosing; MAX_LEVELS],
    enclosing_len: usize,
    offset: u32,
    more: bool,
    data: &'p [u8],
    /// The bytes before the fragmentable part (see [`Datagram::header`]).
    header: &'p [u8],
    ip_off: usize,
    next_header_at: usize,
    next_header: u8,
}

impl Defragmenter {
    /// A defragmenter holding nothing yet.
    pub fn new(config: DefragConfig) -> Defragmenter {
        Defragmenter {
            config: DefragConfig {
                max_datagrams: config.max_datagrams.clamp(1, NIL as usize - 1),
                max_bytes: config.max_bytes.max(256 << 10),
                max_fragments: config.max_fragments.clamp(1, 255),
                ..config
            },
            map: FxHashMap::default(),
            slots: Vec::new(),
            free: Vec::new(),
            order: Order::EMPTY,
            now: 0,
            out: Vec::new(),
            spare: Vec::new(),
            last_len: 0,
            stats: DefragStats::default(),
        }
    }

    /// The counters.
    pub fn stats(&self) -> DefragStats {
        self.stats
    }

    /// The length of the data after the IP header (and the IPv6 extension headers
    /// before the fragment header) of the datagram last completed: what tshark calls
    /// `ip.reassembled.length`.
    pub fn last_datagram_len(&self) -> usize {
        self.last_len
    }

    /// Takes a packet; see [`Defragged`]. The datagram last completed, when several
    /// levels were joined, is the innermost.
    pub fn add<'a>(&'a mut self, packet: &Packet<'a>) -> Defragged<'a> {
        // Every packet moves the trace time on, not only fragments.
        self.advance(packet.ts());
        let meta = match self.add_level(packet.data(), packet.meta()) {
            Level::Pass => return Defragged::Pass(*packet),
            Level::Held => return Defragged::Held,
            Level::Dropped(a) => return Defragged::Dropped(a),
            Level::Complete(meta) => meta,
        };
        // The whole datagram may carry a tunnel with a fragment of its own: take it in
        // turn (a level deeper each time, so this ends).
        let mut meta = meta;
        for _ in 0..MAX_LEVELS {
            let whole = std::mem::replace(&mut self.out, std::mem::take(&mut self.spare));
            let step = self.add_level(&whole, &meta);
            match step {
                Level::Complete(m) => {
                    meta = m;
                    self.spare = whole;
                }
                Level::Pass => {
                    // Nothing inside to join: the whole packet stays the answer.
                    self.spare = std::mem::replace(&mut self.out, whole);
                    break;
                }
                Level::Held => {
                    self.spare = whole;
                    return Defragged::Held;
                }
                Level::Dropped(a) => {
                    self.spare = whole;
                    return Defragged::Dropped(a);
                }
            }
        }
        Defragged::Complete(Packet::new(&self.out, meta))
    }

    /// Takes the outermost fragment in `data`; a completed datagram is left in `out`.
    fn add_level(&mut self, data: &[u8], meta: &Meta) -> Level {
        let d = Decoded::from_bytes(data, meta.link, meta.wire_len);
        let Some(found) = locate(d, data) else {
            return Level::Pass;
        };
        let Some(frag) = found.level.fragment() else {
            return Level::Pass;
        };
        if frag.offset == 0 && !frag.more {
            // An IPv6 atomic fragment: a whole datagram already.
            return Level::Pass;
        }
        let Some(piece) = piece(&found, data) else {
            self.stats.count(DefragAnomaly::Truncated);
            return Level::Pass;
        };
        self.stats.fragments += 1;
        if meta.ts.is_known() {
            self.now = self.now.max(meta.ts.as_unix_nanos());
        }
        self.expire();
        match self.insert(&piece) {
            Err(a) => Level::Dropped(a),
            Ok(None) => Level::Held,
            Ok(Some(idx)) => {
                self.build(idx);
                self.release(idx);
                self.stats.reassembled += 1;
                // The completing fragment's wire length, grown by what reassembly added
                // (a link layer that counts other bytes than it captured keeps its
                // difference).
                let mut meta: Meta = *meta;
                let added = self.out.len() as i64 - data.len() as i64;
                meta.wire_len =
                    (i64::from(meta.wire_len) + added).clamp(0, i64::from(u32::MAX)) as u32;
                Level::Complete(meta)
            }
        }
    }

    /// Moves the trace time on to `ts` (if known and later), as a packet [`add`]ed would:
    /// for one of several defragmenters that share a trace, told the trace's time when
    /// a packet of its own does not give it. Datagrams time out at the next fragment.
    ///
    /// [`add`]: Defragmenter::add
    #[inline]
    pub fn advance(&mut self, ts: tracekit_core::Timestamp) {
        if ts.is_known() {
            self.now = self.now.max(ts.as_unix_nanos());
        }
    }

    /// Drops every datagram not completed by trace time `now` (nanoseconds since the
    /// epoch) plus the timeout.
    pub fn expire_at(&mut self, now: u64) {
        self.now = self.now.max(now);
        self.expire();
    }

    fn expire(&mut self) {
        let t = self.config.timeout_ns;
        if t == 0 {
            return;
        }
        while let Some(oldest) = self.order.first() {
            if self.now.saturating_sub(self.slots[oldest as usize].born) < t {
                break;
            }
            self.drop_datagram(oldest, DefragAnomaly::Timeout);
        }
    }

    /// Adds a fragment; the slot of its datagram when complete.
    fn insert(&mut self, p: &Piece<'_>) -> Result<Option<u32>, DefragAnomaly> {
        let len = p.data.len() as u32;
        let end = p.offset + len;
        let idx = match self.map.get(&p.key) {
            Some(&i) => i,
            None => self.create(p.key),
        };
        if end + (p.header.len() - p.ip_off) as u32 > MAX_DATAGRAM {
            return Err(self.drop_datagram(idx, DefragAnomaly::TooLarge));
        }
        let g = &self.slots[idx as usize];
        // Two ends for one datagram (teardrop-style): nothing sensible can be built.
        let two_ends = !p.more
            && match g.total {
                Some(total) => end != total,
                None => g.frags.iter().any(|f| f.1 > end),
            };
        if two_ends {
            return Err(self.drop_datagram(idx, DefragAnomaly::Inconsistent));
        }
        // A misaligned fragment, or data past the known end (cut off there), are noted
        // and reassembled, as tshark does.
        let limit = g.total.unwrap_or(u32::MAX);
        if (p.more && !len.is_multiple_of(8)) || end > limit {
            self.stats.count(DefragAnomaly::Inconsistent);
        }
        let end = end.min(limit);
        // Nothing before the known end: an empty fragment that starts past it too.
        if end < p.offset || (end == p.offset && len > 0) {
            return Ok(None);
        }
        let data = &p.data[..(end - p.offset) as usize];
        if g.frags.len() >= self.config.max_fragments {
            return Err(self.drop_datagram(idx, DefragAnomaly::TooManyFragments));
        }
        // Room for the bytes this fragment adds.
        let header_len = if p.offset == 0 && g.header.is_empty() {
            p.header.len()
        } else {
            0
        };
        let grow = (end as usize).saturating_sub(g.data.len()) * 2 + header_len;
        while self.stats.bytes + grow > self.config.max_bytes {
            let Some(oldest) = self.order.first() else {
                break;
            };
            // Keep the datagram being added to: evict the next oldest.
            let victim = match oldest == idx {
                true => match Order::after(&self.slots, idx) {
                    Some(next) => next,
                    None => break,
                },
                false => oldest,
            };
            self.drop_datagram(victim, DefragAnomaly::Evicted);
        }
        self.stats.bytes += grow;
        self.stats.peak_bytes = self.stats.peak_bytes.max(self.stats.bytes);
        let policy = self.config.policy;
        let g = &mut self.slots[idx as usize];
        if !p.more {
            g.total = Some(end);
        }
        if header_len > 0 {
            g.enclosing = p.enclosing;
            g.enclosing_len = p.enclosing_len;
            g.header.extend_from_slice(p.header);
            g.ip_off = p.ip_off;
            g.next_header_at = p.next_header_at;
            g.next_header = p.next_header;
        }
        if g.data.len() < end as usize {
            g.data.resize(end as usize, 0);
            g.owner.resize(end as usize, 0);
        }
        g.frags.push((p.offset, end));
        let number = g.frags.len() as u8;
        let (mut overlap, mut differs) = (false, false);
        for (i, &byte) in data.iter().enumerate() {
            let at = p.offset as usize + i;
            let owner = g.owner[at];
            if owner == 0 {
                g.owner[at] = number;
                g.data[at] = byte;
                g.filled += 1;
                continue;
            }
            overlap = true;
            differs |= g.data[at] != byte;
            let old = g.frags[usize::from(owner) - 1];
            if policy.later_wins((p.offset, end), old) {
                g.owner[at] = number;
                g.data[at] = byte;
            }
        }
        if overlap {
            self.stats.count(DefragAnomaly::Overlap);
        }
        if differs {
            self.stats.count(DefragAnomaly::OverlapDiffers);
        }
        let complete = g.total == Some(g.filled) && !g.header.is_empty();
        Ok(complete.then_some(idx))
    }

    /// Writes the whole datagram of slot `idx` into `out`.
    fn build(&mut self, idx: u32) {
        let g = &self.slots[idx as usize];
        let total = g.total.unwrap_or(0) as usize;
        self.last_len = total;
        self.out.clear();
        self.out.extend_from_slice(&g.header);
        self.out.extend_from_slice(&g.data[..total]);
        let ip = g.ip_off;
        let version = self.out.get(ip).map_or(0, |b| b >> 4);
        if version == 4 {
            let ihl = usize::from(self.out[ip] & 0xf) * 4;
            let len = (ihl + total) as u16;
            self.out[ip + 2..ip + 4].copy_from_slice(&len.to_be_bytes());
            // Keep DF, clear MF and the offset.
            self.out[ip + 6] &= 0x40;
            self.out[ip + 7] = 0;
            self.out[ip + 10..ip + 12].copy_from_slice(&[0, 0]);
            let sum = ipv4_checksum(&self.out[ip..ip + ihl]);
            self.out[ip + 10..ip + 12].copy_from_slice(&sum.to_be_bytes());
        } else {
            let payload = (g.header.len() - ip - 40 + total) as u16;
            self.out[ip + 4..ip + 6].copy_from_slice(&payload.to_be_bytes());
            self.out[g.next_header_at] = g.next_header;
        }
        // The tunnel's own headers now carry the whole datagram.
        let end = self.out.len();
        for e in &g.enclosing[..g.enclosing_len] {
            let out = &mut self.out;
            if let Some(t) = e.gtp
                && t + 8 <= end
            {
                let len = (end - t - 8).min(usize::from(u16::MAX)) as u16;
                out[t + 2..t + 4].copy_from_slice(&len.to_be_bytes());
            }
            if let Some(u) = e.udp
                && u + 8 <= end
            {
                let len = (end - u).min(usize::from(u16::MAX)) as u16;
                out[u + 4..u + 6].copy_from_slice(&len.to_be_bytes());
                if e.version == 4 {
                    out[u + 6..u + 8].copy_from_slice(&[0, 0]);
                }
            }
            if e.version == 4 && e.ip + 20 <= end {
                let ihl = usize::from(out[e.ip] & 0xf) * 4;
                let len = (end - e.ip).min(usize::from(u16::MAX)) as u16;
                out[e.ip + 2..e.ip + 4].copy_from_slice(&len.to_be_bytes());
                if e.ip + ihl <= end {
                    out[e.ip + 10..e.ip + 12].copy_from_slice(&[0, 0]);
                    let sum = ipv4_checksum(&out[e.ip..e.ip + ihl]);
                    out[e.ip + 10..e.ip + 12].copy_from_slice(&sum.to_be_bytes());
                }
            } else if e.version == 6 && e.ip + 40 <= end {
                let len = (end - e.ip - 40).min(usize::from(u16::MAX)) as u16;
                out[e.ip + 4..e.ip + 6].copy_from_slice(&len.to_be_bytes());
            }
        }
    }

    fn create(&mut self, key: FragKey) -> u32 {
        if self.map.len() >= self.config.max_datagrams
            && let Some(oldest) = self.order.first()
        {
            self.drop_datagram(oldest, DefragAnomaly::Evicted);
        }
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(Datagram::default());
                (self.slots.len() - 1) as u32
            }
        };
        let now = self.now;
        let g = &mut self.slots[idx as usize];
        g.key = Some(key);
        g.born = now;
        g.total = None;
        g.filled = 0;
        self.map.insert(key, idx);
        self.stats.in_progress = self.map.len();
        // Appended: the list is in order of creation.
        self.order.push_back(&mut self.slots, idx);
        idx
    }

    fn drop_datagram(&mut self, idx: u32, why: DefragAnomaly) -> DefragAnomaly {
        self.stats.count(why);
        self.release(idx);
        why
    }

    /// Frees slot `idx`, keeping small buffers for the next datagram.
    fn release(&mut self, idx: u32) {
        self.order.remove(&mut self.slots, idx);
        let g = &mut self.slots[idx as usize];
        self.stats.bytes -= g.held().min(self.stats.bytes);
        if let Some(key) = g.key.take() {
            self.map.remove(&key);
        }
        for v in [&mut g.data, &mut g.owner, &mut g.header] {
            if v.capacity() > KEEP_CAPACITY {
                *v = Vec::new();
            } else {
                v.clear();
            }
        }
        g.frags.clear();
        self.free.push(idx);
        self.stats.in_progress = self.map.len();
    }
}

/// The outermost level of `d` (the packet `data`) that is an IP fragment, following
/// tunnels, with its tunnel context; `None` when no level is.
fn locate<'p>(d: Decoded<'p>, data: &'p [u8]) -> Option<Located<'p>> {
    let mut found = Located {
        level: d,
        base: 0,
        context: TunnelContext::default(),
        enclosing: [Enclosing::default(); MAX_LEVELS],
        enclosing_len: 0,
    };
    for level in 1..=MAX_LEVELS {
        let d = &found.level;
        if d.fragment().is_some() {
            return Some(found);
        }
        let inner = d.inner()?;
        let ip = d.ip_offset()?;
        let version = d.ip_version()?;
        let udp = match d.transport_offset() {
            Some((off, tracekit_decode::ip_proto::UDP)) => Some(found.base + off),
            _ => None,
        };
        let mut context = TunnelContext {
            level: level as u8,
            ..TunnelContext::default()
        };
        match d.src_addr()? {
            std::net::IpAddr::V4(a) => context.outer_src[..4].copy_from_slice(&a.octets()),
            std::net::IpAddr::V6(a) => context.outer_src = a.octets(),
        }
        match d.dst_addr()? {
            std::net::IpAddr::V4(a) => context.outer_dst[..4].copy_from_slice(&a.octets()),
            std::net::IpAddr::V6(a) => context.outer_dst = a.octets(),
        }
        let tunnel = d.tunnel();
        context.id = match tunnel {
            Some(Tunnel::Gre(g)) => g.key().unwrap_or(0),
            Some(Tunnel::Vxlan { vni }) | Some(Tunnel::Geneve { vni, .. }) => vni,
            Some(Tunnel::GtpU { teid }) => teid,
            _ => 0,
        };
        let gtp = match tunnel {
            Some(Tunnel::GtpU { .. }) => udp.map(|u| u + 8),
            _ => None,
        };
        found.enclosing[found.enclosing_len] = Enclosing {
            ip: found.base + ip,
            version,
            udp,
            gtp,
        };
        found.enclosing_len += 1;
        // The inner bytes are a part of `data`: where they start.
        let base = (inner.data().as_ptr() as usize).checked_sub(data.as_ptr() as usize)?;
        found.base = base;
        found.context = context;
        found.level = inner;
    }
    None
}

/// The fragment at the located level, if its bytes were all captured; offsets are
/// into the whole packet `data`.
fn piece<'p>(found: &Located<'p>, data: &'p [u8]) -> Option<Piece<'p>> {
    let d = &found.level;
    let base = found.base;
    let frag = d.fragment()?;
    let ip = base + d.ip_offset()?;
    if let Some(h) = d.ipv4() {
        let ihl = h.header_len();
        let end = ip + usize::from(h.total_len());
        let body = data.get(ip + ihl..end)?;
        let mut src = [0; 16];
        let mut dst = [0; 16];
        src[..4].copy_from_slice(&h.src().octets());
        dst[..4].copy_from_slice(&h.dst().octets());
        return Some(Piece {
            key: FragKey {
                src,
                dst,
                id: frag.id,
                protocol: h.protocol(),
                version: 4,
                tunnel: found.context,
            },
            enclosing: found.enclosing,
            enclosing_len: found.enclosing_len,
            offset: u32::from(frag.offset),
            more: frag.more,
            data: body,
            header: data.get(..ip + ihl)?,
            ip_off: ip,
            next_header_at: 0,
            next_header: 0,
        });
    }
    let h = d.ipv6()?;
    let end = ip + 40 + usize::from(h.payload_len());
    // Walk to the fragment header, remembering where its next-header byte was named.
    let mut at = ip + 40;
    let mut named_at = ip + 6;
    let mut frag_next = None;
    for e in h.extensions() {
        if e.kind == ipv6_ext::FRAGMENT {
            frag_next = Some(e.next);
            break;
        }
        named_at = at;
        at += e.bytes.len();
    }
    let next_header = frag_next?;
    Some(Piece {
        key: FragKey {
            src: h.src().octets(),
            dst: h.dst().octets(),
            id: frag.id,
            protocol: 0,
            version: 6,
            tunnel: found.context,
        },
        enclosing: found.enclosing,
        enclosing_len: found.enclosing_len,
        offset: u32::from(frag.offset),
        more: frag.more,
        data: data.get(at + 8..end)?,
        header: data.get(..at)?,
        ip_off: ip,
        next_header_at: named_at,
        next_header,
    })
}

/// The IPv4 header checksum of `header` (its checksum field zero).
fn ipv4_checksum(header: &[u8]) -> u16 {
    let mut sum = 0u32;
    for pair in header.chunks(2) {
        let word = u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]);
        sum += u32::from(word);
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracekit_core::{LinkType, Timestamp};
    use tracekit_testdata::builder::{Ethernet, Ipv4, PacketBuilder};

    /// An IPv4 fragment of datagram `id` (protocol 253, experimental) at byte `offset`.
    fn fragment(id: u16, offset: u16, more: bool, data: &[u8]) -> Vec<u8> {
        PacketBuilder::new()
            .ethernet(Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]))
            .ipv4(
                Ipv4::new([10, 0, 0, 1], [10, 0, 0, 2])
                    .id(id)
                    .protocol(253)
                    .fragment(offset, more),
            )
            .payload(data)
            .build()
    }

    /// Reassembles `frags` (offset, more, fill byte, length) in order; the datagram's
    /// data as text, or what happened.
    fn reassemble(policy: OverlapPolicy, frags: &[(u16, bool, u8, usize)]) -> String {
        let mut d = Defragmenter::new(DefragConfig {
            policy,
            ..DefragConfig::default()
        });
        let mut result = String::from("incomplete");
        for (i, &(offset, more, fill, len)) in frags.iter().enumerate() {
            let f = fragment(7, offset, more, &vec![fill; len]);
            let ts = Timestamp::from_micros(1_700_000_000, i as u32);
            let p = Packet::new(&f, Meta::new(ts, f.len() as u32, LinkType::ETHERNET));
            match d.add(&p) {
                Defragged::Complete(whole) => {
                    let dec = Decoded::new(&whole);
                    let ip = dec.ipv4().expect("an IPv4 packet");
                    assert!(!ip.more_frags() && ip.frag_offset() == 0);
                    assert_eq!(ip.checksum_ok(), Some(true));
                    let body = &whole.data()[14 + 20..];
                    assert_eq!(usize::from(ip.total_len()), 20 + body.len());
                    result = String::from_utf8(body.to_vec()).unwrap();
                }
                Defragged::Dropped(a) => result = format!("{a:?}"),
                _ => {}
            }
        }
        result
    }

    /// The four overlap shapes against an earlier fragment `A` at bytes 8..24, each in a
    /// datagram of 32 bytes (`x` fills the rest), and what each policy keeps.
    #[test]
    fn overlap_shapes_follow_each_policy() {
        use OverlapPolicy::*;
        // (later fragment B: offset, length; expected data per First, Last, BSD, Linux,
        // Windows)
        let cases: [(u16, usize, [&str; 5]); 4] = [
            // B starts before A and ends inside it.
            (
                0,
                16,
                [
                    "BBBBBBBBAAAAAAAAAAAAAAAAxxxxxxxx",
                    "BBBBBBBBBBBBBBBBAAAAAAAAxxxxxxxx",
                    "BBBBBBBBBBBBBBBBAAAAAAAAxxxxxxxx",
                    "BBBBBBBBBBBBBBBBAAAAAAAAxxxxxxxx",
                    "BBBBBBBBAAAAAAAAAAAAAAAAxxxxxxxx",
                ],
            ),
            // B starts with A and ends inside it.
            (
                8,
                8,
                [
                    "xxxxxxxxAAAAAAAAAAAAAAAAxxxxxxxx",
                    "xxxxxxxxBBBBBBBBAAAAAAAAxxxxxxxx",
                    "xxxxxxxxAAAAAAAAAAAAAAAAxxxxxxxx",
                    "xxxxxxxxBBBBBBBBAAAAAAAAxxxxxxxx",
                    "xxxxxxxxAAAAAAAAAAAAAAAAxxxxxxxx",
                ],
            ),
            // B starts inside A and ends after it.
            (
                16,
                16,
                [
                    "xxxxxxxxAAAAAAAAAAAAAAAABBBBBBBB",
                    "xxxxxxxxAAAAAAAABBBBBBBBBBBBBBBB",
                    "xxxxxxxxAAAAAAAAAAAAAAAABBBBBBBB",
                    "xxxxxxxxAAAAAAAAAAAAAAAABBBBBBBB",
                    "xxxxxxxxAAAAAAAAAAAAAAAABBBBBBBB",
                ],
            ),
            // B covers A entirely.
            (
                0,
                32,
                [
                    "BBBBBBBBAAAAAAAAAAAAAAAABBBBBBBB",
                    "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB",
                    "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB",
                    "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB",
                    "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB",
                ],
            ),
        ];
        for (b_off, b_len, expected) in cases {
            for (policy, want) in [First, Last, Bsd, Linux, Windows].into_iter().zip(expected) {
                // A first, then B, then filler fragments for the gaps (which overlap
                // nothing they could lose: they come last and only fill holes under
                // First/BSD/Linux/Windows; under Last they would overwrite, so the
                // filler covers only bytes neither A nor B has).
                let mut frags = vec![(8, true, b'A', 16), (b_off, true, b'B', b_len)];
                let covered = |at: usize| {
                    (8..24).contains(&at)
                        || (usize::from(b_off)..usize::from(b_off) + b_len).contains(&at)
                };
                for chunk in 0..4 {
                    let at = chunk * 8;
                    if !covered(at) {
                        frags.push((at as u16, true, b'x', 8));
                    }
                }
                // The last fragment: 8 more bytes of x at 32.. would lengthen the
                // datagram; instead mark the end with a zero-length last fragment.
                frags.push((32, false, b'x', 0));
                assert_eq!(
                    reassemble(policy, &frags),
                    want,
                    "policy {policy:?}, B at {b_off} for {b_len}"
                );
            }
        }
    }

    #[test]
    fn inconsistent_ends_and_oversized_datagrams_are_dropped() {
        // Two last fragments that disagree about the end (teardrop-style).
        let r = reassemble(
            OverlapPolicy::Bsd,
            &[
                (0, true, b'a', 16),
                (16, false, b'b', 8),
                (16, false, b'c', 16),
            ],
        );
        // The first two complete the datagram already.
        assert_eq!(r, "aaaaaaaaaaaaaaaabbbbbbbb");
        // A second last fragment with another end drops the datagram.
        let r = reassemble(
            OverlapPolicy::Bsd,
            &[
                (0, true, b'a', 16),
                (24, false, b'b', 8),
                (16, false, b'c', 8),
            ],
        );
        assert_eq!(r, "Inconsistent");
        // Data past the end is cut off there (and counted), as tshark does.
        let r = reassemble(
            OverlapPolicy::Bsd,
            &[(16, false, b'b', 8), (0, true, b'a', 32)],
        );
        assert_eq!(r, "aaaaaaaaaaaaaaaaaaaaaaaa");
        let r = reassemble(OverlapPolicy::Bsd, &[(65_528, true, b'a', 16)]);
        assert_eq!(r, "TooLarge");
        // An empty fragment past the known end adds nothing (found by the fuzz target:
        // its offset was subtracted from the end it was cut to).
        let r = reassemble(
            OverlapPolicy::Bsd,
            &[
                (16, false, b'b', 8),
                (32, true, b'c', 0),
                (0, true, b'a', 16),
            ],
        );
        assert_eq!(r, "aaaaaaaaaaaaaaaabbbbbbbb");
    }

    #[test]
    fn a_million_half_open_fragments_stay_within_the_limits() {
        let config = DefragConfig {
            max_datagrams: 1000,
            max_bytes: 256 << 10,
            ..DefragConfig::default()
        };
        let mut d = Defragmenter::new(config);
        let mut f = fragment(0, 0, true, &[0u8; 256]);
        for i in 0..1_000_000u32 {
            // A new datagram id (and source) each time: none ever completes.
            f[14 + 4..14 + 6].copy_from_slice(&(i as u16).to_be_bytes());
            f[14 + 12..14 + 16].copy_from_slice(&(i >> 16).to_be_bytes());
            let ts = Timestamp::from_micros(1_700_000_000, i % 1_000_000);
            let p = Packet::new(&f, Meta::new(ts, f.len() as u32, LinkType::ETHERNET));
            assert!(matches!(d.add(&p), Defragged::Held));
            assert!(d.stats().bytes <= 256 << 10);
        }
        let s = d.stats();
        assert_eq!(s.fragments, 1_000_000);
        assert!(s.in_progress <= 1000);
        assert!(s.peak_bytes <= 256 << 10);
        assert!(
            s.in_progress < 1000,
            "the byte limit bites before the count"
        );
        assert_eq!(s.evicted + s.in_progress as u64, 1_000_000);
        assert_eq!(s.reassembled, 0);
    }

    #[test]
    fn half_open_fragments_inside_tunnels_share_the_limits() {
        let config = DefragConfig {
            max_datagrams: 500,
            max_bytes: 256 << 10,
            ..DefragConfig::default()
        };
        let mut d = Defragmenter::new(config);
        // The inner fragment (IPv4, no link layer) inside GRE inside IPv4.
        let inner = fragment(0, 0, true, &[0u8; 256]);
        let mut body = vec![0, 0, 0x08, 0x00];
        body.extend_from_slice(&inner[14..]);
        let mut f = PacketBuilder::new()
            .ethernet(Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]))
            .ipv4(Ipv4::new([192, 0, 2, 1], [192, 0, 2, 2]).protocol(47))
            .payload(&body)
            .build();
        let inner_ip = 14 + 20 + 4;
        for i in 0..200_000u32 {
            // A new tunnel (outer source) and inner id each time: none ever completes.
            f[14 + 12..14 + 16].copy_from_slice(&i.to_be_bytes());
            f[inner_ip + 4..inner_ip + 6].copy_from_slice(&(i as u16).to_be_bytes());
            let ts = Timestamp::from_micros(1_700_000_000, i % 1_000_000);
            let p = Packet::new(&f, Meta::new(ts, f.len() as u32, LinkType::ETHERNET));
            assert!(matches!(d.add(&p), Defragged::Held));
            assert!(d.stats().bytes <= 256 << 10);
        }
        let s = d.stats();
        assert_eq!(s.fragments, 200_000);
        assert!(s.in_progress <= 500);
        assert_eq!(s.evicted + s.in_progress as u64, 200_000);
        assert_eq!(s.reassembled, 0);
    }
}
