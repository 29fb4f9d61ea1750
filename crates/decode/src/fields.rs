//! Named fields in the style of `tshark -T fields`, for the `tracekit fields` command and
//! for library users who want the same values.
//!
//! Values are printed as tshark 4.0 prints them (hex for identifiers and flags, the IPv4
//! fragment offset in 8-byte units, `1`/`0` for flags). Like tshark's first occurrence,
//! network-layer fields come from the outermost IP header, and transport and DNS fields
//! from the first header of their kind, following tunnels inward. `vlan.id` lists the
//! tags of every level, comma-joined.
//!
//! ```
//! use tracekit_decode::fields::Field;
//! let f: Field = "tcp.srcport".parse().unwrap();
//! assert_eq!(f.name(), "tcp.srcport");
//! assert!("no.such.field".parse::<Field>().is_err());
//! ```

use std::fmt::{self, Write};
use std::str::FromStr;

use tracekit_core::Packet;

use crate::dns::{Message, RData, Record};
use crate::tls;
use crate::{Decoded, Transport, ip_proto};

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
    EthSrc = "eth.src", "Ethernet source address";
    EthDst = "eth.dst", "Ethernet destination address";
    EthType = "eth.type", "Ethernet type field (hex; the 802.3 length for LLC frames is not shown)";
    VlanId = "vlan.id", "VLAN ids of every tag, outermost first, comma-joined (inner tunnel levels too)";
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
    NdNsTarget = "icmpv6.nd.ns.target_address", "target address of an ICMPv6 neighbour solicitation";
    NdNaTarget = "icmpv6.nd.na.target_address", "target address of an ICMPv6 neighbour advertisement";
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

fn join<T: fmt::Display>(out: &mut String, items: impl Iterator<Item = T>) {
    for (i, v) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{v}");
    }
}

fn mac(out: &mut String, m: [u8; 6]) {
    let _ = write!(
        out,
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        m[0], m[1], m[2], m[3], m[4], m[5]
    );
}

/// Appends the value of `field` for packet number `number` to `out` (nothing when the
/// packet has no such field).
pub fn write_field<'a>(
    out: &mut String,
    field: Field,
    number: u64,
    packet: &Packet<'_>,
    d: &Decoded<'a>,
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
    let _ = match field {
        Field::FrameNumber => write!(out, "{number}"),
        Field::FrameTimeEpoch => {
            // Rounded to the nearest ns from binary (ERF, pcapng 2^-n) sources, as tshark does;
            // empty for a packet without a time stamp (pcapng Simple Packet Block), as in tshark.
            let ts = packet.ts();
            if !ts.is_known() {
                return;
            }
            let (secs, nanos) = ts.split(tracekit_core::TsResolution::NANO);
            write!(out, "{secs}.{nanos:09}")
        }
        Field::FrameLen => write!(out, "{}", packet.wire_len()),
        Field::FrameCapLen => write!(out, "{}", packet.caplen()),
        Field::EthSrc => {
            if let Some(e) = d.ethernet() {
                mac(out, e.src());
            }
            Ok(())
        }
        Field::EthDst => {
            if let Some(e) = d.ethernet() {
                mac(out, e.dst());
            }
            Ok(())
        }
        Field::EthType => match d.ethernet().map(|e| e.ethertype()) {
            Some(t) if t > 1500 => write!(out, "0x{t:04x}"),
            _ => Ok(()),
        },
        Field::VlanId => {
            // `vlans()` borrows only the bytes, so the ids of every level chain without
            // collecting.
            join(
                out,
                levels(d)
                    .filter(|l| !l.quoted)
                    .flat_map(|l| l.d.vlans().map(|v| v.id)),
            );
            Ok(())
        }
        Field::MplsLabel => {
            join(out, d.mpls_labels().map(|l| l.label));
            Ok(())
        }
        Field::IpVersion => opt(out, d.ip_version()),
        Field::IpSrc => opt(out, d.src_addr()),
        Field::IpDst => opt(out, d.dst_addr()),
        Field::IpProto => opt(out, d.ip_protocol()),
        Field::IpTtl => opt(
            out,
            v4().map(|h| h.ttl())
                .or_else(|| v6().map(|h| h.hop_limit())),
        ),
        Field::IpId => match v4() {
            Some(h) => write!(out, "0x{:04x}", h.ident()),
            None => Ok(()),
        },
        Field::IpFragOffset => opt(out, v4().map(|h| h.frag_offset() / 8)),
        Field::IpFlagsMf => opt(out, v4().map(|h| u8::from(h.more_frags()))),
        Field::IpFlagsDf => opt(out, v4().map(|h| u8::from(h.dont_frag()))),
        Field::Ipv6Src => opt(out, v6().map(|h| h.src())),
        Field::Ipv6Dst => opt(out, v6().map(|h| h.dst())),
        Field::Ipv6FragOffset => opt(out, v6().and(d.fragment()).map(|f| f.offset / 8)),
        Field::Ipv6FragMore => opt(out, v6().and(d.fragment()).map(|f| u8::from(f.more))),
        Field::TcpSrcport => opt(out, ports(ip_proto::TCP).map(|p| p.0)),
        Field::TcpDstport => opt(out, ports(ip_proto::TCP).map(|p| p.1)),
        Field::TcpSeqRaw => opt(out, tcp().map(|h| h.seq_number())),
        Field::TcpAckRaw => opt(out, tcp().map(|h| h.ack_number())),
        Field::TcpFlags => match tcp() {
            Some(h) => write!(out, "0x{:04x}", h.flags()),
            None => Ok(()),
        },
        Field::TcpWindow => opt(out, tcp().map(|h| h.window())),
        Field::TcpLen => opt(
            out,
            first(d, |l| l.tcp().and_then(|_| l.payload_wire_len())),
        ),
        Field::UdpSrcport => opt(out, ports(ip_proto::UDP).map(|p| p.0)),
        Field::UdpDstport => opt(out, ports(ip_proto::UDP).map(|p| p.1)),
        Field::UdpLength => opt(out, udp().map(|h| h.length())),
        Field::SctpSrcport => opt(out, first(d, |l| l.sctp()).map(|h| h.src_port())),
        Field::SctpDstport => opt(out, first(d, |l| l.sctp()).map(|h| h.dst_port())),
        Field::IcmpType => opt(out, first(d, |l| l.icmp()).map(|h| h.icmp_type())),
        Field::IcmpCode => opt(out, first(d, |l| l.icmp()).map(|h| h.code())),
        Field::Icmpv6Type => opt(out, first(d, |l| l.icmpv6()).map(|h| h.icmp_type())),
        Field::DnsId => match first(d, |l| l.dns()) {
            Some(m) => write!(out, "0x{:04x}", m.id()),
            None => Ok(()),
        },
        Field::DnsResponse => opt(
            out,
            first(d, |l| l.dns()).map(|m| u8::from(m.is_response())),
        ),
        Field::DnsQryName => {
            if let Some(m) = first(d, |l| l.dns()) {
                join(out, m.questions().map(|q| q.name));
            }
            Ok(())
        }
        Field::DnsQryType => {
            if let Some(m) = first(d, |l| l.dns()) {
                join(out, m.questions().map(|q| q.qtype));
            }
            Ok(())
        }
        Field::DnsRcode => opt(
            out,
            first(d, |l| l.dns())
                .filter(|m| m.is_response())
                .map(|m| m.rcode()),
        ),
        Field::DnsA => {
            if let Some(m) = first(d, |l| l.dns()) {
                join(
                    out,
                    records(&m).filter_map(|r| match r.data() {
                        RData::A(a) => Some(a),
                        _ => None,
                    }),
                );
            }
            Ok(())
        }
        Field::DnsAaaa => {
            if let Some(m) = first(d, |l| l.dns()) {
                join(
                    out,
                    records(&m).filter_map(|r| match r.data() {
                        RData::Aaaa(a) => Some(a),
                        _ => None,
                    }),
                );
            }
            Ok(())
        }
        Field::DnsCname => {
            if let Some(m) = first(d, |l| l.dns()) {
                join(
                    out,
                    records(&m).filter_map(|r| match r.data() {
                        RData::Cname(n) => Some(n),
                        _ => None,
                    }),
                );
            }
            Ok(())
        }
        Field::DnsRespTtl => {
            if let Some(m) = first(d, |l| l.dns()) {
                join(
                    out,
                    records(&m)
                        .filter(|r| r.rtype != crate::dns::rtype::OPT)
                        .map(|r| r.ttl),
                );
            }
            Ok(())
        }
        Field::TlsVersion => {
            for (i, h) in tls_hellos(d).enumerate() {
                let _ = write!(out, "{}0x{:04x}", if i > 0 { "," } else { "" }, h.version());
            }
            Ok(())
        }
        Field::TlsSni => {
            if let Some(name) = tls_hellos(d).find_map(|h| h.server_name()) {
                out.push_str(&String::from_utf8_lossy(name));
            }
            Ok(())
        }
        Field::TlsAlpn => {
            join(
                out,
                tls_hellos(d)
                    .flat_map(|h| h.alpn())
                    .map(String::from_utf8_lossy),
            );
            Ok(())
        }
        Field::TlsJa3Full => {
            if let Some(h) = tls_hellos(d).find(|h| h.is_client()) {
                h.ja3(out);
            }
            Ok(())
        }
        Field::HttpMethod => text(out, first(d, |l| l.http()?.method())),
        Field::HttpUri => text(out, first(d, |l| l.http()?.target())),
        Field::HttpHost => text(out, first(d, |l| l.http()).and_then(|h| h.host())),
        Field::HttpUserAgent => text(out, first(d, |l| l.http()).and_then(|h| h.user_agent())),
        Field::HttpResponseCode => opt(out, first(d, |l| l.http()?.status_code())),
        Field::NtpMode => opt(out, first(d, |l| l.ntp()).map(|h| h.mode())),
        Field::NtpStratum => opt(out, first(d, |l| l.ntp()).and_then(|h| h.stratum())),
        Field::DhcpMac => {
            if let Some(m) = first(d, |l| l.dhcp()).and_then(|m| m.client_mac()) {
                mac(out, m);
            }
            Ok(())
        }
        Field::DhcpHostname => text(out, first(d, |l| l.dhcp()).and_then(|m| m.hostname())),
        Field::DhcpType => opt(out, first(d, |l| l.dhcp()).and_then(|m| m.message_type())),
        Field::GtpTeid => match first(d, |l| l.gtp()) {
            Some(h) => write!(out, "0x{:08x}", h.teid()),
            None => Ok(()),
        },
        Field::NdNsTarget => opt(out, nd_target(d, crate::icmp::nd::SOLICITATION)),
        Field::NdNaTarget => opt(out, nd_target(d, crate::icmp::nd::ADVERTISEMENT)),
        Field::Anomalies => {
            join(out, d.anomalies().iter());
            Ok(())
        }
    };
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
fn text(out: &mut String, v: Option<&[u8]>) -> fmt::Result {
    if let Some(v) = v {
        out.push_str(&String::from_utf8_lossy(v));
    }
    Ok(())
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

fn opt<T: fmt::Display>(out: &mut String, v: Option<T>) -> fmt::Result {
    match v {
        Some(v) => write!(out, "{v}"),
        None => Ok(()),
    }
}
