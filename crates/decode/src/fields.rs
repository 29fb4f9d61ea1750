//! Named fields in the style of `tshark -T fields`, for the `tracekit fields` command and
//! for library users who want the same values.
//!
//! Values are printed as tshark 4.0 prints them (hex for identifiers and flags, the IPv4
//! fragment offset in 8-byte units, `1`/`0` for flags). Like tshark's first occurrence,
//! network-layer fields come from the outermost IP header, and transport and DNS fields
//! from the first header of their kind, following tunnels inward. `vlan.id` lists the
//! tags of every level, comma-joined. An 802.11 A-MSDU's fields are those of its first
//! subframe (tshark lists every subframe's; see [`Decoded::amsdu`] for the others).
//!
//! ```
//! use tracekit_decode::fields::Field;
//! let f: Field = "tcp.srcport".parse().unwrap();
//! assert_eq!(f.name(), "tcp.srcport");
//! assert!("no.such.field".parse::<Field>().is_err());
//! ```

use std::fmt::{self, Write};
use std::net::IpAddr;
use std::str::FromStr;

use tracekit_core::{Direction, Packet};

use crate::dns::{Message, RData, Record};
use crate::{Decoded, Transport, Tunnel, ip_proto};
use crate::{http, text, tls};

macro_rules! fields {
    ($( $name:ident = $text:literal, $doc:literal; )*) => {
        /// A field `tracekit fields -e` can print.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Field {
            $( #[doc = $doc] $name, )*
        }

        impl Field {
            /// Every field, in documentation order.
            pub const ALL: &'static [Field] = &[$(Field::$name,)*];

            /// The field's name (as in tshark).
            pub fn name(self) -> &'static str {
                match self { $(Field::$name => $text,)* }
            }

            /// One line saying what the field holds.
            pub fn description(self) -> &'static str {
                match self { $(Field::$name => $doc,)* }
            }
        }
    };
}

fields! {
    FrameNumber = "frame.number", "1-based packet number";
    FrameTimeEpoch = "frame.time_epoch", "time stamp, seconds since the epoch with 9 decimals";
    FrameLen = "frame.len", "length on the wire";
    FrameCapLen = "frame.cap_len", "captured length";
    FrameInterfaceId = "frame.interface_id", "interface number: the pcapng interface id within its section, the ERF interface (port); 0 where the format has none";
    Direction = "tracekit.direction", "inbound or outbound, where the source records it (pcapng packet flags, live capture, Kuznetzov pcap); empty otherwise (tracekit only)";
    LinkType = "tracekit.link_type", "link-layer type (LINKTYPE_ number, as pcap and pcapng headers carry it; tracekit only)";
    EthSrc = "eth.src", "Ethernet source address";
    EthDst = "eth.dst", "Ethernet destination address";
    EthType = "eth.type", "Ethernet type field (hex; the 802.3 length for LLC frames is not shown)";
    VlanId = "vlan.id", "VLAN ids of the 802.1Q tags (TPID 0x8100, 0x9100), outermost first, comma-joined (inner tunnel levels too); 802.1ad S-tags are ieee8021ad.id, as in tshark";
    Ieee8021adId = "ieee8021ad.id", "VLAN ids of the 802.1ad service tags (TPID 0x88a8), outermost first, comma-joined";
    IslVlanId = "isl.vlan_id", "VLAN id of the Cisco ISL header around the frame";
    MplsLabel = "mpls.label", "MPLS labels, top first, comma-joined";
    IpVersion = "ip.version", "IP version of the outermost IP header (4 or 6)";
    IpSrc = "ip.src", "source address of the outermost IP header (IPv4 or IPv6)";
    IpDst = "ip.dst", "destination address of the outermost IP header (IPv4 or IPv6)";
    IpProto = "ip.proto", "transport protocol number of the outermost IP header, after IPv6 extension headers";
    IpTtl = "ip.ttl", "IPv4 TTL or IPv6 hop limit";
    IpId = "ip.id", "IPv4 identification (hex)";
    IpFragOffset = "ip.frag_offset", "IPv4 fragment offset in 8-byte units, as tshark prints it";
    IpFlagsMf = "ip.flags.mf", "IPv4 more-fragments flag (1/0)";
    IpFlagsDf = "ip.flags.df", "IPv4 don't-fragment flag (1/0)";
    Ipv6Src = "ipv6.src", "source address of the outermost IPv6 header";
    Ipv6Dst = "ipv6.dst", "destination address of the outermost IPv6 header";
    Ipv6FragOffset = "ipv6.fraghdr.offset", "IPv6 fragment offset in 8-byte units";
    Ipv6FragMore = "ipv6.fraghdr.more", "IPv6 more-fragments flag (1/0)";
    TcpSrcport = "tcp.srcport", "TCP source port";
    TcpDstport = "tcp.dstport", "TCP destination port";
    TcpSeqRaw = "tcp.seq_raw", "TCP sequence number (absolute)";
    TcpAckRaw = "tcp.ack_raw", "TCP acknowledgement number (absolute)";
    TcpFlags = "tcp.flags", "TCP flags (hex)";
    TcpWindow = "tcp.window_size_value", "TCP window field (unscaled)";
    TcpLen = "tcp.len", "TCP segment data length, from the IP length";
    PayloadLen = "tracekit.payload_len", "application data length after the outermost transport header, from the IP (or UDP) length (tracekit only)";
    UdpSrcport = "udp.srcport", "UDP source port";
    UdpDstport = "udp.dstport", "UDP destination port";
    UdpLength = "udp.length", "UDP length field";
    SctpSrcport = "sctp.srcport", "SCTP source port";
    SctpDstport = "sctp.dstport", "SCTP destination port";
    IcmpType = "icmp.type", "ICMP type";
    IcmpCode = "icmp.code", "ICMP code";
    Icmpv6Type = "icmpv6.type", "ICMPv6 type";
    DnsId = "dns.id", "DNS transaction id (hex)";
    DnsResponse = "dns.flags.response", "DNS response flag (1/0)";
    DnsQryName = "dns.qry.name", "DNS question names, comma-joined";
    DnsQryType = "dns.qry.type", "DNS question types, comma-joined";
    DnsRcode = "dns.flags.rcode", "DNS response code (responses only)";
    DnsA = "dns.a", "IPv4 addresses of the A records of every section, comma-joined";
    DnsAaaa = "dns.aaaa", "IPv6 addresses of the AAAA records of every section, comma-joined";
    DnsCname = "dns.cname", "canonical names of the CNAME records of every section, comma-joined";
    DnsRespTtl = "dns.resp.ttl", "TTLs of the records of every section but EDNS OPT, comma-joined";
    TlsVersion = "tls.handshake.version", "legacy version of each TLS ClientHello and ServerHello (hex), comma-joined";
    TlsSni = "tls.handshake.extensions_server_name", "server name (SNI) of the TLS ClientHello";
    TlsAlpn = "tls.handshake.extensions_alpn_str", "ALPN protocol names of the TLS hellos, comma-joined";
    TlsJa3Full = "tls.handshake.ja3_full", "JA3 string of the TLS ClientHello";
    TlsJa4 = "tls.handshake.ja4", "JA4 fingerprint of the TLS ClientHello (over TCP; newer Wireshark's field, not in tshark 4.0)";
    HttpMethod = "http.request.method", "HTTP request method (a head that starts a segment on an HTTP port, or SSDP)";
    HttpUri = "http.request.uri", "HTTP request target, as sent";
    HttpHost = "http.host", "HTTP Host field";
    HttpUserAgent = "http.user_agent", "HTTP User-Agent field";
    HttpResponseCode = "http.response.code", "HTTP response status code";
    NtpMode = "ntp.flags.mode", "NTP mode (3 client, 4 server, 6 control, ...)";
    NtpStratum = "ntp.stratum", "NTP stratum (modes 1-5)";
    DhcpMac = "dhcp.hw.mac_addr", "DHCP client hardware address (Ethernet)";
    DhcpHostname = "dhcp.option.hostname", "DHCP host name option (12)";
    DhcpType = "dhcp.option.dhcp", "DHCP message type option (53: 1 DISCOVER ... 5 ACK)";
    GtpTeid = "gtp.teid", "GTPv1 tunnel endpoint identifier (hex)";
    CapwapMessageType = "capwap.control.header.message_type", "CAPWAP control message type (UDP 5246; enterprise number in the top 24 bits)";
    LwappControlType = "lwapp.control.type", "LWAPP control message type";
    NdNsTarget = "icmpv6.nd.ns.target_address", "target address of an ICMPv6 neighbour solicitation";
    NdNaTarget = "icmpv6.nd.na.target_address", "target address of an ICMPv6 neighbour advertisement";
    QuicVersion = "quic.version", "QUIC version of each long-header packet of the datagram (hex), comma-joined";
    QuicDcid = "quic.dcid", "QUIC destination connection id of each packet of the datagram (hex), comma-joined; short-header packets only with --reassemble, which learns their length from the connection's long headers";
    Anomalies = "tracekit.anomalies", "decoder anomalies, comma-joined (tracekit only)";
}

/// An unknown field name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownField(pub String);

impl fmt::Display for UnknownField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown field '{}' (see --help for the list)", self.0)
    }
}

impl std::error::Error for UnknownField {}

impl FromStr for Field {
    type Err = UnknownField;

    fn from_str(s: &str) -> Result<Field, UnknownField> {
        Field::ALL
            .iter()
            .copied()
            .find(|f| f.name() == s)
            .ok_or_else(|| UnknownField(s.to_string()))
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One decode level of a packet, and whether it is a packet quoted inside an ICMP error
/// (decoded for field lookups only; its VLAN tags are not the packet's).
struct Level<'a> {
    d: Decoded<'a>,
    quoted: bool,
}

/// The decode levels of a packet: the packet itself, then each tunnel payload (or quoted
/// packet) inward.
fn levels<'a>(d: &Decoded<'a>) -> impl Iterator<Item = Level<'a>> {
    let top = Level {
        d: d.clone(),
        quoted: false,
    };
    std::iter::successors(Some(top), |l| {
        l.d.inner()
            .map(|d| Level { d, quoted: false })
            .or_else(|| quoted(&l.d).map(|d| Level { d, quoted: true }))
    })
}

/// The packet an ICMP or ICMPv6 error quotes, decoded the way tshark does.
fn quoted<'a>(d: &Decoded<'a>) -> Option<Decoded<'a>> {
    let is_error = match d.transport()? {
        Transport::Icmp(h) => h.is_error(),
        Transport::Icmpv6(h) => h.is_error(),
        _ => false,
    };
    if !is_error || d.depth() >= crate::DEFAULT_MAX_DEPTH {
        return None;
    }
    let p = d.payload()?;
    let mut q = Decoded::from_bytes(p, tracekit_core::LinkType::RAW, p.len() as u32);
    q.depth = d.depth() + 1;
    Some(q)
}

fn first<'a, T>(d: &Decoded<'a>, f: impl Fn(&Decoded<'a>) -> Option<T>) -> Option<T> {
    levels(d).find_map(|l| f(&l.d))
}

/// Receives the values of one field of one packet from [`visit_field`]: one call for a
/// field with one value, one call per item for a list field (`vlan.id`, `dns.a`, …),
/// no call when the packet has no such field. [`write_field`] is the sink that prints
/// them as `tracekit fields` does; `tracekit-export` has one that fills Arrow columns.
pub trait FieldSink {
    /// An unsigned integer, printed in decimal.
    fn number(&mut self, v: u64);
    /// An unsigned integer printed in hex (`0x` and at least `digits` digits), as tshark
    /// prints identifiers and flags.
    fn hex(&mut self, v: u64, digits: usize);
    /// A flag, printed `1` or `0`.
    fn flag(&mut self, v: bool);
    /// An IP address.
    fn addr(&mut self, v: IpAddr);
    /// A time stamp: whole seconds and nanoseconds since the Unix epoch.
    fn time(&mut self, secs: u64, nanos: u32);
    /// Text, which `write` appends to the string it is given.
    fn text(&mut self, write: &mut dyn FnMut(&mut String));
}

/// The [`FieldSink`] of [`write_field`]: values as text, list items comma-joined.
struct TextSink<'o> {
    out: &'o mut String,
    items: usize,
}

impl TextSink<'_> {
    fn next_item(&mut self) {
        if self.items > 0 {
            self.out.push(',');
        }
        self.items += 1;
    }
}

impl FieldSink for TextSink<'_> {
    fn number(&mut self, v: u64) {
        self.next_item();
        text::push_decimal(self.out, v);
    }
    fn hex(&mut self, v: u64, digits: usize) {
        self.next_item();
        self.out.push_str("0x");
        text::push_hex(self.out, v, digits);
    }
    fn flag(&mut self, v: bool) {
        self.next_item();
        self.out.push(if v { '1' } else { '0' });
    }
    fn addr(&mut self, v: IpAddr) {
        self.next_item();
        self.out.push_str(text::IpText::new(v).as_str());
    }
    fn time(&mut self, secs: u64, nanos: u32) {
        self.next_item();
        text::push_decimal(self.out, secs);
        self.out.push('.');
        text::push_decimal_padded(self.out, u64::from(nanos), 9);
    }
    fn text(&mut self, write: &mut dyn FnMut(&mut String)) {
        self.next_item();
        write(self.out);
    }
}

fn mac(out: &mut String, m: [u8; 6]) {
    for (i, b) in m.into_iter().enumerate() {
        if i > 0 {
            out.push(':');
        }
        text::push_hex(out, u64::from(b), 2);
    }
}

/// What some fields need to know beyond the packet: the state of its connection. For
/// now the destination connection id of QUIC short-header packets, whose length only
/// the connection's long headers tell (`tracekit-flow`'s `QuicConnections` learns it);
/// [`NoState`] knows nothing, and those fields then show what the packet alone gives.
pub trait FieldState {
    /// The destination connection id of the short-header QUIC packet `packet` (bytes of
    /// the UDP datagram of decode level `d`), if it belongs to a known connection.
    fn quic_short_dcid<'a>(&self, d: &Decoded<'a>, packet: &'a [u8]) -> Option<&'a [u8]>;

    /// The HTTP head of the packet `d` (its outermost level), when the TCP stream says
    /// more than the packet: a head joined from the segments that carried it, or none
    /// for a segment in the middle of one. The default: the packet's own.
    fn http_head(&self, d: &Decoded<'_>) -> HeadState<'_> {
        let _ = d;
        HeadState::Packet
    }
}

/// What a [`FieldState`] says about a packet's HTTP head.
#[derive(Clone, Copy, Debug)]
pub enum HeadState<'s> {
    /// The head the packet's own payload starts with, if any.
    Packet,
    /// None: the packet carries part of a head that a later segment completes.
    Hidden,
    /// This head, joined from the segments before and this one, which completes it.
    Joined(http::Head<'s>),
}

/// The [`FieldState`] of a decoder without connection state.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoState;

impl FieldState for NoState {
    fn quic_short_dcid<'a>(&self, _: &Decoded<'a>, _: &'a [u8]) -> Option<&'a [u8]> {
        None
    }
}

/// Appends the value of `field` for packet number `number` to `out` (nothing when the
/// packet has no such field), as `tracekit fields` prints it.
pub fn write_field<'a>(
    out: &mut String,
    field: Field,
    number: u64,
    packet: &Packet<'_>,
    d: &Decoded<'a>,
) {
    visit_field(&mut TextSink { out, items: 0 }, field, number, packet, d);
}

/// [`write_field`] with connection state (see [`FieldState`]).
pub fn write_field_with<'a>(
    out: &mut String,
    field: Field,
    number: u64,
    packet: &Packet<'_>,
    d: &Decoded<'a>,
    state: &dyn FieldState,
) {
    let sink = &mut TextSink { out, items: 0 };
    visit_field_with(sink, field, number, packet, d, state);
}

/// Hands the value(s) of `field` for packet number `number` to `sink`, typed (see
/// [`FieldSink`]); [`write_field`] prints the same values.
pub fn visit_field<'a, S: FieldSink + ?Sized>(
    sink: &mut S,
    field: Field,
    number: u64,
    packet: &Packet<'_>,
    d: &Decoded<'a>,
) {
    visit_field_with(sink, field, number, packet, d, &NoState);
}

/// [`visit_field`] with connection state (see [`FieldState`]).
pub fn visit_field_with<'a, S: FieldSink + ?Sized>(
    sink: &mut S,
    field: Field,
    number: u64,
    packet: &Packet<'_>,
    d: &Decoded<'a>,
    state: &dyn FieldState,
) {
    let v4 = || d.ipv4();
    let v6 = || d.ipv6();
    // Transport fields: the first level with that protocol (tshark's first occurrence);
    // a quoted packet inside an ICMP error counts, as in tshark.
    let tcp = || first(d, |l| l.tcp());
    let udp = || first(d, |l| l.udp());
    // Ports also from a header cut after its first 4 bytes (a short capture, the 8 bytes
    // an ICMP error quotes), as tshark shows them.
    let ports = |proto: u8| {
        first(d, |l| {
            l.transport()
                .filter(|t| t.protocol() == proto)
                .and_then(|t| t.ports())
        })
    };
    let dns = || first(d, |l| l.dns());
    match field {
        Field::FrameNumber => sink.number(number),
        Field::FrameTimeEpoch => {
            // Rounded to the nearest ns from binary (ERF, pcapng 2^-n) sources, as tshark does;
            // empty for a packet without a time stamp (pcapng Simple Packet Block), as in tshark.
            let ts = packet.ts();
            if ts.is_known() {
                let (secs, nanos) = ts.split(tracekit_core::TsResolution::NANO);
                sink.time(secs, nanos as u32);
            }
        }
        Field::FrameLen => sink.number(packet.wire_len().into()),
        Field::FrameCapLen => sink.number(packet.caplen() as u64),
        Field::FrameInterfaceId => sink.number(packet.meta().interface.into()),
        Field::Direction => match packet.meta().direction {
            Direction::Inbound => sink.text(&mut |s| s.push_str("inbound")),
            Direction::Outbound => sink.text(&mut |s| s.push_str("outbound")),
            Direction::Unknown => {}
        },
        Field::LinkType => sink.number(packet.link_type().0.into()),
        Field::EthSrc => {
            if let Some(e) = d.ethernet() {
                sink.text(&mut |s| mac(s, e.src()));
            }
        }
        Field::EthDst => {
            if let Some(e) = d.ethernet() {
                sink.text(&mut |s| mac(s, e.dst()));
            }
        }
        Field::EthType => {
            if let Some(t) = d.ethernet().map(|e| e.ethertype()).filter(|&t| t > 1500) {
                sink.hex(t.into(), 4);
            }
        }
        Field::VlanId => {
            // `vlans()` borrows only the bytes, so the ids of every level chain without
            // collecting.
            levels(d)
                .filter(|l| !l.quoted)
                .flat_map(|l| l.d.vlans())
                .filter(|v| v.tpid != crate::ethertype::QINQ)
                .for_each(|v| sink.number(v.id.into()));
        }
        Field::Ieee8021adId => levels(d)
            .filter(|l| !l.quoted)
            .flat_map(|l| l.d.vlans())
            .filter(|v| v.tpid == crate::ethertype::QINQ)
            .for_each(|v| sink.number(v.id.into())),
        Field::IslVlanId => number_of(sink, first(d, |l| l.isl()).map(|h| h.vlan_id())),
        Field::MplsLabel => d.mpls_labels().for_each(|l| sink.number(l.label.into())),
        Field::IpVersion => number_of(sink, d.ip_version()),
        Field::IpSrc => {
            if let Some(a) = d.src_addr() {
                sink.addr(a);
            }
        }
        Field::IpDst => {
            if let Some(a) = d.dst_addr() {
                sink.addr(a);
            }
        }
        Field::IpProto => number_of(sink, d.ip_protocol()),
        Field::IpTtl => number_of(
            sink,
            v4().map(|h| h.ttl())
                .or_else(|| v6().map(|h| h.hop_limit())),
        ),
        Field::IpId => {
            if let Some(h) = v4() {
                sink.hex(h.ident().into(), 4);
            }
        }
        Field::IpFragOffset => number_of(sink, v4().map(|h| h.frag_offset() / 8)),
        Field::IpFlagsMf => flag_of(sink, v4().map(|h| h.more_frags())),
        Field::IpFlagsDf => flag_of(sink, v4().map(|h| h.dont_frag())),
        Field::Ipv6Src => {
            if let Some(h) = v6() {
                sink.addr(IpAddr::V6(h.src()));
            }
        }
        Field::Ipv6Dst => {
            if let Some(h) = v6() {
                sink.addr(IpAddr::V6(h.dst()));
            }
        }
        Field::Ipv6FragOffset => number_of(sink, v6().and(d.fragment()).map(|f| f.offset / 8)),
        Field::Ipv6FragMore => flag_of(sink, v6().and(d.fragment()).map(|f| f.more)),
        Field::TcpSrcport => number_of(sink, ports(ip_proto::TCP).map(|p| p.0)),
        Field::TcpDstport => number_of(sink, ports(ip_proto::TCP).map(|p| p.1)),
        Field::TcpSeqRaw => number_of(sink, tcp().map(|h| h.seq_number())),
        Field::TcpAckRaw => number_of(sink, tcp().map(|h| h.ack_number())),
        Field::TcpFlags => {
            if let Some(h) = tcp() {
                sink.hex(h.flags().into(), 4);
            }
        }
        Field::TcpWindow => number_of(sink, tcp().map(|h| h.window())),
        Field::TcpLen => number_of(
            sink,
            first(d, |l| l.tcp().and_then(|_| l.payload_wire_len())),
        ),
        Field::PayloadLen => number_of(sink, d.payload_wire_len()),
        Field::UdpSrcport => number_of(sink, ports(ip_proto::UDP).map(|p| p.0)),
        Field::UdpDstport => number_of(sink, ports(ip_proto::UDP).map(|p| p.1)),
        Field::UdpLength => number_of(sink, udp().map(|h| h.length())),
        Field::SctpSrcport => number_of(sink, first(d, |l| l.sctp()).map(|h| h.src_port())),
        Field::SctpDstport => number_of(sink, first(d, |l| l.sctp()).map(|h| h.dst_port())),
        Field::IcmpType => number_of(sink, first(d, |l| l.icmp()).map(|h| h.icmp_type())),
        Field::IcmpCode => number_of(sink, first(d, |l| l.icmp()).map(|h| h.code())),
        Field::Icmpv6Type => number_of(sink, first(d, |l| l.icmpv6()).map(|h| h.icmp_type())),
        Field::DnsId => {
            if let Some(m) = dns() {
                sink.hex(m.id().into(), 4);
            }
        }
        Field::DnsResponse => flag_of(sink, dns().map(|m| m.is_response())),
        Field::DnsQryName => {
            if let Some(m) = dns() {
                for q in m.questions() {
                    sink.text(&mut |s| {
                        let _ = write!(s, "{}", q.name);
                    });
                }
            }
        }
        Field::DnsQryType => {
            if let Some(m) = dns() {
                m.questions().for_each(|q| sink.number(q.qtype.into()));
            }
        }
        Field::DnsRcode => number_of(sink, dns().filter(|m| m.is_response()).map(|m| m.rcode())),
        Field::DnsA => {
            if let Some(m) = dns() {
                for r in records(&m) {
                    if let RData::A(a) = r.data() {
                        sink.addr(IpAddr::V4(a));
                    }
                }
            }
        }
        Field::DnsAaaa => {
            if let Some(m) = dns() {
                for r in records(&m) {
                    if let RData::Aaaa(a) = r.data() {
                        sink.addr(IpAddr::V6(a));
                    }
                }
            }
        }
        Field::DnsCname => {
            if let Some(m) = dns() {
                for r in records(&m) {
                    if let RData::Cname(n) = r.data() {
                        sink.text(&mut |s| {
                            let _ = write!(s, "{n}");
                        });
                    }
                }
            }
        }
        Field::DnsRespTtl => {
            if let Some(m) = dns() {
                records(&m)
                    .filter(|r| r.rtype != crate::dns::rtype::OPT)
                    .for_each(|r| sink.number(r.ttl.into()));
            }
        }
        Field::TlsVersion => tls_hellos(d).for_each(|h| sink.hex(h.version().into(), 4)),
        Field::TlsSni => {
            if let Some(name) = tls_hellos(d).find_map(|h| h.server_name()) {
                sink.text(&mut |s| s.push_str(&String::from_utf8_lossy(name)));
            }
        }
        Field::TlsAlpn => tls_hellos(d).flat_map(|h| h.alpn()).for_each(|p| {
            sink.text(&mut |s| s.push_str(&String::from_utf8_lossy(p)));
        }),
        Field::TlsJa3Full => {
            if let Some(h) = tls_hellos(d).find(|h| h.is_client()) {
                sink.text(&mut |s| h.ja3(s));
            }
        }
        Field::TlsJa4 => {
            if let Some(h) = tls_hellos(d).find(|h| h.is_client()) {
                sink.text(&mut |s| h.ja4(s));
            }
        }
        Field::HttpMethod => text_of(sink, http_head(d, state).and_then(|h| h.method())),
        Field::HttpUri => text_of(sink, http_head(d, state).and_then(|h| h.target())),
        Field::HttpHost => text_of(sink, http_head(d, state).and_then(|h| h.host())),
        Field::HttpUserAgent => text_of(sink, http_head(d, state).and_then(|h| h.user_agent())),
        Field::HttpResponseCode => {
            number_of(sink, http_head(d, state).and_then(|h| h.status_code()))
        }
        Field::NtpMode => number_of(sink, first(d, |l| l.ntp()).map(|h| h.mode())),
        Field::NtpStratum => number_of(sink, first(d, |l| l.ntp()).and_then(|h| h.stratum())),
        Field::DhcpMac => {
            if let Some(m) = first(d, |l| l.dhcp()).and_then(|m| m.client_mac()) {
                sink.text(&mut |s| mac(s, m));
            }
        }
        Field::DhcpHostname => text_of(sink, first(d, |l| l.dhcp()).and_then(|m| m.hostname())),
        Field::DhcpType => number_of(sink, first(d, |l| l.dhcp()).and_then(|m| m.message_type())),
        Field::GtpTeid => {
            if let Some(h) = first(d, |l| l.gtp()) {
                sink.hex(h.teid().into(), 8);
            }
        }
        Field::CapwapMessageType => number_of(
            sink,
            first(d, |l| match l.tunnel()? {
                Tunnel::CapwapControl { message_type, .. } => Some(message_type),
                _ => None,
            }),
        ),
        Field::LwappControlType => number_of(
            sink,
            first(d, |l| match l.tunnel()? {
                Tunnel::Lwapp { control_type } => control_type,
                _ => None,
            }),
        ),
        Field::NdNsTarget => {
            if let Some(a) = nd_target(d, crate::icmp::nd::SOLICITATION) {
                sink.addr(IpAddr::V6(a));
            }
        }
        Field::NdNaTarget => {
            if let Some(a) = nd_target(d, crate::icmp::nd::ADVERTISEMENT) {
                sink.addr(IpAddr::V6(a));
            }
        }
        Field::QuicVersion => {
            if let Some(q) = first(d, |l| l.quic()) {
                q.for_each(|h| sink.hex(h.version().into(), 8));
            }
        }
        Field::QuicDcid => quic_dcids(d, state, &mut |id| {
            // An empty connection id is no value, as in tshark.
            if !id.is_empty() {
                sink.text(&mut |s| {
                    for &b in id {
                        text::push_hex(s, u64::from(b), 2);
                    }
                });
            }
        }),
        Field::Anomalies => d.anomalies().iter().for_each(|a| {
            sink.text(&mut |s| {
                let _ = write!(s, "{a}");
            });
        }),
    }
}

/// The HTTP head the fields show: the first level's that has one, unless `state`
/// knows better.
fn http_head<'s>(d: &Decoded<'s>, state: &'s dyn FieldState) -> Option<http::Head<'s>> {
    match state.http_head(d) {
        HeadState::Packet => first(d, |l| l.http()),
        HeadState::Hidden => None,
        HeadState::Joined(h) => Some(h),
    }
}

/// The destination connection ids of the QUIC packets of the first level that carries
/// QUIC: its long headers, then a short header after them (coalesced, or alone) when
/// `state` knows its connection.
fn quic_dcids<'a>(d: &Decoded<'a>, state: &dyn FieldState, each: &mut dyn FnMut(&[u8])) {
    for level in levels(d) {
        let l = &level.d;
        if l.udp().is_none() {
            continue;
        }
        let short = |rest: &'a [u8]| state.quic_short_dcid(l, rest);
        if let Some(mut q) = l.quic() {
            q.by_ref().for_each(|h| each(h.dcid()));
            if let Some(id) = short(q.remainder()) {
                each(id);
            }
            return;
        }
        if let Some(id) = l.payload().and_then(short) {
            each(id);
            return;
        }
    }
}

fn number_of<S: FieldSink + ?Sized, T: Into<u64>>(sink: &mut S, v: Option<T>) {
    if let Some(v) = v {
        sink.number(v.into());
    }
}

fn flag_of<S: FieldSink + ?Sized>(sink: &mut S, v: Option<bool>) {
    if let Some(v) = v {
        sink.flag(v);
    }
}

/// The hellos of the first TCP level's payload when it starts with a TLS handshake
/// record (records continued in the next segment left out).
fn tls_hellos<'a>(d: &Decoded<'a>) -> impl Iterator<Item = tls::Hello<'a>> + use<'a> {
    let payload = first(d, |l| {
        let p = l.tcp().and_then(|_| l.payload())?;
        let segment = l.payload_wire_len().map_or(p.len(), |n| n as usize);
        Some((p, segment))
    })
    .filter(|(p, _)| tls::is_handshake(p));
    let (p, segment) = payload.unwrap_or((&[], 0));
    tls::hellos_in(p, segment)
}

/// Text from packet bytes (invalid UTF-8 shown as U+FFFD).
fn text_of<S: FieldSink + ?Sized>(sink: &mut S, v: Option<&[u8]>) {
    if let Some(v) = v {
        sink.text(&mut |s| s.push_str(&String::from_utf8_lossy(v)));
    }
}

/// The neighbour-discovery target of the first ICMPv6 message of type `kind`.
fn nd_target(d: &Decoded<'_>, kind: u8) -> Option<std::net::Ipv6Addr> {
    first(d, |l| l.icmpv6())
        .filter(|h| h.icmp_type() == kind)
        .and_then(|h| h.nd_target())
}

/// The records of every section: answers, authority, additional.
fn records<'a>(m: &Message<'a>) -> impl Iterator<Item = Record<'a>> {
    m.answers().chain(m.authority()).chain(m.additional())
}
