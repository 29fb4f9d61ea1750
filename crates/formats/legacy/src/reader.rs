//! The lending reader: records straight from the input window, except the two kinds
//! whose packet is not one run of the record's bytes.

use std::io::Read;
use std::path::Path;

use tracekit_core::{CaptureSource, Error, Packet, Stats};
use tracekit_io::{Input, ReadMode, Reader};

use crate::LegacyKind;
use crate::format::{ERF_HEADER, LegacyFormat, NZIX_CAPTURED, atmhdr_as_erf, nzix_join};

/// Reads a legacy trace file, lending each packet until the next call.
///
/// Most kinds lend the packet straight from the input buffer. Two cannot: an NZIX
/// record holds its frame in two parts around 2 bytes of padding, and an ATM cell
/// header record becomes an ERF record; those are put together in a small buffer the
/// reader owns (54 and 20 bytes, no allocation per packet).
pub struct LegacyReader {
    inner: Reader<LegacyFormat>,
    /// The NZIX frame or the ERF record of the current packet.
    joined: [u8; NZIX_CAPTURED],
    /// Bytes of `joined` in use.
    joined_len: usize,
}

impl LegacyReader {
    /// Opens a file of the given kind, read the default way ([`ReadMode::Auto`]).
    pub fn open(path: impl AsRef<Path>, kind: LegacyKind) -> Result<LegacyReader, Error> {
        LegacyReader::from_input_with(Input::open(path, ReadMode::Auto)?, kind)
    }

    /// Reads the given kind from any byte stream (stdin, a pipe). An NZIX stream has no
    /// file name, so no start time: its time stamps count from the Unix epoch.
    pub fn from_reader(
        reader: impl Read + Send + 'static,
        kind: LegacyKind,
    ) -> Result<LegacyReader, Error> {
        LegacyReader::from_input_with(Input::from_reader(reader), kind)
    }

    /// Reads the given kind from a prepared [`Input`] positioned at the first record.
    pub fn from_input_with(input: Input, kind: LegacyKind) -> Result<LegacyReader, Error> {
        Ok(LegacyReader {
            inner: Reader::from_input_with(input, kind)?,
            joined: [0; NZIX_CAPTURED],
            joined_len: 0,
        })
    }

    /// The format's state (kind, records read, notes).
    pub fn format(&self) -> &LegacyFormat {
        self.inner.format()
    }

    /// The underlying input (size hint, mapping state).
    pub fn input(&self) -> &Input {
        self.inner.input()
    }

    /// The underlying input, to share its buffers with other threads
    /// ([`Input::share_windows`]); `None` for the kinds whose packets are put together in
    /// the reader's own buffer (NZIX, ATM cell headers), which sharing cannot reach.
    pub fn input_mut(&mut self) -> Option<&mut Input> {
        if self.joins() {
            None
        } else {
            Some(self.inner.input_mut())
        }
    }

    /// Byte offset of the next record (in the decompressed stream).
    pub fn position(&self) -> u64 {
        self.inner.position()
    }

    /// Size of the input when known (regular files), for progress display.
    pub fn size_hint(&self) -> Option<u64> {
        self.inner.size_hint()
    }

    /// Packets read so far.
    pub fn packets_read(&self) -> u64 {
        self.inner.packets_read()
    }

    /// Whether packets are put together in `joined` rather than lent from the input.
    fn joins(&self) -> bool {
        matches!(
            self.inner.format().kind(),
            LegacyKind::Nzix | LegacyKind::AtmHeader
        )
    }

    /// The next packet, borrowed until the next call; `Ok(None)` at the end. After an
    /// error (a cut record, a record that cannot be of this kind), `Ok(None)`.
    #[inline]
    pub fn next_packet(&mut self) -> Result<Option<Packet<'_>>, Error> {
        if !self.joins() {
            return self.inner.next_packet();
        }
        let kind = self.inner.format().kind();
        let meta = {
            let Some(raw) = self.inner.next_packet()? else {
                return Ok(None);
            };
            let meta = *raw.meta();
            self.joined_len = match kind {
                LegacyKind::Nzix => nzix_join(raw.data(), meta.wire_len, &mut self.joined),
                _ => {
                    atmhdr_as_erf(raw.data(), &mut self.joined);
                    ERF_HEADER + 4
                }
            };
            meta
        };
        Ok(Some(Packet::new(&self.joined[..self.joined_len], meta)))
    }

    /// The next packet for which `keep` says yes (a filter), borrowed until the next call.
    pub fn next_matching(
        &mut self,
        keep: &mut dyn FnMut(&Packet<'_>) -> Result<bool, Error>,
    ) -> Result<Option<Packet<'_>>, Error> {
        if !self.joins() {
            return self.inner.next_matching(keep);
        }
        loop {
            let kept = match self.next_packet()? {
                Some(p) => keep(&p)?,
                None => return Ok(None),
            };
            if kept {
                return Ok(self.current_packet());
            }
        }
    }

    /// The packet the last `next_packet` (or `next_matching`) call returned, lent again
    /// without reading further; `None` before the first packet and after the end or an
    /// error.
    #[inline]
    pub fn current_packet(&self) -> Option<Packet<'_>> {
        let p = self.inner.current_packet()?;
        if !self.joins() {
            return Some(p);
        }
        Some(Packet::new(&self.joined[..self.joined_len], *p.meta()))
    }
}

impl std::ops::Deref for LegacyReader {
    type Target = LegacyFormat;

    fn deref(&self) -> &LegacyFormat {
        self.inner.format()
    }
}

impl CaptureSource for LegacyReader {
    #[inline]
    fn next_packet(&mut self) -> Result<Option<Packet<'_>>, Error> {
        LegacyReader::next_packet(self)
    }

    fn stats(&self) -> Stats {
        self.inner.stats()
    }
}
