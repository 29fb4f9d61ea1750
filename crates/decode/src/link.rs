//! The link-layer walk: capture meta headers, link framing, and the EtherType chain of
//! VLAN tags, MPLS labels and PPPoE down to the network layer.

use std::cell::Cell;

use tracekit_core::{ErfType, LinkType};

use crate::anomaly::{Anomalies, Anomaly};
use crate::bytes::{be16, le16, le32, u8_at};
use crate::ethernet::{self, EthernetHeader, MplsLabel, Vlan, ethertype, ppp_to_ethertype};
use crate::isl::{self, IslHeader};
use crate::radiotap::{self, FLAG_FCS, RadioTap, prism, prism_len};
use crate::wlan::{self, AmsduSubframes, Body};

// Byte offsets of the link-layer and shim headers the walk reads, each from the start of
// its own header.

/// Linux cooked capture v1 (16 bytes).
mod sll {
    pub const HATYPE: usize = 2;
    pub const PROTOCOL: usize = 14;
    pub const LEN: usize = 16;
}

/// Linux cooked capture v2 (20 bytes).
mod sll2 {
    pub const PROTOCOL: usize = 0;
    pub const HATYPE: usize = 8;
    pub const LEN: usize = 20;
}

/// ARPHRD_* values and SLL protocol values that are not EtherTypes.
mod arphrd {
    pub const NETLINK: u16 = 824;
    pub const GRE_TEB: u16 = 778;
    /// Novell 802.3 frames without an 802.2 LLC header.
    pub const PROTO_802_3: u16 = 0x0001;
    /// 802.2 LLC frames.
    pub const PROTO_802_2: u16 = 0x0004;
}

/// BSD NULL/LOOP: a 4-byte address family.
mod null {
    pub const FAMILY: usize = 0;
    pub const LEN: usize = 4;
}

/// Cisco HDLC: address, control, then an EtherType.
mod cisco_hdlc {
    pub const PROTOCOL: usize = 2;
    pub const LEN: usize = 4;
    pub const UNICAST: u8 = 0x0F;
    pub const BROADCAST: u8 = 0x8F;
    pub const CONTROL: u8 = 0x00;
}

/// PPP in HDLC-like framing: optional address 0xFF and control 0x03.
mod ppp_hdlc {
    pub const ADDRESS: u8 = 0xFF;
    pub const CONTROL: u8 = 0x03;
    pub const LEN: usize = 2;
}

/// OpenBSD pflog: header length, then the address family.
mod pflog {
    pub const HDR_LEN: usize = 0;
    pub const FAMILY: usize = 1;
    pub const MIN_LEN: usize = 4;
}

/// 802.2 LLC with a SNAP header: AA AA 03, an OUI, then an EtherType.
mod llc {
    pub const DSAP: usize = 0;
    pub const SSAP: usize = 1;
    pub const CONTROL: usize = 2;
    pub const SNAP_TYPE: usize = 6;
    pub const SNAP_LEN: usize = 8;
    pub const SNAP_SAP: u8 = 0xAA;
    pub const UI: u8 = 0x03;
}

/// Linux NFLOG: a 4-byte header (family, version, resource id), then TLVs of 4-byte
/// header (length, type; little-endian) padded to 4 bytes.
mod nflog {
    pub const FAMILY: usize = 0;
    pub const LEN: usize = 4;
    pub const TLV_LEN: usize = 0;
    pub const TLV_TYPE: usize = 2;
    pub const TLV_HEADER: usize = 4;
    /// NFULA_PAYLOAD: the packet.
    pub const TYPE_PAYLOAD: u16 = 9;
    pub const TYPE_MASK: u16 = 0x7fff;
    /// How many TLVs are looked at before giving up.
    pub const MAX_TLVS: usize = 64;
}

/// An ERF record header (in `LINKTYPE_ERF` packets).
mod erf {
    pub const TYPE: usize = 8;
    pub const RLEN: usize = 10;
    pub const LEN: usize = 16;
    pub const EXT_LEN: usize = 8;
    /// In the type byte and in each extension header's first byte: another follows.
    pub const MORE_EXT: u8 = 0x80;
}

/// An 802.1Q/802.1ad tag after its TPID: TCI, then the next EtherType.
mod vlan {
    pub const TCI: usize = 0;
    pub const NEXT_TYPE: usize = 2;
    pub const LEN: usize = 4;
}

/// An MPLS label stack entry, and the pseudowire control word that may follow the stack.
mod mpls {
    pub const LEN: usize = 4;
    pub const CONTROL_WORD_LEN: usize = 4;
}

/// 802.1ah I-tag, then the customer's destination, source and EtherType.
mod pbb {
    pub const NEXT_TYPE: usize = 16;
    pub const LEN: usize = 18;
}

/// Port-extender tags after their EtherType: the tag, then the next EtherType.
mod extender {
    /// Cisco VN-Tag: direction, pointer, destination and source virtual interfaces.
    pub const VNTAG_LEN: usize = 6;
    /// IEEE 802.1BR E-Tag: PCP, DEI, ingress and egress E-CIDs.
    pub const ETAG_LEN: usize = 8;
}

/// Cisco FabricPath after its EtherType: FTag (10 bits) and TTL (6 bits), then the
/// original frame's destination, source and EtherType.
mod fabricpath {
    pub const NEXT_TYPE: usize = 14;
    pub const LEN: usize = 16;
}

/// PPPoE session header, then the PPP protocol.
mod pppoe {
    /// The session's payload length (from the PPP protocol on), RFC 2516.
    pub const LENGTH: usize = 4;
    pub const HEADER: usize = 6;
    pub const PPP_PROTOCOL: usize = 6;
    pub const LEN: usize = 8;
}

/// Where a decode starts: a capture link type, or (inside tunnels) an EtherType.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// A capture link type (the packet's own).
    Link(LinkType),
    /// Bytes that start with the protocol this EtherType names (GRE and Geneve payloads).
    Ethertype(u16),
    /// An 802.11 frame whose two frame-control bytes are swapped, as Cisco access points
    /// send them in CAPWAP data channels (Wireshark swaps them back by default:
    /// `capwap.swap_fc`).
    Ieee80211SwappedFc,
}

/// What sits at the start of the link layer proper.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LinkKind {
    /// Ethernet II or 802.3.
    Ethernet,
    /// 802.11.
    Ieee80211,
    /// Linux cooked capture v1.
    LinuxSll,
    /// Linux cooked capture v2.
    LinuxSll2,
    /// BSD loopback, address family in host or network byte order.
    Null,
    /// PPP (with or without HDLC-like framing).
    Ppp,
    /// Cisco HDLC.
    CiscoHdlc,
    /// OpenBSD pflog.
    Pflog,
    /// Linux netfilter log.
    Nflog,
    /// Raw IP, version from the first nibble.
    RawIp,
    /// Bytes starting with an EtherType-named protocol (tunnel payloads).
    Ethertype,
    /// A link type the decoder does not know.
    #[default]
    Unknown,
}

/// The link layer proper (after capture meta headers).
#[derive(Clone, Copy, Debug)]
pub struct LinkLayer<'a> {
    /// What kind of link it is.
    pub kind: LinkKind,
    /// Its bytes, from the start of the link header to the end of the capture.
    pub bytes: &'a [u8],
}

/// The link walk's result, cached by `Decoded`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LinkInfo {
    pub kind: LinkKind,
    /// Offset of the link layer proper (after RadioTap, Prism, ERF headers).
    pub l2_off: u32,
    /// Where the EtherType chain starts, and the EtherType it starts with (0: no chain).
    pub chain_off: u32,
    pub chain_type: u16,
    /// Offset of the network layer, and the EtherType naming it (0: none).
    pub l3_off: u32,
    pub ethertype: u16,
    /// End of the useful bytes (802.3 length, FCS removed).
    pub end: u32,
    pub vlan_count: u8,
    pub mpls_count: u8,
    /// The link layer is the Ethernet frame inside a Cisco ISL header (just before it).
    pub isl: bool,
}

/// An FCS at the end of the frame.
const FCS_LEN: u32 = 4;

/// The memo of the link walk ([`LinkInfo`]) as three words, each in its own cell, for
/// the reason [`NetMemo`](crate::net::NetMemo) gives: a `Cell<Option<LinkInfo>>` was
/// written and read back in pieces of other sizes, and each load that no single store
/// covered waited for the stores.
#[derive(Clone, Default)]
pub(crate) struct LinkMemo {
    /// `end`, `l3_off`.
    ends: Cell<u64>,
    /// `l2_off`, `chain_off`.
    starts: Cell<u64>,
    /// `chain_type`, `ethertype` (bits 16-31), `kind` (32-39), `vlan_count` (40-47),
    /// `mpls_count` (48-55), `isl` (56), [`LinkMemo::KNOWN`].
    tags: Cell<u64>,
}

impl LinkMemo {
    const KNOWN: u64 = 1 << 63;
    /// Every kind, in declaration order: `kind as usize` indexes it.
    const KINDS: [LinkKind; 12] = [
        LinkKind::Ethernet,
        LinkKind::Ieee80211,
        LinkKind::LinuxSll,
        LinkKind::LinuxSll2,
        LinkKind::Null,
        LinkKind::Ppp,
        LinkKind::CiscoHdlc,
        LinkKind::Pflog,
        LinkKind::Nflog,
        LinkKind::RawIp,
        LinkKind::Ethertype,
        LinkKind::Unknown,
    ];

    /// The walk's result, once [`LinkMemo::set`] has stored one.
    #[inline(always)]
    pub fn get(&self) -> Option<LinkInfo> {
        let tags = self.tags.get();
        if tags & LinkMemo::KNOWN == 0 {
            return None;
        }
        let (ends, starts) = (self.ends.get(), self.starts.get());
        Some(LinkInfo {
            kind: LinkMemo::KINDS
                .get(usize::from((tags >> 32) as u8))
                .copied()
                .unwrap_or_default(),
            l2_off: starts as u32,
            chain_off: (starts >> 32) as u32,
            chain_type: tags as u16,
            l3_off: (ends >> 32) as u32,
            ethertype: (tags >> 16) as u16,
            end: ends as u32,
            vlan_count: (tags >> 40) as u8,
            mpls_count: (tags >> 48) as u8,
            isl: tags & (1 << 56) != 0,
        })
    }

    /// Stores the walk's result.
    #[inline(always)]
    pub fn set(&self, li: &LinkInfo) {
        let word = |lo: u32, hi: u32| u64::from(lo) | u64::from(hi) << 32;
        self.ends.set(word(li.end, li.l3_off));
        self.starts.set(word(li.l2_off, li.chain_off));
        let kind = li.kind as u64;
        self.tags.set(
            u64::from(li.chain_type)
                | u64::from(li.ethertype) << 16
                | kind << 32
                | u64::from(li.vlan_count) << 40
                | u64::from(li.mpls_count) << 48
                | u64::from(li.isl) << 56
                | LinkMemo::KNOWN,
        );
    }
}

impl LinkInfo {
    /// The link layer proper in `data`, the bytes this walk went over.
    pub(crate) fn layer<'a>(&self, data: &'a [u8]) -> LinkLayer<'a> {
        let bytes = data.get(self.l2_off as usize..self.end as usize);
        LinkLayer {
            kind: self.kind,
            bytes: bytes.unwrap_or(&[]),
        }
    }
}

const MAX_VLANS: u8 = 8;
const MAX_MPLS: u8 = 16;

/// Guesses the network protocol from the version nibble.
#[inline]
pub(crate) fn ip_by_nibble(b: &[u8], off: usize) -> u16 {
    match u8_at(b, off).map(|v| v >> 4) {
        Some(4) => ethertype::IPV4,
        Some(6) => ethertype::IPV6,
        _ => 0,
    }
}

/// `AF_INET` everywhere.
const AF_INET: u32 = 2;
/// `AF_INET6` on Linux; Windows, the BSDs and macOS use 23, 24, 28 and 30.
const AF_INET6_LINUX: u32 = 10;

fn family_to_ethertype(af: u32) -> u16 {
    match af {
        AF_INET => ethertype::IPV4,
        AF_INET6_LINUX | 23 | 24 | 28 | 30 => ethertype::IPV6,
        _ => 0,
    }
}

/// The link layer of an Ethernet frame that carries IPv4 or IPv6 directly, the usual
/// case (`None` for any other frame): what [`walk`] finds for it, built in registers.
/// Its caller stores it in the memo at once; the value returned from `walk` came back
/// through memory written field by field, and the copy into the memo read it back in
/// pieces that no single store had written, so each load waited for the stores (a
/// third of `walk_net`'s samples in a T5 profile).
#[inline(always)]
pub(crate) fn ethernet_ip(b: &[u8]) -> Option<LinkInfo> {
    let et = be16(b, ethernet::field::TYPE)?;
    let body = ethernet::field::LEN as u32;
    (et == ethertype::IPV4 || et == ethertype::IPV6).then_some(LinkInfo {
        kind: LinkKind::Ethernet,
        l2_off: 0,
        chain_off: body,
        chain_type: et,
        l3_off: body,
        ethertype: et,
        end: b.len() as u32,
        vlan_count: 0,
        mpls_count: 0,
        isl: false,
    })
}

/// Walks the link layer of any framing.
pub(crate) fn walk(b: &[u8], framing: Framing, an: &mut Anomalies) -> LinkInfo {
    let mut li = LinkInfo {
        end: b.len() as u32,
        ..LinkInfo::default()
    };
    let link = match framing {
        Framing::Ethertype(et) => {
            li.kind = LinkKind::Ethertype;
            if et == ethertype::TEB {
                return ethernet(b, 0, li, an);
            }
            if et == ethertype::PPP {
                li.kind = LinkKind::Ppp;
                return ppp(b, 0, li, an);
            }
            return chain(b, et, 0, li, an);
        }
        Framing::Ieee80211SwappedFc => return ieee80211(b, 0, li, an, true),
        Framing::Link(l) => l,
    };
    match link {
        LinkType::ETHERNET => ethernet(b, 0, li, an),
        // 12 and 14: raw IP as some BSDs number DLT_RAW.
        LinkType::RAW | LinkType::IPV4 | LinkType::IPV6 | LinkType(12) | LinkType(14) => {
            li.kind = LinkKind::RawIp;
            li.ethertype = ip_by_nibble(b, 0);
            if b.is_empty() {
                an.insert(Anomaly::LinkTruncated);
            }
            li
        }
        LinkType::NULL | LinkType::LOOP => {
            li.kind = LinkKind::Null;
            let Some(raw) = le32(b, null::FAMILY) else {
                an.insert(Anomaly::LinkTruncated);
                return li;
            };
            let af = if link == LinkType::LOOP || raw & 0xffff == 0 {
                raw.swap_bytes()
            } else {
                raw
            };
            li.l3_off = null::LEN as u32;
            li.ethertype = family_to_ethertype(af);
            li
        }
        LinkType::LINUX_SLL => {
            li.kind = LinkKind::LinuxSll;
            let (Some(hatype), Some(proto)) = (be16(b, sll::HATYPE), be16(b, sll::PROTOCOL)) else {
                an.insert(Anomaly::LinkTruncated);
                return li;
            };
            if b.len() < sll::LEN {
                an.insert(Anomaly::LinkTruncated);
                return li;
            }
            sll_payload(b, hatype, proto, sll::LEN, li, an)
        }
        LinkType::LINUX_SLL2 => {
            li.kind = LinkKind::LinuxSll2;
            let (Some(proto), Some(hatype)) = (be16(b, sll2::PROTOCOL), be16(b, sll2::HATYPE))
            else {
                an.insert(Anomaly::LinkTruncated);
                return li;
            };
            if b.len() < sll2::LEN {
                an.insert(Anomaly::LinkTruncated);
                return li;
            }
            sll_payload(b, hatype, proto, sll2::LEN, li, an)
        }
        LinkType::PPP | LinkType::PPP_HDLC => {
            li.kind = LinkKind::Ppp;
            ppp(b, 0, li, an)
        }
        LinkType::PPP_ETHER => {
            li.kind = LinkKind::Ppp;
            chain(b, ethertype::PPPOE_SESSION, 0, li, an)
        }
        LinkType::C_HDLC => {
            li.kind = LinkKind::CiscoHdlc;
            match be16(b, cisco_hdlc::PROTOCOL) {
                Some(et) => chain(b, et, cisco_hdlc::LEN, li, an),
                None => {
                    an.insert(Anomaly::LinkTruncated);
                    li
                }
            }
        }
        LinkType::IEEE802_11 => ieee80211(b, 0, li, an, false),
        LinkType::IEEE802_11_RADIOTAP => {
            let Some(rt) = RadioTap::parse(b) else {
                if b.len() < radiotap::field::FIXED_LEN
                    || le16(b, radiotap::field::LEN).is_some_and(|l| usize::from(l) > b.len())
                {
                    an.insert(Anomaly::MetaTruncated);
                } else {
                    an.insert(Anomaly::MetaBadLength);
                }
                return li;
            };
            if rt.flags.is_some_and(|f| f & FLAG_FCS != 0) {
                li.end = li.end.saturating_sub(FCS_LEN).max(u32::from(rt.len));
            }
            ieee80211(b, usize::from(rt.len), li, an, false)
        }
        LinkType::IEEE802_11_PRISM => match prism_len(b) {
            Some(n) => ieee80211(b, n, li, an, false),
            None => {
                an.insert(if b.len() < prism::LEN {
                    Anomaly::MetaTruncated
                } else {
                    Anomaly::MetaBadLength
                });
                li
            }
        },
        LinkType::PFLOG => {
            li.kind = LinkKind::Pflog;
            let (Some(hlen), Some(af)) = (u8_at(b, pflog::HDR_LEN), u8_at(b, pflog::FAMILY)) else {
                an.insert(Anomaly::MetaTruncated);
                return li;
            };
            let hlen = usize::from(hlen).next_multiple_of(4);
            if hlen < pflog::MIN_LEN {
                an.insert(Anomaly::MetaBadLength);
                return li;
            }
            if hlen > b.len() {
                an.insert(Anomaly::MetaTruncated);
                return li;
            }
            li.l3_off = hlen as u32;
            li.ethertype = family_to_ethertype(u32::from(af));
            li
        }
        LinkType::NFLOG => nflog(b, li, an),
        LinkType::ERF => erf(b, li, an),
        _ => li,
    }
}

fn sll_payload(
    b: &[u8],
    hatype: u16,
    proto: u16,
    hlen: usize,
    mut li: LinkInfo,
    an: &mut Anomalies,
) -> LinkInfo {
    match (hatype, proto) {
        // Netlink, and 802.3 frames without LLC: nothing the network layer can use.
        (arphrd::NETLINK, _) | (_, arphrd::PROTO_802_3) => {
            li.l3_off = hlen as u32;
            li
        }
        (_, arphrd::PROTO_802_2) => llc(b, hlen, li, an),
        (arphrd::GRE_TEB, ethertype::TEB) => ethernet(b, hlen, li, an),
        _ => chain(b, proto, hlen, li, an),
    }
}

pub(crate) fn ethernet(b: &[u8], off: usize, mut li: LinkInfo, an: &mut Anomalies) -> LinkInfo {
    if li.kind == LinkKind::Unknown || li.kind == LinkKind::Ethertype {
        li.kind = LinkKind::Ethernet;
    }
    li.l2_off = off as u32;
    let Some(et) = be16(b, off + ethernet::field::TYPE) else {
        an.insert(Anomaly::LinkTruncated);
        li.l3_off = li.end;
        return li;
    };
    let body = off + ethernet::field::LEN;
    // Most frames carry IP directly: what `chain` would conclude at once, without the call.
    if et == ethertype::IPV4 || et == ethertype::IPV6 {
        li.chain_off = body as u32;
        li.chain_type = et;
        li.l3_off = body as u32;
        li.ethertype = et;
        return li;
    }
    if et <= ethernet::MAX_LENGTH {
        return dot3(b, off, li, an);
    }
    chain(b, et, body, li, an)
}

/// An 802.3 frame at `off` (whose type field, a length, was captured): LLC follows, or
/// it is a Cisco ISL frame. (Kept out of `ethernet`, whose IP path must not pay for it:
/// the length is read again so that the call passes its arguments in registers.)
#[inline(never)]
fn dot3(b: &[u8], off: usize, mut li: LinkInfo, an: &mut Anomalies) -> LinkInfo {
    let len = be16(b, off + ethernet::field::TYPE).unwrap_or(0);
    if !li.isl && isl::is_isl(b, off) {
        return isl_frame(b, off, len, li, an);
    }
    let body = off + ethernet::field::LEN;
    let end = (body + usize::from(len)).min(b.len());
    li.end = li.end.min(end as u32);
    llc(b, body, li, an)
}

/// A Cisco ISL frame at `off` whose length field says `len`: the encapsulated Ethernet
/// frame is the link layer (see `isl`); an ISL frame inside it is not followed.
#[cold]
fn isl_frame(b: &[u8], off: usize, len: u16, mut li: LinkInfo, an: &mut Anomalies) -> LinkInfo {
    let inner = off + isl::field::LEN;
    // The length covers the encapsulated frame's FCS; the ISL CRC follows it.
    let end = (off + isl::field::COUNTED_FROM + usize::from(len)).saturating_sub(FCS_LEN as usize);
    li.end = li.end.min(end.max(inner) as u32);
    if b.len() < inner {
        an.insert(Anomaly::LinkTruncated);
        li.l3_off = li.end;
        return li;
    }
    li.isl = true;
    if isl::frame_type(b, off) != Some(isl::field::TYPE_ETHERNET) {
        // Token Ring, FDDI, ATM: not decoded.
        li.kind = LinkKind::Unknown;
        li.l2_off = inner as u32;
        li.l3_off = li.end;
        return li;
    }
    ethernet(b, inner, li, an)
}

fn llc(b: &[u8], off: usize, mut li: LinkInfo, an: &mut Anomalies) -> LinkInfo {
    li.l3_off = off as u32;
    match (
        u8_at(b, off + llc::DSAP),
        u8_at(b, off + llc::SSAP),
        u8_at(b, off + llc::CONTROL),
    ) {
        (Some(llc::SNAP_SAP), Some(llc::SNAP_SAP), Some(llc::UI)) => {
            match be16(b, off + llc::SNAP_TYPE) {
                Some(et) => chain(b, et, off + llc::SNAP_LEN, li, an),
                None => {
                    an.insert(Anomaly::LinkTruncated);
                    li
                }
            }
        }
        (Some(_), Some(_), Some(_)) => li,
        _ => {
            an.insert(Anomaly::LinkTruncated);
            li
        }
    }
}

fn ppp(b: &[u8], mut off: usize, mut li: LinkInfo, an: &mut Anomalies) -> LinkInfo {
    li.l2_off = off as u32;
    // Cisco HDLC framing in a capture labelled PPP (address 0x0F unicast or 0x8F
    // broadcast, control 0): an EtherType follows, as Wireshark detects it.
    if matches!(
        u8_at(b, off),
        Some(cisco_hdlc::UNICAST | cisco_hdlc::BROADCAST)
    ) && u8_at(b, off + 1) == Some(cisco_hdlc::CONTROL)
    {
        li.kind = LinkKind::CiscoHdlc;
        return match be16(b, off + cisco_hdlc::PROTOCOL) {
            Some(et) => chain(b, et, off + cisco_hdlc::LEN, li, an),
            None => {
                an.insert(Anomaly::LinkTruncated);
                li
            }
        };
    }
    if u8_at(b, off) == Some(ppp_hdlc::ADDRESS) && u8_at(b, off + 1) == Some(ppp_hdlc::CONTROL) {
        off += ppp_hdlc::LEN;
    }
    let Some(first) = u8_at(b, off) else {
        an.insert(Anomaly::LinkTruncated);
        return li;
    };
    // A protocol field with its low bit set is one byte long (compressed, RFC 1661).
    let (proto, len) = if first & 1 == 1 {
        (u16::from(first), 1)
    } else {
        match be16(b, off) {
            Some(p) => (p, 2),
            None => {
                an.insert(Anomaly::LinkTruncated);
                return li;
            }
        }
    };
    li.l3_off = (off + len) as u32;
    match ppp_to_ethertype(proto) {
        Some(et) => chain(b, et, off + len, li, an),
        None => li,
    }
}

fn ieee80211(
    b: &[u8],
    off: usize,
    mut li: LinkInfo,
    an: &mut Anomalies,
    swapped_fc: bool,
) -> LinkInfo {
    li.kind = LinkKind::Ieee80211;
    li.l2_off = off as u32;
    match wlan::body(b, off, li.end as usize, swapped_fc) {
        Ok(Body::Llc(at)) => llc(b, at, li, an),
        // An A-MSDU: the first subframe is the frame's network layer (see `wlan`).
        Ok(Body::Amsdu(at)) => match wlan::first_msdu(b, at, li.end as usize) {
            Ok((msdu, end)) => {
                li.end = end as u32;
                llc(b, msdu, li, an)
            }
            Err(a) => {
                an.insert(a);
                li.l3_off = li.end;
                li
            }
        },
        // management, control, null data, or protected: no network layer to read
        Ok(Body::None) => {
            li.l3_off = li.end;
            li
        }
        Err(a) => {
            an.insert(a);
            // (A frame cut inside its frame control field has no header to skip.)
            if b.len() > off + 1 {
                li.l3_off = li.end;
            }
            li
        }
    }
}

fn nflog(b: &[u8], mut li: LinkInfo, an: &mut Anomalies) -> LinkInfo {
    li.kind = LinkKind::Nflog;
    let Some(family) = u8_at(b, nflog::FAMILY) else {
        an.insert(Anomaly::MetaTruncated);
        return li;
    };
    if b.len() < nflog::LEN {
        an.insert(Anomaly::MetaTruncated);
        return li;
    }
    let mut off = nflog::LEN;
    for _ in 0..nflog::MAX_TLVS {
        let (Some(len), Some(ty)) = (
            le16(b, off + nflog::TLV_LEN),
            le16(b, off + nflog::TLV_TYPE),
        ) else {
            break;
        };
        let len = usize::from(len);
        if len < nflog::TLV_HEADER {
            an.insert(Anomaly::MetaBadLength);
            return li;
        }
        if ty & nflog::TYPE_MASK == nflog::TYPE_PAYLOAD {
            let data = off + nflog::TLV_HEADER;
            li.l3_off = data as u32;
            li.end = li.end.min((off + len) as u32);
            li.ethertype = match u32::from(family) {
                AF_INET => ethertype::IPV4,
                AF_INET6_LINUX => ethertype::IPV6,
                _ => ip_by_nibble(b, data),
            };
            return li;
        }
        off += len.next_multiple_of(4);
    }
    li.l3_off = li.end;
    li
}

fn erf(b: &[u8], mut li: LinkInfo, an: &mut Anomalies) -> LinkInfo {
    let (Some(ty), Some(rlen)) = (u8_at(b, erf::TYPE), be16(b, erf::RLEN)) else {
        an.insert(Anomaly::MetaTruncated);
        return li;
    };
    if usize::from(rlen) < erf::LEN {
        an.insert(Anomaly::MetaBadLength);
        return li;
    }
    li.end = li.end.min(u32::from(rlen));
    let mut off = erf::LEN;
    let mut more = ty & erf::MORE_EXT != 0;
    while more {
        let Some(h) = u8_at(b, off) else {
            an.insert(Anomaly::MetaTruncated);
            return li;
        };
        more = h & erf::MORE_EXT != 0;
        off += erf::EXT_LEN;
    }
    // Which link layer a record type carries is the ERF table's to say, in one place.
    let payload = ErfType::from_type_byte(ty).payload();
    let frame = off + payload.type_header_len();
    match payload.link_type(b.get(frame..).unwrap_or(&[])) {
        LinkType::ETHERNET => ethernet(b, frame, li, an),
        LinkType::IPV4 | LinkType::IPV6 => {
            // As for LINKTYPE_IPV4/IPV6: the version nibble decides.
            li.kind = LinkKind::RawIp;
            li.l2_off = frame as u32;
            li.l3_off = frame as u32;
            li.ethertype = ip_by_nibble(b, frame);
            li
        }
        LinkType::PPP_HDLC => {
            li.kind = LinkKind::Ppp;
            ppp(b, frame, li, an)
        }
        LinkType::C_HDLC => {
            li.kind = LinkKind::CiscoHdlc;
            li.l2_off = frame as u32;
            match be16(b, frame + cisco_hdlc::PROTOCOL) {
                Some(et) => chain(b, et, frame + cisco_hdlc::LEN, li, an),
                None => {
                    an.insert(Anomaly::LinkTruncated);
                    li
                }
            }
        }
        _ => li,
    }
}

/// Follows VLAN tags, MPLS labels and PPPoE from EtherType `et` at `off`.
pub(crate) fn chain(
    b: &[u8],
    mut et: u16,
    mut off: usize,
    mut li: LinkInfo,
    an: &mut Anomalies,
) -> LinkInfo {
    li.chain_off = off as u32;
    li.chain_type = et;
    loop {
        match et {
            ethertype::VLAN | ethertype::QINQ | ethertype::QINQ_OLD => {
                if li.vlan_count == MAX_VLANS {
                    an.insert(Anomaly::VlanTooDeep);
                    et = 0;
                    break;
                }
                let Some(next) = be16(b, off + vlan::NEXT_TYPE) else {
                    an.insert(Anomaly::VlanTruncated);
                    et = 0;
                    break;
                };
                li.vlan_count += 1;
                et = next;
                off += vlan::LEN;
            }
            ethertype::MPLS | ethertype::MPLS_MULTICAST => {
                let mut bottom = false;
                while !bottom {
                    if li.mpls_count == MAX_MPLS {
                        an.insert(Anomaly::MplsTooDeep);
                        li.l3_off = off as u32;
                        li.ethertype = 0;
                        return li;
                    }
                    let Some(l) = MplsLabel::parse(b, off, false) else {
                        an.insert(Anomaly::MplsTruncated);
                        li.l3_off = off as u32;
                        li.ethertype = 0;
                        return li;
                    };
                    li.mpls_count += 1;
                    bottom = l.bottom;
                    off += mpls::LEN;
                }
                // The payload type is not signalled: guess from the first nibble, as
                // libtrace and Wireshark do; 0 is a pseudowire control word before Ethernet.
                match u8_at(b, off).map(|v| v >> 4) {
                    Some(4) => et = ethertype::IPV4,
                    Some(6) => et = ethertype::IPV6,
                    Some(0) => {
                        let inner = ethernet(b, off + mpls::CONTROL_WORD_LEN, li, an);
                        return LinkInfo {
                            kind: li.kind,
                            l2_off: li.l2_off,
                            chain_off: li.chain_off,
                            chain_type: li.chain_type,
                            ..inner
                        };
                    }
                    Some(_) => {
                        let inner = ethernet(b, off, li, an);
                        return LinkInfo {
                            kind: li.kind,
                            l2_off: li.l2_off,
                            chain_off: li.chain_off,
                            chain_type: li.chain_type,
                            ..inner
                        };
                    }
                    None => et = 0,
                }
            }
            ethertype::PBB => {
                // 4-byte I-tag, then the customer's destination, source and EtherType.
                let Some(next) = be16(b, off + pbb::NEXT_TYPE) else {
                    an.insert(Anomaly::LinkTruncated);
                    et = 0;
                    break;
                };
                et = next;
                off += pbb::LEN;
            }
            ethertype::VNTAG | ethertype::ETAG => {
                let len = if et == ethertype::VNTAG {
                    extender::VNTAG_LEN
                } else {
                    extender::ETAG_LEN
                };
                let Some(next) = be16(b, off + len - 2) else {
                    an.insert(Anomaly::LinkTruncated);
                    et = 0;
                    break;
                };
                et = next;
                off += len;
            }
            ethertype::FABRICPATH => {
                let Some(next) = be16(b, off + fabricpath::NEXT_TYPE) else {
                    an.insert(Anomaly::LinkTruncated);
                    et = 0;
                    break;
                };
                et = next;
                off += fabricpath::LEN;
            }
            ethertype::PPPOE_SESSION => {
                let Some(proto) = be16(b, off + pppoe::PPP_PROTOCOL) else {
                    an.insert(Anomaly::PppoeTruncated);
                    et = 0;
                    break;
                };
                // What follows the session's payload is padding (short frames) or FCS.
                // (A length too short for the PPP protocol field is not believed.)
                if let Some(len) = be16(b, off + pppoe::LENGTH).filter(|&l| l >= 2) {
                    let end = (off + pppoe::HEADER + usize::from(len)) as u32;
                    li.end = li.end.min(end);
                }
                off += pppoe::LEN;
                match ppp_to_ethertype(proto) {
                    Some(next) => et = next,
                    None => {
                        li.l3_off = off as u32;
                        li.ethertype = 0;
                        return li;
                    }
                }
            }
            _ => break,
        }
    }
    li.l3_off = off as u32;
    li.ethertype = et;
    li
}

/// The VLAN tags the walk `li` over `b` met, outermost first.
pub(crate) fn vlans<'a>(b: &'a [u8], li: &LinkInfo) -> impl Iterator<Item = Vlan> + use<'a> {
    shims(b, li, li.vlan_count).filter_map(|s| match s {
        Shim::Vlan(v) => Some(v),
        Shim::Mpls(_) => None,
    })
}

/// The MPLS labels the walk `li` over `b` met, top first.
pub(crate) fn mpls_labels<'a>(
    b: &'a [u8],
    li: &LinkInfo,
) -> impl Iterator<Item = MplsLabel> + use<'a> {
    shims(b, li, li.mpls_count).filter_map(|s| match s {
        Shim::Mpls(l) => Some(l),
        Shim::Vlan(_) => None,
    })
}

/// The shim headers again (none unless the walk `met` some of the kind wanted).
fn shims<'a>(b: &'a [u8], li: &LinkInfo, met: u8) -> impl Iterator<Item = Shim> + use<'a> {
    let walk = (met != 0).then_some(ShimWalk {
        b,
        et: li.chain_type,
        off: li.chain_off as usize,
        steps: 0,
    });
    walk.into_iter().flatten()
}

/// Re-walks the chain for [`crate::Decoded::vlans`] and [`crate::Decoded::mpls_labels`].
#[derive(Clone, Debug)]
struct ShimWalk<'a> {
    b: &'a [u8],
    et: u16,
    off: usize,
    steps: u8,
}

/// One shim header met on the way to the network layer.
enum Shim {
    Vlan(Vlan),
    Mpls(MplsLabel),
}

impl Iterator for ShimWalk<'_> {
    type Item = Shim;

    fn next(&mut self) -> Option<Shim> {
        if self.steps >= MAX_VLANS + MAX_MPLS {
            return None;
        }
        self.steps += 1;
        match self.et {
            ethertype::VLAN | ethertype::QINQ | ethertype::QINQ_OLD => {
                let v = Vlan::parse(self.et, self.b, self.off + vlan::TCI)?;
                self.et = be16(self.b, self.off + vlan::NEXT_TYPE)?;
                self.off += vlan::LEN;
                Some(Shim::Vlan(v))
            }
            ethertype::MPLS | ethertype::MPLS_MULTICAST => {
                let l = MplsLabel::parse(self.b, self.off, self.et == ethertype::MPLS_MULTICAST)?;
                self.off += mpls::LEN;
                if l.bottom {
                    // What follows is guessed; a pseudowire's Ethernet tags are its own.
                    self.et = match u8_at(self.b, self.off).map(|v| v >> 4) {
                        Some(4) => ethertype::IPV4,
                        Some(6) => ethertype::IPV6,
                        Some(0) => {
                            self.off += mpls::CONTROL_WORD_LEN;
                            self.ethernet_next()
                        }
                        _ => self.ethernet_next(),
                    };
                }
                Some(Shim::Mpls(l))
            }
            ethertype::PBB => {
                self.et = be16(self.b, self.off + pbb::NEXT_TYPE)?;
                self.off += pbb::LEN;
                self.next()
            }
            ethertype::VNTAG | ethertype::ETAG => {
                let len = if self.et == ethertype::VNTAG {
                    extender::VNTAG_LEN
                } else {
                    extender::ETAG_LEN
                };
                self.et = be16(self.b, self.off + len - 2)?;
                self.off += len;
                self.next()
            }
            ethertype::FABRICPATH => {
                self.et = be16(self.b, self.off + fabricpath::NEXT_TYPE)?;
                self.off += fabricpath::LEN;
                self.next()
            }
            ethertype::PPPOE_SESSION => {
                let proto = be16(self.b, self.off + pppoe::PPP_PROTOCOL)?;
                self.off += pppoe::LEN;
                self.et = ppp_to_ethertype(proto)?;
                self.next()
            }
            _ => None,
        }
    }
}

impl ShimWalk<'_> {
    fn ethernet_next(&mut self) -> u16 {
        match be16(self.b, self.off + ethernet::field::TYPE) {
            Some(et) if et > ethernet::MAX_LENGTH => {
                self.off += ethernet::field::LEN;
                et
            }
            _ => 0,
        }
    }
}

/// The link-layer accessors of [`Decoded`](crate::Decoded).
impl<'a> crate::Decoded<'a> {
    /// The link layer proper, after capture meta headers.
    pub fn link(&self) -> LinkLayer<'a> {
        self.link_info().layer(self.data)
    }

    /// The Ethernet header, when the link layer is Ethernet (including ERF Ethernet and
    /// Ethernet inside tunnels).
    pub fn ethernet(&self) -> Option<EthernetHeader<'a>> {
        let l = self.link();
        (l.kind == LinkKind::Ethernet)
            .then(|| EthernetHeader::new_checked(l.bytes).ok())
            .flatten()
    }

    /// The Cisco ISL header, when the link layer is an Ethernet frame inside one (then
    /// [`ethernet`](Self::ethernet) is the encapsulated frame's header, as in tshark).
    pub fn isl(&self) -> Option<IslHeader<'a>> {
        let li = self.link_info();
        if !li.isl {
            return None;
        }
        let at = (li.l2_off as usize).checked_sub(IslHeader::LEN)?;
        IslHeader::new_checked(self.data.get(at..)?)
    }

    /// The RadioTap header fields, for RadioTap captures.
    pub fn radiotap(&self) -> Option<RadioTap> {
        (self.framing == Framing::Link(LinkType::IEEE802_11_RADIOTAP))
            .then(|| RadioTap::parse(self.data))
            .flatten()
    }

    /// The subframes of an 802.11 A-MSDU (a QoS data frame with the A-MSDU-present
    /// bit), if the link layer is one; the decoder's own layers (`layer3()`, `tcp()`,
    /// ...) are those of the first subframe, as
    /// [`AmsduSubframe::decode`](crate::AmsduSubframe::decode) gives them for
    /// the others.
    ///
    /// ```
    /// use tracekit_core::LinkType;
    /// use tracekit_decode::Decoded;
    ///
    /// // QoS data (FC 0x88 0x01), QoS control with bit 7 set, then two subframes:
    /// // DA, SA, length, LLC/SNAP + IPv4 header (padded to 4), and a bare LLC header.
    /// let mut f = vec![0x88, 0x01, 0, 0];
    /// f.extend([2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 3, 0, 0, 0x80, 0]);
    /// f.extend([2, 0, 0, 0, 0, 4, 2, 0, 0, 0, 0, 5, 0, 28]);
    /// f.extend([0xaa, 0xaa, 3, 0, 0, 0, 0x08, 0x00]);
    /// f.extend([0x45, 0, 0, 20, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 0, 0]);
    /// f.extend([2, 0, 0, 0, 0, 6, 2, 0, 0, 0, 0, 7, 0, 3, 0x42, 0x42, 3]);
    /// let d = Decoded::from_bytes(&f, LinkType::IEEE802_11, f.len() as u32);
    /// assert_eq!(d.src_addr().unwrap().to_string(), "10.0.0.1");
    /// let subframes: Vec<_> = d.amsdu().unwrap().collect();
    /// assert_eq!(subframes.len(), 2);
    /// assert_eq!((subframes[1].sa(), subframes[1].msdu()), ([2, 0, 0, 0, 0, 7], &[0x42, 0x42, 3][..]));
    /// ```
    pub fn amsdu(&self) -> Option<AmsduSubframes<'a>> {
        let li = self.link_info();
        if li.kind != LinkKind::Ieee80211 {
            return None;
        }
        // The walk kept the first subframe's end; the frame's is the capture's, less a
        // RadioTap FCS.
        let fcs = self
            .radiotap()
            .and_then(|r| r.flags)
            .is_some_and(|f| f & radiotap::FLAG_FCS != 0);
        let end = if fcs {
            self.data.len().saturating_sub(4)
        } else {
            self.data.len()
        };
        let swapped = self.framing == Framing::Ieee80211SwappedFc;
        match wlan::body(self.data, li.l2_off as usize, end, swapped) {
            Ok(wlan::Body::Amsdu(at)) => Some(AmsduSubframes::new(self.data.get(at..end)?)),
            _ => None,
        }
    }

    /// The VLAN tags, outermost first.
    pub fn vlans(&self) -> impl Iterator<Item = Vlan> + use<'a> {
        vlans(self.data, &self.link_info())
    }

    /// The MPLS label stack, top first.
    pub fn mpls_labels(&self) -> impl Iterator<Item = MplsLabel> + use<'a> {
        mpls_labels(self.data, &self.link_info())
    }

    /// The EtherType of the network layer (0 when the link layer does not name one).
    pub fn ethertype(&self) -> u16 {
        self.link_info().ethertype
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn info(kind: usize, words: [u32; 5], small: [u16; 2], counts: [u8; 2], isl: bool) -> LinkInfo {
        LinkInfo {
            kind: LinkMemo::KINDS[kind],
            l2_off: words[0],
            chain_off: words[1],
            chain_type: small[0],
            l3_off: words[2],
            ethertype: small[1],
            end: words[3],
            vlan_count: counts[0],
            mpls_count: counts[1],
            isl,
        }
    }

    #[test]
    fn every_kind_is_at_its_own_index() {
        for (i, k) in LinkMemo::KINDS.iter().enumerate() {
            assert_eq!(*k as usize, i, "{k:?}");
        }
    }

    proptest! {
        /// Every field of every kind comes back from the memo as it went in.
        #[test]
        fn the_memo_gives_back_what_it_was_given(
            kind in 0..LinkMemo::KINDS.len(),
            words: [u32; 5],
            small: [u16; 2],
            counts: [u8; 2],
            isl: bool,
        ) {
            let li = info(kind, words, small, counts, isl);
            let memo = LinkMemo::default();
            prop_assert!(memo.get().is_none());
            memo.set(&li);
            let back = memo.get().unwrap();
            prop_assert_eq!(format!("{back:?}"), format!("{li:?}"));
        }

        /// The inlined IP-over-Ethernet walk finds what the general walk finds, and
        /// declines every other frame.
        #[test]
        fn the_ethernet_ip_walk_is_the_general_walk(
            et in prop_oneof![
                Just(ethertype::IPV4), Just(ethertype::IPV6), Just(0x8100u16),
                Just(0x0800u16 + 1), Just(0x05dcu16), any::<u16>()
            ],
            len in 0usize..80,
            fill: u8,
        ) {
            let mut b = vec![fill; len];
            if len >= 14 {
                b[12..14].copy_from_slice(&et.to_be_bytes());
            }
            let mut an = Anomalies::NONE;
            let general = walk(&b, Framing::Link(LinkType::ETHERNET), &mut an);
            match ethernet_ip(&b) {
                Some(fast) => {
                    prop_assert!(an.is_empty());
                    prop_assert_eq!(format!("{fast:?}"), format!("{general:?}"));
                }
                None => prop_assert!(
                    len < 14 || (et != ethertype::IPV4 && et != ethertype::IPV6)
                ),
            }
        }
    }
}
