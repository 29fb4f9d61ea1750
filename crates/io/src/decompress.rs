//! Decompression on threads of their own, handing out large blocks in order, in memory
//! bounded by the codecs' windows and the number of workers.
//!
//! Every codec is read unit by unit (gzip members, bzip2 and xz streams, zstd and lz4
//! frames) by [`Concatenated`], which knows where each unit starts in the compressed
//! input. What follows the last complete unit must be another unit (or xz stream
//! padding, or a zstd/lz4 skippable frame): anything else is reported as trailing data,
//! after every byte before it was delivered.
//!
//! The decoder thread fills buffers from a fixed pool (recycled by the parser: no
//! allocation per block in steady state) and sends them over a bounded channel.
//! [`crate::Input`] walks the blocks in place and copies only a record that straddles two
//! of them. The parallel readers here (tracekit's gzip members, xz streams; ordinary gzip
//! and all bzip2 go to [`crate::pargzip`] and [`crate::parbzip2`]) cut the input
//! into units on a splitter thread and decode them on workers, each unit into blocks of
//! [`DECOMPRESSED_BLOCK`] handed on as they come; no size a file claims is used to
//! allocate more than [`MAX_SPLIT_MEMBER`] / [`MAX_WHOLE_INFLATE`].
//!
//! A damaged or truncated stream delivers every byte that decoded before the damage, then
//! the error.

use std::fmt;
use std::io::{self, BufRead, Read};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, bounded};

use super::Compression;

/// Size of one decompressed block.
pub const DECOMPRESSED_BLOCK: usize = 1 << 20;

/// Blocks in flight between the decoder and the parser.
const QUEUE: usize = 4;

/// The largest gzip member (compressed) that the parallel reader takes whole on the word
/// of its size field. tracekit's members hold 1 MiB and BGZF's 64 KiB, so real members
/// are far below; a larger claim sends the rest of the file down the sequential path.
pub const MAX_SPLIT_MEMBER: usize = 2 << 20;

/// The largest member output (by its ISIZE trailer) inflated in one call into one buffer;
/// a member claiming more is inflated in [`DECOMPRESSED_BLOCK`] pieces, and whatever it
/// claims is checked against what inflating produces.
pub const MAX_WHOLE_INFLATE: usize = 2 << 20;

/// The memory an xz stream may ask for (its dictionary): `xz -9` needs 65 MiB.
const XZ_MEMORY_LIMIT: u64 = 128 << 20;

/// Compressed bytes the xz stream splitter holds while looking for the next
/// stream start; a longer stream is decoded sequentially from there on. tracekit's
/// streams are at most 4 MiB before compression.
const MAX_STREAM_CHUNK: usize = 5 << 20;

/// Why decompression stopped early: the unit it stopped in and where that unit starts
/// in the compressed input, or the trailing data after the last complete unit.
#[derive(Debug)]
pub(crate) struct Fault {
    /// Trailing data after complete units (not damage inside one).
    pub(crate) trailing: bool,
    /// The 1-based member / stream / frame number, when known.
    pub(crate) unit: Option<u64>,
    /// Compressed byte offset: of the unit's start, or of the trailing data.
    pub(crate) at: Option<u64>,
    /// What went wrong.
    pub(crate) detail: String,
    /// The parallel reader cannot take this unit, but a sequential decoder may (a bzip2
    /// block longer than any encoder writes): a reader that can read the input again
    /// does so sequentially instead of failing.
    pub(crate) sequential_may_read: bool,
}

impl Fault {
    pub(crate) fn damaged(unit: Option<u64>, at: Option<u64>, detail: impl fmt::Display) -> Fault {
        Fault {
            trailing: false,
            unit,
            at,
            detail: detail.to_string(),
            sequential_may_read: false,
        }
    }

    fn from_io(e: io::Error) -> Fault {
        match e.get_ref().is_some_and(|inner| inner.is::<Fault>()) {
            true => match e.into_inner().map(|inner| inner.downcast::<Fault>()) {
                Some(Ok(fault)) => *fault,
                _ => Fault::damaged(None, None, "unreadable decoder error"),
            },
            false => Fault::damaged(None, None, e),
        }
    }

    fn into_io(self) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, self)
    }

    /// The user-facing sentence for `codec`.
    pub(crate) fn describe(&self, codec: Compression) -> String {
        if self.trailing {
            return self.detail.clone();
        }
        let place = match (self.unit, self.at) {
            (Some(u), Some(at)) => format!(
                " ({} {u}, which starts at compressed byte offset {at})",
                unit_name(codec)
            ),
            (Some(u), None) => format!(" ({} {u})", unit_name(codec)),
            (None, Some(at)) => format!(" (at compressed byte offset {at})"),
            (None, None) => String::new(),
        };
        format!(
            "the {codec} stream is damaged or cut short{place}: {}",
            self.detail
        )
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}

impl std::error::Error for Fault {}

/// What a codec calls one self-contained piece of its stream.
fn unit_name(codec: Compression) -> &'static str {
    match codec {
        Compression::Gzip => "member",
        Compression::Bzip2 | Compression::Xz => "stream",
        Compression::Zstd | Compression::Lz4 => "frame",
        Compression::None => "block",
    }
}

/// A buffered reader that can look `n` bytes ahead (gzip headers, frame magics) and
/// counts the bytes consumed: the compressed offset, for error messages.
pub(crate) struct Lookahead<R> {
    inner: R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    eof: bool,
    /// Compressed offset of `buf[pos]`.
    consumed: u64,
}

impl<R: Read> Lookahead<R> {
    pub(crate) fn new(inner: R, capacity: usize, start: u64) -> Lookahead<R> {
        Lookahead {
            inner,
            buf: vec![0; capacity.max(1 << 12)],
            pos: 0,
            end: 0,
            eof: false,
            consumed: start,
        }
    }

    /// The compressed offset of the next byte.
    fn offset(&self) -> u64 {
        self.consumed
    }

    /// At least `n` bytes ahead, or every byte left when the input ends first.
    fn peek(&mut self, n: usize) -> io::Result<&[u8]> {
        if self.end - self.pos < n && !self.eof {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
            if self.buf.len() < n {
                self.buf.resize(n, 0);
            }
            self.eof = crate::read_until(&mut self.inner, &mut self.buf, &mut self.end, n)?;
        }
        Ok(&self.buf[self.pos..self.end])
    }

    /// Discards up to `n` bytes; returns how many there were.
    fn skip(&mut self, mut n: u64) -> io::Result<u64> {
        let mut skipped = 0;
        while n > 0 {
            let have = self.fill_buf()?.len();
            if have == 0 {
                break;
            }
            let take = have.min(usize::try_from(n).unwrap_or(usize::MAX));
            self.consume(take);
            n -= take as u64;
            skipped += take as u64;
        }
        Ok(skipped)
    }
}

impl<R: Read> Read for Lookahead<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let have = self.fill_buf()?;
        let n = have.len().min(out.len());
        out[..n].copy_from_slice(&have[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for Lookahead<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos == self.end && !self.eof {
            self.pos = 0;
            self.end = 0;
            loop {
                match self.inner.read(&mut self.buf) {
                    Ok(0) => self.eof = true,
                    Ok(k) => self.end = k,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                }
                break;
            }
        }
        Ok(&self.buf[self.pos..self.end])
    }

    fn consume(&mut self, n: usize) {
        let n = n.min(self.end - self.pos);
        self.pos += n;
        self.consumed += n as u64;
    }
}

/// Remembers the last 8 bytes read through it: how a finished lz4 frame is told from a
/// cut one (the frame decoder reports both as the end).
struct Tail<R> {
    inner: R,
    last: [u8; 8],
}

impl<R: Read> Read for Tail<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(out)?;
        let got = &out[..n];
        if n >= 8 {
            self.last.copy_from_slice(&got[n - 8..]);
        } else {
            self.last.copy_within(n.., 0);
            self.last[8 - n..].copy_from_slice(got);
        }
        Ok(n)
    }
}

/// The decoder of one unit.
enum Unit<R: BufRead> {
    Gzip(flate2::bufread::GzDecoder<R>),
    Bzip2(bzip2::bufread::BzDecoder<R>),
    Zstd(zstd::stream::read::Decoder<'static, R>),
    Xz(liblzma::bufread::XzDecoder<R>),
    /// With whether the frame ends with a content checksum.
    Lz4(lz4_flex::frame::FrameDecoder<Tail<R>>, bool),
}

impl<R: BufRead> Unit<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        match self {
            Unit::Gzip(d) => d.read(out),
            Unit::Bzip2(d) => d.read(out),
            Unit::Zstd(d) => d.read(out),
            Unit::Xz(d) => d.read(out),
            Unit::Lz4(d, _) => d.read(out),
        }
    }

    /// The reader after a unit that ended; an error if the unit did not end properly.
    fn finish(self) -> Result<R, (R, &'static str)> {
        match self {
            Unit::Gzip(d) => Ok(d.into_inner()),
            Unit::Bzip2(d) => Ok(d.into_inner()),
            Unit::Zstd(d) => Ok(d.finish()),
            Unit::Xz(d) => Ok(d.into_inner()),
            Unit::Lz4(d, content_checksum) => {
                let tail = d.into_inner();
                // The end mark (a zero block size), then the content checksum if any.
                let end_mark = if content_checksum {
                    &tail.last[..4]
                } else {
                    &tail.last[4..]
                };
                if end_mark == [0, 0, 0, 0] {
                    Ok(tail.inner)
                } else {
                    Err((tail.inner, "the frame ends before its end mark"))
                }
            }
        }
    }
}

enum State<R: BufRead> {
    Between(R),
    In(Box<Unit<R>>),
    Done,
}

/// Reads every unit of a codec in turn (see the module documentation).
pub(crate) struct Concatenated<R: Read> {
    codec: Compression,
    state: State<Lookahead<R>>,
    /// Units started so far; the current one's number.
    units: u64,
    /// Compressed offset of the current unit.
    unit_start: u64,
}

impl<R: Read> Concatenated<R> {
    /// Reads `input`, whose first byte is at compressed offset `input.offset()` and which
    /// follows `units_before` complete units.
    pub(crate) fn new(
        input: Lookahead<R>,
        codec: Compression,
        units_before: u64,
    ) -> Concatenated<R> {
        Concatenated {
            codec,
            unit_start: input.offset(),
            state: State::Between(input),
            units: units_before,
        }
    }

    fn fault(&self, detail: impl fmt::Display) -> io::Error {
        Fault::damaged(Some(self.units), Some(self.unit_start), detail).into_io()
    }

    /// Between units: skips padding and skippable frames, then starts the next unit, or
    /// says the input ended (`None`).
    fn next_unit(
        &mut self,
        mut input: Lookahead<R>,
    ) -> io::Result<Option<Box<Unit<Lookahead<R>>>>> {
        loop {
            let head = input.peek(Compression::MAGIC_LEN)?;
            if head.is_empty() {
                return Ok(None);
            }
            match (self.codec, head) {
                // xz stream padding: null bytes, a multiple of four.
                (Compression::Xz, [0, ..]) => {
                    let at = input.offset();
                    let mut zeros = 0u64;
                    loop {
                        let buf = input.fill_buf()?;
                        let n = buf.iter().take_while(|&&b| b == 0).count();
                        let all = n == buf.len() && n > 0;
                        input.consume(n);
                        zeros += n as u64;
                        if !all {
                            break;
                        }
                    }
                    if !zeros.is_multiple_of(4) {
                        return Err(self.trailing(input, at));
                    }
                    continue;
                }
                (Compression::Zstd | Compression::Lz4, [0x50..=0x5f, 0x2a, 0x4d, 0x18, ..]) => {
                    let at = input.offset();
                    let head = input.peek(8)?;
                    if head.len() < 8 {
                        return Err(Fault::damaged(
                            None,
                            Some(at),
                            "a skippable frame is cut short",
                        )
                        .into_io());
                    }
                    let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
                    input.consume(8);
                    if input.skip(u64::from(len))? < u64::from(len) {
                        return Err(Fault::damaged(
                            None,
                            Some(at),
                            "a skippable frame is cut short",
                        )
                        .into_io());
                    }
                    continue;
                }
                _ => {}
            }
            let detected = Compression::detect(head);
            // lz4 FLG bit 2: a content checksum follows the end mark.
            let content_checksum = head.get(4).is_some_and(|flg| flg & 0x04 != 0);
            if detected != self.codec {
                if self.units == 0 {
                    return Err(Fault::damaged(
                        None,
                        Some(input.offset()),
                        format!("the input does not start with a {} header", self.codec),
                    )
                    .into_io());
                }
                let at = input.offset();
                return Err(self.trailing(input, at));
            }
            self.units += 1;
            self.unit_start = input.offset();
            return Ok(Some(Box::new(match self.codec {
                Compression::Gzip => Unit::Gzip(flate2::bufread::GzDecoder::new(input)),
                Compression::Bzip2 => Unit::Bzip2(bzip2::bufread::BzDecoder::new(input)),
                Compression::Zstd => {
                    Unit::Zstd(zstd::stream::read::Decoder::with_buffer(input)?.single_frame())
                }
                Compression::Xz => {
                    let stream = liblzma::stream::Stream::new_stream_decoder(XZ_MEMORY_LIMIT, 0)
                        .map_err(|e| self.fault(e))?;
                    Unit::Xz(liblzma::bufread::XzDecoder::new_stream(input, stream))
                }
                Compression::Lz4 => {
                    let tail = Tail {
                        inner: input,
                        last: [0xff; 8],
                    };
                    Unit::Lz4(lz4_flex::frame::FrameDecoder::new(tail), content_checksum)
                }
                Compression::None => return Ok(None),
            })));
        }
    }

    /// The trailing-data error for what `input` holds from compressed offset `at`.
    fn trailing(&self, mut input: Lookahead<R>, at: u64) -> io::Error {
        let preview: Vec<String> = match input.peek(8) {
            Ok(bytes) => bytes.iter().map(|b| format!("{b:02x}")).collect(),
            Err(_) => Vec::new(),
        };
        // Count what is there, up to a limit (the input may be endless).
        const COUNT_LIMIT: u64 = 1 << 20;
        let more = input.skip(COUNT_LIMIT).unwrap_or(0);
        let len = if more == COUNT_LIMIT && input.peek(1).is_ok_and(|b| !b.is_empty()) {
            "more than 1 MiB".to_string()
        } else {
            format!("{more} byte{}", if more == 1 { "" } else { "s" })
        };
        let units = self.units;
        Fault {
            trailing: true,
            sequential_may_read: false,
            unit: Some(units),
            at: Some(at),
            detail: format!(
                "trailing data after {name} {units}, the last complete one: {len} at \
                 compressed byte offset {at} ({}), not a {codec} {name}; everything before \
                 it was read",
                preview.join(" "),
                name = unit_name(self.codec),
                codec = self.codec,
            ),
        }
        .into_io()
    }
}

impl<R: Read> Read for Concatenated<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        loop {
            match std::mem::replace(&mut self.state, State::Done) {
                State::Done => return Ok(0),
                State::Between(input) => match self.next_unit(input) {
                    Ok(Some(unit)) => self.state = State::In(unit),
                    Ok(None) => return Ok(0),
                    Err(e) => return Err(e),
                },
                State::In(mut unit) => match unit.read(out) {
                    Ok(0) => match unit.finish() {
                        Ok(input) => self.state = State::Between(input),
                        Err((_, why)) => return Err(self.fault(why)),
                    },
                    Ok(n) => {
                        self.state = State::In(unit);
                        return Ok(n);
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                        self.state = State::In(unit);
                        return Err(e);
                    }
                    Err(e) if e.get_ref().is_some_and(|inner| inner.is::<Fault>()) => {
                        return Err(e);
                    }
                    Err(e) => return Err(self.fault(e)),
                },
            }
        }
    }
}

/// What a decoding thread hands on, in order.
pub(crate) enum Piece {
    /// Decompressed bytes: a buffer and its valid length (never 0).
    Data(Vec<u8>, usize),
    /// The current job's output is complete: the next comes from the next worker.
    JobDone,
    /// The end of the stream.
    End,
    /// The stream failed here.
    Failed(Fault),
}

/// Reads `decoder` to its end in blocks of [`DECOMPRESSED_BLOCK`] bytes (buffers from
/// `buffer`), handing each to `emit`, then `last` or the error: every byte that decoded
/// before an error comes first. Stops early when `emit` says no; returns whether it ran
/// to the end without failure.
fn drain(
    decoder: &mut dyn Read,
    buffer: &mut dyn FnMut() -> Vec<u8>,
    emit: &mut dyn FnMut(Piece) -> bool,
    last: fn() -> Piece,
) -> bool {
    loop {
        let mut buf = buffer();
        if buf.len() < DECOMPRESSED_BLOCK {
            buf.resize(DECOMPRESSED_BLOCK, 0);
        }
        let mut len = 0;
        let want = buf.len();
        let failure = crate::read_until(decoder, &mut buf, &mut len, want).err();
        let ended = len < buf.len();
        if len > 0 && !emit(Piece::Data(buf, len)) {
            return false;
        }
        match failure {
            Some(e) => {
                emit(Piece::Failed(Fault::from_io(e)));
                return false;
            }
            None if ended => return emit(last()),
            None => {}
        }
    }
}

/// Decompressed blocks in stream order, produced by background threads.
pub(crate) struct BlockStream {
    /// Pieces come from these in turn (one for a sequential decoder, one per worker for
    /// the parallel ones), moving on at each [`Piece::JobDone`].
    ready: Vec<Receiver<Piece>>,
    next: usize,
    pool: Sender<Vec<u8>>,
    threads: Vec<JoinHandle<()>>,
}

impl BlockStream {
    /// Starts decoding `raw` (compressed with `codec`) on a new thread.
    pub(crate) fn start(raw: Box<dyn Read + Send>, codec: Compression) -> io::Result<BlockStream> {
        BlockStream::start_skipping(raw, codec, 0)
    }

    /// [`BlockStream::start`], leaving out the first `skip` decompressed bytes (those a
    /// parallel reader delivered before it met a unit only a sequential decoder reads).
    pub(crate) fn start_skipping(
        raw: Box<dyn Read + Send>,
        codec: Compression,
        skip: u64,
    ) -> io::Result<BlockStream> {
        let pool_size = QUEUE + 3;
        let (pool_tx, pool_rx) = bounded::<Vec<u8>>(pool_size);
        for _ in 0..pool_size {
            let _ = pool_tx.send(Vec::new());
        }
        let (tx, rx) = bounded::<Piece>(QUEUE);
        let worker = std::thread::Builder::new()
            .name(format!("tracekit-{codec}"))
            .spawn(move || {
                let mut decoder = sequential(raw, codec);
                if skip > 0 {
                    match io::copy(&mut (&mut decoder).take(skip), &mut io::sink()) {
                        Ok(n) if n == skip => {}
                        Ok(_) => {
                            let _ = tx.send(Piece::Failed(Fault::damaged(
                                None,
                                None,
                                "the input is shorter when read again",
                            )));
                            return;
                        }
                        Err(e) => {
                            let _ = tx.send(Piece::Failed(Fault::from_io(e)));
                            return;
                        }
                    }
                }
                drain(
                    &mut *decoder,
                    &mut || pool_rx.recv().unwrap_or_default(),
                    &mut |b| tx.send(b).is_ok(),
                    || Piece::End,
                );
            })?;
        Ok(BlockStream {
            ready: vec![rx],
            next: 0,
            pool: pool_tx,
            threads: vec![worker],
        })
    }

    /// A stream of the pieces that arrive on `ready`, made by `threads` (joined on drop),
    /// whose buffers go back through `pool`: the hook of the parallel gzip reader.
    pub(crate) fn from_parts(
        ready: Receiver<Piece>,
        pool: Sender<Vec<u8>>,
        threads: Vec<JoinHandle<()>>,
    ) -> BlockStream {
        BlockStream {
            ready: vec![ready],
            next: 0,
            pool,
            threads,
        }
    }

    /// The next block, `None` at the end of the stream.
    pub(crate) fn next_block(&mut self) -> Result<Option<(Vec<u8>, usize)>, Fault> {
        loop {
            match self.ready[self.next].recv() {
                Ok(Piece::Data(buf, len)) => return Ok(Some((buf, len))),
                Ok(Piece::JobDone) => self.next = (self.next + 1) % self.ready.len(),
                Ok(Piece::End) => return Ok(None),
                Ok(Piece::Failed(fault)) => return Err(fault),
                Err(_) => {
                    return Err(Fault::damaged(
                        None,
                        None,
                        "the decompression thread ended early",
                    ));
                }
            }
        }
    }

    /// Gives a block's buffer back.
    pub(crate) fn recycle(&self, buf: Vec<u8>) {
        let _ = self.pool.try_send(buf);
    }

    /// Starts `workers` threads that run `work` on the jobs a splitter deals them (job
    /// `i` to worker `i % workers`), and the splitter thread, which runs `split` with the
    /// dealing function; pieces are taken from the workers in turn, which keeps order.
    pub(crate) fn start_split<J: Send + 'static>(
        name: &str,
        workers: usize,
        out_queue: usize,
        work: impl FnMut(J, &mut dyn FnMut() -> Vec<u8>, &mut dyn FnMut(Piece) -> bool)
        + Send
        + Clone
        + 'static,
        split: impl FnOnce(&mut dyn FnMut(J) -> bool) + Send + 'static,
    ) -> io::Result<BlockStream> {
        let workers = workers.max(1);
        let (out_pool_tx, out_pool_rx) = bounded::<Vec<u8>>((out_queue + 1) * workers + 3);
        let mut ready = Vec::with_capacity(workers);
        let mut job_senders = Vec::with_capacity(workers);
        let mut threads = Vec::with_capacity(workers + 1);
        for k in 0..workers {
            let (job_tx, job_rx) = bounded::<J>(2);
            let (out_tx, out_rx) = bounded::<Piece>(out_queue);
            let out_pool = out_pool_rx.clone();
            let mut work = work.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("{name}-{k}"))
                    .spawn(move || {
                        let mut buffer = || out_pool.try_recv().unwrap_or_default();
                        let mut emit = |p| out_tx.send(p).is_ok();
                        while let Ok(job) = job_rx.recv() {
                            work(job, &mut buffer, &mut emit);
                        }
                    })?,
            );
            job_senders.push(job_tx);
            ready.push(out_rx);
        }
        threads.push(
            std::thread::Builder::new()
                .name(format!("{name}-split"))
                .spawn(move || {
                    let mut k = 0;
                    let mut deal = |job: J| -> bool {
                        let ok = job_senders[k].send(job).is_ok();
                        k = (k + 1) % job_senders.len();
                        ok
                    };
                    split(&mut deal);
                })?,
        );
        Ok(BlockStream {
            ready,
            next: 0,
            pool: out_pool_tx,
            threads,
        })
    }

    /// Parallel gzip: a splitter thread cuts the stream into members by their size
    /// field; `workers` threads inflate them.
    pub(crate) fn start_parallel_gzip(
        raw: Box<dyn Read + Send>,
        workers: usize,
    ) -> io::Result<BlockStream> {
        let (member_pool_tx, member_pool_rx) = bounded::<Vec<u8>>(3 * workers.max(1));
        BlockStream::start_split(
            "tracekit-gunzip",
            workers,
            2,
            {
                let mut inflater = LazyInflater(None);
                move |job, buffer, emit| {
                    if let Some(member) = work_gzip(job, inflater.get(), buffer, emit) {
                        let _ = member_pool_tx.try_send(member);
                    }
                }
            },
            move |deal| {
                split_members(raw, deal, &mut || {
                    member_pool_rx.try_recv().unwrap_or_default()
                })
            },
        )
    }

    /// Parallel xz for multi-stream files (tracekit's): a splitter thread cuts the input
    /// at stream starts; `workers` threads decode the streams, each into blocks handed
    /// on as they come. A stream larger than [`MAX_STREAM_CHUNK`] compressed (a
    /// single-stream file) is decoded sequentially by the splitter. (bzip2 goes to
    /// `crate::parbzip2`, which splits at blocks.)
    pub(crate) fn start_parallel_streams(
        raw: Box<dyn Read + Send>,
        codec: Compression,
        workers: usize,
    ) -> io::Result<BlockStream> {
        BlockStream::start_split(
            &format!("tracekit-{codec}"),
            workers,
            // tracekit's xz streams hold 4 blocks: room to decode a whole one ahead.
            5,
            move |job, buffer, emit| work_stream(codec, job, buffer, emit),
            move |deal| split_streams(raw, codec, deal),
        )
    }
}

impl Drop for BlockStream {
    fn drop(&mut self) {
        // Closing our ends makes the threads' next send fail, and they return.
        let (dead_tx, _) = bounded(0);
        self.pool = dead_tx;
        self.ready.clear();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The sequential decoder of a codec, reading every unit in turn.
fn sequential(raw: Box<dyn Read + Send>, codec: Compression) -> Box<dyn Read + Send> {
    let input = Lookahead::new(raw, 1 << 18, 0);
    match codec {
        Compression::None => Box::new(input),
        _ => Box::new(Concatenated::new(input, codec, 0)),
    }
}

/// Decompresses `raw` on the calling thread, through the same code as the threaded
/// readers (with `split`, the parallel readers' splitting and per-unit decoding, one
/// unit after the other), handing each decompressed block to `out` until it says no.
/// Returns the number of bytes handed out, or the error that ended the stream (every
/// byte before it was handed out). Meant for fuzzing and for callers that want no
/// threads.
///
/// ```
/// use tracekit_io::{Compression, decompress_here};
/// let mut packed = Vec::new();
/// let mut w = flate2::write::GzEncoder::new(&mut packed, flate2::Compression::fast());
/// std::io::Write::write_all(&mut w, b"trace").unwrap();
/// w.finish().unwrap();
/// let mut text = Vec::new();
/// let n = decompress_here(&packed[..], Compression::Gzip, true, |b| {
///     text.extend_from_slice(b);
///     true
/// })
/// .unwrap();
/// assert_eq!((n, &text[..]), (5, &b"trace"[..]));
/// ```
pub fn decompress_here(
    raw: impl Read + Send,
    codec: Compression,
    split: bool,
    mut out: impl FnMut(&[u8]) -> bool,
) -> Result<u64, tracekit_core::Error> {
    use std::cell::{Cell, RefCell};
    let delivered = Cell::new(0u64);
    let stopped = Cell::new(false);
    let failure = RefCell::new(None);
    let spare = RefCell::new(Vec::new());
    let mut buffer = || std::mem::take(&mut *spare.borrow_mut());
    let mut emit = |piece: Piece| -> bool {
        let go_on = match piece {
            Piece::Data(buf, len) => {
                delivered.set(delivered.get() + len as u64);
                let go_on = out(&buf[..len]);
                *spare.borrow_mut() = buf;
                go_on
            }
            Piece::JobDone => true,
            Piece::End => false,
            Piece::Failed(fault) => {
                *failure.borrow_mut() = Some(fault);
                false
            }
        };
        stopped.set(stopped.get() || !go_on);
        go_on
    };
    let raw: Box<dyn Read + Send + '_> = Box::new(raw);
    // The splitters deal `Job`s; each runs at once through the worker's code.
    match codec {
        Compression::Gzip if split => {
            let mut inflater = libdeflater::Decompressor::new();
            split_members(
                raw,
                &mut |job| {
                    work_gzip(job, &mut inflater, &mut buffer, &mut emit);
                    !stopped.get()
                },
                &mut Vec::new,
            );
        }
        // bzip2 is split at its blocks (one stream or many), see `crate::parbzip2`.
        Compression::Bzip2 if split => {
            crate::parbzip2::decompress_here(raw, &mut buffer, &mut emit, &|| stopped.get())
        }
        Compression::Xz if split => split_streams(raw, codec, &mut |job| {
            work_stream(codec, job, &mut buffer, &mut emit);
            !stopped.get()
        }),
        _ => {
            let input = Lookahead::new(raw, 1 << 16, 0);
            let mut decoder: Box<dyn Read> = match codec {
                Compression::None => Box::new(input),
                _ => Box::new(Concatenated::new(input, codec, 0)),
            };
            drain(&mut *decoder, &mut buffer, &mut emit, || Piece::End);
        }
    }
    match failure.into_inner() {
        Some(fault) => Err(crate::input::fault_error(
            codec,
            &fault,
            delivered.get(),
            None,
        )),
        None => Ok(delivered.get()),
    }
}

/// Whether `head` starts a gzip member whose extra field gives the member's size (the
/// `TK` subfield tracekit writes, or BGZF's `BC`), so members can be split without
/// inflating and decompressed in parallel.
pub(crate) fn is_splittable_gzip(head: &[u8]) -> bool {
    member_size(head).is_some_and(|size| size.is_some())
}

/// For a gzip member header at the start of `head`: `None` when more bytes are needed or
/// it is not gzip, `Some(None)` when it has no size field, `Some(Some(size))` otherwise.
fn member_size(head: &[u8]) -> Option<Option<usize>> {
    if head.len() < 10 || head[0] != 0x1f || head[1] != 0x8b || head[2] != 8 {
        return None;
    }
    if head[3] & 0x04 == 0 {
        return Some(None);
    }
    let xlen = usize::from(u16::from_le_bytes([*head.get(10)?, *head.get(11)?]));
    let extra = head.get(12..12 + xlen)?;
    let mut at = 0;
    while at + 4 <= extra.len() {
        let (si, len) = (
            [extra[at], extra[at + 1]],
            usize::from(u16::from_le_bytes([extra[at + 2], extra[at + 3]])),
        );
        let data = extra.get(at + 4..at + 4 + len)?;
        match (&si, len) {
            (b"TK", 4) => {
                return Some(Some(
                    u32::from_le_bytes([data[0], data[1], data[2], data[3]]) as usize,
                ));
            }
            (b"BC", 2) => {
                return Some(Some(
                    usize::from(u16::from_le_bytes([data[0], data[1]])) + 1,
                ));
            }
            _ => {}
        }
        at += 4 + len;
    }
    Some(None)
}

/// A worker's inflater, made on its first job (each worker clones the empty one).
struct LazyInflater(Option<libdeflater::Decompressor>);

impl LazyInflater {
    fn get(&mut self) -> &mut libdeflater::Decompressor {
        self.0.get_or_insert_with(libdeflater::Decompressor::new)
    }
}

impl Clone for LazyInflater {
    fn clone(&self) -> LazyInflater {
        LazyInflater(None)
    }
}

/// Work for a worker, in stream order.
enum Job {
    /// A whole unit (gzip member, or bzip2/xz stream with whatever follows it up to the
    /// next one): its bytes, its 1-based number and its compressed offset.
    Unit(Vec<u8>, u64, u64),
    /// Bytes already decompressed (by the splitter, which went sequential).
    Ready(Vec<u8>, usize),
    /// The stream failed here.
    Failed(Fault),
    /// The end of the stream.
    End,
}

/// The jobs the splitter hands out for its own sequential decoding of `decoder`.
fn split_sequentially(decoder: &mut dyn Read, deal: &mut dyn FnMut(Job) -> bool) {
    drain(
        decoder,
        &mut Vec::new,
        &mut |piece| match piece {
            Piece::Data(buf, len) => deal(Job::Ready(buf, len)),
            Piece::Failed(fault) => deal(Job::Failed(fault)),
            Piece::End | Piece::JobDone => deal(Job::End),
        },
        || Piece::End,
    );
}

/// The gzip splitter: reads members by their size field and deals them out. From a
/// member without a usable size field on, it decodes the rest itself, in order.
fn split_members(
    raw: Box<dyn Read + Send + '_>,
    deal: &mut dyn FnMut(Job) -> bool,
    member_buffer: &mut dyn FnMut() -> Vec<u8>,
) {
    let mut input = Lookahead::new(raw, 1 << 20, 0);
    let mut members = 0u64;
    loop {
        // The header with its extra field (at most 12 + 65535 bytes).
        let header = match input.peek(12) {
            Ok(head) if head.len() >= 12 => {
                let xlen = usize::from(u16::from_le_bytes([head[10], head[11]]));
                input.peek(12 + xlen)
            }
            other => other,
        };
        let head = match header {
            Ok(h) => h,
            Err(e) => {
                let at = input.offset();
                deal(Job::Failed(Fault::damaged(None, Some(at), e)));
                return;
            }
        };
        if head.is_empty() {
            deal(Job::End);
            return;
        }
        // tracekit and BGZF members carry no file name or comment (FLG = FEXTRA).
        let size = match member_size(head) {
            Some(Some(size)) if head[3] == 0x04 && (18..=MAX_SPLIT_MEMBER).contains(&size) => size,
            _ => {
                // Not splittable from here on: decode the rest in this thread.
                let mut rest = Concatenated::new(input, Compression::Gzip, members);
                split_sequentially(&mut rest, deal);
                return;
            }
        };
        members += 1;
        let at = input.offset();
        let mut member = member_buffer();
        member.resize(size, 0);
        if let Err(e) = input.read_exact(&mut member) {
            let why = if e.kind() == io::ErrorKind::UnexpectedEof {
                format!("the member is cut short: its size field says {size} bytes")
            } else {
                e.to_string()
            };
            deal(Job::Failed(Fault::damaged(Some(members), Some(at), why)));
            return;
        }
        if !deal(Job::Unit(member, members, at)) {
            return;
        }
    }
}

/// A gzip worker's job: inflates a whole member (libdeflate, into a buffer of its
/// trailer's size when that is at most [`MAX_WHOLE_INFLATE`], else in blocks), checks
/// its size and CRC. Returns the member's buffer for reuse.
fn work_gzip(
    job: Job,
    inflater: &mut libdeflater::Decompressor,
    buffer: &mut dyn FnMut() -> Vec<u8>,
    emit: &mut dyn FnMut(Piece) -> bool,
) -> Option<Vec<u8>> {
    match job {
        Job::Unit(member, number, at) => {
            let bad = |why: String| Fault::damaged(Some(number), Some(at), why);
            match inflate_member(&member, inflater, buffer, emit) {
                Ok(true) => {
                    emit(Piece::JobDone);
                }
                Ok(false) => {}
                Err(why) => {
                    emit(Piece::Failed(bad(why)));
                }
            }
            Some(member)
        }
        Job::Ready(buf, len) => {
            let _ = emit(Piece::Data(buf, len)) && emit(Piece::JobDone);
            None
        }
        Job::Failed(fault) => {
            emit(Piece::Failed(fault));
            None
        }
        Job::End => {
            emit(Piece::End);
            None
        }
    }
}

/// Inflates one member into pieces; `Ok(false)` when `emit` said stop.
fn inflate_member(
    member: &[u8],
    inflater: &mut libdeflater::Decompressor,
    buffer: &mut dyn FnMut() -> Vec<u8>,
    emit: &mut dyn FnMut(Piece) -> bool,
) -> Result<bool, String> {
    let n = member.len();
    let xlen = member
        .get(10..12)
        .map(|x| usize::from(u16::from_le_bytes([x[0], x[1]])));
    let header_len = xlen.map_or(n, |x| 12 + x);
    if member.get(3) != Some(&0x04) || header_len + 8 > n {
        return Err("the header does not fit its size field".into());
    }
    let trailer = &member[n - 8..];
    let crc = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
    let isize = u32::from_le_bytes([trailer[4], trailer[5], trailer[6], trailer[7]]);
    let body = &member[header_len..n - 8];
    let claimed = isize as usize;
    if claimed > MAX_WHOLE_INFLATE {
        return inflate_in_blocks(body, crc, isize, buffer, emit);
    }
    let mut buf = buffer();
    buf.resize(claimed, 0);
    let got = inflater
        .deflate_decompress(body, &mut buf)
        .map_err(|e| match e {
            libdeflater::DecompressionError::InsufficientSpace => {
                format!("it inflates to more than the {isize} bytes its trailer (ISIZE) gives")
            }
            libdeflater::DecompressionError::BadData => {
                "its deflate data is invalid (or cut short)".to_string()
            }
        })?;
    if got != claimed {
        return Err(format!(
            "it inflates to {got} bytes, its trailer (ISIZE) says {isize}"
        ));
    }
    if crc32fast::hash(&buf[..got]) != crc {
        return Err("CRC mismatch: the member's data is damaged".into());
    }
    Ok(got == 0 || emit(Piece::Data(buf, got)))
}

/// A member too large to inflate at once: streamed into blocks; its size and CRC are
/// checked at its end (the blocks before are already handed on).
fn inflate_in_blocks(
    body: &[u8],
    crc: u32,
    isize: u32,
    buffer: &mut dyn FnMut() -> Vec<u8>,
    emit: &mut dyn FnMut(Piece) -> bool,
) -> Result<bool, String> {
    let mut inflate = flate2::bufread::DeflateDecoder::new(body);
    let mut hasher = crc32fast::Hasher::new();
    let mut total = 0u64;
    loop {
        let mut buf = buffer();
        buf.resize(DECOMPRESSED_BLOCK, 0);
        let mut len = 0;
        let want = buf.len();
        crate::read_until(&mut inflate, &mut buf, &mut len, want)
            .map_err(|e| format!("its deflate data is invalid: {e}"))?;
        if len == 0 {
            break;
        }
        hasher.update(&buf[..len]);
        total += len as u64;
        if !emit(Piece::Data(buf, len)) {
            return Ok(false);
        }
    }
    if total as u32 != isize {
        return Err(format!(
            "it inflates to {total} bytes, its trailer (ISIZE) says {isize}"
        ));
    }
    if hasher.finalize() != crc {
        return Err("CRC mismatch: the member's data is damaged".into());
    }
    Ok(true)
}

/// Where the next xz stream starts in `buf`, searching from `from`: the 6-byte magic,
/// 2 flag bytes (first 0, second a check type 0-15) and the CRC32 of those flags, 12
/// bytes that do not occur by chance. (bzip2 is split at its blocks by
/// `crate::parbzip2`, never here.)
fn next_xz_stream(buf: &[u8], from: usize) -> Option<usize> {
    (from..buf.len().saturating_sub(11)).find(|&i| {
        buf[i..i + 6] == [0xfd, b'7', b'z', b'X', b'Z', 0]
            && buf[i + 6] == 0
            && buf[i + 7] < 16
            && crc32fast::hash(&buf[i + 6..i + 8]).to_le_bytes() == buf[i + 8..i + 12]
    })
}

/// The stream splitter; see [`BlockStream::start_parallel_streams`].
fn split_streams(
    mut raw: Box<dyn Read + Send + '_>,
    codec: Compression,
    deal: &mut dyn FnMut(Job) -> bool,
) {
    let mut buf: Vec<u8> = Vec::with_capacity(MAX_STREAM_CHUNK + (1 << 20));
    // Compressed offset of `buf[0]`, and the streams dealt so far.
    let mut at = 0u64;
    let mut streams = 0u64;
    let mut searched = 1; // the first stream starts at 0
    let mut eof = false;
    loop {
        // Hand out every complete stream found so far.
        while let Some(start) = next_xz_stream(&buf, searched.max(1)) {
            let rest = buf.split_off(start);
            let stream = std::mem::replace(&mut buf, rest);
            streams += 1;
            if !deal(Job::Unit(stream, streams, at)) {
                return;
            }
            at += start as u64;
            searched = 1;
        }
        searched = buf.len().saturating_sub(11).max(1);
        if eof {
            if !buf.is_empty() {
                streams += 1;
                if !deal(Job::Unit(std::mem::take(&mut buf), streams, at)) {
                    return;
                }
            }
            deal(Job::End);
            return;
        }
        if buf.len() > MAX_STREAM_CHUNK {
            // One big stream: decode the rest here, in order.
            let rest = io::Cursor::new(std::mem::take(&mut buf)).chain(raw);
            let mut decoder = Concatenated::new(Lookahead::new(rest, 1 << 18, at), codec, streams);
            split_sequentially(&mut decoder, deal);
            return;
        }
        let old = buf.len();
        buf.resize(old + (1 << 20), 0);
        match raw.read(&mut buf[old..]) {
            Ok(0) => {
                buf.truncate(old);
                eof = true;
            }
            Ok(n) => buf.truncate(old + n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => buf.truncate(old),
            Err(e) => {
                buf.truncate(old);
                // What is complete so far still goes out first.
                if !buf.is_empty() {
                    streams += 1;
                    let _ = deal(Job::Unit(std::mem::take(&mut buf), streams, at));
                }
                deal(Job::Failed(Fault::damaged(None, None, e)));
                return;
            }
        }
    }
}

/// An xz worker's job: decodes a stream (and checks what follows it in the job)
/// into blocks, handed on as they come.
fn work_stream(
    codec: Compression,
    job: Job,
    buffer: &mut dyn FnMut() -> Vec<u8>,
    emit: &mut dyn FnMut(Piece) -> bool,
) {
    match job {
        Job::Unit(stream, number, at) => {
            let input = Lookahead::new(&stream[..], 1 << 16, at);
            let mut decoder = Concatenated::new(input, codec, number - 1);
            drain(&mut decoder, buffer, emit, || Piece::JobDone);
        }
        Job::Ready(buf, len) => {
            let _ = emit(Piece::Data(buf, len)) && emit(Piece::JobDone);
        }
        Job::Failed(fault) => {
            emit(Piece::Failed(fault));
        }
        Job::End => {
            emit(Piece::End);
        }
    }
}
