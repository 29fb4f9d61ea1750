//! The libtrace 3 tools' equivalents against the tools themselves (Debian's
//! libtrace-tools): `diff` against tracediff, `ends` against traceends, `report` against
//! tracereport, on corpus traces and on copies edited by editcap and traceanon.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use tracekit_testdata::{corpus, have, tshark_fields};

fn tracekit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tracekit"))
}

fn output(cmd: &mut Command) -> Output {
    cmd.output().unwrap()
}

fn json(cmd: &mut Command) -> serde_json::Value {
    let out = output(cmd);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}: {}", String::from_utf8_lossy(&out.stderr)))
}

fn uri(path: &Path) -> String {
    format!("pcapfile:{}", path.display())
}

/// tracediff's count of differing packets (each pair it dumps ends with a line of
/// asterisks) and its exit status.
fn tracediff(a: &Path, b: &Path) -> (u64, Option<i32>) {
    let out = output(Command::new("tracediff").arg(uri(a)).arg(uri(b)));
    let text = String::from_utf8_lossy(&out.stdout);
    let n = text
        .lines()
        .filter(|l| l.starts_with("****************"))
        .count();
    (n as u64, out.status.code())
}

#[test]
fn diff_counts_what_tracediff_counts() {
    if !(have("tracediff") && have("editcap") && have("traceanon")) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let orig = corpus("ndpi__1kxun.pcap");
    let edit = |name: &str, args: &[&str]| {
        let out = dir.path().join(name);
        let st = Command::new("editcap")
            .args(["-F", "pcap"])
            .args(args)
            .arg(&orig)
            .arg(&out)
            .status()
            .unwrap();
        assert!(st.success());
        out
    };
    let shifted = edit("shifted.pcap", &["-t", "0.5"]);
    let snapped = edit("snapped.pcap", &["-s", "60"]);
    let chopped = edit("chopped.pcap", &["-C", "-4"]);
    let anon = dir.path().join("anon.pcap");
    let st = Command::new("traceanon")
        .args(["-s", "-c", "some key"])
        .arg(uri(&orig))
        .arg(uri(&anon))
        .status()
        .unwrap();
    assert!(st.success());
    let packets = 1723u64;
    for (b, time, contents_expected_nonzero) in [
        (&orig, 0, false),
        (&shifted, packets, false),
        (&snapped, 0, true),
        (&chopped, 0, true),
        (&anon, 0, true),
    ] {
        let (theirs, status) = tracediff(&orig, b);
        assert_eq!(theirs > 0, contents_expected_nonzero, "{}", b.display());
        let v = json(tracekit().args(["diff", "--json"]).arg(&orig).arg(b));
        assert_eq!(v["contents"], theirs, "{}: contents differ", b.display());
        assert_eq!(v["time_stamps"], time, "{}", b.display());
        assert_eq!(v["compared"], packets);
        let same = v["same"].as_bool().unwrap();
        let ours = output(tracekit().arg("diff").arg(&orig).arg(b))
            .status
            .code();
        assert_eq!(ours, Some(if same { 0 } else { 1 }));
        // tracediff's status says whether contents differ.
        assert_eq!(status, Some(i32::from(theirs > 0)));
        let v = json(
            tracekit()
                .args(["diff", "--json", "--contents-only"])
                .arg(&orig)
                .arg(b),
        );
        assert_eq!(v["differing"], theirs);
    }
}

#[test]
fn diff_reports_extra_packets_and_damage() {
    let v = json(
        tracekit()
            .args(["diff", "--json", "-m", "0"])
            .arg(corpus("libtrace__vlan.pcap"))
            .arg(corpus("corrupt__vlan_truncated_midrecord.pcap")),
    );
    assert_eq!(v["compared"], 199);
    assert_eq!(v["differing"], 0);
    assert!(v["error"].as_str().unwrap().contains("B: "), "{v}");
    let out = output(
        tracekit()
            .arg("diff")
            .arg(corpus("libtrace__vlan.pcap"))
            .arg(corpus("corrupt__vlan_truncated_midrecord.pcap")),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("packet 200"));
    let v = json(
        tracekit()
            .args(["diff", "--json", "-m", "0"])
            .arg(corpus("libtrace__100_packets.pcap"))
            .arg(corpus("libtrace__5_packets.erf")),
    );
    assert_eq!(v["packets_a"], 100);
    assert_eq!(v["packets_b"], 5);
    let only_a = v["differences"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == "only_in_a")
        .count();
    assert_eq!(only_a, 95);
}

/// traceends' rows (TZ=UTC): address -> [last active, src pkts, src bytes, src payload,
/// dst pkts, dst bytes, dst payload].
fn traceends(path: &Path, mode: &str) -> BTreeMap<String, Vec<String>> {
    let out = output(
        Command::new("traceends")
            .env("TZ", "UTC")
            .args(["-A", mode])
            .arg(uri(path)),
    );
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let p: Vec<String> = l.split_whitespace().map(str::to_string).collect();
            (p.len() == 8).then(|| (p[0].clone(), p[1..].to_vec()))
        })
        .collect()
}

/// Per source address, the sum of a tshark field (ip.len, frame.len) over the frames.
fn tshark_sums(path: &Path, key: &str, value: &str) -> BTreeMap<String, (u64, u64)> {
    let mut sums: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for row in tshark_fields(path, &[key, value]) {
        // The outermost header only (tshark joins inner ones after a comma).
        let k = row[0].split(',').next().unwrap_or("");
        let Some(v) = row[1].split(',').next().and_then(|v| v.parse::<u64>().ok()) else {
            continue;
        };
        if k.is_empty() {
            continue;
        }
        let e = sums.entry(k.to_string()).or_default();
        e.0 += v;
        // What traceends 3 adds for IPv4 senders: the length in network byte order read
        // as a host (little-endian) number.
        e.1 += u64::from((v as u16).swap_bytes());
    }
    sums
}

#[test]
fn ends_counts_equal_traceends() {
    if !(have("traceends") && have("tshark")) {
        return;
    }
    // (file, mode, whether application bytes mean the same: no snaplen-cut transport
    // headers, IPv6 extension headers or UDP lengths that disagree with IP's).
    for (name, mode, payload_same) in [
        ("ndpi__1kxun.pcap", "v4", true),
        ("ndpi__1kxun.pcap", "v6", true),
        ("ndpi__1kxun.pcap", "mac", true),
        ("zeek__dns-edns-ecs.pcap", "v6", true),
        ("libtrace__vlan.pcap", "v4", true),
        ("libtrace__vlan.pcap", "mac", true),
        ("libtrace__100_packets.pcap", "v4", false),
        ("zeek__ipv6-http-atomic-frag.pcap", "v6", false),
    ] {
        let path = corpus(name);
        let theirs = traceends(&path, mode);
        let v = json(tracekit().args(["ends", "--json", "-A", mode]).arg(&path));
        let ours = v["endpoints"].as_array().unwrap();
        assert_eq!(ours.len(), theirs.len(), "{name} {mode}: endpoints");
        let (key, value) = match mode {
            "v4" => ("ip.src", "ip.len"),
            "v6" => ("ipv6.src", "ipv6.plen"),
            _ => ("eth.src", "frame.len"),
        };
        let sums = tshark_sums(&path, key, value);
        for e in ours {
            let addr = e["address"].as_str().unwrap();
            let t = &theirs[addr];
            let n = |i: usize| t[i].parse::<u64>().unwrap();
            let what = format!("{name} {mode} {addr}");
            assert_eq!(e["sent_packets"], n(1), "{what}: sent packets");
            assert_eq!(e["received_packets"], n(4), "{what}: received packets");
            let sent = e["sent_bytes"].as_u64().unwrap();
            let tshark = sums.get(addr).copied().unwrap_or_default();
            match mode {
                "v4" => {
                    assert_eq!(e["received_bytes"], n(5), "{what}: received bytes");
                    assert_eq!(sent, tshark.0, "{what}: sent bytes (tshark)");
                    // libtrace 3 adds IPv4 senders' lengths byte-swapped.
                    assert_eq!(n(2), tshark.1, "{what}: traceends' sent bytes");
                }
                "v6" => {
                    assert_eq!(e["received_bytes"], n(5), "{what}: received bytes");
                    assert_eq!(sent, n(2), "{what}: sent bytes");
                    assert_eq!(sent, tshark.0 + 40 * n(1), "{what}: sent bytes (tshark)");
                }
                // traceends counts IP lengths (0 for non-IP frames) for MAC addresses;
                // ours are wire lengths, as tshark's frame.len.
                _ => assert_eq!(sent, tshark.0, "{what}: sent bytes (tshark)"),
            }
            if payload_same {
                assert_eq!(e["sent_payload"], n(3), "{what}: sent payload");
                assert_eq!(e["received_payload"], n(6), "{what}: received payload");
            }
            // Last seen, to the second, as traceends prints it.
            let secs = e["last_ns"].as_u64().unwrap() / 1_000_000_000;
            let (d, m, hms) = day_month_time(secs);
            assert_eq!(t[0], format!("{d:02}/{m:02},{hms}"), "{what}: last seen");
        }
    }
}

/// (day, month, "HH:MM:SS") of a Unix time, UTC.
fn day_month_time(secs: u64) -> (u64, u64, String) {
    let days = secs / 86_400;
    let sod = secs % 86_400;
    // Civil from days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u64;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u64;
    (
        d,
        m,
        format!("{:02}:{:02}:{:02}", sod / 3600, sod % 3600 / 60, sod % 60),
    )
}
