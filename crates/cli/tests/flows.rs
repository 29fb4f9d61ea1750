//! `tracekit flows` against tshark's conversation tables (`-z conv,tcp`, `-z conv,udp`)
//! on every corpus file tshark reads: per conversation, frames each way and bytes equal.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use tracekit_testdata::{corpus, have, manifest};

fn tracekit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tracekit"))
}

/// An unordered conversation: protocol and the two endpoints as text, smaller first.
type Pair = (String, String, String);

/// (frames A->B, frames B->A, bytes in total, packets whose transport header the
/// capture cut) with A the pair's first endpoint.
type Counts = (u64, u64, u64, u64);

fn pair(proto: &str, a: String, b: String) -> (Pair, bool) {
    if a <= b {
        ((proto.to_string(), a, b), false)
    } else {
        ((proto.to_string(), b, a), true)
    }
}

/// tshark's `-z conv` bytes cell: exact below 10 kB, else a rounded count of kB/MB/GB.
#[derive(Debug, Clone, Copy)]
struct Bytes {
    value: u64,
    unit: u64,
}

impl Bytes {
    fn matches(&self, ours: u64) -> bool {
        if self.unit == 1 {
            return ours == self.value;
        }
        // Wireshark prints an integer number of units: accept either rounding.
        let lo = self.value.saturating_sub(1) * self.unit;
        let hi = (self.value + 1) * self.unit;
        lo <= ours && ours <= hi
    }
}

fn unit(u: &str) -> u64 {
    match u {
        "bytes" => 1,
        "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        other => panic!("unknown unit {other}"),
    }
}

/// Normalises an endpoint `addr:port` (IPv6 addresses as tshark prints them).
fn endpoint(text: &str) -> String {
    let (addr, port) = text.rsplit_once(':').expect("addr:port");
    let addr: std::net::IpAddr = addr.parse().expect("address");
    format!("{addr}|{port}")
}

/// tshark's (frames A->B, frames B->A, bytes in total).
type TsharkCounts = (u64, u64, Bytes);

/// tshark's conversations, or `None` if tshark cannot read the file.
fn tshark_conversations(path: &Path, defrag: bool) -> Option<BTreeMap<Pair, Vec<TsharkCounts>>> {
    let on = if defrag { "TRUE" } else { "FALSE" };
    let out = Command::new("tshark")
        .args(["-n", "-q", "-o", &format!("ip.defragment:{on}"), "-o"])
        .arg(format!("ipv6.defragment:{on}"))
        .arg("-r")
        .arg(path)
        .args(["-z", "conv,tcp", "-z", "conv,udp"])
        .output()
        .expect("tshark runs");
    let text = String::from_utf8_lossy(&out.stdout);
    if !text.contains("Conversations") {
        return None;
    }
    let mut convs: BTreeMap<Pair, Vec<TsharkCounts>> = BTreeMap::new();
    let mut proto = "";
    for line in text.lines() {
        if line.starts_with("TCP Conversations") {
            proto = "tcp";
        } else if line.starts_with("UDP Conversations") {
            proto = "udp";
        }
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() < 13 || cols[1] != "<->" {
            continue;
        }
        // A <-> B | frames B->A, bytes | frames A->B, bytes | total frames, bytes | ...
        let (a, b) = (endpoint(cols[0]), endpoint(cols[2]));
        let ba: u64 = cols[3].parse().unwrap();
        let ab: u64 = cols[6].parse().unwrap();
        let total = Bytes {
            value: cols[10].parse().unwrap(),
            unit: unit(cols[11]),
        };
        let (key, swapped) = pair(proto, a, b);
        let frames = if swapped { (ba, ab) } else { (ab, ba) };
        convs
            .entry(key)
            .or_default()
            .push((frames.0, frames.1, total));
    }
    Some(convs)
}

fn our_conversations(path: &Path, extra: &[&str]) -> BTreeMap<Pair, Vec<Counts>> {
    let out = tracekit()
        .args(["flows", "--json", "--timeout-idle", "0"])
        .args(extra)
        .arg(path)
        .output()
        .unwrap();
    let mut convs: BTreeMap<Pair, Vec<Counts>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("one JSON object a line");
        let proto = v["proto"].as_str().unwrap();
        if proto != "tcp" && proto != "udp" {
            continue;
        }
        let n = |f: &str| v[f].as_u64().unwrap();
        // Non-first fragments alone: tshark (defragmentation off) puts them in no
        // conversation.
        // A flow of packets whose TCP header was cut: tshark has none.
        if n("fragments") == n("packets") || n("truncated") == n("packets") {
            continue;
        }
        let src = format!("{}|{}", v["src_addr"].as_str().unwrap(), n("src_port"));
        let dst = format!("{}|{}", v["dst_addr"].as_str().unwrap(), n("dst_port"));
        let (key, swapped) = pair(proto, src, dst);
        let frames = if swapped {
            (n("packets_ba"), n("packets_ab"))
        } else {
            (n("packets_ab"), n("packets_ba"))
        };
        convs
            .entry(key)
            .or_default()
            .push((frames.0, frames.1, n("bytes"), n("truncated")));
    }
    convs
}

#[test]
fn flows_equal_tshark_conversations_on_every_corpus_file() {
    if !have("tshark") {
        return;
    }
    let mut compared = 0;
    let mut conversations = 0;
    let mut problems = Vec::new();
    for entry in manifest() {
        let path = corpus(&entry.file);
        let Some(theirs) = tshark_conversations(&path, false) else {
            continue;
        };
        let ours = our_conversations(&path, &[]);
        compared += 1;
        let keys: std::collections::BTreeSet<&Pair> = theirs.keys().chain(ours.keys()).collect();
        for k in keys {
            let mut t = theirs.get(k).cloned().unwrap_or_default();
            let mut o = ours.get(k).cloned().unwrap_or_default();
            t.sort_by_key(|c| (c.0, c.1));
            o.sort();
            conversations += t.len();
            // tshark leaves out packets whose TCP header (options included) the capture
            // cut; we count them (their ports were captured) and say how many.
            let same = t.len() == o.len()
                && t.iter().zip(&o).all(|(t, o)| {
                    if o.3 == 0 {
                        (t.0, t.1) == (o.0, o.1) && t.2.matches(o.2)
                    } else {
                        t.0 <= o.0 && t.1 <= o.1 && t.0 + t.1 + o.3 == o.0 + o.1
                    }
                });
            if !same {
                problems.push(format!("{}: {k:?}: tshark {t:?}, ours {o:?}", entry.file));
            }
        }
    }
    assert!(
        compared > 60,
        "only {compared} corpus files compared with tshark"
    );
    assert!(conversations > 500, "only {conversations} conversations");
    assert!(
        problems.is_empty(),
        "{} differences:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// With `--reassemble`, each datagram counts once, in its ports' conversation, as in
/// tshark's with defragmentation on (frames equal; bytes differ by design: tshark counts
/// the completing fragment's frame length, we the whole datagram's).
#[test]
fn reassembled_flows_count_datagrams_as_tshark_does() {
    if !have("tshark") {
        return;
    }
    let mut datagrams = 0;
    for name in [
        "zeek__dns-edns-ecs.pcap",
        "zeek__ipv6-fragmented-dns.pcap",
        "zeek__ipv4__fragmented-1.pcap",
        "libtrace__vlan.pcap",
    ] {
        let path = corpus(name);
        let theirs = tshark_conversations(&path, true).expect("tshark reads it");
        let ours = our_conversations(&path, &["--reassemble"]);
        let t: BTreeMap<Pair, Vec<(u64, u64)>> = theirs
            .iter()
            .map(|(k, v)| (k.clone(), v.iter().map(|c| (c.0, c.1)).collect()))
            .collect();
        let o: BTreeMap<Pair, Vec<(u64, u64)>> = ours
            .iter()
            .map(|(k, v)| (k.clone(), v.iter().map(|c| (c.0, c.1)).collect()))
            .collect();
        assert_eq!(o, t, "{name}");
        datagrams += o.len();
    }
    assert!(datagrams > 20, "only {datagrams} conversations");
}

/// tshark's failed connection attempts per source: for every TCP stream whose first
/// SYN (without ACK) it saw, the stream's conversation completeness (two passes) says
/// whether the SYN-ACK and then the originator's ACK or data followed.
fn tshark_failed_attempts(path: &Path) -> BTreeMap<String, std::collections::BTreeSet<String>> {
    let out = Command::new("tshark")
        .args(["-2", "-n", "-r"])
        .arg(path)
        .args(["-Y", "tcp.flags.syn==1 && tcp.flags.ack==0"])
        .args(["-T", "fields", "-E", "separator=|"])
        .args([
            "-e",
            "tcp.stream",
            "-e",
            "ip.src",
            "-e",
            "ipv6.src",
            "-e",
            "ip.dst",
        ])
        .args([
            "-e",
            "ipv6.dst",
            "-e",
            "tcp.dstport",
            "-e",
            "tcp.completeness",
        ])
        .args([
            "-e",
            "tcp.urgent_pointer",
            "-e",
            "icmp.type",
            "-e",
            "icmpv6.type",
        ])
        .output()
        .expect("tshark runs");
    let mut seen = std::collections::BTreeSet::new();
    let mut failed: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let c: Vec<&str> = line.split('|').collect();
        // The innermost layer's values (tunnels list the outer first).
        let last = |s: &str| s.rsplit(',').next().unwrap_or("").to_string();
        let stream = last(c[0]);
        // A SYN whose TCP header the capture cut (tshark shows the flags it got) is not
        // an attempt for us: we read TCP flags only from a whole fixed header.
        // Nor is a SYN quoted in an ICMP error.
        let quoted = !c[8].is_empty() || !c[9].is_empty();
        if stream.is_empty() || last(c[7]).is_empty() || quoted || !seen.insert(stream) {
            continue;
        }
        let src = if c[1].is_empty() {
            last(c[2])
        } else {
            last(c[1])
        };
        let dst = if c[3].is_empty() {
            last(c[4])
        } else {
            last(c[3])
        };
        let completeness: u8 = last(c[6]).parse().unwrap_or(0);
        // SYN-ACK, then an ACK or data. (Not tshark's SYN bit: when the SYN-ACK comes
        // first in the file, tshark leaves it unset, though the SYN is there.)
        let completed = completeness & 2 != 0 && completeness & 12 != 0;
        if !completed {
            failed
                .entry(src)
                .or_default()
                .insert(format!("{dst}|{}", last(c[5])));
        }
    }
    failed
}

#[test]
fn scans_count_the_failed_attempts_tshark_finds_on_every_corpus_file() {
    if !have("tshark") {
        return;
    }
    let (mut files, mut sources) = (0, 0);
    let mut problems = Vec::new();
    for entry in manifest() {
        // Damaged files: tshark and we stop at different points of some of them (the
        // conversation test above covers them); files tshark cannot read are skipped.
        let path = corpus(&entry.file);
        if entry.file.starts_with("corrupt__") || tshark_conversations(&path, false).is_none() {
            continue;
        }
        let theirs: BTreeMap<String, usize> = tshark_failed_attempts(&path)
            .into_iter()
            .map(|(s, d)| (s, d.len()))
            .collect();
        let out = tracekit()
            .args(["scans", "--json", "--threshold", "0"])
            .arg(&path)
            .output()
            .unwrap();
        let ours: BTreeMap<String, usize> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                let n = v["destinations"].as_u64().unwrap() as usize;
                (v["source"].as_str().unwrap().to_string(), n)
            })
            .collect();
        if ours != theirs {
            let keys: std::collections::BTreeSet<&String> =
                ours.keys().chain(theirs.keys()).collect();
            for k in keys {
                if ours.get(k) != theirs.get(k) {
                    problems.push(format!(
                        "{}: {k}: tshark {:?}, ours {:?}",
                        entry.file,
                        theirs.get(k),
                        ours.get(k)
                    ));
                }
            }
        }
        files += 1;
        sources += ours.len();
    }
    assert!(files > 60, "only {files} files");
    assert!(sources > 10, "only {sources} scanning sources");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `--threads N` spreads packets by address pair: the records are those of one thread
/// (in another order), with and without reassembly, damaged input included.
#[test]
fn flows_on_several_threads_equal_one_thread() {
    for name in [
        "ndpi__1kxun.pcap",
        "libtrace__fragtest.erf.gz",
        "zeek__dns-edns-ecs.pcap",
        "corrupt__vlan_truncated_midrecord.pcap",
    ] {
        for reassemble in [false, true] {
            let run = |threads: &str| {
                let mut cmd = tracekit();
                cmd.args(["flows", "--json", "--threads", threads]);
                if reassemble {
                    cmd.arg("--reassemble");
                }
                let out = cmd.arg(corpus(name)).output().unwrap();
                let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .map(str::to_string)
                    .collect();
                lines.sort();
                (out.status.code(), lines)
            };
            let one = run("1");
            assert!(!one.1.is_empty(), "{name}: no flows");
            for threads in ["2", "3"] {
                assert_eq!(
                    run(threads),
                    one,
                    "{name}, {threads} threads, reassemble {reassemble}"
                );
            }
        }
    }
}

/// `--format csv|tsv` carries the JSON records' values under a header of the JSON names.
#[test]
fn csv_and_tsv_carry_the_json_values() {
    let path = corpus("zeek__tunnels__vxlan-encapsulated-http.pcap");
    let json = tracekit()
        .args(["flows", "--json"])
        .arg(&path)
        .output()
        .unwrap();
    let records: Vec<serde_json::Value> = String::from_utf8_lossy(&json.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 2);
    for (format, sep) in [("csv", ','), ("tsv", '\t')] {
        let out = tracekit()
            .args(["flows", "--format", format])
            .arg(&path)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(sep).collect();
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split(sep).collect()).collect();
        assert_eq!(rows.len(), records.len());
        for (row, record) in rows.iter().zip(&records) {
            for (name, value) in header.iter().zip(row) {
                let want = match &record[*name] {
                    serde_json::Value::String(s) => s.clone(),
                    serde_json::Value::Null => String::new(),
                    v => v.to_string(),
                };
                assert_eq!(*value, want, "{format}: {name}");
            }
        }
    }
    // The TCP flow inside the VXLAN tunnel: a whole connection, as Zeek writes it.
    let tcp = records.iter().find(|r| r["proto"] == "tcp").unwrap();
    assert_eq!(tcp["state"], "SF");
    assert_eq!(tcp["history"], "ShADadFf");
    assert_eq!(tcp["src_port"], 40354);
}
