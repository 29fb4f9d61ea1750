//! Values as text without `core::fmt`: addresses, decimal and hexadecimal numbers written
//! straight into a buffer, byte for byte what `Display` and `{:x}` write. `fmt` goes
//! through a formatter and a call per piece: `tracekit fields` with eight fields spent
//! 63 % of its instructions there, 37 % on addresses alone. Integers go through the
//! `itoa` crate (no dependency of its own): a writer of ours would need a UTF-8 check
//! for each number it hands to a `String` (the decoder forbids unchecked conversions),
//! and took 20 % more instructions for `tracekit fields`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An IP address as text, on the stack: what its `Display` writes (IPv6 as RFC 5952
/// says: lower-case groups without leading zeros, the first longest run of two or more
/// zero groups as `::`, an IPv4-mapped address as `::ffff:a.b.c.d`).
///
/// ```
/// use tracekit_decode::text::IpText;
/// let a: std::net::IpAddr = "2001:db8:0:0:1:0:0:1".parse().unwrap();
/// assert_eq!(IpText::new(a).as_str(), "2001:db8::1:0:0:1");
/// ```
#[derive(Clone, Copy)]
pub struct IpText {
    buf: [u8; IpText::MAX],
    len: u8,
}

impl IpText {
    /// The longest an address is as text: eight groups of four digits and seven colons.
    pub const MAX: usize = 39;

    /// `a` as text.
    #[inline]
    pub fn new(a: IpAddr) -> IpText {
        match a {
            IpAddr::V4(a) => IpText::v4(a),
            IpAddr::V6(a) => IpText::v6(a),
        }
    }

    /// An IPv4 address as text: a.b.c.d.
    #[inline]
    pub fn v4(a: Ipv4Addr) -> IpText {
        let mut t = IpText::empty();
        t.put_v4(a);
        t
    }

    /// An IPv6 address as text.
    pub fn v6(a: Ipv6Addr) -> IpText {
        let mut t = IpText::empty();
        if let Some(v4) = a.to_ipv4_mapped() {
            t.put(b"::ffff:");
            t.put_v4(v4);
            return t;
        }
        let groups = a.segments();
        // The first longest run of zero groups: (start, length).
        let (mut best, mut run) = ((0, 0), (0, 0));
        for (i, &g) in groups.iter().enumerate() {
            if g != 0 {
                run = (i + 1, 0);
                continue;
            }
            run.1 += 1;
            if run.1 > best.1 {
                best = run;
            }
        }
        if best.1 > 1 {
            t.put_groups(&groups[..best.0]);
            t.put(b"::");
            t.put_groups(&groups[best.0 + best.1..]);
        } else {
            t.put_groups(&groups);
        }
        t
    }

    /// The text.
    #[inline]
    pub fn as_str(&self) -> &str {
        // Only ASCII digits, letters, dots and colons are ever written.
        std::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }

    /// The text's bytes.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..usize::from(self.len)]
    }

    fn empty() -> IpText {
        IpText {
            buf: [0; IpText::MAX],
            len: 0,
        }
    }

    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        let at = usize::from(self.len);
        self.buf[at..at + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len() as u8;
    }

    #[inline]
    fn put_v4(&mut self, a: Ipv4Addr) {
        for (i, v) in a.octets().into_iter().enumerate() {
            if i > 0 {
                self.put(b".");
            }
            if v >= 100 {
                self.put(&[b'0' + v / 100, b'0' + v / 10 % 10, b'0' + v % 10]);
            } else if v >= 10 {
                self.put(&[b'0' + v / 10, b'0' + v % 10]);
            } else {
                self.put(&[b'0' + v]);
            }
        }
    }

    fn put_groups(&mut self, groups: &[u16]) {
        for (i, &g) in groups.iter().enumerate() {
            if i > 0 {
                self.put(b":");
            }
            let digits = hex_digits(u64::from(g));
            // At least one digit; no leading zeros.
            self.put(&digits[16 - hex_len(u64::from(g)).max(1)..]);
        }
    }
}

impl std::fmt::Display for IpText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// `v`'s sixteen hexadecimal digits, leading zeros included.
#[inline]
fn hex_digits(v: u64) -> [u8; 16] {
    let mut d = [0u8; 16];
    for (i, slot) in d.iter_mut().enumerate() {
        *slot = HEX[(v >> (60 - 4 * i) & 15) as usize];
    }
    d
}

/// Hexadecimal digits `v` needs (0 for 0).
#[inline]
fn hex_len(v: u64) -> usize {
    (64 - v.leading_zeros() as usize).div_ceil(4)
}

/// Appends `v` in decimal, as `{v}` writes it.
#[inline]
pub fn push_decimal(out: &mut String, v: impl itoa::Integer) {
    out.push_str(itoa::Buffer::new().format(v));
}

/// Appends `v` in decimal with zeros in front up to `width` digits, as `{v:0width$}`
/// writes it.
#[inline]
pub fn push_decimal_padded(out: &mut String, v: u64, width: usize) {
    let mut buf = itoa::Buffer::new();
    let digits = buf.format(v);
    for _ in digits.len()..width {
        out.push('0');
    }
    out.push_str(digits);
}

/// Appends `v` in lower-case hexadecimal with zeros in front up to `width` digits, as
/// `{v:0width$x}` writes it.
#[inline]
pub fn push_hex(out: &mut String, v: u64, width: usize) {
    let digits = hex_digits(v);
    for _ in 16..width {
        out.push('0');
    }
    let n = hex_len(v).max(width.min(16)).max(1);
    // ASCII digits.
    out.push_str(std::str::from_utf8(&digits[16 - n..]).unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Addresses of every shape `Display` treats apart, from a fixed-seed generator:
    /// groups drawn mostly from 0, 1, 0xffff and small and large values, so that zero
    /// runs of every length and position occur, IPv4-mapped ones among them.
    #[test]
    fn addresses_are_written_as_display_writes_them() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for n in 0..300_000u32 {
            let mut groups = [0u16; 8];
            for g in &mut groups {
                let r = next();
                *g = match r % 8 {
                    0..=3 => 0,
                    4 => 1,
                    5 => 0xffff,
                    6 => (r >> 8) as u16 & 0xff,
                    _ => (r >> 16) as u16,
                };
            }
            if n % 7 == 0 {
                groups[..5].fill(0);
                groups[5] = 0xffff;
            }
            let v6 = Ipv6Addr::from(groups);
            assert_eq!(IpText::v6(v6).as_str(), v6.to_string());
            let v4 = Ipv4Addr::from((next() >> 7) as u32);
            assert_eq!(IpText::new(IpAddr::V4(v4)).as_str(), v4.to_string());
        }
        let widest = Ipv6Addr::from([0xffff; 8]);
        for v6 in [
            Ipv6Addr::UNSPECIFIED,
            Ipv6Addr::LOCALHOST,
            "::ffff:255.255.255.255".parse().unwrap(),
            widest,
        ] {
            assert_eq!(IpText::v6(v6).as_str(), v6.to_string());
        }
        assert_eq!(IpText::v6(widest).as_bytes().len(), IpText::MAX);
    }

    /// Numbers as `{v}`, `{v:0w$}` and `{v:0w$x}` write them, at the edges of every digit
    /// count and widths from 0 to 20.
    #[test]
    fn numbers_are_written_as_fmt_writes_them() {
        let mut values = vec![0u64, 1, u64::MAX];
        for shift in 0..64 {
            let p = 1u64 << shift;
            values.extend([p - 1, p, p + 1]);
        }
        let mut p = 1u64;
        while let Some(next) = p.checked_mul(10) {
            values.extend([p - 1, p, p + 1]);
            p = next;
        }
        let mut out = String::new();
        for &v in &values {
            out.clear();
            push_decimal(&mut out, v);
            assert_eq!(out, format!("{v}"));
            for w in 0..=20 {
                out.clear();
                push_decimal_padded(&mut out, v, w);
                assert_eq!(out, format!("{v:0w$}"));
                out.clear();
                push_hex(&mut out, v, w);
                assert_eq!(out, format!("{v:0w$x}"));
            }
        }
    }
}
