//! NTP packets (RFC 5905 §7.3): the header's leap indicator, version, mode and stratum.
//! Modes 6 (control, RFC 9327) and 7 (private) have no stratum.
//!
//! ```
//! use tracekit_decode::ntp::NtpHeader;
//! // A version 4 client request (mode 3), stratum 0.
//! let mut pkt = [0u8; 48];
//! pkt[0] = 0b00_100_011;
//! let ntp = NtpHeader::new_checked(&pkt).unwrap();
//! assert_eq!((ntp.version(), ntp.mode(), ntp.stratum()), (4, 3, Some(0)));
//! ```

use crate::bytes::u8_at;
use crate::ip_proto;

/// Byte offsets of the header (RFC 5905 figure 8).
mod field {
    /// LI (2 bits), VN (3 bits), Mode (3 bits).
    pub const FLAGS: usize = 0;
    pub const STRATUM: usize = 1;
    /// The part every mode has.
    pub const MIN_LEN: usize = 2;
}

/// Mode values without a stratum: control messages and private (ntpdc) messages.
mod mode {
    pub const CONTROL: u8 = 6;
    pub const PRIVATE: u8 = 7;
}

/// The UDP port of NTP.
pub const PORT: u16 = 123;

/// An NTP header whose first two bytes were captured.
#[derive(Clone, Copy, Debug)]
pub struct NtpHeader<'a> {
    bytes: &'a [u8],
}

impl<'a> NtpHeader<'a> {
    /// A view of `bytes` if the flags and stratum are there.
    pub fn new_checked(bytes: &'a [u8]) -> Option<NtpHeader<'a>> {
        (bytes.len() >= field::MIN_LEN).then_some(NtpHeader { bytes })
    }

    fn flags(&self) -> u8 {
        self.bytes[field::FLAGS]
    }

    /// Leap indicator (0–3).
    pub fn leap(&self) -> u8 {
        self.flags() >> 6
    }

    /// Version number.
    pub fn version(&self) -> u8 {
        (self.flags() >> 3) & 0x7
    }

    /// Mode: 1 symmetric active, 2 symmetric passive, 3 client, 4 server, 5 broadcast,
    /// 6 control, 7 private.
    pub fn mode(&self) -> u8 {
        self.flags() & 0x7
    }

    /// Stratum, for the modes that have one (not 6 and 7).
    pub fn stratum(&self) -> Option<u8> {
        match self.mode() {
            mode::CONTROL | mode::PRIVATE => None,
            _ => u8_at(self.bytes, field::STRATUM),
        }
    }
}

/// The NTP header a UDP datagram to or from port 123 carries.
pub(crate) fn in_transport<'a>(
    proto: u8,
    sp: u16,
    dp: u16,
    payload: impl FnOnce() -> Option<&'a [u8]>,
) -> Option<NtpHeader<'a>> {
    (proto == ip_proto::UDP && (sp == PORT || dp == PORT))
        .then(|| NtpHeader::new_checked(payload()?))
        .flatten()
}
