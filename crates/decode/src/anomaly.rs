//! What the decoder found truncated or malformed: a closed set of names that tools count.

use std::fmt;

/// The protocol layer an [`Anomaly`] belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layer {
    /// Capture meta headers (RadioTap, Prism, SLL, ERF, PFLOG, NFLOG) and link framing.
    Link,
    /// 802.1Q/802.1ad tags, MPLS labels, PPPoE.
    Shim,
    /// IPv4 or IPv6, with IPv6 extension headers.
    Network,
    /// TCP, UDP, ICMP, ICMPv6, SCTP.
    Transport,
    /// GRE, VXLAN, Geneve, GTP-U, CAPWAP, LWAPP and the nesting of tunnels.
    Tunnel,
    /// Application messages the decoder reads: DNS.
    Application,
}

macro_rules! anomalies {
    ($( $(#[$doc:meta])* $name:ident = $bit:literal, $layer:ident, $trunc:literal, $text:literal; )*) => {
        /// One thing the decoder found wrong with a packet.
        ///
        /// Truncations (`is_truncation()`) mean the capture ended inside a header, which is
        /// normal with a snap length; the others mean the bytes contradict themselves.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum Anomaly {
            $( $(#[$doc])* $name = $bit, )*
        }

        impl Anomaly {
            /// Every anomaly, in bit order.
            pub const ALL: &'static [Anomaly] = &[$(Anomaly::$name,)*];

            /// The layer it belongs to.
            pub fn layer(self) -> Layer {
                match self { $(Anomaly::$name => Layer::$layer,)* }
            }

            /// Whether the capture simply ended inside a header (rather than the bytes
            /// being contradictory).
            pub fn is_truncation(self) -> bool {
                match self { $(Anomaly::$name => $trunc,)* }
            }

            /// A stable snake_case name, for counting and JSON.
            pub fn name(self) -> &'static str {
                match self { $(Anomaly::$name => $text,)* }
            }
        }
    };
}

anomalies! {
    /// The link-layer header (Ethernet, SLL, 802.11, PPP, NULL, ...) was cut by the capture.
    LinkTruncated = 0, Link, true, "link_truncated";
    /// A capture meta header (RadioTap, Prism, PFLOG, NFLOG, ERF) was cut by the capture.
    MetaTruncated = 1, Link, true, "meta_truncated";
    /// A capture meta header's length field points outside the packet or below its fixed part.
    MetaBadLength = 2, Link, false, "meta_bad_length";
    /// An 802.1Q/802.1ad tag was cut by the capture.
    VlanTruncated = 3, Shim, true, "vlan_truncated";
    /// More stacked VLAN tags than the decoder follows (8).
    VlanTooDeep = 4, Shim, false, "vlan_too_deep";
    /// An MPLS label stack entry was cut by the capture.
    MplsTruncated = 5, Shim, true, "mpls_truncated";
    /// More MPLS labels than the decoder follows (16) without a bottom of stack.
    MplsTooDeep = 6, Shim, false, "mpls_too_deep";
    /// The PPPoE session header or its PPP protocol field was cut by the capture.
    PppoeTruncated = 7, Shim, true, "pppoe_truncated";
    /// Fewer than 20 bytes of IPv4 header were captured.
    Ipv4Truncated = 8, Network, true, "ipv4_truncated";
    /// The version nibble of an IPv4 packet (by EtherType) is not 4.
    Ipv4BadVersion = 9, Network, false, "ipv4_bad_version";
    /// IPv4 IHL below 5.
    Ipv4BadIhl = 10, Network, false, "ipv4_bad_ihl";
    /// IPv4 options (IHL above 5) were cut by the capture.
    Ipv4OptionsTruncated = 11, Network, true, "ipv4_options_truncated";
    /// IPv4 total length smaller than the header.
    Ipv4BadTotalLength = 12, Network, false, "ipv4_bad_total_length";
    /// IPv4 total length larger than the frame on the wire.
    Ipv4LengthBeyondFrame = 13, Network, false, "ipv4_length_beyond_frame";
    /// An IPv4 option's length runs past the header, or is below 2.
    Ipv4OptionOverrun = 14, Network, false, "ipv4_option_overrun";
    /// Fewer than 40 bytes of IPv6 header were captured.
    Ipv6Truncated = 15, Network, true, "ipv6_truncated";
    /// The version nibble of an IPv6 packet (by EtherType) is not 6.
    Ipv6BadVersion = 16, Network, false, "ipv6_bad_version";
    /// IPv6 payload length larger than the frame on the wire.
    Ipv6BadPayloadLength = 17, Network, false, "ipv6_bad_payload_length";
    /// An IPv6 extension header was cut by the capture.
    Ipv6ExtTruncated = 18, Network, true, "ipv6_ext_truncated";
    /// An IPv6 extension header runs past the payload length.
    Ipv6ExtOverrun = 19, Network, false, "ipv6_ext_overrun";
    /// More IPv6 extension headers than the decoder follows (16).
    Ipv6TooManyExt = 20, Network, false, "ipv6_too_many_ext";
    /// A hop-by-hop options header that is not the first extension header.
    Ipv6HopByHopNotFirst = 21, Network, false, "ipv6_hop_by_hop_not_first";
    /// An IPv6 fragment header with offset zero and no more-fragments flag (an atomic
    /// fragment, RFC 6946: legal, but a header that fragments nothing).
    FragmentUseless = 22, Network, false, "fragment_useless";
    /// Fewer than 20 bytes of TCP header were captured.
    TcpTruncated = 23, Transport, true, "tcp_truncated";
    /// TCP data offset below 5.
    TcpDataOffsetTooSmall = 24, Transport, false, "tcp_data_offset_too_small";
    /// TCP options (data offset above 5) were cut by the capture.
    TcpOptionsTruncated = 25, Transport, true, "tcp_options_truncated";
    /// TCP data offset beyond the segment length given by the IP header.
    TcpDataOffsetBeyondSegment = 26, Transport, false, "tcp_data_offset_beyond_segment";
    /// A TCP option's length runs past the header, is below 2, or is wrong for its kind.
    TcpOptionOverrun = 27, Transport, false, "tcp_option_overrun";
    /// Fewer than 8 bytes of UDP header were captured.
    UdpTruncated = 28, Transport, true, "udp_truncated";
    /// UDP length below 8 or beyond the IP payload.
    UdpBadLength = 29, Transport, false, "udp_bad_length";
    /// Fewer than the 8 bytes of ICMP header were captured.
    IcmpTruncated = 30, Transport, true, "icmp_truncated";
    /// Fewer than 4 bytes of ICMPv6 header were captured.
    Icmpv6Truncated = 31, Transport, true, "icmpv6_truncated";
    /// Fewer than 12 bytes of SCTP common header were captured.
    SctpTruncated = 32, Transport, true, "sctp_truncated";
    /// The GRE header (with its optional fields) was cut by the capture.
    GreTruncated = 33, Tunnel, true, "gre_truncated";
    /// GRE version other than 0 and 1, or a version 1 header without a key.
    GreBadVersion = 34, Tunnel, false, "gre_bad_version";
    /// A VXLAN, Geneve, GTP-U, CAPWAP or LWAPP header was cut by the capture.
    TunnelTruncated = 35, Tunnel, true, "tunnel_truncated";
    /// A VXLAN, Geneve or GTP-U header with a wrong version or flags, or a CAPWAP header
    /// length below its fixed part.
    TunnelMalformed = 36, Tunnel, false, "tunnel_malformed";
    /// Tunnels nested deeper than the configured limit.
    TunnelTooDeep = 37, Tunnel, false, "tunnel_too_deep";
    /// A GRE routing field (RFC 1701, the R bit) whose source route entries run past the
    /// packet without the NULL entry (address family 0, length 0) that ends them.
    GreRoutingUnterminated = 38, Tunnel, false, "gre_routing_unterminated";
    /// A DNS message (by port) that the capture cut inside its header or a question or
    /// record the header counts.
    DnsTruncated = 39, Application, true, "dns_truncated";
    /// A DNS message (by port) shorter than its header, with fewer questions or records
    /// than the header counts, a name that does not decode (a pointer loop, a label
    /// running past the message, a bad label type, more than 255 bytes), or record data
    /// that does not fit its type.
    DnsMalformed = 40, Application, false, "dns_malformed";
    /// A tunnel (CAPWAP) carries one fragment of the encapsulated frame: the decoder does
    /// not reassemble, so a first fragment's frame is decoded as far as its bytes go (as
    /// if the capture had cut it) and later fragments not at all.
    TunnelFragment = 41, Tunnel, true, "tunnel_fragment";
}

impl fmt::Display for Anomaly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of [`Anomaly`] values (a bit set: copying it is free).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Anomalies(u64);

impl Anomalies {
    /// The empty set.
    pub const NONE: Anomalies = Anomalies(0);

    /// Adds `a`.
    #[inline]
    pub fn insert(&mut self, a: Anomaly) {
        self.0 |= 1 << a as u8;
    }

    /// Whether `a` is in the set.
    #[inline]
    pub fn contains(self, a: Anomaly) -> bool {
        self.0 & (1 << a as u8) != 0
    }

    /// Whether the set is empty.
    #[inline]
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The number of anomalies.
    pub fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    /// Whether any anomaly is a malformation rather than a truncation.
    pub fn any_malformed(self) -> bool {
        self.iter().any(|a| !a.is_truncation())
    }

    /// The anomalies, in bit order.
    pub fn iter(self) -> impl Iterator<Item = Anomaly> {
        Anomaly::ALL
            .iter()
            .copied()
            .filter(move |a| self.contains(*a))
    }

    #[inline]
    pub(crate) fn union(self, other: Anomalies) -> Anomalies {
        Anomalies(self.0 | other.0)
    }

    /// The view a check returned, or `None` with the check's reason added to the set.
    #[inline]
    pub(crate) fn noted<T>(&mut self, checked: Result<T, Anomaly>) -> Option<T> {
        match checked {
            Ok(v) => Some(v),
            Err(a) => {
                self.insert(a);
                None
            }
        }
    }
}

impl fmt::Debug for Anomalies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_are_distinct_and_dense() {
        for (i, a) in Anomaly::ALL.iter().enumerate() {
            assert_eq!(*a as usize, i, "{a}");
        }
        assert!(Anomaly::ALL.len() <= 64);
        let mut s = Anomalies::NONE;
        s.insert(Anomaly::TcpTruncated);
        s.insert(Anomaly::LinkTruncated);
        assert_eq!(
            s.iter().collect::<Vec<_>>(),
            [Anomaly::LinkTruncated, Anomaly::TcpTruncated]
        );
        assert!(!s.any_malformed());
        s.insert(Anomaly::Ipv4BadIhl);
        assert!(s.any_malformed());
    }
}
