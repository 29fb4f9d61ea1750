//! Differential test over damaged packets: Ethernet packets of corpus files with one to
//! three header bytes changed (a seeded generator, the same every run), decoded by
//! tracekit and by tshark. For the core fields tracekit never shows a value different
//! from tshark's. Where one of them shows a value the other leaves out, tracekit names
//! the damage with an anomaly: when it shows less (it gave up on a header tshark read
//! on), and when it shows more (the addresses of an IPv4 header whose total length is
//! smaller than the header, which tshark declines to show).

use std::path::Path;

use tracekit_core::{LinkType, Meta, Packet, Timestamp};
use tracekit_decode::Decoded;
use tracekit_decode::fields::{Field, write_field};
use tracekit_testdata::{corpus, have, write_pcap};

/// Ethernet traces with varied headers: VLAN, QinQ, MPLS, tunnels, IPv6 extension
/// headers, fragments, DNS, TCP options.
const SOURCES: &[&str] = &[
    "libtrace__100_packets.pcap",
    "libtrace__vlan.pcap",
    "libtrace__qinq.pcap",
    "libtrace__mpls.pcap",
    "libtrace__vxlan.pcap",
    "zeek__tunnels__gre-sample.pcap",
    "zeek__tunnels__Teredo.pcap",
    "zeek__ipv6-hbh-routing0.pcap",
    "zeek__ipv4__fragmented-1.pcap",
    "zeek__dns-edns-ecs.pcap",
    "zeek__tcp__timestamp.pcap",
    "zeek__mixed-vlan-mpls.pcap",
    "zeek__pppoe-over-qinq.pcap",
    "zeek__tunnels__vxlan-encapsulated-http.pcap",
    "zeek__vlan-qinqinq.pcap",
    "zeek__tunnels__geneve.pcap",
    "ndpi__1kxun.pcap",
    "ndpi__sites.pcapng",
    "zeek__ipv6-fragmented-dns.pcap",
];
/// Packets taken from each source, and damaged copies made of each.
const PACKETS_PER_SOURCE: usize = 40;
const MUTANTS_PER_PACKET: usize = 8;
/// Bytes changed are within the first `HEADER_SPAN` bytes: the headers.
const HEADER_SPAN: usize = 80;

const FIELDS: &[(Field, &str)] = &[
    (Field::IpSrc, "ip.src"),
    (Field::IpDst, "ip.dst"),
    (Field::TcpSrcport, "tcp.srcport"),
    (Field::TcpDstport, "tcp.dstport"),
    (Field::UdpSrcport, "udp.srcport"),
    (Field::UdpDstport, "udp.dstport"),
];

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn mutants() -> Vec<(Vec<u8>, usize)> {
    let mut rng = Rng(0x7472_6163_656b_6974);
    let mut out = Vec::new();
    for name in SOURCES {
        let path = corpus(name);
        let Ok(mut src) = tracekit::open(path.to_str().unwrap()) else {
            continue;
        };
        let mut taken = 0;
        while let Ok(Some(p)) = src.next_packet() {
            if p.link_type() != LinkType::ETHERNET || p.data().len() < 34 {
                continue;
            }
            for _ in 0..MUTANTS_PER_PACKET {
                let mut bytes = p.data().to_vec();
                let span = bytes.len().min(HEADER_SPAN);
                for _ in 0..1 + rng.below(3) {
                    // Past the MAC addresses: they change nothing either side decodes.
                    let at = 12 + rng.below(span - 12);
                    bytes[at] ^= 1 << rng.below(8) | (rng.below(2) as u8) << 7;
                }
                let len = bytes.len();
                out.push((bytes, len));
            }
            taken += 1;
            if taken == PACKETS_PER_SOURCE {
                break;
            }
        }
    }
    out
}

/// tshark's values for `FIELDS`, the first occurrence of each, per frame.
fn tshark(path: &Path) -> Vec<Vec<String>> {
    let mut cmd = std::process::Command::new("tshark");
    cmd.args(["-n", "-r"]).arg(path);
    cmd.args(["-o", "ip.defragment:FALSE", "-o", "ipv6.defragment:FALSE"]);
    cmd.args(["-o", "tcp.desegment_tcp_streams:FALSE"]);
    cmd.args(["-T", "fields", "-E", "separator=|", "-E", "occurrence=f"]);
    for (_, name) in FIELDS {
        cmd.args(["-e", name]);
    }
    cmd.args(["-e", "ipv6.src", "-e", "ipv6.dst", "-e", "frame.protocols"]);
    let out = cmd.output().expect("tshark runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split('|').map(str::to_string).collect())
        .collect()
}

#[test]
fn damaged_headers_never_decode_to_something_else() {
    let frames = mutants();
    assert!(frames.len() > 3500, "only {} mutants", frames.len());
    if !have("tshark") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mutants.pcap");
    write_pcap(&path, 1, &frames);
    let theirs = tshark(&path);
    assert_eq!(theirs.len(), frames.len());
    let (mut different, mut silent, mut agreed, mut one_sided) = (Vec::new(), Vec::new(), 0, 0);
    for (i, ((f, _), t)) in frames.iter().zip(&theirs).enumerate() {
        let p = Packet::new(
            f,
            Meta::new(Timestamp::ZERO, f.len() as u32, LinkType::ETHERNET),
        );
        let d = Decoded::new(&p);
        let protocols = t.last().cloned().unwrap_or_default();
        for (k, (field, name)) in FIELDS.iter().enumerate() {
            let mut ours = String::new();
            write_field(&mut ours, *field, 1, &p, &d);
            // tshark's ip.src is IPv4 only; tracekit's is the outermost IP header's.
            let mut want = t[k].clone();
            if want.is_empty() && matches!(*name, "ip.src" | "ip.dst") {
                let v6 = if *name == "ip.src" { &t[6] } else { &t[7] };
                if protocols.split(':').find(|p| *p == "ip" || *p == "ipv6") == Some("ipv6") {
                    want = v6.clone();
                }
            }
            let named =
                !d.anomalies().is_empty() || d.inner().is_some_and(|i| !i.anomalies().is_empty());
            if ours == want {
                agreed += 1;
            } else if ours.is_empty() || want.is_empty() {
                one_sided += 1;
                if !named {
                    silent.push(format!(
                        "#{} {name}: tracekit {ours:?} tshark {want:?} ({protocols})",
                        i + 1
                    ));
                }
            } else {
                different.push(format!(
                    "#{} {name}: tracekit {ours:?} tshark {want:?} ({protocols}) {:02x?}",
                    i + 1,
                    &f[..f.len().min(40)]
                ));
            }
        }
    }
    eprintln!(
        "{} mutants: {agreed} values agree, {one_sided} shown by one side only, {} different, {} one-sided without an anomaly",
        frames.len(),
        different.len(),
        silent.len()
    );
    assert!(
        different.is_empty(),
        "{} values differ:\n{}",
        different.len(),
        different[..different.len().min(40)].join("\n")
    );
    assert!(
        silent.is_empty(),
        "{} values shown by one side only, without an anomaly:\n{}",
        silent.len(),
        silent[..silent.len().min(40)].join("\n")
    );
}
