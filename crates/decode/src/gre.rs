//! GRE headers (RFC 2784/2890, RFC 1701's source routes, and PPTP's enhanced GRE,
//! version 1).

use crate::anomaly::Anomaly;
use crate::bytes::{be16, field_be16, field_be32, u8_at};
use crate::net::NetInfo;

mod field {
    use core::ops::Range;
    pub const FLAGS: usize = 0;
    pub const FLAGS_VERSION: usize = 1;
    pub const PROTOCOL: Range<usize> = 2..4;
    pub const FIXED_LEN: usize = 4;
    /// Each optional field (checksum + offset, key, sequence, acknowledgement) is one
    /// 32-bit word, in that order after the fixed part; RFC 1701's routing field (a list
    /// of source route entries) follows them.
    pub const WORD: usize = 4;
}

/// A source route entry (RFC 1701): address family, offset of the active entry, length
/// of the routing information, then that many bytes. Family 0 with length 0 ends the list.
mod sre {
    pub const ADDRESS_FAMILY: usize = 0;
    pub const OFFSET: usize = 2;
    pub const LENGTH: usize = 3;
    pub const HEADER_LEN: usize = 4;
}

/// Bits of the first flags byte.
mod flag {
    /// Checksum present (version 0).
    pub const CHECKSUM: u8 = 0x80;
    /// Routing present (version 0, RFC 1701): the checksum + offset word is there too.
    pub const ROUTING: u8 = 0x40;
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
    /// ([`Anomaly::GreTruncated`]), the version is 0, or 1 with a key
    /// ([`Anomaly::GreBadVersion`]), and a routing field's source route entries end
    /// with the NULL entry inside `bytes` ([`Anomaly::GreRoutingUnterminated`]; the
    /// decoder reports a list that runs into the end of a cut capture as truncated).
    pub fn new_checked(bytes: &'a [u8]) -> Result<GreHeader<'a>, Anomaly> {
        if bytes.len() < field::FIXED_LEN {
            return Err(Anomaly::GreTruncated);
        }
        let (b0, b1) = (bytes[field::FLAGS], bytes[field::FLAGS_VERSION]);
        let version = b1 & flag::VERSION_MASK;
        let mut len = field::FIXED_LEN;
        match version {
            0 => {
                if b0 & (flag::CHECKSUM | flag::ROUTING) != 0 {
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
        if version == 0 && b0 & flag::ROUTING != 0 {
            len = routing_end(bytes, len).ok_or(Anomaly::GreRoutingUnterminated)?;
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

    /// Whether the checksum + offset word is there (version 0 with C or R).
    fn has_checksum_word(&self) -> bool {
        self.version() == 0 && self.flags() & (flag::CHECKSUM | flag::ROUTING) != 0
    }

    fn has_key(&self) -> bool {
        self.flags() & flag::KEY != 0
    }

    /// The end of the key and sequence words, where a routing field starts.
    fn words_end(&self) -> usize {
        let words = usize::from(self.has_checksum_word())
            + usize::from(self.has_key())
            + usize::from(self.flags() & flag::SEQUENCE != 0);
        field::FIXED_LEN + words * field::WORD
    }

    /// Checksum field, when present (the C bit; with only R set the word is there but
    /// carries no checksum).
    pub fn checksum(&self) -> Option<u16> {
        (self.version() == 0 && self.flags() & flag::CHECKSUM != 0)
            .then(|| (self.word(0) >> 16) as u16)
    }

    /// Key field, when present (for version 1: payload length in the high half, call id
    /// in the low half).
    pub fn key(&self) -> Option<u32> {
        let skip = usize::from(self.has_checksum_word());
        self.has_key().then(|| self.word(skip))
    }

    /// Sequence number, when present.
    pub fn sequence(&self) -> Option<u32> {
        let skip = usize::from(self.has_checksum_word()) + usize::from(self.has_key());
        (self.flags() & flag::SEQUENCE != 0).then(|| self.word(skip))
    }

    /// RFC 1701's routing offset (from the start of the routing field to the active
    /// source route entry), when the R bit is set.
    pub fn routing_offset(&self) -> Option<u16> {
        self.has_routing().then(|| self.word(0) as u16)
    }

    fn has_routing(&self) -> bool {
        self.version() == 0 && self.flags() & flag::ROUTING != 0
    }

    /// The source route entries of RFC 1701's routing field, without the NULL entry
    /// that ends them (none when the R bit is clear).
    pub fn source_routes(&self) -> SourceRoutes<'a> {
        let start = self.words_end();
        let end = if self.has_routing() { self.len } else { start };
        SourceRoutes {
            bytes: &self.bytes[..end],
            at: start,
        }
    }
}

/// Where the routing field that starts at `at` ends (after its NULL entry), if that is
/// inside `bytes`. Each entry is at least 4 bytes, so the walk is bounded by the bytes.
fn routing_end(bytes: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let family = be16(bytes, at + sre::ADDRESS_FAMILY)?;
        let length = usize::from(u8_at(bytes, at + sre::LENGTH)?);
        at += sre::HEADER_LEN + length;
        if family == 0 && length == 0 {
            return Some(at);
        }
        if at > bytes.len() {
            return None;
        }
    }
}

/// The header `b` carries, for the decoder: a routing field that runs into the end of
/// a capture that cut the packet is a truncation, not a malformation.
pub(crate) fn in_packet<'a>(n: &NetInfo, b: &'a [u8]) -> Result<GreHeader<'a>, Anomaly> {
    GreHeader::new_checked(b).map_err(|a| {
        let cut = n.avail_end < n.declared_end || n.frag.is_some_and(|f| f.more);
        if a == Anomaly::GreRoutingUnterminated && cut {
            Anomaly::GreTruncated
        } else {
            a
        }
    })
}

/// One source route entry of a GRE routing field (RFC 1701).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceRoute<'a> {
    /// Address family of the routing information (0x0800 IP, 0xfffe AS numbers).
    pub address_family: u16,
    /// Offset of the active entry inside the routing information.
    pub offset: u8,
    /// The routing information.
    pub info: &'a [u8],
}

/// Iterator over the source route entries of a [`GreHeader`].
#[derive(Clone, Debug)]
pub struct SourceRoutes<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Iterator for SourceRoutes<'a> {
    type Item = SourceRoute<'a>;

    fn next(&mut self) -> Option<SourceRoute<'a>> {
        let address_family = be16(self.bytes, self.at + sre::ADDRESS_FAMILY)?;
        let offset = u8_at(self.bytes, self.at + sre::OFFSET)?;
        let length = usize::from(u8_at(self.bytes, self.at + sre::LENGTH)?);
        let start = self.at + sre::HEADER_LEN;
        if address_family == 0 && length == 0 {
            self.at = self.bytes.len();
            return None;
        }
        let info = self.bytes.get(start..start + length)?;
        self.at = start + length;
        Some(SourceRoute {
            address_family,
            offset,
            info,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// R set, checksum + offset word, key, then two entries and the NULL entry.
    fn routed() -> Vec<u8> {
        let mut b = vec![0x60, 0x00, 0x08, 0x00, 0, 0, 0, 4, 0, 0, 0, 9];
        b.extend_from_slice(&[0x08, 0x00, 4, 8, 1, 2, 3, 4, 5, 6, 7, 8]);
        b.extend_from_slice(&[0xff, 0xfe, 0, 2, 0, 7]);
        b.extend_from_slice(&[0, 0, 0, 0]);
        b
    }

    #[test]
    fn source_routes_are_part_of_the_header() {
        let mut b = routed();
        let header_len = b.len();
        b.extend_from_slice(&[0x45, 0, 0, 20]); // the inner packet starts here
        let h = GreHeader::new_checked(&b).unwrap();
        assert_eq!(h.header_len(), header_len);
        assert_eq!(h.checksum(), None);
        assert_eq!(h.routing_offset(), Some(4));
        assert_eq!(h.key(), Some(9));
        let routes: Vec<_> = h.source_routes().collect();
        assert_eq!(routes.len(), 2);
        assert_eq!(routes[0].address_family, 0x0800);
        assert_eq!(
            (routes[0].offset, routes[0].info),
            (4, &[1, 2, 3, 4, 5, 6, 7, 8][..])
        );
        assert_eq!(
            (routes[1].address_family, routes[1].info),
            (0xfffe, &[0, 7][..])
        );
        // Without R there are none, and the checksum word is only a checksum with C.
        let plain = [0x80, 0x00, 0x08, 0x00, 0xab, 0xcd, 0, 0];
        let h = GreHeader::new_checked(&plain).unwrap();
        assert_eq!((h.checksum(), h.routing_offset()), (Some(0xabcd), None));
        assert_eq!(h.source_routes().count(), 0);
    }

    #[test]
    fn a_list_without_its_null_entry_is_unterminated() {
        let b = routed();
        for cut in 12..b.len() {
            assert_eq!(
                GreHeader::new_checked(&b[..cut]).unwrap_err(),
                Anomaly::GreRoutingUnterminated,
                "{cut}"
            );
        }
        // An entry whose length runs past the bytes.
        let mut long = b[..12].to_vec();
        long.extend_from_slice(&[0x08, 0x00, 0, 200, 1, 2, 3, 4, 0, 0, 0, 0]);
        assert_eq!(
            GreHeader::new_checked(&long).unwrap_err(),
            Anomaly::GreRoutingUnterminated
        );
        // Version 1 has no routing field: the R bit is not followed.
        let v1 = [0x60, 0x01, 0x88, 0x0b, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(GreHeader::new_checked(&v1).unwrap().header_len(), 8);
    }
}
