//! Decoding benchmarks (tasks T2 tcp, T3 tcpopts, T4 dns, T5 ports), run side by side in
//! one criterion run: tracekit's decoder against libpcap (`pcap_next_ex`) with a
//! hand-written parser of the kind a C programmer writes (fixed Ethernet/VLAN/IP/TCP
//! offsets, no extension-header walk, no tunnels), here in Rust over the same FFI.
//! Both must produce the same results before they are timed.
//!
//! T2, T3 and T5 read `tcp-snap96.pcap` (per-packet cost dominates), T4 reads `tcp.pcap`
//! (DNS messages complete). Inputs are generated into `target/bench-data/` on first use.

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tracekit_bench::tasks::{
    DnsCounts, OptionCounts, TcpSums, t2_tcp, t3_tcpopts, t4_dns, t5_ports,
};
use tracekit_bench::{inputs, libpcap};

fn packets() -> u64 {
    inputs::packets()
}

fn input(name: &str, snaplen: u32) -> String {
    inputs::generated(name, snaplen)
}

fn libpcap_each(path: &str, f: impl FnMut(&[u8])) {
    libpcap::for_each_packet(path, f)
}

fn be16(b: &[u8], i: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?]))
}

fn be32(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from_be_bytes([
        *b.get(i)?,
        *b.get(i + 1)?,
        *b.get(i + 2)?,
        *b.get(i + 3)?,
    ]))
}

/// The hand-written parse: (protocol, L4 offset, IP end, non-first fragment) for
/// Ethernet, one optional VLAN tag, IPv4 or IPv6 (no extension headers).
fn hand_l4(b: &[u8]) -> Option<(u8, usize, usize, bool)> {
    let mut off = 14;
    let mut et = be16(b, 12)?;
    if et == 0x8100 {
        et = be16(b, 16)?;
        off = 18;
    }
    match et {
        0x0800 => {
            let ihl = usize::from(*b.get(off)? & 0xf) * 4;
            let total = usize::from(be16(b, off + 2)?);
            let frag = be16(b, off + 6)? & 0x1fff != 0;
            Some((*b.get(off + 9)?, off + ihl, off + total, frag))
        }
        0x86dd => {
            let plen = usize::from(be16(b, off + 4)?);
            Some((*b.get(off + 6)?, off + 40, off + 40 + plen, false))
        }
        _ => None,
    }
}

fn hand_t2(path: &str) -> TcpSums {
    let mut s = TcpSums::default();
    libpcap_each(path, |b| {
        let Some((6, l4, end, false)) = hand_l4(b) else {
            return;
        };
        let (Some(sp), Some(dp), Some(seq), Some(off)) = (
            be16(b, l4),
            be16(b, l4 + 2),
            be32(b, l4 + 4),
            b.get(l4 + 12),
        ) else {
            return;
        };
        let Some(flags) = b.get(l4 + 13) else { return };
        if b.len() < l4 + 20 {
            return;
        }
        s.packets += 1;
        s.ports += u64::from(sp) + u64::from(dp);
        s.seq += u64::from(seq);
        s.syn += u64::from(flags & 2 != 0);
        s.payload += (end - l4).saturating_sub(usize::from(off >> 4) * 4) as u64;
    });
    s
}

fn hand_t3(path: &str) -> OptionCounts {
    let mut c = OptionCounts::default();
    libpcap_each(path, |b| {
        let Some((6, l4, _, false)) = hand_l4(b) else {
            return;
        };
        if b.len() < l4 + 20 {
            return;
        }
        c.packets += 1;
        let hlen = usize::from(b[l4 + 12] >> 4) * 4;
        let end = (l4 + hlen).min(b.len());
        let mut i = l4 + 20;
        while i < end {
            match b[i] {
                0 => break,
                1 => i += 1,
                kind => {
                    let Some(&len) = b.get(i + 1) else { break };
                    let len = usize::from(len);
                    if len < 2 || i + len > end {
                        break;
                    }
                    match (kind, len) {
                        (2, 4) => {
                            c.mss += 1;
                            c.mss_sum += u64::from(be16(b, i + 2).unwrap_or(0));
                        }
                        (3, 3) => c.wscale += 1,
                        (4, 2) => c.sack_permitted += 1,
                        (5, l) if (l - 2) % 8 == 0 && l > 2 => {
                            c.sack_blocks += ((l - 2) / 8) as u64
                        }
                        (8, 10) => c.timestamps += 1,
                        _ => c.other += 1,
                    }
                    i += len;
                }
            }
        }
    });
    c
}

/// Skips a DNS name at `i` in `m`: the offset after it.
fn skip_name(m: &[u8], mut i: usize) -> Option<usize> {
    loop {
        let l = *m.get(i)?;
        if l == 0 {
            return Some(i + 1);
        }
        if l & 0xc0 == 0xc0 {
            return Some(i + 2);
        }
        i += 1 + usize::from(l);
    }
}

fn hand_t4(path: &str) -> DnsCounts {
    let mut c = DnsCounts::default();
    libpcap_each(path, |b| {
        let Some((17, l4, end, false)) = hand_l4(b) else {
            return;
        };
        let (Some(sp), Some(dp)) = (be16(b, l4), be16(b, l4 + 2)) else {
            return;
        };
        if ![53, 5353, 5355].iter().any(|p| *p == sp || *p == dp) {
            return;
        }
        let Some(m) = b.get(l4 + 8..end.min(b.len())) else {
            return;
        };
        if m.len() < 12 {
            return;
        }
        c.messages += 1;
        c.responses += u64::from(m[2] & 0x80 != 0);
        let qd = be16(m, 4).unwrap_or(0);
        let an = be16(m, 6).unwrap_or(0);
        let mut i = 12;
        for _ in 0..qd {
            // question names are written out in full
            loop {
                let Some(&l) = m.get(i) else { return };
                if l == 0 {
                    i += 1;
                    break;
                }
                c.name_bytes += u64::from(l);
                i += 1 + usize::from(l);
            }
            i += 4;
            c.questions += 1;
        }
        for _ in 0..an {
            let Some(j) = skip_name(m, i) else { return };
            let (Some(t), Some(rdlen)) = (be16(m, j), be16(m, j + 8)) else {
                return;
            };
            let next = j + 10 + usize::from(rdlen);
            if next > m.len() {
                return;
            }
            c.answers += 1;
            if (t == 1 && rdlen == 4) || (t == 28 && rdlen == 16) {
                c.addresses += 1;
            }
            i = next;
        }
    });
    c
}

fn hand_t5(path: &str) -> (u64, u64) {
    let mut table = vec![(0u64, 0u64); 4 * 65536];
    libpcap_each(path, |b| {
        let Some((proto @ (6 | 17), l4, end, false)) = hand_l4(b) else {
            return;
        };
        let (Some(sp), Some(dp)) = (be16(b, l4), be16(b, l4 + 2)) else {
            return;
        };
        let bytes = if proto == 6 {
            if b.len() < l4 + 20 {
                return;
            }
            (end - l4).saturating_sub(usize::from(b[l4 + 12] >> 4) * 4)
        } else {
            if b.len() < l4 + 8 {
                return;
            }
            usize::from(be16(b, l4 + 4).unwrap_or(8)).saturating_sub(8)
        } as u64;
        let base = usize::from(proto == 17) * 2 * 65536;
        table[base + usize::from(sp)].0 += 1;
        table[base + usize::from(sp)].1 += bytes;
        table[base + 65536 + usize::from(dp)].0 += 1;
        table[base + 65536 + usize::from(dp)].1 += bytes;
    });
    let mut h = 0u64;
    let mut n = 0u64;
    for (i, (p, b)) in table.iter().enumerate() {
        if *p != 0 {
            h = h.wrapping_add((i as u64 + 1).wrapping_mul(p.wrapping_mul(31).wrapping_add(*b)));
        }
        if i < 65536 || (2 * 65536..3 * 65536).contains(&i) {
            n += p;
        }
    }
    (n, h)
}

fn decode(c: &mut Criterion) {
    let snap = input("tcp-snap96.pcap", 96);
    let full = input("tcp.pcap", 65535);
    // Same answers, or the comparison means nothing.
    assert_eq!(t2_tcp(&snap).unwrap(), hand_t2(&snap));
    assert_eq!(t3_tcpopts(&snap).unwrap(), hand_t3(&snap));
    assert_eq!(t4_dns(&full).unwrap(), hand_t4(&full));
    let ports = t5_ports(&snap).unwrap();
    assert_eq!((ports.packets(), ports.checksum()), hand_t5(&snap));

    let mut run = |task: &str, path: &str, ours: &dyn Fn() -> u64, theirs: &dyn Fn() -> u64| {
        let mut group = c.benchmark_group(format!(
            "{task}/{}",
            Path::new(path).file_name().unwrap().to_str().unwrap()
        ));
        group.sample_size(20);
        group.throughput(Throughput::Elements(packets()));
        group.bench_function("libpcap_hand", |b| b.iter(|| black_box(theirs())));
        group.bench_function("tracekit", |b| b.iter(|| black_box(ours())));
        group.finish();
    };
    run("t2_tcp", &snap, &|| t2_tcp(&snap).unwrap().packets, &|| {
        hand_t2(&snap).packets
    });
    run(
        "t3_tcpopts",
        &snap,
        &|| t3_tcpopts(&snap).unwrap().mss,
        &|| hand_t3(&snap).mss,
    );
    run(
        "t4_dns",
        &full,
        &|| t4_dns(&full).unwrap().questions,
        &|| hand_t4(&full).questions,
    );
    run(
        "t5_ports",
        &snap,
        &|| t5_ports(&snap).unwrap().checksum(),
        &|| hand_t5(&snap).1,
    );
}

criterion_group!(benches, decode);
criterion_main!(benches);
