//! GRE headers (RFC 2784/2890, and PPTP's enhanced GRE, version 1).

/// A GRE header whose flags-dependent length was captured, with version 0 or 1.
#[derive(Clone, Copy, Debug)]
pub struct GreHeader<'a> {
    bytes: &'a [u8],
    len: usize,
}

/// Why a GRE header could not be viewed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GreError {
    Truncated,
    BadVersion,
}

impl<'a> GreHeader<'a> {
    /// A view of `bytes` if the header and its optional fields are there.
    pub fn new_checked(bytes: &'a [u8]) -> Option<GreHeader<'a>> {
        Self::parse(bytes).ok()
    }

    pub(crate) fn parse(bytes: &'a [u8]) -> Result<GreHeader<'a>, GreError> {
        let (b0, b1) = match bytes {
            [b0, b1, _, _, ..] => (*b0, *b1),
            _ => return Err(GreError::Truncated),
        };
        let version = b1 & 7;
        let mut len = 4;
        match version {
            0 => {
                if b0 & 0xC0 != 0 {
                    len += 4; // checksum (+ offset)
                }
            }
            1 => {
                if b0 & 0x20 == 0 {
                    return Err(GreError::BadVersion);
                }
                if b1 & 0x80 != 0 {
                    len += 4; // acknowledgement number (counted after key and sequence)
                }
            }
            _ => return Err(GreError::BadVersion),
        }
        if b0 & 0x20 != 0 {
            len += 4;
        }
        if b0 & 0x10 != 0 {
            len += 4;
        }
        if bytes.len() < len {
            return Err(GreError::Truncated);
        }
        Ok(GreHeader { bytes, len })
    }

    /// Header length including the optional fields.
    pub fn header_len(&self) -> usize {
        self.len
    }

    /// Version (0, or 1 for PPTP).
    pub fn version(&self) -> u8 {
        self.bytes[1] & 7
    }

    /// The protocol type (an EtherType).
    pub fn protocol(&self) -> u16 {
        u16::from_be_bytes([self.bytes[2], self.bytes[3]])
    }

    fn word_after(&self, skip: usize) -> u32 {
        let i = 4 + skip;
        u32::from_be_bytes([
            self.bytes[i],
            self.bytes[i + 1],
            self.bytes[i + 2],
            self.bytes[i + 3],
        ])
    }

    fn has_checksum(&self) -> bool {
        self.version() == 0 && self.bytes[0] & 0xC0 != 0
    }

    /// Checksum field, when present.
    pub fn checksum(&self) -> Option<u16> {
        self.has_checksum()
            .then(|| (self.word_after(0) >> 16) as u16)
    }

    /// Key field, when present (for version 1: payload length in the high half, call id
    /// in the low half).
    pub fn key(&self) -> Option<u32> {
        let skip = if self.has_checksum() { 4 } else { 0 };
        (self.bytes[0] & 0x20 != 0).then(|| self.word_after(skip))
    }

    /// Sequence number, when present.
    pub fn sequence(&self) -> Option<u32> {
        let mut skip = if self.has_checksum() { 4 } else { 0 };
        if self.bytes[0] & 0x20 != 0 {
            skip += 4;
        }
        (self.bytes[0] & 0x10 != 0).then(|| self.word_after(skip))
    }
}
