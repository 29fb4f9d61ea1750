//! What the commands that write (`convert`, `merge`, `split`) promise about their
//! outputs: an input is never overwritten under any name; every packet is kept by
//! default (time stamps rounded and counted) and `--exact-timestamps` refuses with one
//! message; Ctrl-C and SIGTERM complete the output and exit with 130; a full disk
//! leaves a file holding exactly the packets reported; `-s 0` keeps whole packets;
//! absurd `--dedup-window` and `--threads` are refused, not allocated; many pcapng
//! interfaces convert.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use tracekit::{CreateOptions, LinkType, Meta, Packet, Timestamp};
use tracekit_testdata::{corpus, have, manifest, oracles_required};

fn tracekit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tracekit"))
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Reads a trace whole: its packet count; panics on damage (so a cut record fails).
fn count(path: &Path) -> u64 {
    let mut source = tracekit::open(s(path)).unwrap();
    let mut n = 0;
    while source
        .next_packet()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .is_some()
    {
        n += 1;
    }
    n
}

/// capinfos' packet count, when capinfos is there; it must read the file without error.
fn capinfos_count(path: &Path) -> Option<u64> {
    if !have("capinfos") {
        return None;
    }
    let out = Command::new("capinfos")
        .args(["-c", "-M"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "capinfos {}: {}",
        path.display(),
        stderr(&out)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.contains("Number of packets"))?;
    line.split_whitespace().last()?.parse().ok()
}

/// A pcap of `n` 300-byte packets with µs time stamps.
fn write_trace(path: &Path, n: u32) {
    let mut sink = tracekit::create(s(path), &CreateOptions::default()).unwrap();
    let mut frame = [0u8; 300];
    for i in 0..n {
        frame[..4].copy_from_slice(&i.to_be_bytes());
        let ts = Timestamp::from_nanos(1_700_000_000 + i / 1000, (i % 1000) * 1000);
        sink.write_packet(&Packet::new(&frame, Meta::new(ts, 300, LinkType::ETHERNET)))
            .unwrap();
    }
    sink.finish().unwrap();
}

/// Runs and asserts that the output names the same-file refusal and exits 1.
fn refused(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{cmd:?}: {err}");
    assert!(err.contains("refusing to overwrite"), "{cmd:?}: {err}");
}

#[test]
fn an_input_is_never_overwritten_under_another_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("x.pcap");
    std::fs::copy(corpus("libtrace__100_packets.pcap"), &input).unwrap();
    let original = std::fs::read(&input).unwrap();
    let hard = d.join("hard.pcap");
    std::fs::hard_link(&input, &hard).unwrap();
    let soft = d.join("soft.pcap");
    std::os::unix::fs::symlink(&input, &soft).unwrap();

    for out in [&input, &hard, &soft] {
        refused(tracekit().arg("convert").arg(&input).arg(out));
        refused(tracekit().args(["merge", "-w"]).arg(out).arg(&input));
        // The same file as a second merge input, named through the link.
        refused(
            tracekit()
                .args(["merge", "-w"])
                .arg(out)
                .arg(corpus("libtrace__5_packets.erf"))
                .arg(format!("pcap:{}", s(&input))),
        );
    }
    // /dev/fd/N open on the input (appending, so that opening it destroys nothing).
    let bin = env!("CARGO_BIN_EXE_tracekit");
    refused(Command::new("bash").arg("-c").arg(format!(
        "exec 3>>'{}'; exec '{bin}' convert '{}' /dev/fd/3",
        s(&input),
        s(&input)
    )));
    // Standard input is the output file; standard output is the input file.
    refused(
        tracekit()
            .args(["convert", "-"])
            .arg(&hard)
            .stdin(std::fs::File::open(&input).unwrap()),
    );
    refused(
        tracekit().arg("convert").arg(&input).arg("-").stdout(
            std::fs::OpenOptions::new()
                .append(true)
                .open(&input)
                .unwrap(),
        ),
    );
    assert!(std::fs::read(&input).unwrap() == original, "input intact");
    assert!(
        std::fs::symlink_metadata(&soft)
            .unwrap()
            .file_type()
            .is_symlink()
    );

    // The case: split into the prefix its input came from. Refused before any
    // part is written, so the parts beside it are untouched too.
    let parts = d.join("parts");
    std::fs::create_dir(&parts).unwrap();
    let prefix = parts.join("p.pcap");
    let out = tracekit()
        .args(["split", "--packets", "10"])
        .arg(&input)
        .arg(&prefix)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let before: Vec<Vec<u8>> = (0..10)
        .map(|i| std::fs::read(parts.join(format!("p-{i:06}.pcap"))).unwrap())
        .collect();
    for own in ["p-000000.pcap", "p-000004.pcap"] {
        refused(
            tracekit()
                .args(["split", "--packets", "3"])
                .arg(parts.join(own))
                .arg(&prefix),
        );
    }
    for (i, bytes) in before.iter().enumerate() {
        let now = std::fs::read(parts.join(format!("p-{i:06}.pcap"))).unwrap();
        assert!(&now == bytes, "part {i} intact");
    }
    let names: Vec<String> = std::fs::read_dir(&parts)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 10, "no temporary file left: {names:?}");
}

#[test]
fn a_failed_output_leaves_an_earlier_file_of_that_name_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.pcap");
    std::fs::write(&out, b"earlier contents").unwrap();
    // Refused at its first packet: nothing to keep.
    let run = tracekit()
        .args(["convert", "--exact-timestamps"])
        .arg(corpus("libtrace__large_legacy.gz"))
        .arg(&out)
        .output()
        .unwrap();
    let err = stderr(&run);
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert!(err.contains("was not written"), "{err}");
    assert_eq!(std::fs::read(&out).unwrap(), b"earlier contents");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    // And a complete output replaces it, through the temporary file.
    let run = tracekit()
        .arg("convert")
        .arg(corpus("libtrace__100_packets.erf"))
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(count(&out), 100);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

/// The corpus files holding ERF (plain or compressed), with the manifest's count.
fn erf_files() -> Vec<(String, u64)> {
    let files: Vec<(String, u64)> = manifest()
        .into_iter()
        .filter(|e| e.container.contains("ERF") && !e.container.contains("not ERF"))
        .filter_map(|e| Some((e.file, e.packets?)))
        .collect();
    assert!(files.len() >= 10, "{files:?}");
    files
}

#[test]
fn erf_to_pcap_keeps_every_packet_and_notes_the_rounding() {
    let dir = tempfile::tempdir().unwrap();
    let mut rounded = 0;
    for (file, packets) in erf_files() {
        let out = dir.path().join(format!("{file}.pcap"));
        let run = tracekit()
            .arg("convert")
            .arg(corpus(&file))
            .arg(&out)
            .output()
            .unwrap();
        let err = stderr(&run);
        // The damaged copies end at their damage (exit 1); the others succeed.
        assert_eq!(
            run.status.success(),
            !file.starts_with("corrupt__"),
            "{file}: {err}"
        );
        assert!(!err.contains("cannot be written exactly"), "{file}: {err}");
        let written = count(&out);
        if let Some(n) = capinfos_count(&out) {
            assert_eq!(n, written, "{file}: capinfos agrees");
        }
        if file == "libtrace__provenance.erf" {
            // META records are not packets: pcap cannot hold them, and says so.
            assert_eq!(written, 0);
            assert!(
                err.contains(&format!("metadata record (not written) of {packets}")),
                "{file}: {err}"
            );
        } else {
            assert_eq!(written, packets, "{file}: every packet kept: {err}");
        }
        if let Some(line) = err
            .lines()
            .find(|l| l.contains("sub-resolution time stamp digits of"))
        {
            rounded += 1;
            assert!(line.contains("packet(s)"), "{line}");
        }
    }
    assert!(rounded >= 7, "the rounding is noted with a count");

    // merge and split keep them too.
    let merged = dir.path().join("m.pcap");
    let run = tracekit()
        .args(["merge", "-w"])
        .arg(&merged)
        .arg(corpus("libtrace__100_packets.erf"))
        .arg(corpus("libtrace__5_packets.erf"))
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(stderr(&run).contains("sub-resolution time stamp digits of"));
    assert_eq!(count(&merged), 105);
    let run = tracekit()
        .args(["split", "--packets", "30"])
        .arg(corpus("libtrace__100_packets.erf"))
        .arg(dir.path().join("part.pcap"))
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    let total: u64 = (0..4)
        .map(|i| count(&dir.path().join(format!("part-{i:06}.pcap"))))
        .sum();
    assert_eq!(total, 100);
}

#[test]
fn exact_timestamps_refuses_with_one_message_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let erf = corpus("libtrace__100_packets.erf");
    let runs = [
        vec![
            "convert".to_string(),
            "--exact-timestamps".into(),
            s(&erf).into(),
            s(&dir.path().join("c.pcap")).into(),
        ],
        vec![
            "merge".into(),
            "--exact-timestamps".into(),
            "-w".into(),
            s(&dir.path().join("m.pcap")).into(),
            s(&erf).into(),
        ],
        vec![
            "split".into(),
            "--exact-timestamps".into(),
            "--packets".into(),
            "10".into(),
            s(&erf).into(),
            s(&dir.path().join("p.pcap")).into(),
        ],
    ];
    for args in runs {
        let out = tracekit().args(&args).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.matches("--exact-timestamps").count(), 1, "{err}");
        assert!(
            err.contains("cannot be written exactly in ns resolution"),
            "{err}"
        );
        assert!(!err.contains("or write ns"), "no self-contradiction: {err}");
    }
    // Without the flag, pcapng keeps them exact and nothing is rounded.
    let out = tracekit()
        .args(["convert", "--exact-timestamps"])
        .arg(&erf)
        .arg(dir.path().join("c.pcapng"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Feeds a pcap to a child's standard input slowly (one packet per millisecond) until
/// the child stops reading; returns the packets sent.
fn feed(child: &mut Child, after: Duration, signal: &str) -> std::thread::JoinHandle<u64> {
    let mut stdin = child.stdin.take().unwrap();
    let pid = child.id().to_string();
    let signal = signal.to_string();
    std::thread::spawn(move || {
        let mut header = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
        header.extend_from_slice(&[0; 8]);
        header.extend_from_slice(&65535u32.to_le_bytes());
        header.extend_from_slice(&1u32.to_le_bytes());
        if stdin.write_all(&header).is_err() {
            return 0;
        }
        let start = Instant::now();
        let mut signalled = false;
        let mut sent = 0u64;
        loop {
            let mut rec = Vec::with_capacity(16 + 200);
            rec.extend_from_slice(&(1_700_000_000u32 + (sent / 1000) as u32).to_le_bytes());
            rec.extend_from_slice(&((sent % 1000) as u32 * 1000).to_le_bytes());
            rec.extend_from_slice(&200u32.to_le_bytes());
            rec.extend_from_slice(&200u32.to_le_bytes());
            rec.resize(16 + 200, sent as u8);
            if stdin.write_all(&rec).and_then(|()| stdin.flush()).is_err() {
                return sent;
            }
            sent += 1;
            if !signalled && start.elapsed() >= after {
                signalled = true;
                Command::new("kill")
                    .args([&format!("-{signal}"), &pid])
                    .status()
                    .unwrap();
            }
            if start.elapsed() > Duration::from_secs(60) {
                return sent;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    })
}

/// Runs `args` reading a slow standard input, signals it after a while, and returns
/// its output and the number of packets it reports.
fn interrupt(args: &[&str], signal: &str) -> (Output, u64) {
    let mut child = tracekit()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let feeder = feed(&mut child, Duration::from_millis(700), signal);
    let out = child.wait_with_output().unwrap();
    let sent = feeder.join().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(130), "{args:?}: {err}");
    let n: u64 = err
        .split("interrupted after ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{args:?}: no 'interrupted after N packets': {err}"));
    assert!(n > 0 && n <= sent, "{n} of {sent} sent");
    (out, n)
}

#[test]
fn ctrl_c_completes_convert_output_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    for (name, signal) in [
        ("c.pcap", "INT"),
        ("c.pcap.zst", "INT"),
        ("t.pcapng.lz4", "TERM"),
    ] {
        let out = dir.path().join(name);
        let (_, n) = interrupt(&["convert", "-", s(&out)], signal);
        assert_eq!(count(&out), n, "{name} holds every packet reported");
        if name.ends_with(".zst") && have("zstd") {
            let st = Command::new("zstd").arg("-tq").arg(&out).status().unwrap();
            assert!(st.success(), "zstd -t {name}");
        }
        if name.ends_with(".lz4") && have("lz4") {
            let st = Command::new("lz4").arg("-tq").arg(&out).status().unwrap();
            assert!(st.success(), "lz4 -t {name}");
        }
        if !name.ends_with(".lz4")
            && !name.ends_with(".zst")
            && let Some(c) = capinfos_count(&out)
        {
            assert_eq!(c, n);
        }
    }
}

#[test]
fn ctrl_c_completes_merge_and_split_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let merged = dir.path().join("m.pcap.zst");
    let (_, n) = interrupt(&["merge", "-w", s(&merged), "-"], "INT");
    assert_eq!(count(&merged), n);
    if have("zstd") {
        assert!(
            Command::new("zstd")
                .arg("-tq")
                .arg(&merged)
                .status()
                .unwrap()
                .success()
        );
    }

    let prefix = dir.path().join("p.pcap");
    let (out, n) = interrupt(&["split", "--packets", "100", "-", s(&prefix)], "INT");
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut total = 0;
    for line in listed.lines() {
        let file = PathBuf::from(line.split('\t').next().unwrap());
        let c = count(&file);
        if let Some(theirs) = capinfos_count(&file) {
            assert_eq!(theirs, c, "{}", file.display());
        }
        total += c;
    }
    assert_eq!(total, n, "the parts hold every packet reported: {listed}");
    let last = dir.path().join(format!("p-{:06}.pcap", (n - 1) / 100));
    assert_eq!(count(&last), (n - 1) % 100 + 1, "the last part is whole");
}

#[test]
fn dev_full_reports_no_packet_saved() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.pcap");
    write_trace(&input, 5000);
    for args in [
        vec!["convert", "--format", "pcap", s(&input), "/dev/full"],
        vec!["merge", "--format", "pcapng", "-w", "/dev/full", s(&input)],
    ] {
        let out = tracekit().args(&args).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("No space left on device"), "{err}");
        assert!(err.contains("/dev/full received no packet"), "{err}");
    }
}

/// A 1 MiB tmpfs, unmounted when dropped; `None` (the test skips) when mounting is
/// not allowed here, unless the oracles are required.
struct SmallDisk(tempfile::TempDir);

impl SmallDisk {
    fn mount() -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
            .arg(dir.path())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            assert!(
                !oracles_required(),
                "cannot mount a tmpfs (TRACEKIT_REQUIRE_ORACLES=1)"
            );
            eprintln!("cannot mount a tmpfs here (not root?): skipping the disk-full test");
            return None;
        }
        Some(SmallDisk(dir))
    }

    fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

/// The count in "NAME is a complete file holding the first N packets".
fn holding(err: &str) -> u64 {
    err.split("is a complete file holding the first ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in: {err}"))
}

#[test]
fn a_full_disk_leaves_exactly_the_packets_reported() {
    let Some(disk) = SmallDisk::mount() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.pcap");
    write_trace(&input, 10_000); // 3.2 MB: three times the disk
    for name in ["o.pcap", "o.pcapng", "o.erf"] {
        let out = disk.path().join(name);
        let run = tracekit()
            .arg("convert")
            .arg(&input)
            .arg(&out)
            .output()
            .unwrap();
        let err = stderr(&run);
        assert_eq!(run.status.code(), Some(1), "{err}");
        assert!(err.contains("No space left on device"), "{err}");
        let n = holding(&err);
        assert!(n > 1000 && n < 10_000, "{err}");
        assert_eq!(count(&out), n, "{name}: {err}");
        if let Some(c) = capinfos_count(&out) {
            assert_eq!(c, n, "{name}: capinfos");
        }
        std::fs::remove_file(&out).unwrap();
    }
    // merge and split say the same.
    let out = disk.path().join("m.pcap");
    let run = tracekit()
        .args(["merge", "-w"])
        .arg(&out)
        .arg(&input)
        .output()
        .unwrap();
    let err = stderr(&run);
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert_eq!(count(&out), holding(&err));
    std::fs::remove_file(&out).unwrap();
    let run = tracekit()
        .args(["split", "--packets", "2500"])
        .arg(&input)
        .arg(disk.path().join("p.pcap"))
        .output()
        .unwrap();
    let err = stderr(&run);
    assert_eq!(run.status.code(), Some(1), "{err}");
    let listed = String::from_utf8_lossy(&run.stdout).into_owned();
    for line in listed.lines() {
        let mut cols = line.split('\t');
        let file = PathBuf::from(cols.next().unwrap());
        let packets: u64 = cols
            .next()
            .and_then(|c| c.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap();
        assert_eq!(count(&file), packets, "{line}");
    }
    let leftovers = std::fs::read_dir(disk.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".part")
        })
        .count();
    assert_eq!(leftovers, 0, "no temporary file left");
}

#[test]
fn snaplen_zero_keeps_whole_packets() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus("zeek__http__get-to-ssh-server.pcap");
    let frames = |p: &Path| {
        let mut source = tracekit::open(s(p)).unwrap();
        let mut v = Vec::new();
        while let Some(p) = source.next_packet().unwrap() {
            v.push(p.data().to_vec());
        }
        v
    };
    let want = frames(&input);
    assert!(want.iter().any(|f| f.len() > 100));
    for name in ["o.pcap", "o.pcapng"] {
        let out = dir.path().join(name);
        let run = tracekit()
            .args(["convert", "-s", "0"])
            .arg(&input)
            .arg(&out)
            .output()
            .unwrap();
        assert!(run.status.success(), "{}", stderr(&run));
        assert_eq!(frames(&out), want, "{name}");
    }
    let out = dir.path().join("m.pcap");
    let run = tracekit()
        .args(["merge", "-s", "0", "-w"])
        .arg(&out)
        .arg(&input)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(frames(&out), want);
    // A real snap length still cuts.
    let run = tracekit()
        .args(["convert", "-s", "60"])
        .arg(&input)
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success());
    assert!(frames(&out).iter().all(|f| f.len() <= 60));
}

#[test]
fn absurd_windows_and_thread_counts_are_refused_not_allocated() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.pcap.gz");
    let input = corpus("libtrace__100_packets.pcap");
    for (args, says) in [
        (
            vec!["merge", "--dedup", "--dedup-window", "1000000000000"],
            "at most 1048576",
        ),
        (vec!["merge", "--threads", "100000"], "at most 256"),
    ] {
        let run = tracekit()
            .args(&args)
            .arg("-w")
            .arg(&out)
            .arg(&input)
            .output()
            .unwrap();
        let err = stderr(&run);
        assert_eq!(run.status.code(), Some(2), "{err}");
        assert!(err.contains(says), "{err}");
    }
    let run = tracekit()
        .args(["convert", "--threads", "100000"])
        .arg(&input)
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    // The largest window works.
    let run = tracekit()
        .args(["merge", "--dedup", "--dedup-window", "1048576", "-w"])
        .arg(&out)
        .arg(&input)
        .arg(&input)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(count(&out), 100);
}

#[test]
fn info_json_says_when_figures_are_partial() {
    let out = tracekit()
        .args(["info", "--json"])
        .arg(corpus("corrupt__100_packets_rlen_short.erf"))
        .arg(corpus("libtrace__5_packets.erf"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["complete"], false);
    assert_eq!(lines[0]["packets"], 3);
    assert!(
        lines[0]["error"]
            .as_str()
            .unwrap()
            .contains("bad ERF record length")
    );
    assert!(lines[1].get("complete").is_none() && lines[1].get("error").is_none());
}

/// A pcapng file with `n` interfaces, each described just before its one packet.
fn many_interfaces(path: &Path, n: u32) {
    fn block(out: &mut Vec<u8>, kind: u32, body: &[u8]) {
        let total = (12 + body.len()) as u32;
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(&total.to_le_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(&total.to_le_bytes());
    }
    let mut out = Vec::new();
    let mut shb = Vec::new();
    shb.extend_from_slice(&0x1a2b_3c4du32.to_le_bytes());
    shb.extend_from_slice(&[1, 0, 0, 0]);
    shb.extend_from_slice(&(-1i64).to_le_bytes());
    block(&mut out, 0x0a0d_0d0a, &shb);
    for i in 0..n {
        let mut idb = vec![1, 0, 0, 0];
        idb.extend_from_slice(&0u32.to_le_bytes());
        block(&mut out, 1, &idb);
        let mut epb = Vec::new();
        for v in [i, 0, 1_000_000 + i, 60, 60] {
            epb.extend_from_slice(&v.to_le_bytes());
        }
        epb.extend_from_slice(&[0xff; 60]);
        block(&mut out, 6, &epb);
    }
    std::fs::write(path, out).unwrap();
}

/// The work is checked by the describer's unit test (one step per interface); this
/// checks the conversion end to end and that it finishes in reasonable time, with a
/// bound generous enough for a loaded machine (the quadratic version took 30 s for
/// 40k interfaces in a debug build).
#[test]
fn many_pcapng_interfaces_convert() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("many.pcapng");
    let n = 50_000;
    many_interfaces(&input, n);
    let out = dir.path().join("out.pcapng");
    let start = Instant::now();
    let run = tracekit()
        .arg("convert")
        .arg(&input)
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(start.elapsed() < Duration::from_secs(20));
    let mut source = tracekit::open(s(&out)).unwrap();
    let mut i = 0;
    while let Some(p) = source.next_packet().unwrap() {
        assert_eq!(p.meta().interface, i, "interface numbers kept");
        i += 1;
    }
    assert_eq!(i, n);
}
