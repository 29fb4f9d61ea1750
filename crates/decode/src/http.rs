//! HTTP/1.x message heads at the start of a TCP payload (or an SSDP datagram): the
//! request's method and target, the response's status code, and the header fields a
//! monitor filters on (`Host`, `User-Agent`, any other by name). A view over the
//! payload's bytes: nothing is copied or allocated, and a head cut by the capture or the
//! segment gives the lines it holds.
//!
//! Syntax from RFC 9112 §3 (request line), §4 (status line) and §5 (field lines); the
//! request methods recognised are those of RFC 9110 §9, WebDAV (RFC 4918, RFC 3253) and
//! UPnP/SSDP, as Wireshark recognises them. Only a head that starts the payload is read:
//! one split over segments is not joined here (Wireshark without TCP reassembly does the
//! same; `tracekit-flow`'s `HttpHeads` joins them), and pipelined requests after the
//! first are not looked for.
//!
//! ```
//! use tracekit_decode::http::Head;
//! let payload = b"GET /index.html HTTP/1.1\r\nHost: example.org\r\nUser-Agent: curl/8.0\r\n\r\n";
//! let head = Head::parse(payload).unwrap();
//! assert_eq!(head.method(), Some(&b"GET"[..]));
//! assert_eq!(head.target(), Some(&b"/index.html"[..]));
//! assert_eq!(head.host(), Some(&b"example.org"[..]));
//! assert_eq!(head.header(b"user-agent"), Some(&b"curl/8.0"[..]));
//! assert_eq!(head.status_code(), None);
//!
//! let head = Head::parse(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n").unwrap();
//! assert_eq!(head.status_code(), Some(404));
//! assert!(Head::parse(b"\x16\x03\x01 TLS, not HTTP").is_none());
//! ```

use crate::ip_proto;

/// The UDP port of SSDP (HTTP over UDP: `M-SEARCH`, `NOTIFY` and their responses).
pub const SSDP_PORT: u16 = 1900;

/// Request methods, by RFC 9110, WebDAV and UPnP.
const METHODS: &[&[u8]] = &[
    b"GET",
    b"PUT",
    b"POST",
    b"HEAD",
    b"COPY",
    b"LOCK",
    b"MOVE",
    b"POLL",
    b"MKCOL",
    b"TRACE",
    b"PATCH",
    b"LABEL",
    b"MERGE",
    b"DELETE",
    b"SEARCH",
    b"UNLOCK",
    b"NOTIFY",
    b"REPORT",
    b"UPDATE",
    b"CONNECT",
    b"OPTIONS",
    b"CHECKIN",
    b"PROPFIND",
    b"CHECKOUT",
    b"M-SEARCH",
    b"PROPPATCH",
    b"SUBSCRIBE",
    b"MKACTIVITY",
    b"UNCHECKOUT",
    b"MKWORKSPACE",
    b"UNSUBSCRIBE",
    b"BASELINE-CONTROL",
    b"VERSION-CONTROL",
];

/// The longest first word of a start line: a method (`BASELINE-CONTROL`) or a version.
const MAX_FIRST_WORD: usize = 16;

/// The first line of a head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Start<'a> {
    Request { method: &'a [u8], target: &'a [u8] },
    Response { code: u16 },
}

/// An HTTP/1.x request or response head: its start line and the field lines after it.
#[derive(Clone, Copy, Debug)]
pub struct Head<'a> {
    start: Start<'a>,
    /// The version token of the start line (`HTTP/1.1`), empty for an HTTP/0.9-style
    /// request line without one.
    version: &'a [u8],
    /// The bytes after the start line.
    fields: &'a [u8],
}

/// The line at the start of `b` without its line ending, and the rest after it; the
/// whole of `b` when no line ending was captured.
fn line(b: &[u8]) -> (&[u8], &[u8]) {
    match b.iter().position(|&c| c == b'\n') {
        Some(i) => {
            let l = &b[..i];
            (l.strip_suffix(b"\r").unwrap_or(l), &b[i + 1..])
        }
        None => (b, &[]),
    }
}

fn trim(mut b: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = b {
        b = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = b {
        b = rest;
    }
    b
}

fn is_version(v: &[u8]) -> bool {
    matches!(v, [b'H', b'T', b'T', b'P', b'/', major, b'.', minor] if major.is_ascii_digit() && minor.is_ascii_digit())
}

/// Whether `payload` starts a head whose start line it does not finish (a segment cut
/// it): a known method and a space, or `HTTP/`, and no line end yet. [`Head::parse`]
/// reads no head there; the segments after it may complete one.
pub fn starts_unfinished(payload: &[u8]) -> bool {
    if payload.contains(&b'\n') {
        return false;
    }
    match payload
        .iter()
        .take(MAX_FIRST_WORD + 1)
        .position(|&c| c == b' ')
    {
        Some(i) => METHODS.contains(&&payload[..i]) || payload.starts_with(b"HTTP/"),
        None => payload.starts_with(b"HTTP/"),
    }
}

impl<'a> Head<'a> {
    /// The head at the start of `payload`, if it starts with a request line (a known
    /// method, a space, the target) or a status line (`HTTP/x.y`, a space, three
    /// digits).
    pub fn parse(payload: &'a [u8]) -> Option<Head<'a>> {
        // The first word decides before any line is scanned: most TCP payloads are not
        // HTTP, and their first bytes say so.
        let word_end = payload
            .iter()
            .take(MAX_FIRST_WORD + 1)
            .position(|&c| c == b' ')
            .unwrap_or(payload.len().min(MAX_FIRST_WORD + 1));
        let word = &payload[..word_end];
        if !word.starts_with(b"HTTP/") && !METHODS.contains(&word) {
            return None;
        }
        // A capture that ends right after a method: Wireshark reads it as that request.
        if word_end == payload.len() && METHODS.contains(&word) {
            return Some(Head {
                start: Start::Request {
                    method: word,
                    target: &[],
                },
                version: &[],
                fields: &[],
            });
        }
        let (first, fields) = line(payload);
        let mut words = first.splitn(3, |&c| c == b' ');
        let w0 = words.next()?;
        let w1 = words.next()?;
        let rest = words.next().unwrap_or(&[]);
        if is_version(w0) {
            let code = match w1 {
                [a, b, c] if w1.iter().all(u8::is_ascii_digit) => {
                    u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0')
                }
                _ => return None,
            };
            return Some(Head {
                start: Start::Response { code },
                version: w0,
                fields,
            });
        }
        // A known method and a space make a request line, even when the capture ends
        // right after them (Wireshark reads `GET ` as a GET with an empty target).
        if !METHODS.contains(&w0) {
            return None;
        }
        let version = trim(rest);
        if !version.is_empty() && !is_version(version) {
            return None;
        }
        Some(Head {
            start: Start::Request {
                method: w0,
                target: w1,
            },
            version,
            fields,
        })
    }

    /// Whether the head's end (the empty line after its field lines) is in the bytes it
    /// was parsed from; a head split over TCP segments is not, until joined.
    pub fn is_complete(&self) -> bool {
        // `fields` starts after the start line's line ending, so an empty line is a line
        // ending at its start or a line ending right after another.
        let f = self.fields;
        f.starts_with(b"\n")
            || f.starts_with(b"\r\n")
            || f.windows(2).any(|w| w == b"\n\n")
            || f.windows(3).any(|w| w == b"\n\r\n")
    }

    /// Whether this is a request.
    pub fn is_request(&self) -> bool {
        matches!(self.start, Start::Request { .. })
    }

    /// The request method (`GET`), for a request.
    pub fn method(&self) -> Option<&'a [u8]> {
        match self.start {
            Start::Request { method, .. } => Some(method),
            Start::Response { .. } => None,
        }
    }

    /// The request target as sent (`/index.html`, an absolute URI through a proxy,
    /// `host:port` for CONNECT, `*`), for a request.
    pub fn target(&self) -> Option<&'a [u8]> {
        match self.start {
            Start::Request { target, .. } => Some(target),
            Start::Response { .. } => None,
        }
    }

    /// The status code, for a response.
    pub fn status_code(&self) -> Option<u16> {
        match self.start {
            Start::Response { code } => Some(code),
            Start::Request { .. } => None,
        }
    }

    /// The version token of the start line (`HTTP/1.1`); empty for a request line that
    /// has none (HTTP/0.9 style).
    pub fn version(&self) -> &'a [u8] {
        self.version
    }

    /// The field lines captured, in order: name and value (surrounding white space
    /// removed), up to the empty line that ends the head or the end of the captured
    /// payload. Lines without a colon are skipped.
    pub fn headers(&self) -> Headers<'a> {
        Headers { rest: self.fields }
    }

    /// The value of the first field named `name` (compared without regard to case).
    pub fn header(&self, name: &[u8]) -> Option<&'a [u8]> {
        self.headers()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }

    /// The `Host` field.
    pub fn host(&self) -> Option<&'a [u8]> {
        self.header(b"host")
    }

    /// The `User-Agent` field.
    pub fn user_agent(&self) -> Option<&'a [u8]> {
        self.header(b"user-agent")
    }
}

/// The field lines of a [`Head`] (see [`Head::headers`]).
#[derive(Clone, Debug)]
pub struct Headers<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Headers<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.rest.is_empty() {
                return None;
            }
            let (l, rest) = line(self.rest);
            self.rest = rest;
            if l.is_empty() {
                self.rest = &[];
                return None;
            }
            if let Some(colon) = l.iter().position(|&c| c == b':') {
                return Some((trim(&l[..colon]), trim(&l[colon + 1..])));
            }
        }
    }
}

/// The HTTP head a transport payload starts with: on any TCP port (recognised by its
/// start line, as Wireshark's HTTP heuristic does), and on SSDP's UDP port.
pub(crate) fn in_transport(proto: u8, sp: u16, dp: u16, payload: &[u8]) -> Option<Head<'_>> {
    let http = match proto {
        ip_proto::TCP => true,
        ip_proto::UDP => sp == SSDP_PORT || dp == SSDP_PORT,
        _ => false,
    };
    if http { Head::parse(payload) } else { None }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads() {
        let h = Head::parse(b"M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\n").unwrap();
        assert_eq!(
            (h.method(), h.target()),
            (Some(&b"M-SEARCH"[..]), Some(&b"*"[..]))
        );
        assert_eq!(h.host(), Some(&b"239.255.255.250:1900"[..]));
        assert!(starts_unfinished(b"GET / HTTP"));
        assert!(starts_unfinished(b"HTTP/1.1 2"));
        assert!(!starts_unfinished(b"GET / HTTP/1.1\r\n"));
        assert!(!starts_unfinished(b"GETX / HTTP"));
        // Where the head ends.
        assert!(
            Head::parse(b"GET / HTTP/1.1\r\n\r\nbody")
                .unwrap()
                .is_complete()
        );
        assert!(
            Head::parse(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
                .unwrap()
                .is_complete()
        );
        assert!(
            Head::parse(b"GET / HTTP/1.1\nHost: a\n\n")
                .unwrap()
                .is_complete()
        );
        assert!(
            !Head::parse(b"GET / HTTP/1.1\r\nHost: a\r\n")
                .unwrap()
                .is_complete()
        );
        assert!(!Head::parse(b"GET / HTTP/1.1").unwrap().is_complete());
        // Cut inside the field lines: what is there is read.
        let h = Head::parse(b"POST /x HTTP/1.0\nHost:  a.b \nUser-Ag").unwrap();
        assert_eq!(h.host(), Some(&b"a.b"[..]));
        assert_eq!(h.user_agent(), None);
        // The head ends at the empty line: a body's "Host:" is not a field.
        let h = Head::parse(b"HTTP/1.0 200 OK\r\n\r\nHost: no\r\n").unwrap();
        assert_eq!((h.status_code(), h.host()), (Some(200), None));
        // Not heads.
        for bad in [
            &b"get / HTTP/1.1\r\n"[..],
            b"GE",
            b"GET\r\n",
            b"GETS / HTTP/1.1\r\n",
            b"HTTP/1.1 20 OK\r\n",
            b"HTTP/x 200 OK\r\n",
            b"GET / SIP/2.0\r\n",
            b"",
        ] {
            assert!(
                Head::parse(bad).is_none(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        // HTTP/0.9 style: no version.
        assert_eq!(Head::parse(b"GET /\r\n").unwrap().version(), b"");
        // Cut right after the method.
        assert_eq!(Head::parse(b"POST").unwrap().method(), Some(&b"POST"[..]));
    }
}
