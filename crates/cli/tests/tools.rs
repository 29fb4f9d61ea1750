//! The trace tools end to end: `merge` against mergecap (and editcap -d), `split` against
//! editcap -c and re-merging, `stats -f` against tcpdump, `rtstats` against per-interval
//! counts from tshark and tcpdump, `ports` against a trace built with known contents;
//! damaged input and a closed stdout for every tool.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use tracekit::{CreateOptions, LinkType, Meta, Packet, Timestamp};
use tracekit_testdata::builder::{Ethernet, Ipv4, PacketBuilder, Tcp, Udp};
use tracekit_testdata::{corpus, have, tshark_frames};

fn tracekit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tracekit"))
}

fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// One packet as compared between outputs: time stamp (ns), wire length, bytes,
/// interface.
type Row = (u64, u32, Vec<u8>, u32);

fn packets(path: &Path) -> Vec<Row> {
    let mut source = tracekit::open(path.to_str().unwrap()).unwrap();
    let mut rows = Vec::new();
    while let Some(p) = source.next_packet().unwrap() {
        rows.push((
            p.ts().as_unix_nanos(),
            p.wire_len(),
            p.data().to_vec(),
            p.meta().interface,
        ));
    }
    rows
}

/// Packets without the interface number.
fn frames(path: &Path) -> Vec<(u64, u32, Vec<u8>)> {
    packets(path)
        .into_iter()
        .map(|(t, l, d, _)| (t, l, d))
        .collect()
}

fn assert_same_packets(ours: &Path, theirs: &Path, what: &str) {
    let (a, b) = (packets(ours), packets(theirs));
    assert_eq!(a.len(), b.len(), "{what}: packet counts");
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert!(
            x == y,
            "{what}: packet {} differs: ts {} vs {}, len {} vs {}, interface {} vs {}",
            i + 1,
            x.0,
            y.0,
            x.1,
            y.1,
            x.3,
            y.3
        );
    }
}

fn paths(names: &[&str]) -> Vec<PathBuf> {
    names.iter().map(|n| corpus(n)).collect()
}

#[test]
fn merge_equals_mergecap() {
    if !have("mergecap") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The TCP and non-TCP packets of one capture: a merge must interleave them back.
    let tcp = dir.path().join("tcp.pcap");
    let rest = dir.path().join("rest.pcap");
    run_ok(
        tracekit()
            .args(["convert", "-f", "tcp"])
            .arg(corpus("ndpi__1kxun.pcap"))
            .arg(&tcp),
    );
    run_ok(
        tracekit()
            .args(["convert", "-f", "not tcp"])
            .arg(corpus("ndpi__1kxun.pcap"))
            .arg(&rest),
    );
    let cases: Vec<(&str, Vec<PathBuf>)> = vec![
        ("interleaved halves", vec![rest.clone(), tcp.clone()]),
        (
            "two captures",
            paths(&["zeek__smb__smb2.pcap", "ndpi__1kxun.pcap"]),
        ),
        (
            "a file with itself (ties keep input order)",
            paths(&["zeek__dns-edns-ecs.pcap", "zeek__dns-edns-ecs.pcap"]),
        ),
        (
            "pcapng and pcap, time going backwards",
            paths(&[
                "libtrace__100_packets.pcapng",
                "zeek__tunnels__vxlan-encapsulated-http.pcap",
                "zeek__dns__mdns.pcap",
            ]),
        ),
    ];
    for (what, inputs) in &cases {
        for append in [false, true] {
            let ours = dir.path().join("ours.pcapng");
            let theirs = dir.path().join("theirs.pcapng");
            let mut cmd = tracekit();
            cmd.arg("merge").arg("-w").arg(&ours).args(inputs);
            let mut mc = Command::new("mergecap");
            mc.arg("-w").arg(&theirs).args(inputs);
            if append {
                cmd.arg("-a");
                mc.arg("-a");
            }
            run_ok(&mut cmd);
            run_ok(&mut mc);
            assert_same_packets(&ours, &theirs, &format!("{what} (append {append})"));
        }
    }
    // The halves merged back are the original capture, byte for byte.
    let back = dir.path().join("back.pcap");
    run_ok(
        tracekit()
            .args(["merge", "-w"])
            .arg(&back)
            .arg(&tcp)
            .arg(&rest),
    );
    assert!(std::fs::read(&back).unwrap() == std::fs::read(corpus("ndpi__1kxun.pcap")).unwrap());
}

#[test]
fn merge_dedup_equals_mergecap_then_editcap_d() {
    if !have("mergecap") || !have("editcap") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for inputs in [
        paths(&["zeek__dns-edns-ecs.pcap", "zeek__dns-edns-ecs.pcap"]),
        paths(&[
            "ndpi__1kxun.pcap",
            "zeek__dns__mdns.pcap",
            "ndpi__1kxun.pcap",
        ]),
    ] {
        let merged = dir.path().join("m.pcap");
        let theirs = dir.path().join("d.pcap");
        let ours = dir.path().join("ours.pcap");
        run_ok(
            Command::new("mergecap")
                .args(["-F", "pcap", "-w"])
                .arg(&merged)
                .args(&inputs),
        );
        // editcap's default window (the previous four packets, searched one by one) and a
        // window of 200 (`-D N` compares with the previous N - 1; ours are counted in a
        // map).
        for (editcap, window) in [
            (vec!["-d"], vec![]),
            (vec!["-D", "201"], vec!["--dedup-window", "200"]),
        ] {
            run_ok(
                Command::new("editcap")
                    .args(&editcap)
                    .arg(&merged)
                    .arg(&theirs),
            );
            let out = run_ok(
                tracekit()
                    .args(["merge", "--dedup", "--json"])
                    .args(&window)
                    .arg("-w")
                    .arg(&ours)
                    .args(&inputs),
            );
            assert_eq!(frames(&ours), frames(&theirs), "{inputs:?} {editcap:?}");
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            let removed = frames(&merged).len() - frames(&theirs).len();
            assert!(removed > 0);
            assert_eq!(v["duplicates"].as_u64(), Some(removed as u64));
            assert_eq!(v["written"].as_u64(), Some(frames(&theirs).len() as u64));
        }
    }
}

#[test]
fn merge_unique_interfaces_keep_the_inputs_apart() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus("zeek__dns__mdns.pcap");
    let out = dir.path().join("u.pcapng");
    run_ok(
        tracekit()
            .args(["merge", "--unique-interfaces", "-w"])
            .arg(&out)
            .arg(&input)
            .arg(&input),
    );
    let rows = packets(&out);
    let n = frames(&input).len();
    assert_eq!(rows.len(), 2 * n);
    // Equal time stamps: each packet of the first input, then its twin from the second.
    for pair in rows.chunks(2) {
        assert_eq!((pair[0].3, pair[1].3), (0, 1));
        assert_eq!(pair[0].2, pair[1].2);
    }
    // Without the flag, identical inputs share their interface, as with mergecap.
    let shared = dir.path().join("s.pcapng");
    run_ok(
        tracekit()
            .args(["merge", "-w"])
            .arg(&shared)
            .arg(&input)
            .arg(&input),
    );
    assert!(packets(&shared).iter().all(|r| r.3 == 0));
    if have("tshark") {
        let ids = tracekit_testdata::tshark_fields(&out, &["frame.interface_id"]);
        let want: Vec<String> = (0..2 * n).map(|i| (i % 2).to_string()).collect();
        assert_eq!(ids.iter().map(|r| r[0].clone()).collect::<Vec<_>>(), want);
    }
}

#[test]
fn merge_reads_and_writes_any_format_and_compression() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.pcap.gz");
    let b = dir.path().join("b.pcapng.zst");
    let c = dir.path().join("c.erf.bz2");
    run_ok(
        tracekit()
            .arg("convert")
            .arg(corpus("ndpi__1kxun.pcap"))
            .arg(&a),
    );
    run_ok(
        tracekit()
            .arg("convert")
            .arg(corpus("zeek__smb__smb2.pcap"))
            .arg(&b),
    );
    run_ok(
        tracekit()
            .arg("convert")
            .arg(corpus("zeek__dns__mdns.pcap"))
            .arg(&c),
    );
    let plain = dir.path().join("plain.pcapng");
    run_ok(tracekit().args(["merge", "-w"]).arg(&plain).args(paths(&[
        "ndpi__1kxun.pcap",
        "zeek__smb__smb2.pcap",
        "zeek__dns__mdns.pcap",
    ])));
    let packed = dir.path().join("packed.pcap.xz");
    run_ok(
        tracekit()
            .args(["merge", "-w"])
            .arg(&packed)
            .arg(&a)
            .arg(&b)
            .arg(&c),
    );
    assert_eq!(frames(&packed), frames(&plain));
}

#[test]
fn merge_of_a_damaged_input_keeps_every_good_packet_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("m.pcap");
    let out = tracekit()
        .args(["merge", "--json", "-w"])
        .arg(&out_path)
        .arg(corpus("corrupt__vlan_truncated_midheader.pcap"))
        .arg(corpus("libtrace__100_packets.pcap"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("packet 300 at byte offset 108284"), "{err}");
    assert!(
        err.contains("its 299 packets before the damage were merged"),
        "{err}"
    );
    assert_eq!(packets(&out_path).len(), 299 + 100);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["inputs"][0]["packets"], 299);
    assert!(v["inputs"][0]["error"].is_string());
    assert_eq!(v["inputs"][1]["error"], serde_json::Value::Null);
}

/// Every part written by a split, in name order.
fn parts(dir: &Path, stem: &str) -> Vec<PathBuf> {
    with_prefix(dir, &format!("{stem}-"))
}

/// The files in `dir` whose names start with `prefix`, in name order.
fn with_prefix(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with(prefix))
        .collect();
    v.sort();
    v
}

#[test]
fn split_by_packets_matches_editcap_and_remerges_to_the_input() {
    let input = corpus("zeek__smb__smb2.pcap");
    let dir = tempfile::tempdir().unwrap();
    run_ok(
        tracekit()
            .args(["split", "--packets", "100"])
            .arg(&input)
            .arg(dir.path().join("p.pcap")),
    );
    let ours = parts(dir.path(), "p");
    assert_eq!(ours.len(), 12);
    let counts: Vec<usize> = ours.iter().map(|p| frames(p).len()).collect();
    assert_eq!(&counts[..11], &[100; 11]);
    assert_eq!(counts[11], 78);
    // Concatenated back, the parts are the input byte for byte.
    let back = dir.path().join("back.pcap");
    run_ok(
        tracekit()
            .args(["merge", "-a", "-w"])
            .arg(&back)
            .args(&ours),
    );
    assert!(std::fs::read(&back).unwrap() == std::fs::read(&input).unwrap());
    if have("editcap") {
        let edir = tempfile::tempdir().unwrap();
        run_ok(
            Command::new("editcap")
                .args(["-c", "100"])
                .arg(&input)
                .arg(edir.path().join("e.pcap")),
        );
        // editcap names them e_00000_<time>.pcap, e_00001_<time>.pcap, ...
        let theirs = with_prefix(edir.path(), "e_");
        assert_eq!(theirs.len(), ours.len());
        for (a, b) in ours.iter().zip(&theirs) {
            assert_eq!(frames(a), frames(b), "{a:?} vs {b:?}");
        }
    }
}

#[test]
fn split_by_seconds_cuts_on_the_trace_clock() {
    let input = corpus("ndpi__1kxun.pcap");
    let dir = tempfile::tempdir().unwrap();
    let out = run_ok(
        tracekit()
            .args(["split", "--seconds", "10", "--json"])
            .arg(&input)
            .arg(dir.path().join("s.pcapng.gz")),
    );
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ours = parts(dir.path(), "s");
    assert_eq!(listed.as_array().unwrap().len(), ours.len());
    assert!(ours.len() > 2);
    let mut previous = None;
    let mut all = Vec::new();
    for (i, part) in ours.iter().enumerate() {
        let rows = frames(part);
        assert_eq!(listed[i]["packets"].as_u64(), Some(rows.len() as u64));
        let interval = rows[0].0 / 10_000_000_000;
        assert!(
            rows.iter().all(|r| r.0 / 10_000_000_000 == interval),
            "{part:?}"
        );
        assert!(previous < Some(interval));
        previous = Some(interval);
        all.extend(rows);
    }
    assert_eq!(all, frames(&input));
    // The parts are gzip-compressed pcapng, as the prefix says.
    let info = run_ok(tracekit().args(["info", "--json"]).arg(&ours[0]));
    let v: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    assert_eq!(
        (v["format"].as_str(), v["compression"].as_str()),
        (Some("pcapng"), Some("gzip"))
    );
}

#[test]
fn split_time_bounds_byte_limit_and_file_limit() {
    let input = corpus("zeek__smb__smb2.pcap");
    let all = frames(&input);
    let dir = tempfile::tempdir().unwrap();
    // --start/--end: the packets with start <= time < end.
    let (start, end) = (all[100].0, all[700].0);
    let secs = |ns: u64| format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000);
    run_ok(
        tracekit()
            .args(["split", "--start", &secs(start), "--end", &secs(end)])
            .arg(&input)
            .arg(dir.path().join("t.pcap")),
    );
    let kept = frames(&parts(dir.path(), "t")[0]);
    let want: Vec<_> = all
        .iter()
        .filter(|r| r.0 >= start && r.0 < end)
        .cloned()
        .collect();
    assert_eq!(kept, want);
    // --bytes: every part within the limit unless it holds one bigger packet.
    run_ok(
        tracekit()
            .args(["split", "--bytes", "100000"])
            .arg(&input)
            .arg(dir.path().join("b.pcap")),
    );
    let mut joined = Vec::new();
    for part in parts(dir.path(), "b") {
        let rows = frames(&part);
        let bytes: usize = rows.iter().map(|r| r.2.len()).sum();
        assert!(bytes <= 100_000 || rows.len() == 1, "{part:?}: {bytes}");
        joined.extend(rows);
    }
    assert_eq!(joined, all);
    // --max-files stops after that many parts.
    let out = run_ok(
        tracekit()
            .args(["split", "--packets", "100", "--max-files", "3"])
            .arg(&input)
            .arg(dir.path().join("m.pcap")),
    );
    assert_eq!(parts(dir.path(), "m").len(), 3);
    assert!(String::from_utf8_lossy(&out.stderr).contains("stopped after 3 parts"));
}

#[test]
fn split_of_a_damaged_input_leaves_complete_parts_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let out = tracekit()
        .args(["split", "--packets", "100"])
        .arg(corpus("corrupt__vlan_truncated_midheader.pcap"))
        .arg(dir.path().join("d.pcap"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("packet 300 at byte offset 108284"), "{err}");
    assert!(err.contains("the 299 packets before the damage"), "{err}");
    let counts: Vec<usize> = parts(dir.path(), "d")
        .iter()
        .map(|p| frames(p).len())
        .collect();
    assert_eq!(counts, vec![100, 100, 99]);
}

/// `tcpdump -r FILE EXPR | wc -l`.
fn tcpdump_count(file: &Path, expr: &str) -> u64 {
    let out = Command::new("tcpdump")
        .args(["-n", "-r"])
        .arg(file)
        .arg(expr)
        .stderr(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).lines().count() as u64
}

#[test]
fn stats_filters_count_what_tcpdump_counts() {
    if !have("tcpdump") {
        return;
    }
    for (file, exprs) in [
        (
            "ndpi__1kxun.pcap",
            &["tcp", "udp port 53", "tcp[tcpflags] & tcp-syn != 0", "ip6"][..],
        ),
        (
            "zeek__pppoe-over-qinq.pcap",
            &["pppoes and tcp", "vlan"][..],
        ),
        (
            "zeek__dns-edns-ecs.pcap",
            &["ip[6:2] & 0x3fff != 0", "udp"][..],
        ),
    ] {
        let path = corpus(file);
        let mut cmd = tracekit();
        cmd.args(["stats", "--json"]);
        for e in exprs {
            cmd.args(["-f", e]);
        }
        let out = run_ok(cmd.arg(&path));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        for (i, e) in exprs.iter().enumerate() {
            assert_eq!(v["filters"][i]["filter"], *e);
            assert_eq!(
                v["filters"][i]["packets"].as_u64(),
                Some(tcpdump_count(&path, e)),
                "{file} `{e}`"
            );
        }
        assert_eq!(
            v["packets"].as_u64(),
            Some(frames(&path).len() as u64),
            "{file}"
        );
        assert!(v.get("protocols").is_none());
    }
}

#[test]
fn stats_protocol_breakdown_matches_tcpdump() {
    if !have("tcpdump") {
        return;
    }
    let path = corpus("zeek__dns-edns-ecs.pcap");
    let out = run_ok(tracekit().args(["stats", "--json"]).arg(&path));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let p = &v["protocols"];
    for (key, expr) in [
        ("ipv4", "ip"),
        ("ipv6", "ip6"),
        ("tcp", "tcp"),
        ("udp", "udp"),
        ("icmp", "icmp or icmp6"),
        ("fragments", "ip[6:2] & 0x3fff != 0"),
    ] {
        assert_eq!(p[key].as_u64(), Some(tcpdump_count(&path, expr)), "{key}");
    }
    // This capture has 8 IPv4 fragments (the manifest's count).
    assert_eq!(p["fragments"], 8);
    let text = run_ok(tracekit().arg("stats").arg(&path));
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("IP fragments"), "{text}");
}

/// Writes Ethernet/IPv4 packets with the given (protocol, src port, dst port, payload
/// length) and returns the expected per-port table, built from the same list.
fn write_port_trace(path: &Path, flows: &[(u8, u16, u16, usize)]) {
    let mut sink = tracekit::create(path.to_str().unwrap(), &CreateOptions::default()).unwrap();
    let mut write = |f: &[u8], wire: usize, ts: Timestamp| {
        let meta = Meta::new(ts, wire as u32, LinkType::ETHERNET);
        sink.write_packet(&Packet::new(f, meta)).unwrap();
    };
    let eth = Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
    let ip = Ipv4::new([10, 0, 0, 1], [10, 0, 0, 2]);
    let zeros = [0u8; 1500];
    for (i, &(proto, sport, dport, payload)) in flows.iter().enumerate() {
        let mut b = PacketBuilder::new();
        b.ethernet(eth).ipv4(ip);
        if proto == 6 {
            b.tcp(Tcp::new(sport, dport));
        } else {
            b.udp(Udp::new(sport, dport));
        }
        let f = b.payload(&zeros[..payload]).build();
        write(&f, f.len(), Timestamp::from_micros(1_700_000_000, i as u32));
    }
    // A later fragment (offset 1480) of a UDP datagram: no ports, counted apart.
    let frag = PacketBuilder::new()
        .ethernet(eth)
        .ipv4(ip.fragment(1480, false).protocol(17))
        .payload(&zeros[..100])
        .build();
    write(&frag, 134, Timestamp::from_micros(1_700_000_001, 0));
    // A TCP packet cut inside its header by a 40-byte snap length.
    let cut = PacketBuilder::new()
        .ethernet(eth)
        .ipv4(ip)
        .tcp(Tcp::new(40000, 80))
        .build();
    write(
        &cut[..40],
        cut.len(),
        Timestamp::from_micros(1_700_000_001, 1),
    );
    sink.finish().unwrap();
}

#[test]
fn ports_totals_equal_the_values_the_trace_was_built_with() {
    // A deterministic mix of flows: (protocol, source port, destination port, payload).
    let mut flows = Vec::new();
    let mut x = 12345u32;
    for _ in 0..2000 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        let proto = if x >> 31 == 0 { 6 } else { 17 };
        let sport = [53u16, 80, 443, 40000, 40001][(x >> 8) as usize % 5];
        let dport = [53u16, 80, 443, 123, 50000][(x >> 16) as usize % 5];
        flows.push((proto, sport, dport, (x >> 20) as usize % 1400));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ports.pcap");
    write_port_trace(&path, &flows);
    let out = run_ok(tracekit().args(["ports", "--json"]).arg(&path));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut want = std::collections::BTreeMap::<(String, u64), [u64; 4]>::new();
    for &(proto, s, d, len) in &flows {
        let name = if proto == 6 { "tcp" } else { "udp" }.to_string();
        let e = want.entry((name.clone(), u64::from(s))).or_default();
        e[0] += 1;
        e[1] += len as u64;
        let e = want.entry((name, u64::from(d))).or_default();
        e[2] += 1;
        e[3] += len as u64;
    }
    let mut got = std::collections::BTreeMap::new();
    for r in v["ports"].as_array().unwrap() {
        got.insert(
            (
                r["protocol"].as_str().unwrap().to_string(),
                r["port"].as_u64().unwrap(),
            ),
            [
                r["src_packets"].as_u64().unwrap(),
                r["src_bytes"].as_u64().unwrap(),
                r["dst_packets"].as_u64().unwrap(),
                r["dst_bytes"].as_u64().unwrap(),
            ],
        );
    }
    assert_eq!(got, want);
    assert_eq!(v["packets"], 2002);
    assert_eq!(v["attributed_packets"], 2000);
    let bytes: usize = flows.iter().map(|f| f.3).sum();
    assert_eq!(v["attributed_bytes"].as_u64(), Some(bytes as u64));
    assert_eq!(
        (
            v["fragments"].as_u64(),
            v["truncated"].as_u64(),
            v["other"].as_u64()
        ),
        (Some(1), Some(1), Some(0))
    );
    // The text table carries the same rows.
    let text = run_ok(tracekit().arg("ports").arg(&path));
    let text = String::from_utf8(text.stdout).unwrap();
    let (s, d) = (
        &want[&("udp".to_string(), 53)],
        &want[&("udp".to_string(), 53)],
    );
    let line = format!(
        "udp      53 {:>12} {:>15} {:>12} {:>15}",
        s[0], s[1], d[2], d[3]
    );
    assert!(text.contains(&line), "{line}\n{text}");
}

/// (interval start, packets, bytes) per interval of `len` ns, empty ones included.
fn buckets(frames: &[(u64, u32)], len: u64) -> Vec<(u64, u64, u64)> {
    let first = frames[0].0 / len;
    let last = frames.iter().map(|f| f.0 / len).max().unwrap();
    let mut v: Vec<(u64, u64, u64)> = (first..=last).map(|b| (b * len, 0, 0)).collect();
    for &(ts, wire) in frames {
        let e = &mut v[(ts / len - first) as usize];
        e.1 += 1;
        e.2 += u64::from(wire);
    }
    v
}

#[test]
fn rtstats_intervals_match_tshark_and_tcpdump() {
    if !have("tshark") || !have("tcpdump") {
        return;
    }
    let path = corpus("ndpi__KakaoTalk_talk.pcap");
    let all: Vec<(u64, u32)> = tshark_frames(&path).iter().map(|f| (f.0, f.1)).collect();
    let dir = tempfile::tempdir().unwrap();
    let udp = dir.path().join("udp.pcap");
    run_ok(
        Command::new("tcpdump")
            .args(["-r"])
            .arg(&path)
            .arg("-w")
            .arg(&udp)
            .arg("udp"),
    );
    let udp_frames: Vec<(u64, u32)> = tshark_frames(&udp).iter().map(|f| (f.0, f.1)).collect();
    let len = 5_000_000_000;
    let want_all = buckets(&all, len);
    let out = run_ok(
        tracekit()
            .args(["rtstats", "-i", "5", "-f", "udp", "--json"])
            .arg(&path),
    );
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), want_all.len());
    let mut udp_by_start = std::collections::HashMap::new();
    for (start, p, b) in buckets(&udp_frames, len) {
        udp_by_start.insert(start, (p, b));
    }
    for (row, want) in rows.iter().zip(&want_all) {
        assert_eq!(row["start_ns"].as_u64(), Some(want.0));
        assert_eq!(
            (row["packets"].as_u64(), row["bytes"].as_u64()),
            (Some(want.1), Some(want.2))
        );
        let (p, b) = udp_by_start.get(&want.0).copied().unwrap_or((0, 0));
        assert_eq!(
            (
                row["filters"][0]["packets"].as_u64(),
                row["filters"][0]["bytes"].as_u64()
            ),
            (Some(p), Some(b)),
            "interval {}",
            want.0
        );
    }
    // CSV carries the same numbers.
    let csv = run_ok(
        tracekit()
            .args(["rtstats", "-i", "5", "-f", "udp", "--format", "csv"])
            .arg(&path),
    );
    let csv = String::from_utf8(csv.stdout).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("start,start_ns,packets,bytes,packets[udp],bytes[udp]")
    );
    for (line, row) in lines.zip(rows) {
        let cols: Vec<u64> = line
            .split(',')
            .skip(1)
            .map(|c| c.parse().unwrap())
            .collect();
        assert_eq!(cols[0], row["start_ns"].as_u64().unwrap());
        assert_eq!(cols[1], row["packets"].as_u64().unwrap());
        assert_eq!(cols[4], row["filters"][0]["bytes"].as_u64().unwrap());
    }
    // By packet count: full rows of 1000, starting at each group's first packet.
    let out = run_ok(
        tracekit()
            .args(["rtstats", "-c", "1000", "--json"])
            .arg(&path),
    );
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), all.len().div_ceil(1000));
    for (i, row) in rows.iter().enumerate() {
        let group = &all[i * 1000..all.len().min((i + 1) * 1000)];
        assert_eq!(row["start_ns"].as_u64(), Some(group[0].0));
        assert_eq!(row["packets"].as_u64(), Some(group.len() as u64));
        let bytes: u64 = group.iter().map(|f| u64::from(f.1)).sum();
        assert_eq!(row["bytes"].as_u64(), Some(bytes));
    }
}

#[test]
fn every_tool_reports_damage_after_the_good_packets() {
    let damaged = corpus("corrupt__vlan_truncated_midheader.pcap");
    for args in [
        &["stats", "--json"][..],
        &["ports", "--json"][..],
        &["rtstats", "-c", "100", "--json"][..],
    ] {
        let out = tracekit().args(args).arg(&damaged).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(
            err.contains("packet 300 at byte offset 108284"),
            "{args:?}: {err}"
        );
        assert!(
            err.contains("299 packets before the damage"),
            "{args:?}: {err}"
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let packets = match args[0] {
            "rtstats" => v
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["packets"].as_u64().unwrap())
                .sum(),
            _ => v["packets"].as_u64().unwrap(),
        };
        assert_eq!(packets, 299, "{args:?}");
    }
}

#[test]
fn every_tool_ends_quietly_on_a_closed_stdout() {
    let input = corpus("zeek__smb__smb2.pcap");
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("q.pcap");
    let cases: Vec<Vec<std::ffi::OsString>> = vec![
        vec!["stats".into(), input.clone().into()],
        vec![
            "stats".into(),
            "-f".into(),
            "tcp".into(),
            input.clone().into(),
        ],
        vec!["ports".into(), input.clone().into()],
        vec![
            "rtstats".into(),
            "-c".into(),
            "1".into(),
            input.clone().into(),
        ],
        vec![
            "split".into(),
            "--packets".into(),
            "100".into(),
            input.clone().into(),
            prefix.into(),
        ],
        vec![
            "merge".into(),
            "-w".into(),
            "-".into(),
            input.clone().into(),
            input.clone().into(),
        ],
    ];
    for args in cases {
        let mut child = tracekit()
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Close our end before the tool writes (what `| head -0` does).
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{args:?}: {:?}", out.status);
        assert!(
            out.stderr.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn every_threaded_command_gives_what_one_thread_gives() {
    for name in [
        "libtrace__fragtest.erf.gz",
        "libtrace__vlan.pcap.bz2",
        "ndpi__sites.pcapng",
        "corrupt__100_packets_truncated.pcapng",
        "pcapnggen__test202_le.pcapng",
        "zeek__ipv6-http-atomic-frag.pcap",
    ] {
        let path = corpus(name);
        if !path.exists() {
            continue;
        }
        let run = |args: &[&str], threads: &str| {
            let out = tracekit()
                .args(args)
                .args(["--threads", threads])
                .arg(&path)
                .output()
                .unwrap();
            (
                out.status.code(),
                out.stdout,
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        };
        for args in [
            &["ports", "--json"][..],
            &["ports", "-f", "tcp", "--json"][..],
            &["stats", "--json"][..],
            &["stats", "-f", "tcp", "-f", "udp port 53", "--json"][..],
            // Rows cut by time (intervals far shorter than the gaps: many empty rows; time
            // stamps that go back) and by packet count, the workers' counts added up.
            &[
                "rtstats", "-i", "0.01", "-f", "tcp", "-f", "udp", "--format", "csv",
            ][..],
            &["rtstats", "-i", "1", "--json"][..],
            &["rtstats", "-c", "7", "-f", "icmp or icmp6", "--json"][..],
            // Lines formatted by workers, written in file order (file packet numbers
            // with a filter; a count that ends before the damage).
            &[
                "fields",
                "-e",
                "frame.number",
                "-e",
                "ip.src",
                "-e",
                "tcp.srcport",
                "-e",
                "dns.qry.name",
                "-f",
                "ip or ip6 or vlan",
            ][..],
            &["dump", "-x"][..],
            &["dump", "-c", "30"][..],
        ] {
            let one = run(args, "1");
            assert!(!one.1.is_empty(), "{name} {args:?}: {}", one.2);
            for threads in ["2", "3", "8"] {
                let many = run(args, threads);
                assert_eq!(
                    many.0, one.0,
                    "{name} {args:?} on {threads} threads: exit status"
                );
                assert!(
                    many.1 == one.1,
                    "{name} {args:?} on {threads} threads:\n{}\nvs one thread:\n{}",
                    String::from_utf8_lossy(&many.1),
                    String::from_utf8_lossy(&one.1)
                );
            }
        }
    }
}

#[test]
fn rtstats_skips_long_gaps_alike_on_one_thread_and_on_many() {
    // Packets 1 s apart, then one 2,500,000 s later (more than a million empty
    // intervals: skipped with a message), then 3 s later (two empty rows).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gap.pcap");
    let mut sink = tracekit::create(path.to_str().unwrap(), &CreateOptions::default()).unwrap();
    let mut b = PacketBuilder::new();
    b.ethernet(Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]));
    b.ipv4(Ipv4::new([10, 0, 0, 1], [10, 0, 0, 2]));
    b.udp(Udp::new(1, 2));
    let frame = b.build();
    for (i, s) in [0u32, 1, 1, 2, 2_500_002, 2_500_005]
        .into_iter()
        .enumerate()
    {
        let meta = Meta::new(
            Timestamp::from_nanos(1_600_000_000 + s, 1000 * i as u32),
            frame.len() as u32,
            LinkType::ETHERNET,
        );
        sink.write_packet(&Packet::new(&frame, meta)).unwrap();
    }
    sink.finish().unwrap();
    let run = |threads: &str| {
        let out = run_ok(
            tracekit()
                .args([
                    "rtstats",
                    "-i",
                    "1",
                    "--format",
                    "csv",
                    "--threads",
                    threads,
                ])
                .arg(&path),
        );
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (rows, message) = run("1");
    let counts: Vec<&str> = rows
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(2).unwrap())
        .collect();
    assert_eq!(counts, ["1", "2", "1", "1", "0", "0", "1"], "{rows}");
    assert!(
        message.contains("2499999 empty intervals skipped before 1602500002"),
        "{message}"
    );
    for threads in ["2", "3", "8"] {
        assert_eq!(
            run(threads),
            (rows.clone(), message.clone()),
            "{threads} threads"
        );
    }
}
