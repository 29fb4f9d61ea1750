//! Lazy, memoizing, panic-free protocol decoding for tracekit packets.
//!
//! [`Decoded::new`] costs nothing. Each accessor decodes only as far as it needs and
//! remembers where the layers start, so `tcp()` after `layer3()` resumes from the cached
//! network-layer offset. Nothing reads past the captured bytes, and no input panics:
//! truncated and malformed headers are recorded as [`Anomaly`] values (see
//! [`Decoded::anomalies`]) and the accessors for the layers behind them return `None`.
//!
//! - Link layers: Ethernet II and 802.3/LLC/SNAP, 802.1Q/802.1ad/QinQ, MPLS (unicast,
//!   multicast, pseudowire control word), PPPoE, PPP, Cisco HDLC, raw IPv4/IPv6, BSD
//!   NULL/LOOP, Linux SLL and SLL2, 802.11 data frames behind RadioTap or Prism, ERF
//!   records, PFLOG, NFLOG.
//! - IPv4 and IPv6 with the extension-header walk (hop-by-hop, routing, fragment,
//!   destination options, AH; stops at ESP). Non-first fragments have no transport.
//! - TCP (with options), UDP, ICMP, ICMPv6, SCTP, GRE.
//! - Tunnels: IP-in-IP, 6in4, IPv6-in-IPv6, GRE (including Ethernet over GRE), VXLAN,
//!   Geneve, GTP-U. The outer packet stays the default view; [`Decoded::inner`] decodes
//!   the encapsulated one.
//! - DNS ([`dns`]): a zero-copy message view.
//!
//! ```
//! use tracekit_core::{LinkType, Meta, Packet, Timestamp};
//! use tracekit_decode::Decoded;
//!
//! // Ethernet + IPv4 + TCP SYN 10.0.0.1:40000 -> 10.0.0.2:80 with an MSS option.
//! let mut f = vec![0u8; 14 + 20 + 24];
//! f[12] = 0x08;
//! f[14] = 0x45;
//! f[16..18].copy_from_slice(&44u16.to_be_bytes());
//! f[23] = 6;
//! f[26..30].copy_from_slice(&[10, 0, 0, 1]);
//! f[30..34].copy_from_slice(&[10, 0, 0, 2]);
//! f[34..36].copy_from_slice(&40000u16.to_be_bytes());
//! f[36..38].copy_from_slice(&80u16.to_be_bytes());
//! f[46] = 6 << 4;
//! f[47] = 0x02;
//! f[54..58].copy_from_slice(&[2, 4, 0x05, 0xb4]);
//! let p = Packet::new(&f, Meta::new(Timestamp::ZERO, f.len() as u32, LinkType::ETHERNET));
//!
//! let d = Decoded::new(&p);
//! let tcp = d.tcp().unwrap();
//! assert_eq!((d.src_port(), d.dst_port()), (Some(40000), Some(80)));
//! assert!(tcp.syn());
//! assert_eq!(d.src_addr().unwrap().to_string(), "10.0.0.1");
//! use tracekit_decode::TcpOption;
//! assert_eq!(tcp.options().next(), Some(TcpOption::Mss(1460)));
//! assert!(d.anomalies().is_empty());
//! ```

#![forbid(unsafe_code)]

mod anomaly;
mod bytes;
mod checksum;
pub mod dns;
pub mod dump;
mod ethernet;
pub mod fields;
mod flow;
mod gre;
mod icmp;
mod ipv4;
mod ipv6;
mod link;
mod radiotap;
mod sctp;
mod tcp;
mod tunnel;
mod udp;

use std::cell::Cell;
use std::net::IpAddr;

use tracekit_core::{LinkType, Packet};

pub use anomaly::{Anomalies, Anomaly, Layer};
pub use ethernet::{EthernetHeader, MplsLabel, Vlan, ethertype};
pub use flow::FlowKey;
pub use gre::GreHeader;
pub use icmp::{IcmpHeader, Icmpv6Header};
pub use ipv4::{Ipv4Header, OptionIter};
pub use ipv6::{ExtHeader, ExtIter, Ipv6Header, ext as ipv6_ext};
pub use link::{Framing, LinkKind};
pub use radiotap::RadioTap;
pub use sctp::SctpHeader;
pub use tcp::{SackBlocks, TcpHeader, TcpOption, TcpOptions, flags as tcp_flags};
pub use tunnel::TunnelPorts;
pub use udp::UdpHeader;

use bytes::{be16, be32, u8_at};
use link::{LinkInfo, Shim, ShimWalk};
use tunnel::{TunnelError, UdpTunnel};

/// IP protocol numbers the decoder dispatches on.
pub mod ip_proto {
    /// ICMP.
    pub const ICMP: u8 = 1;
    /// IPv4 encapsulation.
    pub const IPIP: u8 = 4;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// IPv6 encapsulation (6in4, IPv6-in-IPv6).
    pub const IPV6: u8 = 41;
    /// GRE.
    pub const GRE: u8 = 47;
    /// ICMPv6.
    pub const ICMPV6: u8 = 58;
    /// SCTP.
    pub const SCTP: u8 = 132;
}

/// How deep [`Decoded::inner`] follows nested tunnels by default.
pub const DEFAULT_MAX_DEPTH: u8 = 8;

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

/// The link layer proper (after capture meta headers).
#[derive(Clone, Copy, Debug)]
pub struct LinkLayer<'a> {
    /// What kind of link it is.
    pub kind: LinkKind,
    /// Its bytes, from the start of the link header to the end of the capture.
    pub bytes: &'a [u8],
}

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

/// The transport layer.
#[derive(Clone, Copy, Debug)]
pub enum Transport<'a> {
    /// TCP.
    Tcp(TcpHeader<'a>),
    /// UDP.
    Udp(UdpHeader<'a>),
    /// ICMP.
    Icmp(IcmpHeader<'a>),
    /// ICMPv6.
    Icmpv6(Icmpv6Header<'a>),
    /// SCTP.
    Sctp(SctpHeader<'a>),
    /// GRE.
    Gre(GreHeader<'a>),
    /// A known protocol whose fixed header was not captured completely.
    Truncated {
        /// The protocol number.
        protocol: u8,
        /// The bytes that were captured.
        bytes: &'a [u8],
    },
    /// Any other protocol (including IP-in-IP and ESP).
    Other {
        /// The protocol number.
        protocol: u8,
        /// The bytes from the transport header on.
        bytes: &'a [u8],
    },
}

/// An encapsulation found in the packet; [`Decoded::inner`] decodes its payload.
#[derive(Clone, Copy, Debug)]
pub enum Tunnel<'a> {
    /// IPv4 or IPv6 directly inside IP (protocol 4 or 41).
    IpInIp {
        /// The outer protocol number (4 or 41).
        protocol: u8,
    },
    /// GRE.
    Gre(GreHeader<'a>),
    /// VXLAN.
    Vxlan {
        /// Network identifier.
        vni: u32,
    },
    /// Geneve.
    Geneve {
        /// Network identifier.
        vni: u32,
        /// Payload EtherType.
        protocol: u16,
    },
    /// GTP-U (G-PDU messages).
    GtpU {
        /// Tunnel endpoint identifier.
        teid: u32,
    },
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum L4State {
    /// No transport header can be reached.
    #[default]
    Absent,
    /// The transport header starts at `l4_off` (possibly truncated).
    Present,
    /// A non-first fragment: the protocol is known, the header is elsewhere.
    Fragment,
}

/// The network walk's result, cached by `Decoded`.
#[derive(Clone, Copy, Debug, Default)]
struct NetInfo {
    /// 0 (no IP), 4 or 6.
    version: u8,
    ip_off: u32,
    l4_off: u32,
    /// Where the IP header says the packet ends (may be past the capture).
    declared_end: u32,
    /// The end of the usable bytes: the declared end clamped to the capture.
    avail_end: u32,
    proto: u8,
    l4: L4State,
    frag: Option<Fragment>,
}

/// A packet being decoded. Cheap to create; see the crate documentation.
#[derive(Clone)]
pub struct Decoded<'a> {
    data: &'a [u8],
    framing: Framing,
    wire_len: u32,
    depth: u8,
    max_depth: u8,
    ports: TunnelPorts,
    link: Cell<Option<LinkInfo>>,
    net: Cell<Option<NetInfo>>,
    anomalies: Cell<Anomalies>,
}

impl<'a> Decoded<'a> {
    /// Starts decoding `packet` (no work is done yet).
    #[inline]
    pub fn new(packet: &Packet<'a>) -> Decoded<'a> {
        Decoded::from_bytes(packet.data(), packet.link_type(), packet.wire_len())
    }

    /// Starts decoding captured bytes of link type `link` that were `wire_len` bytes on
    /// the wire.
    #[inline]
    pub fn from_bytes(data: &'a [u8], link: LinkType, wire_len: u32) -> Decoded<'a> {
        Decoded::with_framing(data, Framing::Link(link), wire_len)
    }

    /// Starts decoding bytes framed as `framing`.
    #[inline]
    pub fn with_framing(data: &'a [u8], framing: Framing, wire_len: u32) -> Decoded<'a> {
        Decoded {
            data,
            framing,
            wire_len: wire_len.max(data.len() as u32),
            depth: 0,
            max_depth: DEFAULT_MAX_DEPTH,
            ports: TunnelPorts::default(),
            link: Cell::new(None),
            net: Cell::new(None),
            anomalies: Cell::new(Anomalies::NONE),
        }
    }

    /// Uses other UDP ports for VXLAN, Geneve and GTP-U (0 disables one).
    pub fn tunnel_ports(mut self, ports: TunnelPorts) -> Decoded<'a> {
        self.ports = ports;
        self
    }

    /// Follows at most `depth` nested tunnels in [`inner`](Self::inner).
    pub fn max_depth(mut self, depth: u8) -> Decoded<'a> {
        self.max_depth = depth;
        self
    }

    /// The captured bytes.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// How these bytes are framed.
    pub fn framing(&self) -> Framing {
        self.framing
    }

    /// How many tunnels this decode is inside (0 for the packet itself).
    pub fn depth(&self) -> u8 {
        self.depth
    }

    fn note(&self, a: Anomaly) {
        let mut s = self.anomalies.get();
        s.insert(a);
        self.anomalies.set(s);
    }

    #[inline]
    fn link_info(&self) -> LinkInfo {
        if let Some(li) = self.link.get() {
            return li;
        }
        self.walk_link()
    }

    fn walk_link(&self) -> LinkInfo {
        let mut an = self.anomalies.get();
        let mut li = link::walk(self.data, self.framing, &mut an);
        li.end = li.end.min(self.data.len() as u32);
        li.l3_off = li.l3_off.min(li.end);
        self.anomalies.set(an);
        self.link.set(Some(li));
        li
    }

    /// The link layer proper, after capture meta headers.
    pub fn link(&self) -> LinkLayer<'a> {
        let li = self.link_info();
        let bytes = self
            .data
            .get(li.l2_off as usize..li.end as usize)
            .unwrap_or(&[]);
        LinkLayer {
            kind: li.kind,
            bytes,
        }
    }

    /// The Ethernet header, when the link layer is Ethernet (including ERF Ethernet and
    /// Ethernet inside tunnels).
    pub fn ethernet(&self) -> Option<EthernetHeader<'a>> {
        let l = self.link();
        match l.kind {
            LinkKind::Ethernet => EthernetHeader::new_checked(l.bytes),
            _ => None,
        }
    }

    /// The RadioTap header fields, for RadioTap captures.
    pub fn radiotap(&self) -> Option<RadioTap> {
        if self.framing != Framing::Link(LinkType::IEEE802_11_RADIOTAP) {
            return None;
        }
        RadioTap::parse(self.data)
    }

    fn shims(&self) -> ShimWalk<'a> {
        let li = self.link_info();
        ShimWalk {
            b: self.data,
            et: li.chain_type,
            off: li.chain_off as usize,
            steps: 0,
        }
    }

    /// The VLAN tags, outermost first.
    pub fn vlans(&self) -> impl Iterator<Item = Vlan> + use<'a> {
        let walk = if self.link_info().vlan_count == 0 {
            None
        } else {
            Some(self.shims())
        };
        walk.into_iter().flatten().filter_map(|s| match s {
            Shim::Vlan(v) => Some(v),
            Shim::Mpls(_) => None,
        })
    }

    /// The MPLS label stack, top first.
    pub fn mpls_labels(&self) -> impl Iterator<Item = MplsLabel> + use<'a> {
        let walk = if self.link_info().mpls_count == 0 {
            None
        } else {
            Some(self.shims())
        };
        walk.into_iter().flatten().filter_map(|s| match s {
            Shim::Mpls(l) => Some(l),
            Shim::Vlan(_) => None,
        })
    }

    /// The EtherType of the network layer (0 when the link layer does not name one).
    pub fn ethertype(&self) -> u16 {
        self.link_info().ethertype
    }

    /// The network layer, if the link layer leads to one.
    pub fn layer3(&self) -> Option<Layer3<'a>> {
        let li = self.link_info();
        let bytes = self.data.get(li.l3_off as usize..li.end as usize)?;
        match li.ethertype {
            ethertype::IPV4 => self.ipv4().map(Layer3::Ipv4),
            ethertype::IPV6 => self.ipv6().map(Layer3::Ipv6),
            ethertype::ARP => Some(Layer3::Arp(bytes)),
            _ if bytes.is_empty() && li.ethertype == 0 => None,
            et => Some(Layer3::Other {
                ethertype: et,
                bytes,
            }),
        }
    }

    #[inline]
    fn net(&self) -> NetInfo {
        if let Some(n) = self.net.get() {
            return n;
        }
        self.walk_net()
    }

    fn walk_net(&self) -> NetInfo {
        let li = self.link_info();
        let n = match li.ethertype {
            ethertype::IPV4 => self.walk_ipv4(&li),
            ethertype::IPV6 => self.walk_ipv6(&li),
            _ => NetInfo::default(),
        };
        self.net.set(Some(n));
        n
    }

    /// Bytes on the wire from `off` on (the capture may have cut them).
    fn wire_from(&self, off: usize) -> usize {
        (self.wire_len as usize).saturating_sub(off)
    }

    fn walk_ipv4(&self, li: &LinkInfo) -> NetInfo {
        let off = li.l3_off as usize;
        let end = li.end as usize;
        let b = &self.data[..end];
        let mut n = NetInfo {
            ip_off: off as u32,
            ..NetInfo::default()
        };
        let Some(ip) = b.get(off..) else { return n };
        if ip.len() < Ipv4Header::FIXED_LEN {
            self.note(Anomaly::Ipv4Truncated);
            return n;
        }
        if ip[0] >> 4 != 4 {
            self.note(Anomaly::Ipv4BadVersion);
            return n;
        }
        let hlen = usize::from(ip[0] & 0xf) * 4;
        if hlen < 20 {
            self.note(Anomaly::Ipv4BadIhl);
            return n;
        }
        n.version = 4;
        n.proto = ip[9];
        let total = usize::from(ipv4::total_len(ip).unwrap_or(0));
        let declared = if total == 0 {
            // TSO/LRO captures leave the length 0: the frame is the packet.
            ip.len().max(self.wire_from(off).min(usize::from(u16::MAX)))
        } else {
            total
        };
        if total != 0 && total < hlen {
            self.note(Anomaly::Ipv4BadTotalLength);
            return n;
        }
        if declared > self.wire_from(off) {
            self.note(Anomaly::Ipv4LengthBeyondFrame);
        }
        n.declared_end = (off + declared) as u32;
        n.avail_end = (off + declared).min(end) as u32;
        let ff = u16::from_be_bytes([ip[6], ip[7]]);
        let frag_off = (ff & 0x1fff) << 3;
        let more = ff & 0x2000 != 0;
        if more || frag_off != 0 {
            n.frag = Some(Fragment {
                id: u32::from(u16::from_be_bytes([ip[4], ip[5]])),
                offset: frag_off,
                more,
            });
        }
        if hlen > ip.len() {
            self.note(Anomaly::Ipv4OptionsTruncated);
            return n;
        }
        if hlen > 20 {
            let mut opts = OptionIter {
                bytes: &ip[20..hlen],
                overrun: false,
            };
            for _ in opts.by_ref() {}
            if opts.overran() {
                self.note(Anomaly::Ipv4OptionOverrun);
            }
        }
        n.l4_off = (off + hlen) as u32;
        n.l4 = if frag_off != 0 {
            L4State::Fragment
        } else {
            L4State::Present
        };
        if n.avail_end < n.l4_off {
            n.avail_end = n.l4_off;
        }
        n
    }

    fn walk_ipv6(&self, li: &LinkInfo) -> NetInfo {
        let off = li.l3_off as usize;
        let end = li.end as usize;
        let b = &self.data[..end];
        let mut n = NetInfo {
            ip_off: off as u32,
            ..NetInfo::default()
        };
        let Some(ip) = b.get(off..) else { return n };
        if ip.len() < Ipv6Header::LEN {
            self.note(Anomaly::Ipv6Truncated);
            return n;
        }
        if ip[0] >> 4 != 6 {
            self.note(Anomaly::Ipv6BadVersion);
            return n;
        }
        n.version = 6;
        let plen = usize::from(u16::from_be_bytes([ip[4], ip[5]]));
        let mut nh = ip[6];
        let declared = if plen == 0 && nh == ipv6::ext::HOP_BY_HOP {
            // jumbogram: the length is in an option; take the frame
            ip.len().max(self.wire_from(off))
        } else {
            40 + plen
        };
        if declared > self.wire_from(off) {
            self.note(Anomaly::Ipv6BadPayloadLength);
        }
        n.declared_end = (off + declared) as u32;
        let avail = (off + declared).min(end);
        n.avail_end = avail as u32;
        let mut cur = off + 40;
        let mut count = 0u8;
        let mut state = L4State::Present;
        while ipv6::is_extension(nh) {
            if count == ipv6::MAX_EXT {
                self.note(Anomaly::Ipv6TooManyExt);
                state = L4State::Absent;
                break;
            }
            if nh == ipv6::ext::HOP_BY_HOP && count > 0 {
                self.note(Anomaly::Ipv6HopByHopNotFirst);
            }
            let (Some(len), Some(next)) = (ipv6::ext_len(nh, b, cur), u8_at(b, cur)) else {
                self.note(self.ext_cut(cur + 2, off + declared));
                state = L4State::Absent;
                break;
            };
            if cur + len > end.min(off + declared) {
                self.note(self.ext_cut(cur + len, off + declared));
                state = L4State::Absent;
                break;
            }
            if nh == ipv6::ext::FRAGMENT {
                let ff = be16(b, cur + 2).unwrap_or(0);
                let f = Fragment {
                    id: be32(b, cur + 4).unwrap_or(0),
                    offset: ff & 0xfff8,
                    more: ff & 1 != 0,
                };
                n.frag = Some(f);
                if f.offset == 0 && !f.more {
                    self.note(Anomaly::FragmentUseless);
                }
                if f.offset != 0 {
                    state = L4State::Fragment;
                }
            }
            nh = next;
            cur += len;
            count += 1;
            if state == L4State::Fragment {
                break;
            }
        }
        n.proto = nh;
        if state != L4State::Absent && nh != ipv6::ext::NO_NEXT {
            n.l4_off = cur as u32;
            n.l4 = state;
        }
        if n.avail_end < n.l4_off {
            n.avail_end = n.l4_off;
        }
        n
    }

    /// Whether an extension header that needs bytes up to `need` was cut by the capture
    /// or overruns the payload length.
    fn ext_cut(&self, need: usize, declared_end: usize) -> Anomaly {
        if need > declared_end {
            Anomaly::Ipv6ExtOverrun
        } else {
            Anomaly::Ipv6ExtTruncated
        }
    }

    /// The IPv4 header, if the network layer is IPv4 and its fixed part was captured.
    pub fn ipv4(&self) -> Option<Ipv4Header<'a>> {
        let n = self.net();
        if n.version != 4 {
            return None;
        }
        Ipv4Header::new_checked(&self.data[n.ip_off as usize..])
    }

    /// The IPv6 header, if the network layer is IPv6 and it was captured.
    pub fn ipv6(&self) -> Option<Ipv6Header<'a>> {
        let n = self.net();
        if n.version != 6 {
            return None;
        }
        Ipv6Header::new_checked(&self.data[n.ip_off as usize..])
    }

    /// The IP version (4 or 6), if the network layer is IP and its header was captured.
    pub fn ip_version(&self) -> Option<u8> {
        let v = self.net().version;
        (v != 0).then_some(v)
    }

    /// The transport protocol number after IPv6 extension headers (also for non-first
    /// fragments).
    pub fn ip_protocol(&self) -> Option<u8> {
        let n = self.net();
        (n.version != 0).then_some(n.proto)
    }

    /// Fragment information: for IPv4 when the packet is a fragment, for IPv6 whenever a
    /// fragment header is present.
    pub fn fragment(&self) -> Option<Fragment> {
        self.net().frag
    }

    /// Source IP address.
    pub fn src_addr(&self) -> Option<IpAddr> {
        match self.net().version {
            4 => self.ipv4().map(|h| IpAddr::V4(h.src())),
            6 => self.ipv6().map(|h| IpAddr::V6(h.src())),
            _ => None,
        }
    }

    /// Destination IP address.
    pub fn dst_addr(&self) -> Option<IpAddr> {
        match self.net().version {
            4 => self.ipv4().map(|h| IpAddr::V4(h.dst())),
            6 => self.ipv6().map(|h| IpAddr::V6(h.dst())),
            _ => None,
        }
    }

    /// The transport-layer bytes (from the header on, to the end of the IP packet or of
    /// the capture), if the transport header is in this packet.
    #[inline]
    fn l4_bytes(&self, n: &NetInfo) -> Option<&'a [u8]> {
        if n.l4 != L4State::Present {
            return None;
        }
        self.data.get(n.l4_off as usize..n.avail_end as usize)
    }

    /// The transport layer, if the network layer leads to one (not for non-first
    /// fragments).
    pub fn transport(&self) -> Option<Transport<'a>> {
        let n = self.net();
        let b = self.l4_bytes(&n)?;
        let t = match n.proto {
            ip_proto::TCP => {
                return Some(self.tcp_checked(&n, b).map_or(
                    Transport::Truncated {
                        protocol: 6,
                        bytes: b,
                    },
                    Transport::Tcp,
                ));
            }
            ip_proto::UDP => match UdpHeader::new_checked(b) {
                Some(h) => {
                    let len = usize::from(h.length());
                    // A first fragment carries only part of the datagram its length covers.
                    let seg = (n.declared_end - n.l4_off) as usize;
                    if len < 8 || (len > seg && n.frag.is_none()) {
                        self.note(Anomaly::UdpBadLength);
                    }
                    Transport::Udp(h)
                }
                None => {
                    self.note(Anomaly::UdpTruncated);
                    Transport::Truncated {
                        protocol: n.proto,
                        bytes: b,
                    }
                }
            },
            ip_proto::ICMP if n.version == 4 => self.or_truncated(
                IcmpHeader::new_checked(b),
                Transport::Icmp,
                Anomaly::IcmpTruncated,
                n.proto,
                b,
            ),
            ip_proto::ICMPV6 => self.or_truncated(
                Icmpv6Header::new_checked(b),
                Transport::Icmpv6,
                Anomaly::Icmpv6Truncated,
                n.proto,
                b,
            ),
            ip_proto::SCTP => self.or_truncated(
                SctpHeader::new_checked(b),
                Transport::Sctp,
                Anomaly::SctpTruncated,
                n.proto,
                b,
            ),
            ip_proto::GRE => match GreHeader::parse(b) {
                Ok(h) => Transport::Gre(h),
                Err(e) => {
                    self.note(match e {
                        gre::GreError::Truncated => Anomaly::GreTruncated,
                        gre::GreError::BadVersion => Anomaly::GreBadVersion,
                    });
                    Transport::Truncated {
                        protocol: n.proto,
                        bytes: b,
                    }
                }
            },
            p => Transport::Other {
                protocol: p,
                bytes: b,
            },
        };
        Some(t)
    }

    /// `wrap(view)`, or (noting `anomaly`) the truncated transport when the view is missing.
    fn or_truncated<T>(
        &self,
        view: Option<T>,
        wrap: fn(T) -> Transport<'a>,
        anomaly: Anomaly,
        protocol: u8,
        bytes: &'a [u8],
    ) -> Transport<'a> {
        match view {
            Some(h) => wrap(h),
            None => {
                self.note(anomaly);
                Transport::Truncated { protocol, bytes }
            }
        }
    }

    /// Checks a TCP header, recording anomalies; `None` when the fixed part is missing.
    #[inline]
    fn tcp_checked(&self, n: &NetInfo, b: &'a [u8]) -> Option<TcpHeader<'a>> {
        let Some(h) = TcpHeader::new_checked(b) else {
            self.note(Anomaly::TcpTruncated);
            return None;
        };
        let hlen = h.header_len();
        if hlen < TcpHeader::FIXED_LEN {
            self.note(Anomaly::TcpDataOffsetTooSmall);
        } else if hlen > (n.declared_end - n.l4_off) as usize {
            self.note(Anomaly::TcpDataOffsetBeyondSegment);
        } else if hlen > b.len() {
            self.note(Anomaly::TcpOptionsTruncated);
        }
        Some(h)
    }

    /// The TCP header, if this is a TCP packet (first fragment or unfragmented) with its
    /// fixed header captured.
    #[inline]
    pub fn tcp(&self) -> Option<TcpHeader<'a>> {
        let n = self.net();
        if n.proto != ip_proto::TCP {
            return None;
        }
        let b = self.l4_bytes(&n)?;
        self.tcp_checked(&n, b)
    }

    /// The UDP header, if this is a UDP packet with its header captured.
    pub fn udp(&self) -> Option<UdpHeader<'a>> {
        match self.transport()? {
            Transport::Udp(h) => Some(h),
            _ => None,
        }
    }

    /// The ICMP header.
    pub fn icmp(&self) -> Option<IcmpHeader<'a>> {
        match self.transport()? {
            Transport::Icmp(h) => Some(h),
            _ => None,
        }
    }

    /// The ICMPv6 header.
    pub fn icmpv6(&self) -> Option<Icmpv6Header<'a>> {
        match self.transport()? {
            Transport::Icmpv6(h) => Some(h),
            _ => None,
        }
    }

    /// The SCTP common header.
    pub fn sctp(&self) -> Option<SctpHeader<'a>> {
        match self.transport()? {
            Transport::Sctp(h) => Some(h),
            _ => None,
        }
    }

    /// The GRE header.
    pub fn gre(&self) -> Option<GreHeader<'a>> {
        match self.transport()? {
            Transport::Gre(h) => Some(h),
            _ => None,
        }
    }

    /// Source port (TCP, UDP, SCTP), if the transport header was captured.
    #[inline]
    pub fn src_port(&self) -> Option<u16> {
        self.port(0)
    }

    /// Destination port (TCP, UDP, SCTP), if the transport header was captured.
    #[inline]
    pub fn dst_port(&self) -> Option<u16> {
        self.port(2)
    }

    #[inline]
    fn port(&self, at: usize) -> Option<u16> {
        let n = self.net();
        if !matches!(n.proto, ip_proto::TCP | ip_proto::UDP | ip_proto::SCTP) {
            return None;
        }
        let b = self.l4_bytes(&n)?;
        let need = match n.proto {
            ip_proto::TCP => TcpHeader::FIXED_LEN,
            ip_proto::UDP => UdpHeader::LEN,
            _ => SctpHeader::LEN,
        };
        if b.len() < need {
            return None;
        }
        be16(b, at)
    }

    /// Start and end of the application bytes, if the transport header is complete.
    fn payload_range(&self) -> Option<(usize, usize)> {
        let n = self.net();
        let b = self.l4_bytes(&n)?;
        let start = n.l4_off as usize;
        let end = n.avail_end as usize;
        let hlen = match n.proto {
            ip_proto::TCP => {
                let h = self.tcp_checked(&n, b)?;
                let hlen = h.header_len();
                if hlen < TcpHeader::FIXED_LEN {
                    return None;
                }
                hlen
            }
            ip_proto::UDP => {
                let h = UdpHeader::new_checked(b)?;
                let len = usize::from(h.length());
                let end = if (8..=b.len()).contains(&len) {
                    start + len
                } else {
                    end
                };
                return Some((start + 8, end));
            }
            ip_proto::ICMP | ip_proto::ICMPV6 => 8,
            ip_proto::SCTP => SctpHeader::LEN,
            ip_proto::GRE => GreHeader::parse(b).ok()?.header_len(),
            _ => 0,
        };
        (start + hlen <= end).then_some((start + hlen, end))
    }

    /// The application bytes after the transport header (clamped to the IP packet and
    /// to the capture), if the transport header was captured completely.
    pub fn payload(&self) -> Option<&'a [u8]> {
        let (s, e) = self.payload_range()?;
        self.data.get(s..e)
    }

    /// The length of the application data as the headers declare it (IP length minus
    /// IP and transport headers; for UDP the UDP length), whatever the capture kept.
    pub fn payload_wire_len(&self) -> Option<u32> {
        let n = self.net();
        let b = self.l4_bytes(&n)?;
        let seg = n.declared_end.saturating_sub(n.l4_off);
        match n.proto {
            ip_proto::TCP => {
                let h = TcpHeader::new_checked(b)?;
                (h.header_len() >= 20).then(|| seg.saturating_sub(h.header_len() as u32))
            }
            ip_proto::UDP => {
                let h = UdpHeader::new_checked(b)?;
                let len = u32::from(h.length());
                Some(if (8..=seg).contains(&len) {
                    len - 8
                } else {
                    seg.saturating_sub(8)
                })
            }
            _ => {
                let (s, _) = self.payload_range()?;
                Some(n.declared_end.saturating_sub(s as u32))
            }
        }
    }

    /// The 5-tuple, if the packet is IP (ports 0 where there are none).
    pub fn flow_key(&self) -> Option<FlowKey> {
        Some(FlowKey {
            src: self.src_addr()?,
            dst: self.dst_addr()?,
            src_port: self.src_port().unwrap_or(0),
            dst_port: self.dst_port().unwrap_or(0),
            protocol: self.net().proto,
        })
    }

    /// A hash of the flow equal for both directions, if the packet is IP.
    pub fn symmetric_flow_hash(&self) -> Option<u64> {
        self.flow_key().map(|k| k.symmetric_hash())
    }

    /// The tunnel this packet carries, with the offset of its payload and its framing.
    fn tunnel_at(&self) -> Option<(Tunnel<'a>, usize, Framing)> {
        let n = self.net();
        let b = self.l4_bytes(&n)?;
        let l4 = n.l4_off as usize;
        match n.proto {
            ip_proto::IPIP | ip_proto::IPV6 => Some((
                Tunnel::IpInIp { protocol: n.proto },
                l4,
                Framing::Link(LinkType::RAW),
            )),
            ip_proto::GRE => {
                let h = self.gre()?;
                let framing = Framing::Ethertype(h.protocol());
                Some((Tunnel::Gre(h), l4 + h.header_len(), framing))
            }
            ip_proto::UDP => {
                let h = UdpHeader::new_checked(b)?;
                let (sp, dp) = (h.src_port(), h.dst_port());
                let on = |p: u16| p != 0 && (sp == p || dp == p);
                let body = b.get(8..)?;
                let found = if on(self.ports.vxlan) {
                    tunnel::vxlan(body)
                } else if on(self.ports.geneve) {
                    tunnel::geneve(body)
                } else if on(self.ports.gtpu) {
                    tunnel::gtpu(body)
                } else {
                    return None;
                };
                let t = match found {
                    Ok(t) => t,
                    Err(TunnelError::Truncated) => {
                        self.note(Anomaly::TunnelTruncated);
                        return None;
                    }
                    Err(TunnelError::Malformed) => {
                        self.note(Anomaly::TunnelMalformed);
                        return None;
                    }
                    Err(TunnelError::NotData) => return None,
                };
                let start = l4 + 8;
                Some(match t {
                    UdpTunnel::Vxlan { vni, len } => (
                        Tunnel::Vxlan { vni },
                        start + len,
                        Framing::Ethertype(ethertype::TEB),
                    ),
                    UdpTunnel::Geneve { vni, protocol, len } => (
                        Tunnel::Geneve { vni, protocol },
                        start + len,
                        Framing::Ethertype(protocol),
                    ),
                    UdpTunnel::GtpU { teid, len } => (
                        Tunnel::GtpU { teid },
                        start + len,
                        Framing::Link(LinkType::RAW),
                    ),
                })
            }
            _ => None,
        }
    }

    /// The tunnel this packet carries, if any.
    pub fn tunnel(&self) -> Option<Tunnel<'a>> {
        self.tunnel_at().map(|t| t.0)
    }

    /// A decode of the encapsulated packet, if this packet carries a tunnel and the depth
    /// limit allows. The inner decode has its own anomalies.
    pub fn inner(&self) -> Option<Decoded<'a>> {
        let (_, off, framing) = self.tunnel_at()?;
        if self.depth >= self.max_depth {
            self.note(Anomaly::TunnelTooDeep);
            return None;
        }
        let n = self.net();
        let data = self.data.get(off..n.avail_end as usize)?;
        let mut d = Decoded::with_framing(data, framing, n.declared_end.saturating_sub(off as u32));
        d.depth = self.depth + 1;
        d.max_depth = self.max_depth;
        d.ports = self.ports;
        Some(d)
    }

    /// Decodes every layer (following tunnels) and returns what was found truncated or
    /// malformed, here and in the encapsulated packets.
    pub fn anomalies(&self) -> Anomalies {
        // The inner decode first: being too deep is noted here.
        let inner = self.inner().map(|d| d.anomalies()).unwrap_or_default();
        self.level_anomalies().union(inner)
    }

    /// Decodes every layer of this packet (not inside its tunnels, though a tunnel
    /// header's own damage counts) and returns what was found truncated or malformed.
    pub fn level_anomalies(&self) -> Anomalies {
        let _ = self.net();
        // Options cut by the capture are a truncation (already noted), not an overrun.
        if let Some(t) = self.transport()
            && let Transport::Tcp(h) = t
            && h.header_len() <= self.l4_bytes(&self.net()).map_or(0, <[u8]>::len)
        {
            let mut opts = h.options();
            for _ in opts.by_ref() {}
            if opts.overran() {
                self.note(Anomaly::TcpOptionOverrun);
            }
        }
        let _ = self.payload_range();
        let _ = self.tunnel_at();
        self.anomalies.get()
    }

    /// The DNS message, for UDP port 53 (and mDNS 5353, LLMNR 5355) on either side and
    /// TCP port 53 segments that start a message.
    pub fn dns(&self) -> Option<dns::Message<'a>> {
        let (sp, dp) = (self.src_port()?, self.dst_port()?);
        let payload = self.payload()?;
        match self.net().proto {
            ip_proto::UDP if [53, 5353, 5355].iter().any(|p| *p == sp || *p == dp) => {
                dns::Message::new(payload)
            }
            ip_proto::TCP if sp == 53 || dp == 53 => {
                let len = usize::from(be16(payload, 0)?);
                let body = payload.get(2..)?;
                (len >= dns::Message::HEADER_LEN).then_some(())?;
                dns::Message::new(body)
            }
            _ => None,
        }
    }
}
