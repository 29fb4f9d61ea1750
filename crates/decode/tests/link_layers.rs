//! Hand-built packets for the link layers and tunnels the corpus does not cover (or
//! covers thinly): PFLOG, NFLOG, Prism, RadioTap fields, LINKTYPE_ERF records, Cisco
//! HDLC, LLC/SNAP, MPLS pseudowires, PPPoE, GRE with key and sequence, Ethernet over GRE,
//! Geneve, GTP-U, VXLAN on another port, IPv6-in-IPv6 and the depth limit.

use std::net::IpAddr;

use tracekit_core::LinkType;
use tracekit_decode::{Decoded, Framing, LinkKind, Transport, Tunnel, TunnelPorts, ethertype};
use tracekit_testdata::builder::tcp_flags::SYN;
use tracekit_testdata::builder::{Ethernet, Ipv4, Ipv6, Mpls, PacketBuilder, Tcp, Udp, Vlan};

const V4_SRC: [u8; 4] = [10, 0, 0, 1];
const V4_DST: [u8; 4] = [10, 0, 0, 2];

fn eth_header() -> Ethernet {
    Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
}

fn v4<'a>() -> Ipv4<'a> {
    Ipv4::new(V4_SRC, V4_DST)
}

/// Pushes the packet every test looks for: IPv4 10.0.0.1 -> 10.0.0.2, UDP 1234 -> 5001,
/// payload "data".
fn push_ipv4_udp<'a, 'b>(b: &'b mut PacketBuilder<'a>) -> &'b mut PacketBuilder<'a> {
    b.ipv4(v4()).udp(Udp::new(1234, 5001)).payload(b"data")
}

/// That packet alone.
fn ipv4_udp() -> Vec<u8> {
    push_ipv4_udp(&mut PacketBuilder::new()).build()
}

/// That packet behind an Ethernet header.
fn eth_ipv4_udp() -> Vec<u8> {
    push_ipv4_udp(PacketBuilder::new().ethernet(eth_header())).build()
}

fn decode(link: LinkType, data: &[u8]) -> Decoded<'_> {
    Decoded::from_bytes(data, link, data.len() as u32)
}

fn assert_udp(d: &Decoded<'_>) {
    assert_eq!(
        d.src_addr(),
        Some(IpAddr::from([10, 0, 0, 1])),
        "{:?}",
        d.anomalies()
    );
    assert_eq!((d.src_port(), d.dst_port()), (Some(1234), Some(5001)));
    assert_eq!(d.payload(), Some(&b"data"[..]));
    assert!(d.anomalies().is_empty(), "{:?}", d.anomalies());
}

#[test]
fn pflog_header_length_is_rounded_to_four() {
    let mut p = vec![0u8; 64];
    p[0] = 61; // hdrlen, padded to 64
    p[1] = 2; // AF_INET
    p.extend(ipv4_udp());
    let d = decode(LinkType::PFLOG, &p);
    assert_eq!(d.link().kind, LinkKind::Pflog);
    assert_udp(&d);
}

#[test]
fn nflog_payload_tlv_is_found_after_others() {
    let mut p = vec![2, 0, 0, 0]; // AF_INET, version 0, resource id
    // a prefix TLV (type 10) of 5 bytes, padded to 8
    p.extend_from_slice(&[5, 0, 10, 0, b'x', 0, 0, 0]);
    let ip = ipv4_udp();
    p.extend_from_slice(&((ip.len() + 4) as u16).to_le_bytes());
    p.extend_from_slice(&9u16.to_le_bytes());
    p.extend(ip);
    let d = decode(LinkType::NFLOG, &p);
    assert_eq!(d.link().kind, LinkKind::Nflog);
    assert_udp(&d);
}

fn wifi_data() -> Vec<u8> {
    // data frame, to-DS, 24-byte header, then LLC/SNAP for IPv4
    let mut f = vec![0x08, 0x01];
    f.extend_from_slice(&[0u8; 22]);
    f.extend_from_slice(&[0xAA, 0xAA, 0x03, 0, 0, 0, 0x08, 0x00]);
    f.extend(ipv4_udp());
    f
}

#[test]
fn radiotap_fields_and_fcs() {
    // present: TSFT, flags, rate, channel, dBm signal, dBm noise, antenna
    let present: u32 = 1 | 2 | 4 | 8 | 32 | 64 | (1 << 11);
    let mut rt = vec![0, 0, 0, 0];
    rt.extend_from_slice(&present.to_le_bytes());
    rt.extend_from_slice(&123456789u64.to_le_bytes()); // TSFT at 8 (aligned)
    rt.push(0x10); // flags: FCS at end
    rt.push(108); // rate 54 Mb/s
    rt.extend_from_slice(&2437u16.to_le_bytes()); // channel freq (aligned at 18)
    rt.extend_from_slice(&0x00a0u16.to_le_bytes());
    rt.push((-42i8) as u8);
    rt.push((-95i8) as u8);
    rt.push(1); // antenna
    let len = rt.len() as u16;
    rt[2..4].copy_from_slice(&len.to_le_bytes());
    let mut p = rt.clone();
    p.extend(wifi_data());
    p.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef]); // FCS
    let d = decode(LinkType::IEEE802_11_RADIOTAP, &p);
    let r = d.radiotap().unwrap();
    assert_eq!(r.tsft, Some(123456789));
    assert_eq!(r.rate, Some(108));
    assert_eq!(r.channel_freq, Some(2437));
    assert_eq!(
        (r.signal_dbm, r.noise_dbm, r.antenna),
        (Some(-42), Some(-95), Some(1))
    );
    assert_eq!(d.link().kind, LinkKind::Ieee80211);
    assert_udp(&d);
}

#[test]
fn prism_header_then_80211() {
    let mut p = vec![0u8; 144];
    p[4..8].copy_from_slice(&144u32.to_le_bytes());
    p.extend(wifi_data());
    assert_udp(&decode(LinkType::IEEE802_11_PRISM, &p));
}

#[test]
fn protected_and_management_80211_frames_have_no_network_layer() {
    let mut f = wifi_data();
    f[1] |= 0x40;
    assert!(decode(LinkType::IEEE802_11, &f).layer3().is_none());
    f[0] = 0x80; // beacon
    assert!(decode(LinkType::IEEE802_11, &f).ipv4().is_none());
}

#[test]
fn erf_records_with_extension_headers() {
    let mut p = vec![0u8; 16];
    p[8] = 2 | 0x80; // ETH with an extension header
    let eth = eth_ipv4_udp();
    let rlen = 16 + 8 + 2 + eth.len();
    p[10..12].copy_from_slice(&(rlen as u16).to_be_bytes());
    p.extend_from_slice(&[0x05, 0, 0, 0, 0, 0, 0, 0]); // last extension header
    p.extend_from_slice(&[0, 0]); // offset/pad
    p.extend(eth);
    let d = decode(LinkType::ERF, &p);
    assert_eq!(d.link().kind, LinkKind::Ethernet);
    assert_udp(&d);
    // IPv4 record type
    let mut q = vec![0u8; 16];
    q[8] = 22;
    let ip = ipv4_udp();
    q[10..12].copy_from_slice(&((16 + ip.len()) as u16).to_be_bytes());
    q.extend(ip);
    assert_udp(&decode(LinkType::ERF, &q));
}

/// A `LINKTYPE_ERF` record of type `ty` around `payload` (no extension headers).
fn erf_record(ty: u8, payload: &[u8]) -> Vec<u8> {
    let mut r = vec![0u8; 16];
    r[8] = ty;
    r[10..12].copy_from_slice(&((16 + payload.len()) as u16).to_be_bytes());
    r.extend_from_slice(payload);
    r
}

#[test]
fn erf_colour_types_carry_what_the_erf_spec_says() {
    let mut eth = vec![0, 0]; // offset/pad
    eth.extend(eth_ipv4_udp());
    let mut hdlc = vec![0x0f, 0x00, 0x08, 0x00]; // Cisco HDLC
    hdlc.extend(ipv4_udp());
    let mut ppp = vec![0xff, 0x03, 0x00, 0x21];
    ppp.extend(ipv4_udp());
    // ETH, COLOR_ETH (11), DSM_COLOR_ETH (16), COLOR_HASH_ETH (20)
    for ty in [2, 11, 16, 20] {
        let r = erf_record(ty, &eth);
        let d = decode(LinkType::ERF, &r);
        assert_eq!(d.link().kind, LinkKind::Ethernet, "type {ty}");
        assert_udp(&d);
    }
    // HDLC_POS, COLOR_HDLC_POS (10), DSM_COLOR_HDLC_POS (15), COLOR_HASH_POS (19)
    for ty in [1, 10, 15, 19] {
        let r = erf_record(ty, &hdlc);
        let d = decode(LinkType::ERF, &r);
        assert_eq!(d.link().kind, LinkKind::CiscoHdlc, "type {ty}");
        assert_udp(&d);
        let r = erf_record(ty, &ppp);
        let d = decode(LinkType::ERF, &r);
        assert_eq!(d.link().kind, LinkKind::Ppp, "type {ty}");
        assert_udp(&d);
    }
    // COLOR_MC_HDLC_POS (17) has a multichannel header first: not taken for HDLC; and
    // an Ethernet frame is not read from a COLOR_HDLC_POS (10) record.
    assert!(
        decode(LinkType::ERF, &erf_record(17, &hdlc))
            .ipv4()
            .is_none()
    );
    assert!(
        decode(LinkType::ERF, &erf_record(10, &eth))
            .ethernet()
            .is_none()
    );
}

#[test]
fn cisco_hdlc_ppp_and_llc_snap() {
    let mut h = vec![0x0f, 0x00, 0x08, 0x00];
    h.extend(ipv4_udp());
    assert_udp(&decode(LinkType::C_HDLC, &h));
    let mut ppp = vec![0xff, 0x03, 0x00, 0x21];
    ppp.extend(ipv4_udp());
    assert_udp(&decode(LinkType::PPP, &ppp));
    // An 802.3 length instead of an ethertype, then LLC/SNAP saying IPv4.
    let llc_len = 8 + ipv4_udp().len() as u16;
    let mut b = PacketBuilder::new();
    b.ethernet(eth_header().ethertype(llc_len))
        .payload(&[0xAA, 0xAA, 0x03, 0, 0, 0, 0x08, 0x00]);
    let snap = push_ipv4_udp(&mut b)
        .trailer(&[0; 6]) // padding beyond the 802.3 length
        .build();
    assert_udp(&decode(LinkType::ETHERNET, &snap));
}

#[test]
fn loopback_in_both_byte_orders() {
    for af in [2u32.to_le_bytes(), 2u32.to_be_bytes()] {
        let mut p = af.to_vec();
        p.extend(ipv4_udp());
        assert_udp(&decode(LinkType::NULL, &p));
    }
    let mut p = 2u32.to_be_bytes().to_vec();
    p.extend(ipv4_udp());
    assert_udp(&decode(LinkType::LOOP, &p));
}

#[test]
fn mpls_pseudowire_with_control_word_and_pppoe() {
    let mut b = PacketBuilder::new();
    b.ethernet(eth_header())
        .mpls(Mpls::new(16))
        .mpls(Mpls::new(32))
        .payload(&[0, 0, 0, 0]) // control word
        .ethernet(eth_header())
        .vlan(Vlan::new(100).ethertype(0x8864)) // PPPoE session
        .payload(&[0x11, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x21]);
    let p = push_ipv4_udp(&mut b).build();
    let d = decode(LinkType::ETHERNET, &p);
    let labels: Vec<u32> = d.mpls_labels().map(|l| l.label).collect();
    assert_eq!(labels, [16, 32]);
    assert_eq!(d.vlans().map(|v| v.id).collect::<Vec<_>>(), [100]);
    assert_udp(&d);
}

/// Ethernet, then IPv4 saying `proto`, then `header` and the UDP packet behind an
/// Ethernet header (`inner_eth`) or not.
fn tunnel(proto: u8, header: &[u8], inner_eth: bool) -> Vec<u8> {
    let mut b = PacketBuilder::new();
    b.ethernet(eth_header())
        .ipv4(v4().protocol(proto))
        .payload(header);
    if inner_eth {
        b.ethernet(eth_header());
    }
    push_ipv4_udp(&mut b).build()
}

/// Ethernet, IPv4 and UDP `sport` -> `dport`, then `header` and the UDP packet behind an
/// Ethernet header (`inner_eth`) or not.
fn udp_tunnel(sport: u16, dport: u16, header: &[u8], inner_eth: bool) -> Vec<u8> {
    let mut b = PacketBuilder::new();
    b.ethernet(eth_header())
        .ipv4(v4())
        .udp(Udp::new(sport, dport))
        .payload(header);
    if inner_eth {
        b.ethernet(eth_header());
    }
    push_ipv4_udp(&mut b).build()
}

#[test]
fn gre_with_key_and_sequence_carrying_ethernet() {
    let mut gre = vec![0x30, 0x00, 0x65, 0x58]; // K and S set, transparent Ethernet bridging
    gre.extend_from_slice(&0xabcdu32.to_be_bytes());
    gre.extend_from_slice(&7u32.to_be_bytes());
    let p = tunnel(47, &gre, true);
    let d = decode(LinkType::ETHERNET, &p);
    let g = d.gre().unwrap();
    assert_eq!(
        (g.key(), g.sequence(), g.protocol()),
        (Some(0xabcd), Some(7), ethertype::TEB)
    );
    assert!(matches!(d.tunnel(), Some(Tunnel::Gre(_))));
    let inner = d.inner().unwrap();
    assert_eq!(inner.framing(), Framing::Ethertype(ethertype::TEB));
    assert_udp(&inner);
    assert!(d.src_port().is_none(), "the outer view stays the default");
}

#[test]
fn geneve_gtpu_and_vxlan_on_a_configured_port() {
    let geneve = [0x01, 0x00, 0x65, 0x58, 0, 0, 0x2a, 0, 0, 0, 0, 0]; // one 4-byte option
    let p = udp_tunnel(5000, 6081, &geneve, true);
    let d = decode(LinkType::ETHERNET, &p);
    assert!(matches!(
        d.tunnel(),
        Some(Tunnel::Geneve {
            vni: 42,
            protocol: 0x6558
        })
    ));
    assert_udp(&d.inner().unwrap());

    let gtp = [0x32, 0xff, 0, 0, 0, 0, 0, 9, 0, 1, 0, 0x85, 1, 0, 0, 0]; // seq + one extension
    let p = udp_tunnel(2152, 2152, &gtp, false);
    let d = decode(LinkType::ETHERNET, &p);
    assert!(matches!(d.tunnel(), Some(Tunnel::GtpU { teid: 9 })));
    assert_udp(&d.inner().unwrap());

    let vx = [0x08, 0, 0, 0, 0, 0, 5, 0];
    let p = udp_tunnel(40000, 8472, &vx, true);
    assert!(
        decode(LinkType::ETHERNET, &p).tunnel().is_none(),
        "8472 is not VXLAN by default"
    );
    let d = decode(LinkType::ETHERNET, &p).tunnel_ports(TunnelPorts {
        vxlan: 8472,
        ..TunnelPorts::default()
    });
    assert!(matches!(d.tunnel(), Some(Tunnel::Vxlan { vni: 5 })));
    assert_udp(&d.inner().unwrap());
}

#[test]
fn ipv6_in_ipv6_nests_until_the_limit() {
    let mut v6 = [0u8; 16];
    v6[..2].copy_from_slice(&[0x20, 0x01]);
    let mut b = PacketBuilder::new();
    for last in 1..=3 {
        v6[15] = last;
        b.ipv6(Ipv6::new(v6, v6));
    }
    let pkt = push_ipv4_udp(&mut b).build();
    let d = decode(LinkType::RAW, &pkt);
    assert!(matches!(
        d.transport(),
        Some(Transport::Other { protocol: 41, .. })
    ));
    let mut level = d.inner().unwrap();
    let mut depth = 1;
    while let Some(next) = level.inner() {
        level = next;
        depth += 1;
    }
    assert_eq!(depth, 3);
    assert_udp(&level);
    let shallow = decode(LinkType::RAW, &pkt).max_depth(1);
    assert!(shallow.inner().unwrap().inner().is_none());
    assert!(
        shallow
            .anomalies()
            .contains(tracekit_decode::Anomaly::TunnelTooDeep)
    );
}

#[test]
fn flow_hash_is_symmetric_and_ports_are_absent_for_later_fragments() {
    let syn = |ip: Ipv4<'static>, sport, dport| {
        PacketBuilder::new()
            .ethernet(eth_header())
            .ipv4(ip)
            .tcp(Tcp::new(sport, dport).flags(SYN))
            .build()
    };
    let a = syn(v4(), 1000, 80);
    let b = syn(Ipv4::new(V4_DST, V4_SRC), 80, 1000);
    let (da, db) = (
        decode(LinkType::ETHERNET, &a),
        decode(LinkType::ETHERNET, &b),
    );
    assert_eq!(da.flow_key().unwrap().reversed(), db.flow_key().unwrap());
    assert_eq!(da.symmetric_flow_hash(), db.symmetric_flow_hash());
    let frag = syn(v4().fragment(128, false), 1000, 80);
    let d = decode(LinkType::ETHERNET, &frag);
    assert_eq!(d.fragment().map(|f| (f.offset, f.more)), Some((128, false)));
    assert!(d.tcp().is_none() && d.src_port().is_none());
    assert_eq!(d.ip_protocol(), Some(6));
}
