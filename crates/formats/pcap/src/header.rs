//! The 24-byte pcap file header.
//!
//! ```text
//! offset  field
//!      0  magic            a1b2c3d4 (µs) | a1b23c4d (ns) | a1b2cd34 (Kuznetzov, µs), either byte order
//!      4  version major    2
//!      6  version minor    4
//!      8  thiszone         (i32, always 0 in practice)
//!     12  sigfigs          (always 0)
//!     16  snaplen
//!     20  link type        lower 16 bits; FCS length in 16-bit words in bits 28..31 when bit 26 is set
//! ```

pub use tracekit_core::ByteOrder;
use tracekit_core::{Error, LinkType, TsResolution};

/// Size of the file header.
pub const FILE_HEADER_LEN: usize = 24;

mod field {
    use std::ops::Range;
    pub const MAGIC: Range<usize> = 0..4;
    pub const VERSION_MAJOR: Range<usize> = 4..6;
    pub const VERSION_MINOR: Range<usize> = 6..8;
    pub const THISZONE: Range<usize> = 8..12;
    pub const SIGFIGS: Range<usize> = 12..16;
    pub const SNAPLEN: Range<usize> = 16..20;
    pub const LINKTYPE: Range<usize> = 20..24;
}

const MAGIC_MICRO: u32 = 0xa1b2_c3d4;
const MAGIC_NANO: u32 = 0xa1b2_3c4d;
const MAGIC_MODIFIED: u32 = 0xa1b2_cd34;
const FCS_PRESENT: u32 = 0x0400_0000;

/// A parsed pcap file header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileHeader {
    /// Byte order the file was written in.
    pub byte_order: ByteOrder,
    /// Time stamp resolution: µs or ns.
    pub resolution: TsResolution,
    /// Whether this is Alexey Kuznetzov's "modified" format (24-byte record headers with
    /// interface index, protocol and packet type).
    pub modified: bool,
    /// Format version (2.4 in practice).
    pub version: (u16, u16),
    /// GMT offset field (ignored by every reader, kept for completeness).
    pub thiszone: i32,
    /// Time stamp accuracy field (always 0).
    pub sigfigs: u32,
    /// Maximum captured length the writer promised.
    pub snaplen: u32,
    /// Link-layer type of every packet.
    pub link_type: LinkType,
    /// Length of the frame check sequence at the end of each packet in bytes, when the
    /// file says (FCS bits of the link-type field).
    pub fcs_len: Option<u32>,
}

impl FileHeader {
    /// Whether `head` starts with a pcap magic number (either byte order, µs, ns or the
    /// modified format).
    pub fn is_pcap(head: &[u8]) -> bool {
        let Some(magic) = head.get(field::MAGIC) else {
            return false;
        };
        let m = [magic[0], magic[1], magic[2], magic[3]];
        [u32::from_le_bytes(m), u32::from_be_bytes(m)]
            .iter()
            .any(|v| matches!(*v, MAGIC_MICRO | MAGIC_NANO | MAGIC_MODIFIED))
    }

    /// Parses the header from the first 24 bytes of a file.
    pub fn parse(b: &[u8]) -> Result<FileHeader, Error> {
        if b.len() < FILE_HEADER_LEN {
            return Err(Error::truncated(
                "pcap file header",
                FILE_HEADER_LEN as u64,
                b.len() as u64,
            )
            .with_offset(0));
        }
        let magic = [b[0], b[1], b[2], b[3]];
        let (byte_order, value) = if matches!(
            u32::from_le_bytes(magic),
            MAGIC_MICRO | MAGIC_NANO | MAGIC_MODIFIED
        ) {
            (ByteOrder::Little, u32::from_le_bytes(magic))
        } else if matches!(
            u32::from_be_bytes(magic),
            MAGIC_MICRO | MAGIC_NANO | MAGIC_MODIFIED
        ) {
            (ByteOrder::Big, u32::from_be_bytes(magic))
        } else {
            return Err(Error::unknown_format(format!(
                "not a pcap file: magic number {:02x}{:02x}{:02x}{:02x}",
                b[0], b[1], b[2], b[3]
            ))
            .with_offset(0));
        };
        let resolution = if value == MAGIC_NANO {
            TsResolution::NANO
        } else {
            TsResolution::MICRO
        };
        let u16_at = |r: std::ops::Range<usize>| byte_order.u16(&b[r]);
        let u32_at = |r: std::ops::Range<usize>| byte_order.u32(&b[r]);
        let version = (u16_at(field::VERSION_MAJOR), u16_at(field::VERSION_MINOR));
        if version.0 != 2 {
            return Err(Error::unsupported(format!(
                "pcap version {}.{} (only 2.x exists)",
                version.0, version.1
            ))
            .with_offset(4));
        }
        let link_field = u32_at(field::LINKTYPE);
        let fcs_len = (link_field & FCS_PRESENT != 0).then_some(((link_field >> 28) & 0xF) * 2);
        Ok(FileHeader {
            byte_order,
            resolution,
            modified: value == MAGIC_MODIFIED,
            version,
            thiszone: u32_at(field::THISZONE) as i32,
            sigfigs: u32_at(field::SIGFIGS),
            snaplen: u32_at(field::SNAPLEN),
            link_type: LinkType(link_field & 0xFFFF),
            fcs_len,
        })
    }

    /// Size of each record header: 16, or 24 in the modified format.
    pub fn record_header_len(&self) -> usize {
        if self.modified { 24 } else { 16 }
    }

    /// The 24 header bytes.
    pub fn to_bytes(&self) -> [u8; FILE_HEADER_LEN] {
        let magic = if self.modified {
            MAGIC_MODIFIED
        } else if self.resolution == TsResolution::NANO {
            MAGIC_NANO
        } else {
            MAGIC_MICRO
        };
        let mut link_field = self.link_type.0 & 0xFFFF;
        if let Some(fcs) = self.fcs_len {
            link_field |= FCS_PRESENT | (((fcs / 2) & 0xF) << 28);
        }
        let o = self.byte_order;
        let mut out = [0u8; FILE_HEADER_LEN];
        out[field::MAGIC].copy_from_slice(&o.put_u32(magic));
        out[field::VERSION_MAJOR].copy_from_slice(&o.put_u16(self.version.0));
        out[field::VERSION_MINOR].copy_from_slice(&o.put_u16(self.version.1));
        out[field::THISZONE].copy_from_slice(&o.put_u32(self.thiszone as u32));
        out[field::SIGFIGS].copy_from_slice(&o.put_u32(self.sigfigs));
        out[field::SNAPLEN].copy_from_slice(&o.put_u32(self.snaplen));
        out[field::LINKTYPE].copy_from_slice(&o.put_u32(link_field));
        out
    }

    /// Describes the variant, e.g. `pcap (µs, little-endian)`.
    pub fn describe(&self) -> String {
        format!(
            "pcap{} ({}, {}-endian)",
            if self.modified {
                " (Kuznetzov modified)"
            } else {
                ""
            },
            self.resolution,
            self.byte_order.name()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_all_variants() {
        for byte_order in [ByteOrder::Little, ByteOrder::Big] {
            for resolution in [TsResolution::MICRO, TsResolution::NANO] {
                let h = FileHeader {
                    byte_order,
                    resolution,
                    modified: false,
                    version: (2, 4),
                    thiszone: 0,
                    sigfigs: 0,
                    snaplen: 65535,
                    link_type: LinkType::LINUX_SLL2,
                    fcs_len: Some(4),
                };
                let bytes = h.to_bytes();
                assert!(FileHeader::is_pcap(&bytes));
                assert_eq!(FileHeader::parse(&bytes).unwrap(), h);
            }
        }
    }

    #[test]
    fn rejects_other_magic() {
        let mut b = [0u8; 24];
        b[..4].copy_from_slice(&[0x0a, 0x0d, 0x0d, 0x0a]);
        assert!(!FileHeader::is_pcap(&b));
        let e = FileHeader::parse(&b).unwrap_err().to_string();
        assert!(e.contains("magic number 0a0d0d0a"), "{e}");
        assert!(FileHeader::parse(&b[..20]).is_err());
    }
}
