//! The `tracekit` binary end to end: `info` against capinfos, `convert` against editcap,
//! pipes in and out, damaged input, a closed stdout.

use std::path::Path;
use std::process::{Command, Stdio};

use tracekit::{CreateOptions, LinkType, Meta, Packet, Timestamp, TsResolution};
use tracekit_testdata::{corpus, epoch_ns, have, tshark_frames};

fn tracekit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tracekit"))
}

fn info_json(path: &Path) -> serde_json::Value {
    let out = tracekit()
        .arg("info")
        .arg("--json")
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn info_json_has_exactly_the_documented_keys() {
    let v = info_json(&corpus("libtrace__100_packetsns.pcap"));
    let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    let mut want = vec![
        "file",
        "format",
        "compression",
        "link_types",
        "packets",
        "captured_bytes",
        "wire_bytes",
        "first_ts_ns",
        "last_ts_ns",
        "duration_ns",
        "snaplen",
    ];
    want.sort_unstable();
    assert_eq!(keys, want);
    assert_eq!(v["format"], "pcap");
    assert_eq!(v["compression"], "none");
    assert_eq!(v["link_types"], serde_json::json!(["ETHERNET"]));
    assert_eq!(v["packets"], 100);
    assert_eq!(v["captured_bytes"], 5984);
    assert_eq!(v["wire_bytes"], 30960);
    assert_eq!(v["snaplen"], 65536);
}

#[test]
fn info_agrees_with_capinfos() {
    if !have("capinfos") {
        return;
    }
    for name in [
        "libtrace__vlan.pcap",
        "zeek__http__get-to-ssh-server.pcap",
        "ndpi__nfsv2.pcap",
        "ndpi__1kxun.pcap",
        "zeek__linux_dlt_sll2.pcap",
        "swapbe_nsec__libtrace__100_packetsns.pcap",
        "zeek__tcp__timestamp.pcap",
    ] {
        let path = corpus(name);
        let out = Command::new("capinfos")
            .args(["-T", "-M", "-r", "-l", "-c", "-d", "-a", "-e", "-S"])
            .arg(&path)
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let cols: Vec<&str> = text.trim_end().split('\t').collect();
        // file, snaplen, min, max, packets, data bytes, first, last
        let v = info_json(&path);
        assert_eq!(
            v["snaplen"],
            cols[1].parse::<u64>().unwrap(),
            "{name} snaplen"
        );
        assert_eq!(
            v["packets"],
            cols[4].parse::<u64>().unwrap(),
            "{name} packets"
        );
        // capinfos "data size" sums the original (wire) lengths
        assert_eq!(
            v["wire_bytes"],
            cols[5].parse::<u64>().unwrap(),
            "{name} bytes"
        );
        assert_eq!(v["first_ts_ns"], epoch_ns(cols[6]), "{name} first");
        assert_eq!(v["last_ts_ns"], epoch_ns(cols[7]), "{name} last");
        assert_eq!(
            v["duration_ns"],
            epoch_ns(cols[7]) - epoch_ns(cols[6]),
            "{name} duration"
        );
    }
}

#[test]
fn info_reads_stdin() {
    let file = std::fs::File::open(corpus("libtrace__vlan.pcap")).unwrap();
    let out = tracekit()
        .args(["info", "--json", "-"])
        .stdin(file)
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["packets"], 395);
    assert_eq!(v["file"], "-");
}

#[test]
fn info_on_damage_reports_good_packets_and_fails() {
    let out = tracekit()
        .args(["info", "--json"])
        .arg(corpus("corrupt__vlan_truncated_midheader.pcap"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["packets"], 299);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("packet 300 at byte offset 108284"), "{err}");
    assert!(
        err.contains("record header: 16 bytes needed, 7 present"),
        "{err}"
    );
}

#[test]
fn info_names_unknown_and_missing_files() {
    let out = tracekit()
        .arg("info")
        .arg(corpus("pcapparser__err-eof.bin"))
        .arg("/nonexistent.pcap")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("pcapparser__err-eof.bin: byte offset 0: not a capture format"),
        "{err}"
    );
    assert!(err.contains("/nonexistent.pcap: No such file"), "{err}");
}

#[test]
fn convert_keeps_resolution_and_bytes_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("copy.pcap");
    let input = corpus("swapbe_nsec__libtrace__100_packetsns.pcap");
    let st = tracekit()
        .arg("convert")
        .arg(&input)
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success());
    // Same packets and ns time stamps; written little-endian (native), like libpcap.
    let a = info_json(&input);
    let b = info_json(&out);
    for key in [
        "packets",
        "captured_bytes",
        "wire_bytes",
        "first_ts_ns",
        "last_ts_ns",
        "snaplen",
    ] {
        assert_eq!(a[key], b[key], "{key}");
    }
    let bytes = std::fs::read(&out).unwrap();
    assert_eq!(&bytes[..4], &[0x4d, 0x3c, 0xb2, 0xa1]);
}

/// A nanosecond pcap whose time stamps have sub-microsecond digits.
fn write_ns_trace(path: &Path) {
    let options = CreateOptions {
        ts_resolution: Some(TsResolution::NANO),
        snaplen: Some(65535),
        ..Default::default()
    };
    let mut sink = tracekit::create(path.to_str().unwrap(), &options).unwrap();
    let frame = [0x42u8; 60];
    for i in 0..10u32 {
        let ts = Timestamp::from_nanos(1_700_000_000 + i, 123_456_789 + i);
        sink.write_packet(&Packet::new(&frame, Meta::new(ts, 60, LinkType::ETHERNET)))
            .unwrap();
    }
    sink.finish().unwrap();
}

#[test]
fn convert_to_microseconds_matches_editcap() {
    let dir = tempfile::tempdir().unwrap();
    let ns = dir.path().join("ns.pcap");
    write_ns_trace(&ns);
    let ours = dir.path().join("ours.pcap");
    let out = tracekit()
        .args(["convert", "--ts-resolution", "us"])
        .arg(&ns)
        .arg(&ours)
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("sub-resolution time stamp digits of 10 packet(s)"),
        "{err}"
    );
    let v = info_json(&ours);
    assert_eq!(v["first_ts_ns"], 1_700_000_000_123_456_000u64);
    if have("editcap") {
        let theirs = dir.path().join("theirs.pcap");
        let st = Command::new("editcap")
            .args(["-F", "pcap"])
            .arg(&ns)
            .arg(&theirs)
            .status()
            .unwrap();
        assert!(st.success());
        assert_eq!(
            std::fs::read(&ours).unwrap(),
            std::fs::read(&theirs).unwrap()
        );
    }
}

#[test]
fn convert_micro_to_nano_matches_editcap() {
    if !have("editcap") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let input = corpus("libtrace__100_packets.pcap");
    let ours = dir.path().join("ours.pcap");
    let theirs = dir.path().join("theirs.pcap");
    assert!(
        tracekit()
            .args(["convert", "--ts-resolution", "ns"])
            .arg(&input)
            .arg(&ours)
            .status()
            .unwrap()
            .success()
    );
    assert!(
        Command::new("editcap")
            .args(["-F", "nsecpcap"])
            .arg(&input)
            .arg(&theirs)
            .status()
            .unwrap()
            .success()
    );
    // editcap writes snaplen 65536 for this file where the input says 65535; compare the
    // records, which is what matters.
    assert_eq!(
        std::fs::read(&ours).unwrap()[24..],
        std::fs::read(&theirs).unwrap()[24..]
    );
}

#[test]
fn convert_pipes_both_ways() {
    let input = std::fs::File::open(corpus("ndpi__1kxun.pcap")).unwrap();
    let mut first = tracekit()
        .args(["convert", "-", "-"])
        .stdin(input)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = tracekit()
        .args(["info", "--json", "-"])
        .stdin(first.stdout.take().unwrap())
        .output()
        .unwrap();
    assert!(first.wait().unwrap().success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["packets"], 1723);
}

#[test]
fn convert_of_damaged_input_leaves_a_complete_file_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("good.pcap");
    let o = tracekit()
        .arg("convert")
        .arg(corpus("corrupt__vlan_truncated_midrecord.pcap"))
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(
        err.contains("complete file holding the 199 packets"),
        "{err}"
    );
    assert_eq!(info_json(&out)["packets"], 199);
}

#[test]
fn convert_refuses_to_overwrite_its_input() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.pcap");
    std::fs::copy(corpus("libtrace__vlan.pcap"), &p).unwrap();
    let o = tracekit().arg("convert").arg(&p).arg(&p).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(std::fs::metadata(&p).unwrap().len(), 144457);
}

#[test]
fn closed_stdout_ends_quietly() {
    let mut child = tracekit()
        .arg("convert")
        .arg(corpus("zeek__smb__smb2.pcap"))
        .arg("-")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read a little, then close our end (what `| head -c 100` does).
    let mut stdout = child.stdout.take().unwrap();
    let mut buf = [0u8; 100];
    std::io::Read::read_exact(&mut stdout, &mut buf).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn every_command_has_help_with_an_example() {
    for cmd in [
        "info", "convert", "fields", "dump", "stats", "split", "merge", "ports", "rtstats",
        "capture",
    ] {
        let out = tracekit().args([cmd, "--help"]).output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("Example: `tracekit"), "{cmd}: {text}");
    }
}

#[test]
fn readme_quick_start_runs_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    // The two set-up commands, exactly as the README gives them.
    let run = "cargo run --release -p tracekit-cli -- info samples/sample.pcap";
    assert!(
        readme.contains(run),
        "README quick start changed: update this test"
    );
    assert!(
        readme.contains("./scripts/test"),
        "README test command changed"
    );
    assert!(root.join("scripts/test").exists());
    // What `cargo run ... -- info samples/sample.pcap` runs, from the repository root.
    let out = tracekit()
        .args(["info", "samples/sample.pcap"])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Packets:         400"), "{text}");
    assert!(text.contains("Link types:      ETHERNET (1)"), "{text}");
}

#[test]
fn tshark_reads_what_convert_writes_in_every_format() {
    if !have("tshark") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (input, outputs) in [
        ("libtrace__100_packetsns.pcap", ["out.pcapng", "out.erf"]),
        (
            "zeek__pcapng-multi-interface.pcapng",
            ["out.pcap", "out.erf"],
        ),
        ("erfconv__zeek__q-in-q_ext.erf", ["out.pcap", "out.pcapng"]),
    ] {
        let original = tshark_frames(&corpus(input));
        assert!(!original.is_empty());
        for out_name in outputs {
            let out = dir.path().join(out_name);
            let o = tracekit()
                .arg("convert")
                .arg(corpus(input))
                .arg(&out)
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "{input} -> {out_name}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            let got = tshark_frames(&out);
            assert_eq!(got.len(), original.len(), "{input} -> {out_name}");
            for (i, (a, b)) in original.iter().zip(&got).enumerate() {
                assert_eq!(a.0, b.0, "{input} -> {out_name} frame {}: time", i + 1);
                assert_eq!(a.1, b.1, "{input} -> {out_name} frame {}: length", i + 1);
                // ERF pads truncated packets to 8 bytes (reported by convert)
                assert!(
                    b.2 >= a.2 && b.2 - a.2 < 8,
                    "{input} -> {out_name} frame {}: captured",
                    i + 1
                );
                if !out_name.ends_with(".erf") {
                    assert_eq!(a.2, b.2, "{input} -> {out_name} frame {}: captured", i + 1);
                }
            }
        }
    }
}

#[test]
fn info_for_every_format() {
    for (name, format, packets) in [
        ("zeek__pcapng-multi-interface.pcapng", "pcapng", 6),
        ("libtrace__100_packets.erf", "erf", 100),
        ("ndpi__dtls.pcap", "pcapng", 24),
    ] {
        let v = info_json(&corpus(name));
        assert_eq!(v["format"], format, "{name}");
        assert_eq!(v["packets"], packets, "{name}");
    }
}

#[test]
fn convert_reports_what_the_target_cannot_carry() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rtp.pcap");
    let o = tracekit()
        .arg("convert")
        .arg(corpus("ndpi__rtp.pcapng"))
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success());
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "one summary line: {err}");
    assert!(
        err.contains("could not carry") && err.contains("comments of 2 packet(s)"),
        "{err}"
    );
    // --format forces the output format whatever the name
    let forced = dir.path().join("really-pcapng.pcap");
    let o = tracekit()
        .args(["convert", "--format", "pcapng"])
        .arg(corpus("ndpi__rtp.pcapng"))
        .arg(&forced)
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(info_json(&forced)["format"], "pcapng");
}

#[test]
fn erf_extension_headers_are_named_when_converting() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("qinq.pcap");
    let o = tracekit()
        .arg("convert")
        .arg(corpus("erfconv__zeek__q-in-q_ext.erf"))
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success());
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(
        err.contains("5 record(s) had ERF extension headers"),
        "{err}"
    );
}

#[test]
fn compressed_input_on_stdin() {
    let file = std::fs::File::open(corpus("libtrace__vlan.pcap.bz2")).unwrap();
    let out = tracekit()
        .args(["info", "--json", "-"])
        .stdin(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["compression"].as_str(), v["packets"].as_u64()),
        (Some("bzip2"), Some(395))
    );
}

#[test]
fn convert_compresses_by_name_or_flag_with_checked_levels() {
    let dir = tempfile::tempdir().unwrap();
    let by_name = dir.path().join("a.pcap.zst");
    let o = tracekit()
        .arg("convert")
        .arg(corpus("libtrace__vlan.pcap"))
        .arg(&by_name)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(info_json(&by_name)["compression"], "zstd");
    let by_flag = dir.path().join("b.pcap");
    let o = tracekit()
        .args([
            "convert",
            "--compress",
            "xz",
            "--level",
            "0",
            "--threads",
            "2",
        ])
        .arg(corpus("libtrace__vlan.pcap"))
        .arg(&by_flag)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = info_json(&by_flag);
    assert_eq!(
        (v["compression"].as_str(), v["packets"].as_u64()),
        (Some("xz"), Some(395))
    );
    // gzip has no level 0 (no silent "0 means uncompressed")
    let o = tracekit()
        .args(["convert", "--level", "0"])
        .arg(corpus("libtrace__vlan.pcap"))
        .arg(dir.path().join("c.pcap.gz"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("gzip levels run from 1 to 9"));
}

#[test]
fn closed_stdout_ends_quietly_when_compressing() {
    let mut child = tracekit()
        .args(["convert", "--compress", "gzip", "--threads", "2"])
        .arg(corpus("ndpi__1kxun.pcap"))
        .arg("-")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut buf = [0u8; 10];
    std::io::Read::read_exact(&mut stdout, &mut buf).unwrap();
    assert_eq!(&buf[..2], &[0x1f, 0x8b]);
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn filters_count_what_tcpdump_counts() {
    if !have("tcpdump") {
        return;
    }
    for (file, expr) in [
        ("ndpi__1kxun.pcap", "tcp port 443"),
        ("ndpi__1kxun.pcap", "udp and not port 53"),
        ("zeek__pppoe-over-qinq.pcap", "pppoes and tcp"),
        ("ndpi__sites.pcapng", "tcp[tcpflags] & tcp-syn != 0"),
        ("libtrace__vlan.pcap.gz", "vlan and icmp"),
        ("zeek__linux_dlt_sll2.pcap", "ip6"),
    ] {
        // tcpdump cannot read gzip: it counts on the uncompressed twin
        let plain = file.trim_end_matches(".gz");
        let tcpdump = Command::new("tcpdump")
            .args(["-n", "-r"])
            .arg(corpus(plain))
            .arg(expr)
            .output()
            .unwrap();
        let want = String::from_utf8_lossy(&tcpdump.stdout).lines().count() as u64;
        let out = tracekit()
            .args(["info", "--json", "-f", expr])
            .arg(corpus(file))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{file} `{expr}`: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["packets"].as_u64(), Some(want), "{file} `{expr}`");
    }
}

#[test]
fn convert_with_a_filter_writes_the_packets_tcpdump_writes() {
    if !have("tcpdump") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ours = dir.path().join("ours.pcap");
    let theirs = dir.path().join("theirs.pcap");
    let expr = "tcp and (port 80 or port 443)";
    let o = tracekit()
        .args(["convert", "-f", expr])
        .arg(corpus("ndpi__1kxun.pcap"))
        .arg(&ours)
        .output()
        .unwrap();
    assert!(o.status.success());
    let t = Command::new("tcpdump")
        .args(["-r"])
        .arg(corpus("ndpi__1kxun.pcap"))
        .arg("-w")
        .arg(&theirs)
        .arg(expr)
        .output()
        .unwrap();
    assert!(t.status.success());
    // same records (the file headers differ only in snaplen conventions)
    assert!(std::fs::read(&ours).unwrap()[24..] == std::fs::read(&theirs).unwrap()[24..]);
    let bad = tracekit()
        .args(["info", "-f", "tcp port"])
        .arg(corpus("ndpi__1kxun.pcap"))
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("syntax error"));
}

/// libpcap is loaded at run time: the binary does not link it, works without it, and a
/// filter then fails with a message that names the package to install. The loader is
/// pointed at a library that does not exist (`TRACEKIT_LIBPCAP`), as on a machine
/// without libpcap.
#[test]
fn works_without_libpcap_and_filters_name_the_package() {
    if have("ldd") {
        let out = Command::new("ldd")
            .arg(env!("CARGO_BIN_EXE_tracekit"))
            .output()
            .unwrap();
        let linked = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "ldd failed: {linked}");
        assert!(
            !linked.contains("libpcap"),
            "the binary links libpcap:\n{linked}"
        );
    }
    let missing = std::env::temp_dir().join("tracekit-no-such-dir/libpcap.so.0.8");
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/sample.pcap");
    let out = tracekit()
        .env("TRACEKIT_LIBPCAP", &missing)
        .args(["info", "--json"])
        .arg(&sample)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["packets"], 400);

    let out = tracekit()
        .env("TRACEKIT_LIBPCAP", &missing)
        .args(["info", "-f", "tcp"])
        .arg(&sample)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("libpcap") && err.contains("apt-get install libpcap0.8"),
        "{err}"
    );

    // With the real library the same filter works (where it is installed).
    if have("tcpdump") {
        let out = tracekit()
            .args(["info", "--json", "-f", "tcp"])
            .arg(&sample)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
