//! The network layer as [`crate::Decoded`] caches it: where the IP header and the
//! transport header are, how long the packet says it is, and its fragment information.

use crate::anomaly::Anomalies;
use crate::ethernet::ethertype;
use crate::ipv4::{self, Ipv4Header};
use crate::ipv6::{self, Ipv6Header};
use crate::link::LinkInfo;
use std::cell::Cell;

/// The network layer.
#[derive(Clone, Copy, Debug)]
pub enum Layer3<'a> {
    /// IPv4.
    Ipv4(Ipv4Header<'a>),
    /// IPv6.
    Ipv6(Ipv6Header<'a>),
    /// ARP (the bytes from the ARP header on).
    Arp(&'a [u8]),
    /// Anything else, by EtherType (0 when the link layer does not name it).
    Other {
        /// The EtherType.
        ethertype: u16,
        /// The bytes from the network layer on.
        bytes: &'a [u8],
    },
}

/// Fragment information from an IPv4 header or an IPv6 fragment header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fragment {
    /// Identification (16 bits for IPv4, 32 for IPv6).
    pub id: u32,
    /// Offset of this fragment's data in bytes.
    pub offset: u16,
    /// More fragments follow.
    pub more: bool,
}

impl Fragment {
    /// Whether this is the first fragment (offset 0), the only one with a transport
    /// header.
    pub fn is_first(&self) -> bool {
        self.offset == 0
    }
}

/// Whether the transport header can be reached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum L4State {
    /// No transport header can be reached.
    #[default]
    Absent,
    /// The transport header starts at `l4_off` (possibly truncated).
    Present,
    /// A non-first fragment: the protocol is known, the header is elsewhere.
    Fragment,
}

/// Why a packet has no transport header (see
/// [`Decoded::no_transport`](crate::Decoded::no_transport)). A transport header that *is*
/// there but was cut by the capture is not among these: it is a
/// [`Transport::Truncated`](crate::Transport::Truncated).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NoTransport {
    /// The link layer does not lead to IPv4 or IPv6 (ARP, LLC, an unknown EtherType, an
    /// 802.11 management frame, ...).
    NotIp,
    /// The IP header was not captured whole or is not a valid header.
    IpHeaderCut,
    /// A non-first fragment: the transport header travelled in the first fragment
    /// ([`Decoded::fragment_payload_len`](crate::Decoded::fragment_payload_len) gives
    /// this fragment's share of the datagram).
    NonFirstFragment,
    /// IPv4 options or IPv6 extension headers run past the capture or the IP length, an
    /// IPv6 chain is too long, or the IPv4 total length is smaller than its header.
    ExtensionHeadersCut,
    /// IPv6's "no next header" (59): nothing follows by design.
    NoNextHeader,
}

/// The network walk's result, cached by `Decoded`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct NetInfo {
    /// 0 (no IP), 4 or 6.
    pub version: u8,
    pub ip_off: u32,
    pub l4_off: u32,
    /// Where the IP header says the packet ends (may be past the capture).
    pub declared_end: u32,
    /// The end of the usable bytes: the declared end clamped to the capture.
    pub avail_end: u32,
    /// The transport protocol (after IPv6 extension headers).
    pub proto: u8,
    pub l4: L4State,
    pub frag: Option<Fragment>,
}

impl NetInfo {
    /// The bytes the IP header says the transport layer has (captured or not).
    #[inline]
    pub fn segment_len(&self) -> usize {
        self.declared_end.saturating_sub(self.l4_off) as usize
    }
}

/// Walks the network layer the link walk found in `data`, which were `wire_len` bytes
/// on the wire, noting what is wrong in `an`.
#[inline(always)]
pub(crate) fn walk(data: &[u8], li: &LinkInfo, wire_len: u32, an: &mut Anomalies) -> NetInfo {
    let b = data.get(..li.end as usize).unwrap_or(data);
    let off = li.l3_off as usize;
    let wire = (wire_len as usize).saturating_sub(off);
    match li.ethertype {
        ethertype::IPV4 => ipv4::walk(b, off, wire, an),
        ethertype::IPV6 => ipv6::walk(b, off, wire, an),
        _ => NetInfo::default(),
    }
}

/// The memo of the network walk ([`NetInfo`]) as four words, each in its own cell.
///
/// A `Cell<Option<NetInfo>>` was written field by field after the walk and read back
/// with 16-byte loads that straddled those stores; a load that no single store covers
/// cannot be forwarded and waits for the stores to reach the cache (T2 asks for the TCP
/// header and then the payload length, reading the memo right after writing it). Words
/// are written and read whole, so every load is served by the store of the same word.
#[derive(Clone, Default)]
pub(crate) struct NetMemo {
    /// `ip_off`, `l4_off`.
    offsets: Cell<u64>,
    /// `declared_end`, `avail_end`.
    ends: Cell<u64>,
    /// The fragment: `id`, `offset` (bits 32-47), `more` (bit 48).
    frag: Cell<u64>,
    /// `version`, `proto` (bits 8-15), `l4` (bits 16-23), [`NetMemo::HAS_FRAG`],
    /// [`NetMemo::KNOWN`].
    tags: Cell<u64>,
}

impl NetMemo {
    const HAS_FRAG: u64 = 1 << 24;
    const KNOWN: u64 = 1 << 32;

    /// The walk's result, once [`NetMemo::set`] has stored one.
    #[inline(always)]
    pub fn get(&self) -> Option<NetInfo> {
        let tags = self.tags.get();
        if tags & NetMemo::KNOWN == 0 {
            return None;
        }
        let (offsets, ends) = (self.offsets.get(), self.ends.get());
        let frag = (tags & NetMemo::HAS_FRAG != 0).then(|| {
            let f = self.frag.get();
            Fragment {
                id: f as u32,
                offset: (f >> 32) as u16,
                more: f & (1 << 48) != 0,
            }
        });
        Some(NetInfo {
            version: tags as u8,
            ip_off: offsets as u32,
            l4_off: (offsets >> 32) as u32,
            declared_end: ends as u32,
            avail_end: (ends >> 32) as u32,
            proto: (tags >> 8) as u8,
            l4: match (tags >> 16) as u8 {
                1 => L4State::Present,
                2 => L4State::Fragment,
                _ => L4State::Absent,
            },
            frag,
        })
    }

    /// Stores the walk's result.
    #[inline(always)]
    pub fn set(&self, n: &NetInfo) {
        let word = |lo: u32, hi: u32| u64::from(lo) | u64::from(hi) << 32;
        self.offsets.set(word(n.ip_off, n.l4_off));
        self.ends.set(word(n.declared_end, n.avail_end));
        let l4 = match n.l4 {
            L4State::Absent => 0u64,
            L4State::Present => 1,
            L4State::Fragment => 2,
        };
        let mut tags = u64::from(n.version) | u64::from(n.proto) << 8 | l4 << 16 | NetMemo::KNOWN;
        if let Some(f) = n.frag {
            self.frag
                .set(u64::from(f.id) | u64::from(f.offset) << 32 | u64::from(f.more) << 48);
            tags |= NetMemo::HAS_FRAG;
        }
        self.tags.set(tags);
    }
}
