//! The packet builder against an independent oracle: built frames are written to a pcap
//! file and tshark, with checksum validation on, must read back the fields they were
//! built with and call every computed checksum good (and every damaged one bad).

use std::path::Path;
use std::process::Command;

use tracekit_testdata::builder::{
    Ethernet, Icmp, Icmpv6, Ipv4, Ipv6, Ipv6Ext, Mpls, PacketBuilder, Tcp, Udp, Vlan, tcp_flags,
};
use tracekit_testdata::have;

const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
const MAC_B: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
const V4_A: [u8; 4] = [10, 0, 0, 1];
const V4_B: [u8; 4] = [192, 0, 2, 7];
const V6_A: [u8; 16] = [
    0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01,
];
const V6_B: [u8; 16] = [
    0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02,
];

/// Status values of tshark's `*.checksum.status` fields.
const GOOD: &str = "1";
const BAD: &str = "0";
/// tshark's `_ws.expert.severity` of an error (a bad checksum, a malformed field).
const EXPERT_ERROR: &str = "8388608";

/// A minimal little-endian microsecond pcap file of Ethernet frames.
fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&[0; 8]); // time zone, accuracy
    out.extend_from_slice(&65535u32.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes()); // LINKTYPE_ETHERNET
    for (i, f) in frames.iter().enumerate() {
        out.extend_from_slice(&(1_700_000_000 + i as u32).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(f);
    }
    std::fs::write(path, out).unwrap();
}

/// A built frame and the tshark fields it must show (several values joined with `~`).
type Case = (Vec<u8>, Vec<(&'static str, &'static str)>);

fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    let eth = Ethernet::new(MAC_A, MAC_B);

    let syn = Tcp::new(40000, 45000)
        .seq(0x0102_0304)
        .ack(0x0a0b_0c0d)
        .flags(tcp_flags::SYN | tcp_flags::ACK)
        .window(64240)
        .mss(1460)
        .sack_permitted()
        .timestamps(1000, 2000)
        .nop()
        .wscale(7);
    let router_alert = [148, 4, 0, 0];
    v.push((
        PacketBuilder::new()
            .ethernet(eth)
            .ipv4(
                Ipv4::new(V4_A, V4_B)
                    .id(0x1234)
                    .ttl(17)
                    .dscp(46)
                    .dont_fragment()
                    .options(&router_alert),
            )
            .tcp(syn)
            .payload(b"hello")
            .build(),
        vec![
            ("eth.type", "0x0800"),
            ("ip.hdr_len", "24"),
            ("ip.len", "69"),
            ("ip.id", "0x1234"),
            ("ip.ttl", "17"),
            ("ip.dsfield.dscp", "46"),
            ("ip.flags.df", "1"),
            ("ip.opt.type", "148"),
            ("ip.checksum.status", GOOD),
            ("tcp.seq_raw", "16909060"),
            ("tcp.ack_raw", "168496141"),
            ("tcp.flags", "0x0012"),
            ("tcp.window_size_value", "64240"),
            ("tcp.hdr_len", "40"),
            ("tcp.len", "5"),
            ("tcp.option_kind", "2~4~8~1~3"),
            ("tcp.options.mss_val", "1460"),
            ("tcp.options.wscale.shift", "7"),
            ("tcp.options.timestamp.tsval", "1000"),
            ("tcp.options.timestamp.tsecr", "2000"),
            ("tcp.checksum.status", GOOD),
        ],
    ));

    v.push((
        PacketBuilder::new()
            .ethernet(eth)
            .vlan(Vlan::service(200))
            .vlan(Vlan::new(100).pcp(5))
            .ipv4(Ipv4::new(V4_A, V4_B))
            .udp(Udp::new(40001, 45001))
            .payload(b"odd-length")
            .build(),
        vec![
            ("eth.type", "0x88a8"),
            ("ieee8021ad.id", "200"),
            ("vlan.id", "100"),
            ("vlan.priority", "5"),
            ("vlan.etype", "0x0800"),
            ("ip.checksum.status", GOOD),
            ("udp.length", "18"),
            ("udp.checksum.status", GOOD),
        ],
    ));

    v.push((
        PacketBuilder::new()
            .ethernet(eth)
            .mpls(Mpls::new(16).tc(1))
            .mpls(Mpls::new(1000).ttl(9))
            .ipv4(Ipv4::new(V4_A, V4_B))
            .udp(Udp::new(1, 2))
            .build(),
        vec![
            ("eth.type", "0x8847"),
            ("mpls.label", "16~1000"),
            ("mpls.bottom", "0~1"),
            ("mpls.ttl", "64~9"),
            ("ip.checksum.status", GOOD),
            ("udp.length", "8"),
            ("udp.checksum.status", GOOD),
        ],
    ));

    v.push((
        PacketBuilder::new()
            .ethernet(eth)
            .ipv4(Ipv4::new(V4_A, V4_B).id(7))
            .icmp(Icmp::echo_request(0x4242, 3))
            .payload(&[0x61; 57])
            .build(),
        vec![
            ("icmp.type", "8"),
            ("icmp.ident", "16962"),
            ("icmp.seq", "3"),
            ("icmp.checksum.status", GOOD),
            ("ip.checksum.status", GOOD),
        ],
    ));

    v.push((
        PacketBuilder::new()
            .ethernet(eth)
            .ipv6(Ipv6::new(V6_A, V6_B).hop_limit(3).flow_label(0x12345))
            .ipv6_ext(Ipv6Ext::hop_by_hop(&[]))
            .ipv6_ext(Ipv6Ext::destination(&[1, 2, 0, 0]))
            .tcp(
                Tcp::new(45002, 40002)
                    .flags(tcp_flags::ACK)
                    .nop()
                    .nop()
                    .sack(&[(100, 200), (300, 400)]),
            )
            .payload(b"abc")
            .build(),
        vec![
            ("eth.type", "0x86dd"),
            ("ipv6.plen", "59"),
            ("ipv6.nxt", "0"),
            ("ipv6.hlim", "3"),
            ("ipv6.flow", "0x012345"),
            ("tcp.options.sack_le", "100~300"),
            ("tcp.options.sack_re", "200~400"),
            ("tcp.len", "3"),
            ("tcp.checksum.status", GOOD),
        ],
    ));

    v.push((
        PacketBuilder::new()
            .ethernet(eth)
            .ipv6(Ipv6::new(V6_B, V6_A))
            .ipv6_ext(Ipv6Ext::routing(0, 0, &[0; 4]))
            .icmpv6(Icmpv6::echo_reply(9, 10))
            .payload(b"ping")
            .build(),
        vec![
            ("ipv6.routing.type", "0"),
            ("icmpv6.type", "129"),
            ("icmpv6.echo.identifier", "0x0009"),
            ("icmpv6.echo.sequence_number", "10"),
            ("icmpv6.checksum.status", GOOD),
        ],
    ));

    v.push((
        PacketBuilder::new()
            .ethernet(eth)
            .ipv6(Ipv6::new(V6_A, V6_B))
            .ipv6_ext(Ipv6Ext::fragment(1232, true, 0xdead_beef).next_header(17))
            .payload(&[0; 16])
            .build(),
        vec![
            ("ipv6.plen", "24"),
            ("ipv6.fraghdr.nxt", "17"),
            ("ipv6.fraghdr.offset", "154"),
            ("ipv6.fraghdr.more", "1"),
            ("ipv6.fraghdr.ident", "0xdeadbeef"),
        ],
    ));

    v.push((
        PacketBuilder::new()
            .ethernet(eth)
            .ipv4(Ipv4::new(V4_A, V4_B).fragment(1480, true).protocol(17))
            .payload(&[0; 40])
            .pad_to(100)
            .build(),
        vec![
            ("ip.len", "60"),
            ("ip.frag_offset", "185"), // in 8-byte units: 1480 bytes
            ("ip.flags.mf", "1"),
            ("ip.checksum.status", GOOD),
        ],
    ));

    // Damage set by hand is written as given, and the oracle sees it.
    v.push((
        PacketBuilder::new()
            .ethernet(eth)
            .ipv4(Ipv4::new(V4_A, V4_B).checksum(0xbeef))
            .tcp(Tcp::new(1, 2).checksum(0x1234))
            .build(),
        vec![("ip.checksum.status", BAD), ("tcp.checksum.status", BAD)],
    ));
    v.push((
        PacketBuilder::new()
            .ethernet(eth)
            .ipv6(Ipv6::new(V6_A, V6_B))
            .udp(Udp::new(1, 2).checksum(0x0101))
            .payload(b"x")
            .build(),
        vec![("udp.checksum.status", BAD)],
    ));
    v
}

#[test]
fn tshark_reads_back_the_fields_and_good_checksums() {
    if !have("tshark") {
        return;
    }
    let cases = cases();
    let dir = std::env::temp_dir().join(format!("tracekit-builder-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("built.pcap");
    let frames: Vec<Vec<u8>> = cases.iter().map(|c| c.0.clone()).collect();
    write_pcap(&path, &frames);

    let mut fields: Vec<&str> = vec!["_ws.malformed", "_ws.expert.severity"];
    for (_, want) in &cases {
        for (f, _) in want {
            if !fields.contains(f) {
                fields.push(f);
            }
        }
    }
    let mut cmd = Command::new("tshark");
    cmd.args(["-n", "-r"]).arg(&path);
    for pref in [
        "ip.check_checksum:TRUE",
        "tcp.check_checksum:TRUE",
        "udp.check_checksum:TRUE",
        "ip.defragment:FALSE",
        "ipv6.defragment:FALSE",
        "tcp.analyze_sequence_numbers:FALSE",
    ] {
        cmd.args(["-o", pref]);
    }
    cmd.args(["-T", "fields", "-E", "separator=|", "-E", "aggregator=~"]);
    for f in &fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("tshark runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split('|').collect()).collect();
    std::fs::remove_dir_all(&dir).unwrap();

    assert_eq!(rows.len(), cases.len());
    for (i, ((_, want), row)) in cases.iter().zip(&rows).enumerate() {
        let got = |name: &str| row[fields.iter().position(|f| *f == name).unwrap()];
        assert_eq!(got("_ws.malformed"), "", "frame {}: malformed", i + 1);
        let damaged = want.iter().any(|(_, v)| *v == BAD);
        let errors = got("_ws.expert.severity")
            .split('~')
            .filter(|s| *s == EXPERT_ERROR)
            .count();
        assert!(
            damaged || errors == 0,
            "frame {}: tshark reports errors",
            i + 1
        );
        for (name, value) in want {
            assert_eq!(got(name), *value, "frame {}: {name}", i + 1);
        }
    }
}
