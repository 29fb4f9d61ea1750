//! 802.11 A-MSDUs, LWAPP, CAPWAP control and fragments, and Cisco ISL, built byte by
//! byte (the corpus has none) and compared with tshark field by field.

use tracekit_core::{LinkType, Meta, Packet, Timestamp};
use tracekit_decode::fields::{Field, write_field};
use tracekit_decode::{Anomaly, Decoded, Tunnel};
use tracekit_testdata::builder::{Ipv4, PacketBuilder, Tcp, Udp};
use tracekit_testdata::{have, tshark_fields_with, write_pcap};

/// Writes `frames` (whole) as a pcap of `link` and asks tshark.
fn tshark_on(link: u32, frames: &[Vec<u8>], options: &[&str], fields: &[&str]) -> Vec<Vec<String>> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("frames.pcap");
    let whole: Vec<(Vec<u8>, usize)> = frames.iter().map(|f| (f.clone(), f.len())).collect();
    write_pcap(&path, link, &whole);
    let rows = tshark_fields_with(&path, options, fields);
    assert_eq!(rows.len(), frames.len());
    rows
}

/// Our value of `field`, as `tracekit fields` prints it.
fn field(f: &[u8], link: LinkType, field: Field) -> String {
    let p = Packet::new(f, Meta::new(Timestamp::ZERO, f.len() as u32, link));
    let d = Decoded::new(&p);
    let mut s = String::new();
    write_field(&mut s, field, 1, &p, &d);
    s
}

fn tcp_ip(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
    PacketBuilder::new()
        .ipv4(Ipv4::new(src, dst))
        .tcp(Tcp::new(sport, dport))
        .payload(b"0123456789")
        .build()
}

fn udp_ip(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
    PacketBuilder::new()
        .ipv4(Ipv4::new(src, dst))
        .udp(Udp::new(sport, dport))
        .payload(b"abc")
        .build()
}

const SNAP_IPV4: [u8; 8] = [0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00];

/// An A-MSDU subframe: DA, SA, length, LLC/SNAP and `ip`, padded to 4 bytes unless last.
fn subframe(n: u8, ip: &[u8], last: bool) -> Vec<u8> {
    let mut s = vec![2, 0, 0, 0, 1, n, 2, 0, 0, 0, 2, n];
    s.extend(((SNAP_IPV4.len() + ip.len()) as u16).to_be_bytes());
    s.extend(SNAP_IPV4);
    s.extend(ip);
    if !last {
        s.resize(s.len().next_multiple_of(4), 0);
    }
    s
}

/// An 802.11 QoS data frame to the DS; an A-MSDU of `body` when `amsdu` (QoS control
/// bit 7), else `body` is the LLC payload. Frame control swapped when `swap_fc`.
fn qos_data(body: &[u8], amsdu: bool, swap_fc: bool) -> Vec<u8> {
    let mut f = if swap_fc {
        vec![0x01, 0x88]
    } else {
        vec![0x88, 0x01]
    };
    f.extend([0, 0]);
    f.extend([2, 0, 0, 0, 0, 0xa, 2, 0, 0, 0, 0, 0xb, 2, 0, 0, 0, 0, 0xc]);
    f.extend([0x10, 0]);
    f.extend([if amsdu { 0x80 } else { 0 }, 0]);
    f.extend(body);
    f
}

fn two_subframes() -> Vec<u8> {
    let mut body = subframe(
        1,
        &tcp_ip([172, 16, 0, 1], [172, 16, 0, 2], 33000, 8080),
        false,
    );
    body.extend(subframe(
        2,
        &udp_ip([172, 16, 0, 3], [172, 16, 0, 4], 5000, 53),
        true,
    ));
    body
}

/// Every IP source address of every level, A-MSDU subframes included, in tshark's
/// order (outer first, then each subframe's).
fn all_sources(d: &Decoded<'_>) -> Vec<String> {
    let mut out = Vec::new();
    let mut level = Some(d.clone());
    while let Some(l) = level {
        if let Some(subframes) = l.amsdu() {
            for s in subframes {
                out.extend(s.decode().src_addr().map(|a| a.to_string()));
            }
            break;
        }
        out.extend(l.src_addr().map(|a| a.to_string()));
        level = l.inner();
    }
    out
}

#[test]
fn amsdu_in_80211_and_radiotap_captures() {
    let single = subframe(
        1,
        &tcp_ip([172, 16, 0, 1], [172, 16, 0, 2], 33000, 8080),
        true,
    );
    let frames = vec![
        qos_data(&two_subframes(), true, false),
        qos_data(&single, true, false),
    ];
    // RadioTap (flags present, FCS at the end) around the same frames.
    let radiotap = |f: &[u8]| {
        let mut r = vec![0, 0, 9, 0, 0x02, 0, 0, 0, 0x10];
        r.extend(f);
        r.extend([0xde, 0xad, 0xbe, 0xef]);
        r
    };
    let rt: Vec<Vec<u8>> = frames.iter().map(|f| radiotap(f)).collect();
    for (link, frames) in [
        (LinkType::IEEE802_11, &frames),
        (LinkType::IEEE802_11_RADIOTAP, &rt),
    ] {
        for f in frames.iter() {
            let d = Decoded::from_bytes(f, link, f.len() as u32);
            assert!(d.anomalies().is_empty(), "{:?}", d.anomalies());
            // The frame's own layers are the first subframe's.
            assert_eq!(d.src_addr().unwrap().to_string(), "172.16.0.1");
            assert_eq!((d.src_port(), d.dst_port()), (Some(33000), Some(8080)));
            assert_eq!(d.payload(), Some(&b"0123456789"[..]));
        }
        let d = Decoded::from_bytes(&frames[0], link, frames[0].len() as u32);
        let subs: Vec<_> = d.amsdu().unwrap().collect();
        assert_eq!(subs.len(), 2);
        assert_eq!(subs[1].sa(), [2, 0, 0, 0, 2, 2]);
        assert!(!subs[1].is_cut());
        assert_eq!(subs[1].decode().udp().unwrap().dst_port(), 53);
        if !have("tshark") {
            continue;
        }
        let names = [
            "ip.src",
            "tcp.srcport",
            "udp.dstport",
            "wlan.qos.amsdupresent",
        ];
        let t = tshark_on(link.0, frames, &[], &names);
        for (f, t) in frames.iter().zip(&t) {
            assert_eq!(t[3], "1", "tshark sees the A-MSDU bit");
            let d = Decoded::from_bytes(f, link, f.len() as u32);
            assert_eq!(all_sources(&d).join("~"), t[0]);
            // Fields: the first subframe's, tshark's first occurrence.
            let first = |v: &str| v.split('~').next().unwrap_or("").to_string();
            assert_eq!(field(f, link, Field::IpSrc), first(&t[0]));
            assert_eq!(field(f, link, Field::TcpSrcport), first(&t[1]));
            let udp: Vec<String> = d
                .amsdu()
                .unwrap()
                .filter_map(|s| s.decode().udp().map(|u| u.dst_port().to_string()))
                .collect();
            assert_eq!(udp.join("~"), t[2]);
        }
    }
}

#[test]
fn amsdu_cut_by_the_capture() {
    let f = qos_data(&two_subframes(), true, false);
    // Cut inside the first subframe's header, then inside the second's MSDU.
    let d = Decoded::from_bytes(&f[..26 + 10], LinkType::IEEE802_11, f.len() as u32);
    assert!(d.anomalies().contains(Anomaly::LinkTruncated));
    assert!(d.layer3().is_none());
    let cut = f.len() - 10;
    let d = Decoded::from_bytes(&f[..cut], LinkType::IEEE802_11, f.len() as u32);
    let subs: Vec<_> = d.amsdu().unwrap().collect();
    assert_eq!(subs.len(), 2);
    assert!(!subs[0].is_cut() && subs[1].is_cut());
    assert_eq!(d.tcp().unwrap().dst_port(), 8080);
}

fn outer_udp(sport: u16, dport: u16, body: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend(
        PacketBuilder::new()
            .ipv4(Ipv4::new([10, 9, 9, 1], [10, 9, 9, 2]))
            .udp(Udp::new(sport, dport))
            .payload(body)
            .build(),
    );
    f
}

/// A CAPWAP header of two words: WBID 1, `bits` (T, F, L), fragment id and offset.
fn capwap(bits: u32, frag_id: u16, frag_offset: u16) -> Vec<u8> {
    let mut h = (2u32 << 19 | 1 << 9 | bits).to_be_bytes().to_vec();
    h.extend(frag_id.to_be_bytes());
    h.extend((frag_offset / 8 * 8).to_be_bytes());
    h
}

const T: u32 = 1 << 8;
const F: u32 = 1 << 7;
const L: u32 = 1 << 6;

#[test]
fn amsdu_inside_capwap_and_aruba_gre() {
    let mut cw = capwap(T, 0, 0);
    cw.extend(qos_data(&two_subframes(), true, true));
    let mut gre = vec![0, 0, 0x82, 0x00];
    gre.extend(qos_data(&two_subframes(), true, false));
    let mut aruba = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    aruba.extend(
        PacketBuilder::new()
            .ipv4(Ipv4::new([10, 9, 9, 1], [10, 9, 9, 2]).protocol(47))
            .payload(&gre)
            .build(),
    );
    let frames = vec![outer_udp(40000, 5247, &cw), aruba];
    for f in &frames {
        let d = Decoded::from_bytes(f, LinkType::ETHERNET, f.len() as u32);
        assert!(d.anomalies().is_empty(), "{:?}", d.anomalies());
        assert_eq!(
            all_sources(&d),
            ["10.9.9.1", "172.16.0.1", "172.16.0.3"],
            "outer, then each subframe"
        );
        assert_eq!(d.inner().unwrap().tcp().unwrap().src_port(), 33000);
    }
    if !have("tshark") {
        return;
    }
    let t = tshark_on(1, &frames, &[], &["ip.src", "tcp.srcport"]);
    for (f, t) in frames.iter().zip(&t) {
        let d = Decoded::from_bytes(f, LinkType::ETHERNET, f.len() as u32);
        assert_eq!(all_sources(&d).join("~"), t[0]);
        assert_eq!(field(f, LinkType::ETHERNET, Field::TcpSrcport), t[1]);
    }
}

/// An 802.11 data frame (not QoS) to the DS carrying `ip`, frame control swapped when
/// `swap_fc`.
fn wlan_data(ip: &[u8], swap_fc: bool) -> Vec<u8> {
    let mut f = if swap_fc {
        vec![0x01, 0x08]
    } else {
        vec![0x08, 0x01]
    };
    f.extend([0, 0]);
    f.extend([2, 0, 0, 0, 0, 0xa, 2, 0, 0, 0, 0, 0xb, 2, 0, 0, 0, 0, 0xc]);
    f.extend([0x10, 0]);
    f.extend(SNAP_IPV4);
    f.extend(ip);
    f
}

/// An LWAPP header: `flags`, fragment id 0, the length of `body`, RSSI, SNR, then `body`.
fn lwapp(flags: u8, body: &[u8]) -> Vec<u8> {
    let mut h = vec![flags, 0];
    h.extend((body.len() as u16).to_be_bytes());
    h.extend([0x55, 0x22]);
    h.extend(body);
    h
}

#[test]
fn lwapp_data_and_control() {
    let ip = tcp_ip([172, 16, 0, 1], [172, 16, 0, 2], 33000, 8080);
    // The control header: type 12, sequence 5, length 0, session id.
    let control = [12, 5, 0, 0, 0, 0, 0x12, 0x34];
    let mut to_control_port = vec![2, 0, 0, 0, 0, 9]; // the AP identity tshark expects first
    to_control_port.extend(lwapp(0, &wlan_data(&ip, false)));
    let mut control_to_control_port = vec![2, 0, 0, 0, 0, 9];
    control_to_control_port.extend(lwapp(0x04, &control));
    let frames = vec![
        outer_udp(40000, 12222, &lwapp(0, &wlan_data(&ip, false))),
        outer_udp(40000, 12223, &to_control_port),
        outer_udp(12223, 40000, &lwapp(0x04, &control)),
        outer_udp(40000, 12223, &control_to_control_port),
        // A frame control sent swapped: tshark's lwapp.swap_fc is off by default, so
        // neither reads through it.
        outer_udp(40000, 12222, &lwapp(0, &wlan_data(&ip, true))),
    ];
    let want_sources: [&[&str]; 5] = [
        &["10.9.9.1", "172.16.0.1"],
        &["10.9.9.1", "172.16.0.1"],
        &["10.9.9.1"],
        &["10.9.9.1"],
        &["10.9.9.1"],
    ];
    let want_control = ["", "", "12", "12", ""];
    for ((f, sources), control) in frames.iter().zip(want_sources).zip(want_control) {
        let d = Decoded::from_bytes(f, LinkType::ETHERNET, f.len() as u32);
        assert!(matches!(d.tunnel(), Some(Tunnel::Lwapp { .. })));
        assert_eq!(all_sources(&d), sources);
        assert_eq!(
            field(f, LinkType::ETHERNET, Field::LwappControlType),
            control
        );
    }
    if !have("tshark") {
        return;
    }
    let t = tshark_on(
        1,
        &frames,
        &[],
        &["ip.src", "tcp.srcport", "lwapp.control.type"],
    );
    for (f, t) in frames.iter().zip(&t) {
        let d = Decoded::from_bytes(f, LinkType::ETHERNET, f.len() as u32);
        assert_eq!(all_sources(&d).join("~"), t[0]);
        assert_eq!(field(f, LinkType::ETHERNET, Field::TcpSrcport), t[1]);
        assert_eq!(field(f, LinkType::ETHERNET, Field::LwappControlType), t[2]);
    }
}

#[test]
fn capwap_control_and_dtls() {
    // Control header: message type, sequence number, element length 0, flags.
    let control = |message_type: u32, seq: u8| {
        let mut c = capwap(0, 0, 0);
        c.extend(message_type.to_be_bytes());
        c.extend([seq, 0, 0, 0]);
        c
    };
    // DTLS: preamble type 1, then a DTLS record header (handshake, DTLS 1.2).
    let mut dtls = vec![1, 0, 0, 0];
    dtls.extend([22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2, 1, 0]);
    let frames = vec![
        outer_udp(40000, 5246, &control(1, 7)),
        outer_udp(5246, 40000, &control(4, 8)),
        // A vendor message: Cisco's enterprise number 14179 in the top 24 bits.
        outer_udp(40000, 5246, &control(14179 << 8 | 3, 9)),
        outer_udp(40000, 5246, &dtls),
        outer_udp(40000, 5247, &dtls),
    ];
    let want = ["1", "4", "3629827", "", ""];
    for (i, (f, w)) in frames.iter().zip(want).enumerate() {
        let d = Decoded::from_bytes(f, LinkType::ETHERNET, f.len() as u32);
        assert!(d.anomalies().is_empty(), "{:?}", d.anomalies());
        assert!(d.inner().is_none());
        match d.tunnel().unwrap() {
            Tunnel::CapwapControl { sequence, .. } => assert_eq!(sequence, 7 + i as u8),
            Tunnel::CapwapDtls { control } => assert_eq!(control, i == 3),
            t => panic!("{t:?}"),
        }
        assert_eq!(field(f, LinkType::ETHERNET, Field::CapwapMessageType), w);
    }
    // A control header cut by the capture.
    let f = outer_udp(40000, 5246, &control(1, 7)[..12]);
    let d = Decoded::from_bytes(&f, LinkType::ETHERNET, f.len() as u32);
    assert!(d.tunnel().is_none());
    assert!(d.anomalies().contains(Anomaly::TunnelTruncated));
    if !have("tshark") {
        return;
    }
    let t = tshark_on(
        1,
        &frames,
        &[],
        &["capwap.control.header.message_type", "frame.protocols"],
    );
    for (i, (f, t)) in frames.iter().zip(&t).enumerate() {
        assert_eq!(field(f, LinkType::ETHERNET, Field::CapwapMessageType), t[0]);
        assert_eq!(t[1].ends_with(":dtls"), i >= 3, "{}", t[1]);
    }
}

#[test]
fn capwap_fragments() {
    let ip = tcp_ip([172, 16, 0, 1], [172, 16, 0, 2], 33000, 8080);
    let frame = wlan_data(&ip, true);
    // The first fragment holds the 802.11, LLC, IP and TCP headers and 8 data bytes
    // (fragment offsets count 8-byte units).
    let split = 24 + 8 + 20 + 20 + 8;
    let mut first = capwap(T | F, 9, 0);
    first.extend(&frame[..split]);
    let mut last = capwap(T | F | L, 9, split as u16);
    last.extend(&frame[split..]);
    let frames = vec![
        outer_udp(40000, 5247, &first),
        outer_udp(40000, 5247, &last),
    ];

    let d = Decoded::from_bytes(&frames[0], LinkType::ETHERNET, frames[0].len() as u32);
    assert!(matches!(
        d.tunnel(),
        Some(Tunnel::Capwap {
            fragment: Some(tracekit_decode::TunnelFragment {
                id: 9,
                offset: 0,
                last: false
            }),
            ..
        })
    ));
    // The fragment is the only thing noted: the inner decode sees a frame cut short,
    // not a malformed one.
    let anomalies: Vec<Anomaly> = d.anomalies().iter().collect();
    assert_eq!(anomalies, [Anomaly::TunnelFragment]);
    let inner = d.inner().unwrap();
    assert_eq!(inner.tcp().unwrap().src_port(), 33000);
    assert_eq!(inner.payload(), Some(&b"01234567"[..]));
    assert_eq!(inner.payload_wire_len(), Some(10));

    let d = Decoded::from_bytes(&frames[1], LinkType::ETHERNET, frames[1].len() as u32);
    assert!(d.inner().is_none(), "a later fragment stops at CAPWAP");
    assert!(matches!(
        d.tunnel(),
        Some(Tunnel::Capwap { fragment: Some(f), .. }) if f.last && f.offset == split as u32
    ));
    if !have("tshark") {
        return;
    }
    // Without reassembly tshark decodes the first fragment's frame as far as it goes, as
    // tracekit does, and reads nothing sensible from the later one.
    let names = [
        "ip.src",
        "tcp.srcport",
        "tcp.dstport",
        "capwap.header.flags.f",
    ];
    let t = tshark_on(1, &frames, &["-o", "capwap.reassemble:FALSE"], &names);
    for (f, t) in frames.iter().zip(&t) {
        let d = Decoded::from_bytes(f, LinkType::ETHERNET, f.len() as u32);
        assert_eq!(t[3], "1");
        assert_eq!(all_sources(&d).join("~"), t[0]);
        assert_eq!(field(f, LinkType::ETHERNET, Field::TcpSrcport), t[1]);
        assert_eq!(field(f, LinkType::ETHERNET, Field::TcpDstport), t[2]);
    }
    // By default tshark reassembles: the inner packet shows on the last fragment
    // instead (a stateless decoder cannot do that).
    let t = tshark_on(1, &frames, &[], &names);
    assert_eq!(t[0][0], "10.9.9.1");
    assert_eq!(t[1][0], "10.9.9.1~172.16.0.1");
}

/// An ISL frame to `dst` around `frame` (which ends with its own FCS), VLAN `vlan`,
/// frame type `ty`, with the ISL CRC after it.
fn isl(dst: [u8; 5], ty: u8, vlan: u16, frame: &[u8]) -> Vec<u8> {
    let mut f = dst.to_vec();
    f.push(ty << 4);
    f.extend([0, 0, 0x0c, 1, 2, 3]);
    f.extend(((12 + frame.len()) as u16).to_be_bytes());
    f.extend([0xaa, 0xaa, 0x03, 0, 0, 0x0c]);
    f.extend((vlan << 1).to_be_bytes());
    f.extend([0, 7, 0, 0]);
    f.extend(frame);
    f.extend([0xde, 0xad, 0xbe, 0xef]);
    f
}

#[test]
fn cisco_isl() {
    let mut inner = vec![2, 0, 0, 0, 0, 0xd, 2, 0, 0, 0, 0, 0xe, 0x08, 0x00];
    inner.extend(tcp_ip([172, 16, 0, 1], [172, 16, 0, 2], 33000, 8080));
    inner.extend([0x11, 0x22, 0x33, 0x44]); // the encapsulated frame's FCS
    let mut tagged = vec![
        2, 0, 0, 0, 0, 0xd, 2, 0, 0, 0, 0, 0xe, 0x81, 0x00, 0x00, 0x2a,
    ];
    tagged.extend([0x08, 0x00]);
    tagged.extend(udp_ip([172, 16, 0, 3], [172, 16, 0, 4], 5000, 9999));
    tagged.extend([0x11, 0x22, 0x33, 0x44]);
    let frames = vec![
        isl([0x01, 0x00, 0x0c, 0x00, 0x00], 0, 100, &inner),
        isl([0x0c, 0x00, 0x0c, 0x00, 0x00], 0, 5, &inner),
        isl([0x01, 0x00, 0x0c, 0x00, 0x00], 0, 4000, &tagged),
    ];
    let fields = [
        (Field::IslVlanId, "isl.vlan_id"),
        (Field::EthSrc, "eth.src"),
        (Field::VlanId, "vlan.id"),
        (Field::IpSrc, "ip.src"),
        (Field::TcpSrcport, "tcp.srcport"),
        (Field::TcpLen, "tcp.len"),
        (Field::UdpDstport, "udp.dstport"),
    ];
    let ours = |f: &[u8]| -> Vec<String> {
        fields
            .iter()
            .map(|(field_, _)| field(f, LinkType::ETHERNET, *field_))
            .collect()
    };
    assert_eq!(
        ours(&frames[0]),
        [
            "100",
            "02:00:00:00:00:0e",
            "",
            "172.16.0.1",
            "33000",
            "10",
            ""
        ]
    );
    assert_eq!(
        ours(&frames[2])[..4],
        ["4000", "02:00:00:00:00:0e", "42", "172.16.0.3"]
    );
    for f in &frames {
        let d = Decoded::from_bytes(f, LinkType::ETHERNET, f.len() as u32);
        assert!(d.anomalies().is_empty(), "{:?}", d.anomalies());
        let h = d.isl().unwrap();
        assert_eq!(
            (h.frame_type(), h.src(), h.index()),
            (0, [0, 0, 0x0c, 1, 2, 3], 7)
        );
    }
    // Another frame type (Token Ring) is recognised but not decoded; a cut header is
    // a truncation.
    let tr = isl([0x01, 0x00, 0x0c, 0x00, 0x00], 1, 3, &inner);
    let d = Decoded::from_bytes(&tr, LinkType::ETHERNET, tr.len() as u32);
    assert_eq!(d.isl().unwrap().vlan_id(), 3);
    assert!(d.layer3().is_none() && d.ethernet().is_none());
    let d = Decoded::from_bytes(&frames[0][..20], LinkType::ETHERNET, 200);
    assert!(d.isl().is_none());
    assert!(d.anomalies().contains(Anomaly::LinkTruncated));
    if !have("tshark") {
        return;
    }
    let names: Vec<&str> = fields.iter().map(|f| f.1).collect();
    let t = tshark_on(1, &frames, &[], &names);
    for (f, t) in frames.iter().zip(&t) {
        let t: Vec<String> = t.iter().map(|v| v.replace('~', ",")).collect();
        assert_eq!(ours(f), t);
    }
}
