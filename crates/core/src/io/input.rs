//! The byte input every file-format reader parses from.
//!
//! An [`Input`] is a window of bytes that a parser walks in place: it asks for at least
//! `n` bytes with [`Input::fill`], looks at them with [`Input::available`], and moves on
//! with [`Input::consume`]. Behind it is either a guarded memory mapping of a regular file
//! (no copy at all) or large-block `read()` calls into one reused buffer (stdin, pipes,
//! character devices, and regular files when mapping is not wanted). Only a record that
//! straddles two read blocks is moved, once, to the front of the buffer.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;

use super::mmap::GuardedMap;
use crate::Error;

/// How a regular file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadMode {
    /// The measured default for regular files (see [`ReadMode::AUTO_USES_MMAP`]); `read()`
    /// for everything else.
    #[default]
    Auto,
    /// Map the file (falls back to `read()` when it cannot be mapped).
    Mmap,
    /// Large-block `read()` calls.
    Read,
}

impl ReadMode {
    /// What `Auto` picks for regular files: `read()`. Measured by the `t1_count` criterion
    /// benchmark in `benches/` on page-cached files (see the README): on full-size packets
    /// `read()` in L2-sized blocks beats the mapping by about 35 % (mapping page-cache
    /// pages costs more than copying them); on 96-byte records the mapping wins by about
    /// 10 %. Real traces are mostly the first kind.
    pub const AUTO_USES_MMAP: bool = false;
}

/// Size of one `read()` block, and of the window verified at a time in a mapping.
/// 256 KiB keeps the block in L2 between the kernel's copy and the parser's walk; 128 KiB
/// to 512 KiB measured the same, 1 MiB 8 % slower, 2 MiB 28 % slower.
pub const BLOCK_SIZE: usize = 1 << 18;

enum Backing {
    Mapped(GuardedMap),
    Stream(Box<dyn Read + Send>),
}

/// A byte input that a parser walks in place. See the module documentation.
pub struct Input {
    backing: Backing,
    /// Read buffer (stream mode only).
    buf: Vec<u8>,
    /// Current position in the window.
    pos: usize,
    /// End of the valid window: bytes read into `buf`, or verified bytes of the mapping.
    end: usize,
    /// Absolute offset of window index 0.
    base: u64,
    eof: bool,
    path: Option<Arc<Path>>,
    size_hint: Option<u64>,
}

impl Input {
    /// Opens a file. Regular files are mapped or read per `mode`; other files (FIFOs,
    /// character devices) are always read.
    pub fn open(path: impl AsRef<Path>, mode: ReadMode) -> Result<Input, Error> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|e| Error::from(e).with_path(path))?;
        let meta = file
            .metadata()
            .map_err(|e| Error::from(e).with_path(path))?;
        let regular = meta.is_file();
        let want_map = match mode {
            ReadMode::Auto => ReadMode::AUTO_USES_MMAP,
            ReadMode::Mmap => true,
            ReadMode::Read => false,
        };
        let shared: Arc<Path> = Arc::from(path);
        if regular
            && want_map
            && let Some(map) = file.try_clone().ok().and_then(GuardedMap::open)
        {
            let mut input = Input::with_backing(Backing::Mapped(map), Some(meta.len()));
            input.path = Some(shared);
            return Ok(input);
        }
        let mut input = Input::with_backing(
            Backing::Stream(Box::new(file)),
            regular.then_some(meta.len()),
        );
        input.path = Some(shared);
        Ok(input)
    }

    /// Reads from any byte stream (stdin, a pipe, a socket, a decompressor).
    pub fn from_reader(reader: impl Read + Send + 'static) -> Input {
        Input::with_backing(Backing::Stream(Box::new(reader)), None)
    }

    /// Standard input.
    pub fn stdin() -> Input {
        let mut input = Input::from_reader(io::stdin());
        input.path = Some(Arc::from(Path::new("<stdin>")));
        input
    }

    fn with_backing(backing: Backing, size_hint: Option<u64>) -> Input {
        Input {
            backing,
            buf: Vec::new(),
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
            path: None,
            size_hint,
        }
    }

    /// Names the input in error messages (e.g. the path a stream came from).
    pub fn set_path(&mut self, path: impl AsRef<Path>) {
        self.path = Some(Arc::from(path.as_ref()));
    }

    /// The path used in error messages, if any.
    pub fn path(&self) -> Option<&Arc<Path>> {
        self.path.as_ref()
    }

    /// Whether the input is a memory mapping.
    pub fn is_mapped(&self) -> bool {
        matches!(self.backing, Backing::Mapped(_))
    }

    /// Total size when known (regular files), for progress display.
    pub fn size_hint(&self) -> Option<u64> {
        self.size_hint
    }

    /// Absolute offset of the current position.
    #[inline]
    pub fn position(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// The bytes available at the current position without further I/O.
    #[inline(always)]
    pub fn available(&self) -> &[u8] {
        match &self.backing {
            Backing::Mapped(map) => &map.verified()[self.pos..self.end],
            Backing::Stream(_) => &self.buf[self.pos..self.end],
        }
    }

    /// The window from index `start` (as returned by [`Input::window_pos`]) for `len`
    /// bytes. Used to hand out a record after consuming it.
    #[inline(always)]
    pub fn window(&self, start: usize, len: usize) -> &[u8] {
        match &self.backing {
            Backing::Mapped(map) => &map.verified()[start..start + len],
            Backing::Stream(_) => &self.buf[start..start + len],
        }
    }

    /// Index of the current position in the window (valid until the next `fill`).
    #[inline]
    pub fn window_pos(&self) -> usize {
        self.pos
    }

    /// Moves the position forward by `n` bytes, which must be available.
    #[inline]
    pub fn consume(&mut self, n: usize) {
        debug_assert!(self.pos + n <= self.end);
        self.pos += n;
    }

    /// Makes at least `n` bytes available at the current position if the input has them;
    /// returns how many are available (fewer than `n` only at the end of the input).
    #[inline]
    pub fn fill(&mut self, n: usize) -> Result<usize, Error> {
        let have = self.end - self.pos;
        if have >= n || self.eof {
            return Ok(have);
        }
        self.fill_slow(n)
    }

    #[cold]
    fn fill_slow(&mut self, n: usize) -> Result<usize, Error> {
        match &mut self.backing {
            Backing::Mapped(map) => {
                let want = self.pos.saturating_add(n.max(BLOCK_SIZE));
                let verified = map.verify(want);
                // After the file shrank, nothing past its new end is parsed (those pages
                // read as zeros), but the window never ends before the current position.
                let limit = map.usable().max(self.pos);
                self.end = verified.min(limit);
                if map.fully_verified() || (map.shrank_from().is_some() && self.end == limit) {
                    self.eof = true;
                }
            }
            Backing::Stream(reader) => {
                // Move the unread tail to the front, then read large blocks behind it.
                if self.pos > 0 {
                    self.buf.copy_within(self.pos..self.end, 0);
                    self.base += self.pos as u64;
                    self.end -= self.pos;
                    self.pos = 0;
                }
                let want_len = n.max(BLOCK_SIZE);
                if self.buf.len() < want_len {
                    self.buf.resize(want_len, 0);
                }
                while self.end < n {
                    match reader.read(&mut self.buf[self.end..]) {
                        Ok(0) => {
                            self.eof = true;
                            break;
                        }
                        Ok(k) => self.end += k,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => {
                            return Err(Error::from(e)
                                .with_shared_path(self.path.as_ref())
                                .with_offset(self.base + self.end as u64));
                        }
                    }
                }
            }
        }
        Ok(self.end - self.pos)
    }

    /// The error for a structure (`what`) of `needed` bytes that the input ends inside,
    /// at the current position. Says so when the file shrank while it was mapped.
    pub fn cut_error(&self, what: &'static str, needed: u64) -> Error {
        let available = (self.end - self.pos) as u64;
        let err = match &self.backing {
            Backing::Mapped(map) if map.shrank_from().is_some() => Error::malformed(format!(
                "file ends inside {what} ({needed} bytes needed, {available} present): \
                 the file shrank from {} to {} bytes while it was being read",
                map.shrank_from().unwrap_or_default(),
                self.base + self.end as u64
            )),
            _ => Error::truncated(what, needed, available),
        };
        err.with_shared_path(self.path.as_ref())
            .with_offset(self.position())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn exercise(mut input: Input, data: &[u8]) {
        // Walk in odd-sized steps, asking for more than one block at times.
        let mut got = Vec::new();
        let steps = [1usize, 7, 4096, BLOCK_SIZE + 3, 13];
        let mut i = 0;
        loop {
            let step = steps[i % steps.len()];
            i += 1;
            let have = input.fill(step).unwrap();
            if have == 0 {
                break;
            }
            let take = have.min(step);
            got.extend_from_slice(&input.available()[..take]);
            input.consume(take);
        }
        assert_eq!(got.len(), data.len());
        assert!(got == data);
        assert_eq!(input.position(), data.len() as u64);
    }

    fn sample(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 31 % 251) as u8).collect()
    }

    #[test]
    fn stream_and_map_give_the_same_bytes() {
        let data = sample(3 * BLOCK_SIZE + 12345);
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&data).unwrap();
        f.flush().unwrap();
        let mapped = Input::open(f.path(), ReadMode::Mmap).unwrap();
        assert!(mapped.is_mapped());
        exercise(mapped, &data);
        let read = Input::open(f.path(), ReadMode::Read).unwrap();
        assert!(!read.is_mapped());
        exercise(read, &data);
        exercise(Input::from_reader(io::Cursor::new(data.clone())), &data);
    }

    #[test]
    fn shrinking_below_the_read_position_is_reported_not_fatal() {
        let data = sample(8 * BLOCK_SIZE);
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&data).unwrap();
        f.flush().unwrap();
        let mut input = Input::open(f.path(), ReadMode::Mmap).unwrap();
        // Read well into the file, then cut it to less than what was read.
        let mut read = 0;
        while read < 3 * BLOCK_SIZE {
            let have = input.fill(4096).unwrap().min(4096);
            input.consume(have);
            read += have;
        }
        f.as_file().set_len(BLOCK_SIZE as u64).unwrap();
        // The already verified window may still be handed out; past it, nothing more.
        let mut more = 0;
        loop {
            let have = input.fill(4096).unwrap();
            if have == 0 {
                break;
            }
            let take = have.min(4096);
            input.consume(take);
            more += take;
            assert!(more <= 8 * BLOCK_SIZE);
        }
        assert!(
            read + more < 8 * BLOCK_SIZE,
            "reading stopped at the shrink"
        );
        let err = input.cut_error("record header", 16).to_string();
        assert!(err.contains("shrank from"), "{err}");
    }

    #[test]
    fn any_step_sizes_across_block_boundaries() {
        use proptest::prelude::*;
        use proptest::test_runner::{Config, TestRunner};
        let sizes = [
            0,
            1,
            BLOCK_SIZE - 1,
            BLOCK_SIZE,
            BLOCK_SIZE + 1,
            3 * BLOCK_SIZE + 17,
        ];
        for size in sizes {
            let data = sample(size);
            let mut f = tempfile::NamedTempFile::new().unwrap();
            f.write_all(&data).unwrap();
            f.flush().unwrap();
            for mode in [ReadMode::Read, ReadMode::Mmap] {
                let mut runner = TestRunner::new(Config::with_cases(16));
                runner
                    .run(
                        &prop::collection::vec(1usize..(2 * BLOCK_SIZE), 1..64),
                        |steps| {
                            let mut input = Input::open(f.path(), mode).unwrap();
                            let mut at = 0usize;
                            for step in steps.iter().cycle() {
                                let have = input.fill(*step).unwrap();
                                prop_assert_eq!(have >= *step, at + step <= size);
                                if have == 0 {
                                    break;
                                }
                                let take = have.min(*step);
                                prop_assert!(input.available()[..take] == data[at..at + take]);
                                prop_assert_eq!(input.position(), at as u64);
                                input.consume(take);
                                at += take;
                            }
                            prop_assert_eq!(at, size);
                            Ok(())
                        },
                    )
                    .unwrap();
            }
        }
    }

    #[test]
    fn empty_file_is_not_mapped() {
        let f = tempfile::NamedTempFile::new().unwrap();
        let mut input = Input::open(f.path(), ReadMode::Mmap).unwrap();
        assert_eq!(input.fill(16).unwrap(), 0);
    }

    #[test]
    fn shrinking_mapped_file_is_reported_not_fatal() {
        let data = sample(8 * BLOCK_SIZE);
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&data).unwrap();
        f.flush().unwrap();
        let mut input = Input::open(f.path(), ReadMode::Mmap).unwrap();
        assert!(input.is_mapped());
        assert!(input.fill(100).unwrap() >= 100);
        input.consume(100);
        // Another writer cuts the file to 2.5 blocks while we are reading it.
        let new_len = 2 * BLOCK_SIZE + BLOCK_SIZE / 2;
        f.as_file().set_len(new_len as u64).unwrap();
        let mut seen = 100usize;
        loop {
            let have = input.fill(4096).unwrap();
            if have == 0 {
                break;
            }
            let take = have.min(4096);
            assert!(input.available()[..take] == data[seen..seen + take]);
            input.consume(take);
            seen += take;
        }
        assert_eq!(seen, new_len);
        let err = input.cut_error("record header", 16).to_string();
        assert!(err.contains("shrank from"), "{err}");
        assert!(err.contains(&format!("to {new_len} bytes")), "{err}");
    }
}
