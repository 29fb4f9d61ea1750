//! Lazy, memoizing, panic-free protocol decoding for tracekit packets.
//!
//! [`Decoded::new`] costs nothing. Each accessor decodes only as far as it needs and
//! remembers where the layers start, so `tcp()` after `layer3()` resumes from the cached
//! network-layer offset. Nothing reads past the captured bytes, and no input panics:
//! truncated and malformed headers are recorded as [`Anomaly`] values (see
//! [`Decoded::anomalies`]) and the accessors for the layers behind them return `None`.
//!
//! - Link layers: Ethernet II and 802.3/LLC/SNAP, 802.1Q/802.1ad/QinQ, MPLS (unicast,
//!   multicast, pseudowire control word), PPPoE, PPP, Cisco HDLC, Cisco ISL, FabricPath,
//!   VN-Tag and E-Tag, raw IPv4/IPv6, BSD NULL/LOOP, Linux SLL and SLL2, 802.11 data
//!   frames (A-MSDUs through their first subframe) behind RadioTap or Prism, ERF
//!   records, PFLOG, NFLOG.
//! - IPv4 and IPv6 with the extension-header walk (hop-by-hop, routing, fragment,
//!   destination options, AH; stops at ESP). Non-first fragments have no transport.
//! - TCP (with options), UDP, ICMP, ICMPv6, SCTP, GRE (with RFC 1701 source routes).
//! - Tunnels: IP-in-IP, 6in4, IPv6-in-IPv6, GRE (including Ethernet over GRE and
//!   Aruba's 802.11 over GRE), VXLAN, Geneve, GTP-U, CAPWAP (data, control, DTLS; first
//!   fragments decoded as far as they go) and LWAPP. The outer packet stays the default view; [`Decoded::inner`] decodes
//!   the encapsulated one.
//! - DNS ([`dns`]): a zero-copy message view.
//!
//! ```
//! use tracekit_core::{LinkType, Meta, Packet, Timestamp};
//! use tracekit_decode::Decoded;
//!
//! // Ethernet + IPv4 + TCP SYN 10.0.0.1:40000 -> 10.0.0.2:80 with an MSS option, as it
//! // would come out of any capture (or any byte slice: the decoder needs no tracekit reader).
//! let f: [u8; 58] = [
//!     2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00, // Ethernet: dst, src, IPv4
//!     0x45, 0, 0, 44, 0, 1, 0x40, 0, 64, 6, 0x26, 0xc9, // IPv4: 44 bytes, DF, TTL 64, TCP
//!     10, 0, 0, 1, 10, 0, 0, 2, //                          source, destination
//!     0x9c, 0x40, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, //         TCP: ports, seq, ack
//!     0x60, 0x02, 0xff, 0xff, 0, 0, 0, 0, //                24-byte header, SYN, window
//!     2, 4, 0x05, 0xb4, //                                  MSS 1460
//! ];
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
#![deny(missing_docs)]

mod anomaly;
mod app;
mod bytes;
mod checksum;
pub mod dhcp;
pub mod dns;
pub mod dump;
mod ethernet;
pub mod fields;
mod flow;
mod gre;
pub mod gtp;
pub mod http;
mod icmp;
mod ip_view;
mod ipv4;
mod ipv6;
mod isl;
mod link;
mod net;
pub mod ntp;
pub mod quic;
mod radiotap;
mod sctp;
mod tcp;
pub mod text;
pub mod tls;
#[macro_use]
mod transport;
mod tunnel;
mod udp;
mod wlan;

use std::cell::Cell;
use std::net::IpAddr;

use tracekit_core::{LinkType, Packet};

pub use anomaly::{Anomalies, Anomaly, Layer};
pub use ethernet::{EthernetHeader, MplsLabel, Vlan, ethertype};
pub use flow::{FlowKey, address_pair_hash};
pub use gre::{GreHeader, SourceRoute, SourceRoutes};
pub use icmp::{IcmpHeader, Icmpv6Header};
pub use ip_view::IpView;
pub use ipv4::{Ipv4Header, OptionIter};
pub use ipv6::{ExtHeader, ExtIter, Ipv6Header, ext as ipv6_ext};
pub use isl::IslHeader;
pub use link::{Framing, LinkKind, LinkLayer};
pub use net::{Fragment, Layer3, NoTransport};
pub use radiotap::RadioTap;
pub use sctp::SctpHeader;
pub use tcp::{SackBlocks, TcpHeader, TcpOption, TcpOptions, flags as tcp_flags};
pub use transport::{Transport, ip_proto};
pub use tunnel::{Tunnel, TunnelFragment, TunnelPorts};
pub use udp::UdpHeader;
pub use wlan::{AmsduSubframe, AmsduSubframes};

use link::LinkInfo;
use net::{L4State, NetInfo};

transport_views! {
    /// The UDP header, if this is a UDP packet with its header captured.
    udp -> UdpHeader = Udp;
    /// The ICMP header.
    icmp -> IcmpHeader = Icmp;
    /// The ICMPv6 header.
    icmpv6 -> Icmpv6Header = Icmpv6;
    /// The SCTP common header.
    sctp -> SctpHeader = Sctp;
    /// The GRE header.
    gre -> GreHeader = Gre;
}

/// How deep [`Decoded::inner`] follows nested tunnels by default.
pub const DEFAULT_MAX_DEPTH: u8 = 8;

/// A packet being decoded. Cheap to create; see the crate documentation.
#[derive(Clone)]
pub struct Decoded<'a> {
    data: &'a [u8],
    framing: Framing,
    wire_len: u32,
    depth: u8,
    max_depth: u8,
    ports: TunnelPorts,
    link: link::LinkMemo,
    net: net::NetMemo,
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
            link: link::LinkMemo::default(),
            net: net::NetMemo::default(),
            anomalies: Cell::new(Anomalies::NONE),
        }
    }

    /// Uses other UDP ports for VXLAN, Geneve, GTP-U, CAPWAP and LWAPP (0 disables one).
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

    /// Runs `f`, keeping the anomalies it finds. (It starts from an empty set so that
    /// the usual case, nothing found, costs a test rather than a load and a store.)
    #[inline]
    fn noting<T>(&self, f: impl FnOnce(&mut Anomalies) -> T) -> T {
        let mut found = Anomalies::NONE;
        let r = f(&mut found);
        if !found.is_empty() {
            self.anomalies.set(self.anomalies.get().union(found));
        }
        r
    }

    #[inline]
    fn link_info(&self) -> LinkInfo {
        match self.link.get() {
            Some(li) => li,
            None => {
                self.walk_link();
                self.link.get().unwrap_or_default()
            }
        }
    }

    // Returns nothing, for the reason `walk_net` gives: the memo's words are stored from
    // registers and read back whole. IP over Ethernet is walked here; any other frame by
    // a call that stores its own result (a result merged with the call's would go
    // through memory again).
    #[inline(never)]
    fn walk_link(&self) {
        if self.framing == Framing::Link(LinkType::ETHERNET)
            && let Some(li) = link::ethernet_ip(self.data)
        {
            self.link.set(&li);
            return;
        }
        self.walk_other_link();
    }

    #[inline(never)]
    fn walk_other_link(&self) {
        let li = self.noting(|an| link::walk(self.data, self.framing, an));
        self.link.set(&li);
    }

    /// The network layer, if the link layer leads to one.
    pub fn layer3(&self) -> Option<Layer3<'a>> {
        let li = self.link_info();
        let bytes = self.data.get(li.l3_off as usize..li.end as usize)?;
        match li.ethertype {
            ethertype::IPV4 => self.ipv4().map(Layer3::Ipv4),
            ethertype::IPV6 => self.ipv6().map(Layer3::Ipv6),
            ethertype::ARP => Some(Layer3::Arp(bytes)),
            0 if bytes.is_empty() => None,
            ethertype => Some(Layer3::Other { ethertype, bytes }),
        }
    }

    #[inline]
    fn net(&self) -> NetInfo {
        match self.net.get() {
            Some(n) => n,
            None => {
                self.walk_net();
                self.net.get().unwrap_or_default()
            }
        }
    }

    // Returns nothing: a returned `NetInfo` was built in the caller's memory and read
    // back from there in 16-byte pieces for the memo, pieces no single store had
    // written, so each load waited for the stores (a third of its samples in T5).
    // Stored from registers instead, the memo's words are read back whole.
    #[inline(never)]
    fn walk_net(&self) {
        let li = self.link_info();
        let n = self.noting(|an| net::walk(self.data, &li, self.wire_len, an));
        self.net.set(&n);
    }

    /// Where the network layer starts in the captured bytes, if the link layer leads to
    /// one (for tools that rewrite headers in place, such as address anonymisation).
    pub fn layer3_offset(&self) -> Option<usize> {
        let li = self.link_info();
        ((li.l3_off as usize) < self.data.len()).then_some(li.l3_off as usize)
    }

    /// Where the transport header starts in the captured bytes, with its protocol
    /// number, if it is in this packet (not for non-first fragments).
    pub fn transport_offset(&self) -> Option<(usize, u8)> {
        let n = self.net();
        (n.l4 == L4State::Present).then_some((n.l4_off as usize, n.proto))
    }

    /// The IPv4 header, if the network layer is IPv4 and its fixed part was captured.
    pub fn ipv4(&self) -> Option<Ipv4Header<'a>> {
        let n = self.net();
        (n.version == 4)
            .then(|| Ipv4Header::new_checked(self.data.get(n.ip_off as usize..)?).ok())
            .flatten()
    }

    /// The IPv6 header, if the network layer is IPv6 and it was captured.
    pub fn ipv6(&self) -> Option<Ipv6Header<'a>> {
        let n = self.net();
        (n.version == 6)
            .then(|| Ipv6Header::new_checked(self.data.get(n.ip_off as usize..)?).ok())
            .flatten()
    }

    /// The IP version (4 or 6), if the network layer is IP and its header was captured.
    pub fn ip_version(&self) -> Option<u8> {
        let v = self.net().version;
        (v != 0).then_some(v)
    }

    /// Where the IP header starts in [`data`](Self::data), if the network layer is IP
    /// (for IP reassembly, which rebuilds a packet around it).
    pub fn ip_offset(&self) -> Option<usize> {
        let n = self.net();
        (n.version != 0).then_some(n.ip_off as usize)
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

    /// The 5-tuple, if the packet is IP and its ports are known: `None` for non-first
    /// fragments and for TCP, UDP and SCTP packets whose ports the capture cut, so that
    /// a flow table never lumps those under port 0. Protocols without ports (ICMP, GRE,
    /// ESP, ...) have ports 0.
    pub fn flow_key(&self) -> Option<FlowKey> {
        FlowKey::of(self)
    }

    /// A hash of the address pair and protocol, equal for both directions and for every
    /// fragment of a datagram, if the packet is IP (see [`address_pair_hash`]).
    pub fn address_pair_hash(&self) -> Option<u64> {
        let bits = |a: std::net::IpAddr| match a {
            std::net::IpAddr::V4(v4) => u128::from(u32::from(v4)),
            std::net::IpAddr::V6(v6) => u128::from(v6),
        };
        Some(address_pair_hash(
            bits(self.src_addr()?),
            bits(self.dst_addr()?),
            self.ip_protocol()?,
        ))
    }

    /// A hash of the flow equal for both directions, if the packet is IP.
    pub fn symmetric_flow_hash(&self) -> Option<u64> {
        self.flow_key().map(|k| k.symmetric_hash())
    }

    fn tunnel_at(&self) -> Option<tunnel::Found<'a>> {
        let (n, b) = self.l4()?;
        self.noting(|an| tunnel::find(&n, b, self.ports, an))
    }

    /// The tunnel this packet carries, if any.
    pub fn tunnel(&self) -> Option<Tunnel<'a>> {
        self.tunnel_at().map(|t| t.tunnel)
    }

    /// A decode of the encapsulated packet, if this packet carries a tunnel and the depth
    /// limit allows. The inner decode has its own anomalies.
    pub fn inner(&self) -> Option<Decoded<'a>> {
        let found = self.tunnel_at()?;
        let (off, framing) = found.inner?;
        if self.depth >= self.max_depth {
            self.noting(|an| an.insert(Anomaly::TunnelTooDeep));
            return None;
        }
        let n = self.net();
        let data = self.data.get(off..n.avail_end as usize)?;
        // A first fragment's frame goes on in other packets: its length is not known.
        let wire_len = if found.first_fragment {
            u32::MAX
        } else {
            n.declared_end.saturating_sub(off as u32)
        };
        let mut d = Decoded::with_framing(data, framing, wire_len);
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
        if let Some(Transport::Tcp(h)) = self.transport()
            && let Some(a) = h.options_anomaly()
        {
            self.noting(|an| an.insert(a));
        }
        let _ = self.payload_range();
        let _ = self.tunnel_at();
        if let Some(a) = self.dns_damage() {
            self.noting(|an| an.insert(a));
        }
        self.anomalies.get()
    }
}
