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
/// The packets each way of one conversation, as tshark's and ours count them.
trait PacketCounts {
    fn packets(&self) -> (u64, u64);
}

impl PacketCounts for Counts {
    fn packets(&self) -> (u64, u64) {
        (self.0, self.1)
    }
}

impl PacketCounts for TsharkCounts {
    fn packets(&self) -> (u64, u64) {
        (self.0, self.1)
    }
}

/// Each conversation's packet counts each way (the first two counts of tshark's or ours).
fn packet_counts<C: PacketCounts>(
    convs: &BTreeMap<Pair, Vec<C>>,
) -> BTreeMap<Pair, Vec<(u64, u64)>> {
    convs
        .iter()
        .map(|(k, v)| (k.clone(), v.iter().map(C::packets).collect()))
        .collect()
}

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
        let (t, o) = (packet_counts(&theirs), packet_counts(&ours));
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
fn scans_count_the_failed_attempts_tshark_finds_on_every_corpus_file_on_one_and_three_threads() {
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
        // Spread over 3 workers (flows by address pair): the same bytes.
        let spread = tracekit()
            .args(["scans", "--json", "--threshold", "0", "--threads", "3"])
            .arg(&path)
            .output()
            .unwrap();
        if (spread.status.code(), &spread.stdout) != (out.status.code(), &out.stdout) {
            problems.push(format!(
                "{}: --threads 3 differs from one thread",
                entry.file
            ));
        }
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

/// `tracekit flows --json` on `threads` threads (and `extra` options), its exit code and
/// its records sorted.
fn sorted_flows(path: &Path, threads: &str, extra: &[&str]) -> (Option<i32>, Vec<String>) {
    sorted_flows_of(&[path], threads, extra)
}

/// [`sorted_flows`] over several files, read one after the other.
fn sorted_flows_of(files: &[&Path], threads: &str, extra: &[&str]) -> (Option<i32>, Vec<String>) {
    let out = tracekit()
        .args(["flows", "--json", "--threads", threads])
        .args(extra)
        .args(files)
        .output()
        .unwrap();
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    (out.status.code(), lines)
}

/// `--threads N` gives the records of one thread on every corpus file (damaged ones
/// included), with and without reassembly: the pcapng files whose simple packet blocks
/// have no time stamps among packets that have one need the stream's clock passed to
/// the workers.
#[test]
fn flows_on_several_threads_equal_one_thread_on_every_corpus_file() {
    let mut problems = Vec::new();
    let mut files = 0;
    for entry in manifest() {
        let path = corpus(&entry.file);
        for extra in [&[][..], &["--reassemble"]] {
            let one = sorted_flows(&path, "1", extra);
            if sorted_flows(&path, "3", extra) != one {
                problems.push(format!("{} {extra:?}", entry.file));
            }
        }
        files += 1;
    }
    assert!(files > 100, "only {files} files");
    assert!(
        problems.is_empty(),
        "3 threads differ from one on: {problems:?}"
    );
}

/// Two things a worker of `--threads N` cannot see from its own packets, on a built
/// trace: a flow inside tunnels whose packets come through twelve different outer
/// address pairs (each pair's packets may go to another worker), and packets stamped
/// earlier than the one before (the stream's clock then times a flow out, as on one
/// thread, though the later packet went to another worker). Every thread count gives
/// the records of one thread: the tunnelled flow is one record of 12 packets, and each
/// flow of the out-of-order part two records.
#[test]
fn flows_inside_tunnels_and_out_of_order_time_stamps_equal_one_thread() {
    use tracekit_testdata::builder::{Ethernet, Ipv4, Ipv6, PacketBuilder, Udp};
    let eth = || Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
    let v4udp = |src: [u8; 4], dst: [u8; 4]| {
        PacketBuilder::new()
            .ethernet(eth())
            .ipv4(Ipv4::new(src, dst))
            .udp(Udp::new(1000, 2000))
            .payload(b"ping")
            .build()
    };
    let (mut frames, mut ts) = (Vec::new(), Vec::new());
    let t0 = 1_700_000_000u32;
    // Out of order: eight flows at t0, one far later, then the eight again at t0 + 1.
    for k in 1..=8u8 {
        frames.push(v4udp([10, 0, 1, k], [10, 0, 2, k]));
        ts.push(t0);
    }
    frames.push(v4udp([10, 0, 3, 1], [10, 0, 4, 1]));
    ts.push(t0 + 1000);
    for k in 1..=8u8 {
        frames.push(v4udp([10, 0, 1, k], [10, 0, 2, k]));
        ts.push(t0 + 1);
    }
    // One IPv6 flow in IPv4 (6in4) through twelve outer address pairs.
    let inner = PacketBuilder::new()
        .ipv6(Ipv6::between("2001:db8::1", "2001:db8::2"))
        .udp(Udp::new(6000, 7000))
        .payload(b"inside")
        .build();
    for k in 1..=12u8 {
        frames.push(
            PacketBuilder::new()
                .ethernet(eth())
                .ipv4(Ipv4::new([192, 0, 2, 1], [198, 51, 100, k]).protocol(41))
                .payload(&inner)
                .build(),
        );
        ts.push(t0 + 2000 + u32::from(k));
    }
    // One IPv4 flow in GRE through twelve more outer pairs: through each, once in an
    // outer packet cut in two fragments (the first shows the flow's headers), once
    // whole.
    for k in 1..=12u8 {
        for size in [1500, 20] {
            let mut gre = vec![0, 0, 0x08, 0x00];
            gre.extend_from_slice(
                &PacketBuilder::new()
                    .ipv4(Ipv4::new([10, 9, 0, 1], [10, 9, 0, 2]))
                    .udp(Udp::new(5000, 7000))
                    .payload(&vec![0x42; size])
                    .build(),
            );
            let outer = |off: usize, end: usize, more: bool| {
                PacketBuilder::new()
                    .ethernet(eth())
                    .ipv4(
                        Ipv4::new([192, 0, 2, 2], [203, 0, 113, k])
                            .protocol(47)
                            .id(u16::from(k))
                            .fragment(off as u16, more),
                    )
                    .payload(&gre[off..end])
                    .build()
            };
            if size > 1000 {
                frames.push(outer(0, 800, true));
                frames.push(outer(800, gre.len(), false));
                ts.extend([t0 + 3000, t0 + 3000]);
            } else {
                frames.push(outer(0, gre.len(), false));
                ts.push(t0 + 3000);
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tunnels-and-clock.pcap");
    std::fs::write(&path, tracekit_testdata::pcap_at(&frames, &ts)).unwrap();

    let idle = ["--timeout-idle", "60"];
    let one = sorted_flows(&path, "1", &idle);
    assert_eq!(one.0, Some(0));
    let records: Vec<serde_json::Value> = one
        .1
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let inside: Vec<_> = records
        .iter()
        .filter(|r| r["src_addr"] == "2001:db8::1")
        .collect();
    assert_eq!(inside.len(), 1, "{inside:?}");
    assert_eq!(inside[0]["packets"], 12);
    let in_gre: Vec<_> = records
        .iter()
        .filter(|r| r["src_addr"] == "10.9.0.1")
        .collect();
    assert_eq!(in_gre.len(), 1, "{in_gre:?}");
    assert_eq!(
        in_gre[0]["packets"], 24,
        "whole packets and first fragments"
    );
    for k in 1..=8 {
        let a = format!("10.0.1.{k}");
        let n = records
            .iter()
            .filter(|r| r["src_addr"] == a.as_str())
            .count();
        assert_eq!(
            n, 2,
            "flow {k}: timed out at the later time stamp, then again"
        );
    }
    for threads in ["2", "3", "4"] {
        assert_eq!(
            sorted_flows(&path, threads, &idle),
            one,
            "{threads} threads"
        );
    }
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
            let extra: &[&str] = if reassemble { &["--reassemble"] } else { &[] };
            let path = corpus(name);
            let one = sorted_flows(&path, "1", extra);
            assert!(!one.1.is_empty(), "{name}: no flows");
            for threads in ["2", "3"] {
                assert_eq!(
                    sorted_flows(&path, threads, extra),
                    one,
                    "{name}, {threads} threads, reassemble {reassemble}"
                );
            }
        }
    }
}

/// Several files are one trace, on any number of threads: a trace cut in parts by
/// `editcap -c` (the middle part gzipped) gives the whole file's records on one thread,
/// and every thread count gives one thread's, with and without reassembly and with a
/// short idle timeout. Flows and fragmented datagrams that cross a part's end go on in
/// the next part (before, each file's flows ended with it on several threads).
#[test]
fn flows_over_several_files_equal_the_whole_trace_on_every_thread_count() {
    if !have("editcap") || !have("gzip") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, per_part) in [("ndpi__1kxun.pcap", "600"), ("libtrace__vlan.pcap", "140")] {
        let whole = corpus(name);
        // editcap names the parts STEM_NNNNN_TIME.pcap.
        let stem = name.trim_end_matches(".pcap");
        let prefix = dir.path().join(format!("{stem}.pcap"));
        let status = Command::new("editcap")
            .args(["-F", "pcap", "-c", per_part])
            .arg(&whole)
            .arg(&prefix)
            .status()
            .unwrap();
        assert!(status.success(), "editcap -c {per_part} {name}");
        let mut parts: Vec<std::path::PathBuf> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(&format!("{stem}_"))
            })
            .collect();
        parts.sort();
        assert_eq!(parts.len(), 3, "{name}: {parts:?}");
        let status = Command::new("gzip").arg(&parts[1]).status().unwrap();
        assert!(status.success());
        parts[1] = parts[1].with_file_name(format!(
            "{}.gz",
            parts[1].file_name().unwrap().to_string_lossy()
        ));
        let parts: Vec<&Path> = parts.iter().map(|p| p.as_path()).collect();
        let run = |files: &[&Path], threads: &str, extra: &[&str]| {
            let (code, lines) = sorted_flows_of(files, threads, extra);
            assert_eq!(code, Some(0), "{name} {extra:?}, {threads} threads");
            lines
        };
        for extra in [&[][..], &["--reassemble"], &["--timeout-idle", "5"]] {
            let one = run(&[whole.as_path()], "1", extra);
            assert!(one.len() > 10, "{name}: {} flows", one.len());
            assert_eq!(
                run(&parts, "1", extra),
                one,
                "{name} {extra:?}: parts, one thread"
            );
            for threads in ["2", "3"] {
                assert_eq!(
                    run(&parts, threads, extra),
                    one,
                    "{name} {extra:?}: parts, {threads} threads"
                );
            }
        }
    }
}

/// `tracekit flows --json FILE`'s records, one JSON object each.
fn flow_records(path: &Path) -> Vec<serde_json::Value> {
    let out = tracekit()
        .args(["flows", "--json"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object a line"))
        .collect()
}

/// `--format csv|tsv` carries the JSON records' values under a header of the JSON names.
#[test]
fn csv_and_tsv_carry_the_json_values() {
    let path = corpus("zeek__tunnels__vxlan-encapsulated-http.pcap");
    let records = flow_records(&path);
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

/// The text table: one aligned line per JSON record, in its columns (protocol, endpoints
/// with IPv4 and IPv6 addresses, counts, state, history), under the header's widths.
#[test]
fn the_text_table_aligns_the_json_values() {
    for name in [
        "zeek__tunnels__vxlan-encapsulated-http.pcap",
        "zeek__tunnels__gre-pptp.pcap",
        "zeek__ipv6-hbh-routing0.pcap",
        "zeek__tunnels__Teredo.pcap",
    ] {
        let path = corpus(name);
        if !path.exists() {
            panic!("corpus file {name} is missing");
        }
        let records = flow_records(&path);
        let out = tracekit().arg("flows").arg(&path).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), records.len() + 1, "{name}");
        let header = lines[0];
        // After the protocol's 6 columns, a space and the source's 41.
        let arrow = 6 + 1 + 41;
        assert_eq!(&header[arrow - 3..arrow + 4], "src    ", "{name}");
        for (line, r) in lines[1..].iter().zip(&records) {
            let endpoint = |side: &str| {
                let addr = r[format!("{side}_addr")].as_str().unwrap().to_string();
                let port = &r[format!("{side}_port")];
                if addr.contains(':') {
                    format!("[{addr}]:{port}")
                } else {
                    format!("{addr}:{port}")
                }
            };
            let want = format!(
                "{:<6} {:>41} -> {:<41} {:>8} {:>12} {:>8} {:>8} {:<8} {}",
                r["proto"].as_str().unwrap(),
                endpoint("src"),
                endpoint("dst"),
                r["packets"].as_u64().unwrap(),
                r["bytes"].as_u64().unwrap(),
                r["payload_ab"].as_u64().unwrap(),
                r["payload_ba"].as_u64().unwrap(),
                r["state"].as_str().unwrap(),
                r["history"].as_str().unwrap(),
            );
            assert_eq!(*line, want, "{name}");
            // The arrow sits under the header's gap between src and dst.
            assert_eq!(&line[arrow..arrow + 4], " -> ", "{name}: {line}");
        }
    }
}

/// How many times Zeek's logarithmic rule writes a letter for `n` events: at the 1st,
/// 10th, 100th, ...
fn log_letters(n: u64) -> usize {
    let (mut count, mut at) = (0, 1u64);
    while n >= at {
        count += 1;
        at *= 10;
    }
    count
}

/// What tshark's TCP analysis flagged one way of a connection.
#[derive(Default, Clone, Copy)]
struct TsharkTcpEvents {
    /// `tcp.analysis.retransmission` on packets with payload (Zeek's `T` is a packet
    /// with retransmitted payload; tshark also flags SYN and FIN retransmissions).
    retransmissions: u64,
    /// `tcp.analysis.out_of_order`: tshark tells an out-of-order segment from a
    /// retransmission by timing; our table does not track holes and counts such a
    /// segment as a retransmission, so directions with one are not compared.
    out_of_order: u64,
    /// `tcp.analysis.zero_window`.
    zero_windows: u64,
    /// The sequence number of a SYN (or SYN-ACK) this way, and whether another SYN came
    /// with a different one: tshark then measures retransmissions against the new
    /// sequence space, we (one record per connection) keep the first, so such
    /// directions are not compared either.
    syn_seq: Option<u32>,
    syn_seq_changed: bool,
}

/// tshark's TCP analysis per direction ("src|sport>dst|dport" at the innermost IP
/// level), and the TCP streams seen per unordered address/port pair.
fn tshark_tcp_events(
    path: &Path,
) -> (
    BTreeMap<String, TsharkTcpEvents>,
    BTreeMap<String, std::collections::BTreeSet<String>>,
) {
    let rows = tracekit_testdata::tshark_fields_with(
        path,
        &["-Y", "tcp"],
        &[
            "tcp.stream",
            "ip.src",
            "ipv6.src",
            "tcp.srcport",
            "ip.dst",
            "ipv6.dst",
            "tcp.dstport",
            "tcp.len",
            "tcp.analysis.retransmission",
            "tcp.analysis.out_of_order",
            "tcp.analysis.zero_window",
            "tcp.flags.syn",
            "tcp.seq_raw",
        ],
    );
    let last = |s: &str| s.rsplit('~').next().unwrap_or("").to_string();
    let mut events: BTreeMap<String, TsharkTcpEvents> = BTreeMap::new();
    let mut streams: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    for r in rows {
        // The innermost layer: tshark lists a field's values outermost first.
        let src = if r[2].is_empty() {
            last(&r[1])
        } else {
            last(&r[2])
        };
        let dst = if r[5].is_empty() {
            last(&r[4])
        } else {
            last(&r[5])
        };
        let (a, b) = (format!("{src}|{}", r[3]), format!("{dst}|{}", r[6]));
        let pair = if a <= b {
            format!("{a}-{b}")
        } else {
            format!("{b}-{a}")
        };
        streams.entry(pair).or_default().insert(r[0].clone());
        let e = events.entry(format!("{a}>{b}")).or_default();
        let payload = last(&r[7]).parse::<u64>().unwrap_or(0) > 0;
        e.retransmissions += u64::from(payload && !r[8].is_empty());
        e.out_of_order += u64::from(!r[9].is_empty());
        e.zero_windows += u64::from(!r[10].is_empty());
        if matches!(last(&r[11]).as_str(), "1" | "True") {
            let seq = last(&r[12]).parse::<u32>().ok();
            e.syn_seq_changed |= e.syn_seq.is_some_and(|s| Some(s) != seq);
            e.syn_seq = e.syn_seq.or(seq);
        }
    }
    (events, streams)
}

/// The `T`/`t` and `W`/`w` letters of `flows --json` against tshark: per TCP flow and
/// direction, tshark's count of retransmitted-payload (or zero window) packets gives
/// how often Zeek's logarithmic rule writes the letter (once from the 1st, again from
/// the 10th, 100th, ...). Returns the directions compared that had such packets.
fn history_letters_follow_tshark(path: &Path, problems: &mut Vec<String>) -> (usize, usize) {
    let (events, streams) = tshark_tcp_events(path);
    let (mut retransmitted, mut zero_window) = (0, 0);
    for r in flow_records(path) {
        if r["proto"] != "tcp" {
            continue;
        }
        let a = format!("{}|{}", r["src_addr"].as_str().unwrap(), r["src_port"]);
        let b = format!("{}|{}", r["dst_addr"].as_str().unwrap(), r["dst_port"]);
        let pair = if a <= b {
            format!("{a}-{b}")
        } else {
            format!("{b}-{a}")
        };
        // One TCP stream per address pair, so the record and tshark's stream agree.
        if streams.get(&pair).map(|s| s.len()) != Some(1) {
            continue;
        }
        let history = r["history"].as_str().unwrap();
        for (from, to, upper) in [(&a, &b, true), (&b, &a, false)] {
            let e = events
                .get(&format!("{from}>{to}"))
                .copied()
                .unwrap_or_default();
            let case = |l: char| if upper { l } else { l.to_ascii_lowercase() };
            let mut check = |letter: char, n: u64| {
                let ours = history.matches(case(letter)).count();
                if ours != log_letters(n) {
                    problems.push(format!(
                        "{}: {from} -> {to}: tshark counts {n} for {letter}, history {history}",
                        path.display()
                    ));
                }
            };
            if e.out_of_order == 0 && !e.syn_seq_changed {
                check('T', e.retransmissions);
                retransmitted += usize::from(e.retransmissions > 0);
            }
            check('W', e.zero_windows);
            zero_window += usize::from(e.zero_windows > 0);
        }
    }
    (retransmitted, zero_window)
}

#[test]
fn history_repeats_retransmissions_on_a_log_scale_as_tshark_counts_them() {
    if !have("tshark") {
        return;
    }
    let (mut directions, mut problems) = (0, Vec::new());
    for name in [
        "zeek__pppoe-over-qinq.pcap",
        "ndpi__1kxun.pcap",
        "ndpi__KakaoTalk_talk.pcap",
        "ndpi__sites.pcapng",
        "zeek__vlan-pcp-dei.pcapng",
    ] {
        directions += history_letters_follow_tshark(&corpus(name), &mut problems).0;
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        directions >= 15,
        "only {directions} directions retransmitted"
    );
}

/// A hand-built connection with many retransmissions and zero windows each way: the
/// letters repeat as tshark's counts say (11 retransmissions: `TT`; 12 zero windows:
/// `ww`; 3: `W`).
#[test]
fn history_repeats_zero_windows_and_retransmissions_on_a_built_trace() {
    use tracekit_testdata::builder::{Ethernet, Ipv4, PacketBuilder, Tcp, tcp_flags as f};
    if !have("tshark") {
        return;
    }
    let (c, s) = ([10, 0, 0, 1], [10, 0, 0, 2]);
    let (cisn, sisn) = (1_000u32, 5_000u32);
    let frame = |from_client: bool, seq: u32, ack: u32, flags: u8, win: u16, data: &[u8]| {
        let (src, dst, sp, dp) = if from_client {
            (c, s, 40000, 80)
        } else {
            (s, c, 80, 40000)
        };
        let f = PacketBuilder::new()
            .ethernet(Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]))
            .ipv4(Ipv4::new(src, dst))
            .tcp(Tcp::new(sp, dp).seq(seq).ack(ack).flags(flags).window(win))
            .payload(data)
            .build();
        let n = f.len();
        (f, n)
    };
    let mut frames = vec![
        frame(true, cisn, 0, f::SYN, 64000, b""),
        frame(false, sisn, cisn + 1, f::SYN | f::ACK, 64000, b""),
        frame(true, cisn + 1, sisn + 1, f::ACK, 64000, b""),
    ];
    // The same ten bytes, sent 12 times: 11 retransmissions.
    for _ in 0..12 {
        frames.push(frame(
            true,
            cisn + 1,
            sisn + 1,
            f::ACK | f::PSH,
            64000,
            b"0123456789",
        ));
    }
    for _ in 0..12 {
        frames.push(frame(false, sisn + 1, cisn + 11, f::ACK, 0, b""));
    }
    for _ in 0..3 {
        frames.push(frame(true, cisn + 11, sisn + 1, f::ACK, 0, b""));
    }
    frames.push(frame(
        false,
        sisn + 1,
        cisn + 11,
        f::ACK | f::FIN,
        64000,
        b"",
    ));
    frames.push(frame(
        true,
        cisn + 11,
        sisn + 2,
        f::ACK | f::FIN,
        64000,
        b"",
    ));
    frames.push(frame(false, sisn + 2, cisn + 12, f::ACK, 64000, b""));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("zero-window-retransmissions.pcap");
    tracekit_testdata::write_pcap(&path, 1, &frames);

    // The trace does what it is meant to, as tshark sees it.
    let (events, _) = tshark_tcp_events(&path);
    let c2s = events["10.0.0.1|40000>10.0.0.2|80"];
    let s2c = events["10.0.0.2|80>10.0.0.1|40000"];
    assert_eq!((c2s.retransmissions, c2s.zero_windows), (11, 3));
    assert_eq!((s2c.retransmissions, s2c.zero_windows), (0, 12));

    let mut problems = Vec::new();
    let (retransmitted, zero_window) = history_letters_follow_tshark(&path, &mut problems);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert_eq!((retransmitted, zero_window), (1, 2));
}

/// `flows --reassemble` joins fragments inside tunnels (GRE over IPv4, IPv6 in IPv4):
/// each inner datagram counts once, in its ports' conversation, as in tshark's
/// conversations with defragmentation on. (A packet carrying an inner fragment is held
/// whole, so the outer flow counts the datagram once too; tshark counts every frame
/// there: the outer conversations are not compared.)
#[test]
fn reassembled_flows_join_fragments_inside_tunnels() {
    use tracekit_testdata::builder::{Ethernet, Ipv4, Ipv6, Ipv6Ext, PacketBuilder, Udp};
    if !have("tshark") {
        return;
    }
    let data: Vec<u8> = (0..2000u32).map(|i| (i % 251) as u8).collect();
    let outer = |proto: u8, inner: &[u8]| {
        let mut body = Vec::new();
        if proto == 47 {
            body.extend_from_slice(&[0, 0, 0x08, 0x00]);
        }
        body.extend_from_slice(inner);
        let f = PacketBuilder::new()
            .ethernet(Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]))
            .ipv4(Ipv4::new([192, 0, 2, 1], [192, 0, 2, 2]).protocol(proto))
            .payload(&body)
            .build();
        let n = f.len();
        (f, n)
    };
    let mut frames = Vec::new();
    // Inner IPv4 UDP datagrams in GRE, three of them, each in two fragments.
    for (i, sport) in [5000u16, 5001, 5002].iter().enumerate() {
        let whole = PacketBuilder::new()
            .ipv4(Ipv4::new([10, 1, 0, 1], [10, 1, 0, 2]))
            .udp(Udp::new(*sport, 7000))
            .payload(&data)
            .build();
        let body = &whole[20..];
        for (off, more) in [(0usize, true), (1000, false)] {
            let end = if more { 1000 } else { body.len() };
            let frag = PacketBuilder::new()
                .ipv4(
                    Ipv4::new([10, 1, 0, 1], [10, 1, 0, 2])
                        .id(0x100 + i as u16)
                        .protocol(17)
                        .fragment(off as u16, more),
                )
                .payload(&body[off..end])
                .build();
            frames.push(outer(47, &frag));
        }
    }
    // An inner IPv6 UDP datagram in IPv4 (6in4), in two fragments.
    let v6 = || Ipv6::between("2001:db8::1", "2001:db8::2");
    let whole = PacketBuilder::new()
        .ipv6(v6())
        .udp(Udp::new(6000, 7000))
        .payload(&data)
        .build();
    let body = &whole[40..];
    for (off, more) in [(0usize, true), (1000, false)] {
        let end = if more { 1000 } else { body.len() };
        let frag = PacketBuilder::new()
            .ipv6(v6())
            .ipv6_ext(Ipv6Ext::fragment(off as u16, more, 0x200).next_header(17))
            .payload(&body[off..end])
            .build();
        frames.push(outer(41, &frag));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tunnel-fragments.pcap");
    tracekit_testdata::write_pcap(&path, 1, &frames);

    let theirs = tshark_conversations(&path, true).expect("tshark reads it");
    let ours = our_conversations(&path, &["--reassemble"]);
    let (t, o) = (packet_counts(&theirs), packet_counts(&ours));
    assert_eq!(t.len(), 4, "tshark: {t:?}");
    assert_eq!(o, t);
    // Without --reassemble, the inner fragments are not joined: no inner conversation
    // has its ports but the first fragments'.
    let plain = our_conversations(&path, &[]);
    assert!(plain.values().flatten().all(|c| c.0 + c.1 == 1));
}
