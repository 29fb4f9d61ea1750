//! Ports from transport headers that are only partly there — a capture cut after a few
//! bytes of the header, the 8 bytes an ICMP error quotes, a TCP data offset running past
//! the segment — against tshark on the same crafted frames: `tracekit fields` shows the
//! ports tshark shows once their 4 bytes are there, and the damage stays an anomaly.

use tracekit_core::{LinkType, Meta, Packet, Timestamp};
use tracekit_decode::Decoded;
use tracekit_decode::fields::{Field, write_field};
use tracekit_testdata::builder::{Ethernet, Icmp, Ipv4, PacketBuilder, Tcp, Udp};
use tracekit_testdata::{have, tshark_fields, write_pcap};

fn eth() -> Ethernet {
    Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
}

/// (frame, captured length).
fn frames() -> Vec<(Vec<u8>, usize)> {
    let mut v = Vec::new();
    // 1. TCP 1234 -> 80, the capture cut 6 bytes into the TCP header.
    let f = PacketBuilder::new()
        .ethernet(eth())
        .ipv4(Ipv4::new([10, 0, 0, 1], [10, 0, 0, 2]))
        .tcp(Tcp::new(1234, 80))
        .build();
    v.push((f, 14 + 20 + 6));
    // 2. UDP 5000 -> 53 cut after 3 bytes: no ports.
    let f = PacketBuilder::new()
        .ethernet(eth())
        .ipv4(Ipv4::new([10, 0, 0, 1], [10, 0, 0, 2]))
        .udp(Udp::new(5000, 53))
        .payload(b"query")
        .build();
    v.push((f, 14 + 20 + 3));
    // 3. An ICMP port unreachable quoting IPv4 + the first 8 bytes of TCP 40000 -> 443.
    let quoted_tcp = PacketBuilder::new()
        .ipv4(Ipv4::new([10, 0, 0, 2], [10, 0, 0, 9]))
        .tcp(Tcp::new(40000, 443))
        .build();
    let quote = quoted_tcp[..28].to_vec();
    let f = PacketBuilder::new()
        .ethernet(eth())
        .ipv4(Ipv4::new([10, 0, 0, 9], [10, 0, 0, 2]).protocol(1))
        .icmp(Icmp::new(3, 3))
        .payload(&quote)
        .build();
    let len = f.len();
    v.push((f, len));
    // 4. TCP 2222 -> 8080 whose data offset (15 words) runs past the 20-byte segment.
    let f = PacketBuilder::new()
        .ethernet(eth())
        .ipv4(Ipv4::new([10, 0, 0, 1], [10, 0, 0, 2]))
        .tcp(Tcp::new(2222, 8080).data_offset(15))
        .build();
    let len = f.len();
    v.push((f, len));
    v
}

const FIELDS: [Field; 4] = [
    Field::TcpSrcport,
    Field::TcpDstport,
    Field::UdpSrcport,
    Field::UdpDstport,
];

fn ours(frame: &[u8], cap: usize) -> (Vec<String>, Vec<String>) {
    let meta = Meta::new(Timestamp::ZERO, frame.len() as u32, LinkType::ETHERNET);
    let p = Packet::new(&frame[..cap], meta);
    let d = Decoded::new(&p);
    let values = FIELDS
        .iter()
        .map(|f| {
            let mut s = String::new();
            write_field(&mut s, *f, 1, &p, &d);
            s
        })
        .collect();
    let anomalies = d.anomalies().iter().map(|a| a.to_string()).collect();
    (values, anomalies)
}

#[test]
fn ports_of_partial_headers_are_those_tshark_shows() {
    let frames = frames();
    let expected_ports = [
        ["1234", "80", "", ""],
        ["", "", "", ""],
        ["40000", "443", "", ""],
        ["2222", "8080", "", ""],
    ];
    for ((f, cap), want) in frames.iter().zip(expected_ports) {
        let (values, anomalies) = ours(f, *cap);
        assert_eq!(values, want);
        // Every one of these is damaged or cut; the decoder says so (the quote is an
        // ICMP error's normal content: no anomaly there).
        if want[0] != "40000" {
            assert!(!anomalies.is_empty(), "{want:?}: no anomaly");
        }
    }
    if !have("tshark") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("partial.pcap");
    write_pcap(&path, 1, &frames);
    let theirs = tshark_fields(
        &path,
        &["tcp.srcport", "tcp.dstport", "udp.srcport", "udp.dstport"],
    );
    assert_eq!(theirs.len(), frames.len());
    for (i, ((f, cap), t)) in frames.iter().zip(&theirs).enumerate() {
        let (values, _) = ours(f, *cap);
        let t: Vec<String> = t
            .iter()
            .map(|v| v.split('~').next().unwrap().to_string())
            .collect();
        assert_eq!(values, t, "frame {}", i + 1);
    }
}
