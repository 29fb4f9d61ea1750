//! DNS messages: a zero-copy view with section iterators and compressed names.
//!
//! ```
//! use tracekit_decode::dns::{Message, RData};
//! // A response for example.com A 93.184.216.34, the answer's name a pointer to the question.
//! let msg = [
//!     0x12, 0x34, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0, // header
//!     7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 3, b'c', b'o', b'm', 0, 0, 1, 0, 1,
//!     0xc0, 12, 0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4, 93, 184, 216, 34,
//! ];
//! let m = Message::new(&msg).unwrap();
//! assert_eq!(m.id(), 0x1234);
//! assert!(m.is_response());
//! let q = m.questions().next().unwrap();
//! assert_eq!(q.name.to_string(), "example.com");
//! let a = m.answers().next().unwrap();
//! assert_eq!(a.name.to_string(), "example.com");
//! assert_eq!(a.data(), RData::A([93, 184, 216, 34].into()));
//! ```

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::anomaly::Anomaly;
use crate::bytes::{be16, be32, field_be16};
use crate::ip_proto;

/// The message header.
mod field {
    use core::ops::Range;
    pub const ID: Range<usize> = 0..2;
    pub const FLAGS: Range<usize> = 2..4;
    pub const QDCOUNT: Range<usize> = 4..6;
    pub const ANCOUNT: Range<usize> = 6..8;
    pub const NSCOUNT: Range<usize> = 8..10;
    pub const ARCOUNT: Range<usize> = 10..12;
    pub const LEN: usize = 12;
}

/// After a question's name.
mod question {
    pub const TYPE: usize = 0;
    pub const CLASS: usize = 2;
    pub const LEN: usize = 4;
}

/// After a resource record's name.
mod record {
    pub const TYPE: usize = 0;
    pub const CLASS: usize = 2;
    pub const TTL: usize = 4;
    pub const RDLENGTH: usize = 8;
    pub const LEN: usize = 10;
}

/// UDP ports that carry DNS messages: DNS, mDNS, LLMNR.
pub const UDP_PORTS: [u16; 3] = [53, 5353, 5355];
/// The TCP port that carries DNS messages (each after a 2-byte length).
pub const TCP_PORT: u16 = 53;
/// The length prefix of a DNS message over TCP.
const TCP_LENGTH_LEN: usize = 2;

/// The DNS message a transport payload carries, if protocol `proto` between ports
/// `sp` and `dp` is DNS: UDP on any of [`UDP_PORTS`], or a TCP segment on [`TCP_PORT`]
/// that starts a message. `payload` is only asked for then (most packets are not DNS,
/// and finding a payload's end costs more than comparing ports).
pub(crate) fn in_transport<'a>(
    proto: u8,
    sp: u16,
    dp: u16,
    payload: impl FnOnce() -> Option<&'a [u8]>,
) -> Option<Message<'a>> {
    match proto {
        ip_proto::UDP if UDP_PORTS.iter().any(|p| *p == sp || *p == dp) => Message::new(payload()?),
        ip_proto::TCP if sp == TCP_PORT || dp == TCP_PORT => {
            let payload = payload()?;
            let len = usize::from(be16(payload, 0)?);
            let body = payload.get(TCP_LENGTH_LEN..)?;
            (len >= Message::HEADER_LEN).then_some(())?;
            Message::new(body)
        }
        _ => None,
    }
}

/// What is wrong with the DNS message a transport payload carries (see
/// [`in_transport`]), for the decoder's anomalies: `None` when it is not DNS, is whole,
/// or cannot be judged (a TCP segment that is not exactly one length-prefixed message
/// may be part of a longer one). `payload_cut` gives the payload, and whether the
/// capture kept less of it than the packet had (so that running into its end is a
/// truncation); it is only asked for when the ports are DNS's.
pub(crate) fn damage_in_transport<'a>(
    proto: u8,
    sp: u16,
    dp: u16,
    payload_cut: impl FnOnce() -> Option<(&'a [u8], bool)>,
) -> Option<Anomaly> {
    let dns_ports = match proto {
        ip_proto::UDP => UDP_PORTS.iter().any(|p| *p == sp || *p == dp),
        ip_proto::TCP => sp == TCP_PORT || dp == TCP_PORT,
        _ => false,
    };
    if !dns_ports {
        return None;
    }
    let (payload, cut) = payload_cut()?;
    let message = match proto {
        ip_proto::UDP => {
            // An empty datagram is no message at all (tshark does not call it DNS).
            if payload.is_empty() {
                return None;
            }
            payload
        }
        _ => {
            let len = usize::from(be16(payload, 0)?);
            let body = payload.get(TCP_LENGTH_LEN..)?;
            (body.len() == len).then_some(body)?
        }
    };
    let error = match Message::new(message) {
        Some(m) => m.check().err()?,
        None => MessageError::RunsPast,
    };
    let runs_past = matches!(
        error,
        MessageError::RunsPast | MessageError::Name(NameError::Truncated)
    );
    Some(if cut && runs_past {
        Anomaly::DnsTruncated
    } else {
        Anomaly::DnsMalformed
    })
}

/// Why a message does not decode completely ([`Message::check`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageError {
    /// The header, or a question or record the header counts, runs past the message.
    RunsPast,
    /// A name, of a question, a record or inside record data, does not decode.
    Name(NameError),
    /// Record data that does not fit its type (a name running past it, TXT strings or
    /// EDNS options running past it, an SOA with bytes left over).
    BadRecordData,
}

/// Record types with a decoded [`RData`].
pub mod rtype {
    /// IPv4 address.
    pub const A: u16 = 1;
    /// Name server.
    pub const NS: u16 = 2;
    /// Canonical name.
    pub const CNAME: u16 = 5;
    /// Start of authority.
    pub const SOA: u16 = 6;
    /// Pointer.
    pub const PTR: u16 = 12;
    /// Mail exchanger.
    pub const MX: u16 = 15;
    /// Text strings.
    pub const TXT: u16 = 16;
    /// IPv6 address.
    pub const AAAA: u16 = 28;
    /// Service location.
    pub const SRV: u16 = 33;
    /// EDNS(0) pseudo-record.
    pub const OPT: u16 = 41;
}

/// The longest name in presentation form the decoder follows (RFC 1035: 255 octets on
/// the wire).
pub const MAX_NAME_LEN: usize = 255;
/// The most compression pointers followed in one name.
pub const MAX_POINTERS: usize = 32;

/// A DNS message whose 12-byte header was captured.
#[derive(Clone, Copy, Debug)]
pub struct Message<'a> {
    bytes: &'a [u8],
}

impl<'a> Message<'a> {
    /// Header length.
    pub const HEADER_LEN: usize = field::LEN;

    /// A view of `bytes` (the UDP payload, or a TCP message after its length prefix).
    pub fn new(bytes: &'a [u8]) -> Option<Message<'a>> {
        (bytes.len() >= Self::HEADER_LEN).then_some(Message { bytes })
    }

    /// The message bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Transaction id.
    pub fn id(&self) -> u16 {
        field_be16(self.bytes, field::ID)
    }

    /// The flags word (QR, opcode, AA, TC, RD, RA, Z, AD, CD, rcode).
    pub fn flags(&self) -> u16 {
        field_be16(self.bytes, field::FLAGS)
    }

    /// QR: a response.
    pub fn is_response(&self) -> bool {
        self.flags() & 0x8000 != 0
    }

    /// Opcode.
    pub fn opcode(&self) -> u8 {
        ((self.flags() >> 11) & 0xf) as u8
    }

    /// Response code (low 4 bits; EDNS extends it).
    pub fn rcode(&self) -> u8 {
        (self.flags() & 0xf) as u8
    }

    /// TC: truncated.
    pub fn truncated(&self) -> bool {
        self.flags() & 0x0200 != 0
    }

    /// Question count.
    pub fn qdcount(&self) -> u16 {
        field_be16(self.bytes, field::QDCOUNT)
    }

    /// Answer count.
    pub fn ancount(&self) -> u16 {
        field_be16(self.bytes, field::ANCOUNT)
    }

    /// Authority count.
    pub fn nscount(&self) -> u16 {
        field_be16(self.bytes, field::NSCOUNT)
    }

    /// Additional count.
    pub fn arcount(&self) -> u16 {
        field_be16(self.bytes, field::ARCOUNT)
    }

    /// Walks the whole message: every question and record the header counts is there,
    /// every name (of questions, records, and inside the data of the record types
    /// [`Record::data`] decodes) decodes, and that data fits its type. Bytes after the
    /// last record are not an error. The walk is linear in the message length.
    pub fn check(&self) -> Result<(), MessageError> {
        let name_ok = |name: Name<'_>| match name.labels().find_map(Result::err) {
            Some(e) => Err(MessageError::Name(e)),
            None => Ok(()),
        };
        // An item that does not fit: its name may be what is wrong, or it runs past.
        let stopped = |off: usize| match name_ok(Name {
            msg: self.bytes,
            off,
        }) {
            Err(MessageError::Name(NameError::Truncated)) | Ok(()) => MessageError::RunsPast,
            Err(e) => e,
        };
        let mut questions = self.questions();
        for _ in 0..self.qdcount() {
            let off = questions.off;
            name_ok(questions.next().ok_or_else(|| stopped(off))?.name)?;
        }
        let mut records = Records {
            msg: self.bytes,
            off: questions.off,
            left: u32::from(self.ancount()) + u32::from(self.nscount()) + u32::from(self.arcount()),
        };
        while records.left > 0 {
            let off = records.off;
            let r = records.next().ok_or_else(|| stopped(off))?;
            name_ok(r.name)?;
            match r.data() {
                RData::Cname(n) | RData::Ns(n) | RData::Ptr(n) => name_ok(n)?,
                RData::Mx { exchange, .. } => name_ok(exchange)?,
                RData::Srv { target, .. } => name_ok(target)?,
                RData::Soa { mname, rname, .. } => {
                    name_ok(mname)?;
                    name_ok(rname)?;
                }
                RData::Txt(t) => {
                    let used: usize = t.iter().map(|s| s.len() + 1).sum();
                    if used != r.rdata_len {
                        return Err(MessageError::BadRecordData);
                    }
                }
                RData::Opt(o) => {
                    let used: usize = o.iter().map(|(_, d)| d.len() + 4).sum();
                    if used != r.rdata_len {
                        return Err(MessageError::BadRecordData);
                    }
                }
                RData::Other(_) => {
                    let has_name = matches!(
                        r.rtype,
                        rtype::CNAME | rtype::NS | rtype::PTR | rtype::MX | rtype::SRV | rtype::SOA
                    );
                    if has_name {
                        return Err(MessageError::BadRecordData);
                    }
                }
                RData::A(_) | RData::Aaaa(_) => {}
            }
        }
        Ok(())
    }

    /// The questions; stops at the first one that does not fit in the message.
    pub fn questions(&self) -> Questions<'a> {
        Questions {
            msg: self.bytes,
            off: Self::HEADER_LEN,
            left: self.qdcount(),
        }
    }

    /// Offset where the records after `skip_questions` questions and `skip_records`
    /// records begin, or `None` when an earlier item does not fit.
    fn section_start(&self, skip_records: u32) -> Option<usize> {
        let mut q = self.questions();
        while q.left > 0 {
            q.next()?;
        }
        let mut r = Records {
            msg: self.bytes,
            off: q.off,
            left: skip_records,
        };
        while r.left > 0 {
            r.next()?;
        }
        Some(r.off)
    }

    fn records(&self, skip: u32, count: u16) -> Records<'a> {
        match self.section_start(skip) {
            Some(off) => Records {
                msg: self.bytes,
                off,
                left: u32::from(count),
            },
            None => Records {
                msg: self.bytes,
                off: self.bytes.len(),
                left: 0,
            },
        }
    }

    /// The answer records.
    pub fn answers(&self) -> Records<'a> {
        self.records(0, self.ancount())
    }

    /// The authority records.
    pub fn authority(&self) -> Records<'a> {
        self.records(u32::from(self.ancount()), self.nscount())
    }

    /// The additional records.
    pub fn additional(&self) -> Records<'a> {
        self.records(
            u32::from(self.ancount()) + u32::from(self.nscount()),
            self.arcount(),
        )
    }
}

/// A domain name inside a message, decoded on demand through compression pointers.
#[derive(Clone, Copy)]
pub struct Name<'a> {
    msg: &'a [u8],
    off: usize,
}

/// Why a name could not be decoded completely.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameError {
    /// A label or pointer runs past the message.
    Truncated,
    /// More than [`MAX_POINTERS`] pointers, or a pointer that does not point backwards.
    PointerLoop,
    /// Longer than [`MAX_NAME_LEN`].
    TooLong,
    /// A label type other than plain (00) or pointer (11).
    BadLabelType,
}

impl<'a> Name<'a> {
    /// The labels, in order; ends with `Err` if the name is damaged.
    pub fn labels(&self) -> Labels<'a> {
        Labels {
            msg: self.msg,
            off: self.off,
            pointers: 0,
            total: 0,
            limit: self.off,
            done: false,
        }
    }

    /// Whether every label decodes.
    pub fn is_valid(&self) -> bool {
        self.labels().all(|l| l.is_ok())
    }

    /// Whether this is the root name (no labels).
    pub fn is_root(&self) -> bool {
        self.msg.get(self.off) == Some(&0)
    }
}

impl fmt::Display for Name<'_> {
    /// Dotted presentation form; labels that are UTF-8 beyond ASCII print as text, other
    /// bytes outside printable ASCII (and `.`/`\` inside a label) are escaped as `\DDD`;
    /// the root is `<Root>` as in Wireshark.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for label in self.labels() {
            let Ok(label) = label else {
                return f.write_str("<damaged>");
            };
            if !first {
                f.write_str(".")?;
            }
            first = false;
            match std::str::from_utf8(label) {
                // Internationalised names sent as raw UTF-8 (mDNS, LLMNR) read as text.
                Ok(s) if !s.is_ascii() => {
                    for c in s.chars() {
                        if c.is_control() || c == '.' || c == '\\' {
                            for b in c.to_string().bytes() {
                                write!(f, "\\{b:03}")?;
                            }
                        } else {
                            fmt::Write::write_char(f, c)?;
                        }
                    }
                }
                _ => {
                    for &c in label {
                        if c.is_ascii_graphic() && c != b'.' && c != b'\\' {
                            fmt::Write::write_char(f, c as char)?;
                        } else {
                            write!(f, "\\{c:03}")?;
                        }
                    }
                }
            }
        }
        if first {
            f.write_str("<Root>")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Name<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Name({self})")
    }
}

impl PartialEq for Name<'_> {
    fn eq(&self, other: &Self) -> bool {
        let mut a = self.labels();
        let mut b = other.labels();
        loop {
            match (a.next(), b.next()) {
                (None, None) => return true,
                (Some(Ok(x)), Some(Ok(y))) if x.eq_ignore_ascii_case(y) => {}
                _ => return false,
            }
        }
    }
}

/// Iterator over the labels of a [`Name`].
#[derive(Clone, Debug)]
pub struct Labels<'a> {
    msg: &'a [u8],
    off: usize,
    pointers: usize,
    total: usize,
    /// Pointers must point strictly before this offset (so they cannot loop).
    limit: usize,
    done: bool,
}

impl<'a> Iterator for Labels<'a> {
    type Item = Result<&'a [u8], NameError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        loop {
            let Some(&len) = self.msg.get(self.off) else {
                return self.fail(NameError::Truncated);
            };
            match len >> 6 {
                0 if len == 0 => {
                    self.done = true;
                    return None;
                }
                0 => {
                    let start = self.off + 1;
                    let Some(label) = self.msg.get(start..start + usize::from(len)) else {
                        return self.fail(NameError::Truncated);
                    };
                    self.total += usize::from(len) + 1;
                    if self.total > MAX_NAME_LEN {
                        return self.fail(NameError::TooLong);
                    }
                    self.off = start + usize::from(len);
                    return Some(Ok(label));
                }
                3 => {
                    let Some(target) = be16(self.msg, self.off).map(|p| usize::from(p & 0x3fff))
                    else {
                        return self.fail(NameError::Truncated);
                    };
                    self.pointers += 1;
                    if self.pointers > MAX_POINTERS || target >= self.limit {
                        return self.fail(NameError::PointerLoop);
                    }
                    self.limit = target;
                    self.off = target;
                }
                _ => return self.fail(NameError::BadLabelType),
            }
        }
    }
}

impl<'a> Labels<'a> {
    fn fail(&mut self, e: NameError) -> Option<Result<&'a [u8], NameError>> {
        self.done = true;
        Some(Err(e))
    }
}

/// The offset just after the name at `off` as it sits in the message (a pointer ends
/// it), or `None` when it runs past the message.
fn skip_name(msg: &[u8], mut off: usize) -> Option<usize> {
    loop {
        let len = *msg.get(off)?;
        match len >> 6 {
            0 if len == 0 => return Some(off + 1),
            0 => off += 1 + usize::from(len),
            3 => return (off + 2 <= msg.len()).then_some(off + 2),
            _ => return None,
        }
    }
}

/// One question.
#[derive(Clone, Copy, Debug)]
pub struct Question<'a> {
    /// The name asked for.
    pub name: Name<'a>,
    /// QTYPE.
    pub qtype: u16,
    /// QCLASS (the top bit is mDNS's unicast-response flag).
    pub qclass: u16,
}

/// Iterator over questions.
#[derive(Clone, Debug)]
pub struct Questions<'a> {
    msg: &'a [u8],
    off: usize,
    left: u16,
}

impl<'a> Iterator for Questions<'a> {
    type Item = Question<'a>;

    fn next(&mut self) -> Option<Question<'a>> {
        if self.left == 0 {
            return None;
        }
        let name = Name {
            msg: self.msg,
            off: self.off,
        };
        let end = skip_name(self.msg, self.off);
        let fields = end.and_then(|e| {
            Some((
                be16(self.msg, e + question::TYPE)?,
                be16(self.msg, e + question::CLASS)?,
                e,
            ))
        });
        let Some((qtype, qclass, e)) = fields else {
            self.left = 0;
            return None;
        };
        self.off = e + question::LEN;
        self.left -= 1;
        Some(Question {
            name,
            qtype,
            qclass,
        })
    }
}

/// One resource record.
#[derive(Clone, Copy, Debug)]
pub struct Record<'a> {
    /// Owner name.
    pub name: Name<'a>,
    /// TYPE.
    pub rtype: u16,
    /// CLASS (for OPT: the UDP payload size).
    pub class: u16,
    /// TTL (for OPT: extended rcode, version and flags).
    pub ttl: u32,
    msg: &'a [u8],
    rdata_off: usize,
    rdata_len: usize,
}

impl<'a> Record<'a> {
    /// The raw RDATA.
    pub fn rdata(&self) -> &'a [u8] {
        &self.msg[self.rdata_off..self.rdata_off + self.rdata_len]
    }

    fn name_at(&self, rel: usize) -> Name<'a> {
        Name {
            msg: self.msg,
            off: self.rdata_off + rel,
        }
    }

    /// The RDATA decoded for the common types; [`RData::Other`] for the rest and for
    /// RDATA whose length does not match its type.
    pub fn data(&self) -> RData<'a> {
        let rd = self.rdata();
        let name_end = |rel: usize| skip_name(self.msg, self.rdata_off + rel);
        let fits = |end: Option<usize>| end.is_some_and(|e| e <= self.rdata_off + rd.len());
        match self.rtype {
            rtype::A if rd.len() == 4 => RData::A(Ipv4Addr::new(rd[0], rd[1], rd[2], rd[3])),
            rtype::AAAA if rd.len() == 16 => {
                let mut a = [0u8; 16];
                a.copy_from_slice(rd);
                RData::Aaaa(Ipv6Addr::from(a))
            }
            rtype::CNAME if fits(name_end(0)) => RData::Cname(self.name_at(0)),
            rtype::NS if fits(name_end(0)) => RData::Ns(self.name_at(0)),
            rtype::PTR if fits(name_end(0)) => RData::Ptr(self.name_at(0)),
            rtype::MX if rd.len() >= 3 && fits(name_end(2)) => RData::Mx {
                preference: u16::from_be_bytes([rd[0], rd[1]]),
                exchange: self.name_at(2),
            },
            rtype::TXT => RData::Txt(TxtStrings { data: rd }),
            rtype::SRV if rd.len() >= 7 && fits(name_end(6)) => RData::Srv {
                priority: u16::from_be_bytes([rd[0], rd[1]]),
                weight: u16::from_be_bytes([rd[2], rd[3]]),
                port: u16::from_be_bytes([rd[4], rd[5]]),
                target: self.name_at(6),
            },
            rtype::SOA => {
                let Some(m_end) = name_end(0) else {
                    return RData::Other(rd);
                };
                let Some(r_end) = skip_name(self.msg, m_end) else {
                    return RData::Other(rd);
                };
                let limit = self.rdata_off + rd.len();
                if r_end + 20 != limit {
                    return RData::Other(rd);
                }
                let num = |i: usize| be32(self.msg, r_end + i).unwrap_or(0);
                RData::Soa {
                    mname: self.name_at(0),
                    rname: Name {
                        msg: self.msg,
                        off: m_end,
                    },
                    serial: num(0),
                    refresh: num(4),
                    retry: num(8),
                    expire: num(12),
                    minimum: num(16),
                }
            }
            rtype::OPT => RData::Opt(EdnsOptions { data: rd }),
            _ => RData::Other(rd),
        }
    }
}

/// Decoded RDATA.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RData<'a> {
    /// IPv4 address.
    A(Ipv4Addr),
    /// IPv6 address.
    Aaaa(Ipv6Addr),
    /// Canonical name.
    Cname(Name<'a>),
    /// Name server.
    Ns(Name<'a>),
    /// Pointer.
    Ptr(Name<'a>),
    /// Mail exchanger.
    Mx {
        /// Preference.
        preference: u16,
        /// Exchange host.
        exchange: Name<'a>,
    },
    /// Character strings.
    Txt(TxtStrings<'a>),
    /// Start of authority.
    Soa {
        /// Primary name server.
        mname: Name<'a>,
        /// Responsible mailbox.
        rname: Name<'a>,
        /// Serial.
        serial: u32,
        /// Refresh interval.
        refresh: u32,
        /// Retry interval.
        retry: u32,
        /// Expiry.
        expire: u32,
        /// Negative-caching TTL.
        minimum: u32,
    },
    /// Service location.
    Srv {
        /// Priority.
        priority: u16,
        /// Weight.
        weight: u16,
        /// Port.
        port: u16,
        /// Target host.
        target: Name<'a>,
    },
    /// EDNS(0) options.
    Opt(EdnsOptions<'a>),
    /// Any other type, or RDATA that does not fit its type.
    Other(&'a [u8]),
}

/// The character strings of a TXT record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxtStrings<'a> {
    data: &'a [u8],
}

impl<'a> TxtStrings<'a> {
    /// The strings; stops at one that runs past the RDATA.
    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let mut rest = self.data;
        std::iter::from_fn(move || {
            let (&len, tail) = rest.split_first()?;
            let s = tail.get(..usize::from(len))?;
            rest = &tail[usize::from(len)..];
            Some(s)
        })
    }
}

/// The options of an OPT record, as `(code, data)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EdnsOptions<'a> {
    data: &'a [u8],
}

impl<'a> EdnsOptions<'a> {
    /// The options; stops at one that runs past the RDATA.
    pub fn iter(&self) -> impl Iterator<Item = (u16, &'a [u8])> + 'a {
        let mut rest = self.data;
        std::iter::from_fn(move || {
            let code = be16(rest, 0)?;
            let len = usize::from(be16(rest, 2)?);
            let d = rest.get(4..4 + len)?;
            rest = &rest[4 + len..];
            Some((code, d))
        })
    }
}

/// Iterator over resource records.
#[derive(Clone, Debug)]
pub struct Records<'a> {
    msg: &'a [u8],
    off: usize,
    left: u32,
}

impl<'a> Iterator for Records<'a> {
    type Item = Record<'a>;

    fn next(&mut self) -> Option<Record<'a>> {
        if self.left == 0 {
            return None;
        }
        let parsed = (|| {
            let e = skip_name(self.msg, self.off)?;
            let rtype = be16(self.msg, e + record::TYPE)?;
            let class = be16(self.msg, e + record::CLASS)?;
            let ttl = be32(self.msg, e + record::TTL)?;
            let rdata_len = usize::from(be16(self.msg, e + record::RDLENGTH)?);
            let rdata_off = e + record::LEN;
            (rdata_off + rdata_len <= self.msg.len()).then_some(Record {
                name: Name {
                    msg: self.msg,
                    off: self.off,
                },
                rtype,
                class,
                ttl,
                msg: self.msg,
                rdata_off,
                rdata_len,
            })
        })();
        match parsed {
            Some(r) => {
                self.off = r.rdata_off + r.rdata_len;
                self.left -= 1;
                Some(r)
            }
            None => {
                self.left = 0;
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(qd: u16, an: u16) -> Vec<u8> {
        let mut m = vec![0u8; 12];
        m[0..2].copy_from_slice(&0xbeefu16.to_be_bytes());
        m[2] = 0x81;
        m[3] = 0x80;
        m[4..6].copy_from_slice(&qd.to_be_bytes());
        m[6..8].copy_from_slice(&an.to_be_bytes());
        m
    }

    #[test]
    fn pointer_to_itself_is_a_loop_not_a_hang() {
        let mut m = header(1, 0);
        m.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1]);
        let msg = Message::new(&m).unwrap();
        let q = msg.questions().next().unwrap();
        assert_eq!(q.name.labels().last(), Some(Err(NameError::PointerLoop)));
        assert_eq!(q.name.to_string(), "<damaged>");
        assert_eq!(q.qtype, 1);
    }

    #[test]
    fn two_pointers_chasing_each_other_stop() {
        // name at 12: "a" + pointer to 17; at 17: "b" + pointer to 12
        let mut m = header(2, 0);
        m.extend_from_slice(&[1, b'a', 0xc0, 17, 0, 1, 0, 1]);
        m.extend_from_slice(&[1, b'b', 0xc0, 12, 0, 1, 0, 1]);
        let msg = Message::new(&m).unwrap();
        for q in msg.questions() {
            assert!(!q.name.is_valid());
            assert!(q.name.labels().count() <= 4);
        }
    }

    #[test]
    fn names_longer_than_255_are_refused() {
        let mut m = header(1, 0);
        for _ in 0..5 {
            m.push(63);
            m.extend_from_slice(&[b'x'; 63]);
        }
        m.extend_from_slice(&[0, 0, 1, 0, 1]);
        let msg = Message::new(&m).unwrap();
        let q = msg.questions().next().unwrap();
        assert_eq!(q.name.labels().last(), Some(Err(NameError::TooLong)));
    }

    #[test]
    fn records_of_every_common_type_decode() {
        let mut m = header(1, 7);
        m.extend_from_slice(&[3, b'f', b'o', b'o', 0, 0, 28, 0, 1]); // foo AAAA IN
        let rr = |m: &mut Vec<u8>, t: u16, data: &[u8]| {
            m.extend_from_slice(&[0xc0, 12]);
            m.extend_from_slice(&t.to_be_bytes());
            m.extend_from_slice(&[0, 1, 0, 0, 0, 60]);
            m.extend_from_slice(&(data.len() as u16).to_be_bytes());
            m.extend_from_slice(data);
        };
        let mut aaaa = [0u8; 16];
        aaaa[0] = 0x20;
        aaaa[15] = 1;
        rr(&mut m, rtype::AAAA, &aaaa);
        rr(&mut m, rtype::CNAME, &[3, b'b', b'a', b'r', 0xc0, 12]);
        rr(&mut m, rtype::MX, &[0, 10, 0xc0, 12]);
        rr(&mut m, rtype::TXT, &[2, b'h', b'i', 3, b'y', b'o', b'u']);
        rr(&mut m, rtype::SRV, &[0, 1, 0, 2, 0x13, 0x88, 0xc0, 12]);
        let mut soa = vec![0xc0, 12, 0xc0, 12];
        for v in [1u32, 2, 3, 4, 5] {
            soa.extend_from_slice(&v.to_be_bytes());
        }
        rr(&mut m, rtype::SOA, &soa);
        rr(&mut m, rtype::A, &[1, 2, 3]); // wrong length: Other
        let msg = Message::new(&m).unwrap();
        let data: Vec<RData<'_>> = msg.answers().map(|r| r.data()).collect();
        assert_eq!(data.len(), 7);
        assert_eq!(data[0], RData::Aaaa("2000::1".parse().unwrap()));
        match data[1] {
            RData::Cname(n) => assert_eq!(n.to_string(), "bar.foo"),
            ref other => panic!("{other:?}"),
        }
        assert!(matches!(data[2], RData::Mx { preference: 10, .. }));
        match data[3] {
            RData::Txt(t) => assert_eq!(t.iter().collect::<Vec<_>>(), [&b"hi"[..], b"you"]),
            ref other => panic!("{other:?}"),
        }
        assert!(matches!(
            data[4],
            RData::Srv {
                priority: 1,
                weight: 2,
                port: 5000,
                ..
            }
        ));
        assert!(matches!(
            data[5],
            RData::Soa {
                serial: 1,
                minimum: 5,
                ..
            }
        ));
        assert_eq!(data[6], RData::Other(&[1, 2, 3]));
        assert_eq!(msg.authority().count(), 0);
    }

    #[test]
    fn check_names_what_is_wrong() {
        let question = [3, b'f', b'o', b'o', 0, 0, 1, 0, 1];
        let answer = |t: u16, data: &[u8]| {
            let mut r = vec![0xc0, 12];
            r.extend_from_slice(&t.to_be_bytes());
            r.extend_from_slice(&[0, 1, 0, 0, 0, 60]);
            r.extend_from_slice(&(data.len() as u16).to_be_bytes());
            r.extend_from_slice(data);
            r
        };
        let message = |qd: u16, an: u16, parts: &[&[u8]]| {
            let mut m = header(qd, an);
            for p in parts {
                m.extend_from_slice(p);
            }
            m
        };
        let check = |m: &[u8]| Message::new(m).unwrap().check();
        let good = message(1, 1, &[&question, &answer(rtype::A, &[1, 2, 3, 4])]);
        assert_eq!(check(&good), Ok(()));
        // bytes after the last record are fine
        assert_eq!(check(&message(1, 0, &[&question, b"junk"])), Ok(()));
        // more questions or records counted than there are
        assert_eq!(
            check(&message(2, 0, &[&question])),
            Err(MessageError::RunsPast)
        );
        assert_eq!(
            check(&message(1, 1, &[&question])),
            Err(MessageError::RunsPast)
        );
        assert_eq!(check(&good[..good.len() - 1]), Err(MessageError::RunsPast));
        // names: a loop, a bad label type, inside record data too
        assert_eq!(
            check(&message(1, 0, &[&[0xc0, 12, 0, 1, 0, 1]])),
            Err(MessageError::Name(NameError::PointerLoop))
        );
        assert_eq!(
            check(&message(1, 0, &[&[0x41, 0, 0, 1, 0, 1]])),
            Err(MessageError::Name(NameError::BadLabelType))
        );
        let cname_loop = answer(rtype::CNAME, &[1, b'x', 0xc0, 41]);
        assert_eq!(
            check(&message(1, 1, &[&question, &cname_loop])),
            Err(MessageError::Name(NameError::PointerLoop))
        );
        // record data that does not fit its type
        let cname_long = answer(rtype::CNAME, &[5, b'x', 0]);
        assert_eq!(
            check(&message(
                1,
                1,
                &[&question, &[cname_long, vec![0; 4]].concat()]
            )),
            Err(MessageError::BadRecordData)
        );
        let txt_long = answer(rtype::TXT, &[2, b'h', b'i', 9, b'x']);
        assert_eq!(
            check(&message(1, 1, &[&question, &txt_long])),
            Err(MessageError::BadRecordData)
        );
        // an unknown type's data is anything
        assert_eq!(
            check(&message(1, 1, &[&question, &answer(99, &[0xc0, 0xff])])),
            Ok(())
        );
    }

    #[test]
    fn counts_larger_than_the_message_stop_cleanly() {
        let mut m = header(3, 200);
        m.extend_from_slice(&[1, b'a', 0, 0, 1, 0, 1]);
        let msg = Message::new(&m).unwrap();
        assert_eq!(msg.questions().count(), 1);
        assert_eq!(msg.answers().count(), 0);
        assert_eq!(msg.additional().count(), 0);
    }
}
