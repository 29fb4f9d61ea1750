//! Reassembly of IP fragments inside tunnels against tshark's (`ip.defragment` and
//! `ipv6.defragment` on, which reassemble at every level): a trace of fragmented
//! datagrams inside GRE, IP-in-IP, 6in4, VXLAN and GTP-U, and an outer fragmented datagram
//! whose GRE payload is itself an inner fragment, written to the test's own directory.
//! The frames that complete a datagram, the reassembled lengths and the inner UDP
//! lengths are tshark's; the whole packets we hand out decode (ours and tshark's
//! decoders) with consistent outer lengths and checksums.

use std::path::Path;

use tracekit_core::{LinkType, Meta, Packet, Timestamp};
use tracekit_decode::Decoded;
use tracekit_flow::{DefragConfig, Defragged, Defragmenter};
use tracekit_testdata::builder::{Ethernet, Ipv4, Ipv6, Ipv6Ext, PacketBuilder, Udp};
use tracekit_testdata::{have, tshark_fields_with, write_pcap};

const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 1];
const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 2];
const GRE_IPV4: [u8; 4] = [0, 0, 0x08, 0x00];

/// A payload of `len` bytes that differs from one datagram (`seed`) to another.
fn payload(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| seed.wrapping_add((i % 251) as u8))
        .collect()
}

/// The IP payload (UDP header and data) of a whole UDP datagram from `src` to `dst`.
fn udp_v4(src: [u8; 4], dst: [u8; 4], sport: u16, data: &[u8]) -> Vec<u8> {
    let whole = PacketBuilder::new()
        .ipv4(Ipv4::new(src, dst))
        .udp(Udp::new(sport, 7000))
        .payload(data)
        .build();
    whole[20..].to_vec()
}

fn udp_v6(src: [u8; 16], dst: [u8; 16], sport: u16, data: &[u8]) -> Vec<u8> {
    let whole = PacketBuilder::new()
        .ipv6(Ipv6::new(src, dst))
        .udp(Udp::new(sport, 7000))
        .payload(data)
        .build();
    whole[40..].to_vec()
}

/// IPv4 fragments (raw IP bytes) of `body` (a UDP datagram) cut at `cuts`.
fn frags_v4(src: [u8; 4], dst: [u8; 4], id: u16, body: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut bounds = vec![0];
    bounds.extend_from_slice(cuts);
    bounds.push(body.len());
    bounds
        .windows(2)
        .map(|w| {
            let more = w[1] < body.len();
            PacketBuilder::new()
                .ipv4(
                    Ipv4::new(src, dst)
                        .id(id)
                        .protocol(17)
                        .fragment(w[0] as u16, more),
                )
                .payload(&body[w[0]..w[1]])
                .build()
        })
        .collect()
}

fn frags_v6(src: [u8; 16], dst: [u8; 16], id: u32, body: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut bounds = vec![0];
    bounds.extend_from_slice(cuts);
    bounds.push(body.len());
    bounds
        .windows(2)
        .map(|w| {
            let more = w[1] < body.len();
            PacketBuilder::new()
                .ipv6(Ipv6::new(src, dst))
                .ipv6_ext(Ipv6Ext::fragment(w[0] as u16, more, id).next_header(17))
                .payload(&body[w[0]..w[1]])
                .build()
        })
        .collect()
}

/// An Ethernet frame: an outer IPv4 header (protocol `proto`) around `inner`.
fn outer_v4(src: [u8; 4], dst: [u8; 4], proto: u8, inner: &[u8]) -> Vec<u8> {
    PacketBuilder::new()
        .ethernet(Ethernet::new(MAC_A, MAC_B))
        .ipv4(Ipv4::new(src, dst).protocol(proto))
        .payload(inner)
        .build()
}

fn gre(src: [u8; 4], dst: [u8; 4], inner_ip: &[u8]) -> Vec<u8> {
    let mut body = GRE_IPV4.to_vec();
    body.extend_from_slice(inner_ip);
    outer_v4(src, dst, 47, &body)
}

/// VXLAN (VNI `vni`) from UDP source port `sport`, carrying an Ethernet frame with IPv6.
fn vxlan(sport: u16, vni: u32, inner_ip6: &[u8]) -> Vec<u8> {
    let mut body = vec![0x08, 0, 0, 0];
    body.extend_from_slice(&(vni << 8).to_be_bytes());
    body.extend_from_slice(&MAC_B);
    body.extend_from_slice(&MAC_A);
    body.extend_from_slice(&[0x86, 0xdd]);
    body.extend_from_slice(inner_ip6);
    PacketBuilder::new()
        .ethernet(Ethernet::new(MAC_A, MAC_B))
        .ipv4(Ipv4::new([192, 0, 2, 10], [192, 0, 2, 20]))
        .udp(Udp::new(sport, 4789))
        .payload(&body)
        .build()
}

fn v6(last: u8) -> [u8; 16] {
    let mut a = [0; 16];
    a[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
    a[15] = last;
    a
}

/// The trace: (frames, the UDP payloads of the datagrams in the order they complete).
fn build_trace() -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let (in_src, in_dst) = ([10, 1, 0, 1], [10, 1, 0, 2]);
    let mut frames = Vec::new();
    let mut payloads = Vec::new();

    // 1. GRE over IPv4, inner IPv4 fragments, interleaved with 2. IP-in-IP carrying
    // fragments between the same inner addresses (another ID), sent last first.
    let d1 = payload(1, 2000);
    let g = frags_v4(
        in_src,
        in_dst,
        0x1111,
        &udp_v4(in_src, in_dst, 5000, &d1),
        &[800, 1600],
    );
    let d2 = payload(2, 1500);
    let i = frags_v4(
        in_src,
        in_dst,
        0x2222,
        &udp_v4(in_src, in_dst, 5001, &d2),
        &[1000],
    );
    frames.push(gre([192, 0, 2, 1], [192, 0, 2, 2], &g[0]));
    frames.push(outer_v4([198, 51, 100, 1], [198, 51, 100, 2], 4, &i[1]));
    frames.push(gre([192, 0, 2, 1], [192, 0, 2, 2], &g[1]));
    frames.push(outer_v4([198, 51, 100, 1], [198, 51, 100, 2], 4, &i[0]));
    payloads.push(d2);
    frames.push(gre([192, 0, 2, 1], [192, 0, 2, 2], &g[2]));
    payloads.push(d1);

    // 3. 6in4: IPv6 fragments inside IPv4 (protocol 41).
    let d3 = payload(3, 3000);
    let s = frags_v6(
        v6(1),
        v6(2),
        0x3333,
        &udp_v6(v6(1), v6(2), 5002, &d3),
        &[1200, 2400],
    );
    for f in &s {
        frames.push(outer_v4([203, 0, 113, 1], [203, 0, 113, 2], 41, f));
    }
    payloads.push(d3);

    // 4. VXLAN over UDP carrying IPv6 fragments; the outer source port differs per
    // fragment (a VXLAN sender hashes the inner headers, which differ).
    let d4 = payload(4, 1800);
    let x = frags_v6(
        v6(3),
        v6(4),
        0x4444,
        &udp_v6(v6(3), v6(4), 5003, &d4),
        &[1000],
    );
    frames.push(vxlan(49152, 42, &x[0]));
    frames.push(vxlan(49153, 42, &x[1]));
    payloads.push(d4);

    // GTP-U over UDP (TEID 7) carrying IPv4 fragments.
    let d6 = payload(6, 1700);
    let gt = frags_v4(
        in_src,
        in_dst,
        0x7777,
        &udp_v4(in_src, in_dst, 5005, &d6),
        &[1000],
    );
    for f in &gt {
        let mut body = vec![0x30, 0xff];
        body.extend_from_slice(&(f.len() as u16).to_be_bytes());
        body.extend_from_slice(&7u32.to_be_bytes());
        body.extend_from_slice(f);
        frames.push(
            PacketBuilder::new()
                .ethernet(Ethernet::new(MAC_A, MAC_B))
                .ipv4(Ipv4::new([192, 0, 2, 30], [192, 0, 2, 40]))
                .udp(Udp::new(2152, 2152))
                .payload(&body)
                .build(),
        );
    }
    payloads.push(d6);

    // 5. Both levels: an outer IPv4 datagram (GRE) fragmented, whose GRE payload is the
    // first fragment of an inner datagram; the inner's second fragment comes in a
    // GRE packet of its own.
    let d5 = payload(5, 2400);
    let inner = frags_v4(
        in_src,
        in_dst,
        0x6666,
        &udp_v4(in_src, in_dst, 5004, &d5),
        &[1600],
    );
    let mut gre_body = GRE_IPV4.to_vec();
    gre_body.extend_from_slice(&inner[0]);
    let (o_src, o_dst) = ([192, 0, 2, 1], [192, 0, 2, 2]);
    let cut = 1000;
    for (off, part, more) in [(0, &gre_body[..cut], true), (cut, &gre_body[cut..], false)] {
        frames.push(
            PacketBuilder::new()
                .ethernet(Ethernet::new(MAC_A, MAC_B))
                .ipv4(
                    Ipv4::new(o_src, o_dst)
                        .id(0x5555)
                        .protocol(47)
                        .fragment(off as u16, more),
                )
                .payload(part)
                .build(),
        );
    }
    frames.push(gre(o_src, o_dst, &inner[1]));
    payloads.push(d5);
    (frames, payloads)
}

/// The innermost decode level of `d`.
fn innermost<'a>(d: Decoded<'a>) -> Decoded<'a> {
    let mut d = d;
    while let Some(i) = d.inner() {
        d = i;
    }
    d
}

/// tshark's (frame number, reassembled lengths at every level, innermost UDP length)
/// for the frames that complete a datagram.
fn tshark_reassembled(path: &Path) -> Vec<(u64, Vec<usize>, usize)> {
    let rows = tshark_fields_with(
        path,
        &["-o", "ip.defragment:TRUE", "-o", "ipv6.defragment:TRUE"],
        &[
            "frame.number",
            "ip.reassembled.length",
            "ipv6.reassembled.length",
            "udp.length",
        ],
    );
    rows.iter()
        .filter(|r| !(r[1].is_empty() && r[2].is_empty()))
        .map(|r| {
            let lens = r[1]
                .split('~')
                .chain(r[2].split('~'))
                .filter(|v| !v.is_empty())
                .map(|v| v.parse().unwrap())
                .collect();
            let udp = r[3].rsplit('~').next().unwrap().parse().unwrap_or(0);
            (r[0].parse().unwrap(), lens, udp)
        })
        .collect()
}

#[test]
fn tunnelled_fragments_are_reassembled_as_tshark_does() {
    if !have("tshark") {
        return;
    }
    let (frames, payloads) = build_trace();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tunnel-fragments.pcap");
    let records: Vec<(Vec<u8>, usize)> = frames.iter().map(|f| (f.clone(), f.len())).collect();
    write_pcap(&path, 1, &records);
    let theirs = tshark_reassembled(&path);
    // Seven datagrams (the last frame completes the inner one of case 5; its outer was
    // completed one frame earlier).
    let inner_lens: Vec<usize> = payloads.iter().map(|p| p.len() + 8).collect();
    assert_eq!(theirs.len(), 7, "tshark: {theirs:?}");

    let mut defrag = Defragmenter::new(DefragConfig::default());
    let mut ours = Vec::new();
    let mut whole_frames = Vec::new();
    for (n, f) in frames.iter().enumerate() {
        let ts = Timestamp::from_micros(1_700_000_000 + n as u32, 0);
        let p = Packet::new(f, Meta::new(ts, f.len() as u32, LinkType::ETHERNET));
        let before = defrag.stats().reassembled;
        let whole = match defrag.add(&p) {
            Defragged::Complete(whole) => Some(whole.data().to_vec()),
            _ => None,
        };
        let joined = defrag.stats().reassembled - before;
        let number = n as u64 + 1;
        if let Some(whole) = whole {
            let p = Packet::new(
                &whole,
                Meta::new(ts, whole.len() as u32, LinkType::ETHERNET),
            );
            let d = innermost(Decoded::new(&p));
            assert!(d.fragment().is_none(), "frame {number}: still a fragment");
            let udp = d.udp().expect("a UDP datagram inside");
            let data = d.payload().unwrap();
            ours.push((number, defrag.last_datagram_len(), udp.length() as usize));
            let want = payloads.get(whole_frames.len()).map(|p| &p[..]);
            assert!(Some(data) == want, "frame {number}: the payload differs");
            whole_frames.push((whole.clone(), whole.len()));
        } else if joined > 0 {
            // An outer datagram completed, its inner fragment held (case 5).
            ours.push((number, 0, 0));
        }
    }
    let stats = defrag.stats();
    let tshark_datagrams: usize = theirs.iter().map(|t| t.1.len()).sum();
    assert_eq!(stats.reassembled as usize, tshark_datagrams);
    assert_eq!(ours.len(), theirs.len());
    for (o, t) in ours.iter().zip(&theirs) {
        assert_eq!(
            o.0, t.0,
            "the completing frames differ: ours {ours:?}, tshark {theirs:?}"
        );
        if o.1 > 0 {
            // The innermost datagram's length and its UDP length are tshark's.
            assert_eq!(Some(&o.1), t.1.last(), "frame {}", o.0);
            assert_eq!(o.2, t.2, "frame {}", o.0);
        }
    }
    let completed: Vec<usize> = ours.iter().filter(|o| o.1 > 0).map(|o| o.1).collect();
    assert_eq!(completed, inner_lens);

    // tshark reads the whole packets we hand out: outer lengths and checksums are
    // consistent, and the innermost UDP datagram has the length we found.
    let out = dir.path().join("joined.pcap");
    write_pcap(&out, 1, &whole_frames);
    let rows = tshark_fields_with(
        &out,
        &[
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "udp.check_checksum:TRUE",
        ],
        &[
            "frame.number",
            "ip.checksum.status",
            "ip.flags.mf",
            "udp.length",
            "udp.checksum.status",
            "_ws.malformed",
            "_ws.expert.severity",
        ],
    );
    assert_eq!(rows.len(), whole_frames.len());
    for (r, o) in rows.iter().zip(ours.iter().filter(|o| o.1 > 0)) {
        // Every IPv4 header's checksum is good (status 1; 0 is bad) and none is a
        // fragment.
        assert!(r[1].split('~').all(|s| s == "1" || s.is_empty()), "{r:?}");
        assert!(r[2].split('~').all(|s| s == "0" || s == "False"), "{r:?}");
        assert_eq!(r[3].rsplit('~').next().unwrap(), o.2.to_string(), "{r:?}");
        // UDP checksums: good (1) or not present (a VXLAN checksum over IPv4 is set to
        // none), never bad (0).
        assert!(
            r[4].split('~').all(|s| s != "0") && r[4].split('~').any(|s| s == "1"),
            "{r:?}"
        );
        assert!(r[5].is_empty(), "malformed: {r:?}");
        // No expert error (severity 8388608) or warning (6291456): lengths agree.
        assert!(
            r[6].split('~').all(|s| s != "8388608" && s != "6291456"),
            "{r:?}"
        );
    }
}

/// Equal inner addresses and IDs in two different GRE tunnels: two datagrams, not one
/// mixed (or overlapping) one.
#[test]
fn equal_ids_in_different_tunnels_do_not_mix() {
    let (in_src, in_dst) = ([10, 1, 0, 1], [10, 1, 0, 2]);
    let a = payload(7, 1200);
    let b = payload(9, 1200);
    let fa = frags_v4(
        in_src,
        in_dst,
        0x7777,
        &udp_v4(in_src, in_dst, 5000, &a),
        &[600],
    );
    let fb = frags_v4(
        in_src,
        in_dst,
        0x7777,
        &udp_v4(in_src, in_dst, 5000, &b),
        &[600],
    );
    let frames = [
        gre([192, 0, 2, 1], [192, 0, 2, 2], &fa[0]),
        gre([192, 0, 2, 3], [192, 0, 2, 4], &fb[0]),
        gre([192, 0, 2, 3], [192, 0, 2, 4], &fb[1]),
        gre([192, 0, 2, 1], [192, 0, 2, 2], &fa[1]),
    ];
    let mut defrag = Defragmenter::new(DefragConfig::default());
    let mut got = Vec::new();
    for f in &frames {
        let p = Packet::new(
            f,
            Meta::new(
                Timestamp::from_micros(1, 0),
                f.len() as u32,
                LinkType::ETHERNET,
            ),
        );
        if let Defragged::Complete(whole) = defrag.add(&p) {
            let outer = Decoded::new(&whole);
            let src = outer.src_addr().unwrap().to_string();
            let d = innermost(outer);
            got.push((src, d.payload().unwrap().to_vec()));
        }
    }
    assert_eq!(
        got,
        vec![("192.0.2.3".to_string(), b), ("192.0.2.1".to_string(), a)]
    );
    let s = defrag.stats();
    assert_eq!((s.reassembled, s.in_progress), (2, 0));
    assert_eq!(s.overlaps, 0, "no overlap between the tunnels' fragments");
}
