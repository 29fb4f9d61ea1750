//! GRE with RFC 1701's routing field (the R bit): the source route entries and their
//! NULL terminator are part of the header, so the encapsulated packet starts after them.
//! Checked against tshark's decoding of the same crafted packets (outer and inner
//! addresses and ports), and a list that never ends is an anomaly, or a truncation when
//! the capture cut it.

use std::path::Path;

use tracekit_core::LinkType;
use tracekit_decode::{Anomaly, Decoded};
use tracekit_testdata::builder::{Ethernet, Ipv4, PacketBuilder, Udp};
use tracekit_testdata::{have, tshark_fields};

fn eth_header() -> Ethernet {
    Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
}

/// A source route entry: address family, offset, then the routing information.
fn sre(family: u16, offset: u8, info: &[u8]) -> Vec<u8> {
    let mut b = family.to_be_bytes().to_vec();
    b.push(offset);
    b.push(info.len() as u8);
    b.extend_from_slice(info);
    b
}

const NULL_SRE: [u8; 4] = [0, 0, 0, 0];

/// A GRE header: flags word, protocol, the checksum + offset word when C or R is set,
/// key and sequence when given, then `routing` as it is.
fn gre(flags: u16, protocol: u16, key: Option<u32>, seq: Option<u32>, routing: &[u8]) -> Vec<u8> {
    let mut b = flags.to_be_bytes().to_vec();
    b.extend_from_slice(&protocol.to_be_bytes());
    if flags & 0xc000 != 0 {
        b.extend_from_slice(&[0, 0, 0, 0]);
    }
    for word in [key, seq].into_iter().flatten() {
        b.extend_from_slice(&word.to_be_bytes());
    }
    b.extend_from_slice(routing);
    b
}

/// Outer Ethernet + IPv4 10.0.0.1 -> 10.0.0.2 + `header`, then (behind an Ethernet
/// header when `inner_eth`) IPv4 192.168.n.1 -> 192.168.n.2, UDP 40000+n -> 41000+n.
fn packet(n: u8, header: &[u8], inner_eth: bool) -> Vec<u8> {
    let mut b = PacketBuilder::new();
    b.ethernet(eth_header())
        .ipv4(Ipv4::new([10, 0, 0, 1], [10, 0, 0, 2]).protocol(47))
        .payload(header);
    if inner_eth {
        b.ethernet(eth_header());
    }
    b.ipv4(Ipv4::new([192, 168, n, 1], [192, 168, n, 2]))
        .udp(Udp::new(40000 + u16::from(n), 41000 + u16::from(n)))
        .payload(b"data")
        .build()
}

fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&65535u32.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes());
    for (i, f) in frames.iter().enumerate() {
        out.extend_from_slice(&(1_700_000_000 + i as u32).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(f);
    }
    std::fs::write(path, out).unwrap();
}

/// Addresses and ports of every level, joined with `~` as tshark aggregates them.
fn ours(frame: &[u8]) -> [String; 3] {
    let mut levels = vec![Decoded::from_bytes(
        frame,
        LinkType::ETHERNET,
        frame.len() as u32,
    )];
    while let Some(inner) = levels.last().and_then(|d| d.inner()) {
        levels.push(inner);
    }
    let join = |f: &dyn Fn(&Decoded<'_>) -> Option<String>| {
        levels.iter().filter_map(f).collect::<Vec<_>>().join("~")
    };
    [
        join(&|d| d.src_addr().map(|a| a.to_string())),
        join(&|d| d.dst_addr().map(|a| a.to_string())),
        join(&|d| d.udp().map(|h| h.src_port().to_string())),
    ]
}

const R: u16 = 0x4000;
const C: u16 = 0x8000;
const K: u16 = 0x2000;
const S: u16 = 0x1000;

fn routed_frames() -> Vec<Vec<u8>> {
    let ip_route = sre(0x0800, 4, &[1, 2, 3, 4, 5, 6, 7, 8]);
    let as_route = sre(0xfffe, 0, &[0, 1, 0, 2]);
    let list = |entries: &[&[u8]]| {
        let mut b = entries.concat();
        b.extend_from_slice(&NULL_SRE);
        b
    };
    vec![
        packet(1, &gre(R, 0x0800, None, None, &list(&[&ip_route])), false),
        packet(
            2,
            &gre(
                R | K | S,
                0x0800,
                Some(7),
                Some(9),
                &list(&[&ip_route, &as_route]),
            ),
            false,
        ),
        packet(
            3,
            &gre(C | R, 0x0800, None, None, &list(&[&as_route])),
            false,
        ),
        packet(4, &gre(R, 0x0800, None, None, &list(&[])), false),
        packet(
            5,
            &gre(R | K, 0x6558, Some(1), None, &list(&[&ip_route])),
            true,
        ),
        // no routing field: the plain case, for contrast
        packet(6, &gre(K, 0x0800, Some(3), None, &[]), false),
    ]
}

#[test]
fn inner_packets_after_source_routes_agree_with_tshark() {
    let frames = routed_frames();
    for f in &frames {
        let d = Decoded::from_bytes(f, LinkType::ETHERNET, f.len() as u32);
        assert!(d.anomalies().is_empty(), "{:?}", d.anomalies());
        assert_eq!(
            d.inner().and_then(|i| i.udp()).map(|u| u.length()),
            Some(12)
        );
    }
    let routes: Vec<usize> = frames
        .iter()
        .map(|f| {
            let d = Decoded::from_bytes(f, LinkType::ETHERNET, f.len() as u32);
            d.gre().unwrap().source_routes().count()
        })
        .collect();
    assert_eq!(routes, [1, 2, 1, 0, 1, 0]);
    if !have("tshark") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gre-routing.pcap");
    write_pcap(&path, &frames);
    let theirs = tshark_fields(&path, &["ip.src", "ip.dst", "udp.srcport"]);
    assert_eq!(theirs.len(), frames.len());
    for (i, (f, t)) in frames.iter().zip(&theirs).enumerate() {
        let n = i + 1;
        let want = [
            format!("10.0.0.1~192.168.{n}.1"),
            format!("10.0.0.2~192.168.{n}.2"),
            format!("{}", 40000 + n),
        ];
        assert_eq!(t[..], want[..], "tshark, packet {n}");
        assert_eq!(ours(f)[..], want[..], "tracekit, packet {n}");
    }
}

#[test]
fn a_source_route_list_without_its_end_is_malformed_or_cut() {
    // The entries run on into the inner packet's bytes and past the end: the inner
    // packet cannot be found. (0x4500 is not family 0, and no 4 zero bytes follow.)
    let header = gre(R, 0x0800, None, None, &sre(0x0800, 0, &[9; 8]));
    let frame = packet(1, &header, false);
    let d = Decoded::from_bytes(&frame, LinkType::ETHERNET, frame.len() as u32);
    assert!(d.anomalies().contains(Anomaly::GreRoutingUnterminated));
    assert!(d.gre().is_none() && d.inner().is_none());
    // A whole packet whose capture ends inside the list: truncated, not malformed.
    let whole = packet(
        1,
        &gre(
            R,
            0x0800,
            None,
            None,
            &[sre(0x0800, 0, &[9; 8]), NULL_SRE.to_vec()].concat(),
        ),
        false,
    );
    let cut = &whole[..14 + 20 + 8 + 6];
    let d = Decoded::from_bytes(cut, LinkType::ETHERNET, whole.len() as u32);
    let found = d.anomalies();
    assert!(found.contains(Anomaly::GreTruncated), "{found:?}");
    assert!(
        !found.contains(Anomaly::GreRoutingUnterminated),
        "{found:?}"
    );
    if !have("tshark") {
        return;
    }
    // tshark finds no inner packet in the unterminated list either.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gre-unterminated.pcap");
    write_pcap(&path, std::slice::from_ref(&frame));
    let theirs = tshark_fields(&path, &["ip.src", "ip.dst", "udp.srcport"]);
    assert_eq!(theirs[0][..], ["10.0.0.1", "10.0.0.2", ""]);
    assert_eq!(ours(&frame)[..], theirs[0][..]);
}
