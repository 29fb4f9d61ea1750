//! `tracekit capture` end to end on a veth pair between two namespaces the test creates
//! (and removes): counts, fan-out members, Ctrl-C, rotation, live counters, and config
//! errors. The live parts need root; without it they say so and pass.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tracekit_afpacket::{Injector, enter_netns};
use tracekit_testdata::builder::{Ethernet, Ipv4, PacketBuilder, Udp};
use tracekit_testdata::netns::{VethPair, is_root};

fn tracekit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tracekit"))
}

/// The test namespaces, with the commands the tests run in them.
struct Pair(VethPair);

impl Pair {
    fn new(tag: &str) -> Pair {
        Pair(VethPair::new(&format!("c{tag}")))
    }

    /// Starts `tracekit capture -i vb ARGS` inside namespace b and waits until it runs.
    fn capture(&self, args: &[&str]) -> Child {
        let mut all = vec!["capture", "-i", "vb"];
        all.extend_from_slice(args);
        self.tracekit(&all)
    }

    /// Starts `tracekit ARGS` inside namespace b and waits until it runs.
    fn tracekit(&self, args: &[&str]) -> Child {
        let child = Command::new("ip")
            .args(["netns", "exec", &self.0.b])
            .arg(env!("CARGO_BIN_EXE_tracekit"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(500));
        child
    }

    /// Sends `n` UDP frames over 64 flows on va, numbered from `first`.
    fn send(&self, first: u32, n: u32) {
        let ns = self.0.a.clone();
        std::thread::spawn(move || {
            enter_netns(&ns).unwrap();
            let inj = Injector::open("va").unwrap();
            for i in first..first + n {
                inj.send(&frame(i)).unwrap();
            }
        })
        .join()
        .unwrap();
    }
}

/// UDP/IPv4 frame number `i` (flow `i % 64`, payload starting with `i`).
fn frame(i: u32) -> Vec<u8> {
    let mut payload = [0u8; 64];
    payload[..4].copy_from_slice(&i.to_be_bytes());
    PacketBuilder::new()
        .ethernet(Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]))
        .ipv4(Ipv4::new([10, 0, 0, 1], [10, 0, 1, (i % 64) as u8]))
        .udp(Udp::new(20_000 + (i % 64) as u16, 53))
        .payload(&payload)
        .build()
}

/// The frame numbers in a trace, in file order.
fn numbers(path: &Path) -> Vec<u32> {
    let mut s = tracekit::open(path.to_str().unwrap()).unwrap();
    let mut v = Vec::new();
    while let Some(p) = s.next_packet().unwrap() {
        let d = p.data();
        if d.len() == 106 && d[6..12] == [2, 0, 0, 0, 0, 1] {
            v.push(u32::from_be_bytes([d[42], d[43], d[44], d[45]]));
        }
    }
    v
}

#[test]
fn capture_writes_every_packet_with_one_or_two_members() {
    if !is_root() {
        return;
    }
    let pair = Pair::new("m");
    let dir = tempfile::tempdir().unwrap();
    for (members, name) in [("1", "one.pcap"), ("2", "two.pcapng.gz")] {
        let out = dir.path().join(name);
        let child = pair.capture(&[
            "--members",
            members,
            "-c",
            "3000",
            "-f",
            "udp port 53",
            "-w",
            out.to_str().unwrap(),
        ]);
        pair.send(0, 3000);
        let done = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&done.stderr);
        assert!(done.status.success(), "{err}");
        assert!(err.contains("3000 packets captured"), "{err}");
        assert!(err.contains("0 dropped by the kernel"), "{err}");
        let mut got = numbers(&out);
        if members == "1" {
            assert_eq!(got, (0..3000).collect::<Vec<_>>(), "one member keeps order");
        } else {
            assert!(
                err.contains("member 0:") && err.contains("member 1:"),
                "{err}"
            );
            got.sort_unstable();
            assert_eq!(got, (0..3000).collect::<Vec<_>>());
        }
    }
}

#[test]
fn ctrl_c_completes_the_output_and_prints_the_counters() {
    if !is_root() {
        return;
    }
    let pair = Pair::new("c");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.pcapng");
    let child = pair.capture(&["--stats-interval", "0.2", "-w", out.to_str().unwrap()]);
    pair.send(0, 500);
    std::thread::sleep(Duration::from_millis(600));
    let pid = child.id().to_string();
    // `ip netns exec` runs the command in its place: the pid is tracekit's.
    Command::new("kill").args(["-INT", &pid]).status().unwrap();
    let done = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "{err}");
    assert!(err.contains("500 packets captured"), "{err}");
    // The live counters were printed along the way too.
    assert!(err.matches("packets captured").count() >= 2, "{err}");
    assert_eq!(numbers(&out), (0..500).collect::<Vec<_>>());
}

#[test]
fn rotation_starts_a_file_per_interval() {
    if !is_root() {
        return;
    }
    let pair = Pair::new("g");
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("r.pcap");
    let child = pair.capture(&["-G", "1", "-c", "400", "-w", prefix.to_str().unwrap()]);
    pair.send(0, 200);
    std::thread::sleep(Duration::from_millis(1100));
    pair.send(200, 200);
    let done = child.wait_with_output().unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let mut files: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 2, "{files:?}");
    let all: Vec<u32> = files.iter().flat_map(|f| numbers(f)).collect();
    assert_eq!(all, (0..400).collect::<Vec<_>>());
    assert!(
        files[0]
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("r-000000")
    );
}

#[test]
fn every_reading_command_takes_a_live_interface() {
    if !is_root() {
        return;
    }
    let pair = Pair::new("u");
    // dump -c ends by itself after the third packet.
    let dump = pair.tracekit(&["dump", "-c", "3", "afpacket:vb"]);
    pair.send(0, 3);
    let done = dump.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&done.stdout);
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert_eq!(text.matches("Packet ").count(), 3, "{text}");
    assert!(text.contains("UDP       20000 > 53"), "{text}");
    // fields and info run until Ctrl-C, then print what they saw.
    let fields = pair.tracekit(&[
        "fields",
        "-e",
        "frame.number",
        "-e",
        "udp.srcport",
        "-f",
        "udp",
        "ring:vb",
    ]);
    let info = pair.tracekit(&["info", "--json", "afpacket:vb"]);
    pair.send(0, 10);
    std::thread::sleep(Duration::from_millis(300));
    for child in [&fields, &info] {
        Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
    }
    let fields = fields.wait_with_output().unwrap();
    assert!(
        fields.status.success(),
        "{}",
        String::from_utf8_lossy(&fields.stderr)
    );
    let lines: Vec<String> = String::from_utf8_lossy(&fields.stdout)
        .lines()
        .map(String::from)
        .collect();
    let want: Vec<String> = (0..10u16)
        .map(|i| format!("{}\t{}", i + 1, 20_000 + i))
        .collect();
    assert_eq!(lines, want);
    let info = info.wait_with_output().unwrap();
    assert!(
        info.status.success(),
        "{}",
        String::from_utf8_lossy(&info.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    assert_eq!(v["packets"], 10);
    assert_eq!(v["format"], "afpacket");
}

#[test]
fn config_and_environment_errors_are_reported_before_capturing() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("bad.conf");
    std::fs::write(&conf, "def_group = 3\nfanout@3 = hash|sideways\n").unwrap();
    let out = tracekit()
        .args(["capture", "-i", "lo", "-w", "/dev/null", "--format", "pcap"])
        .env("TRACEKIT_CONFIG", &conf)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.conf:2: unknown fan-out flag 'sideways'"),
        "{err}"
    );
    let out = tracekit()
        .args(["capture", "-i", "lo", "-w", "/dev/null", "--format", "pcap"])
        .env("TRACEKIT_GROUP", "many")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("TRACEKIT_GROUP=many"), "{err}");
    let out = tracekit()
        .args([
            "capture",
            "-i",
            "lo",
            "--fanout",
            "hash|rollover|rollover",
            "-w",
            "x.pcap",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("given twice"));
}

#[test]
fn ports_and_stats_on_a_live_interface_spread_over_fanout_members() {
    if !is_root() {
        return;
    }
    let pair = Pair::new("f");
    // The same frames as a file: the reference figures.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("frames.pcap");
    let mut sink =
        tracekit::create(file.to_str().unwrap(), &tracekit::CreateOptions::default()).unwrap();
    for i in 0..300u32 {
        let f = frame(i);
        let meta = tracekit::Meta::new(
            tracekit::Timestamp::from_nanos(1, 0),
            f.len() as u32,
            tracekit::LinkType::ETHERNET,
        );
        sink.write_packet(&tracekit::Packet::new(&f, meta)).unwrap();
    }
    sink.finish().unwrap();
    let reference = |args: &[&str]| -> serde_json::Value {
        let out = tracekit().args(args).arg(&file).output().unwrap();
        assert!(out.status.success());
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let want_ports = reference(&["ports", "--json", "-f", "udp"]);
    let want_stats = reference(&["stats", "--json", "-f", "udp port 53"]);
    let ports = pair.tracekit(&[
        "ports",
        "--json",
        "-f",
        "udp",
        "--threads",
        "3",
        "--stats",
        "afpacket:vb",
    ]);
    let stats = pair.tracekit(&[
        "stats",
        "--json",
        "-f",
        "udp port 53",
        "--threads",
        "2",
        "afpacket:vb",
    ]);
    pair.send(0, 300);
    std::thread::sleep(Duration::from_millis(500));
    for child in [&ports, &stats] {
        Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
    }
    let ports = ports.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&ports.stderr);
    assert!(ports.status.success(), "{stderr}");
    // Three members, each with its own share of the 64 flows.
    assert_eq!(stderr.matches("  worker ").count(), 3, "{stderr}");
    assert!(
        stderr.contains("each reading a member of its own"),
        "{stderr}"
    );
    let got: serde_json::Value = serde_json::from_slice(&ports.stdout).unwrap();
    for key in [
        "packets",
        "attributed_packets",
        "attributed_bytes",
        "checksum",
        "ports",
    ] {
        assert_eq!(got[key], want_ports[key], "ports {key}");
    }
    let stats = stats.wait_with_output().unwrap();
    assert!(
        stats.status.success(),
        "{}",
        String::from_utf8_lossy(&stats.stderr)
    );
    let got: serde_json::Value = serde_json::from_slice(&stats.stdout).unwrap();
    let (mut got, mut want) = (got, want_stats);
    for v in [&mut got, &mut want] {
        v.as_object_mut().unwrap().remove("file");
    }
    assert_eq!(got, want);
}
