//! A packet builder for tests, examples and traffic generators.
//!
//! Layers are pushed in wire order: Ethernet, 802.1Q/802.1ad tags, MPLS labels, IPv4 or
//! IPv6 (with extension headers), TCP, UDP, ICMP or ICMPv6, and raw bytes anywhere. The
//! builder fills in what follows from the layers themselves: each type field (ethertype,
//! IP protocol, next header) names the next layer, each length covers everything after
//! its header, MPLS's bottom-of-stack bit is set on the last label, and the IPv4 header,
//! TCP, UDP, ICMP and ICMPv6 checksums are computed. Any of those fields can be set by
//! hand instead, for tests about damaged packets.
//!
//! A builder holds its layers inline (at most [`MAX_LAYERS`]) and borrows payloads, so
//! describing a packet allocates nothing; [`PacketBuilder::build_into`] writes into a
//! buffer the caller reuses.
//!
//! ```
//! use tracekit_testdata::builder::{Ethernet, Ipv4, PacketBuilder, Tcp, tcp_flags};
//!
//! let frame = PacketBuilder::new()
//!     .ethernet(Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]))
//!     .ipv4(Ipv4::new([10, 0, 0, 1], [10, 0, 0, 2]).ttl(63))
//!     .tcp(Tcp::new(40000, 80).flags(tcp_flags::SYN).mss(1460))
//!     .payload(b"hi")
//!     .build();
//! assert_eq!(frame.len(), 14 + 20 + 24 + 2);
//! assert_eq!(&frame[12..14], &[0x08, 0x00]); // IPv4, because an IPv4 layer follows
//! assert_eq!(&frame[16..18], &46u16.to_be_bytes()); // IPv4 total length
//! assert_eq!(frame[23], 6); // TCP
//! ```
//!
//! Checksums cover the bytes as built; pseudo-headers take the addresses of the nearest
//! IP layer before the transport header and the real length of what follows it. Lengths
//! larger than 65,535 bytes are not supported.

/// The most layers one [`PacketBuilder`] holds (raw payloads count as layers).
pub const MAX_LAYERS: usize = 16;

/// TCP flag bits, for [`Tcp::flags`].
pub mod tcp_flags {
    /// No more data from the sender.
    pub const FIN: u8 = 0x01;
    /// Synchronize sequence numbers.
    pub const SYN: u8 = 0x02;
    /// Reset the connection.
    pub const RST: u8 = 0x04;
    /// Push.
    pub const PSH: u8 = 0x08;
    /// The acknowledgment number is significant.
    pub const ACK: u8 = 0x10;
    /// The urgent pointer is significant.
    pub const URG: u8 = 0x20;
    /// ECN echo.
    pub const ECE: u8 = 0x40;
    /// Congestion window reduced.
    pub const CWR: u8 = 0x80;
}

/// Byte ranges of the fields the builder fills in after writing a header (relative to
/// the header's start).
mod field {
    use std::ops::Range;

    pub const IPV4_TOTAL_LEN: Range<usize> = 2..4;
    pub const IPV4_CHECKSUM: Range<usize> = 10..12;
    pub const IPV6_PAYLOAD_LEN: Range<usize> = 4..6;
    pub const TCP_CHECKSUM: Range<usize> = 16..18;
    pub const UDP_LENGTH: Range<usize> = 4..6;
    pub const UDP_CHECKSUM: Range<usize> = 6..8;
    pub const ICMP_CHECKSUM: Range<usize> = 2..4;
}

/// An Ethernet II header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ethernet {
    src: [u8; 6],
    dst: [u8; 6],
    ethertype: Option<u16>,
}

impl Ethernet {
    /// A header from `src` to `dst` (written destination first, as on the wire).
    pub fn new(src: [u8; 6], dst: [u8; 6]) -> Ethernet {
        Ethernet {
            src,
            dst,
            ethertype: None,
        }
    }

    /// Writes `ethertype` (or an 802.3 length) instead of the type of the next layer;
    /// needed when raw bytes or nothing follow.
    pub fn ethertype(mut self, ethertype: u16) -> Ethernet {
        self.ethertype = Some(ethertype);
        self
    }
}

/// An 802.1Q (customer) or 802.1ad (service) VLAN tag. Its TPID is written by the
/// layer before it, as on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vlan {
    tpid: u16,
    pcp: u8,
    dei: bool,
    id: u16,
    ethertype: Option<u16>,
}

impl Vlan {
    /// An 802.1Q tag (TPID 0x8100) for VLAN `id` (12 bits).
    pub fn new(id: u16) -> Vlan {
        Vlan {
            tpid: 0x8100,
            pcp: 0,
            dei: false,
            id: id & 0x0fff,
            ethertype: None,
        }
    }

    /// An 802.1ad service tag (TPID 0x88a8), the outer tag of QinQ.
    pub fn service(id: u16) -> Vlan {
        Vlan::new(id).tpid(0x88a8)
    }

    /// Another TPID (e.g. the old QinQ 0x9100).
    pub fn tpid(mut self, tpid: u16) -> Vlan {
        self.tpid = tpid;
        self
    }

    /// The priority code point (3 bits).
    pub fn pcp(mut self, pcp: u8) -> Vlan {
        self.pcp = pcp & 7;
        self
    }

    /// Sets the drop-eligible indicator.
    pub fn dei(mut self) -> Vlan {
        self.dei = true;
        self
    }

    /// Writes `ethertype` instead of the type of the next layer.
    pub fn ethertype(mut self, ethertype: u16) -> Vlan {
        self.ethertype = Some(ethertype);
        self
    }

    fn tci(&self) -> u16 {
        u16::from(self.pcp) << 13 | u16::from(self.dei) << 12 | self.id
    }
}

/// One MPLS label stack entry. The bottom-of-stack bit is set when no label follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mpls {
    label: u32,
    tc: u8,
    ttl: u8,
    bottom: Option<bool>,
}

impl Mpls {
    /// Label `label` (20 bits), traffic class 0, TTL 64.
    pub fn new(label: u32) -> Mpls {
        Mpls {
            label: label & 0xf_ffff,
            tc: 0,
            ttl: 64,
            bottom: None,
        }
    }

    /// The traffic class (3 bits).
    pub fn tc(mut self, tc: u8) -> Mpls {
        self.tc = tc & 7;
        self
    }

    /// The TTL.
    pub fn ttl(mut self, ttl: u8) -> Mpls {
        self.ttl = ttl;
        self
    }

    /// Sets the bottom-of-stack bit to `bottom` whatever follows.
    pub fn bottom(mut self, bottom: bool) -> Mpls {
        self.bottom = Some(bottom);
        self
    }
}

/// An IPv4 header. Defaults: TTL 64, identification 0, no flags, DSCP and ECN 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4<'a> {
    src: [u8; 4],
    dst: [u8; 4],
    dscp: u8,
    ecn: u8,
    id: u16,
    dont_fragment: bool,
    more_fragments: bool,
    fragment_offset: u16,
    ttl: u8,
    protocol: Option<u8>,
    options: &'a [u8],
    version: u8,
    ihl: Option<u8>,
    total_len: Option<u16>,
    checksum: Option<u16>,
}

impl<'a> Ipv4<'a> {
    /// A header from `src` to `dst`.
    pub fn new(src: [u8; 4], dst: [u8; 4]) -> Ipv4<'a> {
        Ipv4 {
            src,
            dst,
            dscp: 0,
            ecn: 0,
            id: 0,
            dont_fragment: false,
            more_fragments: false,
            fragment_offset: 0,
            ttl: 64,
            protocol: None,
            options: &[],
            version: 4,
            ihl: None,
            total_len: None,
            checksum: None,
        }
    }

    /// The identification field.
    pub fn id(mut self, id: u16) -> Ipv4<'a> {
        self.id = id;
        self
    }

    /// The TTL.
    pub fn ttl(mut self, ttl: u8) -> Ipv4<'a> {
        self.ttl = ttl;
        self
    }

    /// The DSCP (6 bits).
    pub fn dscp(mut self, dscp: u8) -> Ipv4<'a> {
        self.dscp = dscp & 0x3f;
        self
    }

    /// The ECN bits (2 bits).
    pub fn ecn(mut self, ecn: u8) -> Ipv4<'a> {
        self.ecn = ecn & 3;
        self
    }

    /// Sets the don't-fragment flag.
    pub fn dont_fragment(mut self) -> Ipv4<'a> {
        self.dont_fragment = true;
        self
    }

    /// Makes this a fragment at `offset` bytes (a multiple of 8) into its datagram, with
    /// the more-fragments flag `more`.
    ///
    /// # Panics
    /// If `offset` is not a multiple of 8 or does not fit the 13-bit field.
    pub fn fragment(mut self, offset: u16, more: bool) -> Ipv4<'a> {
        assert!(
            offset.is_multiple_of(8),
            "IPv4 fragment offset {offset} is not a multiple of 8"
        );
        self.fragment_offset = offset / 8;
        self.more_fragments = more;
        self
    }

    /// Writes `protocol` instead of the protocol of the next layer; needed when raw
    /// bytes follow.
    pub fn protocol(mut self, protocol: u8) -> Ipv4<'a> {
        self.protocol = Some(protocol);
        self
    }

    /// Options, padded with zeros (end of option list) to a multiple of 4 bytes.
    ///
    /// # Panics
    /// When the packet is built, if the padded options exceed 40 bytes.
    pub fn options(mut self, options: &'a [u8]) -> Ipv4<'a> {
        self.options = options;
        self
    }

    /// Damage: the version field (normally 4).
    pub fn version(mut self, version: u8) -> Ipv4<'a> {
        self.version = version & 0xf;
        self
    }

    /// Damage: the header length field, in 32-bit words, instead of the real one.
    pub fn ihl(mut self, words: u8) -> Ipv4<'a> {
        self.ihl = Some(words & 0xf);
        self
    }

    /// Damage: the total length field instead of the real one.
    pub fn total_len(mut self, len: u16) -> Ipv4<'a> {
        self.total_len = Some(len);
        self
    }

    /// Damage: the header checksum instead of the computed one.
    pub fn checksum(mut self, checksum: u16) -> Ipv4<'a> {
        self.checksum = Some(checksum);
        self
    }

    fn options_len(&self) -> usize {
        self.options.len().next_multiple_of(4)
    }
}

/// An IPv6 header. Defaults: hop limit 64, traffic class and flow label 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6 {
    src: [u8; 16],
    dst: [u8; 16],
    traffic_class: u8,
    flow_label: u32,
    hop_limit: u8,
    next_header: Option<u8>,
    version: u8,
    payload_len: Option<u16>,
}

impl Ipv6 {
    /// A header between two addresses written as text (`"2001:db8::1"`).
    pub fn between(src: &str, dst: &str) -> Ipv6 {
        let octets = |a: &str| {
            a.parse::<std::net::Ipv6Addr>()
                .expect("an IPv6 address")
                .octets()
        };
        Ipv6::new(octets(src), octets(dst))
    }

    /// A header from `src` to `dst`.
    pub fn new(src: [u8; 16], dst: [u8; 16]) -> Ipv6 {
        Ipv6 {
            src,
            dst,
            traffic_class: 0,
            flow_label: 0,
            hop_limit: 64,
            next_header: None,
            version: 6,
            payload_len: None,
        }
    }

    /// The traffic class (DSCP and ECN).
    pub fn traffic_class(mut self, traffic_class: u8) -> Ipv6 {
        self.traffic_class = traffic_class;
        self
    }

    /// The flow label (20 bits).
    pub fn flow_label(mut self, flow_label: u32) -> Ipv6 {
        self.flow_label = flow_label & 0xf_ffff;
        self
    }

    /// The hop limit.
    pub fn hop_limit(mut self, hop_limit: u8) -> Ipv6 {
        self.hop_limit = hop_limit;
        self
    }

    /// Writes `next_header` instead of the protocol of the next layer; needed when raw
    /// bytes follow.
    pub fn next_header(mut self, next_header: u8) -> Ipv6 {
        self.next_header = Some(next_header);
        self
    }

    /// Damage: the version field (normally 6).
    pub fn version(mut self, version: u8) -> Ipv6 {
        self.version = version & 0xf;
        self
    }

    /// Damage: the payload length field instead of the real one.
    pub fn payload_len(mut self, len: u16) -> Ipv6 {
        self.payload_len = Some(len);
        self
    }
}

/// An IPv6 extension header: hop-by-hop options, routing, fragment or destination
/// options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Ext<'a> {
    kind: u8,
    data: &'a [u8],
    routing: [u8; 2],
    fragment: u16,
    fragment_id: u32,
    next_header: Option<u8>,
}

impl<'a> Ipv6Ext<'a> {
    fn with(kind: u8, data: &'a [u8]) -> Ipv6Ext<'a> {
        Ipv6Ext {
            kind,
            data,
            routing: [0, 0],
            fragment: 0,
            fragment_id: 0,
            next_header: None,
        }
    }

    /// Hop-by-hop options (protocol 0): `options`, padded with Pad1 to a multiple of 8
    /// bytes with the two-byte header.
    pub fn hop_by_hop(options: &'a [u8]) -> Ipv6Ext<'a> {
        Ipv6Ext::with(0, options)
    }

    /// Destination options (protocol 60), padded as [`Ipv6Ext::hop_by_hop`].
    pub fn destination(options: &'a [u8]) -> Ipv6Ext<'a> {
        Ipv6Ext::with(60, options)
    }

    /// A routing header (protocol 43) of `routing_type` with `segments_left` and
    /// type-specific `data` (after the four fixed bytes), zero-padded to a multiple of 8.
    pub fn routing(routing_type: u8, segments_left: u8, data: &'a [u8]) -> Ipv6Ext<'a> {
        let mut ext = Ipv6Ext::with(43, data);
        ext.routing = [routing_type, segments_left];
        ext
    }

    /// A fragment header (protocol 44): `offset` bytes (a multiple of 8) into the
    /// datagram `id`, with the more-fragments flag `more`.
    ///
    /// # Panics
    /// If `offset` is not a multiple of 8 or does not fit the 13-bit field.
    pub fn fragment(offset: u16, more: bool, id: u32) -> Ipv6Ext<'a> {
        assert!(
            offset.is_multiple_of(8),
            "IPv6 fragment offset {offset} is not a multiple of 8"
        );
        let mut ext = Ipv6Ext::with(44, &[]);
        ext.fragment = offset | u16::from(more);
        ext.fragment_id = id;
        ext
    }

    /// Writes `next_header` instead of the protocol of the next layer; needed when raw
    /// bytes follow.
    pub fn next_header(mut self, next_header: u8) -> Ipv6Ext<'a> {
        self.next_header = Some(next_header);
        self
    }

    /// Bytes after the first two (next header, length), before padding.
    fn body_len(&self) -> usize {
        match self.kind {
            44 => 6,
            43 => 2 + self.data.len(),
            _ => self.data.len(),
        }
    }

    fn len(&self) -> usize {
        (2 + self.body_len()).next_multiple_of(8)
    }
}

/// A TCP header. Defaults: sequence and acknowledgment numbers 0, no flags, window
/// 65535, no options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tcp {
    src_port: u16,
    dst_port: u16,
    seq: u32,
    ack: u32,
    flags: u8,
    window: u16,
    urgent: u16,
    options: [u8; 40],
    options_len: u8,
    data_offset: Option<u8>,
    checksum: Option<u16>,
}

impl Tcp {
    /// A header from port `src_port` to `dst_port`.
    pub fn new(src_port: u16, dst_port: u16) -> Tcp {
        Tcp {
            src_port,
            dst_port,
            seq: 0,
            ack: 0,
            flags: 0,
            window: 65535,
            urgent: 0,
            options: [0; 40],
            options_len: 0,
            data_offset: None,
            checksum: None,
        }
    }

    /// The sequence number.
    pub fn seq(mut self, seq: u32) -> Tcp {
        self.seq = seq;
        self
    }

    /// The acknowledgment number (the ACK flag is set with [`Tcp::flags`]).
    pub fn ack(mut self, ack: u32) -> Tcp {
        self.ack = ack;
        self
    }

    /// The flags, from [`tcp_flags`].
    pub fn flags(mut self, flags: u8) -> Tcp {
        self.flags = flags;
        self
    }

    /// The window.
    pub fn window(mut self, window: u16) -> Tcp {
        self.window = window;
        self
    }

    /// The urgent pointer.
    pub fn urgent(mut self, urgent: u16) -> Tcp {
        self.urgent = urgent;
        self
    }

    /// Appends option bytes as they are (kind, length and value, or anything at all).
    /// Options are padded with zeros (end of option list) to a multiple of 4 bytes.
    ///
    /// # Panics
    /// If the options would exceed 40 bytes.
    pub fn option_bytes(mut self, bytes: &[u8]) -> Tcp {
        let at = usize::from(self.options_len);
        let end = at + bytes.len();
        assert!(end <= 40, "TCP options of {end} bytes exceed 40");
        self.options[at..end].copy_from_slice(bytes);
        self.options_len = end as u8;
        self
    }

    /// Appends a no-operation option.
    pub fn nop(self) -> Tcp {
        self.option_bytes(&[1])
    }

    /// Appends an end-of-option-list option.
    pub fn eol(self) -> Tcp {
        self.option_bytes(&[0])
    }

    /// Appends a maximum segment size option.
    pub fn mss(self, mss: u16) -> Tcp {
        let [a, b] = mss.to_be_bytes();
        self.option_bytes(&[2, 4, a, b])
    }

    /// Appends a window scale option.
    pub fn wscale(self, shift: u8) -> Tcp {
        self.option_bytes(&[3, 3, shift])
    }

    /// Appends a SACK-permitted option.
    pub fn sack_permitted(self) -> Tcp {
        self.option_bytes(&[4, 2])
    }

    /// Appends a SACK option with `blocks` (left edge, right edge).
    ///
    /// # Panics
    /// If the options would exceed 40 bytes (more than four blocks never fit).
    pub fn sack(mut self, blocks: &[(u32, u32)]) -> Tcp {
        let len = 2 + 8 * blocks.len();
        assert!(len <= 40, "a SACK option of {len} bytes exceeds 40");
        self = self.option_bytes(&[5, len as u8]);
        for (left, right) in blocks {
            self = self.option_bytes(&left.to_be_bytes());
            self = self.option_bytes(&right.to_be_bytes());
        }
        self
    }

    /// Appends a timestamps option.
    pub fn timestamps(self, value: u32, echo_reply: u32) -> Tcp {
        let [a, b, c, d] = value.to_be_bytes();
        let [e, f, g, h] = echo_reply.to_be_bytes();
        self.option_bytes(&[8, 10, a, b, c, d, e, f, g, h])
    }

    /// Damage: the data offset field, in 32-bit words, instead of the real one.
    pub fn data_offset(mut self, words: u8) -> Tcp {
        self.data_offset = Some(words & 0xf);
        self
    }

    /// Damage: the checksum instead of the computed one.
    pub fn checksum(mut self, checksum: u16) -> Tcp {
        self.checksum = Some(checksum);
        self
    }

    fn options_len(&self) -> usize {
        usize::from(self.options_len).next_multiple_of(4)
    }
}

/// A UDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Udp {
    src_port: u16,
    dst_port: u16,
    length: Option<u16>,
    checksum: Option<u16>,
}

impl Udp {
    /// A header from port `src_port` to `dst_port`.
    pub fn new(src_port: u16, dst_port: u16) -> Udp {
        Udp {
            src_port,
            dst_port,
            length: None,
            checksum: None,
        }
    }

    /// Damage: the length field instead of the real one.
    pub fn length(mut self, length: u16) -> Udp {
        self.length = Some(length);
        self
    }

    /// Damage (or 0, "no checksum", over IPv4): the checksum instead of the computed one.
    pub fn checksum(mut self, checksum: u16) -> Udp {
        self.checksum = Some(checksum);
        self
    }
}

/// The eight bytes shared by ICMP and ICMPv6 messages: type, code, checksum and four
/// bytes whose meaning depends on the type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct IcmpFields {
    kind: u8,
    code: u8,
    rest: [u8; 4],
    checksum: Option<u16>,
}

impl IcmpFields {
    fn new(kind: u8, code: u8) -> IcmpFields {
        IcmpFields {
            kind,
            code,
            rest: [0; 4],
            checksum: None,
        }
    }

    fn echo(kind: u8, id: u16, seq: u16) -> IcmpFields {
        let [a, b] = id.to_be_bytes();
        let [c, d] = seq.to_be_bytes();
        IcmpFields {
            rest: [a, b, c, d],
            ..IcmpFields::new(kind, 0)
        }
    }
}

macro_rules! icmp_type {
    ($name:ident, $what:literal, $request:literal, $reply:literal) => {
        #[doc = concat!("An ", $what, " header (the 8 bytes every message starts with); the rest of the")]
        /// message is a payload pushed after it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name(IcmpFields);

        impl $name {
            /// A message of type `kind` and `code`, the four bytes after the checksum 0.
            pub fn new(kind: u8, code: u8) -> $name {
                $name(IcmpFields::new(kind, code))
            }

            #[doc = concat!("An echo request (type ", $request, ") with identifier `id` and sequence number `seq`.")]
            pub fn echo_request(id: u16, seq: u16) -> $name {
                $name(IcmpFields::echo($request, id, seq))
            }

            #[doc = concat!("An echo reply (type ", $reply, ") with identifier `id` and sequence number `seq`.")]
            pub fn echo_reply(id: u16, seq: u16) -> $name {
                $name(IcmpFields::echo($reply, id, seq))
            }

            /// The four bytes after the checksum (identifier and sequence number, unused
            /// bytes, a pointer or an MTU, depending on the type).
            pub fn rest(mut self, rest: [u8; 4]) -> $name {
                self.0.rest = rest;
                self
            }

            /// Damage: the checksum instead of the computed one.
            pub fn checksum(mut self, checksum: u16) -> $name {
                self.0.checksum = Some(checksum);
                self
            }
        }
    };
}

icmp_type!(Icmp, "ICMP", 8, 0);
icmp_type!(Icmpv6, "ICMPv6", 128, 129);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layer<'a> {
    Ethernet(Ethernet),
    Vlan(Vlan),
    Mpls(Mpls),
    Ipv4(Ipv4<'a>),
    Ipv6(Ipv6),
    Ipv6Ext(Ipv6Ext<'a>),
    Tcp(Tcp),
    Udp(Udp),
    Icmp(Icmp),
    Icmpv6(Icmpv6),
    Payload(&'a [u8]),
}

impl Layer<'_> {
    fn name(&self) -> &'static str {
        match self {
            Layer::Ethernet(_) => "Ethernet",
            Layer::Vlan(_) => "VLAN tag",
            Layer::Mpls(_) => "MPLS label",
            Layer::Ipv4(_) => "IPv4",
            Layer::Ipv6(_) => "IPv6",
            Layer::Ipv6Ext(_) => "IPv6 extension header",
            Layer::Tcp(_) => "TCP",
            Layer::Udp(_) => "UDP",
            Layer::Icmp(_) => "ICMP",
            Layer::Icmpv6(_) => "ICMPv6",
            Layer::Payload(_) => "payload",
        }
    }

    /// The ethertype that announces this layer.
    fn ethertype(&self) -> Option<u16> {
        match self {
            Layer::Vlan(v) => Some(v.tpid),
            Layer::Mpls(_) => Some(0x8847),
            Layer::Ipv4(_) => Some(0x0800),
            Layer::Ipv6(_) => Some(0x86dd),
            _ => None,
        }
    }

    /// The IP protocol number (or IPv6 next header) that announces this layer.
    fn ip_protocol(&self) -> Option<u8> {
        match self {
            Layer::Ipv4(_) => Some(4),
            Layer::Ipv6(_) => Some(41),
            Layer::Ipv6Ext(e) => Some(e.kind),
            Layer::Tcp(_) => Some(6),
            Layer::Udp(_) => Some(17),
            Layer::Icmp(_) => Some(1),
            Layer::Icmpv6(_) => Some(58),
            Layer::Mpls(_) => Some(137),
            _ => None,
        }
    }
}

/// IPv6's "no next header", written by an IP layer that nothing follows.
const NO_NEXT_HEADER: u8 = 59;

/// Describes a packet layer by layer and writes it with consistent lengths, type fields
/// and checksums. See the [module documentation](self).
#[derive(Debug, Clone)]
pub struct PacketBuilder<'a> {
    layers: [Option<Layer<'a>>; MAX_LAYERS],
    count: usize,
    trailer: &'a [u8],
    min_len: usize,
}

impl Default for PacketBuilder<'_> {
    fn default() -> Self {
        PacketBuilder::new()
    }
}

impl<'a> PacketBuilder<'a> {
    /// A builder with no layers.
    pub fn new() -> PacketBuilder<'a> {
        PacketBuilder {
            layers: [None; MAX_LAYERS],
            count: 0,
            trailer: &[],
            min_len: 0,
        }
    }

    fn push(&mut self, layer: Layer<'a>) -> &mut PacketBuilder<'a> {
        assert!(
            self.count < MAX_LAYERS,
            "a PacketBuilder holds at most {MAX_LAYERS} layers"
        );
        self.layers[self.count] = Some(layer);
        self.count += 1;
        self
    }

    /// Pushes an Ethernet II header.
    pub fn ethernet(&mut self, header: Ethernet) -> &mut PacketBuilder<'a> {
        self.push(Layer::Ethernet(header))
    }

    /// Pushes a VLAN tag.
    pub fn vlan(&mut self, tag: Vlan) -> &mut PacketBuilder<'a> {
        self.push(Layer::Vlan(tag))
    }

    /// Pushes an MPLS label.
    pub fn mpls(&mut self, label: Mpls) -> &mut PacketBuilder<'a> {
        self.push(Layer::Mpls(label))
    }

    /// Pushes an IPv4 header.
    pub fn ipv4(&mut self, header: Ipv4<'a>) -> &mut PacketBuilder<'a> {
        self.push(Layer::Ipv4(header))
    }

    /// Pushes an IPv6 header.
    pub fn ipv6(&mut self, header: Ipv6) -> &mut PacketBuilder<'a> {
        self.push(Layer::Ipv6(header))
    }

    /// Pushes an IPv6 extension header.
    pub fn ipv6_ext(&mut self, header: Ipv6Ext<'a>) -> &mut PacketBuilder<'a> {
        self.push(Layer::Ipv6Ext(header))
    }

    /// Pushes a TCP header.
    pub fn tcp(&mut self, header: Tcp) -> &mut PacketBuilder<'a> {
        self.push(Layer::Tcp(header))
    }

    /// Pushes a UDP header.
    pub fn udp(&mut self, header: Udp) -> &mut PacketBuilder<'a> {
        self.push(Layer::Udp(header))
    }

    /// Pushes an ICMP header.
    pub fn icmp(&mut self, header: Icmp) -> &mut PacketBuilder<'a> {
        self.push(Layer::Icmp(header))
    }

    /// Pushes an ICMPv6 header.
    pub fn icmpv6(&mut self, header: Icmpv6) -> &mut PacketBuilder<'a> {
        self.push(Layer::Icmpv6(header))
    }

    /// Pushes bytes written as they are: an application payload, or a header the
    /// builder does not know (then the layer before needs its type field set by hand).
    /// Lengths before it count it.
    pub fn payload(&mut self, bytes: &'a [u8]) -> &mut PacketBuilder<'a> {
        self.push(Layer::Payload(bytes))
    }

    /// Bytes after the last layer that no length counts: Ethernet padding, a frame
    /// check sequence.
    pub fn trailer(&mut self, bytes: &'a [u8]) -> &mut PacketBuilder<'a> {
        self.trailer = bytes;
        self
    }

    /// Pads the packet with zeros (after any trailer) to at least `len` bytes, as
    /// Ethernet pads short frames to 60. No length counts the padding.
    pub fn pad_to(&mut self, len: usize) -> &mut PacketBuilder<'a> {
        self.min_len = len;
        self
    }

    /// The packet's bytes.
    pub fn build(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.build_into(&mut out);
        out
    }

    /// Clears `out` and writes the packet into it, reusing its capacity.
    ///
    /// # Panics
    /// If a type field cannot be derived (a header followed by raw bytes, or an
    /// Ethernet header or VLAN tag followed by nothing, without a type set by hand), if
    /// IPv4 options exceed 40 bytes or if a length exceeds 65,535.
    pub fn build_into(&self, out: &mut Vec<u8>) {
        out.clear();
        let layers = &self.layers[..self.count];
        let mut starts = [0usize; MAX_LAYERS];
        for (i, layer) in layers.iter().enumerate() {
            starts[i] = out.len();
            let next = layers.get(i + 1).copied().flatten();
            write_layer(layer.as_ref().expect("pushed layers are set"), next, out);
        }
        // Innermost first: a checksum covers the finished bytes of the layers after it.
        let end = out.len();
        for i in (0..layers.len()).rev() {
            let layer = layers[i].as_ref().expect("pushed layers are set");
            let ip = layers[..i].iter().rev().flatten().find_map(|l| match l {
                Layer::Ipv4(h) => Some(Pseudo::V4(h.src, h.dst)),
                Layer::Ipv6(h) => Some(Pseudo::V6(h.src, h.dst)),
                _ => None,
            });
            finish_layer(layer, ip, &mut out[starts[i]..end]);
        }
        out.extend_from_slice(self.trailer);
        if out.len() < self.min_len {
            out.resize(self.min_len, 0);
        }
    }
}

/// The next layer's ethertype, or the one set by hand.
fn next_ethertype(own: Option<u16>, this: &Layer<'_>, next: Option<Layer<'_>>) -> u16 {
    own.or_else(|| next.and_then(|n| n.ethertype()))
        .unwrap_or_else(|| {
            panic!(
                "{} followed by {} needs its ethertype set by hand",
                this.name(),
                next.map_or("nothing", |n| n.name())
            )
        })
}

/// The next layer's IP protocol, or the one set by hand, or "no next header" at the end.
fn next_protocol(own: Option<u8>, this: &Layer<'_>, next: Option<Layer<'_>>) -> u8 {
    match (own, next) {
        (Some(p), _) => p,
        (None, None) => NO_NEXT_HEADER,
        (None, Some(n)) => n.ip_protocol().unwrap_or_else(|| {
            panic!(
                "{} followed by {} needs its protocol set by hand",
                this.name(),
                n.name()
            )
        }),
    }
}

/// Writes `layer` with zero lengths and checksums (unless set by hand); `finish_layer`
/// fills them in.
fn write_layer(layer: &Layer<'_>, next: Option<Layer<'_>>, out: &mut Vec<u8>) {
    match layer {
        Layer::Ethernet(h) => {
            out.extend_from_slice(&h.dst);
            out.extend_from_slice(&h.src);
            let t = next_ethertype(h.ethertype, layer, next);
            out.extend_from_slice(&t.to_be_bytes());
        }
        Layer::Vlan(h) => {
            out.extend_from_slice(&h.tci().to_be_bytes());
            let t = next_ethertype(h.ethertype, layer, next);
            out.extend_from_slice(&t.to_be_bytes());
        }
        Layer::Mpls(h) => {
            let bottom = h.bottom.unwrap_or(!matches!(next, Some(Layer::Mpls(_))));
            let entry = h.label << 12 | u32::from(h.tc) << 9 | u32::from(bottom) << 8;
            out.extend_from_slice(&(entry | u32::from(h.ttl)).to_be_bytes());
        }
        Layer::Ipv4(h) => {
            let options = h.options_len();
            assert!(options <= 40, "IPv4 options of {options} bytes exceed 40");
            let ihl = h.ihl.unwrap_or(((20 + options) / 4) as u8);
            let flags_offset = u16::from(h.dont_fragment) << 14
                | u16::from(h.more_fragments) << 13
                | h.fragment_offset;
            out.push(h.version << 4 | ihl);
            out.push(h.dscp << 2 | h.ecn);
            out.extend_from_slice(&h.total_len.unwrap_or(0).to_be_bytes());
            out.extend_from_slice(&h.id.to_be_bytes());
            out.extend_from_slice(&flags_offset.to_be_bytes());
            out.push(h.ttl);
            out.push(next_protocol(h.protocol, layer, next));
            out.extend_from_slice(&[0, 0]);
            out.extend_from_slice(&h.src);
            out.extend_from_slice(&h.dst);
            out.extend_from_slice(h.options);
            out.resize(out.len() + options - h.options.len(), 0);
        }
        Layer::Ipv6(h) => {
            let first =
                u32::from(h.version) << 28 | u32::from(h.traffic_class) << 20 | h.flow_label;
            out.extend_from_slice(&first.to_be_bytes());
            out.extend_from_slice(&h.payload_len.unwrap_or(0).to_be_bytes());
            out.push(next_protocol(h.next_header, layer, next));
            out.push(h.hop_limit);
            out.extend_from_slice(&h.src);
            out.extend_from_slice(&h.dst);
        }
        Layer::Ipv6Ext(h) => {
            let start = out.len();
            out.push(next_protocol(h.next_header, layer, next));
            match h.kind {
                44 => {
                    out.push(0);
                    out.extend_from_slice(&h.fragment.to_be_bytes());
                    out.extend_from_slice(&h.fragment_id.to_be_bytes());
                }
                kind => {
                    out.push((h.len() / 8 - 1) as u8);
                    if kind == 43 {
                        out.extend_from_slice(&h.routing);
                    }
                    out.extend_from_slice(h.data);
                }
            }
            // Zeros are Pad1 options in hop-by-hop and destination options.
            out.resize(start + h.len(), 0);
        }
        Layer::Tcp(h) => {
            let words = h.data_offset.unwrap_or(((20 + h.options_len()) / 4) as u8);
            out.extend_from_slice(&h.src_port.to_be_bytes());
            out.extend_from_slice(&h.dst_port.to_be_bytes());
            out.extend_from_slice(&h.seq.to_be_bytes());
            out.extend_from_slice(&h.ack.to_be_bytes());
            out.push(words << 4);
            out.push(h.flags);
            out.extend_from_slice(&h.window.to_be_bytes());
            out.extend_from_slice(&h.checksum.unwrap_or(0).to_be_bytes());
            out.extend_from_slice(&h.urgent.to_be_bytes());
            out.extend_from_slice(&h.options[..h.options_len()]);
        }
        Layer::Udp(h) => {
            out.extend_from_slice(&h.src_port.to_be_bytes());
            out.extend_from_slice(&h.dst_port.to_be_bytes());
            out.extend_from_slice(&h.length.unwrap_or(0).to_be_bytes());
            out.extend_from_slice(&h.checksum.unwrap_or(0).to_be_bytes());
        }
        Layer::Icmp(Icmp(h)) | Layer::Icmpv6(Icmpv6(h)) => {
            out.extend_from_slice(&[h.kind, h.code]);
            out.extend_from_slice(&h.checksum.unwrap_or(0).to_be_bytes());
            out.extend_from_slice(&h.rest);
        }
        Layer::Payload(bytes) => out.extend_from_slice(bytes),
    }
}

/// The addresses of the IP header a transport checksum's pseudo-header is made from.
#[derive(Clone, Copy)]
enum Pseudo {
    V4([u8; 4], [u8; 4]),
    V6([u8; 16], [u8; 16]),
}

impl Pseudo {
    /// The pseudo-header's sum for `len` bytes of `protocol`.
    fn sum(ip: Option<Pseudo>, protocol: u8, len: usize) -> u64 {
        let addrs = match ip {
            Some(Pseudo::V4(s, d)) => sum16(&s) + sum16(&d),
            Some(Pseudo::V6(s, d)) => sum16(&s) + sum16(&d),
            None => 0,
        };
        addrs + u64::from(protocol) + len as u64
    }
}

fn length_u16(len: usize, what: &str) -> [u8; 2] {
    u16::try_from(len)
        .unwrap_or_else(|_| panic!("{what} of {len} bytes exceeds 65,535"))
        .to_be_bytes()
}

/// Fills in the lengths and checksums of `layer`, whose bytes start `bytes` (which runs
/// to the end of the last layer).
fn finish_layer(layer: &Layer<'_>, ip: Option<Pseudo>, bytes: &mut [u8]) {
    let len = bytes.len();
    match layer {
        Layer::Ipv4(h) => {
            if h.total_len.is_none() {
                bytes[field::IPV4_TOTAL_LEN].copy_from_slice(&length_u16(len, "IPv4 packet"));
            }
            let header = 20 + h.options_len();
            let c = h
                .checksum
                .unwrap_or_else(|| checksum(sum16(&bytes[..header])));
            bytes[field::IPV4_CHECKSUM].copy_from_slice(&c.to_be_bytes());
        }
        Layer::Ipv6(h) if h.payload_len.is_none() => {
            let payload = length_u16(len - 40, "IPv6 payload");
            bytes[field::IPV6_PAYLOAD_LEN].copy_from_slice(&payload);
        }
        Layer::Tcp(h) if h.checksum.is_none() => {
            let c = checksum(Pseudo::sum(ip, 6, len) + sum16(bytes));
            bytes[field::TCP_CHECKSUM].copy_from_slice(&c.to_be_bytes());
        }
        Layer::Udp(h) => {
            if h.length.is_none() {
                bytes[field::UDP_LENGTH].copy_from_slice(&length_u16(len, "UDP datagram"));
            }
            if h.checksum.is_none() {
                // 0 means "no checksum", so a computed 0 is sent as its other form.
                let c = match checksum(Pseudo::sum(ip, 17, len) + sum16(bytes)) {
                    0 => 0xffff,
                    c => c,
                };
                bytes[field::UDP_CHECKSUM].copy_from_slice(&c.to_be_bytes());
            }
        }
        Layer::Icmp(Icmp(h)) if h.checksum.is_none() => {
            let c = checksum(sum16(bytes));
            bytes[field::ICMP_CHECKSUM].copy_from_slice(&c.to_be_bytes());
        }
        Layer::Icmpv6(Icmpv6(h)) if h.checksum.is_none() => {
            let c = checksum(Pseudo::sum(ip, 58, len) + sum16(bytes));
            bytes[field::ICMP_CHECKSUM].copy_from_slice(&c.to_be_bytes());
        }
        _ => {}
    }
}

/// The sum of `data` as big-endian 16-bit words (a last odd byte padded with zero), not
/// yet folded.
pub fn sum16(data: &[u8]) -> u64 {
    let mut chunks = data.chunks_exact(2);
    let mut sum: u64 = (&mut chunks)
        .map(|c| u64::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    if let [last] = chunks.remainder() {
        sum += u64::from(*last) << 8;
    }
    sum
}

/// The Internet checksum (RFC 1071) of a [`sum16`] total: folded to 16 bits and
/// complemented.
pub fn checksum(mut sum: u64) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: [u8; 6] = [2, 0, 0, 0, 0, 1];
    const B: [u8; 6] = [2, 0, 0, 0, 0, 2];
    const V6A: [u8; 16] = [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    const V6B: [u8; 16] = [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

    #[test]
    fn checksum_matches_rfc_1071_example() {
        // RFC 1071 section 3: the words 0001 f203 f4f5 f6f7 sum to ddf2 once folded.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(checksum(sum16(&data)), !0xddf2);
        assert_eq!(sum16(&[0xab]), 0xab00, "an odd byte is the high half");
    }

    #[test]
    fn a_correct_checksum_sums_to_all_ones() {
        let f = PacketBuilder::new()
            .ethernet(Ethernet::new(A, B))
            .ipv4(Ipv4::new([10, 0, 0, 1], [10, 0, 0, 2]).options(&[1, 1, 7]))
            .udp(Udp::new(1, 2))
            .payload(b"odd")
            .build();
        assert_eq!(f[14], 0x46, "one word of options");
        assert_eq!(&f[34..38], &[1, 1, 7, 0], "options are padded with zeros");
        assert_eq!(checksum(sum16(&f[14..38])), 0);
        let udp = &f[38..];
        let pseudo = Pseudo::sum(Some(Pseudo::V4([10, 0, 0, 1], [10, 0, 0, 2])), 17, 11);
        assert_eq!(checksum(pseudo + sum16(udp)), 0);
        assert_eq!(&udp[4..6], &11u16.to_be_bytes());
    }

    #[test]
    fn type_fields_follow_the_next_layer() {
        let f = PacketBuilder::new()
            .ethernet(Ethernet::new(A, B))
            .vlan(Vlan::service(200))
            .vlan(Vlan::new(100).pcp(3))
            .mpls(Mpls::new(16))
            .mpls(Mpls::new(32).ttl(9))
            .ipv6(Ipv6::new(V6A, V6B))
            .ipv6_ext(Ipv6Ext::hop_by_hop(&[]))
            .ipv6_ext(Ipv6Ext::fragment(8, true, 7))
            .icmpv6(Icmpv6::echo_request(1, 2))
            .build();
        assert_eq!(&f[..6], &B, "destination first");
        assert_eq!(&f[12..14], &[0x88, 0xa8]);
        assert_eq!(&f[14..18], &[0, 200, 0x81, 0x00]);
        assert_eq!(&f[18..22], &[0x60, 100, 0x88, 0x47]);
        assert_eq!(&f[22..26], &[0, 1, 0, 64], "label 16, not bottom");
        assert_eq!(&f[26..30], &[0, 2, 1, 9], "label 32, bottom, TTL 9");
        let ip = &f[30..];
        assert_eq!(ip[0] >> 4, 6);
        assert_eq!(&ip[4..6], &(8u16 + 8 + 8).to_be_bytes());
        assert_eq!(ip[6], 0, "hop-by-hop");
        assert_eq!(&ip[40..48], &[44, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&ip[48..56], &[58, 0, 0, 9, 0, 0, 0, 7]);
        assert_eq!(&ip[56..58], &[128, 0]);
    }

    #[test]
    fn extension_headers_are_padded_to_eight() {
        let f = PacketBuilder::new()
            .ipv6(Ipv6::new(V6A, V6B))
            .ipv6_ext(Ipv6Ext::destination(&[1, 1, 0]))
            .ipv6_ext(Ipv6Ext::routing(4, 1, &[9; 6]).next_header(59))
            .build();
        assert_eq!(&f[40..48], &[43, 0, 1, 1, 0, 0, 0, 0]);
        assert_eq!(&f[48..56], &[59, 1, 4, 1, 9, 9, 9, 9], "two 8-byte units");
        assert_eq!(&f[56..64], &[9, 9, 0, 0, 0, 0, 0, 0]);
        assert_eq!(f.len(), 64);
    }

    #[test]
    fn tcp_options_and_fields() {
        let t = Tcp::new(1, 2)
            .seq(7)
            .ack(9)
            .flags(tcp_flags::SYN | tcp_flags::ACK)
            .window(64240)
            .mss(1460)
            .sack_permitted()
            .timestamps(3, 4)
            .nop()
            .wscale(7);
        let f = PacketBuilder::new().tcp(t).build();
        assert_eq!(f.len(), 40);
        assert_eq!(f[12], 10 << 4);
        assert_eq!(f[13], 0x12);
        assert_eq!(&f[14..16], &64240u16.to_be_bytes());
        assert_eq!(
            &f[20..],
            &[
                2, 4, 5, 180, 4, 2, 8, 10, 0, 0, 0, 3, 0, 0, 0, 4, 1, 3, 3, 7
            ]
        );
        let s = PacketBuilder::new()
            .tcp(Tcp::new(1, 2).sack(&[(1, 2)]))
            .build();
        assert_eq!(&s[20..], &[5, 10, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0]);
    }

    #[test]
    fn set_by_hand_fields_are_written_as_given() {
        let f = PacketBuilder::new()
            .ipv4(
                Ipv4::new([1, 2, 3, 4], [5, 6, 7, 8])
                    .version(6)
                    .ihl(4)
                    .total_len(1000)
                    .checksum(0xbeef)
                    .fragment(1480, true)
                    .dont_fragment(),
            )
            .udp(Udp::new(1, 2).length(4).checksum(0))
            .trailer(&[0xee; 2])
            .pad_to(60)
            .build();
        assert_eq!(f[0], 0x64);
        assert_eq!(&f[2..4], &1000u16.to_be_bytes());
        assert_eq!(&f[6..8], &(0x6000u16 | 185).to_be_bytes());
        assert_eq!(&f[10..12], &[0xbe, 0xef]);
        assert_eq!(&f[24..28], &[0, 4, 0, 0]);
        assert_eq!(&f[28..30], &[0xee, 0xee]);
        assert_eq!(f.len(), 60);
    }

    #[test]
    fn a_udp_checksum_of_zero_is_sent_as_all_ones() {
        // A computed checksum is never ffff (that needs an all-zero sum), so ffff in the
        // field shows the substitution; the field still checks.
        for x in 0..=u16::MAX {
            let payload = x.to_be_bytes();
            let f = PacketBuilder::new()
                .udp(Udp::new(0, 0))
                .payload(&payload)
                .build();
            let folded = checksum(Pseudo::sum(None, 17, 10) + sum16(&f));
            if f[6..8] == [0xff, 0xff] {
                assert_eq!(folded, 0, "ffff is the same sum as 0");
                return;
            }
        }
        panic!("no payload gave a zero checksum");
    }

    #[test]
    fn build_into_reuses_the_buffer() {
        let mut buf = Vec::with_capacity(128);
        let p = buf.as_ptr();
        for i in 0..3u8 {
            PacketBuilder::new()
                .ipv4(Ipv4::new([10, 0, 0, i], [10, 0, 0, 9]))
                .icmp(Icmp::echo_request(1, u16::from(i)))
                .build_into(&mut buf);
            assert_eq!(buf.len(), 28);
            assert_eq!(buf[15], i);
        }
        assert_eq!(buf.as_ptr(), p);
    }

    #[test]
    #[should_panic(expected = "IPv4 followed by payload needs its protocol set by hand")]
    fn raw_bytes_after_ip_need_a_protocol() {
        PacketBuilder::new()
            .ipv4(Ipv4::new([1; 4], [2; 4]))
            .payload(b"gre?")
            .build();
    }

    #[test]
    fn nothing_after_ip_is_no_next_header() {
        let f = PacketBuilder::new().ipv4(Ipv4::new([1; 4], [2; 4])).build();
        assert_eq!(f[9], 59);
    }
}
