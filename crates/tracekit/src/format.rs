//! The capture formats tracekit knows, recognised by content or by file name.

use std::fmt;

use tracekit_core::Error;
use tracekit_erf::looks_like_erf;
use tracekit_io::Compression;
use tracekit_legacy::{LegacyKind, looks_like_tsh};
use tracekit_pcap::FileHeader;
use tracekit_pcapng::is_pcapng;

/// A trace file format (live sources are not formats: see `tracekit::open`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// Classic pcap (µs or ns, either byte order).
    Pcap,
    /// pcapng.
    Pcapng,
    /// Endace ERF.
    Erf,
    /// A legacy trace file, read only: legacy DAG (`legacyatm:`, `legacyeth:`,
    /// `legacypos:`, `legacynzix:`), NLANR TSH and FR+ (`tsh:`, `fr+:`), ATM cell
    /// headers (`atmhdr:`). Only TSH is detected by content (as `tsh`); the others have
    /// nothing that tells them apart and are named by their prefix.
    Legacy(LegacyKind),
}

impl Format {
    /// Bytes [`Format::detect`] looks at: enough for ERF detection to see two records
    /// of any length.
    pub const SNIFF_LEN: usize = tracekit_erf::DETECT_LEN;

    /// Lower-case name, as used in URIs and `--format`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Pcap => "pcap",
            Format::Pcapng => "pcapng",
            Format::Erf => "erf",
            Format::Legacy(k) => k.name(),
        }
    }

    /// Parses a format name (`pcap`, `pcapng`, `erf`, and the legacy kinds' names:
    /// `legacyatm`, `tsh`, `fr+`, `atmhdr`, ...).
    pub fn from_name(name: &str) -> Option<Format> {
        match name.to_ascii_lowercase().as_str() {
            "pcap" | "libpcap" | "tcpdump" => Some(Format::Pcap),
            "pcapng" | "ntar" => Some(Format::Pcapng),
            "erf" | "dag" => Some(Format::Erf),
            other => LegacyKind::from_name(other).map(Format::Legacy),
        }
    }

    /// Recognises the format of (decompressed) content from its first bytes; names the
    /// problem when the content is compressed or unknown.
    pub fn detect(head: &[u8]) -> Result<Format, Error> {
        if FileHeader::is_pcap(head) {
            return Ok(Format::Pcap);
        }
        if is_pcapng(head) {
            return Ok(Format::Pcapng);
        }
        match Compression::detect(head) {
            Compression::None => {}
            c => {
                return Err(Error::unsupported(format!(
                    "the decompressed content is itself {c}-compressed: nested compression is not read"
                )));
            }
        }
        if looks_like_erf(head) {
            return Ok(Format::Erf);
        }
        if looks_like_tsh(head) {
            return Ok(Format::Legacy(LegacyKind::Tsh));
        }
        if head.is_empty() {
            return Err(Error::unknown_format("the input is empty"));
        }
        let shown: Vec<String> = head.iter().take(8).map(|b| format!("{b:02x}")).collect();
        Err(Error::unknown_format(format!(
            "not a capture format tracekit knows (first bytes: {})",
            shown.join(" ")
        )))
    }

    /// The format a file name asks for by its extension, after any compression
    /// extension (`x.pcap.gz` is pcap).
    pub fn from_file_name(name: &str) -> Option<Format> {
        let lower = name.to_ascii_lowercase();
        let stem = match Compression::from_file_name(&lower) {
            Compression::None => lower.as_str(),
            _ => lower.rsplit_once('.').map_or("", |(stem, _)| stem),
        };
        let ext = stem.rsplit_once('.').map(|(_, e)| e)?;
        match ext {
            "pcap" | "cap" | "dmp" => Some(Format::Pcap),
            "pcapng" | "ntar" => Some(Format::Pcapng),
            "erf" => Some(Format::Erf),
            _ => None,
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(Format::from_file_name("a/b.pcap"), Some(Format::Pcap));
        assert_eq!(Format::from_file_name("x.pcapng.zst"), Some(Format::Pcapng));
        assert_eq!(Format::from_file_name("x.PCAP.gz"), Some(Format::Pcap));
        assert_eq!(Format::from_file_name("x.erf"), Some(Format::Erf));
        assert_eq!(Format::from_file_name("x.txt"), None);
        assert_eq!(Format::from_file_name("noext"), None);
    }

    #[test]
    fn content() {
        assert_eq!(
            Format::detect(&[0xd4, 0xc3, 0xb2, 0xa1]).unwrap(),
            Format::Pcap
        );
        assert_eq!(
            Format::detect(&[0xa1, 0xb2, 0x3c, 0x4d]).unwrap(),
            Format::Pcap
        );
        let shb = [0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a];
        assert_eq!(Format::detect(&shb).unwrap(), Format::Pcapng);
        assert!(Format::detect(&shb[..8]).is_err());
        let gz = Format::detect(&[0x1f, 0x8b, 8, 0]).unwrap_err().to_string();
        assert!(gz.contains("gzip-compressed"), "{gz}");
        let mut tsh = Vec::new();
        for usecs in [0u32, 999_999] {
            tsh.extend_from_slice(&1_000_000_000u32.to_be_bytes());
            tsh.extend_from_slice(&usecs.to_be_bytes());
            tsh.extend_from_slice(&[0x45, 0, 0, 40]);
            tsh.extend_from_slice(&[0; 32]);
        }
        assert_eq!(
            Format::detect(&tsh).unwrap(),
            Format::Legacy(LegacyKind::Tsh)
        );
        tsh[44 + 8] = 0x60;
        assert!(Format::detect(&tsh).is_err());
        assert_eq!(
            Format::from_name("FR+"),
            Some(Format::Legacy(LegacyKind::FrPlus))
        );
        let junk = Format::detect(b"hello world").unwrap_err().to_string();
        assert!(junk.contains("68 65 6c 6c"), "{junk}");
    }
}
