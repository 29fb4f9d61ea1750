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

/// tracereport's `.rpt` files for `path` (it writes them into its working directory):
/// file name -> text.
fn tracereport(path: &Path) -> BTreeMap<String, String> {
    let dir = tempfile::tempdir().unwrap();
    let out = output(
        Command::new("tracereport")
            .current_dir(dir.path())
            .arg(uri(path)),
    );
    assert!(out.status.success());
    std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read_to_string(e.path()).unwrap(),
            )
        })
        .collect()
}

/// The rows of a tracereport table: key -> (bytes, packets) summed over directions,
/// under the current `Protocol: N` heading for ports.rpt (key `N/name`).
fn rpt_table(text: &str) -> BTreeMap<String, (u64, u64)> {
    let mut rows: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let (mut key, mut heading) = (String::new(), String::new());
    for l in text.lines() {
        if let Some(p) = l.strip_prefix("Protocol: ") {
            heading = p.split_whitespace().next().unwrap().to_string() + "/";
            continue;
        }
        let parts: Vec<&str> = l.split('\t').collect();
        if parts.len() != 3 || !["Outbound", "Inbound", "Unknown"].contains(&parts[1].trim()) {
            continue;
        }
        let k = parts[0].trim().trim_end_matches([':', '|']).trim();
        if !k.is_empty() {
            key = format!("{heading}{k}");
        }
        let nums: Vec<u64> = parts[2]
            .split_whitespace()
            .map(|n| n.parse().unwrap())
            .collect();
        let e = rows.entry(key.clone()).or_default();
        e.0 += nums[0];
        e.1 += nums[1];
    }
    rows.retain(|_, v| v.1 > 0);
    rows
}

/// The first service name /etc/services gives each (port, protocol), as getservbyport
/// answers: "tcp/http" -> 80.
fn services() -> BTreeMap<String, u16> {
    let text = std::fs::read_to_string("/etc/services").unwrap_or_default();
    let mut names = BTreeMap::new();
    let mut seen = std::collections::BTreeSet::new();
    for l in text.lines() {
        let l = l.split('#').next().unwrap();
        let mut f = l.split_whitespace();
        let (Some(name), Some(pp)) = (f.next(), f.next()) else {
            continue;
        };
        let Some((port, proto)) = pp.split_once('/') else {
            continue;
        };
        let port: u16 = port.parse().unwrap();
        if seen.insert((port, proto.to_string())) {
            names.insert(format!("{proto}/{name}"), port);
        }
    }
    names
}

fn values(v: &serde_json::Value, family: &str) -> Vec<(String, u64, u64)> {
    v[family]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let key = match &r["key"] {
                serde_json::Value::String(s) => s.clone(),
                k => k.to_string(),
            };
            (
                key,
                r["packets"].as_u64().unwrap(),
                r["bytes"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn report_counts_equal_tracereport() {
    if !have("tracereport") {
        return;
    }
    let services = services();
    for name in [
        "ndpi__1kxun.pcap",
        "libtrace__vlan.pcap",
        "zeek__dns-edns-ecs.pcap",
    ] {
        let path = corpus(name);
        let rpt = tracereport(&path);
        let v = json(tracekit().args(["report", "--json"]).arg(&path));
        // libtrace 3 counts 4 bytes more per Ethernet frame than the wire length the
        // pcap records: it assumes a frame check sequence the capture does not have.
        let theirs_bytes = |packets: u64, bytes: u64| bytes + 4 * packets;
        let check_some = |family: &str,
                          table: &BTreeMap<String, (u64, u64)>,
                          key: &dyn Fn(&str) -> String,
                          keep: &dyn Fn(&str) -> bool| {
            let mut ours = values(&v, family);
            ours.retain(|(k, _, _)| keep(k));
            assert_eq!(
                ours.len(),
                table.len(),
                "{name} {family}: rows {ours:?} vs {table:?}"
            );
            for (k, packets, bytes) in ours {
                let t = table
                    .get(&key(&k))
                    .unwrap_or_else(|| panic!("{name} {family}: {k} missing in {table:?}"));
                assert_eq!(
                    (theirs_bytes(packets, bytes), packets),
                    *t,
                    "{name} {family} {k}"
                );
            }
        };
        let check =
            |family: &str, table: &BTreeMap<String, (u64, u64)>, key: &dyn Fn(&str) -> String| {
                check_some(family, table, key, &|_| true)
            };
        let number = |k: &str| k.to_string();
        check("ttl", &rpt_table(&rpt["ttl.rpt"]), &number);
        check("tos", &rpt_table(&rpt["tos.rpt"]), &number);
        // tracereport prints segment sizes below 2048 only.
        check_some(
            "segment_sizes",
            &rpt_table(&rpt["tcpseg.rpt"]),
            &number,
            &|k| k.parse::<u32>().unwrap() < 2048,
        );
        let protocol_names: BTreeMap<String, String> = v["protocols"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["key"].to_string(),
                    r["name"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        check("protocols", &rpt_table(&rpt["protocol.rpt"]), &|k| {
            protocol_names[k].clone()
        });
        // Ports: tracereport names a port by /etc/services where it can.
        let mut ports = BTreeMap::new();
        for (k, val) in rpt_table(&rpt["ports.rpt"]) {
            let (proto, port) = k.split_once('/').unwrap();
            let pname = match proto {
                "1" => "icmp",
                "6" => "tcp",
                "17" => "udp",
                p => p,
            };
            let port = port
                .parse::<u16>()
                .ok()
                .or_else(|| services.get(&format!("{pname}/{port}")).copied());
            ports.insert(format!("[{proto},{}]", port.unwrap()), val);
        }
        check("ports", &ports, &|k| k.replace(' ', ""));
        // ECN: tracereport tests only the 0x02 bit of IPv4's TOS byte.
        let ecn = values(&v, "ecn_ipv4");
        let with_bit = ecn[2].1 + ecn[3].1;
        assert!(
            rpt["ecn.rpt"].contains(&format!("Total ECN: {with_bit}\n")),
            "{name}: {}",
            rpt["ecn.rpt"]
        );
        // Network layer: the rows both name (tracereport also lists 802.3 length fields).
        let nlp = rpt_table(&rpt["nlp.rpt"]);
        for (k, packets, bytes) in values(&v, "network") {
            let label = match k.as_str() {
                "2048" => "IPv4",
                "34525" => "IPv6",
                "2054" => "ARP",
                _ => continue,
            };
            assert_eq!(
                nlp.get(label),
                Some(&(theirs_bytes(packets, bytes), packets)),
                "{name} nlp {label}"
            );
        }
        // TCP options: occurrences per kind.
        let names = [
            (2, "MSS"),
            (3, "Winscale"),
            (4, "SACK Perm"),
            (5, "SACK Info"),
            (8, "Timestamp"),
        ];
        let opts = rpt_table(&rpt["tcpopt.rpt"]);
        for (kind, times) in v["tcp_options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p[0].as_u64().unwrap(), p[1].as_u64().unwrap()))
        {
            let label = names
                .iter()
                .find(|(k, _)| *k == kind)
                .map(|(_, n)| *n)
                .unwrap();
            assert_eq!(
                opts.get(label).map(|o| o.1),
                Some(times),
                "{name} tcp option {label}"
            );
        }
        // Misc: packets, start and end to 1e-4 s.
        let misc = &rpt["misc.rpt"];
        assert!(misc.contains(&format!("Total Packets: {}\n", v["packets"])));
        let secs = |ns: &serde_json::Value| format!("{:.4}", ns.as_u64().unwrap() as f64 / 1e9);
        assert!(
            misc.contains(&format!("Start time: {} (", secs(&v["first_ns"]))),
            "{misc}"
        );
        assert!(
            misc.contains(&format!("End time: {} (", secs(&v["last_ns"]))),
            "{misc}"
        );
        // SYN options: tracereport's percentages, of SYNs (and SYN/ACKs) with option
        // space, by its categories.
        let syn = &rpt["tcpopt_syn.rpt"];
        let sets = v["syn_options"].as_array().unwrap();
        let spaceless = &v["syn_without_option_space"];
        for (col, field) in [(1, "syn"), (2, "synack")] {
            let total: u64 = sets.iter().map(|s| s[field].as_u64().unwrap()).sum::<u64>()
                - spaceless[col - 1].as_u64().unwrap();
            let share = |want: &[&str]| {
                let n: u64 = sets
                    .iter()
                    .filter(|s| {
                        let mut got: Vec<&str> = s["options"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|o| o.as_str().unwrap())
                            .collect();
                        got.sort_unstable();
                        let mut w = want.to_vec();
                        w.sort_unstable();
                        got == w
                    })
                    .map(|s| s[field].as_u64().unwrap())
                    .sum();
                n as f64 * 100.0 / total.max(1) as f64
            };
            for (label, set) in [
                ("M Only", &["MSS"][..]),
                ("T Only", &["TS"]),
                ("M and S", &["MSS", "SACK"]),
                ("M and W", &["MSS", "WS"]),
                ("M, S and W", &["MSS", "SACK", "WS"]),
                ("M, T", &["MSS", "TS"]),
                ("M, S, W and T", &["MSS", "SACK", "WS", "TS"]),
            ] {
                let line = syn
                    .lines()
                    .find(|l| l.starts_with(label) && l[label.len()..].starts_with([' ', '\t']))
                    .unwrap();
                let got = line.split('\t').nth(col).unwrap();
                // With no SYN at all, tracereport divides 0 by 0.
                let want = if total == 0 {
                    "-nan%".to_string()
                } else {
                    format!("{:.2}%", share(set))
                };
                assert_eq!(got, want, "{name} {field} {label}");
            }
        }
    }
}

#[test]
fn report_html_page_loads_in_a_headless_browser_with_its_plots() {
    if !have("chromium") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    let out = output(
        tracekit()
            .args(["report", "--html"])
            .arg(&page)
            .arg(corpus("ndpi__1kxun.pcap"))
            .arg(corpus("zeek__dns-edns-ecs.pcap")),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: nothing to fetch.
    for outside in ["src=", "href=", "<script", "url("] {
        assert!(
            !html.contains(outside),
            "the page refers to something outside: {outside}"
        );
    }
    let chromium = |args: &[&str]| {
        output(
            Command::new("chromium")
                .args([
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--hide-scrollbars",
                ])
                .args(args)
                .arg(format!("file://{}", page.display())),
        )
    };
    // The DOM the browser built: every plot is an SVG element with drawn content.
    let dom = chromium(&["--dump-dom"]);
    assert!(dom.status.success());
    let dom = String::from_utf8_lossy(&dom.stdout);
    for id in ["traffic", "protocols", "sizes", "ports", "talkers"] {
        let at = dom
            .find(&format!("<figure id=\"{id}\""))
            .unwrap_or_else(|| panic!("plot {id} missing"));
        let figure = &dom[at..at + dom[at..].find("</figure>").unwrap()];
        assert!(figure.contains("<svg"), "plot {id} has no SVG");
        assert!(
            figure.matches("<rect").count() + figure.matches("<polyline").count() > 2,
            "plot {id} is empty"
        );
    }
    assert!(dom.contains("tcp/80"), "top ports are labelled");
    // And it renders: a screenshot of the page is a real image.
    let shot = dir.path().join("shot.png");
    let st = chromium(&[
        "--window-size=900,2400",
        &format!("--screenshot={}", shot.display()),
    ]);
    assert!(st.status.success());
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    assert!(png.len() > 20_000, "screenshot of {} bytes", png.len());
}

#[test]
fn ends_and_report_keep_the_figures_before_damage() {
    let damaged = corpus("corrupt__vlan_truncated_midrecord.pcap");
    for args in [&["ends", "--json"][..], &["report", "--json"]] {
        let out = output(tracekit().args(args).arg(&damaged));
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("packet 200") && err.contains("199 packets"),
            "{err}"
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(v["error"].as_str().unwrap().contains("packet 200"));
    }
    let v = json(tracekit().args(["report", "--json"]).arg(&damaged));
    assert_eq!(v["packets"], 199);
}

#[test]
fn top_once_over_a_whole_file_counts_what_traceends_counts() {
    if !have("traceends") {
        return;
    }
    let path = corpus("libtrace__vlan.pcap");
    let theirs = traceends(&path, "v4");
    let v = json(
        tracekit()
            .args([
                "top",
                "--once",
                "--json",
                "--by",
                "endpoints",
                "-n",
                "1000",
                "-i",
                "1000000000",
            ])
            .arg(&path),
    );
    let top = v["top"].as_array().unwrap();
    assert_eq!(top.len(), theirs.len());
    assert_eq!(v["distinct"], theirs.len());
    for e in top {
        let t = &theirs[e["key"].as_str().unwrap()];
        let n = |i: usize| t[i].parse::<u64>().unwrap();
        // traceends' received bytes are IP lengths; top's are wire lengths.
        assert_eq!(e["packets"], n(1) + n(4), "{e}");
    }
    // Busiest first.
    let bytes: Vec<u64> = top.iter().map(|e| e["bytes"].as_u64().unwrap()).collect();
    assert!(bytes.windows(2).all(|w| w[0] >= w[1]));
    // Intervals: one object per interval with traffic, their packets adding up.
    let out = output(tracekit().args(["top", "--json", "-i", "1"]).arg(&path));
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.len() > 1);
    assert_eq!(
        lines
            .iter()
            .map(|l| l["packets"].as_u64().unwrap())
            .sum::<u64>(),
        395
    );
}

#[test]
fn top_draws_its_table_in_a_terminal_and_quits_on_q() {
    if !have("script") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("typescript");
    let cmd = format!(
        "stty rows 30 cols 110; {} top -n 5 {}",
        env!("CARGO_BIN_EXE_tracekit"),
        corpus("ndpi__1kxun.pcap").display()
    );
    let mut child = Command::new("script")
        .args(["-qfc", &cmd])
        .arg(&log)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(3));
    use std::io::Write as _;
    child.stdin.as_mut().unwrap().write_all(b"q").unwrap();
    let status = child.wait().unwrap();
    assert!(status.success());
    // The screen's text: escape sequences (cursor moves, styles) become spaces.
    let raw = String::from_utf8_lossy(&std::fs::read(&log).unwrap()).into_owned();
    let mut text = String::new();
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
            text.push(' ');
        } else {
            text.push(c);
        }
    }
    let screen = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        screen.contains("tracekit top: "),
        "no table drawn: {screen}"
    );
    assert!(screen.contains("q: quit"));
    assert!(screen.contains("192.168.2.126"));
}

/// (µs time stamp, wire length, bytes) of every packet of a classic pcap file (any
/// compression tracekit reads), with its link type.
fn pcap_rows(path: &Path) -> (u32, Vec<(u64, u32, Vec<u8>)>) {
    let mut s = tracekit::open(path.to_str().unwrap()).unwrap();
    let mut rows = Vec::new();
    let mut link = 0;
    while let Some(p) = tracekit::CaptureSource::next_packet(&mut s).unwrap() {
        link = p.link_type().0;
        rows.push((
            p.ts().as_unix_nanos() / 1000,
            p.wire_len(),
            p.data().to_vec(),
        ));
    }
    (link, rows)
}

#[test]
fn legacy_dag_files_read_as_traceconvert_converts_them() {
    if !have("traceconvert") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for kind in ["atm", "eth", "pos"] {
        let input = corpus(&format!("libtrace__legacy{kind}.gz"));
        let theirs_path = dir.path().join(format!("{kind}.pcap"));
        let st = Command::new("traceconvert")
            .arg(format!("legacy{kind}:{}", input.display()))
            .arg(uri(&theirs_path))
            .status()
            .unwrap();
        assert!(st.success());
        let (their_link, theirs) = pcap_rows(&theirs_path);
        let mut ours = tracekit::open(&format!("legacy{kind}:{}", input.display())).unwrap();
        let mut n = 0;
        while let Some(p) = tracekit::CaptureSource::next_packet(&mut ours).unwrap() {
            let (ts, wire, bytes) = &theirs[n];
            n += 1;
            let what = format!("legacy{kind} packet {n}");
            assert_eq!(p.ts().as_unix_nanos() / 1000, *ts, "{what}: time stamp");
            let data = p.data();
            match kind {
                // libtrace 3 writes one byte past the 48-byte cell payload, counts it in
                // the wire length, and stores the DLT number 11 where pcap wants
                // LINKTYPE_ATM_RFC1483 (100).
                "atm" => {
                    assert_eq!((p.link_type().0, their_link), (100, 11));
                    assert_eq!(
                        (data.len(), bytes.len(), p.wire_len(), *wire),
                        (48, 49, 48, 49),
                        "{what}"
                    );
                    assert_eq!(data, &bytes[..48], "{what}");
                }
                // libtrace 3 writes the whole 64-byte record's length from where the
                // frame starts: 10 bytes past the record.
                "eth" => {
                    assert_eq!((p.link_type().0, their_link), (1, 1));
                    assert_eq!((data.len(), bytes.len()), (54, 64), "{what}");
                    assert_eq!(data, &bytes[..54], "{what}");
                    assert_eq!(p.wire_len(), *wire, "{what}");
                }
                // The same for PoS: up to 64 bytes from where the frame starts, 16 bytes
                // past the record when the frame is longer than the 48 captured.
                _ => {
                    assert_eq!((p.link_type().0, their_link), (50, 50));
                    assert_eq!(data.len(), (*wire as usize).min(48), "{what}");
                    assert_eq!(bytes.len(), (*wire as usize).min(64), "{what}");
                    assert_eq!(data, &bytes[..data.len()], "{what}");
                    assert_eq!(p.wire_len(), *wire, "{what}");
                }
            }
        }
        assert_eq!(n, theirs.len(), "legacy{kind}: packets");
        assert_eq!(n, 100);
    }
    // Named, never guessed: the same file read without a prefix is not taken for ERF.
    let out = output(tracekit().arg("info").arg(corpus("libtrace__legacyeth.gz")));
    assert_eq!(out.status.code(), Some(1));
    // A file cut inside a record: the whole records, then an error naming the record.
    let raw = {
        let mut s = tracekit::open(&format!(
            "legacyeth:{}",
            corpus("libtrace__legacyeth.gz").display()
        ))
        .unwrap();
        let mut n = 0;
        while tracekit::CaptureSource::next_packet(&mut s)
            .unwrap()
            .is_some()
        {
            n += 1;
        }
        n
    };
    assert_eq!(raw, 100);
    let cut = dir.path().join("cut.raw");
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2_free_gunzip(&corpus("libtrace__legacyeth.gz")),
        &mut bytes,
    )
    .unwrap();
    std::fs::write(&cut, &bytes[..64 * 7 + 30]).unwrap();
    let out = output(
        tracekit()
            .arg("info")
            .arg(format!("legacyeth:{}", cut.display())),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("packet 8"), "{err}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("7"),
        "the 7 whole records are counted"
    );
    // Read only.
    let out = output(
        tracekit()
            .arg("convert")
            .arg(corpus("libtrace__100_packets.pcap"))
            .arg(format!("legacyeth:{}", dir.path().join("x").display())),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not write"));
}

/// The decompressed bytes of a gzip file, by `gzip -dc`.
fn flate2_free_gunzip(path: &Path) -> std::io::Cursor<Vec<u8>> {
    let out = output(Command::new("gzip").arg("-dc").arg(path));
    std::io::Cursor::new(out.stdout)
}
