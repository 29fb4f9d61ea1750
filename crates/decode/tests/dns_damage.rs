//! DNS damage is a decoder anomaly like any other: `dns_malformed` when the message
//! contradicts itself (shorter than its header, fewer questions or records than it
//! counts, a name that does not decode), `dns_truncated` when the capture cut it, in
//! `Decoded::anomalies` and so in the `tracekit.anomalies` field. Checked against tshark
//! on the same crafted packets: it calls the first kind malformed (or, for a pointer
//! loop, prints the name as one), the second "packet size limited during capture".

use std::path::Path;

use tracekit_core::{LinkType, Meta, Packet, Timestamp};
use tracekit_decode::fields::{Field, write_field};
use tracekit_decode::{Anomaly, Decoded};
use tracekit_testdata::builder::{Ethernet, Ipv4, PacketBuilder, Tcp, Udp};
use tracekit_testdata::{have, tshark_fields};

/// A DNS header: id, flags (a response), then the four counts.
fn header(id: u16, qd: u16, an: u16) -> Vec<u8> {
    let mut h = id.to_be_bytes().to_vec();
    h.extend_from_slice(&[0x81, 0x80]);
    for count in [qd, an, 0, 0] {
        h.extend_from_slice(&count.to_be_bytes());
    }
    h
}

const QUESTION: [u8; 9] = [3, b'f', b'o', b'o', 0, 0, 1, 0, 1];
const ANSWER: [u8; 16] = [0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 16, 0, 4, 1, 2, 3, 4];

fn message(id: u16, qd: u16, an: u16, parts: &[&[u8]]) -> Vec<u8> {
    let mut m = header(id, qd, an);
    for p in parts {
        m.extend_from_slice(p);
    }
    m
}

fn eth() -> Ethernet {
    Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
}

fn udp(payload: &[u8]) -> Vec<u8> {
    PacketBuilder::new()
        .ethernet(eth())
        .ipv4(Ipv4::new([10, 0, 0, 1], [10, 0, 0, 2]))
        .udp(Udp::new(3333, 53))
        .payload(payload)
        .build()
}

fn tcp(message: &[u8]) -> Vec<u8> {
    let mut framed = (message.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(message);
    PacketBuilder::new()
        .ethernet(eth())
        .ipv4(Ipv4::new([10, 0, 0, 1], [10, 0, 0, 2]))
        .tcp(Tcp::new(3333, 53))
        .payload(&framed)
        .build()
}

/// Packets as captured, their length on the wire, and what the decoder must find.
fn cases() -> Vec<(Vec<u8>, usize, Option<Anomaly>)> {
    let whole = |f: Vec<u8>, want| {
        let len = f.len();
        (f, len, want)
    };
    let answered = udp(&message(8, 1, 1, &[&QUESTION, &ANSWER]));
    let answered_wire = answered.len();
    vec![
        whole(udp(&message(1, 1, 1, &[&QUESTION, &ANSWER])), None),
        // an empty datagram is no message at all
        whole(udp(&[]), None),
        whole(udp(&[0x12, 0x34, 0x81]), Some(Anomaly::DnsMalformed)),
        // the question's name points at itself
        whole(
            udp(&message(4, 1, 0, &[&[0xc0, 12, 0, 1, 0, 1]])),
            Some(Anomaly::DnsMalformed),
        ),
        // two questions counted, one there; an answer counted, none there
        whole(
            udp(&message(5, 2, 0, &[&QUESTION])),
            Some(Anomaly::DnsMalformed),
        ),
        whole(
            udp(&message(6, 1, 1, &[&QUESTION])),
            Some(Anomaly::DnsMalformed),
        ),
        // bytes after the last record are not damage
        whole(udp(&message(7, 1, 0, &[&QUESTION, b"junk"])), None),
        // the capture ends inside the answer
        (
            answered[..answered_wire - 6].to_vec(),
            answered_wire,
            Some(Anomaly::DnsTruncated),
        ),
        // over TCP, one whole length-prefixed message
        whole(
            tcp(&message(9, 1, 0, &[&[0xc0, 12, 0, 1, 0, 1]])),
            Some(Anomaly::DnsMalformed),
        ),
        whole(tcp(&message(10, 1, 1, &[&QUESTION, &ANSWER])), None),
    ]
}

fn write_pcap(path: &Path, frames: &[(Vec<u8>, usize, Option<Anomaly>)]) {
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&65535u32.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes());
    for (i, (f, wire, _)) in frames.iter().enumerate() {
        out.extend_from_slice(&(1_700_000_000 + i as u32).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(&(*wire as u32).to_le_bytes());
        out.extend_from_slice(f);
    }
    std::fs::write(path, out).unwrap();
}

const DNS_ANOMALIES: [Anomaly; 2] = [Anomaly::DnsTruncated, Anomaly::DnsMalformed];

#[test]
fn dns_damage_is_an_anomaly_as_tshark_sees_it() {
    let cases = cases();
    for (i, (frame, wire, want)) in cases.iter().enumerate() {
        let d = Decoded::from_bytes(frame, LinkType::ETHERNET, *wire as u32);
        let found: Vec<Anomaly> = d
            .anomalies()
            .iter()
            .filter(|a| DNS_ANOMALIES.contains(a))
            .collect();
        assert_eq!(
            found,
            want.iter().copied().collect::<Vec<_>>(),
            "packet {}",
            i + 1
        );
    }
    if !have("tshark") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dns-damage.pcap");
    write_pcap(&path, &cases);
    let theirs = tshark_fields(&path, &["dns.qry.name", "_ws.malformed", "_ws.short"]);
    assert_eq!(theirs.len(), cases.len());
    for (i, ((_, _, want), t)) in cases.iter().zip(&theirs).enumerate() {
        let malformed = !t[1].is_empty() || t[0].contains("pointer that loops");
        let short = !t[2].is_empty();
        let tshark = match (malformed, short) {
            (true, _) => Some(Anomaly::DnsMalformed),
            (false, true) => Some(Anomaly::DnsTruncated),
            (false, false) => None,
        };
        assert_eq!(tshark, *want, "packet {}: tshark says {t:?}", i + 1);
    }
}

#[test]
fn the_anomalies_field_names_dns_damage() {
    // The symptom: the name printed as `<damaged>` and nothing in the anomalies.
    let frame = udp(&message(4, 1, 0, &[&[0xc0, 12, 0, 1, 0, 1]]));
    let packet = Packet::new(
        &frame,
        Meta::new(Timestamp::ZERO, frame.len() as u32, LinkType::ETHERNET),
    );
    let d = Decoded::new(&packet);
    let field = |f: Field| {
        let mut out = String::new();
        write_field(&mut out, f, 1, &packet, &d);
        out
    };
    assert_eq!(field(Field::DnsQryName), "<damaged>");
    assert_eq!(field(Field::Anomalies), "dns_malformed");
}
