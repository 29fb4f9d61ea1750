//! One hand-built packet per anomaly: each must be reported, with nothing read past the
//! captured bytes, and the accessors behind the damage must say `None`.

use std::collections::BTreeSet;

use tracekit_core::LinkType;
use tracekit_decode::{Anomaly, Decoded, Transport};
use tracekit_testdata::builder::tcp_flags::{ACK, SYN};
use tracekit_testdata::builder::{
    Ethernet, Icmp, Icmpv6, Ipv4, Ipv6, Ipv6Ext, PacketBuilder, Tcp, Udp,
};

const V4_SRC: [u8; 4] = [10, 0, 0, 1];
const V4_DST: [u8; 4] = [10, 0, 0, 2];
const V6_SRC: [u8; 16] = [0x20, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const V6_DST: [u8; 16] = [0x20, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
/// A PadN option filling the rest of an 8-byte extension header.
const PADN: [u8; 6] = [1, 4, 0, 0, 0, 0];

fn eth_header() -> Ethernet {
    Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
}

fn v4<'a>() -> Ipv4<'a> {
    Ipv4::new(V4_SRC, V4_DST)
}

fn v6() -> Ipv6 {
    Ipv6::new(V6_SRC, V6_DST)
}

/// Ethernet and `ip`, for the layers after them.
fn eth_ipv4(ip: Ipv4<'_>) -> PacketBuilder<'_> {
    let mut b = PacketBuilder::new();
    b.ethernet(eth_header()).ipv4(ip);
    b
}

/// Ethernet and `ip`, for the layers after them.
fn eth_ipv6<'a>(ip: Ipv6) -> PacketBuilder<'a> {
    let mut b = PacketBuilder::new();
    b.ethernet(eth_header()).ipv6(ip);
    b
}

fn syn() -> Tcp {
    Tcp::new(1, 2).flags(SYN)
}

fn eth(data: &[u8]) -> Decoded<'_> {
    Decoded::from_bytes(data, LinkType::ETHERNET, data.len() as u32)
}

/// `data` as captured, `wire` bytes on the wire.
fn snapped(data: &[u8], wire: usize) -> Decoded<'_> {
    Decoded::from_bytes(data, LinkType::ETHERNET, wire as u32)
}

/// An Ethernet header saying `t`, then `rest` as it is.
fn ethertype(t: u16, rest: &[u8]) -> Vec<u8> {
    PacketBuilder::new()
        .ethernet(eth_header().ethertype(t))
        .payload(rest)
        .build()
}

/// Checks that `d` reports `want` and returns every anomaly it reports.
fn expect(d: &Decoded<'_>, want: Anomaly) -> Vec<Anomaly> {
    let got: Vec<Anomaly> = d.anomalies().iter().collect();
    assert!(got.contains(&want), "expected {want}, got {got:?}");
    got
}

#[allow(clippy::vec_init_then_push)]
fn cases() -> Vec<(Anomaly, Vec<u8>, Option<usize>, LinkType)> {
    let e = LinkType::ETHERNET;
    let mut v = Vec::new();
    let full = eth_ipv4(v4()).tcp(syn()).payload(b"hello").build();
    v.push((Anomaly::LinkTruncated, full[..10].to_vec(), None, e));
    v.push((
        Anomaly::MetaTruncated,
        vec![0, 0, 8, 0],
        None,
        LinkType::IEEE802_11_RADIOTAP,
    ));
    v.push((
        Anomaly::MetaBadLength,
        [vec![0, 0, 4, 0, 0, 0, 0, 0], vec![0; 24]].concat(),
        None,
        LinkType::IEEE802_11_RADIOTAP,
    ));
    v.push((Anomaly::VlanTruncated, ethertype(0x8100, &[0, 5]), None, e));
    v.push((
        Anomaly::VlanTooDeep,
        ethertype(0x8100, &[0, 5, 0x81, 0].repeat(9)),
        None,
        e,
    ));
    v.push((Anomaly::MplsTruncated, ethertype(0x8847, &[0, 1]), None, e));
    v.push((
        Anomaly::MplsTooDeep,
        ethertype(0x8847, &[0, 1, 0, 64].repeat(17)),
        None,
        e,
    ));
    v.push((
        Anomaly::PppoeTruncated,
        ethertype(0x8864, &[0x11, 0, 0, 1]),
        None,
        e,
    ));
    v.push((
        Anomaly::Ipv4Truncated,
        full[..14 + 10].to_vec(),
        Some(full.len()),
        e,
    ));
    let bad = eth_ipv4(v4().version(6))
        .tcp(syn())
        .payload(b"hello")
        .build();
    v.push((Anomaly::Ipv4BadVersion, bad, None, e));
    let bad = eth_ipv4(v4().ihl(4)).tcp(syn()).payload(b"hello").build();
    v.push((Anomaly::Ipv4BadIhl, bad, None, e));
    let opt = eth_ipv4(v4().options(&[1, 1, 1, 0]))
        .tcp(Tcp::new(1, 2))
        .build();
    v.push((
        Anomaly::Ipv4OptionsTruncated,
        opt[..14 + 22].to_vec(),
        Some(opt.len()),
        e,
    ));
    let bad = eth_ipv4(v4().total_len(10))
        .tcp(syn())
        .payload(b"hello")
        .build();
    v.push((Anomaly::Ipv4BadTotalLength, bad, None, e));
    let bad = eth_ipv4(v4().total_len(1000))
        .tcp(syn())
        .payload(b"hello")
        .build();
    v.push((Anomaly::Ipv4LengthBeyondFrame, bad, None, e));
    // A timestamp option claiming 10 bytes where 4 are left.
    let bad = eth_ipv4(v4().options(&[0x44, 10, 0, 0]))
        .tcp(Tcp::new(1, 2))
        .build();
    v.push((Anomaly::Ipv4OptionOverrun, bad, None, e));
    let full6 = eth_ipv6(v6()).udp(Udp::new(1, 2)).build();
    v.push((
        Anomaly::Ipv6Truncated,
        full6[..14 + 30].to_vec(),
        Some(full6.len()),
        e,
    ));
    let bad = eth_ipv6(v6().version(4)).udp(Udp::new(1, 2)).build();
    v.push((Anomaly::Ipv6BadVersion, bad, None, e));
    let bad = eth_ipv6(v6().payload_len(1000)).udp(Udp::new(1, 2)).build();
    v.push((Anomaly::Ipv6BadPayloadLength, bad, None, e));
    let with_hbh = eth_ipv6(v6())
        .ipv6_ext(Ipv6Ext::hop_by_hop(&PADN))
        .udp(Udp::new(1, 2))
        .build();
    v.push((
        Anomaly::Ipv6ExtTruncated,
        with_hbh[..14 + 44].to_vec(),
        Some(with_hbh.len()),
        e,
    ));
    let mut bad = eth_ipv6(v6().payload_len(4))
        .ipv6_ext(Ipv6Ext::hop_by_hop(&PADN))
        .udp(Udp::new(1, 2))
        .build();
    bad.truncate(14 + 44);
    v.push((Anomaly::Ipv6ExtOverrun, bad, None, e));
    // 17 destination-options headers, each announcing another: more than the builder
    // holds as layers, so written as bytes.
    let chain = [60u8, 0, 1, 4, 0, 0, 0, 0].repeat(17);
    v.push((
        Anomaly::Ipv6TooManyExt,
        eth_ipv6(v6().next_header(60)).payload(&chain).build(),
        None,
        e,
    ));
    let dst_then_hbh = eth_ipv6(v6())
        .ipv6_ext(Ipv6Ext::destination(&PADN))
        .ipv6_ext(Ipv6Ext::hop_by_hop(&PADN))
        .udp(Udp::new(1, 2))
        .build();
    v.push((Anomaly::Ipv6HopByHopNotFirst, dst_then_hbh, None, e));
    let atomic = eth_ipv6(v6())
        .ipv6_ext(Ipv6Ext::fragment(0, false, 7))
        .udp(Udp::new(1, 2))
        .build();
    v.push((Anomaly::FragmentUseless, atomic, None, e));
    let mut cut = eth_ipv4(v4()).tcp(syn()).build();
    let wire = cut.len();
    cut.truncate(14 + 20 + 10);
    v.push((Anomaly::TcpTruncated, cut, Some(wire), e));
    let bad = eth_ipv4(v4())
        .tcp(syn().data_offset(4))
        .payload(b"hello")
        .build();
    v.push((Anomaly::TcpDataOffsetTooSmall, bad, None, e));
    let with_opts = eth_ipv4(v4()).tcp(syn().mss(1460)).build();
    v.push((
        Anomaly::TcpOptionsTruncated,
        with_opts[..14 + 20 + 22].to_vec(),
        Some(with_opts.len()),
        e,
    ));
    let bad = eth_ipv4(v4())
        .tcp(syn().data_offset(15))
        .payload(b"hello")
        .build();
    v.push((Anomaly::TcpDataOffsetBeyondSegment, bad, None, e));
    v.push((
        Anomaly::TcpOptionOverrun,
        eth_ipv4(v4())
            .tcp(syn().option_bytes(&[2, 10, 0, 0]))
            .build(),
        None,
        e,
    ));
    let u = eth_ipv4(v4()).udp(Udp::new(1, 2)).payload(b"abcd").build();
    v.push((
        Anomaly::UdpTruncated,
        u[..14 + 20 + 5].to_vec(),
        Some(u.len()),
        e,
    ));
    let bad = eth_ipv4(v4())
        .udp(Udp::new(1, 2).length(4))
        .payload(b"abcd")
        .build();
    v.push((Anomaly::UdpBadLength, bad, None, e));
    let icmp = eth_ipv4(v4()).icmp(Icmp::echo_request(1, 1)).build();
    v.push((
        Anomaly::IcmpTruncated,
        icmp[..14 + 20 + 4].to_vec(),
        Some(icmp.len()),
        e,
    ));
    let icmp6 = eth_ipv6(v6()).icmpv6(Icmpv6::echo_request(1, 1)).build();
    v.push((
        Anomaly::Icmpv6Truncated,
        icmp6[..14 + 40 + 2].to_vec(),
        Some(icmp6.len()),
        e,
    ));
    let sctp = eth_ipv4(v4().protocol(132)).payload(&[0; 12]).build();
    v.push((
        Anomaly::SctpTruncated,
        sctp[..14 + 20 + 8].to_vec(),
        Some(sctp.len()),
        e,
    ));
    let gre = eth_ipv4(v4().protocol(47))
        .payload(&[0x20, 0, 0x08, 0, 0, 0, 0, 1])
        .build();
    v.push((
        Anomaly::GreTruncated,
        gre[..14 + 20 + 6].to_vec(),
        Some(gre.len()),
        e,
    ));
    v.push((
        Anomaly::GreBadVersion,
        eth_ipv4(v4().protocol(47))
            .payload(&[0, 3, 0x08, 0])
            .build(),
        None,
        e,
    ));
    v.push((
        Anomaly::TunnelTruncated,
        eth_ipv4(v4())
            .udp(Udp::new(1000, 4789))
            .payload(&[8, 0, 0, 0])
            .build(),
        None,
        e,
    ));
    v.push((
        Anomaly::TunnelMalformed,
        eth_ipv4(v4())
            .udp(Udp::new(1000, 4789))
            .payload(&[0; 8])
            .build(),
        None,
        e,
    ));
    // A GRE routing field (R) whose one source route entry is not followed by the NULL
    // entry: the packet ends first.
    v.push((
        Anomaly::GreRoutingUnterminated,
        eth_ipv4(v4().protocol(47))
            .payload(&[0x40, 0, 0x08, 0, 0, 0, 0, 0, 0x08, 0, 0, 4, 1, 2, 3, 4])
            .build(),
        None,
        e,
    ));
    // DNS: a query whose name points at itself; a response cut inside its question.
    let dns_loop = [0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 12, 0, 1, 0, 1];
    v.push((
        Anomaly::DnsMalformed,
        eth_ipv4(v4())
            .udp(Udp::new(1000, 53))
            .payload(&dns_loop)
            .build(),
        None,
        e,
    ));
    let dns = [
        0, 1, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0, 1, b'a', 0, 0, 1, 0, 1,
    ];
    let dns = eth_ipv4(v4()).udp(Udp::new(53, 1000)).payload(&dns).build();
    v.push((
        Anomaly::DnsTruncated,
        dns[..dns.len() - 3].to_vec(),
        Some(dns.len()),
        e,
    ));
    // Ten IPv4 headers, each saying IP-in-IP and covering what follows it.
    let mut deep = PacketBuilder::new();
    deep.ethernet(eth_header());
    for _ in 0..10 {
        deep.ipv4(v4().protocol(4));
    }
    v.push((Anomaly::TunnelTooDeep, deep.build(), None, e));
    // A CAPWAP data packet (UDP 5247) with the F bit: the first fragment of an 802.3
    // frame (HLEN 2 words, fragment id 7, offset 0).
    let mut capwap = vec![0x00, 0x10, 0x00, 0x80, 0, 7, 0, 0];
    capwap.extend([2, 0, 0, 0, 0, 3, 2, 0, 0, 0, 0, 4, 0x08, 0x00]);
    v.push((
        Anomaly::TunnelFragment,
        eth_ipv4(v4())
            .udp(Udp::new(1000, 5247))
            .payload(&capwap)
            .build(),
        None,
        e,
    ));
    v
}

#[test]
fn every_anomaly_has_a_packet_that_raises_it() {
    let mut covered = BTreeSet::new();
    for (want, data, wire, link) in cases() {
        let d = Decoded::from_bytes(&data, link, wire.unwrap_or(data.len()) as u32);
        expect(&d, want);
        covered.insert(want as u8);
    }
    let missing: Vec<_> = Anomaly::ALL
        .iter()
        .filter(|a| !covered.contains(&(**a as u8)))
        .collect();
    assert!(
        missing.is_empty(),
        "anomalies without a test packet: {missing:?}"
    );
}

#[test]
fn a_clean_packet_has_no_anomalies() {
    for data in [
        eth_ipv4(v4())
            .tcp(Tcp::new(1, 2).flags(SYN | ACK).mss(1460).nop().wscale(7))
            .payload(b"payload")
            .build(),
        // (not port 53: five bytes there would be a damaged DNS message)
        eth_ipv6(v6())
            .udp(Udp::new(5000, 4000))
            .payload(b"hello")
            .build(),
        eth_ipv4(v4())
            .icmp(Icmp::echo_request(1, 1))
            .payload(b"ping")
            .build(),
    ] {
        assert!(eth(&data).anomalies().is_empty());
    }
}

#[test]
fn accessors_behind_the_damage_are_none() {
    let full = eth_ipv4(v4()).tcp(syn()).payload(b"hello").build();
    let d = snapped(&full[..14 + 10], full.len());
    assert!(
        d.ipv4().is_none() && d.tcp().is_none() && d.src_port().is_none() && d.payload().is_none()
    );
    let d = snapped(&full[..14 + 20 + 10], full.len());
    assert!(d.ipv4().is_some());
    assert!(d.tcp().is_none());
    assert!(matches!(
        d.transport(),
        Some(Transport::Truncated { protocol: 6, .. })
    ));
    assert!(d.src_port().is_none());
    let bad = eth_ipv4(v4())
        .tcp(syn().data_offset(4))
        .payload(b"hello")
        .build();
    let d = eth(&bad);
    assert!(d.tcp().is_some(), "the fixed header is there");
    assert!(d.payload().is_none(), "but its length is nonsense");
}

#[test]
fn snapped_payload_is_what_was_captured_and_padding_is_not_payload() {
    let mut b = eth_ipv4(v4());
    b.udp(Udp::new(1, 2)).payload(b"0123456789");
    let full = b.build();
    let d = snapped(&full[..full.len() - 4], full.len());
    assert_eq!(d.payload(), Some(&b"012345"[..]));
    assert_eq!(d.payload_wire_len(), Some(10));
    assert!(d.anomalies().is_empty());
    let padded = b.trailer(&[0xEE; 6]).build();
    assert_eq!(padded.len(), full.len() + 6);
    let d = eth(&padded);
    assert_eq!(d.payload(), Some(&b"0123456789"[..]));
}
