//! A deterministic generator of realistic synthetic traffic: Ethernet with IPv4 and IPv6,
//! TCP conversations (handshake with MSS/SACK/timestamp/window-scale options, request,
//! multi-segment response with delayed ACKs, FIN exchange), DNS queries and answers over
//! UDP (with name compression) and ICMP echo. Frames are written by
//! [`tracekit_testdata::builder`], so every length and checksum is correct and tshark and
//! tcpdump decode the output without complaint.

use std::fmt::Write as _;
use std::io::Write as _;

use tracekit::{LinkType, Meta, Packet, Timestamp};
use tracekit_testdata::builder::tcp_flags::{ACK, FIN, PSH, SYN};
use tracekit_testdata::builder::{Ethernet, Icmp, Ipv4, Ipv6, PacketBuilder, Tcp, Udp};

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

/// What an IP packet carries.
enum Transport<'a> {
    Tcp(Tcp, &'a [u8]),
    Udp(Udp, &'a [u8]),
    Icmp(Icmp, &'a [u8]),
}

/// Writes the frame from `src` to `dst` into `buf` (reused: no allocation once it has
/// grown to the largest frame).
fn frame<'b>(buf: &'b mut Vec<u8>, src: Host, dst: Host, t: Transport<'_>, ip_id: u16) -> &'b [u8] {
    let mut b = PacketBuilder::new();
    b.ethernet(Ethernet::new(src.mac, dst.mac));
    match (src.ip, dst.ip) {
        (Ip::V4(s), Ip::V4(d)) => b.ipv4(Ipv4::new(s, d).id(ip_id).dont_fragment()),
        (Ip::V6(s), Ip::V6(d)) => b.ipv6(Ipv6::new(s, d)),
        _ => unreachable!("hosts of one conversation share an IP version"),
    };
    let payload = match t {
        Transport::Tcp(h, p) => {
            b.tcp(h);
            p
        }
        Transport::Udp(h, p) => {
            b.udp(h);
            p
        }
        Transport::Icmp(h, p) => {
            b.icmp(h);
            p
        }
    };
    b.payload(payload).build_into(buf);
    buf
}

/// A TCP header as this generator's hosts send it (window 64240).
fn segment(sport: u16, dport: u16, seq: u32, ack: u32, flags: u8) -> Tcp {
    Tcp::new(sport, dport)
        .seq(seq)
        .ack(ack)
        .flags(flags)
        .window(64240)
}

/// The options of a SYN: MSS 1460, SACK permitted, timestamps, NOP, window scale 7.
fn syn_options(t: Tcp, ts: u32) -> Tcp {
    t.mss(1460)
        .sack_permitted()
        .timestamps(ts, 0)
        .nop()
        .wscale(7)
}

/// The options of every other segment: NOP, NOP, timestamps.
fn ts_options(t: Tcp, val: u32, ecr: u32) -> Tcp {
    t.nop().nop().timestamps(val, ecr)
}

/// Writes a DNS query for `name` (type A), or its answer when `answer` is given, into
/// `m`.
fn dns_message(m: &mut Vec<u8>, id: u16, name: &str, answer: Option<[u8; 4]>) {
    m.clear();
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
    /// Share of IPv4 conversations that are DNS (per mille; ICMP echo takes the next 20
    /// per mille); the rest TCP.
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

/// Numbers, times and writes the frames of [`generate`], up to the requested count.
struct Sender<F> {
    emit: F,
    buf: Vec<u8>,
    now_us: u64,
    emitted: u64,
    limit: u64,
    ip_id: u16,
}

impl<F: FnMut(&Packet<'_>)> Sender<F> {
    /// Sends a frame `gap_us` after the previous one (nothing once the count is reached).
    fn send(&mut self, src: Host, dst: Host, t: Transport<'_>, gap_us: u64) {
        if self.emitted >= self.limit {
            return;
        }
        self.now_us += gap_us;
        self.ip_id = self.ip_id.wrapping_add(1);
        let bytes = frame(&mut self.buf, src, dst, t, self.ip_id);
        let now = self.now_us;
        let ts = Timestamp::from_micros((now / 1_000_000) as u32, (now % 1_000_000) as u32);
        (self.emit)(&Packet::new(
            bytes,
            Meta::new(ts, bytes.len() as u32, LinkType::ETHERNET),
        ));
        self.emitted += 1;
    }
}

/// Generates `options.packets` Ethernet frames and hands each to `emit` in time order.
/// Buffers are reused: nothing is allocated per packet.
pub fn generate(options: GenOptions, emit: impl FnMut(&Packet<'_>)) {
    let mut rng = Rng::new(options.seed);
    let mut out = Sender {
        emit,
        buf: Vec::with_capacity(2048),
        now_us: u64::from(options.start_secs) * 1_000_000,
        emitted: 0,
        limit: options.packets,
        ip_id: 1,
    };
    let gateway_mac = [0x00, 0x1b, 0x21, 0x3a, 0x4f, 0x10];
    let resolver = Host {
        mac: gateway_mac,
        ip: Ip::V4([192, 0, 2, 53]),
    };
    let icmp_data: [u8; 56] = std::array::from_fn(|i| (i as u8).wrapping_add(0x10));
    let mut name = String::with_capacity(64);
    let mut dns = Vec::with_capacity(512);
    let mut request = Vec::with_capacity(1024);
    let mut payload = vec![0u8; 1448];
    let mut conversation = 0u32;
    while out.emitted < options.packets {
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
            name.clear();
            let (host, domain) = (rng.below(1000), rng.below(50));
            write!(name, "host{host}.example{domain}.com").expect("writing to a String");
            let id = rng.below(65536) as u16;
            dns_message(&mut dns, id, &name, None);
            let query = Transport::Udp(Udp::new(sport, 53), &dns);
            out.send(client, resolver, query, 200 + rng.below(5000));
            let addr = [203, 0, 113, rng.below(250) as u8];
            dns_message(&mut dns, id, &name, Some(addr));
            let answer = Transport::Udp(Udp::new(53, sport), &dns);
            out.send(resolver, client, answer, 5000 + rng.below(20000));
            continue;
        }
        if roll < options.dns_permille + 20 && !v6 {
            for seq in 1..=2u16 {
                let request = Icmp::echo_request(n as u16, seq);
                out.send(
                    client,
                    server,
                    Transport::Icmp(request, &icmp_data),
                    1_000_000,
                );
                let reply = Icmp::echo_reply(n as u16, seq);
                out.send(server, client, Transport::Icmp(reply, &icmp_data), 12_000);
            }
            continue;
        }
        // TCP conversation
        let dport = [80u16, 443, 443, 443, 22, 993][rng.below(6) as usize];
        let mut cseq = rng.next_u64() as u32;
        let mut sseq = rng.next_u64() as u32;
        let rtt = 2_000 + rng.below(40_000);
        let mut tsv = (out.now_us / 1000) as u32;
        let syn = syn_options(segment(sport, dport, cseq, 0, SYN), tsv);
        out.send(
            client,
            server,
            Transport::Tcp(syn, &[]),
            1_000 + rng.below(50_000),
        );
        cseq = cseq.wrapping_add(1);
        let synack = syn_options(segment(dport, sport, sseq, cseq, SYN | ACK), tsv + 7);
        out.send(server, client, Transport::Tcp(synack, &[]), rtt);
        sseq = sseq.wrapping_add(1);
        let ack = ts_options(segment(sport, dport, cseq, sseq, ACK), tsv, tsv + 7);
        out.send(client, server, Transport::Tcp(ack, &[]), 30);
        let req_len = 200 + rng.below(500) as usize;
        // Plain HTTP on port 80; opaque (encrypted-looking) bytes elsewhere.
        request.clear();
        if dport == 80 {
            let object = rng.below(100_000);
            write!(
                request,
                "GET /obj/{object} HTTP/1.1\r\nHost: example.net\r\nX-Pad: "
            )
            .expect("writing to a Vec");
            request.resize(req_len - 4, b'x');
            request.extend_from_slice(b"\r\n\r\n");
        } else {
            request.extend((0..req_len).map(|_| rng.next_u64() as u8));
        }
        let req = ts_options(
            segment(sport, dport, cseq, sseq, PSH | ACK),
            tsv + 1,
            tsv + 7,
        );
        out.send(client, server, Transport::Tcp(req, &request), 100);
        cseq = cseq.wrapping_add(req_len as u32);
        let segments = 1 + rng.below(u64::from(options.max_response_segments)) as u32;
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
            let seg = ts_options(segment(dport, sport, sseq, cseq, flags), tsv + 7, tsv);
            let gap = if i == 0 { rtt } else { 120 };
            out.send(server, client, Transport::Tcp(seg, &payload[..len]), gap);
            sseq = sseq.wrapping_add(len as u32);
            if i % 2 == 1 || i + 1 == segments {
                let a = ts_options(segment(sport, dport, cseq, sseq, ACK), tsv, tsv + 7);
                out.send(client, server, Transport::Tcp(a, &[]), 40);
            }
        }
        let fin = ts_options(
            segment(sport, dport, cseq, sseq, FIN | ACK),
            tsv + 2,
            tsv + 7,
        );
        out.send(client, server, Transport::Tcp(fin, &[]), 5_000);
        cseq = cseq.wrapping_add(1);
        let finack = ts_options(
            segment(dport, sport, sseq, cseq, FIN | ACK),
            tsv + 9,
            tsv + 2,
        );
        out.send(server, client, Transport::Tcp(finack, &[]), rtt);
        sseq = sseq.wrapping_add(1);
        let last = ts_options(segment(sport, dport, cseq, sseq, ACK), tsv + 3, tsv + 9);
        out.send(client, server, Transport::Tcp(last, &[]), 30);
    }
}
