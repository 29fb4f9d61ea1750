//! The byte input every file-format reader parses from.
//!
//! An [`Input`] is a window of bytes that a parser walks in place: it asks for at least
//! `n` bytes with [`Input::fill`], looks at them with [`Input::available`], and moves on
//! with [`Input::consume`]. Behind it is either a guarded memory mapping of a regular file
//! (no copy at all) or large-block `read()` calls into one reused buffer (stdin, pipes,
//! character devices, and regular files when mapping is not wanted). Only a record that
//! straddles two read blocks is moved, once, to the front of the buffer.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;

use super::Compression;
use super::decompress::{BlockStream, Fault};
use super::mmap::GuardedMap;
use super::pargzip::Compressed;
use tracekit_core::Error;

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
/// 1 MiB, the size of this machine's L2 (the kernel's copy then the parser's walk): with
/// the reader's own loop (`Reader::try_for_each`), task T1 as a whole process, the
/// minimum of 40 interleaved runs, took 19.7 ms on 257 MB of full-size packets against
/// 23.4 ms with 256 KiB blocks (pcap-parser, with 1 MiB, 23.2 ms), and 4.6 against 4.9 ms
/// on 33 MB of 96-byte records. (An earlier reader, with the `next_packet` loop,
/// measured 256 KiB best and 1 MiB 8 % slower.)
pub const BLOCK_SIZE: usize = 1 << 20;

/// Grows `buf` to `len` bytes, zeroed. An empty buffer is allocated zeroed instead of
/// being filled: large zeroed allocations come from fresh pages, so pages a short input
/// never reads into are never touched (a start-up cost of hundreds of page faults).
#[inline]
fn grow_zeroed(buf: &mut Vec<u8>, len: usize) {
    if buf.is_empty() && buf.capacity() < len {
        *buf = vec![0; len];
    } else {
        buf.resize(len, 0);
    }
}

enum Backing {
    /// Shared with writers that write its records out without a copy
    /// ([`Input::shared_mapping`]).
    Mapped(Arc<GuardedMap>),
    Stream(Box<dyn Read + Send>),
    Blocks(BlockStream),
}

/// Window buffers kept for other threads (see [`Input::share_windows`]).
#[derive(Default)]
struct Sharing {
    /// Bumped each time the window moves to another buffer.
    generation: u64,
    /// Buffers the window left, with the generation they held; their bytes stay as
    /// they were.
    retired: VecDeque<(u64, Arc<Vec<u8>>)>,
    /// Buffers handed out, reused once nobody else holds them.
    lent: VecDeque<Arc<Vec<u8>>>,
}

/// Buffers lent out beyond this many are forgotten (freed by their last holder).
const MAX_LENT: usize = 256;

impl Sharing {
    /// Keeps `old`, the buffer the window is leaving, as it is.
    fn retire(&mut self, old: Vec<u8>) {
        self.retired.push_back((self.generation, Arc::new(old)));
        self.generation += 1;
    }

    /// A buffer nobody else holds: a lent one whose holders are done, or a new one.
    fn fresh(&mut self) -> Vec<u8> {
        for _ in 0..self.lent.len() {
            let Some(buf) = self.lent.pop_front() else {
                break;
            };
            match Arc::try_unwrap(buf) {
                Ok(buf) => return buf,
                Err(still_held) => self.lent.push_back(still_held),
            }
        }
        Vec::new()
    }

    /// Remembers a buffer handed out, for reuse.
    fn lend(&mut self, buf: &Arc<Vec<u8>>) {
        if self.lent.len() >= MAX_LENT {
            self.lent.pop_front();
        }
        self.lent.push_back(buf.clone());
    }
}

/// A byte input that a parser walks in place. See the module documentation.
pub struct Input {
    backing: Backing,
    /// The current window's bytes: the read buffer (stream), a decompressed block or the
    /// stitching scratch buffer (blocks). Unused for mappings.
    buf: Vec<u8>,
    /// Blocks: whether `buf` is a decompressed block (else the scratch buffer).
    window_is_block: bool,
    /// Blocks: the spare scratch buffer while `buf` is a block.
    scratch: Vec<u8>,
    /// Blocks: the block following a stitched window, and how far it was consumed.
    pending: Option<(Vec<u8>, usize, usize)>,
    /// Blocks: the decompressor delivered its last block (or its error).
    source_done: bool,
    /// Blocks: why the decompressor stopped early (the message and the decompressed
    /// offset where it stopped). Every byte before comes out first; then `fill` reports
    /// it when nothing is left, and [`Input::cut_error`] gives it instead of a truncation.
    failure: Option<(String, u64)>,
    /// Compression of the underlying bytes.
    compression: Compression,
    /// Current position in the window.
    pos: usize,
    /// End of the valid window: bytes read into `buf`, or verified bytes of the mapping.
    end: usize,
    /// Absolute offset of window index 0.
    base: u64,
    eof: bool,
    path: Option<Arc<Path>>,
    size_hint: Option<u64>,
    /// Window buffers kept for other threads, when asked for.
    sharing: Option<Box<Sharing>>,
    /// A regular file: it can be opened again (see [`Reread`]).
    reread: Option<Reread>,
    /// A regular file opened without [`ReadMode::Read`]: a decompressor that reads it
    /// on several threads may map it.
    may_map: bool,
    /// A regular file read with `read()`: another handle on it (sharing its offset), to
    /// read ahead on other threads ([`Input::read_ahead_file`]) and to move the offset
    /// past bytes fed to the window ([`Input::feed`]).
    file: Option<File>,
}

/// The regular file an input came from (at the input's path), to open it again: a
/// parallel bzip2 reader that meets a block only a sequential decoder takes reads the
/// file again on one thread. The file must still be the same one (device, inode, length).
#[derive(Clone, Copy)]
struct Reread {
    dev: u64,
    ino: u64,
    len: u64,
}

impl Reread {
    fn open(&self, path: &Path) -> io::Result<File> {
        use std::os::unix::fs::MetadataExt;
        let file = File::open(path)?;
        let meta = file.metadata()?;
        if meta.dev() != self.dev || meta.ino() != self.ino || meta.len() != self.len {
            return Err(io::Error::other(
                "the file was replaced or changed meanwhile",
            ));
        }
        Ok(file)
    }
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
        let reread = regular.then(|| {
            use std::os::unix::fs::MetadataExt;
            Reread {
                dev: meta.dev(),
                ino: meta.ino(),
                len: meta.len(),
            }
        });
        let want_map = match mode {
            ReadMode::Auto => ReadMode::AUTO_USES_MMAP,
            ReadMode::Mmap => true,
            ReadMode::Read => false,
        };
        let may_map = regular && mode != ReadMode::Read;
        let shared: Arc<Path> = Arc::from(path);
        if regular
            && want_map
            && let Some(map) = file.try_clone().ok().and_then(GuardedMap::open)
        {
            let mut input = Input::with_backing(Backing::Mapped(Arc::new(map)), Some(meta.len()));
            input.path = Some(shared);
            input.reread = reread;
            input.may_map = may_map;
            return Ok(input);
        }
        let handle = if regular { file.try_clone().ok() } else { None };
        let mut input = Input::with_backing(
            Backing::Stream(Box::new(file)),
            regular.then_some(meta.len()),
        );
        input.path = Some(shared);
        input.reread = reread;
        input.may_map = may_map;
        input.file = handle;
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
            window_is_block: false,
            scratch: Vec::new(),
            pending: None,
            source_done: false,
            failure: None,
            compression: Compression::None,
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
            path: None,
            size_hint,
            sharing: None,
            reread: None,
            may_map: false,
            file: None,
        }
    }

    /// Decompresses `raw` (whose content is compressed with `codec`) on a thread of its
    /// own; the new input walks the decompressed bytes. Errors name `raw`'s path; their
    /// offsets count decompressed bytes and their messages give the compressed offset
    /// and the member/stream/frame. Data after the last complete one is an error
    /// ("trailing data ...") that comes after every byte before it.
    pub fn decompress(raw: Input, codec: Compression) -> Result<Input, Error> {
        Input::decompress_with(raw, codec, 0)
    }

    /// [`Input::decompress`] with a thread count for the codecs that can be decoded in
    /// parallel: gzip written by tracekit (members with a size field), multi-stream xz
    /// (tracekit's), bzip2 block by block (any file, single-stream ones too), and any
    /// other gzip file of at least [`crate::pargzip::MIN_PARALLEL_INPUT`] bytes (or of
    /// unknown size), decoded by [`crate::pargzip`]. 0 means one per core, 1 reads
    /// sequentially. zstd and lz4 (fast enough on one core) use one decoder thread.
    pub fn decompress_with(
        mut raw: Input,
        codec: Compression,
        threads: usize,
    ) -> Result<Input, Error> {
        let path = raw.path.clone();
        // The file can be read again from its start only if `raw` is the file itself,
        // from its first byte.
        let reread = raw
            .reread
            .filter(|_| raw.compression == Compression::None && raw.position() == 0);
        let threads = if threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            threads
        };
        raw.fill(1 << 12)?;
        let stream = if codec == Compression::Gzip
            && threads > 1
            && super::decompress::is_splittable_gzip(raw.available())
        {
            BlockStream::start_parallel_gzip(Box::new(raw), threads)
        } else if codec == Compression::Gzip
            && threads > 1
            && raw
                .size_hint()
                .is_none_or(|n| n >= crate::pargzip::MIN_PARALLEL_INPUT)
        {
            let cfg = crate::pargzip::Config::new(threads);
            // The compressed file mapped, when it may be: the workers then decode
            // straight from the page cache.
            let map = reread
                .filter(|_| raw.may_map)
                .zip(path.as_deref())
                .and_then(|(r, path)| r.open(path).ok())
                .and_then(GuardedMap::open);
            match map {
                Some(map) => crate::pargzip::start(Compressed::Mapped(Arc::new(map)), cfg),
                None => crate::pargzip::start(Compressed::Read(Box::new(raw)), cfg),
            }
        } else if codec == Compression::Bzip2 && threads > 1 {
            crate::parbzip2::start(Box::new(raw), threads)
        } else if codec == Compression::Xz && threads > 1 {
            BlockStream::start_parallel_streams(Box::new(raw), codec, threads)
        } else {
            BlockStream::start(Box::new(raw), codec)
        }
        .map_err(|e| Error::from(e).with_shared_path(path.as_ref()))?;
        let mut input = Input::with_backing(Backing::Blocks(stream), None);
        input.path = path;
        input.compression = codec;
        input.reread = reread;
        Ok(input)
    }

    /// Compression of the underlying bytes ([`Compression::None`] when read as they are).
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// From now on, never overwrite or reuse a window buffer whose bytes have been
    /// handed out: when the window moves on, its buffer is kept as it is, numbered by
    /// its [`Input::generation`], and can be taken ([`Input::take_retired`]) and shared
    /// with other threads, which borrow records out of it without copying. Buffers come
    /// back for reuse when their last holder drops them. The unread tail of a window is
    /// copied into the next buffer, as without sharing.
    ///
    /// Returns `false` (and changes nothing) for a mapping, whose bytes are not in
    /// buffers of the input's own; read such a file with [`ReadMode::Read`] to share.
    pub fn share_windows(&mut self) -> bool {
        if self.is_mapped() {
            return false;
        }
        self.sharing.get_or_insert_with(Box::default);
        true
    }

    /// Ends [`Input::share_windows`]: the window stays where it is, buffers it left and
    /// did not hand out are let go, and from now on it moves within its own buffer
    /// again. Buffers handed out stay with their holders.
    pub fn stop_sharing_windows(&mut self) {
        self.sharing = None;
    }

    /// A mapped file's mapping, to be shared with another thread: positions in the
    /// window ([`Input::window_pos`]) are offsets in it ([`GuardedMap`]'s bytes). A
    /// writer that holds it writes records out of it without a copy, after the input is
    /// gone too. `None` when the input is not mapped.
    pub fn shared_mapping(&self) -> Option<Arc<GuardedMap>> {
        match &self.backing {
            Backing::Mapped(map) => Some(Arc::clone(map)),
            Backing::Stream(_) | Backing::Blocks(_) => None,
        }
    }

    /// Goes on through a mapping of the file from the current position: for an
    /// uncompressed regular file read with `read()` (its windows not shared), whose bytes
    /// can then be handed out of the mapping itself ([`Input::shared_mapping`]). Whether
    /// it did: not for other inputs, nor when the file cannot be mapped or no longer
    /// holds the window's bytes. Positions ([`Input::window_pos`]) change: nothing lent
    /// before stays valid.
    pub fn map_from_here(&mut self) -> bool {
        if !matches!(self.backing, Backing::Stream(_))
            || self.compression != Compression::None
            || self.sharing.is_some()
        {
            return false;
        }
        let Some(map) = (self.file.as_ref())
            .and_then(|f| f.try_clone().ok())
            .and_then(GuardedMap::open)
        else {
            return false;
        };
        let (Ok(at), Ok(read_to)) = (
            usize::try_from(self.position()),
            usize::try_from(self.base + self.end as u64),
        ) else {
            return false;
        };
        if map.mapped_len() < read_to {
            // The file shrank below bytes already read: read on as before.
            return false;
        }
        map.skip_to(at);
        self.backing = Backing::Mapped(Arc::new(map));
        self.buf = Vec::new();
        self.file = None;
        self.base = 0;
        self.pos = at;
        self.end = at;
        self.eof = false;
        true
    }

    /// Sharing: how many times the window has moved to another buffer. Positions
    /// ([`Input::window_pos`]) taken in one generation index that generation's buffer.
    pub fn generation(&self) -> u64 {
        self.sharing.as_ref().map_or(0, |s| s.generation)
    }

    /// Sharing: the buffer that held the window in `generation`, once the window has
    /// left it (buffers of earlier generations not taken are let go).
    pub fn take_retired(&mut self, generation: u64) -> Option<Arc<Vec<u8>>> {
        let sharing = self.sharing.as_deref_mut()?;
        while let Some((g, buf)) = sharing.retired.pop_front() {
            sharing.lend(&buf);
            if g == generation {
                return Some(buf);
            }
        }
        None
    }

    /// Where the `len` bytes at address `addr` (`slice.as_ptr() as usize` of a slice
    /// lent from the current window, such as a packet just read) start in the window,
    /// or `None` when they are not inside it. Lets a reader that holds a packet find its
    /// position without going back to the record.
    #[inline]
    pub fn window_offset(&self, addr: usize, len: usize) -> Option<usize> {
        let base = match &self.backing {
            Backing::Mapped(map) => map.verified().as_ptr(),
            Backing::Stream(_) | Backing::Blocks(_) => self.buf.as_ptr(),
        } as usize;
        let at = addr.checked_sub(base)?;
        (at.checked_add(len)? <= self.end).then_some(at)
    }

    /// The window's buffer: its address, its length, and the end of the window's bytes
    /// in it. A reader that holds packets lent from the window places them by address
    /// this way ([`Input::window_offset`] without a call per packet); a packet outside
    /// the buffer was lent after the window moved on.
    #[inline]
    pub fn window_span(&self) -> (usize, usize, usize) {
        let buffer = match &self.backing {
            Backing::Mapped(map) => map.verified(),
            Backing::Stream(_) | Backing::Blocks(_) => &self.buf[..],
        };
        (buffer.as_ptr() as usize, buffer.len(), self.end)
    }

    /// Sharing: moves the window to a new buffer now (its unread bytes copied there)
    /// and returns the buffer it held, with every position handed out in it intact.
    /// For the last records of an input, or to hand records out before the window
    /// fills.
    pub fn share_current(&mut self) -> Option<Arc<Vec<u8>>> {
        let sharing = self.sharing.as_deref_mut()?;
        let mut fresh = sharing.fresh();
        let tail = self.end - self.pos;
        if fresh.len() < tail.max(BLOCK_SIZE) {
            grow_zeroed(&mut fresh, tail.max(BLOCK_SIZE));
        }
        fresh[..tail].copy_from_slice(&self.buf[self.pos..self.end]);
        let old = std::mem::replace(&mut self.buf, fresh);
        self.window_is_block = false;
        self.base += self.pos as u64;
        self.end = tail;
        self.pos = 0;
        let generation = sharing.generation;
        sharing.retire(old);
        self.take_retired(generation)
    }

    /// Sharing: [`Input::share_current`], but the input keeps no hold on the buffer it
    /// returns: once every packet lent from it is dropped, its holder can take it back
    /// ([`Arc::try_unwrap`]) and give it to the window again ([`Input::swap_window`]),
    /// so that a buffer stays with the thread that reads into it.
    pub fn hand_over_current(&mut self) -> Option<Arc<Vec<u8>>> {
        let buf = self.share_current()?;
        if let Some(sharing) = self.sharing.as_deref_mut()
            && sharing.lent.back().is_some_and(|b| Arc::ptr_eq(b, &buf))
        {
            sharing.lent.pop_back();
        }
        Some(buf)
    }

    /// Sharing: makes `buf` the window's buffer, the unread bytes copied to its front,
    /// and keeps the buffer it replaces for reuse. Only for a stream read into buffers
    /// of the input's own, and only while nothing was read from the window since it
    /// last moved (as right after [`Input::share_current`]): otherwise `buf` comes back.
    pub fn swap_window(&mut self, mut buf: Vec<u8>) -> Result<(), Vec<u8>> {
        let Some(sharing) = self.sharing.as_deref_mut() else {
            return Err(buf);
        };
        if self.pos != 0 || self.window_is_block || !matches!(self.backing, Backing::Stream(_)) {
            return Err(buf);
        }
        let tail = self.end;
        if buf.len() < tail.max(BLOCK_SIZE) {
            grow_zeroed(&mut buf, tail.max(BLOCK_SIZE));
        }
        buf[..tail].copy_from_slice(&self.buf[..tail]);
        let old = std::mem::replace(&mut self.buf, buf);
        sharing.lend(&Arc::new(old));
        Ok(())
    }

    /// A regular file read with `read()`, with its windows shared: a handle on it for
    /// reading ahead on another thread (`pread`, [`std::os::unix::fs::FileExt`]), whose
    /// bytes can then be [fed](Input::feed) to the window. `None` for anything else.
    pub fn read_ahead_file(&self) -> Option<File> {
        self.sharing.as_ref()?;
        self.file.as_ref()?.try_clone().ok()
    }

    /// Where the window's next read would start in the file: [`Input::position`] plus
    /// the bytes already in the window.
    pub fn next_read_offset(&self) -> u64 {
        self.base + self.end as u64
    }

    /// Sharing, a regular file read with `read()`: takes `buf[at..at + len]`, the file's
    /// bytes from `offset` on (read ahead by the caller from [`Input::read_ahead_file`]),
    /// as the window's next bytes, in place of a `read()` into a buffer of its own: the
    /// window moves into `buf`, its unread bytes copied in front of `at` (the part of
    /// the fed bytes the window already holds is skipped), and the file's offset moves
    /// past them. The buffer the window leaves is kept for reuse. Only while nothing was
    /// read from the window since it last moved (as right after
    /// [`Input::hand_over_current`]); `buf` comes back when the bytes do not reach past
    /// the window's end, or the window's unread bytes do not fit in front of `at`.
    pub fn feed(
        &mut self,
        mut buf: Vec<u8>,
        at: usize,
        len: usize,
        offset: u64,
    ) -> Result<(), Vec<u8>> {
        let next = self.next_read_offset();
        let usable = self.sharing.is_some()
            && self.file.is_some()
            && matches!(self.backing, Backing::Stream(_))
            && !self.window_is_block
            && !self.eof
            && self.pos == 0
            && at + len <= buf.len()
            && offset <= next
            && next < offset + len as u64;
        if !usable {
            return Err(buf);
        }
        let skip = (next - offset) as usize;
        let tail = self.end;
        let start = at + skip;
        if tail > start || next < start as u64 {
            return Err(buf);
        }
        if let Some(file) = &self.file {
            use std::io::Seek;
            let mut file = file;
            if file.seek(io::SeekFrom::Start(offset + len as u64)).is_err() {
                return Err(buf);
            }
        }
        buf[start - tail..start].copy_from_slice(&self.buf[..tail]);
        let old = std::mem::replace(&mut self.buf, buf);
        if let Some(sharing) = self.sharing.as_deref_mut() {
            sharing.lend(&Arc::new(old));
        }
        // buf[start] is the byte at `next`.
        self.base = next - start as u64;
        self.pos = start - tail;
        self.end = at + len;
        Ok(())
    }

    /// Sharing: moves the unread tail of the window to the front of a fresh buffer,
    /// keeping the old one; nothing without sharing or when nothing was read.
    fn move_tail_to_fresh(&mut self, want: usize) -> bool {
        let Some(sharing) = self.sharing.as_deref_mut() else {
            return false;
        };
        if self.pos == 0 {
            return false;
        }
        let mut fresh = sharing.fresh();
        let tail = self.end - self.pos;
        if fresh.len() < want.max(tail) {
            grow_zeroed(&mut fresh, want.max(tail));
        }
        fresh[..tail].copy_from_slice(&self.buf[self.pos..self.end]);
        sharing.retire(std::mem::replace(&mut self.buf, fresh));
        self.base += self.pos as u64;
        self.end = tail;
        self.pos = 0;
        true
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
            Backing::Stream(_) | Backing::Blocks(_) => &self.buf[self.pos..self.end],
        }
    }

    /// The window from index `start` (as returned by [`Input::window_pos`]) for `len`
    /// bytes. Used to hand out a record after consuming it.
    #[inline(always)]
    pub fn window(&self, start: usize, len: usize) -> &[u8] {
        match &self.backing {
            Backing::Mapped(map) => &map.verified()[start..start + len],
            Backing::Stream(_) | Backing::Blocks(_) => &self.buf[start..start + len],
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
    /// returns how many are available (fewer than `n` only at the end of the input, or
    /// where a compressed input stops decoding: every byte before the damage is handed
    /// out, and the error comes when nothing is left, or from [`Input::cut_error`]).
    #[inline]
    pub fn fill(&mut self, n: usize) -> Result<usize, Error> {
        let have = self.end - self.pos;
        if have >= n || (self.eof && have > 0) {
            return Ok(have);
        }
        self.fill_slow(n)
    }

    #[cold]
    fn fill_slow(&mut self, n: usize) -> Result<usize, Error> {
        if self.eof {
            return match &self.failure {
                Some(_) if self.end == self.pos => Err(self.failure_error()),
                _ => Ok(self.end - self.pos),
            };
        }
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
            Backing::Stream(_) if self.sharing.is_some() && self.pos > 0 => {
                // Sharing: the tail goes to a fresh buffer; then read as below.
                self.move_tail_to_fresh(n.max(BLOCK_SIZE));
                return self.fill_slow(n);
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
                    grow_zeroed(&mut self.buf, want_len);
                }
                match crate::read_until(reader, &mut self.buf, &mut self.end, n) {
                    Ok(ended) => self.eof = ended,
                    Err(e) => return Err(self.read_failure(e)),
                }
            }
            Backing::Blocks(_) => self.fill_blocks(n)?,
        }
        Ok(self.end - self.pos)
    }

    /// A failed `read()` of the stream, where the window's bytes end.
    #[cold]
    fn read_failure(&self, e: io::Error) -> Error {
        Error::from(e)
            .with_shared_path(self.path.as_ref())
            .with_offset(self.base + self.end as u64)
    }

    /// Blocks: walks decompressed blocks in place; a structure that straddles two blocks
    /// is stitched together in the scratch buffer (only the bytes it needs are copied),
    /// after which parsing continues inside the next block.
    fn fill_blocks(&mut self, n: usize) -> Result<(), Error> {
        let Backing::Blocks(stream) = &mut self.backing else {
            return Ok(());
        };
        loop {
            let have = self.end - self.pos;
            if have >= n {
                break;
            }
            if have == 0
                && let Some((block, off, len)) = self.pending.take()
            {
                // The stitched structure was consumed: continue inside the block, in place.
                // (`base + end` is the offset of `block[off]`.)
                self.base = self.base + self.end as u64 - off as u64;
                let stitched = std::mem::replace(&mut self.buf, block);
                match self.sharing.as_deref_mut() {
                    Some(sharing) => sharing.retire(stitched),
                    None => self.scratch = stitched,
                }
                self.window_is_block = true;
                self.pos = off;
                self.end = len;
                continue;
            }
            if let Some((block, off, len)) = &mut self.pending {
                // Stitching: `buf` is the scratch window; append what is missing.
                if self.pos > 0
                    && let Some(sharing) = self.sharing.as_deref_mut()
                {
                    let tail = self.end - self.pos;
                    let mut fresh = sharing.fresh();
                    if fresh.len() < n {
                        grow_zeroed(&mut fresh, n);
                    }
                    fresh[..tail].copy_from_slice(&self.buf[self.pos..self.end]);
                    sharing.retire(std::mem::replace(&mut self.buf, fresh));
                    self.base += self.pos as u64;
                    self.end = tail;
                    self.pos = 0;
                }
                if self.pos > 0 {
                    self.buf.copy_within(self.pos..self.end, 0);
                    self.base += self.pos as u64;
                    self.end -= self.pos;
                    self.pos = 0;
                }
                let take = (n - have).min(*len - *off);
                if self.buf.len() < self.end + take {
                    grow_zeroed(&mut self.buf, self.end + take);
                }
                self.buf[self.end..self.end + take].copy_from_slice(&block[*off..*off + take]);
                self.end += take;
                *off += take;
                if *off == *len
                    && let Some((block, _, _)) = self.pending.take()
                {
                    stream.recycle(block);
                }
                continue;
            }
            if self.source_done {
                break;
            }
            let (block, len) = match stream.next_block() {
                Ok(Some(filled)) => filled,
                Ok(None) => {
                    self.source_done = true;
                    break;
                }
                Err(fault)
                    if fault.sequential_may_read
                        && self.reread.is_some()
                        && self.path.is_some() =>
                {
                    // Read the file again on one thread, from the start, leaving out what
                    // was delivered; the parallel reader's threads end as it is dropped.
                    let reread = self.reread.take().expect("checked above");
                    let path = self.path.clone().expect("checked above");
                    let delivered = self.base + self.end as u64;
                    match reread.open(&path).and_then(|file| {
                        BlockStream::start_skipping(Box::new(file), self.compression, delivered)
                    }) {
                        Ok(sequential) => *stream = sequential,
                        Err(e) => {
                            self.source_done = true;
                            self.failure = Some((
                                format!(
                                    "{}; reading the file again on one thread failed: {e}",
                                    fault.describe(self.compression)
                                ),
                                delivered,
                            ));
                        }
                    }
                    continue;
                }
                Err(fault) => {
                    // Reported once the bytes before it are consumed.
                    self.source_done = true;
                    self.failure = Some((
                        fault.describe(self.compression),
                        self.base + self.end as u64,
                    ));
                    continue;
                }
            };
            if have == 0 {
                // Move to the new block without copying.
                if let Some(sharing) = self.sharing.as_deref_mut() {
                    // A buffer whose holders are done goes back to the decompressor.
                    let spare = sharing.fresh();
                    if spare.capacity() > 0 {
                        stream.recycle(spare);
                    }
                }
                self.base += self.end as u64;
                let old = std::mem::replace(&mut self.buf, block);
                if let Some(sharing) = self.sharing.as_deref_mut() {
                    sharing.retire(old);
                } else if self.window_is_block {
                    stream.recycle(old);
                } else {
                    self.scratch = old;
                }
                self.window_is_block = true;
                self.pos = 0;
                self.end = len;
            } else {
                // The structure straddles: its start goes into the scratch window.
                if let Some(sharing) = self.sharing.as_deref_mut() {
                    let mut fresh = sharing.fresh();
                    if fresh.len() < n {
                        grow_zeroed(&mut fresh, n);
                    }
                    fresh[..have].copy_from_slice(&self.buf[self.pos..self.end]);
                    sharing.retire(std::mem::replace(&mut self.buf, fresh));
                    self.window_is_block = false;
                } else if self.window_is_block {
                    let mut scratch = std::mem::take(&mut self.scratch);
                    if scratch.len() < n {
                        grow_zeroed(&mut scratch, n);
                    }
                    scratch[..have].copy_from_slice(&self.buf[self.pos..self.end]);
                    let old = std::mem::replace(&mut self.buf, scratch);
                    stream.recycle(old);
                    self.window_is_block = false;
                } else {
                    self.buf.copy_within(self.pos..self.end, 0);
                }
                self.base += self.pos as u64;
                self.pos = 0;
                self.end = have;
                self.pending = Some((block, 0, len));
            }
        }
        if self.source_done && self.pending.is_none() {
            self.eof = true;
            if self.failure.is_some() && self.end == self.pos {
                return Err(self.failure_error());
            }
        }
        Ok(())
    }

    /// The error for why the decompressor stopped early.
    fn failure_error(&self) -> Error {
        let (message, offset) = self.failure.clone().unwrap_or_default();
        Error::malformed(message)
            .with_shared_path(self.path.as_ref())
            .with_offset(offset)
            .in_decompressed_data()
    }

    /// The error for a structure (`what`) of `needed` bytes that the input ends inside,
    /// at the current position. Says so when the file shrank while it was mapped.
    pub fn cut_error(&self, what: &'static str, needed: u64) -> Error {
        if self.failure.is_some() {
            // The data ends there because the decompressor failed: that is the reason.
            return self.failure_error();
        }
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
        let err = err
            .with_shared_path(self.path.as_ref())
            .with_offset(self.position());
        if self.compression == Compression::None {
            err
        } else {
            err.in_decompressed_data()
        }
    }
}

/// The error for a decompression [`Fault`] met after `decompressed` bytes of output.
pub(crate) fn fault_error(
    codec: Compression,
    fault: &Fault,
    decompressed: u64,
    path: Option<&Arc<Path>>,
) -> Error {
    Error::malformed(fault.describe(codec))
        .with_shared_path(path)
        .with_offset(decompressed)
        .in_decompressed_data()
}

impl tracekit_core::Window for Input {
    #[inline(always)]
    fn window(&self, start: usize, len: usize) -> &[u8] {
        Input::window(self, start, len)
    }
}

/// The bytes of the input as a plain stream (used to feed a decompressor).
impl Read for Input {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        // Nothing in the window and a read of a block or more (a parallel decompressor
        // reading its compressed chunks): straight from the stream into `out`, without
        // the copy through the window.
        if self.pos == self.end
            && !self.eof
            && out.len() >= BLOCK_SIZE
            && self.sharing.is_none()
            && let Backing::Stream(reader) = &mut self.backing
        {
            self.base += self.pos as u64;
            self.pos = 0;
            self.end = 0;
            loop {
                match reader.read(out) {
                    Ok(k) => {
                        self.eof = k == 0;
                        self.base += k as u64;
                        return Ok(k);
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(io::Error::other(self.read_failure(e))),
                }
            }
        }
        let have = self.fill(1).map_err(io::Error::other)?;
        let n = have.min(out.len());
        out[..n].copy_from_slice(&self.available()[..n]);
        self.consume(n);
        Ok(n)
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

    /// A temporary file holding `data`.
    fn file_of(data: &[u8]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(data).unwrap();
        f.flush().unwrap();
        f
    }

    #[test]
    fn a_file_read_so_far_goes_on_through_a_mapping() {
        let data = sample(3 * BLOCK_SIZE + 12345);
        let f = file_of(&data);
        // At the start, inside the first window, and past a window's end.
        for read_first in [0usize, 1000, BLOCK_SIZE + 77] {
            let mut input = Input::open(f.path(), ReadMode::Read).unwrap();
            assert!(!input.is_mapped());
            let mut got = Vec::new();
            while got.len() < read_first {
                let have = input.fill(1).unwrap();
                let take = have.min(read_first - got.len()).min(4096);
                got.extend_from_slice(&input.available()[..take]);
                input.consume(take);
            }
            assert!(input.map_from_here(), "after {read_first} bytes");
            assert!(input.is_mapped() && input.shared_mapping().is_some());
            assert_eq!(input.position(), read_first as u64);
            let rest = &data[read_first..];
            let mut tail = Vec::new();
            while input.fill(1).unwrap() > 0 {
                let have = input.available().len().min(5000);
                tail.extend_from_slice(&input.available()[..have]);
                input.consume(have);
            }
            assert!(tail == rest, "after {read_first} bytes");
            assert_eq!(input.position(), data.len() as u64);
        }
        // Not a regular file read with `read()`: nothing changes.
        let mut piped = Input::from_reader(std::io::Cursor::new(data.clone()));
        assert!(!piped.map_from_here());
        let mut shared = Input::open(f.path(), ReadMode::Read).unwrap();
        assert!(shared.share_windows());
        assert!(!shared.map_from_here());
        exercise(shared, &data);
    }

    #[test]
    fn stream_and_map_give_the_same_bytes() {
        let data = sample(3 * BLOCK_SIZE + 12345);
        let f = file_of(&data);
        let mapped = Input::open(f.path(), ReadMode::Mmap).unwrap();
        assert!(mapped.is_mapped());
        exercise(mapped, &data);
        let read = Input::open(f.path(), ReadMode::Read).unwrap();
        assert!(!read.is_mapped());
        exercise(read, &data);
        exercise(Input::from_reader(io::Cursor::new(data.clone())), &data);
    }

    #[test]
    fn large_reads_past_an_empty_window_keep_bytes_and_position() {
        // `Read` in odd sizes: small ones through the window, large ones (a block or
        // more, once the window is empty) straight from the stream.
        let data = sample(5 * BLOCK_SIZE + 777);
        let f = file_of(&data);
        for mut input in [
            Input::open(f.path(), ReadMode::Read).unwrap(),
            Input::open(f.path(), ReadMode::Mmap).unwrap(),
            Input::from_reader(io::Cursor::new(data.clone())),
        ] {
            let mut got = Vec::new();
            // A large read first (empty window), then one through it, one that empties
            // it, a large one again, a small one.
            let sizes = [2 * BLOCK_SIZE, 100, BLOCK_SIZE - 100, BLOCK_SIZE + 1, 3];
            let mut buf = vec![0u8; 2 * BLOCK_SIZE];
            for i in 0.. {
                let want = sizes[i % sizes.len()];
                let k = input.read(&mut buf[..want]).unwrap();
                if k == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..k]);
                assert_eq!(input.position(), got.len() as u64);
            }
            assert!(got == data);
            assert_eq!(input.fill(1).unwrap(), 0);
            assert_eq!(input.read(&mut buf).unwrap(), 0);
        }
    }

    #[test]
    fn shrinking_below_the_read_position_is_reported_not_fatal() {
        let data = sample(8 * BLOCK_SIZE);
        let f = file_of(&data);
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
            let f = file_of(&data);
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

    /// `data` compressed with `codec` as `parts` concatenated members/streams/frames.
    fn compress(data: &[u8], codec: Compression, parts: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let chunk = data.len().div_ceil(parts.max(1)).max(1);
        for part in data.chunks(chunk) {
            match codec {
                Compression::Gzip => {
                    let mut e =
                        flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                    e.write_all(part).unwrap();
                    out.extend(e.finish().unwrap());
                }
                Compression::Bzip2 => {
                    let mut e =
                        bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
                    e.write_all(part).unwrap();
                    out.extend(e.finish().unwrap());
                }
                Compression::Zstd => out.extend(zstd::bulk::compress(part, 1).unwrap()),
                Compression::Xz => {
                    let mut e = liblzma::write::XzEncoder::new(Vec::new(), 1);
                    e.write_all(part).unwrap();
                    out.extend(e.finish().unwrap());
                }
                Compression::Lz4 => {
                    let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
                    e.write_all(part).unwrap();
                    out.extend(e.finish().unwrap());
                }
                Compression::None => out.extend_from_slice(part),
            }
        }
        out
    }

    #[test]
    fn every_codec_decompresses_in_blocks() {
        use proptest::prelude::*;
        use proptest::test_runner::{Config, TestRunner};
        let data = sample(2 * crate::DECOMPRESSED_BLOCK + 4321);
        for codec in [
            Compression::Gzip,
            Compression::Bzip2,
            Compression::Zstd,
            Compression::Xz,
            Compression::Lz4,
        ] {
            let packed = compress(&data, codec, 3);
            assert_eq!(Compression::detect(&packed), codec);
            let mut runner = TestRunner::new(Config::with_cases(4));
            runner
                .run(&prop::collection::vec(1usize..300_000, 1..20), |steps| {
                    let raw = Input::from_reader(io::Cursor::new(packed.clone()));
                    let mut input = Input::decompress(raw, codec).unwrap();
                    assert_eq!(input.compression(), codec);
                    let mut at = 0;
                    for step in steps.iter().cycle() {
                        let have = input.fill(*step).unwrap();
                        if have == 0 {
                            break;
                        }
                        let take = have.min(*step);
                        prop_assert!(input.available()[..take] == data[at..at + take]);
                        input.consume(take);
                        at += take;
                    }
                    prop_assert_eq!(at, data.len(), "{}", codec);
                    Ok(())
                })
                .unwrap();
        }
    }

    /// Walks `input` in sharing mode in steps, keeping every step's bytes as a
    /// (buffer, range) pair taken from the generation it was read in, and checks at the
    /// end (after every later fill) that each still holds the original bytes.
    fn walk_shared(mut input: Input, data: &[u8], steps: &[usize]) -> usize {
        assert!(input.share_windows());
        let mut kept: Vec<(Arc<Vec<u8>>, usize, usize, usize)> = Vec::new();
        let mut open: Vec<(usize, usize, usize)> = Vec::new();
        let mut generation = input.generation();
        let mut at = 0;
        for step in steps.iter().cycle() {
            let have = input.fill(*step).unwrap();
            if input.generation() != generation {
                let buf = input.take_retired(generation).expect("the left buffer");
                kept.extend(open.drain(..).map(|(s, l, a)| (buf.clone(), s, l, a)));
                generation = input.generation();
            }
            if have == 0 {
                break;
            }
            let take = have.min(*step);
            open.push((input.window_pos(), take, at));
            input.consume(take);
            at += take;
        }
        if let Some(buf) = input.share_current() {
            kept.extend(open.drain(..).map(|(s, l, a)| (buf.clone(), s, l, a)));
        }
        assert!(open.is_empty());
        assert_eq!(at, data.len());
        let mut covered = 0;
        for (buf, start, len, at) in &kept {
            assert!(buf[*start..start + len] == data[*at..at + len]);
            covered += len;
        }
        assert_eq!(covered, data.len());
        kept.iter()
            .map(|k| Arc::as_ptr(&k.0))
            .collect::<std::collections::HashSet<_>>()
            .len()
    }

    #[test]
    fn shared_windows_keep_their_bytes_for_other_holders() {
        let data = sample(5 * BLOCK_SIZE + 777);
        let steps = [1usize, 7, 4096, BLOCK_SIZE + 3, 13, 1500];
        let buffers = walk_shared(
            Input::from_reader(io::Cursor::new(data.clone())),
            &data,
            &steps,
        );
        assert!(
            buffers > 3,
            "the window moved through several buffers ({buffers})"
        );
        let f = file_of(&data);
        assert!(
            !Input::open(f.path(), ReadMode::Mmap)
                .unwrap()
                .share_windows()
        );
        walk_shared(
            Input::open(f.path(), ReadMode::Read).unwrap(),
            &data,
            &steps,
        );
        let data = sample(3 * crate::DECOMPRESSED_BLOCK + 4321);
        for codec in [Compression::Gzip, Compression::Zstd] {
            let packed = compress(&data, codec, 3);
            let raw = Input::from_reader(io::Cursor::new(packed));
            walk_shared(Input::decompress(raw, codec).unwrap(), &data, &steps);
        }
    }

    /// A buffer handed over comes back to its holder alone, goes into the window again
    /// with the unread tail in front, and every byte comes through once, in order.
    #[test]
    fn a_handed_over_buffer_goes_back_into_the_window() {
        let data = sample(4 * BLOCK_SIZE + 999);
        let mut input = Input::from_reader(io::Cursor::new(data.clone()));
        assert!(input.share_windows());
        let mut at = 0;
        let mut spare: Option<Vec<u8>> = None;
        let mut swapped = 0;
        while input.fill(1).unwrap() > 0 {
            // Up to 1000 bytes before the end of the window, in 100-byte steps.
            let start = at;
            let from = input.window_pos();
            while input.fill(100).unwrap() >= 100 && input.available().len() > 1000 {
                input.consume(100);
                at += 100;
            }
            if at == start {
                let rest = input.available().len();
                input.consume(rest);
                at += rest;
            }
            let generation = input.generation();
            let buf = input.hand_over_current().expect("the window's buffer");
            assert_eq!(input.generation(), generation + 1);
            assert!(buf[from..from + (at - start)] == data[start..at]);
            // Nobody else holds it.
            let buf = Arc::try_unwrap(buf).expect("the holder's alone");
            if let Some(old) = spare.replace(buf) {
                let ptr = old.as_ptr();
                assert!(input.swap_window(old).is_ok());
                assert_eq!(input.available().as_ptr(), ptr, "the window is in it");
                swapped += 1;
            }
            assert!(input.available() == &data[at..at + input.available().len()]);
        }
        assert_eq!(at, data.len());
        assert!(swapped >= 3, "{swapped}");
        // Not once something was read from the window since it moved.
        let mut input = Input::from_reader(io::Cursor::new(data.clone()));
        assert!(input.share_windows());
        input.fill(10).unwrap();
        input.consume(10);
        assert!(input.swap_window(vec![0; 16]).is_err());
    }

    /// Bytes read ahead with `pread` and fed to the window come out in order, once,
    /// whether the chunk starts where the window's next read would or before it; between
    /// feeds the input reads for itself from the right place.
    #[test]
    fn bytes_read_ahead_and_fed_come_out_in_order() {
        use std::os::unix::fs::FileExt;
        let data = sample(5 * BLOCK_SIZE + 777);
        let f = file_of(&data);
        let mut input = Input::open(f.path(), ReadMode::Read).unwrap();
        assert!(input.read_ahead_file().is_none(), "only when sharing");
        assert!(input.share_windows());
        let file = input.read_ahead_file().expect("a regular file");
        const AT: usize = 1000;
        let (mut at, mut fed, mut turn) = (0usize, 0, 0);
        while input.fill(1).unwrap() > 0 {
            assert!(input.available() == &data[at..at + input.available().len()]);
            assert_eq!(input.position(), at as u64);
            while input.fill(100).unwrap() >= 100 && input.available().len() > 900 {
                input.consume(100);
                at += 100;
            }
            if input.available().len() <= 900 && input.next_read_offset() == data.len() as u64 {
                let rest = input.available().len();
                input.consume(rest);
                at += rest;
                continue;
            }
            input.hand_over_current().expect("the window's buffer");
            turn += 1;
            // Every third turn the input reads for itself; the others get 300,000 bytes
            // read ahead, from the next read's offset or 50 bytes before it.
            if turn % 3 == 0 {
                continue;
            }
            let next = input.next_read_offset();
            let offset = next - if turn % 2 == 0 { 50 } else { 0 };
            let mut buf = vec![0u8; AT + 300_000];
            let len = file.read_at(&mut buf[AT..], offset).unwrap();
            assert!(input.feed(buf, AT, len, offset).is_ok(), "turn {turn}");
            fed += 1;
            assert_eq!(input.next_read_offset(), offset + len as u64);
        }
        assert_eq!(at, data.len());
        assert!(fed >= 10, "{fed}");
        // Refused: bytes that start after the window's next read, or once something
        // was read from the window since it moved.
        let mut input = Input::open(f.path(), ReadMode::Read).unwrap();
        assert!(input.share_windows());
        input.fill(10).unwrap();
        input.consume(10);
        input.hand_over_current().unwrap();
        let next = input.next_read_offset();
        assert!(input.feed(vec![0; AT + 10], AT, 10, next + 1).is_err());
        input.fill(1).unwrap();
        input.consume(1);
        assert!(input.feed(vec![0; AT + 10], AT, 10, next).is_err());
    }

    #[test]
    fn truncated_stream_gives_its_bytes_then_an_error() {
        let data = sample(3 * crate::DECOMPRESSED_BLOCK);
        let mut packed = compress(&data, Compression::Gzip, 1);
        packed.truncate(packed.len() / 2);
        let mut input = Input::decompress(
            Input::from_reader(io::Cursor::new(packed)),
            Compression::Gzip,
        )
        .unwrap();
        let mut at = 0;
        let err = loop {
            match input.fill(1000) {
                Ok(0) => panic!("a cut stream must end in an error"),
                Ok(have) => {
                    let take = have.min(1000);
                    assert!(input.available()[..take] == data[at..at + take]);
                    input.consume(take);
                    at += take;
                }
                Err(e) => break e,
            }
        };
        assert!(
            at > data.len() / 4,
            "most of the decodable data came through ({at})"
        );
        assert!(
            err.to_string()
                .contains("gzip stream is damaged or cut short"),
            "{err}"
        );
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
        let f = file_of(&data);
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
