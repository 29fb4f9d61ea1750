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
        self.link.get().unwrap_or_else(|| self.walk_link())
    }

    // Inlined into the first accessor: the walk's arguments then come from the registers
    // the packet was just read into, not loaded back from the `Decoded` just stored
    // (such a reload waited on the stores: the hottest instruction of a T2/T5 profile).
    #[inline]
    fn walk_link(&self) -> LinkInfo {
        let li = self.noting(|an| link::walk(self.data, self.framing, an));
        self.link.set(Some(li));
        li
    }

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
    /// ...) are those of the first subframe, as [`AmsduSubframe::decode`] gives them for
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
        link::vlans(self.data, &self.link_info())
    }

    /// The MPLS label stack, top first.
    pub fn mpls_labels(&self) -> impl Iterator<Item = MplsLabel> + use<'a> {
        link::mpls_labels(self.data, &self.link_info())
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
            0 if bytes.is_empty() => None,
            ethertype => Some(Layer3::Other { ethertype, bytes }),
        }
    }

    #[inline]
    fn net(&self) -> NetInfo {
        self.net.get().unwrap_or_else(|| self.walk_net())
    }

    #[inline]
    fn walk_net(&self) -> NetInfo {
        let li = self.link_info();
        let n = self.noting(|an| net::walk(self.data, &li, self.wire_len, an));
        self.net.set(Some(n));
        n
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

    /// The network walk, and the transport-layer bytes (from the header on, to the end
    /// of the IP packet or of the capture) if the transport header is in this packet.
    #[inline]
    fn l4(&self) -> Option<(NetInfo, &'a [u8])> {
        let n = self.net();
        if n.l4 != L4State::Present {
            return None;
        }
        Some((n, self.data.get(n.l4_off as usize..n.avail_end as usize)?))
    }

    /// The transport layer, if the network layer leads to one (not for non-first
    /// fragments); [`Decoded::no_transport`] says why when there is none. A header cut
    /// by the capture is [`Transport::Truncated`].
    pub fn transport(&self) -> Option<Transport<'a>> {
        let (n, b) = self.l4()?;
        Some(self.noting(|an| transport::classify(&n, b, an)))
    }

    /// Why [`Decoded::transport`] is `None`: `None` when the packet has a transport layer.
    ///
    /// ```
    /// use tracekit_core::{LinkType, Meta, Packet, Timestamp};
    /// use tracekit_decode::{Decoded, NoTransport};
    ///
    /// // IPv4 (raw IP link type), UDP, fragment offset 185 (1,480 bytes), 20 data bytes.
    /// let mut ip = vec![0x45, 0, 0, 40, 0, 1, 0, 185, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
    /// ip.extend([0u8; 20]);
    /// let packet = Packet::new(&ip, Meta::new(Timestamp::ZERO, 40, LinkType::RAW));
    /// let d = Decoded::new(&packet);
    /// assert!(d.transport().is_none());
    /// assert_eq!(d.no_transport(), Some(NoTransport::NonFirstFragment));
    /// assert_eq!(d.fragment_payload_len(), Some(20));
    /// assert_eq!(d.flow_key(), None); // no ports to key on: not lumped under port 0
    /// ```
    pub fn no_transport(&self) -> Option<NoTransport> {
        let n = self.net();
        match n.l4 {
            L4State::Present => None,
            L4State::Fragment => Some(NoTransport::NonFirstFragment),
            L4State::Absent => Some(match n.version {
                0 => match self.link_info().ethertype {
                    ethertype::IPV4 | ethertype::IPV6 => NoTransport::IpHeaderCut,
                    _ => NoTransport::NotIp,
                },
                6 if n.proto == ipv6::ext::NO_NEXT => NoTransport::NoNextHeader,
                _ => NoTransport::ExtensionHeadersCut,
            }),
        }
    }

    /// The bytes of the datagram this fragment carries, as its IP header declares them
    /// (captured or not; after the IPv6 fragment header), if the packet is a fragment
    /// whose headers were captured. For a first fragment that includes the transport
    /// header.
    pub fn fragment_payload_len(&self) -> Option<u32> {
        let n = self.net();
        n.frag?;
        (n.l4 != L4State::Absent).then(|| n.segment_len() as u32)
    }

    /// The TCP header, if this is a TCP packet (first fragment or unfragmented) with its
    /// fixed header captured.
    #[inline]
    pub fn tcp(&self) -> Option<TcpHeader<'a>> {
        let (n, b) = self.l4()?;
        if n.proto != ip_proto::TCP {
            return None;
        }
        self.noting(|an| transport::tcp(&n, b, an))
    }

    /// Source port (TCP, UDP, SCTP), if the transport header was captured.
    #[inline]
    pub fn src_port(&self) -> Option<u16> {
        let (n, b) = self.l4()?;
        transport::port(&n, b, transport::SRC_PORT)
    }

    /// Destination port (TCP, UDP, SCTP), if the transport header was captured.
    #[inline]
    pub fn dst_port(&self) -> Option<u16> {
        let (n, b) = self.l4()?;
        transport::port(&n, b, transport::DST_PORT)
    }

    fn payload_range(&self) -> Option<(usize, usize)> {
        let (n, b) = self.l4()?;
        self.noting(|an| transport::payload_range(&n, b, an))
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
        let (n, b) = self.l4()?;
        transport::payload_wire_len(&n, b, || self.payload_range())
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

    /// What is wrong with the DNS message this packet carries, if it carries one.
    fn dns_damage(&self) -> Option<Anomaly> {
        let (sp, dp) = (self.src_port()?, self.dst_port()?);
        let payload = self.payload()?;
        let cut = self
            .payload_wire_len()
            .is_some_and(|len| len as usize > payload.len());
        dns::damage_in_transport(self.net().proto, sp, dp, payload, cut)
    }

    /// The DNS message, for UDP port 53 (and mDNS 5353, LLMNR 5355) on either side and
    /// TCP port 53 segments that start a message.
    pub fn dns(&self) -> Option<dns::Message<'a>> {
        let (sp, dp) = (self.src_port()?, self.dst_port()?);
        dns::in_transport(self.net().proto, sp, dp, self.payload()?)
    }

    /// The HTTP/1.x head that starts a TCP payload (any port: recognised by its start
    /// line) or an SSDP datagram: see [`http`].
    pub fn http(&self) -> Option<http::Head<'a>> {
        let (sp, dp) = (self.src_port()?, self.dst_port()?);
        http::in_transport(self.net().proto, sp, dp, self.payload()?)
    }

    /// The NTP header of a UDP datagram to or from port 123 (see [`ntp`]).
    pub fn ntp(&self) -> Option<ntp::NtpHeader<'a>> {
        let (sp, dp) = (self.src_port()?, self.dst_port()?);
        ntp::in_transport(self.net().proto, sp, dp, self.payload()?)
    }

    /// The DHCP/BOOTP message of a UDP datagram on ports 67, 68 or 4011 (see [`dhcp`]).
    pub fn dhcp(&self) -> Option<dhcp::DhcpMessage<'a>> {
        let (sp, dp) = (self.src_port()?, self.dst_port()?);
        dhcp::in_transport(self.net().proto, sp, dp, self.payload()?)
    }

    /// The QUIC long-header packets a UDP datagram starts with (any port: recognised by
    /// the header form and a known version, as tshark's QUIC heuristic does; see
    /// [`quic`]). `None` when the first is not one.
    pub fn quic(&self) -> Option<quic::LongHeaders<'a>> {
        if self.net().proto != ip_proto::UDP {
            return None;
        }
        self.udp()?;
        let headers = quic::long_headers(self.payload()?);
        headers.clone().next()?;
        Some(headers)
    }

    /// The GTPv1 header of a UDP datagram on ports 2123 or 2152 (see [`gtp`]).
    pub fn gtp(&self) -> Option<gtp::GtpHeader<'a>> {
        let (sp, dp) = (self.src_port()?, self.dst_port()?);
        gtp::in_transport(self.net().proto, sp, dp, self.payload()?)
    }
}
