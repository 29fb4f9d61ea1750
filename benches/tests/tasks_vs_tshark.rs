//! The decode tasks' results against tshark over the same files, computed independently
//! from `tshark -T fields` output.

use std::collections::HashMap;
use std::path::Path;

use tracekit_bench::tasks::{t2_tcp, t3_tcpopts, t4_dns, t5_ports};
use tracekit_testdata::{corpus, have};

fn tshark(path: &Path, fields: &[&str]) -> Vec<Vec<String>> {
    let mut args = vec![
        "-n",
        "-o",
        "ip.defragment:FALSE",
        "-o",
        "ipv6.defragment:FALSE",
    ];
    args.extend([
        "-o",
        "tcp.desegment_tcp_streams:FALSE",
        "-T",
        "fields",
        "-E",
        "occurrence=f",
    ]);
    for f in fields {
        args.extend(["-e", f]);
    }
    let out = std::process::Command::new("tshark")
        .args(&args)
        .arg("-r")
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

fn num(s: &str) -> u64 {
    s.parse().unwrap_or(0)
}

fn sample() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/sample.pcap")
}

#[test]
fn t2_and_t3_match_tshark() {
    if !have("tshark") {
        return;
    }
    for path in [
        sample(),
        corpus("libtrace__100_packets.pcap"),
        corpus("zeek__ipv6-http-atomic-frag.pcap"),
    ] {
        let rows = tshark(
            &path,
            &[
                "tcp.srcport",
                "tcp.dstport",
                "tcp.seq_raw",
                "tcp.flags.syn",
                "tcp.len",
                "tcp.options.mss_val",
                "tcp.options.wscale.shift",
                "tcp.options.sack_perm",
                "tcp.options.timestamp.tsval",
            ],
        );
        let tcp: Vec<&Vec<String>> = rows.iter().filter(|r| !r[0].is_empty()).collect();
        let s = t2_tcp(path.to_str().unwrap()).unwrap();
        let name = path.display();
        assert_eq!(s.packets, tcp.len() as u64, "{name}");
        assert_eq!(
            s.ports,
            tcp.iter().map(|r| num(&r[0]) + num(&r[1])).sum::<u64>(),
            "{name}"
        );
        assert_eq!(s.seq, tcp.iter().map(|r| num(&r[2])).sum::<u64>(), "{name}");
        assert_eq!(
            s.syn,
            tcp.iter().filter(|r| r[3] == "1").count() as u64,
            "{name}"
        );
        assert_eq!(
            s.payload,
            tcp.iter().map(|r| num(&r[4])).sum::<u64>(),
            "{name}"
        );
        let c = t3_tcpopts(path.to_str().unwrap()).unwrap();
        assert_eq!(
            c.mss,
            tcp.iter().filter(|r| !r[5].is_empty()).count() as u64,
            "{name}"
        );
        assert_eq!(
            c.mss_sum,
            tcp.iter().map(|r| num(&r[5])).sum::<u64>(),
            "{name}"
        );
        assert_eq!(
            c.wscale,
            tcp.iter().filter(|r| !r[6].is_empty()).count() as u64,
            "{name}"
        );
        assert_eq!(
            c.sack_permitted,
            tcp.iter().filter(|r| !r[7].is_empty()).count() as u64,
            "{name}"
        );
        assert_eq!(
            c.timestamps,
            tcp.iter().filter(|r| !r[8].is_empty()).count() as u64,
            "{name}"
        );
    }
}

#[test]
fn t4_matches_tshark() {
    if !have("tshark") {
        return;
    }
    for path in [
        sample(),
        corpus("pcapparser__wireshark_samples-test.pcapng"),
        corpus("ndpi__1kxun.pcap"),
    ] {
        let rows = tshark(
            &path,
            &[
                "dns.id",
                "dns.flags.response",
                "dns.count.queries",
                "dns.count.answers",
                "udp.port",
                "tcp.port",
            ],
        );
        // tracekit's T4 reads DNS on UDP 53/5353/5355 and TCP 53 (first segment of a message).
        let dns: Vec<&Vec<String>> = rows.iter().filter(|r| !r[0].is_empty()).collect();
        let c = t4_dns(path.to_str().unwrap()).unwrap();
        let name = path.display();
        assert_eq!(c.messages, dns.len() as u64, "{name}");
        assert_eq!(
            c.responses,
            dns.iter().filter(|r| r[1] == "1").count() as u64,
            "{name}"
        );
        assert_eq!(
            c.questions,
            dns.iter().map(|r| num(&r[2])).sum::<u64>(),
            "{name}"
        );
        assert_eq!(
            c.answers,
            dns.iter().map(|r| num(&r[3])).sum::<u64>(),
            "{name}"
        );
    }
}

#[test]
fn t5_ports_match_an_independent_count() {
    if !have("tshark") {
        return;
    }
    for path in [
        sample(),
        corpus("libtrace__vlan.pcap"),
        corpus("zeek__ipv6-http-atomic-frag.pcap"),
        corpus("ndpi__1kxun.pcap"),
    ] {
        let rows = tshark(
            &path,
            &[
                "ip.proto",
                "ipv6.nxt",
                "tcp.srcport",
                "tcp.dstport",
                "tcp.len",
                "udp.srcport",
                "udp.dstport",
                "udp.length",
            ],
        );
        let mut want: HashMap<(u8, bool, u16), (u64, u64)> = HashMap::new();
        for r in &rows {
            let (proto, sp, dp, bytes) = if !r[2].is_empty() {
                (6, num(&r[2]), num(&r[3]), num(&r[4]))
            } else if !r[5].is_empty() {
                (17, num(&r[5]), num(&r[6]), num(&r[7]).saturating_sub(8))
            } else {
                continue;
            };
            for (dst, port) in [(false, sp), (true, dp)] {
                let e = want.entry((proto, dst, port as u16)).or_default();
                e.0 += 1;
                e.1 += bytes;
            }
        }
        let c = t5_ports(path.to_str().unwrap()).unwrap();
        let name = path.display();
        for ((proto, dst, port), v) in &want {
            assert_eq!(
                c.get(*proto, *dst, *port),
                *v,
                "{name}: proto {proto} dst {dst} port {port}"
            );
        }
        let counted: u64 = want.iter().filter(|(k, _)| !k.1).map(|(_, v)| v.0).sum();
        assert_eq!(c.packets(), counted, "{name}");
    }
}
