//! The libtrace 3 tools' equivalents against the tools themselves (Debian's
//! libtrace-tools): `diff` against tracediff, `ends` against traceends, `report` against
//! tracereport, on corpus traces and on copies edited by editcap and traceanon.

use std::path::Path;
use std::process::{Command, Output};

use tracekit_testdata::{corpus, have};

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
