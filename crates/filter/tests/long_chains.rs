//! Long filter expressions (address and port lists of hundreds or a thousand terms),
//! which tracekit compiles in pieces: on a file of packets made to hit and miss the
//! lists, tracekit keeps exactly the packets `tcpdump -O -r FILE -w OUT -F EXPR` keeps.
//! (`-O` turns libpcap's optimiser off, which compiles a thousand terms in seconds
//! rather than minutes and must not change a verdict.)
#![cfg(feature = "libpcap")]

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use tracekit_core::LinkType;
use tracekit_filter::Filter;
use tracekit_pcap::PcapReader;
use tracekit_testdata::builder::{Ethernet, Ipv4, Ipv6, PacketBuilder, Tcp, Udp};
use tracekit_testdata::have;

/// A little-endian microsecond pcap file of Ethernet frames.
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

/// 10.0.x/256.x%256
fn v4(x: u32) -> [u8; 4] {
    [10, 0, (x / 256) as u8, (x % 256) as u8]
}

/// Frames whose addresses and ports run over 0..1500 (lists below cover parts of that
/// range): TCP, UDP, ARP (which `host` matches too) and IPv6.
fn frames() -> Vec<Vec<u8>> {
    let mut state = 0x2545_f491u32;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state
    };
    let eth = Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
    let mut out = Vec::new();
    for i in 0..3000 {
        let (a, b) = (next() % 1500, next() % 1500);
        let (sp, dp) = ((next() % 1500) as u16, (next() % 1500) as u16);
        let mut p = PacketBuilder::new();
        p.ethernet(eth);
        match i % 7 {
            0 => {
                // ARP request: sender a, target b
                let mut arp = vec![0, 1, 8, 0, 6, 4, 0, 1, 2, 0, 0, 0, 0, 1];
                arp.extend_from_slice(&v4(a));
                arp.extend_from_slice(&[0; 6]);
                arp.extend_from_slice(&v4(b));
                let mut f = PacketBuilder::new().ethernet(eth.ethertype(0x0806)).build();
                f.extend_from_slice(&arp);
                out.push(f);
                continue;
            }
            1 => {
                let mut s = [0u8; 16];
                s[0] = 0x20;
                s[15] = a as u8;
                p.ipv6(Ipv6::new(s, s)).udp(Udp::new(sp, dp));
            }
            2 | 3 => {
                p.ipv4(Ipv4::new(v4(a), v4(b))).udp(Udp::new(sp, dp));
            }
            _ => {
                p.ipv4(Ipv4::new(v4(a), v4(b))).tcp(Tcp::new(sp, dp));
            }
        }
        out.push(p.pad_to(60).build());
    }
    out
}

/// (time stamp, bytes) of the packets of `path` that `filter` keeps (all with `None`).
fn kept(path: &Path, mut filter: Option<&mut Filter>) -> Vec<(u64, Vec<u8>)> {
    let mut r = PcapReader::open(path).unwrap();
    let mut out = Vec::new();
    while let Some(p) = r.next_packet().unwrap() {
        if filter.as_deref_mut().is_none_or(|f| f.matches(&p).unwrap()) {
            out.push((p.ts().as_unix_nanos(), p.data().to_vec()));
        }
    }
    out
}

fn compare_with_tcpdump(
    dir: &Path,
    file: &Path,
    name: &str,
    terms: &[String],
    join: &str,
) -> usize {
    let expr = &terms.join(join);
    let expr_file = dir.join(format!("{name}.expr"));
    std::fs::write(&expr_file, expr).unwrap();
    let out = dir.join(format!("{name}.pcap"));
    let started = Instant::now();
    let mut filter = Filter::new(expr, 262_144).unwrap_or_else(|e| panic!("{name}: {e}"));
    let insns = filter
        .program_for(LinkType::ETHERNET)
        .unwrap()
        .insns()
        .len();
    let ours = kept(file, Some(&mut filter));
    let ours_took = started.elapsed();
    let started = Instant::now();
    let status = Command::new("tcpdump")
        .args(["-O", "-n", "-r"])
        .arg(file)
        .arg("-w")
        .arg(&out)
        .arg("-F")
        .arg(&expr_file)
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{name}: tcpdump: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    let theirs = kept(&out, None);
    // Timings are reported, never asserted.
    eprintln!(
        "{name}: {} terms, {insns} instructions, {} of {} packets kept; tracekit {ours_took:.2?}, tcpdump -O {:.2?}",
        terms.len(),
        ours.len(),
        kept(file, None).len(),
        started.elapsed()
    );
    assert_eq!(ours.len(), theirs.len(), "{name}: count");
    assert!(ours == theirs, "{name}: different packets");
    ours.len()
}

#[test]
fn long_lists_keep_what_tcpdump_keeps() {
    if !have("tcpdump") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lists.pcap");
    let frames = frames();
    write_pcap(&file, &frames);

    // The issue's case: a thousand hosts.
    let hosts: Vec<String> = (1..=1000).map(|x| format!("host {}", ip(x))).collect();
    let n = compare_with_tcpdump(dir.path(), &file, "hosts", &hosts, " or ");
    assert!(
        n > 1000 && n < 2900,
        "{n}: the list should keep some and drop some"
    );

    // An exclusion list: `and` of negations, hosts and ports mixed.
    let excluded: Vec<String> = (0..400)
        .map(|x| {
            if x % 2 == 0 {
                format!("not host {}", ip(x * 3))
            } else {
                format!("not port {}", x * 3)
            }
        })
        .collect();
    let n = compare_with_tcpdump(dir.path(), &file, "exclusions", &excluded, " and ");
    assert!(n > 100 && n < 2900, "{n}");

    // Bare values that inherit the qualifiers before them (`src host a or b or …`), kept
    // in the piece of the term they follow, and parenthesised terms.
    let mut terms = Vec::new();
    for x in 0..300 {
        terms.push(match x % 25 {
            0 => format!("(udp and dst port {x})"),
            1 => format!("tcp port {x}"),
            2 => format!("src host {}", ip(x)),
            _ => ip(x),
        });
    }
    let n = compare_with_tcpdump(dir.path(), &file, "inherited", &terms, " or ");
    assert!(n > 100 && n < 2900, "{n}");

    // `src or dst host a`: an `or` inside a qualifier, not between terms.
    let either: Vec<String> = (0..200)
        .map(|x| format!("src or dst host {}", ip(x * 5)))
        .collect();
    let n = compare_with_tcpdump(dir.path(), &file, "either", &either, " or ");
    assert!(n > 100 && n < 2900, "{n}");

    // A piece that libpcap refuses alone (it rejects every packet) sends the whole
    // expression to libpcap, which accepts it.
    let mut hosts: Vec<String> = (1..=32).map(|x| format!("host {}", ip(x))).collect();
    hosts.push("(ip and not ip)".into());
    let n = compare_with_tcpdump(dir.path(), &file, "refused-piece", &hosts, " or ");
    assert!(n > 0, "{n}");
}

fn ip(x: u32) -> String {
    let [a, b, c, d] = v4(x);
    format!("{a}.{b}.{c}.{d}")
}

#[test]
fn a_mistake_in_a_long_list_is_still_refused() {
    let mut terms: Vec<String> = (1..=100).map(|x| format!("host {}", ip(x))).collect();
    terms.push("port 99999".into());
    assert!(Filter::new(&terms.join(" or "), 262_144).is_err());
    terms.pop();
    terms.push("port 1 2".into());
    assert!(Filter::new(&terms.join(" or "), 262_144).is_err());
}
