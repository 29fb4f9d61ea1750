//! Address anonymisation: prefix-preserving Crypto-PAn or prefix substitution, applied
//! in place to the IPv4 and IPv6 addresses of captured packets (source, destination or
//! both), to the addresses quoted inside ICMP and ICMPv6 error messages, to ARP sender
//! and target addresses, and to all of these in packets tunnelled inside (IP in IP, GRE,
//! VXLAN, Teredo, Geneve, GTP-U), with the IP, TCP, UDP, ICMP and ICMPv6 checksums kept
//! valid, including a UDP checksum that covers a tunnelled packet (or zeroed, as libtrace
//! 3's traceanon does). A GRE checksum over a tunnelled packet is not mended.
//!
//! With the same 32-byte key, the IPv4 results are those of traceanon (`-c KEY`) and of
//! the Crypto-PAn reference implementation; IPv6 addresses use the same construction
//! over 128 bits.
//!
//! ```
//! use tracekit::anon::{Anonymizer, Checksums, Method, key_from_text};
//!
//! let key = key_from_text("a key of up to thirty-two bytes.");
//! let mut anon = Anonymizer::new(Method::cryptopan(&key), true, true, Checksums::Update);
//! let a = anon.map_v4("192.0.2.1".parse().unwrap());
//! let b = anon.map_v4("192.0.2.200".parse().unwrap());
//! // The two addresses share 24 leading bits, and so do their images.
//! assert_eq!((u32::from(a) ^ u32::from(b)).leading_zeros(), 24);
//! ```
//!
//! Rewriting a packet copies nothing and allocates nothing: [`Anonymizer::rewrite`]
//! works on a caller's buffer (the command copies each packet into one reused buffer).

mod cryptopan;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub use cryptopan::{CryptoPan, KEY_LEN};
use tracekit_core::LinkType;
use tracekit_decode::{Decoded, ethertype};

/// What went wrong setting anonymisation up.
#[derive(Debug, thiserror::Error)]
pub enum AnonError {
    /// A key file shorter than a key.
    #[error("key file holds {0} bytes; a Crypto-PAn key is {KEY_LEN}")]
    ShortKey(usize),
    /// A prefix that is not `ADDRESS/BITS`.
    #[error("prefix '{0}': expected ADDRESS/BITS, such as 10.0.0.0/8 or 2001:db8::/32")]
    BadPrefix(String),
}

/// A key given as text, as traceanon's `-c` takes it: its first 32 bytes, padded with
/// zero bytes when shorter.
pub fn key_from_text(text: &str) -> [u8; KEY_LEN] {
    let mut key = [0u8; KEY_LEN];
    let bytes = text.as_bytes();
    let n = bytes.len().min(KEY_LEN);
    key[..n].copy_from_slice(&bytes[..n]);
    key
}

/// A key read from a key file: its first 32 bytes, taken as they are (binary keys
/// welcome). traceanon 3's `-f` stops at the first zero byte; this does not.
pub fn key_from_file_bytes(bytes: &[u8]) -> Result<[u8; KEY_LEN], AnonError> {
    let key = bytes
        .get(..KEY_LEN)
        .ok_or(AnonError::ShortKey(bytes.len()))?;
    let mut out = [0u8; KEY_LEN];
    out.copy_from_slice(key);
    Ok(out)
}

/// An address prefix for prefix substitution: the first `bits` bits of every address of
/// its family are replaced by the prefix's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prefix {
    /// The prefix's address.
    pub addr: IpAddr,
    /// How many leading bits it replaces.
    pub bits: u8,
}

impl std::str::FromStr for Prefix {
    type Err = AnonError;

    /// Parses `ADDRESS/BITS`.
    fn from_str(s: &str) -> Result<Prefix, AnonError> {
        let bad = || AnonError::BadPrefix(s.to_string());
        let (addr, bits) = s.split_once('/').ok_or_else(bad)?;
        let addr: IpAddr = addr.parse().map_err(|_| bad())?;
        let bits: u8 = bits.parse().map_err(|_| bad())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        if bits > max {
            return Err(bad());
        }
        Ok(Prefix { addr, bits })
    }
}

/// How addresses are transformed.
#[derive(Clone, Debug)]
pub enum Method {
    /// Prefix-preserving Crypto-PAn.
    CryptoPan(Box<CryptoPan>),
    /// Prefix substitution: an IPv4 prefix for IPv4 addresses, an IPv6 prefix for IPv6
    /// addresses. Addresses of a family without a prefix are left as they are (and
    /// counted in [`AnonStats::unchanged`]).
    Prefix {
        /// The IPv4 prefix, as (address, bits).
        v4: Option<(u32, u8)>,
        /// The IPv6 prefix, as (address, bits).
        v6: Option<(u128, u8)>,
    },
}

impl Method {
    /// Crypto-PAn with a 32-byte key.
    pub fn cryptopan(key: &[u8; KEY_LEN]) -> Method {
        Method::CryptoPan(Box::new(CryptoPan::new(key)))
    }

    /// Prefix substitution with these prefixes (at most one per family is used: the
    /// last given).
    pub fn prefixes(prefixes: &[Prefix]) -> Method {
        let (mut v4, mut v6) = (None, None);
        for p in prefixes {
            match p.addr {
                IpAddr::V4(a) => v4 = Some((u32::from(a), p.bits)),
                IpAddr::V6(a) => v6 = Some((u128::from(a), p.bits)),
            }
        }
        Method::Prefix { v4, v6 }
    }
}

/// What happens to checksums that cover a rewritten address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Checksums {
    /// Updated incrementally (RFC 1624) for every rewritten 16-bit word: a correct
    /// checksum stays correct, also for truncated captures and for the quoted headers
    /// of ICMP errors; a UDP checksum of zero (none) stays zero.
    #[default]
    Update,
    /// As libtrace 3's traceanon: the packet's IPv4, TCP, UDP and ICMP checksums are set
    /// to zero (headers quoted in ICMP errors are updated, as traceanon does); ICMPv6
    /// checksums, which traceanon 3 leaves alone (it does not rewrite IPv6), are zeroed
    /// too.
    Zero,
}

/// What an [`Anonymizer`] has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AnonStats {
    /// IPv4 packets rewritten.
    pub ipv4: u64,
    /// IPv6 packets rewritten.
    pub ipv6: u64,
    /// ARP packets rewritten.
    pub arp: u64,
    /// IP headers quoted in ICMP errors that were rewritten.
    pub quoted: u64,
    /// Addresses left unchanged because no prefix was given for their family.
    pub unchanged: u64,
}

/// The most network layers rewritten in one packet: the packet's own and those of the
/// packets tunnelled inside it.
const MAX_TUNNEL_LEVELS: usize = 5;

/// One network layer of a packet, as offsets into its bytes.
#[derive(Clone, Copy, Debug)]
struct Level {
    ethertype: u16,
    l3: usize,
    l4: Option<(usize, u8)>,
}

/// The deepest ICMP-error-inside-ICMP-error nesting that is followed.
const MAX_QUOTE_DEPTH: u8 = 4;

/// Entries in each of the address caches (direct mapped).
const CACHE_SLOTS: usize = 4096;

/// Anonymises the addresses of packets, one at a time, in place.
pub struct Anonymizer {
    method: Method,
    source: bool,
    dest: bool,
    checksums: Checksums,
    cache_v4: Vec<Option<(u32, u32)>>,
    cache_v6: Vec<Option<(u128, u128)>>,
    stats: AnonStats,
}

impl Anonymizer {
    /// An anonymiser that rewrites source addresses (`source`), destination addresses
    /// (`dest`) or both. (ICMP errors quote a packet that went the other way: its
    /// destination is rewritten as a source and its source as a destination.)
    pub fn new(method: Method, source: bool, dest: bool, checksums: Checksums) -> Anonymizer {
        let cached = matches!(method, Method::CryptoPan(_));
        Anonymizer {
            method,
            source,
            dest,
            checksums,
            cache_v4: if cached {
                vec![None; CACHE_SLOTS]
            } else {
                Vec::new()
            },
            cache_v6: if cached {
                vec![None; CACHE_SLOTS]
            } else {
                Vec::new()
            },
            stats: AnonStats::default(),
        }
    }

    /// What has been rewritten so far.
    pub fn stats(&self) -> AnonStats {
        self.stats
    }

    /// The image of an IPv4 address.
    pub fn map_v4(&mut self, addr: Ipv4Addr) -> Ipv4Addr {
        Ipv4Addr::from(self.v4(u32::from(addr)))
    }

    /// The image of an IPv6 address.
    pub fn map_v6(&mut self, addr: Ipv6Addr) -> Ipv6Addr {
        Ipv6Addr::from(self.v6(u128::from(addr)))
    }

    fn v4(&mut self, a: u32) -> u32 {
        match &self.method {
            Method::CryptoPan(pan) => {
                let slot = (a.wrapping_mul(0x9e37_79b1) >> 20) as usize % CACHE_SLOTS;
                if let Some((k, v)) = self.cache_v4[slot]
                    && k == a
                {
                    return v;
                }
                let v = pan.anonymize_v4(a);
                self.cache_v4[slot] = Some((a, v));
                v
            }
            Method::Prefix {
                v4: Some((p, bits)),
                ..
            } => {
                let mask = u32::MAX.checked_shl(32 - u32::from(*bits)).unwrap_or(0);
                (p & mask) | (a & !mask)
            }
            Method::Prefix { v4: None, .. } => {
                self.stats.unchanged += 1;
                a
            }
        }
    }

    fn v6(&mut self, a: u128) -> u128 {
        match &self.method {
            Method::CryptoPan(pan) => {
                let h = (a ^ (a >> 64)) as u64;
                let slot = (h.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 52) as usize % CACHE_SLOTS;
                if let Some((k, v)) = self.cache_v6[slot]
                    && k == a
                {
                    return v;
                }
                let v = pan.anonymize_v6(a);
                self.cache_v6[slot] = Some((a, v));
                v
            }
            Method::Prefix {
                v6: Some((p, bits)),
                ..
            } => {
                let mask = u128::MAX.checked_shl(128 - u32::from(*bits)).unwrap_or(0);
                (p & mask) | (a & !mask)
            }
            Method::Prefix { v6: None, .. } => {
                self.stats.unchanged += 1;
                a
            }
        }
    }

    /// Rewrites the addresses of one captured packet of link type `link` (`wire_len`
    /// bytes on the wire) in place. Only captured bytes are touched: an address cut by
    /// the capture keeps its captured leading bytes' images (Crypto-PAn's image of a
    /// byte depends only on the bytes before it). Returns whether anything changed.
    pub fn rewrite(&mut self, data: &mut [u8], link: LinkType, wire_len: u32) -> bool {
        if !(self.source || self.dest) {
            return false;
        }
        if link == LinkType::ETHERNET && plain_ipv4_over_ethernet(data) {
            return self.ipv4(data, ETHERNET_LEN, self.source, self.dest, 0);
        }
        self.rewrite_decoded(data, link, wire_len)
    }

    /// [`Anonymizer::rewrite`] for any packet: the decoder finds its network layers.
    fn rewrite_decoded(&mut self, data: &mut [u8], link: LinkType, wire_len: u32) -> bool {
        if !(self.source || self.dest) {
            return false;
        }
        // The network layer of the packet and of every packet tunnelled inside it (IP in
        // IP, GRE, VXLAN, Teredo, ...), as offsets into `data`, outermost first.
        let mut levels = [None; MAX_TUNNEL_LEVELS];
        {
            let base = data.as_ptr() as usize;
            let mut d = Some(Decoded::from_bytes(data, link, wire_len));
            for level in &mut levels {
                let Some(cur) = d.take() else { break };
                let at = cur.data().as_ptr() as usize - base;
                let Some(l3) = cur.layer3_offset() else { break };
                *level = Some(Level {
                    ethertype: cur.ethertype(),
                    l3: at + l3,
                    l4: cur.transport_offset().map(|(t, p)| (at + t, p)),
                });
                d = cur.inner();
            }
        }
        self.rewrite_level(data, &levels, 0)
    }

    /// Rewrites the network layer at `levels[i]` and the packets tunnelled inside it,
    /// mending the checksum of the transport that carries them.
    fn rewrite_level(&mut self, data: &mut [u8], levels: &[Option<Level>], i: usize) -> bool {
        let Some(Some(level)) = levels.get(i).copied() else {
            return false;
        };
        let off = level.l3;
        let done = match level.ethertype {
            ethertype::IPV4 => self.ipv4(data, off, self.source, self.dest, 0),
            ethertype::IPV6 => {
                let t = level.l4.filter(|(t, _)| *t >= off + 40);
                self.ipv6(data, off, t, self.source, self.dest, 0)
            }
            ethertype::ARP => self.arp(data, off),
            _ => false,
        };
        if !matches!(levels.get(i + 1), Some(Some(_))) {
            return done;
        }
        // A UDP checksum (VXLAN, Teredo, Geneve, GTP-U) covers the tunnelled packet.
        let covering = match level.l4 {
            Some((t, 17)) if self.checksums == Checksums::Update => {
                checksum_at(data, t + 6).filter(|c| *c != 0).map(|_| t)
            }
            _ => None,
        };
        let region = |data: &[u8], t: usize| ones_sum(data.get(t + 8..).unwrap_or(&[]));
        let before = covering.map(|t| region(data, t));
        let inner = self.rewrite_level(data, levels, i + 1);
        if let (Some(t), Some(before)) = (covering, before) {
            let after = region(data, t);
            update_word(data, t + 6, before, after);
            udp_zero_is_ones(data, t + 6);
        }
        done || inner
    }

    /// Rewrites an IPv4 header at `off` (and what its checksums cover). `depth` 0 is
    /// the packet's own header, deeper ones are quoted in ICMP errors.
    fn ipv4(&mut self, b: &mut [u8], off: usize, src: bool, dst: bool, depth: u8) -> bool {
        let len = b.len();
        let Some(&vihl) = b.get(off) else {
            return false;
        };
        // The packet's own header must be complete (as traceanon asks); a quoted one may
        // be cut by the capture.
        if vihl >> 4 != 4 || (depth == 0 && len - off < 20) {
            return false;
        }
        let ihl = usize::from(vihl & 0x0f) * 4;
        let proto = b.get(off + 9).copied();
        let first = b
            .get(off + 6..off + 8)
            .is_some_and(|f| u16::from_be_bytes([f[0], f[1]]) & 0x1fff == 0);
        let t = off + ihl;
        let transport = if ihl >= 20 && first && t <= len {
            proto
        } else {
            None
        };
        let zero = self.checksums == Checksums::Zero;
        // Checksums zeroed below need no mending first (a transport checksum is zeroed
        // only when its header was captured whole).
        let zeroed = zero && depth == 0;
        let have = len.saturating_sub(t);
        let ip_sum = (!zeroed).then_some(off + 10);
        let l4_sum = match transport {
            Some(6) if !(zeroed && have >= 20) => Some(t + 16),
            Some(17) if !(zeroed && have >= 8) && (zero || checksum_at(b, t + 6) != Some(0)) => {
                Some(t + 6)
            }
            _ => None,
        };
        let udp = transport == Some(17);
        for (on, field) in [(src, 12), (dst, 16)] {
            if !on {
                continue;
            }
            let at = off + field;
            let Some(old) = read_partial::<4>(b, at) else {
                continue;
            };
            let new = self.v4(u32::from_be_bytes(old.0)).to_be_bytes();
            if old.1 == 4 {
                for w in [0, 2] {
                    let (o, n) = (word(&old.0, w), word(&new, w));
                    if let Some(c) = ip_sum {
                        update_word(b, c, o, n);
                    }
                    if let Some(c) = l4_sum {
                        update_word(b, c, o, n);
                        if udp && !zero {
                            udp_zero_is_ones(b, c);
                        }
                    }
                }
            }
            write_partial(b, at, &new, old.1);
        }
        if transport == Some(1) && (src || dst) {
            self.icmp_quote(b, off, t, src, dst, depth, false);
        }
        if zero && depth == 0 {
            zero_checksum(b, off + 10);
            if let Some(p) = transport {
                zero_transport_checksum(b, t, p);
            }
        }
        if depth == 0 {
            self.stats.ipv4 += 1;
        } else {
            self.stats.quoted += 1;
        }
        true
    }

    /// Rewrites an IPv6 header at `off`; `l4` is where its transport header starts and
    /// the protocol (after extension headers), when known.
    fn ipv6(
        &mut self,
        b: &mut [u8],
        off: usize,
        l4: Option<(usize, u8)>,
        src: bool,
        dst: bool,
        depth: u8,
    ) -> bool {
        let len = b.len();
        let Some(&v) = b.get(off) else { return false };
        if v >> 4 != 6 || (depth == 0 && len - off < 40) {
            return false;
        }
        let zero = self.checksums == Checksums::Zero;
        let csum_at = match l4 {
            Some((t, 6)) => Some(t + 16),
            Some((t, 17)) if zero || checksum_at(b, t + 6) != Some(0) => Some(t + 6),
            Some((t, 58)) => Some(t + 2),
            _ => None,
        };
        for (on, field) in [(src, 8), (dst, 24)] {
            if !on {
                continue;
            }
            let at = off + field;
            let Some(old) = read_partial::<16>(b, at) else {
                continue;
            };
            let new = self.v6(u128::from_be_bytes(old.0)).to_be_bytes();
            if old.1 == 16
                && let Some(c) = csum_at
            {
                for w in (0..16).step_by(2) {
                    update_word(b, c, word(&old.0, w), word(&new, w));
                }
                if !zero && matches!(l4, Some((_, 17))) {
                    udp_zero_is_ones(b, c);
                }
            }
            write_partial(b, at, &new, old.1);
        }
        if let Some((t, 58)) = l4 {
            self.icmp_quote(b, off, t, src, dst, depth, true);
        }
        if zero && depth == 0 {
            match l4 {
                Some((t, 58)) if len.saturating_sub(t) >= 4 => zero_checksum(b, t + 2),
                Some((t, p)) => zero_transport_checksum(b, t, p),
                None => {}
            }
        }
        if depth == 0 {
            self.stats.ipv6 += 1;
        } else {
            self.stats.quoted += 1;
        }
        true
    }

    /// For an ICMP (or ICMPv6) message at `t` in the IP packet at `ip`: rewrites the
    /// header an error message quotes (it travelled the other way, so source and
    /// destination swap roles) and mends the message's checksum.
    #[allow(clippy::too_many_arguments)]
    fn icmp_quote(
        &mut self,
        b: &mut [u8],
        ip: usize,
        t: usize,
        src: bool,
        dst: bool,
        depth: u8,
        v6: bool,
    ) {
        let Some(&kind) = b.get(t) else { return };
        let error = if v6 {
            (1..=4).contains(&kind)
        } else {
            matches!(kind, 3 | 5 | 11)
        };
        let zero = self.checksums == Checksums::Zero;
        if error && depth < MAX_QUOTE_DEPTH && t + 8 < b.len() {
            // The message ends where its IP packet says, or at the capture's end.
            let end = if v6 {
                b.get(ip + 4..ip + 6)
                    .map(|l| ip + 40 + usize::from(u16::from_be_bytes([l[0], l[1]])))
            } else {
                b.get(ip + 2..ip + 4)
                    .map(|l| ip + usize::from(u16::from_be_bytes([l[0], l[1]])))
            }
            .unwrap_or(b.len())
            .clamp(t + 8, b.len());
            let before = ones_sum(&b[t + 8..end]);
            if v6 {
                let inner = t + 8;
                let l4 = b
                    .get(inner + 6)
                    .filter(|p| matches!(**p, 6 | 17 | 58))
                    .map(|p| (inner + 40, *p));
                self.ipv6(b, inner, l4, dst, src, depth + 1);
            } else {
                self.ipv4(b, t + 8, dst, src, depth + 1);
            }
            if !zero {
                let after = ones_sum(&b[t + 8..end]);
                update_word(b, t + 2, before, after);
            }
        }
        if zero {
            zero_checksum(b, t + 2);
        }
    }

    /// Rewrites the sender (as a source) and target (as a destination) protocol
    /// addresses of an ARP packet for IPv4.
    fn arp(&mut self, b: &mut [u8], off: usize) -> bool {
        let Some(h) = b.get(off..off + 8) else {
            return false;
        };
        let (ptype, hlen, plen) = (u16::from_be_bytes([h[2], h[3]]), usize::from(h[4]), h[5]);
        if ptype != ethertype::IPV4 || plen != 4 {
            return false;
        }
        let spa = off + 8 + hlen;
        let tpa = spa + 4 + hlen;
        for (on, at) in [(self.source, spa), (self.dest, tpa)] {
            if let (true, Some(old)) = (on, read_partial::<4>(b, at)) {
                let new = self.v4(u32::from_be_bytes(old.0)).to_be_bytes();
                write_partial(b, at, &new, old.1);
            }
        }
        self.stats.arp += 1;
        true
    }
}

/// The length of an Ethernet header without VLAN tags.
const ETHERNET_LEN: usize = 14;

/// Whether `frame` is an untagged Ethernet frame holding a whole IPv4 header whose
/// protocol cannot carry a tunnel (not IP in IP, GRE or UDP): the decoder would find
/// the network layer at [`ETHERNET_LEN`] and nothing inside it, so most packets skip it.
fn plain_ipv4_over_ethernet(frame: &[u8]) -> bool {
    use tracekit_decode::ip_proto;
    let Some(h) = frame.get(..ETHERNET_LEN + 20) else {
        return false;
    };
    let ethertype = u16::from_be_bytes([h[12], h[13]]);
    let (version, proto) = (h[ETHERNET_LEN] >> 4, h[ETHERNET_LEN + 9]);
    ethertype == ethertype::IPV4
        && version == 4
        && !matches!(
            proto,
            ip_proto::IPIP | ip_proto::IPV6 | ip_proto::GRE | ip_proto::UDP
        )
}

/// The `N` bytes at `at`, zero-filled past the end of `b`, and how many were there
/// (`None` when none were).
fn read_partial<const N: usize>(b: &[u8], at: usize) -> Option<([u8; N], usize)> {
    // Whole addresses, nearly always: a fixed-size copy instead of a memcpy call.
    if let Some(whole) = b.get(at..at + N) {
        let mut out = [0u8; N];
        out.copy_from_slice(whole);
        return Some((out, N));
    }
    let have = b.get(at..)?.len().min(N);
    if have == 0 {
        return None;
    }
    let mut out = [0u8; N];
    out[..have].copy_from_slice(&b[at..at + have]);
    Some((out, have))
}

/// Writes the first `n` bytes of `new` at `at` (`n` as [`read_partial`] found them).
fn write_partial<const N: usize>(b: &mut [u8], at: usize, new: &[u8; N], n: usize) {
    if n == N {
        b[at..at + N].copy_from_slice(new);
    } else {
        b[at..at + n].copy_from_slice(&new[..n]);
    }
}

fn word(bytes: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([bytes[at], bytes[at + 1]])
}

fn checksum_at(b: &[u8], at: usize) -> Option<u16> {
    b.get(at..at + 2).map(|c| u16::from_be_bytes([c[0], c[1]]))
}

/// Mends the checksum at `at` for one 16-bit word (or one folded sum) of the data it
/// covers changing from `old` to `new` (RFC 1624, equation 3), when the checksum was
/// captured.
fn update_word(b: &mut [u8], at: usize, old: u16, new: u16) {
    let Some(c) = b.get_mut(at..at + 2) else {
        return;
    };
    let hc = u16::from_be_bytes([c[0], c[1]]);
    let mut sum = u32::from(!hc) + u32::from(!old) + u32::from(new);
    sum = (sum & 0xffff) + (sum >> 16);
    let updated = !((sum + (sum >> 16)) as u16);
    c.copy_from_slice(&updated.to_be_bytes());
}

/// A UDP checksum that computes to zero is sent as all ones (zero means "none").
fn udp_zero_is_ones(b: &mut [u8], at: usize) {
    if let Some(c) = b.get_mut(at..at + 2)
        && c == [0, 0]
    {
        c.copy_from_slice(&[0xff, 0xff]);
    }
}

/// Zeroes the TCP or UDP checksum of the header at `t`, when the header was captured
/// whole (traceanon 3 zeroes only those).
fn zero_transport_checksum(b: &mut [u8], t: usize, proto: u8) {
    let have = b.len().saturating_sub(t);
    match proto {
        6 if have >= 20 => zero_checksum(b, t + 16),
        17 if have >= 8 => zero_checksum(b, t + 6),
        _ => {}
    }
}

/// Sets the checksum at `at` to zero (whatever of it was captured).
fn zero_checksum(b: &mut [u8], at: usize) {
    // Two stores rather than a memset call of a variable length.
    if let Some(c) = b.get_mut(at..at + 2) {
        c.copy_from_slice(&[0, 0]);
    } else if let Some(c) = b.get_mut(at) {
        *c = 0;
    }
}

/// The ones' complement sum of `data` as 16-bit words (an odd last byte padded with a
/// zero byte), folded to 16 bits.
fn ones_sum(data: &[u8]) -> u16 {
    let mut sum = 0u64;
    let mut words = data.chunks_exact(2);
    for w in words.by_ref() {
        sum += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        sum += u64::from(*last) << 8;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

#[cfg(test)]
mod tests;
