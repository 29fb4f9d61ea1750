//! GRE headers (RFC 2784/2890, and PPTP's enhanced GRE, version 1).

use crate::anomaly::Anomaly;
use crate::bytes::{field_be16, field_be32};

mod field {
    use core::ops::Range;
    pub const FLAGS: usize = 0;
    pub const FLAGS_VERSION: usize = 1;
    pub const PROTOCOL: Range<usize> = 2..4;
    pub const FIXED_LEN: usize = 4;
    /// Each optional field (checksum + offset/reserved, key, sequence, acknowledgement)
    /// is one 32-bit word, in that order after the fixed part.
    pub const WORD: usize = 4;
}

/// Bits of the first flags byte.
mod flag {
    /// Checksum present (version 0); with routing present, the checksum word is there too.
    pub const CHECKSUM_OR_ROUTING: u8 = 0xC0;
    pub const KEY: u8 = 0x20;
    pub const SEQUENCE: u8 = 0x10;
    /// In the second byte: acknowledgement present (version 1).
    pub const ACK: u8 = 0x80;
    /// In the second byte.
    pub const VERSION_MASK: u8 = 0x07;
}

/// A GRE header whose flags-dependent length was captured, with version 0 or 1.
#[derive(Clone, Copy, Debug)]
pub struct GreHeader<'a> {
    bytes: &'a [u8],
    len: usize,
}

impl<'a> GreHeader<'a> {
    /// A view of `bytes` if the header and its optional fields are there
    /// ([`Anomaly::GreTruncated`]) and the version is 0, or 1 with a key
    /// ([`Anomaly::GreBadVersion`]).
    pub fn new_checked(bytes: &'a [u8]) -> Result<GreHeader<'a>, Anomaly> {
        if bytes.len() < field::FIXED_LEN {
            return Err(Anomaly::GreTruncated);
        }
        let (b0, b1) = (bytes[field::FLAGS], bytes[field::FLAGS_VERSION]);
        let mut len = field::FIXED_LEN;
        match b1 & flag::VERSION_MASK {
            0 => {
                if b0 & flag::CHECKSUM_OR_ROUTING != 0 {
                    len += field::WORD;
                }
            }
            1 => {
                if b0 & flag::KEY == 0 {
                    return Err(Anomaly::GreBadVersion);
                }
                if b1 & flag::ACK != 0 {
                    len += field::WORD; // counted here, read after key and sequence
                }
            }
            _ => return Err(Anomaly::GreBadVersion),
        }
        if b0 & flag::KEY != 0 {
            len += field::WORD;
        }
        if b0 & flag::SEQUENCE != 0 {
            len += field::WORD;
        }
        if bytes.len() < len {
            return Err(Anomaly::GreTruncated);
        }
        Ok(GreHeader { bytes, len })
    }

    /// Header length including the optional fields.
    #[inline]
    pub fn header_len(&self) -> usize {
        self.len
    }

    /// Version (0, or 1 for PPTP).
    #[inline]
    pub fn version(&self) -> u8 {
        self.bytes[field::FLAGS_VERSION] & flag::VERSION_MASK
    }

    /// The protocol type (an EtherType).
    #[inline]
    pub fn protocol(&self) -> u16 {
        field_be16(self.bytes, field::PROTOCOL)
    }

    /// The optional word after `skip` optional words.
    fn word(&self, skip: usize) -> u32 {
        let at = field::FIXED_LEN + skip * field::WORD;
        field_be32(self.bytes, at..at + field::WORD)
    }

    fn flags(&self) -> u8 {
        self.bytes[field::FLAGS]
    }

    fn has_checksum(&self) -> bool {
        self.version() == 0 && self.flags() & flag::CHECKSUM_OR_ROUTING != 0
    }

    fn has_key(&self) -> bool {
        self.flags() & flag::KEY != 0
    }

    /// Checksum field, when present.
    pub fn checksum(&self) -> Option<u16> {
        self.has_checksum().then(|| (self.word(0) >> 16) as u16)
    }

    /// Key field, when present (for version 1: payload length in the high half, call id
    /// in the low half).
    pub fn key(&self) -> Option<u32> {
        let skip = usize::from(self.has_checksum());
        self.has_key().then(|| self.word(skip))
    }

    /// Sequence number, when present.
    pub fn sequence(&self) -> Option<u32> {
        let skip = usize::from(self.has_checksum()) + usize::from(self.has_key());
        (self.flags() & flag::SEQUENCE != 0).then(|| self.word(skip))
    }
}
