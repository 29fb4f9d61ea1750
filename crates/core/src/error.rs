//! The one error type of tracekit, with the context a user needs to find the problem:
//! the file, the byte offset, the packet number, and the reason.

use std::borrow::Cow;
use std::fmt;
use std::io;
use std::path::Path;
use std::sync::Arc;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An operating-system I/O error.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The data ends inside a structure (`what`): `needed` bytes were required, only
    /// `available` were there.
    #[error("file ends inside {what}: {needed} bytes needed, {available} present")]
    Truncated {
        /// The structure that was cut (e.g. "record header", "packet data").
        what: &'static str,
        /// Bytes the structure needs.
        needed: u64,
        /// Bytes that were present.
        available: u64,
    },
    /// The data is not what the format allows.
    #[error("{0}")]
    Malformed(Cow<'static, str>),
    /// The input is not a capture format tracekit knows.
    #[error("{0}")]
    UnknownFormat(Cow<'static, str>),
    /// The input is valid but uses something this build does not support.
    #[error("{0}")]
    Unsupported(Cow<'static, str>),
    /// The caller asked for something impossible or contradictory.
    #[error("{0}")]
    InvalidArgument(Cow<'static, str>),
    /// Writing would lose information the caller did not agree to lose.
    #[error("{0}")]
    WouldLose(Cow<'static, str>),
}

#[derive(Debug)]
struct Inner {
    kind: ErrorKind,
    path: Option<Arc<Path>>,
    offset: Option<u64>,
    /// The offset counts bytes of decompressed data (the input was compressed).
    decompressed: bool,
    packet: Option<u64>,
}

/// A tracekit error: an [`ErrorKind`] plus where it happened.
///
/// `Display` prints `FILE: packet N at byte offset O: reason`, leaving out what is not
/// known. The packet number is 1-based, as Wireshark numbers frames.
///
/// ```
/// use tracekit_core::Error;
/// let e = Error::malformed("caplen 70000 exceeds the limit")
///     .with_path("x.pcap")
///     .with_offset(4096)
///     .with_packet(50);
/// assert_eq!(e.to_string(), "x.pcap: packet 50 at byte offset 4096: caplen 70000 exceeds the limit");
/// assert_eq!(e.offset(), Some(4096));
/// ```
pub struct Error(Box<Inner>);

impl Error {
    /// An error of `kind` with no context yet.
    pub fn new(kind: ErrorKind) -> Error {
        Error(Box::new(Inner {
            kind,
            path: None,
            offset: None,
            decompressed: false,
            packet: None,
        }))
    }

    /// Malformed input.
    pub fn malformed(reason: impl Into<Cow<'static, str>>) -> Error {
        Error::new(ErrorKind::Malformed(reason.into()))
    }

    /// Input cut inside a structure.
    pub fn truncated(what: &'static str, needed: u64, available: u64) -> Error {
        Error::new(ErrorKind::Truncated {
            what,
            needed,
            available,
        })
    }

    /// Unsupported feature or variant.
    pub fn unsupported(reason: impl Into<Cow<'static, str>>) -> Error {
        Error::new(ErrorKind::Unsupported(reason.into()))
    }

    /// Unknown format.
    pub fn unknown_format(reason: impl Into<Cow<'static, str>>) -> Error {
        Error::new(ErrorKind::UnknownFormat(reason.into()))
    }

    /// Bad argument.
    pub fn invalid_argument(reason: impl Into<Cow<'static, str>>) -> Error {
        Error::new(ErrorKind::InvalidArgument(reason.into()))
    }

    /// Information would be lost.
    pub fn would_lose(reason: impl Into<Cow<'static, str>>) -> Error {
        Error::new(ErrorKind::WouldLose(reason.into()))
    }

    /// Adds the file path (kept if one is already set).
    pub fn with_path(mut self, path: impl AsRef<Path>) -> Error {
        if self.0.path.is_none() {
            self.0.path = Some(Arc::from(path.as_ref()));
        }
        self
    }

    /// Adds a shared file path (kept if one is already set); cheap for readers that keep
    /// their path in an `Arc`.
    pub fn with_shared_path(mut self, path: Option<&Arc<Path>>) -> Error {
        if self.0.path.is_none() {
            self.0.path = path.cloned();
        }
        self
    }

    /// Adds the byte offset (kept if one is already set).
    pub fn with_offset(mut self, offset: u64) -> Error {
        if self.0.offset.is_none() {
            self.0.offset = Some(offset);
        }
        self
    }

    /// Says that the offset counts bytes of the decompressed data (the input was
    /// compressed); `Display` then prints "decompressed byte offset".
    ///
    /// ```
    /// use tracekit_core::Error;
    /// let e = Error::malformed("bad record").with_offset(4096).in_decompressed_data();
    /// assert_eq!(e.to_string(), "decompressed byte offset 4096: bad record");
    /// ```
    pub fn in_decompressed_data(mut self) -> Error {
        self.0.decompressed = true;
        self
    }

    /// Adds the 1-based packet number (kept if one is already set).
    pub fn with_packet(mut self, packet: u64) -> Error {
        if self.0.packet.is_none() {
            self.0.packet = Some(packet);
        }
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.0.kind
    }

    /// Whether this is the operating system's "not found": a missing file, or a
    /// network interface that does not exist.
    ///
    /// ```
    /// use tracekit_core::Error;
    /// let e = Error::from(std::io::Error::from(std::io::ErrorKind::NotFound));
    /// assert!(e.is_not_found());
    /// assert!(!Error::invalid_argument("no").is_not_found());
    /// ```
    pub fn is_not_found(&self) -> bool {
        matches!(&self.0.kind, ErrorKind::Io(e) if e.kind() == io::ErrorKind::NotFound)
    }

    /// The file, if known.
    pub fn path(&self) -> Option<&Path> {
        self.0.path.as_deref()
    }

    /// The byte offset in the (decompressed) input, if known.
    pub fn offset(&self) -> Option<u64> {
        self.0.offset
    }

    /// Whether [`Error::offset`] counts bytes of decompressed data.
    pub fn offset_is_decompressed(&self) -> bool {
        self.0.decompressed
    }

    /// The 1-based packet (record) number, if known.
    pub fn packet(&self) -> Option<u64> {
        self.0.packet
    }

    /// Whether this error is a closed pipe on output (`tracekit ... | head`), which
    /// command-line tools treat as a quiet end.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(&self.0.kind, ErrorKind::Io(e) if e.kind() == io::ErrorKind::BrokenPipe)
    }

    /// The operating-system error, when this is one.
    pub fn io_error(&self) -> Option<&io::Error> {
        match &self.0.kind {
            ErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error::new(ErrorKind::Io(e))
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Error {
        Error::new(kind)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = &self.0;
        let mut sep = "";
        if let Some(path) = &inner.path {
            write!(f, "{}", path.display())?;
            sep = ": ";
        }
        let offset = if inner.decompressed {
            "decompressed byte offset"
        } else {
            "byte offset"
        };
        match (inner.packet, inner.offset) {
            (Some(p), Some(o)) => write!(f, "{sep}packet {p} at {offset} {o}")?,
            (Some(p), None) => write!(f, "{sep}packet {p}")?,
            (None, Some(o)) => write!(f, "{sep}{offset} {o}")?,
            (None, None) => {}
        }
        if inner.path.is_some() || inner.packet.is_some() || inner.offset.is_some() {
            f.write_str(": ")?;
        }
        write!(f, "{}", inner.kind)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Error({self})")
    }
}

/// The message already says the I/O cause (`x.pcap: No space left on device`), so
/// `source()` does not repeat it: a chain printer shows each cause once. The I/O error
/// itself is [`Error::io_error`].
impl std::error::Error for Error {}

/// A `Result` with tracekit's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_cause_is_said_once() {
        let e = Error::from(io::Error::from_raw_os_error(28)).with_path("out.pcap");
        let text = e.to_string();
        assert!(
            text.starts_with("out.pcap: No space left on device"),
            "{text}"
        );
        assert!(std::error::Error::source(&e).is_none());
        assert_eq!(e.io_error().and_then(io::Error::raw_os_error), Some(28));
    }

    #[test]
    fn error_is_one_pointer() {
        assert_eq!(std::mem::size_of::<Error>(), std::mem::size_of::<usize>());
    }

    #[test]
    fn display_without_context() {
        let e = Error::truncated("record header", 16, 7);
        assert_eq!(
            e.to_string(),
            "file ends inside record header: 16 bytes needed, 7 present"
        );
        let e = e.with_offset(100);
        assert_eq!(
            e.to_string(),
            "byte offset 100: file ends inside record header: 16 bytes needed, 7 present"
        );
    }
}
