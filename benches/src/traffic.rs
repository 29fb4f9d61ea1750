//! A deterministic generator of realistic synthetic traffic: Ethernet with IPv4 and IPv6,
//! TCP conversations (handshake with MSS/SACK/timestamp/window-scale options, request,
//! multi-segment response with delayed ACKs, FIN exchange), DNS queries and answers over
//! UDP (with name compression), ICMP echo and ARP. Every checksum is correct, so tshark
//! and tcpdump decode the output without complaint.

use tracekit::{LinkType, Meta, Packet, Timestamp};

/// xorshift64*: small, fast, deterministic.
pub struct Rng(u64);

impl Rng {
    /// A generator from a non-zero seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

fn checksum_fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn sum16(data: &[u8]) -> u32 {
    let mut sum = 0u32;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    sum
}

#[derive(Clone, Copy)]
enum Ip {
    V4([u8; 4]),
    V6([u8; 16]),
}

#[derive(Clone, Copy)]
struct Host {
    mac: [u8; 6],
    ip: Ip,
}

/// Builds frames into a reused buffer.
struct Frame {
    buf: Vec<u8>,
}

impl Frame {
    fn l4(&mut self, src: Host, dst: Host, proto: u8, l4: &[u8], ip_id: u16) -> &[u8] {
        self.buf.clear();
        self.buf.extend_from_slice(&dst.mac);
        self.buf.extend_from_slice(&src.mac);
        match (src.ip, dst.ip) {
            (Ip::V4(s), Ip::V4(d)) => {
                self.buf.extend_from_slice(&0x0800u16.to_be_bytes());
                let total = 20 + l4.len() as u16;
                let mut h = [0u8; 20];
                h[0] = 0x45;
                h[2..4].copy_from_slice(&total.to_be_bytes());
                h[4..6].copy_from_slice(&ip_id.to_be_bytes());
                h[6] = 0x40; // don't fragment
                h[8] = 64;
                h[9] = proto;
                h[12..16].copy_from_slice(&s);
                h[16..20].copy_from_slice(&d);
                let c = checksum_fold(sum16(&h));
                h[10..12].copy_from_slice(&c.to_be_bytes());
                self.buf.extend_from_slice(&h);
                let start = self.buf.len();
                self.buf.extend_from_slice(l4);
                let pseudo = sum16(&s) + sum16(&d) + u32::from(proto) + l4.len() as u32;
                self.finish_l4_checksum(start, proto, pseudo);
            }
            (Ip::V6(s), Ip::V6(d)) => {
                self.buf.extend_from_slice(&0x86ddu16.to_be_bytes());
                let mut h = [0u8; 40];
                h[0] = 0x60;
                h[4..6].copy_from_slice(&(l4.len() as u16).to_be_bytes());
                h[6] = proto;
                h[7] = 64;
                h[8..24].copy_from_slice(&s);
                h[24..40].copy_from_slice(&d);
                self.buf.extend_from_slice(&h);
                let start = self.buf.len();
                self.buf.extend_from_slice(l4);
                let pseudo = sum16(&s) + sum16(&d) + u32::from(proto) + l4.len() as u32;
                self.finish_l4_checksum(start, proto, pseudo);
            }
            _ => unreachable!("hosts of one conversation share an IP version"),
        }
        &self.buf
    }

    fn finish_l4_checksum(&mut self, start: usize, proto: u8, pseudo: u32) {
        let at = match proto {
            6 => start + 16,
            17 => start + 6,
            _ => return,
        };
        let c = checksum_fold(pseudo + sum16(&self.buf[start..]));
        let c = if proto == 17 && c == 0 { 0xffff } else { c };
        self.buf[at..at + 2].copy_from_slice(&c.to_be_bytes());
    }
}

const SYN: u8 = 0x02;
const ACK: u8 = 0x10;
const PSH: u8 = 0x08;
const FIN: u8 = 0x01;

fn tcp_segment(
    sport: u16,
    dport: u16,
    seq: u32,
    ack: u32,
    flags: u8,
    opts: &[u8],
    payload: &[u8],
) -> Vec<u8> {
    let hl = 20 + opts.len();
    let mut t = Vec::with_capacity(hl + payload.len());
    t.extend_from_slice(&sport.to_be_bytes());
    t.extend_from_slice(&dport.to_be_bytes());
    t.extend_from_slice(&seq.to_be_bytes());
    t.extend_from_slice(&ack.to_be_bytes());
    t.push(((hl / 4) as u8) << 4);
    t.push(flags);
    t.extend_from_slice(&64240u16.to_be_bytes());
    t.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent
    t.extend_from_slice(opts);
    t.extend_from_slice(payload);
    t
}

fn ts_option(val: u32, ecr: u32) -> [u8; 12] {
    let mut o = [1, 1, 8, 10, 0, 0, 0, 0, 0, 0, 0, 0];
    o[4..8].copy_from_slice(&val.to_be_bytes());
    o[8..12].copy_from_slice(&ecr.to_be_bytes());
    o
}

fn syn_options(ts: u32) -> Vec<u8> {
    // MSS 1460, SACK permitted, timestamps, NOP, window scale 7
    let mut o = vec![2, 4, 0x05, 0xb4, 4, 2];
    o.extend_from_slice(&ts_option(ts, 0)[2..]);
    o.extend_from_slice(&[1, 3, 3, 7]);
    o
}

fn dns_message(id: u16, name: &str, answer: Option<[u8; 4]>) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&(if answer.is_some() { 0x8180u16 } else { 0x0100 }).to_be_bytes());
    m.extend_from_slice(&1u16.to_be_bytes());
    m.extend_from_slice(&u16::from(answer.is_some()).to_be_bytes());
    m.extend_from_slice(&[0, 0, 0, 0]);
    for label in name.split('.') {
        m.push(label.len() as u8);
        m.extend_from_slice(label.as_bytes());
    }
    m.push(0);
    m.extend_from_slice(&[0, 1, 0, 1]); // A, IN
    if let Some(addr) = answer {
        m.extend_from_slice(&[0xc0, 0x0c, 0, 1, 0, 1]);
        m.extend_from_slice(&300u32.to_be_bytes());
        m.extend_from_slice(&4u16.to_be_bytes());
        m.extend_from_slice(&addr);
    }
    m
}

/// What to generate.
#[derive(Debug, Clone, Copy)]
pub struct GenOptions {
    /// Number of packets.
    pub packets: u64,
    /// PRNG seed.
    pub seed: u64,
    /// Start time, seconds since the epoch.
    pub start_secs: u32,
    /// Largest response (in MSS-sized segments) of a TCP conversation.
    pub max_response_segments: u32,
    /// Share of conversations that are DNS / ICMP / ARP (per mille each); the rest TCP.
    pub dns_permille: u64,
}

impl Default for GenOptions {
    fn default() -> GenOptions {
        GenOptions {
            packets: 400,
            seed: 0x7ac3_a11c_e5ee_d001,
            start_secs: 1_790_000_000,
            max_response_segments: 10,
            dns_permille: 200,
        }
    }
}

/// Generates `options.packets` Ethernet frames and hands each to `emit` in time order.
pub fn generate(options: GenOptions, mut emit: impl FnMut(&Packet<'_>)) {
    let mut rng = Rng::new(options.seed);
    let mut frame = Frame {
        buf: Vec::with_capacity(2048),
    };
    let mut now_us: u64 = u64::from(options.start_secs) * 1_000_000;
    let mut emitted = 0u64;
    let mut ip_id: u16 = 1;
    let gateway_mac = [0x00, 0x1b, 0x21, 0x3a, 0x4f, 0x10];
    let resolver = Host {
        mac: gateway_mac,
        ip: Ip::V4([192, 0, 2, 53]),
    };
    let mut send = |src: Host,
                    dst: Host,
                    proto: u8,
                    l4: &[u8],
                    gap_us: u64,
                    emitted: &mut u64,
                    ip_id: &mut u16,
                    now_us: &mut u64| {
        if *emitted >= options.packets {
            return;
        }
        *now_us += gap_us;
        *ip_id = ip_id.wrapping_add(1);
        let bytes = frame.l4(src, dst, proto, l4, *ip_id);
        let ts = Timestamp::from_micros((*now_us / 1_000_000) as u32, (*now_us % 1_000_000) as u32);
        emit(&Packet::new(
            bytes,
            Meta::new(ts, bytes.len() as u32, LinkType::ETHERNET),
        ));
        *emitted += 1;
    };
    let mut conversation = 0u32;
    while emitted < options.packets {
        conversation += 1;
        let n = conversation;
        let client_mac = [0x02, 0x42, 0xac, 0x11, (n >> 8) as u8, n as u8];
        let v6 = rng.below(10) < 2;
        let (client_ip, server_ip) = if v6 {
            let mut c = [0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
            c[14..16].copy_from_slice(&(n as u16).to_be_bytes());
            let mut s = [0x20, 0x01, 0x0d, 0xb8, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
            s[15] = (rng.below(200) + 1) as u8;
            (Ip::V6(c), Ip::V6(s))
        } else {
            (
                Ip::V4([10, 0, (n >> 8) as u8, n as u8]),
                Ip::V4([198, 51, 100, (rng.below(200) + 1) as u8]),
            )
        };
        let client = Host {
            mac: client_mac,
            ip: client_ip,
        };
        let server = Host {
            mac: gateway_mac,
            ip: server_ip,
        };
        let sport = 32768 + (rng.below(28000) as u16);
        let roll = rng.below(1000);
        if roll < options.dns_permille && !v6 {
            let name = format!("host{}.example{}.com", rng.below(1000), rng.below(50));
            let id = rng.below(65536) as u16;
            let q = dns_message(id, &name, None);
            let mut udp = Vec::new();
            let push_udp = |udp: &mut Vec<u8>, sp: u16, dp: u16, body: &[u8]| {
                udp.clear();
                udp.extend_from_slice(&sp.to_be_bytes());
                udp.extend_from_slice(&dp.to_be_bytes());
                udp.extend_from_slice(&(8 + body.len() as u16).to_be_bytes());
                udp.extend_from_slice(&[0, 0]);
                udp.extend_from_slice(body);
            };
            push_udp(&mut udp, sport, 53, &q);
            send(
                client,
                resolver,
                17,
                &udp,
                200 + rng.below(5000),
                &mut emitted,
                &mut ip_id,
                &mut now_us,
            );
            let addr = [203, 0, 113, rng.below(250) as u8];
            let r = dns_message(id, &name, Some(addr));
            push_udp(&mut udp, 53, sport, &r);
            send(
                resolver,
                client,
                17,
                &udp,
                5000 + rng.below(20000),
                &mut emitted,
                &mut ip_id,
                &mut now_us,
            );
            continue;
        }
        if roll < options.dns_permille + 20 && !v6 {
            for seq in 1..=2u16 {
                for reply in [false, true] {
                    let mut icmp = vec![if reply { 0 } else { 8 }, 0, 0, 0];
                    icmp.extend_from_slice(&(n as u16).to_be_bytes());
                    icmp.extend_from_slice(&seq.to_be_bytes());
                    icmp.extend((0..56u8).map(|b| b.wrapping_add(0x10)));
                    let c = checksum_fold(sum16(&icmp));
                    icmp[2..4].copy_from_slice(&c.to_be_bytes());
                    let (a, b) = if reply {
                        (server, client)
                    } else {
                        (client, server)
                    };
                    send(
                        a,
                        b,
                        1,
                        &icmp,
                        if reply { 12_000 } else { 1_000_000 },
                        &mut emitted,
                        &mut ip_id,
                        &mut now_us,
                    );
                }
            }
            continue;
        }
        // TCP conversation
        let dport = [80u16, 443, 443, 443, 22, 993][rng.below(6) as usize];
        let mut cseq = rng.next_u64() as u32;
        let mut sseq = rng.next_u64() as u32;
        let rtt = 2_000 + rng.below(40_000);
        let mut tsv = (now_us / 1000) as u32;
        let syn = tcp_segment(sport, dport, cseq, 0, SYN, &syn_options(tsv), &[]);
        send(
            client,
            server,
            6,
            &syn,
            1_000 + rng.below(50_000),
            &mut emitted,
            &mut ip_id,
            &mut now_us,
        );
        cseq = cseq.wrapping_add(1);
        let synack = tcp_segment(
            dport,
            sport,
            sseq,
            cseq,
            SYN | ACK,
            &syn_options(tsv + 7),
            &[],
        );
        send(
            server,
            client,
            6,
            &synack,
            rtt,
            &mut emitted,
            &mut ip_id,
            &mut now_us,
        );
        sseq = sseq.wrapping_add(1);
        let opts = |v: u32, e: u32| ts_option(v, e);
        let ack = tcp_segment(sport, dport, cseq, sseq, ACK, &opts(tsv, tsv + 7), &[]);
        send(
            client,
            server,
            6,
            &ack,
            30,
            &mut emitted,
            &mut ip_id,
            &mut now_us,
        );
        let req_len = 200 + rng.below(500) as usize;
        // Plain HTTP on port 80; opaque (encrypted-looking) bytes elsewhere.
        let request: Vec<u8> = if dport == 80 {
            let mut r = format!(
                "GET /obj/{} HTTP/1.1\r\nHost: example.net\r\nX-Pad: ",
                rng.below(100_000)
            )
            .into_bytes();
            r.resize(req_len - 4, b'x');
            r.extend_from_slice(b"\r\n\r\n");
            r
        } else {
            (0..req_len).map(|_| rng.next_u64() as u8).collect()
        };
        let req = tcp_segment(
            sport,
            dport,
            cseq,
            sseq,
            PSH | ACK,
            &opts(tsv + 1, tsv + 7),
            &request,
        );
        send(
            client,
            server,
            6,
            &req,
            100,
            &mut emitted,
            &mut ip_id,
            &mut now_us,
        );
        cseq = cseq.wrapping_add(req_len as u32);
        let segments = 1 + rng.below(u64::from(options.max_response_segments)) as u32;
        let mut payload = vec![0u8; 1448];
        for i in 0..segments {
            tsv += 1;
            let len = if i + 1 == segments {
                1 + rng.below(1448) as usize
            } else {
                1448
            };
            for b in payload[..len].iter_mut() {
                *b = rng.next_u64() as u8;
            }
            if dport == 80 && i == 0 {
                let head = b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n";
                let n = head.len().min(len);
                payload[..n].copy_from_slice(&head[..n]);
            }
            let flags = if i + 1 == segments { PSH | ACK } else { ACK };
            let seg = tcp_segment(
                dport,
                sport,
                sseq,
                cseq,
                flags,
                &opts(tsv + 7, tsv),
                &payload[..len],
            );
            send(
                server,
                client,
                6,
                &seg,
                if i == 0 { rtt } else { 120 },
                &mut emitted,
                &mut ip_id,
                &mut now_us,
            );
            sseq = sseq.wrapping_add(len as u32);
            if i % 2 == 1 || i + 1 == segments {
                let a = tcp_segment(sport, dport, cseq, sseq, ACK, &opts(tsv, tsv + 7), &[]);
                send(
                    client,
                    server,
                    6,
                    &a,
                    40,
                    &mut emitted,
                    &mut ip_id,
                    &mut now_us,
                );
            }
        }
        let fin = tcp_segment(
            sport,
            dport,
            cseq,
            sseq,
            FIN | ACK,
            &opts(tsv + 2, tsv + 7),
            &[],
        );
        send(
            client,
            server,
            6,
            &fin,
            5_000,
            &mut emitted,
            &mut ip_id,
            &mut now_us,
        );
        cseq = cseq.wrapping_add(1);
        let finack = tcp_segment(
            dport,
            sport,
            sseq,
            cseq,
            FIN | ACK,
            &opts(tsv + 9, tsv + 2),
            &[],
        );
        send(
            server,
            client,
            6,
            &finack,
            rtt,
            &mut emitted,
            &mut ip_id,
            &mut now_us,
        );
        sseq = sseq.wrapping_add(1);
        let last = tcp_segment(sport, dport, cseq, sseq, ACK, &opts(tsv + 3, tsv + 9), &[]);
        send(
            client,
            server,
            6,
            &last,
            30,
            &mut emitted,
            &mut ip_id,
            &mut now_us,
        );
    }
}
