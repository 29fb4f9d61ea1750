//! `tracekit fields` and `tracekit dump` end to end.

use std::process::{Command, Stdio};

use tracekit_testdata::{corpus, have};

fn tracekit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tracekit"))
}

#[test]
fn fields_output_equals_tshark_on_pppoe_over_qinq() {
    if !have("tshark") {
        return;
    }
    let fields = [
        "frame.number",
        "frame.time_epoch",
        "frame.len",
        "ip.src",
        "ip.dst",
        "ip.proto",
        "tcp.srcport",
        "tcp.dstport",
        "udp.srcport",
        "vlan.id",
    ];
    let path = corpus("zeek__pppoe-over-qinq.pcap");
    let mut ours = tracekit();
    ours.arg("fields");
    let mut theirs = Command::new("tshark");
    theirs
        .args([
            "-n",
            "-T",
            "fields",
            "-E",
            "occurrence=a",
            "-E",
            "aggregator=,",
            "-r",
        ])
        .arg(&path);
    for f in fields {
        ours.args(["-e", f]);
        theirs.args(["-e", f]);
    }
    let ours = ours.arg(&path).output().unwrap();
    let theirs = theirs.stderr(Stdio::null()).output().unwrap();
    assert!(ours.status.success());
    let ours = String::from_utf8(ours.stdout).unwrap();
    assert_eq!(ours.lines().count(), 86);
    assert_eq!(ours, String::from_utf8(theirs.stdout).unwrap());
}

/// QUIC short-header packets have a DCID only when their connection is followed
/// (`--reassemble`), as tshark follows it; without, only the long headers' show.
#[test]
fn quic_short_header_dcids_with_reassemble_equal_tsharks() {
    if !have("tshark") {
        return;
    }
    for name in ["ndpi__quic-v2.pcapng", "zeek__ppp__quic-interop-retry.pcap"] {
        let path = corpus(name);
        let fields = ["frame.number", "quic.dcid"];
        let run = |reassemble: bool| {
            let mut c = tracekit();
            c.arg("fields");
            if reassemble {
                c.arg("--reassemble");
            }
            for f in fields {
                c.args(["-e", f]);
            }
            let out = c.arg(&path).output().unwrap();
            assert!(out.status.success());
            String::from_utf8(out.stdout).unwrap()
        };
        let theirs = Command::new("tshark")
            .args([
                "-n",
                "-T",
                "fields",
                "-E",
                "occurrence=a",
                "-E",
                "aggregator=,",
            ])
            .args(["-o", "ip.defragment:FALSE", "-r"])
            .arg(&path)
            .args(["-e", "frame.number", "-e", "quic.dcid"])
            .stderr(Stdio::null())
            .output()
            .unwrap();
        let theirs = String::from_utf8(theirs.stdout).unwrap();
        assert_eq!(run(true), theirs, "{name}");
        if name == "ndpi__quic-v2.pcapng" {
            assert_ne!(run(false), theirs, "short headers need the connection");
        }
    }
}

#[test]
fn fields_with_a_filter_keeps_file_numbers_and_separator() {
    if !have("tshark") {
        return;
    }
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../../samples/sample.pcap");
    let out = tracekit()
        .args([
            "fields",
            "-e",
            "frame.number",
            "-e",
            "udp.dstport",
            "--separator",
            ",",
            "-f",
            "udp port 53",
            sample,
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let ours = String::from_utf8(out.stdout).unwrap();
    let theirs = Command::new("tshark")
        .args([
            "-n",
            "-r",
            sample,
            "-Y",
            "udp.port == 53",
            "-T",
            "fields",
            "-E",
            "separator=,",
        ])
        .args(["-e", "frame.number", "-e", "udp.dstport"])
        .stderr(Stdio::null())
        .output()
        .unwrap();
    assert!(ours.lines().count() >= 2, "{ours}");
    assert_eq!(ours, String::from_utf8(theirs.stdout).unwrap());
}

#[test]
fn fields_rejects_an_unknown_field_by_name() {
    let out = tracekit()
        .args(["fields", "-e", "ip.bogus"])
        .arg(corpus("libtrace__vlan.pcap"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("unknown field 'ip.bogus'"), "{err}");
}

#[test]
fn fields_on_damage_prints_good_packets_then_fails() {
    let out = tracekit()
        .args(["fields", "-e", "frame.number"])
        .arg(corpus("corrupt__vlan_truncated_midheader.pcap"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 299);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("packet 300 at byte offset 108284"), "{err}");
}

#[test]
fn fields_and_dump_end_quietly_on_a_closed_stdout() {
    for cmd in ["fields", "dump"] {
        let mut child = tracekit()
            .arg(cmd)
            .arg(corpus("libtrace__100_packets.pcap"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut buf = [0u8; 10];
        std::io::Read::read_exact(&mut stdout, &mut buf).unwrap();
        drop(stdout);
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{cmd}: {:?}", out.status);
        assert!(
            out.stderr.is_empty(),
            "{cmd}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn dump_shows_every_layer_through_a_vxlan_tunnel() {
    let out = tracekit()
        .args(["dump", "-c", "1"])
        .arg(corpus("libtrace__vxlan.pcap"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let want = [
        "Packet 1: 2013-05-18 20:21:44.837063 UTC caplen 148 wire 148",
        "  IPv4      192.168.203.1 > 192.168.202.1 proto 17",
        "  UDP       45149 > 4789 len 114",
        "  Tunnel    VXLAN vni 0",
        "    IPv4      192.168.203.3 > 192.168.203.5 proto 1",
        "    ICMP      type 8 code 0",
    ];
    for w in want {
        assert!(text.contains(w), "missing {w:?} in\n{text}");
    }
    assert_eq!(text.matches("Packet ").count(), 1);
}

#[test]
fn dump_names_anomalies_and_fragments() {
    // fragtest: snaplen-cut 802.1Q frames, IPv4 fragments and tunnels
    let out = tracekit()
        .args(["dump"])
        .arg(corpus("libtrace__fragtest.erf.gz"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("802.1Q    vlan 2852"));
    assert!(text.contains("(non-first fragment: no transport header)"));
    assert!(
        text.contains("Anomalies "),
        "no anomaly named in 10,000 cut packets"
    );
    // a first fragment's UDP length covers the whole datagram: not an anomaly
    assert!(!text.contains("udp_bad_length"));
}
