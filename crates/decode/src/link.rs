//! The link-layer walk: capture meta headers, link framing, and the EtherType chain of
//! VLAN tags, MPLS labels and PPPoE down to the network layer.

use tracekit_core::LinkType;

use crate::anomaly::{Anomalies, Anomaly};
use crate::bytes::{be16, le16, le32, u8_at};
use crate::ethernet::{MplsLabel, Vlan, ethertype, ppp_to_ethertype};
use crate::radiotap::{FLAG_FCS, RadioTap, prism_len};

/// Where a decode starts: a capture link type, or (inside tunnels) an EtherType.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// A capture link type (the packet's own).
    Link(LinkType),
    /// Bytes that start with the protocol this EtherType names (GRE and Geneve payloads).
    Ethertype(u16),
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
    pub radiotap: bool,
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

fn family_to_ethertype(af: u32) -> u16 {
    match af {
        2 => ethertype::IPV4,
        10 | 23 | 24 | 28 | 30 => ethertype::IPV6,
        _ => 0,
    }
}

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
        Framing::Link(l) => l,
    };
    match link {
        LinkType::ETHERNET => ethernet(b, 0, li, an),
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
            let Some(raw) = le32(b, 0) else {
                an.insert(Anomaly::LinkTruncated);
                return li;
            };
            let af = if link == LinkType::LOOP || raw & 0xffff == 0 {
                raw.swap_bytes()
            } else {
                raw
            };
            li.l3_off = 4;
            li.ethertype = family_to_ethertype(af);
            li
        }
        LinkType::LINUX_SLL => {
            li.kind = LinkKind::LinuxSll;
            let (Some(hatype), Some(proto)) = (be16(b, 2), be16(b, 14)) else {
                an.insert(Anomaly::LinkTruncated);
                return li;
            };
            if b.len() < 16 {
                an.insert(Anomaly::LinkTruncated);
                return li;
            }
            sll_payload(b, hatype, proto, 16, li, an)
        }
        LinkType::LINUX_SLL2 => {
            li.kind = LinkKind::LinuxSll2;
            let (Some(proto), Some(hatype)) = (be16(b, 0), be16(b, 8)) else {
                an.insert(Anomaly::LinkTruncated);
                return li;
            };
            if b.len() < 20 {
                an.insert(Anomaly::LinkTruncated);
                return li;
            }
            sll_payload(b, hatype, proto, 20, li, an)
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
            match be16(b, 2) {
                Some(et) => chain(b, et, 4, li, an),
                None => {
                    an.insert(Anomaly::LinkTruncated);
                    li
                }
            }
        }
        LinkType::IEEE802_11 => ieee80211(b, 0, li, an),
        LinkType::IEEE802_11_RADIOTAP => {
            let Some(rt) = RadioTap::parse(b) else {
                if b.len() < 8 || le16(b, 2).is_some_and(|l| usize::from(l) > b.len()) {
                    an.insert(Anomaly::MetaTruncated);
                } else {
                    an.insert(Anomaly::MetaBadLength);
                }
                return li;
            };
            li.radiotap = true;
            if rt.flags.is_some_and(|f| f & FLAG_FCS != 0) {
                li.end = li.end.saturating_sub(4).max(u32::from(rt.len));
            }
            ieee80211(b, usize::from(rt.len), li, an)
        }
        LinkType::IEEE802_11_PRISM => match prism_len(b) {
            Some(n) => ieee80211(b, n, li, an),
            None => {
                an.insert(if b.len() < 144 {
                    Anomaly::MetaTruncated
                } else {
                    Anomaly::MetaBadLength
                });
                li
            }
        },
        LinkType::PFLOG => {
            li.kind = LinkKind::Pflog;
            let (Some(hlen), Some(af)) = (u8_at(b, 0), u8_at(b, 1)) else {
                an.insert(Anomaly::MetaTruncated);
                return li;
            };
            let hlen = (usize::from(hlen) + 3) & !3;
            if hlen < 4 {
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
        (824, _) | (_, 0x0001) => {
            li.l3_off = hlen as u32;
            li
        }
        (_, 0x0004) => llc(b, hlen, li, an),
        (778, ethertype::TEB) => ethernet(b, hlen, li, an),
        _ => chain(b, proto, hlen, li, an),
    }
}

pub(crate) fn ethernet(b: &[u8], off: usize, mut li: LinkInfo, an: &mut Anomalies) -> LinkInfo {
    if li.kind == LinkKind::Unknown || li.kind == LinkKind::Ethertype {
        li.kind = LinkKind::Ethernet;
    }
    li.l2_off = off as u32;
    let Some(et) = be16(b, off + 12) else {
        an.insert(Anomaly::LinkTruncated);
        li.l3_off = li.end;
        return li;
    };
    if et <= 1500 {
        // 802.3: the field is a length; LLC follows.
        let end = (off + 14 + usize::from(et)).min(b.len());
        li.end = li.end.min(end as u32);
        return llc(b, off + 14, li, an);
    }
    chain(b, et, off + 14, li, an)
}

fn llc(b: &[u8], off: usize, mut li: LinkInfo, an: &mut Anomalies) -> LinkInfo {
    li.l3_off = off as u32;
    match (u8_at(b, off), u8_at(b, off + 1), u8_at(b, off + 2)) {
        (Some(0xAA), Some(0xAA), Some(0x03)) => match be16(b, off + 6) {
            Some(et) => chain(b, et, off + 8, li, an),
            None => {
                an.insert(Anomaly::LinkTruncated);
                li
            }
        },
        (Some(_), Some(_), Some(_)) => li,
        _ => {
            an.insert(Anomaly::LinkTruncated);
            li
        }
    }
}

fn ppp(b: &[u8], mut off: usize, mut li: LinkInfo, an: &mut Anomalies) -> LinkInfo {
    li.l2_off = off as u32;
    if u8_at(b, off) == Some(0xFF) && u8_at(b, off + 1) == Some(0x03) {
        off += 2;
    }
    let Some(first) = u8_at(b, off) else {
        an.insert(Anomaly::LinkTruncated);
        return li;
    };
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

fn ieee80211(b: &[u8], off: usize, mut li: LinkInfo, an: &mut Anomalies) -> LinkInfo {
    li.kind = LinkKind::Ieee80211;
    li.l2_off = off as u32;
    let (Some(fc0), Some(fc1)) = (u8_at(b, off), u8_at(b, off + 1)) else {
        an.insert(Anomaly::LinkTruncated);
        return li;
    };
    let ftype = (fc0 >> 2) & 3;
    let subtype = fc0 >> 4;
    if ftype != 2 || subtype & 0x4 != 0 || fc1 & 0x40 != 0 {
        // management, control, null data, or protected: no network layer to read
        li.l3_off = li.end;
        return li;
    }
    let mut hlen = 24;
    if fc1 & 3 == 3 {
        hlen += 6;
    }
    if subtype & 0x8 != 0 {
        hlen += 2;
        if fc1 & 0x80 != 0 {
            hlen += 4;
        }
    }
    let l = off + hlen;
    if b.len().min(li.end as usize) < l {
        an.insert(Anomaly::LinkTruncated);
        li.l3_off = li.end;
        return li;
    }
    llc(b, l, li, an)
}

fn nflog(b: &[u8], mut li: LinkInfo, an: &mut Anomalies) -> LinkInfo {
    li.kind = LinkKind::Nflog;
    let Some(family) = u8_at(b, 0) else {
        an.insert(Anomaly::MetaTruncated);
        return li;
    };
    if b.len() < 4 {
        an.insert(Anomaly::MetaTruncated);
        return li;
    }
    let mut off = 4;
    for _ in 0..64 {
        let (Some(len), Some(ty)) = (le16(b, off), le16(b, off + 2)) else {
            break;
        };
        let len = usize::from(len);
        if len < 4 {
            an.insert(Anomaly::MetaBadLength);
            return li;
        }
        if ty & 0x7fff == 9 {
            // NFULA_PAYLOAD
            li.l3_off = (off + 4) as u32;
            li.end = li.end.min((off + len) as u32);
            li.ethertype = match family {
                2 => ethertype::IPV4,
                10 => ethertype::IPV6,
                _ => ip_by_nibble(b, off + 4),
            };
            return li;
        }
        off += (len + 3) & !3;
    }
    li.l3_off = li.end;
    li
}

fn erf(b: &[u8], mut li: LinkInfo, an: &mut Anomalies) -> LinkInfo {
    let (Some(ty), Some(rlen)) = (u8_at(b, 8), be16(b, 10)) else {
        an.insert(Anomaly::MetaTruncated);
        return li;
    };
    if usize::from(rlen) < 16 {
        an.insert(Anomaly::MetaBadLength);
        return li;
    }
    li.end = li.end.min(u32::from(rlen));
    let mut off = 16;
    let mut more = ty & 0x80 != 0;
    while more {
        let Some(h) = u8_at(b, off) else {
            an.insert(Anomaly::MetaTruncated);
            return li;
        };
        more = h & 0x80 != 0;
        off += 8;
    }
    match ty & 0x7f {
        // ETH, COLOR_ETH, DSM_COLOR_ETH: 2 bytes of offset/padding, then the frame.
        2 | 10 | 16 => ethernet(b, off + 2, li, an),
        22 | 23 => {
            li.kind = LinkKind::RawIp;
            li.l2_off = off as u32;
            li.l3_off = off as u32;
            li.ethertype = ip_by_nibble(b, off);
            li
        }
        // HDLC_POS and its colour variants: PPP or Cisco HDLC in 4 bytes.
        1 | 11 | 17 => match (u8_at(b, off), be16(b, off + 2)) {
            (Some(0xFF), Some(_)) => {
                li.kind = LinkKind::Ppp;
                ppp(b, off, li, an)
            }
            (Some(_), Some(et)) => {
                li.kind = LinkKind::CiscoHdlc;
                li.l2_off = off as u32;
                chain(b, et, off + 4, li, an)
            }
            _ => {
                an.insert(Anomaly::LinkTruncated);
                li
            }
        },
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
                let Some(next) = be16(b, off + 2) else {
                    an.insert(Anomaly::VlanTruncated);
                    et = 0;
                    break;
                };
                li.vlan_count += 1;
                et = next;
                off += 4;
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
                    off += 4;
                }
                // The payload type is not signalled: guess from the first nibble, as
                // libtrace and Wireshark do; 0 is a pseudowire control word before Ethernet.
                match u8_at(b, off).map(|v| v >> 4) {
                    Some(4) => et = ethertype::IPV4,
                    Some(6) => et = ethertype::IPV6,
                    Some(0) => {
                        let inner = ethernet(b, off + 4, li, an);
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
                let Some(next) = be16(b, off + 16) else {
                    an.insert(Anomaly::LinkTruncated);
                    et = 0;
                    break;
                };
                et = next;
                off += 18;
            }
            ethertype::PPPOE_SESSION => {
                let Some(proto) = be16(b, off + 6) else {
                    an.insert(Anomaly::PppoeTruncated);
                    et = 0;
                    break;
                };
                off += 8;
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

/// Re-walks the chain for [`crate::Decoded::vlans`] and [`crate::Decoded::mpls_labels`].
#[derive(Clone, Debug)]
pub(crate) struct ShimWalk<'a> {
    pub b: &'a [u8],
    pub et: u16,
    pub off: usize,
    pub steps: u8,
}

/// One shim header met on the way to the network layer.
pub(crate) enum Shim {
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
                let v = Vlan::parse(self.et, self.b, self.off)?;
                self.et = be16(self.b, self.off + 2)?;
                self.off += 4;
                Some(Shim::Vlan(v))
            }
            ethertype::MPLS | ethertype::MPLS_MULTICAST => {
                let l = MplsLabel::parse(self.b, self.off, self.et == ethertype::MPLS_MULTICAST)?;
                self.off += 4;
                if l.bottom {
                    // What follows is guessed; a pseudowire's Ethernet tags are its own.
                    self.et = match u8_at(self.b, self.off).map(|v| v >> 4) {
                        Some(4) => ethertype::IPV4,
                        Some(6) => ethertype::IPV6,
                        Some(0) => {
                            self.off += 4;
                            self.ethernet_next()
                        }
                        _ => self.ethernet_next(),
                    };
                }
                Some(Shim::Mpls(l))
            }
            ethertype::PBB => {
                self.et = be16(self.b, self.off + 16)?;
                self.off += 18;
                self.next()
            }
            ethertype::PPPOE_SESSION => {
                let proto = be16(self.b, self.off + 6)?;
                self.off += 8;
                self.et = ppp_to_ethertype(proto)?;
                self.next()
            }
            _ => None,
        }
    }
}

impl ShimWalk<'_> {
    fn ethernet_next(&mut self) -> u16 {
        match be16(self.b, self.off + 12) {
            Some(et) if et > 1500 => {
                self.off += 14;
                et
            }
            _ => 0,
        }
    }
}
