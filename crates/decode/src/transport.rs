//! The transport layer: which header follows IP, what is wrong with it, and where the
//! application bytes start.

use crate::Decoded;
use crate::anomaly::Anomalies;
use crate::bytes::be16;
use crate::gre::{self, GreHeader};
use crate::icmp::{IcmpHeader, Icmpv6Header};
use crate::net::{L4State, NetInfo, NoTransport};
use crate::sctp::SctpHeader;
use crate::tcp::TcpHeader;
use crate::udp::UdpHeader;

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

impl Transport<'_> {
    /// The transport protocol number.
    pub fn protocol(&self) -> u8 {
        match self {
            Transport::Tcp(_) => ip_proto::TCP,
            Transport::Udp(_) => ip_proto::UDP,
            Transport::Icmp(_) => ip_proto::ICMP,
            Transport::Icmpv6(_) => ip_proto::ICMPV6,
            Transport::Sctp(_) => ip_proto::SCTP,
            Transport::Gre(_) => ip_proto::GRE,
            Transport::Truncated { protocol, .. } | Transport::Other { protocol, .. } => *protocol,
        }
    }

    /// Source and destination port of TCP, UDP and SCTP, also from a header the capture
    /// cut (or an ICMP error quoted) once its first 4 bytes are there, as tshark shows
    /// them; the cut stays an anomaly. (`Decoded::src_port` and the flow key want the
    /// whole header.)
    ///
    /// ```
    /// use tracekit_core::LinkType;
    /// use tracekit_decode::{Decoded, Transport};
    /// // IPv4 TCP whose header the capture cut after 6 bytes: ports 1234 -> 80.
    /// let ip = [0x45, 0, 0, 40, 0, 1, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 4, 0xd2, 0, 80, 0, 0];
    /// let d = Decoded::from_bytes(&ip, LinkType::RAW, 40);
    /// let t = d.transport().unwrap();
    /// assert!(matches!(t, Transport::Truncated { protocol: 6, .. }));
    /// assert_eq!(t.ports(), Some((1234, 80)));
    /// assert_eq!(d.src_port(), None);
    /// ```
    pub fn ports(&self) -> Option<(u16, u16)> {
        match self {
            Transport::Tcp(h) => Some((h.src_port(), h.dst_port())),
            Transport::Udp(h) => Some((h.src_port(), h.dst_port())),
            Transport::Sctp(h) => Some((h.src_port(), h.dst_port())),
            Transport::Truncated { protocol, bytes }
                if matches!(*protocol, ip_proto::TCP | ip_proto::UDP | ip_proto::SCTP) =>
            {
                Some((be16(bytes, SRC_PORT)?, be16(bytes, DST_PORT)?))
            }
            _ => None,
        }
    }
}

/// `Decoded` accessors for one [`Transport`] variant each (the list is in `lib.rs`).
macro_rules! transport_views {
    ($( $(#[$doc:meta])* $name:ident -> $view:ident = $variant:ident; )*) => {
        impl<'a> Decoded<'a> {
            $(
                $(#[$doc])*
                pub fn $name(&self) -> Option<$view<'a>> {
                    match self.transport()? {
                        Transport::$variant(h) => Some(h),
                        _ => None,
                    }
                }
            )*
        }
    };
}

/// Where TCP, UDP and SCTP keep their ports.
pub(crate) const SRC_PORT: usize = 0;
pub(crate) const DST_PORT: usize = 2;

/// The transport layer in `b` (from its header to the end of the usable bytes).
pub(crate) fn classify<'a>(n: &NetInfo, b: &'a [u8], an: &mut Anomalies) -> Transport<'a> {
    let view = match n.proto {
        ip_proto::TCP => tcp(n, b, an).map(Transport::Tcp),
        ip_proto::UDP => an.noted(UdpHeader::new_checked(b)).map(|h| {
            if let Some(a) = h.length_anomaly(n.segment_len(), n.frag.is_some()) {
                an.insert(a);
            }
            Transport::Udp(h)
        }),
        ip_proto::ICMP if n.version == 4 => {
            an.noted(IcmpHeader::new_checked(b)).map(Transport::Icmp)
        }
        ip_proto::ICMPV6 => an
            .noted(Icmpv6Header::new_checked(b))
            .map(Transport::Icmpv6),
        ip_proto::SCTP => an.noted(SctpHeader::new_checked(b)).map(Transport::Sctp),
        ip_proto::GRE => an.noted(gre::in_packet(n, b)).map(Transport::Gre),
        protocol => return Transport::Other { protocol, bytes: b },
    };
    view.unwrap_or(Transport::Truncated {
        protocol: n.proto,
        bytes: b,
    })
}

/// The TCP header in `b`, with what is wrong with its data offset noted; `None` (noted)
/// when the fixed part is missing.
#[inline]
pub(crate) fn tcp<'a>(n: &NetInfo, b: &'a [u8], an: &mut Anomalies) -> Option<TcpHeader<'a>> {
    let h = an.noted(TcpHeader::new_checked(b))?;
    if let Some(a) = h.offset_anomaly(n.segment_len(), b.len()) {
        an.insert(a);
    }
    Some(h)
}

/// A port of TCP, UDP or SCTP (at `at`: [`SRC_PORT`] or [`DST_PORT`]) when their header
/// was captured.
#[inline]
pub(crate) fn port(n: &NetInfo, b: &[u8], at: usize) -> Option<u16> {
    let need = match n.proto {
        ip_proto::TCP => TcpHeader::FIXED_LEN,
        ip_proto::UDP => UdpHeader::LEN,
        ip_proto::SCTP => SctpHeader::LEN,
        _ => return None,
    };
    if b.len() < need {
        return None;
    }
    crate::bytes::be16(b, at)
}

/// Start and end (in the captured bytes) of the application data, if the transport
/// header is complete.
pub(crate) fn payload_range(n: &NetInfo, b: &[u8], an: &mut Anomalies) -> Option<(usize, usize)> {
    let start = n.l4_off as usize;
    let end = n.avail_end as usize;
    let hlen = match n.proto {
        ip_proto::TCP => {
            let hlen = tcp(n, b, an)?.header_len();
            if hlen < TcpHeader::FIXED_LEN {
                return None;
            }
            hlen
        }
        ip_proto::UDP => {
            let h = UdpHeader::new_checked(b).ok()?;
            let end = h.len_within(b.len()).map_or(end, |len| start + len);
            return Some((start + UdpHeader::LEN, end));
        }
        // ICMPv6 messages, like ICMP ones, keep 4 bytes after the checksum before their
        // data (the quoted packet of an error).
        ip_proto::ICMP | ip_proto::ICMPV6 => IcmpHeader::LEN,
        ip_proto::SCTP => SctpHeader::LEN,
        ip_proto::GRE => GreHeader::new_checked(b).ok()?.header_len(),
        _ => 0,
    };
    (start + hlen <= end).then_some((start + hlen, end))
}

/// The length of the application data as the headers declare it, whatever the capture
/// kept (see [`crate::Decoded::payload_wire_len`]); for protocols other than TCP and UDP
/// from where `payload_range` says the data starts.
#[inline]
pub(crate) fn payload_wire_len(
    n: &NetInfo,
    b: &[u8],
    payload_range: impl FnOnce() -> Option<(usize, usize)>,
) -> Option<u32> {
    let seg = n.segment_len();
    let len = match n.proto {
        ip_proto::TCP => {
            let hlen = TcpHeader::new_checked(b).ok()?.header_len();
            (hlen >= TcpHeader::FIXED_LEN).then(|| seg.saturating_sub(hlen))?
        }
        ip_proto::UDP => {
            let h = UdpHeader::new_checked(b).ok()?;
            h.len_within(seg)
                .unwrap_or(seg)
                .saturating_sub(UdpHeader::LEN)
        }
        _ => {
            let (s, _) = payload_range()?;
            (n.declared_end as usize).saturating_sub(s)
        }
    };
    Some(len as u32)
}

/// The transport-layer accessors of [`Decoded`].
impl<'a> Decoded<'a> {
    /// The network walk, and the transport-layer bytes (from the header on, to the end
    /// of the IP packet or of the capture) if the transport header is in this packet.
    #[inline]
    pub(crate) fn l4(&self) -> Option<(NetInfo, &'a [u8])> {
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
        Some(self.noting(|an| classify(&n, b, an)))
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
                    crate::ethertype::IPV4 | crate::ethertype::IPV6 => NoTransport::IpHeaderCut,
                    _ => NoTransport::NotIp,
                },
                6 if n.proto == crate::ipv6::ext::NO_NEXT => NoTransport::NoNextHeader,
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
        self.noting(|an| tcp(&n, b, an))
    }

    /// Source port (TCP, UDP, SCTP), if the transport header was captured.
    #[inline]
    pub fn src_port(&self) -> Option<u16> {
        let (n, b) = self.l4()?;
        port(&n, b, SRC_PORT)
    }

    /// Destination port (TCP, UDP, SCTP), if the transport header was captured.
    #[inline]
    pub fn dst_port(&self) -> Option<u16> {
        let (n, b) = self.l4()?;
        port(&n, b, DST_PORT)
    }

    /// IP protocol, source and destination port (TCP, UDP, SCTP) from one look at the
    /// memo, for the application accessors that choose by port.
    #[inline]
    pub(crate) fn proto_ports(&self) -> Option<(u8, u16, u16)> {
        let (n, b) = self.l4()?;
        Some((n.proto, port(&n, b, SRC_PORT)?, port(&n, b, DST_PORT)?))
    }

    pub(crate) fn payload_range(&self) -> Option<(usize, usize)> {
        let (n, b) = self.l4()?;
        self.noting(|an| payload_range(&n, b, an))
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
        payload_wire_len(&n, b, || self.payload_range())
    }
}
