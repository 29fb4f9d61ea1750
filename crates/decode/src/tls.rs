//! TLS handshakes in a TCP payload: the ClientHello's and ServerHello's version, server
//! name (SNI), ALPN protocols, and the JA3 fingerprint string — what monitoring and IDS
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
//! ```

use std::fmt::Write;

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
    /// application_layer_protocol_negotiation (RFC 7301).
    pub const ALPN: u16 = 16;
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
