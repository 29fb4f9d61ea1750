//! Opening a trace: URIs, content detection, and the [`Source`] enum over every format.

use std::path::Path;

use tracekit_core::io::{Compression, Input, ReadMode};
use tracekit_core::{CaptureSource, Error, Packet, Stats, TsResolution};
use tracekit_pcap::PcapReader;

use crate::format::Format;

/// How [`open_with`] opens a trace.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenOptions {
    /// Read regular files through a mapping or `read()` (default: the measured faster).
    pub read_mode: ReadMode,
    /// Insist on a format instead of detecting it from the content.
    pub format: Option<Format>,
}

/// An open trace of any supported format. Dispatch per packet is one `match`.
///
/// ```no_run
/// use tracekit::CaptureSource;
///
/// let mut source = tracekit::open("trace.pcap")?;
/// println!("{} ({})", source.format(), source.format_description());
/// while let Some(packet) = source.next_packet()? {
///     println!("{} {} bytes", packet.ts(), packet.caplen());
/// }
/// # Ok::<(), tracekit::Error>(())
/// ```
pub struct Source {
    kind: SourceKind,
    compression: Compression,
}

enum SourceKind {
    Pcap(PcapReader),
}

/// Splits `scheme:rest` for the schemes tracekit knows; anything else is a path.
fn split_uri(uri: &str) -> (Option<&str>, &str) {
    if let Some((scheme, rest)) = uri.split_once(':') {
        let known = [
            "pcap", "pcapng", "erf", "file", "afpacket", "ring", "dag", "int", "pcapint",
        ];
        if known.contains(&scheme.to_ascii_lowercase().as_str()) && !rest.is_empty() {
            return (Some(scheme), rest);
        }
    }
    (None, uri)
}

/// Opens a trace: a path (format detected from the content, never the extension), `-`
/// for standard input, or `FORMAT:path` to insist on a format.
pub fn open(uri: &str) -> Result<Source, Error> {
    open_with(uri, &OpenOptions::default())
}

/// [`open`] with options.
pub fn open_with(uri: &str, options: &OpenOptions) -> Result<Source, Error> {
    let (scheme, rest) = split_uri(uri);
    let mut forced = options.format;
    if let Some(scheme) = scheme {
        match scheme.to_ascii_lowercase().as_str() {
            "file" => {}
            "afpacket" | "ring" | "int" | "pcapint" | "dag" => {
                return Err(Error::unsupported(format!(
                    "live capture ({scheme}:) is not part of this build of tracekit yet"
                ))
                .with_path(uri));
            }
            name => forced = Format::from_name(name),
        }
    }
    let mut input = if rest == "-" {
        Input::stdin()
    } else {
        Input::open(Path::new(rest), options.read_mode)?
    };
    input.fill(Format::SNIFF_LEN)?;
    let detected = Format::detect(input.available()).map_err(|e| {
        e.with_shared_path(input.path())
            .with_offset(input.position())
    });
    let format = match (forced, detected) {
        (Some(f), Ok(d)) if f != d => {
            return Err(Error::invalid_argument(format!(
                "asked to read {f}, but the content is {d}"
            ))
            .with_shared_path(input.path()));
        }
        (_, Ok(d)) => d,
        (_, Err(e)) => return Err(e),
    };
    let kind = match format {
        Format::Pcap => SourceKind::Pcap(PcapReader::from_input(input)?),
        other => {
            return Err(Error::unsupported(format!(
                "{other} files are recognised but not readable by this build of tracekit yet"
            ))
            .with_shared_path(input.path()));
        }
    };
    Ok(Source {
        kind,
        compression: Compression::None,
    })
}

impl Source {
    /// The trace format.
    pub fn format(&self) -> Format {
        match &self.kind {
            SourceKind::Pcap(_) => Format::Pcap,
        }
    }

    /// The format with its variant, e.g. `pcap (µs, little-endian)`.
    pub fn format_description(&self) -> String {
        match &self.kind {
            SourceKind::Pcap(r) => r.header().describe(),
        }
    }

    /// Compression of the input.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// The snap length the trace declares, if it declares one.
    pub fn snaplen(&self) -> Option<u32> {
        match &self.kind {
            SourceKind::Pcap(r) => Some(r.header().snaplen),
        }
    }

    /// The link type the trace declares for all its packets (pcap's header), if any.
    pub fn declared_link_type(&self) -> Option<tracekit_core::LinkType> {
        match &self.kind {
            SourceKind::Pcap(r) => Some(r.header().link_type),
        }
    }

    /// The finest time stamp resolution of the trace.
    pub fn ts_resolution(&self) -> TsResolution {
        match &self.kind {
            SourceKind::Pcap(r) => r.header().resolution,
        }
    }

    /// Bytes of the (decompressed) input consumed so far.
    pub fn position(&self) -> u64 {
        match &self.kind {
            SourceKind::Pcap(r) => r.position(),
        }
    }

    /// Size of the input when known (regular files), for progress display.
    pub fn size_hint(&self) -> Option<u64> {
        match &self.kind {
            SourceKind::Pcap(r) => r.input().size_hint(),
        }
    }

    /// Oddities met and accepted so far (e.g. captured length above the snap length).
    pub fn notes(&self) -> Vec<String> {
        match &self.kind {
            SourceKind::Pcap(r) => r.notes().describe(r.header().snaplen),
        }
    }

    /// The pcap reader, when the trace is pcap.
    pub fn as_pcap(&self) -> Option<&PcapReader> {
        match &self.kind {
            SourceKind::Pcap(r) => Some(r),
        }
    }
}

impl CaptureSource for Source {
    #[inline]
    fn next_packet(&mut self) -> Result<Option<Packet<'_>>, Error> {
        match &mut self.kind {
            SourceKind::Pcap(r) => r.next_packet(),
        }
    }

    fn stats(&self) -> Stats {
        match &self.kind {
            SourceKind::Pcap(r) => r.stats(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_schemes() {
        assert_eq!(split_uri("pcap:/tmp/x"), (Some("pcap"), "/tmp/x"));
        assert_eq!(split_uri("/tmp/a:b.pcap"), (None, "/tmp/a:b.pcap"));
        assert_eq!(split_uri("weird:thing"), (None, "weird:thing"));
        assert_eq!(split_uri("-"), (None, "-"));
    }
}
