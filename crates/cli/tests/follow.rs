//! `tracekit follow` against `tshark -z follow,tcp,raw`: for every TCP stream of several
//! corpus traces (retransmissions, out-of-order segments, tunnels, a capture with
//! missing data among them), the same two nodes and byte-identical payload each way.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use tracekit_testdata::{corpus, have};

/// One followed stream: the two nodes and the bytes each sent.
#[derive(Debug, Default, PartialEq, Eq)]
struct Followed {
    nodes: (String, String),
    from0: Vec<u8>,
    from1: Vec<u8>,
    /// Bytes missing (node, length), in order.
    gaps: Vec<(u8, u64)>,
}

/// tshark writes a gap into the stream as this text.
fn tshark_gap(bytes: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(bytes).ok()?;
    let n = text
        .strip_prefix('[')?
        .strip_suffix(" bytes missing in capture file]\0")?;
    n.parse().ok()
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex"))
        .collect()
}

/// Parses `follow,tcp,raw` output (tshark's or ours): stream filter -> stream.
fn parse(text: &str) -> BTreeMap<String, Followed> {
    let mut out = BTreeMap::new();
    let mut filter = String::new();
    let mut cur = Followed::default();
    for line in text.lines() {
        if let Some(f) = line.strip_prefix("Filter: ") {
            filter = f.to_string();
            cur = Followed::default();
        } else if let Some(n) = line.strip_prefix("Node 0: ") {
            cur.nodes.0 = n.to_string();
        } else if let Some(n) = line.strip_prefix("Node 1: ") {
            cur.nodes.1 = n.to_string();
        } else if line.starts_with("=====") {
            if !filter.is_empty() {
                out.insert(std::mem::take(&mut filter), std::mem::take(&mut cur));
            }
        } else if let Some(h) = line.strip_prefix('\t') {
            match tshark_gap(&hex(h)) {
                Some(n) => cur.gaps.push((1, n)),
                None => cur.from1.extend(hex(h)),
            }
        } else if !line.is_empty() && !filter.is_empty() && !line.starts_with("Follow:") {
            match tshark_gap(&hex(line)) {
                Some(n) => cur.gaps.push((0, n)),
                None => cur.from0.extend(hex(line)),
            }
        }
    }
    out
}

fn tshark_streams(path: &Path) -> usize {
    let out = Command::new("tshark")
        .args(["-n", "-r"])
        .arg(path)
        .args(["-T", "fields", "-e", "tcp.stream"])
        .output()
        .expect("tshark runs");
    String::from_utf8_lossy(&out.stdout)
        .split(['\n', ','])
        .filter_map(|s| s.trim().parse::<usize>().ok())
        .max()
        .map_or(0, |m| m + 1)
}

#[test]
fn follow_equals_tshark_on_every_stream_of_several_traces() {
    if !have("tshark") {
        return;
    }
    let mut streams = 0;
    let mut bytes = 0;
    let mut gaps = 0;
    for name in [
        "zeek__http__get-to-ssh-server.pcap",
        "zeek__tunnels__vxlan-encapsulated-http.pcap",
        "zeek__pppoe-over-qinq.pcap",
        "zeek__ldap__gap-data-missing.pcapng",
        "zeek__ipv6-http-atomic-frag.pcap",
        "zeek__smb__smb2.pcap",
        "ndpi__KakaoTalk_talk.pcap",
        "ndpi__sites.pcapng",
        "ndpi__1kxun.pcap",
    ] {
        let path = corpus(name);
        let n = tshark_streams(&path);
        assert!(n > 0, "{name}: no TCP stream");
        let mut cmd = Command::new("tshark");
        cmd.args(["-n", "-q", "-r"]).arg(&path);
        for i in 0..n {
            cmd.args(["-z", &format!("follow,tcp,raw,{i}")]);
        }
        let theirs = parse(&String::from_utf8_lossy(&cmd.output().unwrap().stdout));
        assert_eq!(theirs.len(), n, "{name}: tshark's streams");
        for i in 0..n {
            let out = Command::new(env!("CARGO_BIN_EXE_tracekit"))
                .args(["follow", "--stream", &i.to_string()])
                .arg(&path)
                .output()
                .unwrap();
            assert!(out.status.success(), "{name} stream {i}: {out:?}");
            let mut ours = parse(&String::from_utf8_lossy(&out.stdout));
            let key = format!("tcp.stream eq {i}");
            // Our gaps are reported on stderr, not written into the stream.
            let o = ours.get_mut(&key).unwrap();
            for line in String::from_utf8_lossy(&out.stderr).lines() {
                let words: Vec<&str> = line.split_whitespace().collect();
                if line.ends_with("(a gap)") {
                    o.gaps
                        .push((words[6].parse().unwrap(), words[2].parse().unwrap()));
                }
            }
            let t = &theirs[&key];
            let sorted = |g: &[(u8, u64)]| {
                let mut g = g.to_vec();
                g.sort();
                g
            };
            assert_eq!(sorted(&o.gaps), sorted(&t.gaps), "{name} stream {i}: gaps");
            gaps += o.gaps.len();
            assert_eq!(o.nodes, t.nodes, "{name} stream {i}: nodes");
            assert!(
                o.from0 == t.from0 && o.from1 == t.from1,
                "{name} stream {i}: ours {} + {} bytes, tshark's {} + {}",
                o.from0.len(),
                o.from1.len(),
                t.from0.len(),
                t.from1.len()
            );
            streams += 1;
            bytes += o.from0.len() + o.from1.len();
        }
    }
    assert!(streams > 150, "only {streams} streams");
    assert!(bytes > 1_000_000, "only {bytes} bytes");
    assert!(gaps > 0, "no stream with a gap");
}

#[test]
fn a_stream_that_is_not_there_is_a_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_tracekit"))
        .args(["follow", "--stream", "7"])
        .arg(corpus("zeek__http__get-to-ssh-server.pcap"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no TCP stream 7 (the trace has 1)"), "{err}");
    // The same stream by its endpoints.
    let out = Command::new(env!("CARGO_BIN_EXE_tracekit"))
        .args([
            "follow",
            "--between",
            "130.74.164.231:22",
            "136.216.42.40:44338",
        ])
        .arg(corpus("zeek__http__get-to-ssh-server.pcap"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Node 0: 136.216.42.40:44338"), "{text}");
}
