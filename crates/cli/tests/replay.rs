//! `tracekit replay` on a veth pair in network namespaces made here (needs root): a
//! capture on the other end gets every frame, byte for byte, and the gaps between them
//! follow the trace's (at its pace and at a speed factor) within a stated tolerance.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tracekit::{CreateOptions, LinkType, Meta, Packet, Timestamp, TsResolution};
use tracekit_testdata::builder::{Ethernet, Ipv4, PacketBuilder, Udp};
use tracekit_testdata::netns::{VethPair, is_root};

const GAP_MS: u64 = 20;
const FRAMES: u32 = 40;

fn tracekit_in(ns: &str) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns])
        .arg(env!("CARGO_BIN_EXE_tracekit"));
    c
}

/// 40 UDP frames of growing size, 20 ms apart.
fn write_trace(path: &Path) {
    let options = CreateOptions {
        ts_resolution: Some(TsResolution::NANO),
        ..Default::default()
    };
    let mut sink = tracekit::create(path.to_str().unwrap(), &options).unwrap();
    for i in 0..FRAMES {
        let payload = vec![i as u8; 20 + 30 * i as usize];
        let f = PacketBuilder::new()
            .ethernet(Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]))
            .ipv4(Ipv4::new([10, 9, 0, 1], [10, 9, 0, 2]))
            .udp(Udp::new(40_000, 9))
            .payload(&payload)
            .build();
        let ts = Timestamp::from_unix_nanos(
            1_700_000_000_000_000_000 + u64::from(i) * GAP_MS * 1_000_000,
        );
        sink.write_packet(&Packet::new(
            &f,
            Meta::new(ts, f.len() as u32, LinkType::ETHERNET),
        ))
        .unwrap();
    }
    sink.finish().unwrap();
}

/// (time stamp ns, bytes) of the trace's UDP frames to port 9.
fn frames(path: &Path) -> Vec<(u64, Vec<u8>)> {
    let mut s = tracekit::open(path.to_str().unwrap()).unwrap();
    let mut v = Vec::new();
    while let Some(p) = s.next_packet().unwrap() {
        let d = p.data();
        if d.len() > 42 && d[6..12] == [2, 0, 0, 0, 0, 1] {
            v.push((p.ts().as_unix_nanos(), d.to_vec()));
        }
    }
    v
}

fn capture(pair: &VethPair, out: &Path) -> Child {
    let child = tracekit_in(&pair.b)
        .args([
            "capture",
            "-i",
            "vb",
            "-f",
            "udp port 9",
            "-c",
            &FRAMES.to_string(),
            "-w",
        ])
        .arg(out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    child
}

#[test]
fn replay_sends_every_frame_at_the_traces_pace() {
    if !is_root() {
        return;
    }
    let pair = VethPair::new("rp");
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.pcap");
    write_trace(&trace);
    let sent = frames(&trace);
    for (speed, name) in [("1", "x1.pcap"), ("2", "x2.pcap")] {
        let out = dir.path().join(name);
        let cap = capture(&pair, &out);
        let replay = tracekit_in(&pair.a)
            .args(["replay", "--json", "--speed", speed, "-i", "va"])
            .arg(&trace)
            .output()
            .unwrap();
        assert!(
            replay.status.success(),
            "{}",
            String::from_utf8_lossy(&replay.stderr)
        );
        let summary: serde_json::Value = serde_json::from_slice(&replay.stdout).unwrap();
        assert_eq!(summary["packets"], FRAMES);
        let done = cap.wait_with_output().unwrap();
        assert!(
            done.status.success(),
            "{}",
            String::from_utf8_lossy(&done.stderr)
        );
        let got = frames(&out);
        assert_eq!(got.len(), sent.len(), "speed {speed}: every frame arrives");
        for (i, (a, b)) in sent.iter().zip(&got).enumerate() {
            assert!(a.1 == b.1, "speed {speed}: frame {i} differs");
        }
        // Gaps: each within 8 ms of the trace's gap divided by the speed, and the whole
        // span within 4 ms (the pacer keeps to the trace's clock, so one late frame does
        // not delay the rest).
        let factor: u64 = speed.parse().unwrap();
        let want = GAP_MS * 1_000_000 / factor;
        for (i, w) in got.windows(2).enumerate() {
            let gap = w[1].0 - w[0].0;
            assert!(
                gap.abs_diff(want) < 8_000_000,
                "speed {speed}: gap {i} is {gap} ns, want {want}"
            );
        }
        let worst = got
            .windows(2)
            .map(|w| (w[1].0 - w[0].0).abs_diff(want))
            .max()
            .unwrap();
        eprintln!("speed {speed}: largest gap error {worst} ns");
        let span = got.last().unwrap().0 - got[0].0;
        let want_span = want * u64::from(FRAMES - 1);
        assert!(
            span.abs_diff(want_span) < 4_000_000,
            "speed {speed}: span {span} ns, want {want_span}"
        );
    }
}

#[test]
fn replay_as_fast_as_possible_and_its_errors() {
    if !is_root() {
        return;
    }
    let pair = VethPair::new("rf");
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.pcap");
    write_trace(&trace);
    let out = dir.path().join("fast.pcap");
    let cap = capture(&pair, &out);
    let replay = tracekit_in(&pair.a)
        .args(["replay", "--fast", "-i", "va"])
        .arg(&trace)
        .output()
        .unwrap();
    assert!(replay.status.success());
    let text = String::from_utf8_lossy(&replay.stdout);
    assert!(text.starts_with("40 packets ("), "{text}");
    cap.wait_with_output().unwrap();
    let got = frames(&out);
    assert_eq!(got.len(), 40);
    // Well under the trace's 780 ms.
    assert!(got.last().unwrap().0 - got[0].0 < 200_000_000);
    // No such interface: a clear error.
    let bad = tracekit_in(&pair.a)
        .args(["replay", "-i", "nosuch0"])
        .arg(&trace)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("nosuch0"));
}
