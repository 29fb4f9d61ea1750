//! Link encapsulations the corpus lacks, built byte by byte and checked against tshark:
//! Cisco HDLC framing inside captures labelled PPP (link types 9 and 50, address byte
//! 0x0F or 0x8F), Cisco FabricPath (EtherType 0x8903) around a tagged Ethernet frame,
//! the port-extender tags VN-Tag (0x8926) and 802.1BR E-Tag (0x893F), and 802.11 inside
//! Aruba GRE and CAPWAP.

use tracekit_core::{LinkType, Meta, Packet, Timestamp};
use tracekit_decode::Decoded;
use tracekit_decode::fields::{Field, write_field};
use tracekit_testdata::builder::{Ipv4, Ipv6, PacketBuilder, Tcp, Udp};
use tracekit_testdata::{have, tshark_fields, write_pcap};

const FIELDS: [(Field, &str); 5] = [
    (Field::IpSrc, "ip.src"),
    (Field::TcpSrcport, "tcp.srcport"),
    (Field::UdpDstport, "udp.dstport"),
    (Field::VlanId, "vlan.id"),
    (Field::IpProto, "ip.proto"),
];

fn ours(f: &[u8], link: LinkType) -> Vec<String> {
    let p = Packet::new(f, Meta::new(Timestamp::ZERO, f.len() as u32, link));
    let d = Decoded::new(&p);
    assert!(d.anomalies().is_empty(), "{:?}", d.anomalies());
    FIELDS
        .iter()
        .map(|(field, _)| {
            let mut s = String::new();
            write_field(&mut s, *field, 1, &p, &d);
            s
        })
        .collect()
}

/// tshark's values (IPv6 addresses from ipv6.src; the IP protocol from ipv6.nxt).
fn theirs(frames: &[(Vec<u8>, usize)], link: u32) -> Vec<Vec<String>> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("frames.pcap");
    write_pcap(&path, link, frames);
    let mut names: Vec<&str> = FIELDS.iter().map(|f| f.1).collect();
    names.extend(["ipv6.src", "ipv6.nxt"]);
    tshark_fields(&path, &names)
        .into_iter()
        .map(|mut row| {
            if row[0].is_empty() {
                row[0] = row[5].clone();
                row[4] = row[6].clone();
            }
            row.truncate(5);
            row.iter().map(|v| v.replace('~', ",")).collect()
        })
        .collect()
}

fn ipv4_udp() -> Vec<u8> {
    PacketBuilder::new()
        .ipv4(Ipv4::new([192, 0, 2, 1], [192, 0, 2, 2]))
        .udp(Udp::new(4000, 9999))
        .payload(b"abcd")
        .build()
}

fn ipv6_tcp() -> Vec<u8> {
    let mut a = [0u8; 16];
    a[0] = 0x20;
    a[1] = 0x01;
    a[15] = 7;
    let mut b = a;
    b[15] = 8;
    PacketBuilder::new()
        .ipv6(Ipv6::new(a, b))
        .tcp(Tcp::new(5555, 443))
        .build()
}

#[test]
fn cisco_hdlc_in_ppp_captures() {
    let frames: Vec<(Vec<u8>, usize)> = [
        ([0x0f, 0x00, 0x08, 0x00], ipv4_udp()),
        ([0x8f, 0x00, 0x86, 0xdd], ipv6_tcp()),
    ]
    .into_iter()
    .map(|(hdr, body)| {
        let mut f = hdr.to_vec();
        f.extend(body);
        let n = f.len();
        (f, n)
    })
    .collect();
    let want = [
        ["192.0.2.1", "", "9999", "", "17"],
        ["2001::7", "5555", "", "", "6"],
    ];
    for link in [LinkType::PPP, LinkType::PPP_HDLC] {
        for ((f, _), w) in frames.iter().zip(&want) {
            assert_eq!(ours(f, link), w, "link type {}", link.0);
        }
        if have("tshark") {
            let t = theirs(&frames, link.0);
            for ((f, _), t) in frames.iter().zip(&t) {
                assert_eq!(&ours(f, link), t, "link type {} against tshark", link.0);
            }
        }
    }
}

#[test]
fn fabricpath_around_a_tagged_frame() {
    let mut inner = vec![
        2, 0, 0, 0, 0, 0xb, 2, 0, 0, 0, 0, 0xa, 0x81, 0x00, 0x00, 0x05, 0x08, 0x00,
    ];
    inner.extend(ipv4_udp());
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x89, 0x03, 0x04, 0x3f];
    f.extend(&inner);
    let n = f.len();
    let frames = vec![(f, n)];
    assert_eq!(
        ours(&frames[0].0, LinkType::ETHERNET),
        ["192.0.2.1", "", "9999", "5", "17"]
    );
    if have("tshark") {
        let t = theirs(&frames, 1);
        assert_eq!(ours(&frames[0].0, LinkType::ETHERNET), t[0]);
    }
}

/// Every level's source address and the innermost transport's ports, as tshark lists
/// them (`~`-joined occurrences; IPv4 only here).
fn levels(f: &[u8]) -> (String, String) {
    let mut all = vec![Decoded::from_bytes(f, LinkType::ETHERNET, f.len() as u32)];
    while let Some(inner) = all.last().and_then(|d| d.inner()) {
        all.push(inner);
    }
    let addrs: Vec<String> = all
        .iter()
        .filter_map(|d| d.src_addr().map(|a| a.to_string()))
        .collect();
    let last = all.last().unwrap();
    let ports = last
        .transport()
        .and_then(|t| t.ports())
        .map(|(s, d)| format!("{s}~{d}"))
        .unwrap_or_default();
    for d in &all {
        assert!(d.anomalies().is_empty(), "{:?}", d.anomalies());
    }
    (addrs.join("~"), ports)
}

/// An 802.11 data frame to the distribution system, LLC/SNAP, then `ip`; with the two
/// frame-control bytes swapped when `swap_fc` (as Cisco APs send them over CAPWAP).
fn wlan_data(ip: &[u8], swap_fc: bool) -> Vec<u8> {
    let fc = if swap_fc { [0x01, 0x08] } else { [0x08, 0x01] };
    let mut f = fc.to_vec();
    f.extend([0, 0]); // duration
    f.extend([2, 0, 0, 0, 0, 0xa, 2, 0, 0, 0, 0, 0xb, 2, 0, 0, 0, 0, 0xc]);
    f.extend([0x10, 0]); // sequence control
    f.extend([0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00]);
    f.extend(ip);
    f
}

fn inner_ip() -> Vec<u8> {
    PacketBuilder::new()
        .ipv4(Ipv4::new([172, 16, 0, 1], [172, 16, 0, 2]))
        .tcp(Tcp::new(33000, 8080))
        .build()
}

/// Outer Ethernet + IPv4 10.9.9.1 -> 10.9.9.2 with `protocol`, then `payload`.
fn outer(protocol: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend(
        PacketBuilder::new()
            .ipv4(Ipv4::new([10, 9, 9, 1], [10, 9, 9, 2]).protocol(protocol))
            .payload(payload)
            .build(),
    );
    f
}

#[test]
fn wireless_tunnels_aruba_gre_and_capwap() {
    // Aruba GRE (protocol 0x8200) around an 802.11 frame.
    let mut gre = vec![0, 0, 0x82, 0x00];
    gre.extend(wlan_data(&inner_ip(), false));
    // CAPWAP data (UDP 5247): HLEN 2 words, WBID 1, T set; the 802.11 FC swapped.
    let capwap_hdr = |native: bool| {
        let bits: u32 = 2 << 19 | 1 << 9 | if native { 1 << 8 } else { 0 };
        let mut h = bits.to_be_bytes().to_vec();
        h.extend([0, 0, 0, 0]);
        h
    };
    let mut cw = capwap_hdr(true);
    cw.extend(wlan_data(&inner_ip(), true));
    let udp = |body: &[u8]| {
        PacketBuilder::new()
            .udp(Udp::new(40000, 5247))
            .payload(body)
            .build()
    };
    // CAPWAP carrying an 802.3 frame (T clear).
    let mut cw_eth = capwap_hdr(false);
    cw_eth.extend([2, 0, 0, 0, 0, 0xd, 2, 0, 0, 0, 0, 0xe, 0x08, 0x00]);
    cw_eth.extend(inner_ip());
    let frames: Vec<(Vec<u8>, usize)> = [
        outer(47, &gre),
        outer(17, &udp(&cw)),
        outer(17, &udp(&cw_eth)),
    ]
    .into_iter()
    .map(|f| {
        let n = f.len();
        (f, n)
    })
    .collect();
    for (f, _) in &frames {
        assert_eq!(
            levels(f),
            ("10.9.9.1~172.16.0.1".to_string(), "33000~8080".to_string())
        );
    }
    if !have("tshark") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wireless.pcap");
    write_pcap(&path, 1, &frames);
    let t = tshark_fields(&path, &["ip.src", "tcp.srcport", "tcp.dstport"]);
    for ((f, _), t) in frames.iter().zip(&t) {
        let (addrs, ports) = levels(f);
        assert_eq!(addrs, t[0]);
        assert_eq!(ports, format!("{}~{}", t[1], t[2]));
    }
}

#[test]
fn port_extender_tags() {
    let eth = |tags: &[u8]| {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
        f.extend(tags);
        f.extend(ipv4_udp());
        let n = f.len();
        (f, n)
    };
    let frames = vec![
        // VN-Tag (dir 1, dst vif 5, src vif 9), then IPv4.
        eth(&[0x89, 0x26, 0x80, 0x05, 0x00, 0x09, 0x08, 0x00]),
        // E-Tag (E-CID 300), then a VLAN tag 10, then IPv4.
        eth(&[
            0x89, 0x3f, 0, 0, 0x11, 0x2c, 0, 0, 0x81, 0x00, 0x00, 0x0a, 0x08, 0x00,
        ]),
        // VN-Tag after a VLAN tag 20.
        eth(&[0x81, 0x00, 0x00, 0x14, 0x89, 0x26, 0, 1, 0, 2, 0x08, 0x00]),
    ];
    let want = [
        ["192.0.2.1", "", "9999", "", "17"],
        ["192.0.2.1", "", "9999", "10", "17"],
        ["192.0.2.1", "", "9999", "20", "17"],
    ];
    for ((f, _), w) in frames.iter().zip(&want) {
        assert_eq!(ours(f, LinkType::ETHERNET), w);
    }
    if have("tshark") {
        let t = theirs(&frames, 1);
        for ((f, _), t) in frames.iter().zip(&t) {
            assert_eq!(&ours(f, LinkType::ETHERNET), t);
        }
    }
}
