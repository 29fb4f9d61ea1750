//! GTP version 1 headers (3GPP TS 29.060 §6, TS 29.281 §5): user plane (GTP-U, UDP
//! 2152) and control plane (GTP-C, UDP 2123): version, message type and the tunnel
//! endpoint identifier (TEID) every GTPv1 header carries. The user packets a G-PDU
//! carries are decoded as a tunnel ([`crate::Tunnel::GtpU`]).
//!
//! ```
//! use tracekit_decode::gtp::GtpHeader;
//! // GTPv1-U echo request (type 1), TEID 0x00001234.
//! let h = GtpHeader::new_checked(&[0x32, 1, 0, 4, 0, 0, 0x12, 0x34, 0, 0, 0, 0]).unwrap();
//! assert_eq!((h.message_type(), h.teid()), (1, 0x1234));
//! ```

use crate::bytes::field_be32;
use crate::ip_proto;

/// Byte ranges of the mandatory header.
mod field {
    use core::ops::Range;
    pub const FLAGS: usize = 0;
    pub const MSG_TYPE: usize = 1;
    pub const TEID: Range<usize> = 4..8;
    pub const FIXED_LEN: usize = 8;
}

/// GTPv1 in the version bits, and the protocol-type bit (GTP, not GTP').
const VERSION_1: u8 = 1;
const FLAG_PT: u8 = 0x10;

/// UDP ports of GTPv1: control plane, user plane.
pub const UDP_PORTS: [u16; 2] = [2123, 2152];

/// A GTPv1 header whose mandatory 8 bytes were captured.
#[derive(Clone, Copy, Debug)]
pub struct GtpHeader<'a> {
    bytes: &'a [u8],
}

impl<'a> GtpHeader<'a> {
    /// A view of `bytes` if they start with a GTPv1 header (version 1, protocol type
    /// GTP) of which the mandatory part was captured.
    pub fn new_checked(bytes: &'a [u8]) -> Option<GtpHeader<'a>> {
        let flags = *bytes.get(field::FLAGS)?;
        let v1 = flags >> 5 == VERSION_1 && flags & FLAG_PT != 0;
        (v1 && bytes.len() >= field::FIXED_LEN).then_some(GtpHeader { bytes })
    }

    /// Message type (255 a G-PDU carrying a user packet, 1 echo request, ...).
    pub fn message_type(&self) -> u8 {
        self.bytes[field::MSG_TYPE]
    }

    /// Tunnel endpoint identifier.
    pub fn teid(&self) -> u32 {
        field_be32(self.bytes, field::TEID)
    }
}

/// The GTPv1 header a UDP datagram on a GTP port carries.
pub(crate) fn in_transport<'a>(
    proto: u8,
    sp: u16,
    dp: u16,
    payload: impl FnOnce() -> Option<&'a [u8]>,
) -> Option<GtpHeader<'a>> {
    let port = UDP_PORTS.iter().any(|p| *p == sp || *p == dp);
    (proto == ip_proto::UDP && port)
        .then(|| GtpHeader::new_checked(payload()?))
        .flatten()
}
