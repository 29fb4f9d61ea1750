//! Recognising compressed input by its first bytes.

use std::fmt;

/// A compression format, recognised by magic number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    /// Not compressed.
    None,
    /// gzip (RFC 1952), possibly several members.
    Gzip,
    /// bzip2, possibly several streams.
    Bzip2,
    /// Zstandard frames (skippable frames included).
    Zstd,
    /// xz.
    Xz,
    /// LZ4 frame format.
    Lz4,
}

impl Compression {
    /// Bytes needed by [`Compression::detect`] to decide.
    pub const MAGIC_LEN: usize = 6;

    /// Recognises the compression of data starting with `head` (at least
    /// [`Compression::MAGIC_LEN`] bytes should be given when the input has them).
    pub fn detect(head: &[u8]) -> Compression {
        match head {
            [0x1f, 0x8b, 0x08, ..] => Compression::Gzip,
            [b'B', b'Z', b'h', b'1'..=b'9', ..] => Compression::Bzip2,
            [0x28, 0xb5, 0x2f, 0xfd, ..] => Compression::Zstd,
            // zstd skippable frames: 0x184D2A50..=0x184D2A5F, little-endian
            [0x50..=0x5f, 0x2a, 0x4d, 0x18, ..] => Compression::Zstd,
            [0xfd, b'7', b'z', b'X', b'Z', 0x00, ..] => Compression::Xz,
            [0x04, 0x22, 0x4d, 0x18, ..] => Compression::Lz4,
            _ => Compression::None,
        }
    }

    /// Lower-case name (`none`, `gzip`, `bzip2`, `zstd`, `xz`, `lz4`).
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Bzip2 => "bzip2",
            Compression::Zstd => "zstd",
            Compression::Xz => "xz",
            Compression::Lz4 => "lz4",
        }
    }

    /// Parses a codec name (`none`, `gzip`/`gz`, `bzip2`/`bz2`, `zstd`/`zst`, `xz`, `lz4`).
    pub fn from_name(name: &str) -> Option<Compression> {
        match name.to_ascii_lowercase().as_str() {
            "none" | "no" => Some(Compression::None),
            "gzip" | "gz" => Some(Compression::Gzip),
            "bzip2" | "bz2" => Some(Compression::Bzip2),
            "zstd" | "zst" => Some(Compression::Zstd),
            "xz" => Some(Compression::Xz),
            "lz4" => Some(Compression::Lz4),
            _ => None,
        }
    }

    /// The codec a file name asks for by its last extension (`.gz`, `.bz2`, `.zst`,
    /// `.xz`, `.lz4`), or `None` (no compression) otherwise.
    pub fn from_file_name(name: &str) -> Compression {
        let lower = name.to_ascii_lowercase();
        let ext = lower.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
        match ext {
            "gz" | "gzip" => Compression::Gzip,
            "bz2" => Compression::Bzip2,
            "zst" | "zstd" => Compression::Zstd,
            "xz" => Compression::Xz,
            "lz4" => Compression::Lz4,
            _ => Compression::None,
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magics() {
        assert_eq!(Compression::detect(&[0x1f, 0x8b, 8, 0]), Compression::Gzip);
        assert_eq!(Compression::detect(b"BZh91AY"), Compression::Bzip2);
        assert_eq!(
            Compression::detect(&[0x28, 0xb5, 0x2f, 0xfd]),
            Compression::Zstd
        );
        assert_eq!(
            Compression::detect(&[0x5a, 0x2a, 0x4d, 0x18]),
            Compression::Zstd
        );
        assert_eq!(Compression::detect(b"\xfd7zXZ\x00"), Compression::Xz);
        assert_eq!(
            Compression::detect(&[4, 0x22, 0x4d, 0x18]),
            Compression::Lz4
        );
        // pcap magic is not compression
        assert_eq!(
            Compression::detect(&[0xd4, 0xc3, 0xb2, 0xa1]),
            Compression::None
        );
        assert_eq!(Compression::detect(b"BZ"), Compression::None);
    }

    #[test]
    fn names() {
        assert_eq!(Compression::from_file_name("x.pcap.gz"), Compression::Gzip);
        assert_eq!(
            Compression::from_file_name("x.pcapng.ZST"),
            Compression::Zstd
        );
        assert_eq!(Compression::from_file_name("x.pcap"), Compression::None);
    }
}
