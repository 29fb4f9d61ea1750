//! The VM against tcpdump (libpcap), packet for packet: for every expression and every
//! classic pcap file of the corpus (every link type there), the packets tracekit's filter
//! accepts are exactly those `tcpdump -r FILE -w OUT EXPR` writes (same time stamps and
//! bytes, in order). Where libpcap cannot compile an expression for a link type, both
//! refuse it.
#![cfg(feature = "libpcap")]

use std::path::Path;
use std::process::Command;

use tracekit_filter::Filter;
use tracekit_pcap::{FileHeader, PcapReader};
use tracekit_testdata::{corpus_dir, have};

const EXPRESSIONS: &[&str] = &[
    "ip",
    "ip6",
    "arp",
    "tcp",
    "udp",
    "icmp",
    "icmp6",
    "sctp",
    "tcp port 80",
    "udp port 53",
    "port 53",
    "tcp src port 443",
    "tcp dst port 22",
    "port 80 or port 443",
    "host 192.168.1.1",
    "src host 10.0.0.1",
    "dst host 8.8.8.8",
    "net 10.0.0.0/8",
    "net 192.168.0.0/16",
    "dst net 172.16.0.0/12",
    "src net 131.151.0.0/16",
    "portrange 1-1023",
    "tcp portrange 1024-65535",
    "udp portrange 5000-6000",
    "vlan",
    "vlan 100",
    "vlan and ip",
    "vlan and tcp",
    "vlan and vlan",
    "mpls",
    "mpls and ip",
    "pppoes",
    "pppoes and ip",
    "ip6 and tcp",
    "ip6 proto 17",
    "ip6 protochain 6",
    "ip6 protochain 17",
    "ip6[6] == 0",
    "ip6[6] == 44",
    "ip6[6] == 43",
    "ip6[6] == 60",
    "tcp[tcpflags] & tcp-syn != 0",
    "tcp[tcpflags] & (tcp-syn|tcp-ack) == tcp-syn",
    "tcp[tcpflags] & tcp-fin != 0",
    "tcp[tcpflags] & tcp-rst != 0",
    "tcp[13] == 0x18",
    "ip[6:2] & 0x1fff != 0",
    "ip[6] & 0x20 != 0",
    "ip[8] < 64",
    "ip[2:2] > 1000",
    "ip[0] & 0xf > 5",
    "len > 100",
    "len <= 64",
    "greater 500",
    "less 100",
    "len > 1000 and tcp",
    "icmp[icmptype] == icmp-echo",
    "icmp[icmptype] == icmp-echoreply",
    "icmp and icmp[icmptype] != icmp-echo",
    "ether host ff:ff:ff:ff:ff:ff",
    "ether broadcast",
    "ether multicast",
    "ether proto 0x888e",
    "ether[0] & 1 = 1",
    "not tcp",
    "not ip",
    "tcp and not port 80",
    "(tcp or udp) and not (port 53 or port 80)",
    "udp and (port 53 or port 5353)",
    "ip and not net 10.0.0.0/8",
    "ip multicast",
    "ip6 multicast",
    "ip proto 47",
    "ip proto 4",
    "ip proto 41",
    "udp port 4789",
    "udp port 6081",
    "udp port 2152",
    "udp port 3544",
    "tcp[2:2] = 80 or tcp[0:2] = 80",
    "udp[4:2] - 8 > 100",
    "(ip[2:2] - ((ip[0]&0xf)<<2)) - ((tcp[12]&0xf0)>>2) > 0",
];

fn pcap_files() -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            let head = std::fs::read(p).unwrap_or_default();
            // whole, undamaged classic pcap files (the modified format: tcpdump rewrites it)
            !name.starts_with("corrupt__")
                && !name.starts_with("ndpi__fuzz")
                && head.len() >= 24
                && FileHeader::is_pcap(&head)
                && !FileHeader::parse(&head).unwrap().modified
        })
        .collect();
    files.sort();
    files
}

/// (ts ns, bytes) of every packet of a pcap that passes `filter` (all if `None`).
fn packets(
    path: &Path,
    mut filter: Option<&mut Filter>,
) -> Result<Vec<(u64, Vec<u8>)>, tracekit_core::Error> {
    let mut r = PcapReader::open(path)?;
    let mut out = Vec::new();
    while let Some(p) = r.next_packet()? {
        let keep = match filter.as_deref_mut() {
            Some(f) => f.matches(&p)?,
            None => true,
        };
        if keep {
            out.push((p.ts().as_unix_nanos(), p.data().to_vec()));
        }
    }
    Ok(out)
}

#[test]
fn tracekit_accepts_exactly_what_tcpdump_accepts() {
    if !have("tcpdump") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("tracekit-filter-diff-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files = pcap_files();
    assert!(files.len() >= 50, "{}", files.len());
    assert!(EXPRESSIONS.len() >= 60);
    let (mut compared, mut matched_any) = (0, 0);
    for file in &files {
        let name = file.file_name().unwrap().to_str().unwrap();
        for (i, expr) in EXPRESSIONS.iter().enumerate() {
            let out = dir.join(format!("{i}.pcap"));
            let status = Command::new("tcpdump")
                .args(["-n", "-r"])
                .arg(file)
                .arg("-w")
                .arg(&out)
                .arg(expr)
                .output()
                .unwrap();
            let mut filter = Filter::new(expr, 262_144).unwrap();
            let ours = packets(file, Some(&mut filter));
            if !status.status.success() {
                // libpcap could not compile it for this link type: neither can we.
                assert!(
                    ours.is_err(),
                    "{name} `{expr}`: tcpdump refused, tracekit accepted"
                );
                continue;
            }
            let ours = ours.unwrap_or_else(|e| panic!("{name} `{expr}`: {e}"));
            let theirs = packets(&out, None).unwrap();
            assert_eq!(ours.len(), theirs.len(), "{name} `{expr}`: count");
            assert!(ours == theirs, "{name} `{expr}`: different packets");
            compared += 1;
            if !ours.is_empty() {
                matched_any += 1;
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(compared > 3000, "{compared} comparisons");
    assert!(
        matched_any > 600,
        "only {matched_any} comparisons matched any packet"
    );
    eprintln!("{compared} file/expression pairs compared, {matched_any} with matches");
}
