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

/// HTTP heads split over TCP segments: with `--reassemble` the http fields show on the
/// segment that completes the head, as tshark shows them with its TCP reassembly (its
/// default); the segments before show none.
#[test]
fn http_heads_split_over_segments_with_reassemble_equal_tsharks() {
    use tracekit_testdata::builder::{Ethernet, Ipv4, PacketBuilder, Tcp, tcp_flags};
    if !have("tshark") {
        return;
    }
    let segment = |client: bool, seq: u32, ack: u32, flags: u8, data: &[u8]| {
        let (src, dst, sp, dp) = if client {
            ([10, 0, 0, 1], [10, 0, 0, 2], 40000, 80)
        } else {
            ([10, 0, 0, 2], [10, 0, 0, 1], 80, 40000)
        };
        let f = PacketBuilder::new()
            .ethernet(Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]))
            .ipv4(Ipv4::new(src, dst))
            .tcp(Tcp::new(sp, dp).seq(seq).ack(ack).flags(flags))
            .payload(data)
            .build();
        let n = f.len();
        (f, n)
    };
    let (ack, psh) = (tcp_flags::ACK, tcp_flags::ACK | tcp_flags::PSH);
    let get = b"GET /a/long/path HTTP/1.1\r\nHost: example.org\r\nUser-Agent: split/1.0\r\n\r\n";
    let post = b"POST /form HTTP/1.1\r\nHost: example.net\r\nContent-Length: 0\r\n\r\n";
    let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    let (g, p) = (get.len() as u32, post.len() as u32);
    let frames = vec![
        segment(true, 100, 0, tcp_flags::SYN, b""),
        segment(false, 500, 101, tcp_flags::SYN | ack, b""),
        segment(true, 101, 501, ack, b""),
        // The request in two segments, cut inside the field lines.
        segment(true, 101, 501, psh, &get[..40]),
        segment(true, 141, 501, psh, &get[40..]),
        // The response in three, the first cut inside the status line.
        segment(false, 501, 101 + g, psh, &ok[..10]),
        segment(false, 511, 101 + g, psh, &ok[10..20]),
        segment(false, 521, 101 + g, psh, &ok[20..]),
        // A request cut inside its request line, then one whole.
        segment(true, 101 + g, 501 + ok.len() as u32, psh, &post[..12]),
        segment(true, 113 + g, 501 + ok.len() as u32, psh, &post[12..]),
        segment(true, 101 + g + p, 501 + ok.len() as u32, psh, post),
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("split-heads.pcap");
    tracekit_testdata::write_pcap(&path, 1, &frames);
    let fields = [
        "frame.number",
        "http.request.method",
        "http.request.uri",
        "http.host",
        "http.user_agent",
        "http.response.code",
    ];
    let mut ours = tracekit();
    ours.args(["fields", "--reassemble"]);
    let mut theirs = Command::new("tshark");
    theirs.args(["-n", "-T", "fields", "-r"]).arg(&path);
    for f in fields {
        ours.args(["-e", f]);
        theirs.args(["-e", f]);
    }
    let ours = ours.arg(&path).output().unwrap();
    assert!(ours.status.success());
    let ours = String::from_utf8(ours.stdout).unwrap();
    let theirs = String::from_utf8(theirs.stderr(Stdio::null()).output().unwrap().stdout).unwrap();
    assert_eq!(ours, theirs);
    assert!(
        ours.contains("\tGET\t/a/long/path\texample.org\tsplit/1.0\t"),
        "{ours}"
    );
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
