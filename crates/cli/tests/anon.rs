//! `tracekit anon` end to end: byte-identical to libtrace 3's `traceanon -s -d -c KEY`
//! (and `-p PREFIX`) on corpus traces and on ICMP errors, checksums left valid as tshark
//! verifies them, and prefix preservation over the addresses of a real trace.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use tracekit::decode::{Decoded, ethertype};
use tracekit::{CreateOptions, LinkType, Meta, Packet, Timestamp, TsResolution};
use tracekit_testdata::builder::{Ethernet, Icmp, Icmpv6, Ipv4, Ipv6, PacketBuilder, Tcp, Udp};
use tracekit_testdata::{corpus, have, tshark_fields};

const KEY: &str = "abcdefghijklmnopqrstuvwxyz012345";

fn tracekit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tracekit"))
}

fn run_ok(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// (time stamp ns, wire length, link type, bytes) of every packet.
type Row = (u64, u32, LinkType, Vec<u8>);

fn packets(path: &Path) -> Vec<Row> {
    let mut source = tracekit::open(path.to_str().unwrap()).unwrap();
    let mut rows = Vec::new();
    while let Some(p) = source.next_packet().unwrap() {
        rows.push((
            p.ts().as_unix_nanos(),
            p.wire_len(),
            p.link_type(),
            p.data().to_vec(),
        ));
    }
    rows
}

/// Packets traceanon 3 leaves alone and we rewrite: IPv6 (it rewrites only IPv4), ARP,
/// and the packets inside tunnels.
fn only_we_rewrite(row: &Row) -> bool {
    let d = Decoded::from_bytes(&row.3, row.2, row.1);
    matches!(d.ethertype(), ethertype::IPV6 | ethertype::ARP) || d.tunnel().is_some()
}

fn traceanon(args: &[&str], input: &Path, output: &Path) {
    let out = Command::new("traceanon")
        .args(args)
        .arg(format!("pcapfile:{}", input.display()))
        .arg(format!("pcapfile:{}", output.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "traceanon: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Compares our output with traceanon's packet by packet; returns how many IPv4
/// packets were compared and were changed by the anonymisation.
fn assert_like_traceanon(input: &Path, ours: &Path, theirs: &Path) -> usize {
    let (orig, a, b) = (packets(input), packets(ours), packets(theirs));
    assert_eq!(a.len(), orig.len(), "{}: our packet count", input.display());
    assert_eq!(
        b.len(),
        orig.len(),
        "{}: traceanon's count",
        input.display()
    );
    let mut changed = 0;
    for (i, ((o, x), y)) in orig.iter().zip(&a).zip(&b).enumerate() {
        let what = format!("{} packet {}", input.display(), i + 1);
        assert_eq!(x.0, y.0, "{what}: time stamp");
        assert_eq!(x.1, y.1, "{what}: wire length");
        if only_we_rewrite(o) {
            continue;
        }
        assert!(x.3 == y.3, "{what}: bytes differ from traceanon's");
        changed += usize::from(x.3 != o.3);
    }
    changed
}

fn write_trace(path: &Path, frames: &[Vec<u8>]) {
    let options = CreateOptions {
        ts_resolution: Some(TsResolution::MICRO),
        ..Default::default()
    };
    let mut sink = tracekit::create(path.to_str().unwrap(), &options).unwrap();
    for (i, f) in frames.iter().enumerate() {
        let ts = Timestamp::from_unix_nanos(1_700_000_000_000_000_000 + i as u64 * 1_000_000);
        let meta = Meta::new(ts, f.len() as u32, LinkType::ETHERNET);
        sink.write_packet(&Packet::new(f, meta)).unwrap();
    }
    sink.finish().unwrap();
}

/// ICMP errors quoting UDP, TCP and ICMP headers, an echo request, a first and a
/// non-first fragment, a UDP datagram without checksum, an IPv6 ICMPv6 error: built
/// with correct checksums.
fn icmp_frames() -> Vec<Vec<u8>> {
    let eth = || Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
    let inner_udp = PacketBuilder::new()
        .ipv4(Ipv4::new([192, 0, 2, 7], [198, 51, 100, 9]).ttl(1))
        .udp(Udp::new(33434, 33435))
        .payload(b"traceroute probe")
        .build();
    let inner_tcp = PacketBuilder::new()
        .ipv4(Ipv4::new([192, 0, 2, 7], [203, 0, 113, 80]))
        .tcp(Tcp::new(40000, 80))
        .build();
    let inner_icmp = PacketBuilder::new()
        .ipv4(Ipv4::new([192, 0, 2, 7], [203, 0, 113, 81]))
        .icmp(Icmp::echo_request(7, 1))
        .payload(b"ping")
        .build();
    let inner_v6 = PacketBuilder::new()
        .ipv6(Ipv6::new(
            [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7],
            [0x20, 1, 0xd, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9],
        ))
        .udp(Udp::new(5000, 53))
        .payload(b"q")
        .build();
    vec![
        PacketBuilder::new()
            .ethernet(eth())
            .ipv4(Ipv4::new([10, 1, 2, 3], [192, 0, 2, 7]))
            .icmp(Icmp::new(11, 0))
            .payload(&inner_udp)
            .build(),
        PacketBuilder::new()
            .ethernet(eth())
            .ipv4(Ipv4::new([203, 0, 113, 80], [192, 0, 2, 7]))
            .icmp(Icmp::new(3, 3))
            .payload(&inner_tcp)
            .build(),
        PacketBuilder::new()
            .ethernet(eth())
            .ipv4(Ipv4::new([10, 9, 9, 9], [192, 0, 2, 7]))
            .icmp(Icmp::new(3, 1))
            .payload(&inner_icmp)
            .build(),
        PacketBuilder::new()
            .ethernet(eth())
            .ipv4(Ipv4::new([192, 0, 2, 7], [203, 0, 113, 81]))
            .icmp(Icmp::echo_request(7, 1))
            .payload(b"ping")
            .build(),
        PacketBuilder::new()
            .ethernet(eth())
            .ipv4(Ipv4::new([192, 0, 2, 7], [198, 51, 100, 1]).fragment(0, true))
            .udp(Udp::new(1000, 2000))
            .payload(&[0x55; 64])
            .build(),
        PacketBuilder::new()
            .ethernet(eth())
            .ipv4(
                Ipv4::new([192, 0, 2, 7], [198, 51, 100, 1])
                    .fragment(72, false)
                    .protocol(17),
            )
            .payload(&[0x55; 40])
            .build(),
        PacketBuilder::new()
            .ethernet(eth())
            .ipv4(Ipv4::new([192, 0, 2, 8], [198, 51, 100, 2]))
            .udp(Udp::new(1000, 2000).checksum(0))
            .payload(b"no checksum")
            .build(),
        PacketBuilder::new()
            .ethernet(eth())
            .ipv6(Ipv6::new(
                [0x20, 1, 0xd, 0xb8, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7],
            ))
            .icmpv6(Icmpv6::new(1, 4))
            .payload(&inner_v6)
            .build(),
    ]
}

const CORPUS: &[&str] = &[
    "libtrace__100_packets.pcap",
    "ndpi__1kxun.pcap",
    "libtrace__vlan.pcap",
    "zeek__dns-edns-ecs.pcap",
    "zeek__ipv4__fragmented-1.pcap",
    "libtrace__10_mpls_ip.pcap",
];

#[test]
fn zeroed_checksums_equal_traceanon_on_corpus_traces_and_icmp_errors() {
    if !have("traceanon") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let crafted = dir.path().join("icmp.pcap");
    write_trace(&crafted, &icmp_frames());
    let mut inputs: Vec<PathBuf> = CORPUS.iter().map(|n| corpus(n)).collect();
    inputs.push(crafted.clone());
    for input in &inputs {
        let name = input.file_name().unwrap().to_str().unwrap();
        let (ours, theirs) = (
            dir.path().join(format!("o_{name}")),
            dir.path().join(format!("t_{name}")),
        );
        traceanon(&["-s", "-d", "-c", KEY], input, &theirs);
        run_ok(
            tracekit()
                .args(["anon", "--checksums", "zero", "-c", KEY])
                .arg(input)
                .arg(&ours),
        );
        let changed = assert_like_traceanon(input, &ours, &theirs);
        assert!(changed > 0, "{name}: no IPv4 packet was rewritten");
    }
    // The ICMP errors' quoted headers were compared too: 3 errors + echo + 2 fragments +
    // the UDP datagram.
    let (o, a) = (packets(&crafted), packets(&dir.path().join("o_icmp.pcap")));
    let differs = |i: usize, range: std::ops::Range<usize>| o[i].3[range.clone()] != a[i].3[range];
    // Packet 1: the quoted UDP header's destination (the original sender, at
    // 14 + 20 + 8 + 16) was rewritten.
    assert!(differs(0, 58..62));
}

#[test]
fn source_only_and_prefix_substitution_equal_traceanon() {
    if !have("traceanon") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let crafted = dir.path().join("icmp.pcap");
    write_trace(&crafted, &icmp_frames());
    for input in [corpus("ndpi__1kxun.pcap"), crafted] {
        for (theirs_args, ours_args) in [
            (vec!["-s", "-c", KEY], vec!["-s", "-c", KEY]),
            (vec!["-d", "-c", KEY], vec!["-d", "-c", KEY]),
            (
                vec!["-s", "-d", "-p", "10.20.0.0/14"],
                vec!["-s", "-d", "-p", "10.20.0.0/14"],
            ),
        ] {
            let (ours, theirs) = (dir.path().join("o.pcap"), dir.path().join("t.pcap"));
            traceanon(&theirs_args, &input, &theirs);
            run_ok(
                tracekit()
                    .arg("anon")
                    .args(["--checksums", "zero"])
                    .args(&ours_args)
                    .arg(&input)
                    .arg(&ours),
            );
            assert!(
                assert_like_traceanon(&input, &ours, &theirs) > 0,
                "{ours_args:?}"
            );
        }
    }
}

/// tshark's verdict on every checksum of every frame (with checking turned on).
fn checksum_statuses(path: &Path) -> Vec<Vec<String>> {
    let out = Command::new("tshark")
        .args(["-n", "-r"])
        .arg(path)
        .args([
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "tcp.check_checksum:TRUE",
        ])
        .args([
            "-o",
            "udp.check_checksum:TRUE",
            "-T",
            "fields",
            "-E",
            "separator=|",
        ])
        .args(["-e", "ip.checksum.status", "-e", "tcp.checksum.status"])
        .args(["-e", "udp.checksum.status", "-e", "icmp.checksum.status"])
        .args(["-e", "icmpv6.checksum.status"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split('|').map(str::to_string).collect())
        .collect()
}

#[test]
fn updated_checksums_stay_valid_by_tsharks_verdict() {
    if !have("tshark") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let crafted = dir.path().join("icmp.pcap");
    write_trace(&crafted, &icmp_frames());
    for input in [
        crafted,
        corpus("ndpi__1kxun.pcap"),
        corpus("zeek__dns-edns-ecs.pcap"),
        corpus("zeek__ipv6-http-atomic-frag.pcap"),
        corpus("zeek__tunnels__4in4.pcap"),
        corpus("zeek__tunnels__6in4.pcap"),
        corpus("zeek__tunnels__Teredo.pcap"),
        corpus("zeek__tunnels__vxlan-encapsulated-http.pcap"),
        corpus("zeek__tunnels__gre-sample.pcap"),
        corpus("zeek__tunnels__geneve.pcap"),
    ] {
        let out = dir.path().join("out.pcap");
        run_ok(tracekit().args(["anon", "-c", KEY]).arg(&input).arg(&out));
        let (before, after) = (checksum_statuses(&input), checksum_statuses(&out));
        assert_eq!(before.len(), after.len());
        let good = before
            .iter()
            .flatten()
            .filter(|s| s.split(',').any(|v| v == "1"))
            .count();
        assert!(
            good > 0,
            "{}: no verified checksum to compare",
            input.display()
        );
        assert_eq!(
            before,
            after,
            "{}: checksum verdicts changed",
            input.display()
        );
        let addrs = |p: &Path| tshark_fields(p, &["ip.src", "ipv6.src"]);
        let (a, b) = (addrs(&input), addrs(&out));
        assert!(
            a.iter()
                .zip(&b)
                .all(|(x, y)| x != y || x.iter().all(String::is_empty))
        );
    }
}

fn bits(a: IpAddr) -> (u8, u128) {
    match a {
        IpAddr::V4(v) => (4, u128::from(u32::from(v)) << 96),
        IpAddr::V6(v) => (6, u128::from(v)),
    }
}

#[test]
fn prefixes_are_preserved_over_a_real_traces_addresses() {
    if !have("tshark") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let input = corpus("ndpi__1kxun.pcap");
    let out = dir.path().join("out.pcap");
    run_ok(tracekit().args(["anon", "-c", KEY]).arg(&input).arg(&out));
    let fields = ["ip.src", "ip.dst", "ipv6.src", "ipv6.dst"];
    let (a, b) = (tshark_fields(&input, &fields), tshark_fields(&out, &fields));
    let mut map: BTreeMap<IpAddr, IpAddr> = BTreeMap::new();
    for (x, y) in a.iter().zip(&b) {
        for (p, q) in x.iter().zip(y) {
            // The outermost address only (tshark joins inner ones after a comma).
            let (Some(p), Some(q)) = (p.split(',').next(), q.split(',').next()) else {
                continue;
            };
            if p.is_empty() {
                continue;
            }
            let (p, q): (IpAddr, IpAddr) = (p.parse().unwrap(), q.parse().unwrap());
            assert_eq!(*map.entry(p).or_insert(q), q, "{p} mapped two ways");
        }
    }
    assert!(map.len() > 50, "only {} addresses", map.len());
    let pairs: Vec<_> = map.iter().map(|(p, q)| (bits(*p), bits(*q))).collect();
    for (i, (p1, q1)) in pairs.iter().enumerate() {
        for (p2, q2) in &pairs[i + 1..] {
            if p1.0 != p2.0 {
                continue;
            }
            let shared = |x: u128, y: u128| {
                (x ^ y)
                    .leading_zeros()
                    .min(if p1.0 == 4 { 32 } else { 128 })
            };
            assert_eq!(shared(p1.1, p2.1), shared(q1.1, q2.1), "{p1:?} {p2:?}");
        }
    }
}

#[test]
fn keyfile_and_key_agree_and_bad_keys_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus("libtrace__100_packets.pcap");
    let keyfile = dir.path().join("key");
    std::fs::write(&keyfile, KEY).unwrap();
    let (a, b) = (dir.path().join("a.pcap"), dir.path().join("b.pcap"));
    run_ok(tracekit().args(["anon", "-c", KEY]).arg(&input).arg(&a));
    run_ok(
        tracekit()
            .arg("anon")
            .arg("--keyfile")
            .arg(&keyfile)
            .arg(&input)
            .arg(&b),
    );
    assert_eq!(packets(&a), packets(&b));
    std::fs::write(&keyfile, b"short").unwrap();
    let out = tracekit()
        .arg("anon")
        .arg("--keyfile")
        .arg(&keyfile)
        .arg(&input)
        .arg(&b)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("key file holds 5 bytes"));
    let out = tracekit().arg("anon").arg(&input).arg(&b).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let out = tracekit()
        .args(["anon", "-p", "10.0.0.0/33"])
        .arg(&input)
        .arg(&b)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "clap refuses a bad prefix");
}

#[test]
fn damaged_input_keeps_the_packets_before_the_damage() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus("corrupt__vlan_truncated_midrecord.pcap");
    let out = dir.path().join("out.pcap");
    let o = tracekit()
        .args(["anon", "-c", KEY])
        .arg(&input)
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("packet 200"), "{err}");
    assert_eq!(packets(&out).len(), 199);
}
