//! IP reassembly against tshark's own (`ip.defragment`/`ipv6.defragment` on): on the
//! corpus's fragment traces, the frames that complete a datagram and the datagrams'
//! lengths (`ip.reassembled.length`, `ipv6.reassembled.length`) are equal, and the
//! reassembled packets decode to the transport tshark finds.

use tracekit_decode::Decoded;
use tracekit_flow::{DefragConfig, Defragged, Defragmenter};
use tracekit_testdata::{corpus, corpus_uri, have, tshark_fields};

const FILES: &[&str] = &[
    "zeek__ipv4__fragmented-1.pcap",
    "zeek__ipv4__fragmented-3.pcap",
    "zeek__ipv6-fragmented-dns.pcap",
    "zeek__ipv6-http-atomic-frag.pcap",
    "zeek__dns-edns-ecs.pcap",
    "libtrace__vlan.pcap",
    "libtrace__fragtest.erf.gz",
];

/// tshark's (frame number, reassembled length, transport protocol name).
fn tshark_reassembled(name: &str) -> Vec<(u64, usize, String)> {
    let out = std::process::Command::new("tshark")
        .args([
            "-n",
            "-o",
            "ip.defragment:TRUE",
            "-o",
            "ipv6.defragment:TRUE",
            "-r",
        ])
        .arg(corpus(name))
        .args(["-T", "fields", "-E", "separator=|"])
        .args(["-e", "frame.number", "-e", "ip.reassembled.length"])
        .args(["-e", "ipv6.reassembled.length", "-e", "frame.protocols"])
        .output()
        .expect("tshark runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let c: Vec<&str> = l.split('|').collect();
            let len = if c[1].is_empty() { c[2] } else { c[1] };
            // Inner layers repeat the field: the outer datagram is the first value.
            let len = len.split(',').next()?.parse().ok()?;
            let proto = if c[3].contains(":udp") {
                "udp"
            } else if c[3].contains(":tcp") {
                "tcp"
            } else if c[3].contains(":icmp") {
                "icmp"
            } else {
                "other"
            };
            Some((c[0].parse().unwrap(), len, proto.to_string()))
        })
        .collect()
}

#[test]
fn reassembly_equals_tshark_on_the_fragment_traces() {
    if !have("tshark") {
        return;
    }
    // tshark's own field helper must see these files (a sanity check of the oracle).
    assert!(!tshark_fields(&corpus(FILES[0]), &["frame.number"]).is_empty());
    let mut total = 0;
    for name in FILES {
        let theirs = tshark_reassembled(name);
        let mut ours = Vec::new();
        let mut source = tracekit::open(&corpus_uri(name)).unwrap();
        let mut defrag = Defragmenter::new(DefragConfig::default());
        let mut number = 0u64;
        while let Some(p) = source.next_packet().unwrap() {
            number += 1;
            if let Defragged::Complete(whole) = defrag.add(&p) {
                let d = Decoded::new(&whole);
                assert!(d.fragment().is_none(), "{name} #{number}: still a fragment");
                let proto = if d.udp().is_some() {
                    "udp"
                } else if d.tcp().is_some() {
                    "tcp"
                } else if d.icmp().is_some() || d.icmpv6().is_some() {
                    "icmp"
                } else {
                    "other"
                };
                ours.push((number, defrag.last_datagram_len(), proto.to_string()));
            }
        }
        assert_eq!(ours, theirs, "{name}: (frame, length, transport)");
        total += ours.len();
    }
    assert!(total >= 15, "only {total} datagrams reassembled");
}
