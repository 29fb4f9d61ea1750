//! DHCP and BOOTP messages (RFC 2131 §2, RFC 951): the client hardware address and the
//! options a monitor reads (message type, host name), as views over the datagram.
//!
//! ```
//! use tracekit_decode::dhcp::DhcpMessage;
//! let mut m = vec![1u8, 1, 6, 0];           // BOOTREQUEST, Ethernet, 6-byte address
//! m.resize(28, 0);
//! m.extend([0x02, 0, 0, 0, 0, 0x01]);      // chaddr
//! m.resize(236, 0);
//! m.extend([99, 130, 83, 99]);              // magic cookie
//! m.extend([53, 1, 1, 12, 4, b'h', b'o', b's', b't', 255]); // DISCOVER, host name
//! let d = DhcpMessage::new_checked(&m).unwrap();
//! assert_eq!(d.client_mac(), Some([2, 0, 0, 0, 0, 1]));
//! assert_eq!(d.message_type(), Some(1));
//! assert_eq!(d.hostname(), Some(&b"host"[..]));
//! ```

use crate::bytes::u8_at;
use crate::ip_proto;

/// Byte ranges of the fixed part (RFC 2131 figure 1).
mod field {
    use core::ops::Range;
    pub const OP: usize = 0;
    pub const HTYPE: usize = 1;
    pub const HLEN: usize = 2;
    pub const CHADDR: Range<usize> = 28..44;
    pub const COOKIE: Range<usize> = 236..240;
    pub const OPTIONS: usize = 240;
}

/// Option codes (RFC 2132).
mod option {
    pub const PAD: u8 = 0;
    pub const HOST_NAME: u8 = 12;
    pub const MESSAGE_TYPE: u8 = 53;
    pub const END: u8 = 255;
}

/// The magic cookie that starts the options.
const COOKIE: [u8; 4] = [99, 130, 83, 99];
/// Hardware type Ethernet.
const HTYPE_ETHERNET: u8 = 1;

/// UDP ports of DHCP: server, client, and PXE's boot server.
pub const UDP_PORTS: [u16; 3] = [67, 68, 4011];

/// A DHCP/BOOTP message whose first 44 bytes (through the client hardware address)
/// were captured; the options are read as far as the capture goes.
#[derive(Clone, Copy, Debug)]
pub struct DhcpMessage<'a> {
    bytes: &'a [u8],
}

impl<'a> DhcpMessage<'a> {
    /// A view of `bytes` if they reach through the client hardware address.
    pub fn new_checked(bytes: &'a [u8]) -> Option<DhcpMessage<'a>> {
        (bytes.len() >= field::CHADDR.end).then_some(DhcpMessage { bytes })
    }

    /// 1 for a request (client to server), 2 for a reply.
    pub fn op(&self) -> u8 {
        self.bytes[field::OP]
    }

    /// The client's hardware address, when it is an Ethernet address (hardware type 1,
    /// length 6).
    pub fn client_mac(&self) -> Option<[u8; 6]> {
        if self.bytes[field::HTYPE] != HTYPE_ETHERNET || self.bytes[field::HLEN] != 6 {
            return None;
        }
        let c = &self.bytes[field::CHADDR];
        Some([c[0], c[1], c[2], c[3], c[4], c[5]])
    }

    /// The options after the magic cookie, as (code, value); none for plain BOOTP.
    /// Iteration stops at the end option or where an option runs past the capture.
    pub fn options(&self) -> DhcpOptions<'a> {
        let rest = match self.bytes.get(field::COOKIE) {
            Some(c) if c == COOKIE => &self.bytes[field::OPTIONS..],
            _ => &[],
        };
        DhcpOptions { rest }
    }

    fn option(&self, code: u8) -> Option<&'a [u8]> {
        self.options().find(|(c, _)| *c == code).map(|(_, v)| v)
    }

    /// The DHCP message type (option 53: 1 DISCOVER, 2 OFFER, 3 REQUEST, 5 ACK, ...).
    pub fn message_type(&self) -> Option<u8> {
        self.option(option::MESSAGE_TYPE).and_then(|v| u8_at(v, 0))
    }

    /// The client's host name (option 12), without the NUL bytes some clients end it
    /// with.
    pub fn hostname(&self) -> Option<&'a [u8]> {
        let mut name = self.option(option::HOST_NAME)?;
        while let [rest @ .., 0] = name {
            name = rest;
        }
        Some(name)
    }
}

/// The options of a [`DhcpMessage`].
#[derive(Clone, Debug)]
pub struct DhcpOptions<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for DhcpOptions<'a> {
    type Item = (u8, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (&code, rest) = self.rest.split_first()?;
            match code {
                option::PAD => self.rest = rest,
                option::END => {
                    self.rest = &[];
                    return None;
                }
                _ => {
                    let len = usize::from(*rest.first()?);
                    let Some(value) = rest.get(1..1 + len) else {
                        self.rest = &[];
                        return None;
                    };
                    self.rest = &rest[1 + len..];
                    return Some((code, value));
                }
            }
        }
    }
}

/// The DHCP message a UDP datagram on a DHCP port carries.
pub(crate) fn in_transport<'a>(
    proto: u8,
    sp: u16,
    dp: u16,
    payload: impl FnOnce() -> Option<&'a [u8]>,
) -> Option<DhcpMessage<'a>> {
    let port = UDP_PORTS.iter().any(|p| *p == sp || *p == dp);
    (proto == ip_proto::UDP && port)
        .then(|| DhcpMessage::new_checked(payload()?))
        .flatten()
}
