//! TLS handshakes in a TCP payload: the ClientHello's and ServerHello's version, server
//! name (SNI), ALPN protocols, and the JA3 and JA4 fingerprints — what monitoring and IDS
//! users filter and count on. Views over the payload's bytes: nothing is copied or
//! allocated, and a message cut by the capture or the segment gives what its bytes hold.
//!
//! Layouts from RFC 8446 (TLS 1.3, §4.1.2–4.1.3 and §5.1), RFC 5246 (TLS 1.2), RFC 6066
//! §3 (server_name), RFC 7301 (ALPN), RFC 8422 §5.1 (supported groups, point formats),
//! RFC 8701 (GREASE). Only records of TLS's handshake type that start the payload are
//! read: a handshake message split over segments is not reassembled.
//!
//! ```
//! use tracekit_decode::tls;
//! // A record holding a ClientHello with one cipher suite and a server_name extension.
//! let sni = b"example.org";
//! let mut ext = vec![0, 0, 0, (sni.len() + 5) as u8, 0, (sni.len() + 3) as u8, 0, 0, sni.len() as u8];
//! ext.extend_from_slice(sni);
//! let mut body = vec![3, 3];
//! body.extend_from_slice(&[0; 32]); // random
//! body.extend_from_slice(&[0, 0, 2, 0x13, 0x01, 1, 0]); // session id, suites, compression
//! body.extend_from_slice(&(ext.len() as u16).to_be_bytes());
//! body.extend_from_slice(&ext);
//! let mut msg = vec![1, 0, 0, body.len() as u8];
//! msg.extend_from_slice(&body);
//! let mut record = vec![22, 3, 1, 0, msg.len() as u8];
//! record.extend_from_slice(&msg);
//!
//! let hello = tls::hellos(&record).next().unwrap();
//! assert!(hello.is_client());
//! assert_eq!(hello.version(), 0x0303);
//! assert_eq!(hello.server_name(), Some(&b"example.org"[..]));
//! let mut ja3 = String::new();
//! hello.ja3(&mut ja3);
//! assert_eq!(ja3, "771,4865,0,,");
//! // JA4: TLS 1.2, a server name, 1 suite, 1 extension, no ALPN; the extension hash
//! // leaves server_name out, so its list is empty.
//! let mut ja4 = String::new();
//! hello.ja4(&mut ja4);
//! assert!(ja4.starts_with("t12d010100_") && ja4.ends_with("_000000000000"));
//! ```

use std::fmt::Write;

use sha2::{Digest, Sha256};

/// Byte ranges of a record header (RFC 8446 §5.1).
mod record {
    /// Content type: 22 for handshake.
    pub const TYPE: usize = 0;
    /// Legacy record version.
    pub const VERSION: std::ops::Range<usize> = 1..3;
    /// Length of the fragment that follows.
    pub const LENGTH: std::ops::Range<usize> = 3..5;
    /// Header length.
    pub const LEN: usize = 5;
}

/// Byte ranges of a handshake message header (RFC 8446 §4).
mod handshake {
    /// Message type.
    pub const TYPE: usize = 0;
    /// Body length (24 bits).
    pub const LENGTH: std::ops::Range<usize> = 1..4;
    /// Header length.
    pub const LEN: usize = 4;
}

/// Byte ranges at the start of a ClientHello or ServerHello body.
mod hello {
    /// legacy_version.
    pub const VERSION: std::ops::Range<usize> = 0..2;
    /// The session id's length byte, after the 32 random bytes.
    pub const SESSION_ID_LEN: usize = 34;
}

/// The record content type of handshakes.
pub const CONTENT_HANDSHAKE: u8 = 22;
/// The handshake type of a ClientHello.
pub const CLIENT_HELLO: u8 = 1;
/// The handshake type of a ServerHello.
pub const SERVER_HELLO: u8 = 2;

/// Extension types used here.
pub mod ext {
    /// server_name (RFC 6066).
    pub const SERVER_NAME: u16 = 0;
    /// supported_groups, formerly elliptic_curves (RFC 8422).
    pub const SUPPORTED_GROUPS: u16 = 10;
    /// ec_point_formats (RFC 8422).
    pub const EC_POINT_FORMATS: u16 = 11;
    /// signature_algorithms (RFC 8446 §4.2.3).
    pub const SIGNATURE_ALGORITHMS: u16 = 13;
    /// application_layer_protocol_negotiation (RFC 7301).
    pub const ALPN: u16 = 16;
    /// supported_versions (RFC 8446 §4.2.1).
    pub const SUPPORTED_VERSIONS: u16 = 43;
}

/// Whether a payload starts like a TLS record that can lead to a handshake (a
/// handshake, or a ChangeCipherSpec before one; record version 3.0 to 3.4): the test a
/// packet must pass before its payload is read as TLS.
pub fn is_handshake(payload: &[u8]) -> bool {
    payload.len() >= record::LEN
        && matches!(payload[record::TYPE], CONTENT_HANDSHAKE | 20)
        && payload[record::VERSION][0] == 3
        && payload[record::VERSION][1] <= 4
}

/// The handshake messages of the handshake records at the start of a payload, as (type,
/// body); a message cut short by the capture gives the bytes present.
pub fn handshakes(payload: &[u8]) -> Handshakes<'_> {
    handshakes_in(payload, payload.len())
}

/// [`handshakes`] of a TCP segment of `segment_len` bytes of which `payload` were
/// captured: records that run past the segment's end (continued in the next segment)
/// are not read, as tshark does without reassembly.
pub fn handshakes_in(payload: &[u8], segment_len: usize) -> Handshakes<'_> {
    Handshakes {
        rest: payload,
        fragment: &[],
        room: segment_len,
    }
}

/// The ClientHellos and ServerHellos among [`handshakes`].
pub fn hellos(payload: &[u8]) -> impl Iterator<Item = Hello<'_>> {
    hellos_in(payload, payload.len())
}

/// The ClientHellos and ServerHellos among [`handshakes_in`].
pub fn hellos_in(payload: &[u8], segment_len: usize) -> impl Iterator<Item = Hello<'_>> {
    handshakes_in(payload, segment_len).filter_map(|(kind, body)| match kind {
        CLIENT_HELLO | SERVER_HELLO => Some(Hello {
            client: kind == CLIENT_HELLO,
            body,
        }),
        _ => None,
    })
}

/// Iterator over handshake messages (see [`handshakes`]).
#[derive(Clone, Debug)]
pub struct Handshakes<'a> {
    /// The payload after the current record.
    rest: &'a [u8],
    /// What is left of the current record's fragment.
    fragment: &'a [u8],
    /// The segment's bytes from `rest` on, captured or not.
    room: usize,
}

impl<'a> Iterator for Handshakes<'a> {
    type Item = (u8, &'a [u8]);

    fn next(&mut self) -> Option<(u8, &'a [u8])> {
        while self.fragment.len() < handshake::LEN {
            // Records of any content type (20 to 24: a ChangeCipherSpec may come
            // first) follow each other; only handshake records hold messages.
            let r = self.rest;
            if r.len() < record::LEN
                || !(20..=24).contains(&r[record::TYPE])
                || r[record::VERSION][0] != 3
            {
                return None;
            }
            let len = usize::from(u16::from_be_bytes([
                self.rest[record::LENGTH][0],
                self.rest[record::LENGTH][1],
            ]));
            if record::LEN + len > self.room {
                // Continued in the next segment.
                return None;
            }
            self.room -= record::LEN + len;
            let end = (record::LEN + len).min(self.rest.len());
            self.fragment = if r[record::TYPE] == CONTENT_HANDSHAKE {
                &self.rest[record::LEN..end]
            } else {
                &[]
            };
            self.rest = &self.rest[end..];
            if self.fragment.len() < handshake::LEN {
                // A record too short for a message header (or empty).
                self.fragment = &[];
                if self.rest.is_empty() {
                    return None;
                }
            }
        }
        let f = self.fragment;
        let kind = f[handshake::TYPE];
        let l = &f[handshake::LENGTH];
        let len = usize::from(l[0]) << 16 | usize::from(l[1]) << 8 | usize::from(l[2]);
        let end = (handshake::LEN + len).min(f.len());
        self.fragment = &f[end..];
        Some((kind, &f[handshake::LEN..end]))
    }
}

/// A ClientHello or ServerHello body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hello<'a> {
    client: bool,
    body: &'a [u8],
}

/// A big-endian u16 at `at`.
fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// `len`-prefixed bytes at `at` (a 1- or 2-byte length); the bytes present when cut.
fn vector(b: &[u8], at: usize, len_bytes: usize) -> Option<(&[u8], usize)> {
    let len = match len_bytes {
        1 => usize::from(*b.get(at)?),
        _ => usize::from(be16(b, at)?),
    };
    let start = at + len_bytes;
    let end = (start + len).min(b.len());
    Some((b.get(start..end)?, start + len))
}

/// Whether a value is a GREASE value (RFC 8701: 0x?a?a with equal bytes).
pub fn is_grease(v: u16) -> bool {
    v & 0x0f0f == 0x0a0a && v >> 8 == v & 0xff
}

impl<'a> Hello<'a> {
    /// A ClientHello (else a ServerHello).
    pub fn is_client(&self) -> bool {
        self.client
    }

    /// The body's bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.body
    }

    /// legacy_version (0x0303 for TLS 1.2 and 1.3).
    pub fn version(&self) -> u16 {
        be16(self.body, hello::VERSION.start).unwrap_or(0)
    }

    /// The cipher suites a ClientHello offers (big-endian pairs), or the one a
    /// ServerHello chose.
    pub fn cipher_suites(&self) -> impl Iterator<Item = u16> + use<'a> {
        let suites = self.suites_and_end().map_or(&[][..], |(s, _)| s);
        suites
            .chunks_exact(2)
            .map(|c| u16::from_be_bytes([c[0], c[1]]))
    }

    /// The cipher suites' bytes and where the compression methods start.
    fn suites_and_end(&self) -> Option<(&'a [u8], usize)> {
        let (_, after_id) = vector(self.body, hello::SESSION_ID_LEN, 1)?;
        if self.client {
            vector(self.body, after_id, 2)
        } else {
            Some((self.body.get(after_id..after_id + 2)?, after_id + 2))
        }
    }

    /// The extensions as (type, data), in order; those cut short give the bytes present.
    pub fn extensions(&self) -> Extensions<'a> {
        let start = self.suites_and_end().and_then(|(_, at)| {
            // Compression methods: a vector in a ClientHello, one byte in a ServerHello.
            if self.client {
                vector(self.body, at, 1).map(|(_, end)| end)
            } else {
                Some(at + 1)
            }
        });
        let data = start
            .and_then(|at| vector(self.body, at, 2))
            .map_or(&[][..], |(d, _)| d);
        Extensions { rest: data }
    }

    /// The first extension of `kind`.
    pub fn extension(&self, kind: u16) -> Option<&'a [u8]> {
        self.extensions().find(|(t, _)| *t == kind).map(|(_, d)| d)
    }

    /// The host name of the server_name extension (SNI).
    pub fn server_name(&self) -> Option<&'a [u8]> {
        let data = self.extension(ext::SERVER_NAME)?;
        let (list, _) = vector(data, 0, 2)?;
        let mut at = 0;
        while at < list.len() {
            let kind = list[at];
            let (name, end) = vector(list, at + 1, 2)?;
            if kind == 0 {
                return Some(name);
            }
            at = end;
        }
        None
    }

    /// The protocol names of the ALPN extension, in order.
    pub fn alpn(&self) -> impl Iterator<Item = &'a [u8]> + use<'a> {
        let list = self
            .extension(ext::ALPN)
            .and_then(|d| vector(d, 0, 2))
            .map_or(&[][..], |(l, _)| l);
        let mut at = 0;
        std::iter::from_fn(move || {
            let (name, end) = vector(list, at, 1)?;
            at = end;
            Some(name)
        })
    }

    /// Appends the JA3 string of a ClientHello (nothing for a ServerHello): version,
    /// cipher suites, extension types, supported groups and point formats, in decimal,
    /// values `-`-joined and fields `,`-joined, GREASE values left out (the definition
    /// Salesforce published, as Wireshark's `tls.handshake.ja3_full`). Its MD5 is the
    /// JA3 hash.
    pub fn ja3(&self, out: &mut String) {
        if !self.client {
            return;
        }
        let joined = |out: &mut String, values: &mut dyn Iterator<Item = u16>| {
            for (i, v) in values.filter(|v| !is_grease(*v)).enumerate() {
                if i > 0 {
                    out.push('-');
                }
                let _ = write!(out, "{v}");
            }
        };
        let _ = write!(out, "{},", self.version());
        joined(out, &mut self.cipher_suites());
        out.push(',');
        joined(out, &mut self.extensions().map(|(t, _)| t));
        out.push(',');
        let groups = self
            .extension(ext::SUPPORTED_GROUPS)
            .and_then(|d| vector(d, 0, 2))
            .map_or(&[][..], |(l, _)| l);
        joined(
            out,
            &mut groups
                .chunks_exact(2)
                .map(|c| u16::from_be_bytes([c[0], c[1]])),
        );
        out.push(',');
        let formats = self
            .extension(ext::EC_POINT_FORMATS)
            .and_then(|d| vector(d, 0, 1))
            .map_or(&[][..], |(l, _)| l);
        joined(out, &mut formats.iter().map(|&f| u16::from(f)));
    }
}

/// JA4 (FoxIO's TLS client fingerprint, `technical_details/JA4.md` of
/// github.com/FoxIO-LLC/ja4), for TLS over TCP.
impl<'a> Hello<'a> {
    /// The `u16` values of the 2-byte-length vector that extension `kind` holds (1-byte
    /// length when `short`).
    fn u16_list(&self, kind: u16, short: bool) -> impl Iterator<Item = u16> + use<'a> {
        let list = self
            .extension(kind)
            .and_then(|d| vector(d, 0, if short { 1 } else { 2 }))
            .map_or(&[][..], |(l, _)| l);
        list.chunks_exact(2)
            .map(|c| u16::from_be_bytes([c[0], c[1]]))
    }

    /// The signature algorithms a ClientHello offers, in order (GREASE included).
    pub fn signature_algorithms(&self) -> impl Iterator<Item = u16> + use<'a> {
        self.u16_list(ext::SIGNATURE_ALGORITHMS, false)
    }

    /// The TLS version JA4 reports: the highest of the supported_versions extension
    /// (GREASE left out), else the hello's legacy version.
    /// (In a ServerHello the extension holds the one version chosen.)
    pub fn ja4_version(&self) -> u16 {
        if !self.client {
            let chosen = self
                .extension(ext::SUPPORTED_VERSIONS)
                .and_then(|d| be16(d, 0));
            return chosen.unwrap_or_else(|| self.version());
        }
        let supported = self
            .u16_list(ext::SUPPORTED_VERSIONS, true)
            .filter(|v| !is_grease(*v))
            .max();
        supported.unwrap_or_else(|| self.version())
    }

    /// JA4's first part for a ClientHello (`None` for a ServerHello), ten ASCII bytes:
    /// `t`, the version (`13`, `12`, ..., `00` when unknown), `d` with a server_name
    /// extension or `i`, the cipher suite and extension counts (GREASE left out, at most
    /// 99), and the first and last characters of the first ALPN value (`00` without one).
    pub fn ja4_a(&self) -> Option<[u8; 10]> {
        if !self.client {
            return None;
        }
        let version: &[u8; 2] = match self.ja4_version() {
            0x0304 => b"13",
            0x0303 => b"12",
            0x0302 => b"11",
            0x0301 => b"10",
            0x0300 => b"s3",
            0x0002 => b"s2",
            0xfeff => b"d1",
            0xfefd => b"d2",
            0xfefc => b"d3",
            _ => b"00",
        };
        let sni = self.extension(ext::SERVER_NAME).is_some();
        let count = |n: usize| {
            let n = n.min(99) as u8;
            [b'0' + n / 10, b'0' + n % 10]
        };
        let ciphers = count(self.cipher_suites().filter(|v| !is_grease(*v)).count());
        let exts = count(self.extensions().filter(|(t, _)| !is_grease(*t)).count());
        let alpn = ja4_alpn(self.alpn().next().unwrap_or(&[]));
        let mut a = [0u8; 10];
        a[0] = b't';
        a[1..3].copy_from_slice(version);
        a[3] = if sni { b'd' } else { b'i' };
        a[4..6].copy_from_slice(&ciphers);
        a[6..8].copy_from_slice(&exts);
        a[8..10].copy_from_slice(&alpn);
        Some(a)
    }

    /// The cipher suites JA4 hashes (GREASE left out), sorted, as `,`-joined 4-digit hex,
    /// handed to `emit` piece by piece; whether there were any.
    fn ja4_b(&self, emit: &mut dyn FnMut(&[u8])) -> bool {
        with_sorted(self.cipher_suites().filter(|v| !is_grease(*v)), |v| {
            emit_hex_list(v, emit);
            !v.is_empty()
        })
    }

    /// The extensions JA4 hashes (GREASE, server_name and ALPN left out), sorted, then
    /// `_` and the signature algorithms in their order, if there are any; whether there
    /// were any extensions.
    fn ja4_c(&self, emit: &mut dyn FnMut(&[u8])) -> bool {
        let kinds = self
            .extensions()
            .map(|(t, _)| t)
            .filter(|t| !is_grease(*t) && *t != ext::SERVER_NAME && *t != ext::ALPN);
        let any = with_sorted(kinds, |v| {
            emit_hex_list(v, emit);
            !v.is_empty()
        });
        let mut algorithms = self.signature_algorithms().filter(|v| !is_grease(*v));
        if let Some(first) = algorithms.next() {
            emit(b"_");
            emit(&hex4(first));
            for v in algorithms {
                emit(b",");
                emit(&hex4(v));
            }
        }
        any
    }

    /// Appends the JA4 fingerprint of a ClientHello (nothing for a ServerHello), e.g.
    /// `t13d1516h2_8daaf6152771_e5627efa2ab1`: [`ja4_a`](Self::ja4_a), then the first 12
    /// hex digits of the SHA-256 of the sorted cipher suites and of the sorted extensions
    /// with the signature algorithms (`000000000000` for an empty list), as newer
    /// Wireshark's `tls.handshake.ja4` shows it. Nothing is allocated but `out`'s growth.
    pub fn ja4(&self, out: &mut String) {
        let Some(a) = self.ja4_a() else {
            return;
        };
        out.extend(a.iter().map(|&c| char::from(c)));
        hashed_part(out, |emit| self.ja4_b(emit));
        hashed_part(out, |emit| self.ja4_c(emit));
    }

    /// Appends JA4's raw form (`ja4_r`): the lists [`ja4`](Self::ja4) hashes, as they are.
    pub fn ja4_raw(&self, out: &mut String) {
        let Some(a) = self.ja4_a() else {
            return;
        };
        out.extend(a.iter().map(|&c| char::from(c)));
        let mut emit = |piece: &[u8]| out.extend(piece.iter().map(|&c| char::from(c)));
        emit(b"_");
        self.ja4_b(&mut emit);
        emit(b"_");
        self.ja4_c(&mut emit);
    }
}

/// Appends `_` and the first 12 hex digits of the SHA-256 of what `run` emits, or
/// `000000000000` when it says its list was empty.
fn hashed_part(out: &mut String, run: impl FnOnce(&mut dyn FnMut(&[u8])) -> bool) {
    let mut h = Sha256::new();
    let any = run(&mut |piece| h.update(piece));
    out.push('_');
    if any {
        for b in &h.finalize()[..6] {
            let _ = write!(out, "{b:02x}");
        }
    } else {
        out.push_str("000000000000");
    }
}

/// JA4's two ALPN characters: the first and last of the value when both are ASCII
/// letters or digits, else the first and last hex digits of the value; `00` for none.
fn ja4_alpn(v: &[u8]) -> [u8; 2] {
    let (Some(&first), Some(&last)) = (v.first(), v.last()) else {
        return *b"00";
    };
    if first.is_ascii_alphanumeric() && last.is_ascii_alphanumeric() {
        [first, last]
    } else {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        [HEX[usize::from(first >> 4)], HEX[usize::from(last & 0xf)]]
    }
}

fn hex4(v: u16) -> [u8; 4] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let n = |shift: u16| HEX[usize::from((v >> shift) & 0xf)];
    [n(12), n(8), n(4), n(0)]
}

fn emit_hex_list(values: &[u16], emit: &mut dyn FnMut(&[u8])) {
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            emit(b",");
        }
        emit(&hex4(*v));
    }
}

/// Runs `f` on `values` sorted: in a stack buffer for the usual lists, on the heap only
/// for longer ones (a hello can list up to 32,767 values).
fn with_sorted<T>(values: impl Iterator<Item = u16>, f: impl FnOnce(&[u16]) -> T) -> T {
    const STACK: usize = 128;
    let mut buf = [0u16; STACK];
    let mut n = 0;
    let mut values = values.peekable();
    while n < STACK {
        match values.next() {
            Some(v) => {
                buf[n] = v;
                n += 1;
            }
            None => break,
        }
    }
    if values.peek().is_none() {
        let v = &mut buf[..n];
        v.sort_unstable();
        return f(v);
    }
    let mut v: Vec<u16> = buf.iter().copied().chain(values).collect();
    v.sort_unstable();
    f(&v)
}

/// Iterator over a hello's extensions (see [`Hello::extensions`]).
#[derive(Clone, Debug)]
pub struct Extensions<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Extensions<'a> {
    type Item = (u16, &'a [u8]);

    fn next(&mut self) -> Option<(u16, &'a [u8])> {
        let kind = be16(self.rest, 0)?;
        let (data, end) = vector(self.rest, 2, 2)?;
        self.rest = self.rest.get(end..).unwrap_or(&[]);
        Some((kind, data))
    }
}
