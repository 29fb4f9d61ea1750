//! One hand-built packet per anomaly: each must be reported, with nothing read past the
//! captured bytes, and the accessors behind the damage must say `None`.

mod build;

use std::collections::BTreeSet;

use build::*;
use tracekit_core::LinkType;
use tracekit_decode::{Anomaly, Decoded, Transport};

fn eth(data: &[u8]) -> Decoded<'_> {
    Decoded::from_bytes(data, LinkType::ETHERNET, data.len() as u32)
}

/// `data` as captured, `wire` bytes on the wire.
fn snapped(data: &[u8], wire: usize) -> Decoded<'_> {
    Decoded::from_bytes(data, LinkType::ETHERNET, wire as u32)
}

fn ethertype(t: u16, rest: &[u8]) -> Vec<u8> {
    let mut p = ETH_IPV4[..12].to_vec();
    p.extend_from_slice(&t.to_be_bytes());
    p.extend_from_slice(rest);
    p
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
    v.push((Anomaly::LinkTruncated, ETH_IPV4[..10].to_vec(), None, e));
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
    let full = eth_ipv4(6, &tcp(1, 2, 0x02, &[]), b"hello");
    v.push((
        Anomaly::Ipv4Truncated,
        full[..14 + 10].to_vec(),
        Some(full.len()),
        e,
    ));
    let mut bad = full.clone();
    bad[14] = 0x65;
    v.push((Anomaly::Ipv4BadVersion, bad, None, e));
    let mut bad = full.clone();
    bad[14] = 0x44;
    v.push((Anomaly::Ipv4BadIhl, bad, None, e));
    let mut opt = ETH_IPV4.to_vec();
    opt.extend(ipv4(6, 20, &[1, 1, 1, 0]));
    opt.extend(tcp(1, 2, 0, &[]));
    v.push((
        Anomaly::Ipv4OptionsTruncated,
        opt[..14 + 22].to_vec(),
        Some(opt.len()),
        e,
    ));
    let mut bad = full.clone();
    bad[16..18].copy_from_slice(&10u16.to_be_bytes());
    v.push((Anomaly::Ipv4BadTotalLength, bad, None, e));
    let mut bad = full.clone();
    bad[16..18].copy_from_slice(&1000u16.to_be_bytes());
    v.push((Anomaly::Ipv4LengthBeyondFrame, bad, None, e));
    let mut bad = ETH_IPV4.to_vec();
    bad.extend(ipv4(6, 20, &[0x44, 10, 0, 0]));
    bad.extend(tcp(1, 2, 0, &[]));
    v.push((Anomaly::Ipv4OptionOverrun, bad, None, e));
    let full6 = eth_ipv6(17, &udp(1, 2, 0), &[]);
    v.push((
        Anomaly::Ipv6Truncated,
        full6[..14 + 30].to_vec(),
        Some(full6.len()),
        e,
    ));
    let mut bad = full6.clone();
    bad[14] = 0x40;
    v.push((Anomaly::Ipv6BadVersion, bad, None, e));
    let mut bad = full6.clone();
    bad[18..20].copy_from_slice(&1000u16.to_be_bytes());
    v.push((Anomaly::Ipv6BadPayloadLength, bad, None, e));
    let hbh = [17u8, 0, 1, 4, 0, 0, 0, 0];
    let with_hbh = eth_ipv6(0, &[&hbh[..], &udp(1, 2, 0)].concat(), &[]);
    v.push((
        Anomaly::Ipv6ExtTruncated,
        with_hbh[..14 + 44].to_vec(),
        Some(with_hbh.len()),
        e,
    ));
    let mut bad = with_hbh.clone();
    bad[18..20].copy_from_slice(&4u16.to_be_bytes());
    bad.truncate(14 + 44);
    v.push((Anomaly::Ipv6ExtOverrun, bad, None, e));
    let mut chain = Vec::new();
    for _ in 0..17 {
        chain.extend_from_slice(&[60, 0, 1, 4, 0, 0, 0, 0]);
    }
    v.push((Anomaly::Ipv6TooManyExt, eth_ipv6(60, &chain, &[]), None, e));
    let dst_then_hbh = [&[0u8, 0, 1, 4, 0, 0, 0, 0][..], &hbh[..], &udp(1, 2, 0)].concat();
    v.push((
        Anomaly::Ipv6HopByHopNotFirst,
        eth_ipv6(60, &dst_then_hbh, &[]),
        None,
        e,
    ));
    let atomic = [&[17u8, 0, 0, 0, 0, 0, 0, 7][..], &udp(1, 2, 0)].concat();
    v.push((
        Anomaly::FragmentUseless,
        eth_ipv6(44, &atomic, &[]),
        None,
        e,
    ));
    let t = tcp(1, 2, 0x02, &[]);
    let mut cut = eth_ipv4(6, &t, &[]);
    let wire = cut.len();
    cut.truncate(14 + 20 + 10);
    v.push((Anomaly::TcpTruncated, cut, Some(wire), e));
    let mut bad = full.clone();
    bad[14 + 20 + 12] = 4 << 4;
    v.push((Anomaly::TcpDataOffsetTooSmall, bad, None, e));
    let with_opts = eth_ipv4(6, &tcp(1, 2, 0x02, &[2, 4, 5, 0xb4]), &[]);
    v.push((
        Anomaly::TcpOptionsTruncated,
        with_opts[..14 + 20 + 22].to_vec(),
        Some(with_opts.len()),
        e,
    ));
    let mut bad = full.clone();
    bad[14 + 20 + 12] = 15 << 4;
    v.push((Anomaly::TcpDataOffsetBeyondSegment, bad, None, e));
    v.push((
        Anomaly::TcpOptionOverrun,
        eth_ipv4(6, &tcp(1, 2, 0x02, &[2, 10, 0, 0]), &[]),
        None,
        e,
    ));
    let u = eth_ipv4(17, &udp(1, 2, 4), b"abcd");
    v.push((
        Anomaly::UdpTruncated,
        u[..14 + 20 + 5].to_vec(),
        Some(u.len()),
        e,
    ));
    let mut bad = u.clone();
    bad[14 + 20 + 4..14 + 20 + 6].copy_from_slice(&4u16.to_be_bytes());
    v.push((Anomaly::UdpBadLength, bad, None, e));
    let icmp = eth_ipv4(1, &[8, 0, 0, 0, 0, 1, 0, 1], &[]);
    v.push((
        Anomaly::IcmpTruncated,
        icmp[..14 + 20 + 4].to_vec(),
        Some(icmp.len()),
        e,
    ));
    let icmp6 = eth_ipv6(58, &[128, 0, 0, 0, 0, 1, 0, 1], &[]);
    v.push((
        Anomaly::Icmpv6Truncated,
        icmp6[..14 + 40 + 2].to_vec(),
        Some(icmp6.len()),
        e,
    ));
    let sctp = eth_ipv4(132, &[0u8; 12], &[]);
    v.push((
        Anomaly::SctpTruncated,
        sctp[..14 + 20 + 8].to_vec(),
        Some(sctp.len()),
        e,
    ));
    let gre = eth_ipv4(47, &[0x20, 0, 0x08, 0, 0, 0, 0, 1], &[]);
    v.push((
        Anomaly::GreTruncated,
        gre[..14 + 20 + 6].to_vec(),
        Some(gre.len()),
        e,
    ));
    v.push((
        Anomaly::GreBadVersion,
        eth_ipv4(47, &[0, 3, 0x08, 0], &[]),
        None,
        e,
    ));
    v.push((
        Anomaly::TunnelTruncated,
        eth_ipv4(17, &udp(1000, 4789, 4), &[8, 0, 0, 0]),
        None,
        e,
    ));
    v.push((
        Anomaly::TunnelMalformed,
        eth_ipv4(17, &udp(1000, 4789, 8), &[0; 8]),
        None,
        e,
    ));
    let mut nested = Vec::new();
    for _ in 0..10 {
        nested.extend(ipv4(4, 0, &[]));
    }
    let mut deep = ETH_IPV4.to_vec();
    deep.extend(&nested);
    // fix the total lengths so that each header covers what follows it
    for i in 0..10 {
        let off = 14 + i * 20;
        let len = (nested.len() - i * 20) as u16;
        deep[off + 2..off + 4].copy_from_slice(&len.to_be_bytes());
    }
    v.push((Anomaly::TunnelTooDeep, deep, None, e));
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
        eth_ipv4(
            6,
            &tcp(1, 2, 0x12, &[2, 4, 5, 0xb4, 1, 3, 3, 7]),
            b"payload",
        ),
        eth_ipv6(17, &udp(53, 4000, 5), b"hello"),
        eth_ipv4(1, &[8, 0, 0, 0, 0, 1, 0, 1], b"ping"),
    ] {
        assert!(eth(&data).anomalies().is_empty());
    }
}

#[test]
fn accessors_behind_the_damage_are_none() {
    let full = eth_ipv4(6, &tcp(1, 2, 0x02, &[]), b"hello");
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
    let mut bad = full.clone();
    bad[14 + 20 + 12] = 4 << 4;
    let d = eth(&bad);
    assert!(d.tcp().is_some(), "the fixed header is there");
    assert!(d.payload().is_none(), "but its length is nonsense");
}

#[test]
fn snapped_payload_is_what_was_captured_and_padding_is_not_payload() {
    let full = eth_ipv4(17, &udp(1, 2, 10), b"0123456789");
    let d = snapped(&full[..full.len() - 4], full.len());
    assert_eq!(d.payload(), Some(&b"012345"[..]));
    assert_eq!(d.payload_wire_len(), Some(10));
    assert!(d.anomalies().is_empty());
    let mut padded = full.clone();
    padded.extend_from_slice(&[0xEE; 6]);
    let d = eth(&padded);
    assert_eq!(d.payload(), Some(&b"0123456789"[..]));
}
