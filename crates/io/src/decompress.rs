//! Decompression on a thread of its own, handing out large blocks in order.
//!
//! The decoder thread fills buffers from a fixed pool (recycled by the parser: no
//! allocation per block in steady state, memory bounded by the pool) and sends them over a
//! bounded channel. [`crate::Input`] walks the blocks in place and copies only a
//! record that straddles two of them.
//!
//! A damaged or truncated stream delivers every byte that decoded before the damage, then
//! the error.

use std::io::{self, Read};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, bounded};

use super::Compression;

/// Size of one decompressed block.
pub const DECOMPRESSED_BLOCK: usize = 1 << 20;

/// Blocks in flight between the decoder and the parser.
const QUEUE: usize = 4;

/// A decompressed block (its buffer and valid length; an empty block ends the stream),
/// or the decoder's error.
pub(crate) type Block = io::Result<(Vec<u8>, usize)>;

/// Decompressed blocks in stream order, produced by a background thread.
pub(crate) struct BlockStream {
    /// Blocks come from these in turn (one for a sequential decoder, one per worker for
    /// parallel gzip).
    ready: Vec<Receiver<Block>>,
    next: usize,
    pool: Sender<Vec<u8>>,
    threads: Vec<JoinHandle<()>>,
}

impl BlockStream {
    /// Starts decoding `raw` (compressed with `codec`) on a new thread.
    pub(crate) fn start(raw: Box<dyn Read + Send>, codec: Compression) -> io::Result<BlockStream> {
        let pool_size = QUEUE + 3;
        let (pool_tx, pool_rx) = bounded::<Vec<u8>>(pool_size);
        for _ in 0..pool_size {
            let _ = pool_tx.send(Vec::new());
        }
        let (tx, rx) = bounded::<Block>(QUEUE);
        let worker = std::thread::Builder::new()
            .name(format!("tracekit-{codec}"))
            .spawn(move || {
                let decoder = match decoder(raw, codec) {
                    Ok(d) => d,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                let mut decoder = decoder;
                drain(
                    &mut *decoder,
                    || pool_rx.recv().ok(),
                    |b| tx.send(b).is_ok(),
                );
            })?;
        Ok(BlockStream {
            ready: vec![rx],
            next: 0,
            pool: pool_tx,
            threads: vec![worker],
        })
    }

    /// The next block; an empty block is the end of the stream.
    pub(crate) fn next_block(&mut self) -> Block {
        let k = self.next;
        self.next = (self.next + 1) % self.ready.len();
        self.ready[k]
            .recv()
            .unwrap_or_else(|_| Err(io::Error::other("the decompression thread ended early")))
    }

    /// Gives a block's buffer back.
    pub(crate) fn recycle(&self, buf: Vec<u8>) {
        let _ = self.pool.try_send(buf);
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

/// The streaming decoder of a codec, reading every member / stream / frame in turn.
fn decoder(raw: Box<dyn Read + Send>, codec: Compression) -> io::Result<Box<dyn Read + Send>> {
    let raw = io::BufReader::with_capacity(1 << 18, raw);
    Ok(match codec {
        Compression::None => Box::new(raw),
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(raw)),
        Compression::Bzip2 => Box::new(bzip2::bufread::MultiBzDecoder::new(raw)),
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(raw)?),
        Compression::Xz => Box::new(liblzma::bufread::XzDecoder::new_multi_decoder(raw)),
        Compression::Lz4 => Box::new(MultiLz4Decoder {
            frame: Some(lz4_flex::frame::FrameDecoder::new(raw)),
        }),
    })
}

/// Reads concatenated LZ4 frames (the frame decoder stops after one).
struct MultiLz4Decoder<R: io::BufRead> {
    frame: Option<lz4_flex::frame::FrameDecoder<R>>,
}

impl<R: io::BufRead> Read for MultiLz4Decoder<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            let Some(frame) = self.frame.as_mut() else {
                return Ok(0);
            };
            let n = frame.read(out)?;
            if n > 0 || out.is_empty() {
                return Ok(n);
            }
            // End of a frame: another one follows if there are bytes left.
            let Some(frame) = self.frame.take() else {
                return Ok(0);
            };
            let mut raw = frame.into_inner();
            if raw.fill_buf()?.is_empty() {
                return Ok(0);
            }
            self.frame = Some(lz4_flex::frame::FrameDecoder::new(raw));
        }
    }
}

/// Reads `decoder` to its end in blocks of [`DECOMPRESSED_BLOCK`] bytes (buffers from
/// `buffer`), handing each to `emit`, then the end (an empty block) or the error: every
/// byte that decoded before an error comes first. Stops early when `emit` says no.
fn drain(
    decoder: &mut dyn Read,
    mut buffer: impl FnMut() -> Option<Vec<u8>>,
    mut emit: impl FnMut(Block) -> bool,
) {
    loop {
        let Some(mut buf) = buffer() else { return };
        if buf.len() < DECOMPRESSED_BLOCK {
            buf.resize(DECOMPRESSED_BLOCK, 0);
        }
        let mut len = 0;
        let mut failure = None;
        while len < buf.len() {
            match decoder.read(&mut buf[len..]) {
                Ok(0) => break,
                Ok(n) => len += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        let last = len < buf.len();
        if len > 0 && !emit(Ok((buf, len))) {
            return;
        }
        match failure {
            Some(e) => {
                emit(Err(e));
                return;
            }
            None if last => {
                emit(Ok((Vec::new(), 0)));
                return;
            }
            None => {}
        }
    }
}

/// A block as the job that carries it through a worker in order.
fn as_job(block: Block) -> Job {
    match block {
        Ok((_, 0)) => Job::End,
        Ok((buf, len)) => Job::Ready(buf, len),
        Err(e) => Job::Failed(e),
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

/// Work for a gzip worker, in stream order.
enum Job {
    /// A whole member: inflate it.
    Member(Vec<u8>),
    /// Bytes already decompressed (by the splitter, after a member without a size field).
    Ready(Vec<u8>, usize),
    /// The stream failed here.
    Failed(io::Error),
    /// The end of the stream.
    End,
}

impl BlockStream {
    /// Parallel gzip: a splitter thread cuts the stream into members by their size
    /// field; `workers` threads inflate them (member `i` on worker `i % workers`), and
    /// blocks are taken from the workers in turn, which restores the order.
    pub(crate) fn start_parallel_gzip(
        raw: Box<dyn Read + Send>,
        workers: usize,
    ) -> io::Result<BlockStream> {
        let workers = workers.max(1);
        let (out_pool_tx, out_pool_rx) = bounded::<Vec<u8>>(3 * workers + 3);
        let mut ready = Vec::with_capacity(workers);
        let mut job_senders = Vec::with_capacity(workers);
        let mut threads = Vec::with_capacity(workers + 1);
        let (member_pool_tx, member_pool_rx) = bounded::<Vec<u8>>(3 * workers);
        for k in 0..workers {
            let (job_tx, job_rx) = bounded::<Job>(2);
            let (out_tx, out_rx) = bounded::<Block>(2);
            let out_pool = out_pool_rx.clone();
            let member_pool = member_pool_tx.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("tracekit-gunzip-{k}"))
                    .spawn(move || inflate_members(&job_rx, &out_tx, &out_pool, &member_pool))?,
            );
            job_senders.push(job_tx);
            ready.push(out_rx);
        }
        threads.push(
            std::thread::Builder::new()
                .name("tracekit-gzip-split".into())
                .spawn(move || split_members(raw, &job_senders, &member_pool_rx))?,
        );
        Ok(BlockStream {
            ready,
            next: 0,
            pool: out_pool_tx,
            threads,
        })
    }
}

/// The splitter: reads members by their size field and deals them to the workers in
/// turn. A member without a size field switches to decoding the rest here, in order.
fn split_members(raw: Box<dyn Read + Send>, workers: &[Sender<Job>], pool: &Receiver<Vec<u8>>) {
    let mut raw = io::BufReader::with_capacity(1 << 20, raw);
    let mut k = 0;
    let send = |job: Job, k: &mut usize| -> bool {
        let ok = workers[*k].send(job).is_ok();
        *k = (*k + 1) % workers.len();
        ok
    };
    loop {
        let head = match io::BufRead::fill_buf(&mut raw) {
            Ok(h) => h,
            Err(e) => {
                send(Job::Failed(e), &mut k);
                return;
            }
        };
        if head.is_empty() {
            send(Job::End, &mut k);
            return;
        }
        // The header must be in the buffer to be read; gzip headers are small.
        let size = match member_size(head) {
            Some(Some(size)) if size >= 18 => size,
            _ => {
                // Not splittable from here on: decode the rest in this thread.
                let mut decoder = flate2::bufread::MultiGzDecoder::new(raw);
                drain(
                    &mut decoder,
                    || Some(Vec::new()),
                    |b| send(as_job(b), &mut k),
                );
                return;
            }
        };
        let mut member = pool.try_recv().unwrap_or_default();
        member.resize(size, 0);
        if let Err(e) = raw.read_exact(&mut member) {
            let e = if e.kind() == io::ErrorKind::UnexpectedEof {
                io::Error::new(e.kind(), "the last gzip member is cut short")
            } else {
                e
            };
            send(Job::Failed(e), &mut k);
            return;
        }
        // An empty member (BGZF's end-of-file marker, say) has nothing to hand out: a
        // zero-length block would read as the end of the stream.
        if member[size - 4..] == [0, 0, 0, 0] {
            continue;
        }
        if !send(Job::Member(member), &mut k) {
            return;
        }
    }
}

/// A worker: inflates whole members (libdeflate, into a buffer of the member's exact
/// size) and checks their CRC.
fn inflate_members(
    jobs: &Receiver<Job>,
    out: &Sender<Block>,
    out_pool: &Receiver<Vec<u8>>,
    member_pool: &Sender<Vec<u8>>,
) {
    let mut inflater = libdeflater::Decompressor::new();
    while let Ok(job) = jobs.recv() {
        let block = match job {
            Job::Member(member) => {
                let block = inflate(&mut inflater, &member, out_pool);
                let _ = member_pool.try_send(member);
                block
            }
            Job::Ready(buf, len) => Ok((buf, len)),
            Job::Failed(e) => Err(e),
            Job::End => Ok((Vec::new(), 0)),
        };
        if out.send(block).is_err() {
            return;
        }
    }
}

fn inflate(
    inflater: &mut libdeflater::Decompressor,
    member: &[u8],
    pool: &Receiver<Vec<u8>>,
) -> Block {
    let bad = |why: &str| io::Error::new(io::ErrorKind::InvalidData, format!("gzip member: {why}"));
    let n = member.len();
    let header_len = 12 + usize::from(u16::from_le_bytes([member[10], member[11]]));
    // tracekit and BGZF members carry no file name or comment; anything else goes the
    // sequential way (the size field is only written by them).
    if member[3] & !0x04 != 0 || header_len + 8 > n {
        return Err(bad("unexpected header flags"));
    }
    let crc = u32::from_le_bytes([member[n - 8], member[n - 7], member[n - 6], member[n - 5]]);
    let isize =
        u32::from_le_bytes([member[n - 4], member[n - 3], member[n - 2], member[n - 1]]) as usize;
    let mut buf = pool.try_recv().unwrap_or_default();
    buf.resize(isize, 0);
    let got = inflater
        .deflate_decompress(&member[header_len..n - 8], &mut buf)
        .map_err(|e| bad(&e.to_string()))?;
    if got != isize {
        return Err(bad("the size in its trailer does not match"));
    }
    if crc32fast::hash(&buf[..got]) != crc {
        return Err(bad("CRC mismatch"));
    }
    Ok((buf, got))
}

/// Compressed bytes the stream splitter holds while looking for the next stream start;
/// a stream larger than this means a single-stream file, read sequentially from there.
const MAX_STREAM_CHUNK: usize = 4 << 20;

/// Where the next bzip2 or xz stream starts in `buf`, searching from `from`.
fn next_stream_start(codec: Compression, buf: &[u8], from: usize) -> Option<usize> {
    match codec {
        // "BZh" + block size '1'..'9' + the first block's magic 0x314159265359 ("1AY&SY").
        Compression::Bzip2 => (from..buf.len().saturating_sub(9)).find(|&i| {
            buf[i] == b'B'
                && buf[i + 1] == b'Z'
                && buf[i + 2] == b'h'
                && (b'1'..=b'9').contains(&buf[i + 3])
                && buf[i + 4..i + 10] == *b"1AY&SY"
        }),
        // The 6-byte magic, 2 flag bytes (first 0, second a check type 0-15) and the
        // CRC32 of those flags: 12 bytes that do not occur by chance.
        Compression::Xz => (from..buf.len().saturating_sub(11)).find(|&i| {
            buf[i..i + 6] == [0xfd, b'7', b'z', b'X', b'Z', 0]
                && buf[i + 6] == 0
                && buf[i + 7] < 16
                && crc32fast::hash(&buf[i + 6..i + 8]).to_le_bytes() == buf[i + 8..i + 12]
        }),
        _ => None,
    }
}

impl BlockStream {
    /// Parallel bzip2 / xz for multi-stream files (tracekit's own, pbzip2's): a splitter
    /// thread cuts the input at stream starts; `workers` threads decode whole streams
    /// (stream `i` on worker `i % workers`), taken in turn for order. A stream larger than
    /// 4 MiB compressed (a single-stream file) is decoded sequentially by the splitter.
    pub(crate) fn start_parallel_streams(
        raw: Box<dyn Read + Send>,
        codec: Compression,
        workers: usize,
    ) -> io::Result<BlockStream> {
        let workers = workers.max(1);
        let (out_pool_tx, _) = bounded::<Vec<u8>>(1);
        let mut ready = Vec::with_capacity(workers);
        let mut job_senders = Vec::with_capacity(workers);
        let mut threads = Vec::with_capacity(workers + 1);
        for k in 0..workers {
            let (job_tx, job_rx) = bounded::<Job>(2);
            let (out_tx, out_rx) = bounded::<Block>(2);
            threads.push(
                std::thread::Builder::new()
                    .name(format!("tracekit-{codec}-{k}"))
                    .spawn(move || decode_streams(codec, &job_rx, &out_tx))?,
            );
            job_senders.push(job_tx);
            ready.push(out_rx);
        }
        threads.push(
            std::thread::Builder::new()
                .name(format!("tracekit-{codec}-split"))
                .spawn(move || split_streams(raw, codec, &job_senders))?,
        );
        Ok(BlockStream {
            ready,
            next: 0,
            pool: out_pool_tx,
            threads,
        })
    }
}

/// The stream splitter; see [`BlockStream::start_parallel_streams`].
fn split_streams(mut raw: Box<dyn Read + Send>, codec: Compression, workers: &[Sender<Job>]) {
    let mut k = 0;
    let send = |job: Job, k: &mut usize| -> bool {
        let ok = workers[*k].send(job).is_ok();
        *k = (*k + 1) % workers.len();
        ok
    };
    let mut buf: Vec<u8> = Vec::with_capacity(2 * MAX_STREAM_CHUNK);
    let mut searched = 1; // the first stream starts at 0
    let mut eof = false;
    loop {
        // Hand out every complete stream found so far.
        while let Some(start) = next_stream_start(codec, &buf, searched.max(1)) {
            let rest = buf.split_off(start);
            let stream = std::mem::replace(&mut buf, rest);
            if !send(Job::Member(stream), &mut k) {
                return;
            }
            searched = 1;
        }
        searched = buf.len().saturating_sub(11).max(1);
        if eof {
            if !buf.is_empty() && !send(Job::Member(std::mem::take(&mut buf)), &mut k) {
                return;
            }
            send(Job::End, &mut k);
            return;
        }
        if buf.len() > MAX_STREAM_CHUNK {
            // One big stream: decode the rest here, in order.
            let rest = io::Cursor::new(std::mem::take(&mut buf)).chain(raw);
            let mut decoder: Box<dyn Read> = match codec {
                Compression::Bzip2 => Box::new(bzip2::read::MultiBzDecoder::new(rest)),
                _ => Box::new(liblzma::read::XzDecoder::new_multi_decoder(rest)),
            };
            drain(
                &mut *decoder,
                || Some(Vec::new()),
                |b| send(as_job(b), &mut k),
            );
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
                    let _ = send(Job::Member(std::mem::take(&mut buf)), &mut k);
                }
                send(Job::Failed(e), &mut k);
                return;
            }
        }
    }
}

/// A stream worker: decodes whole bzip2 / xz streams.
fn decode_streams(codec: Compression, jobs: &Receiver<Job>, out: &Sender<Block>) {
    while let Ok(job) = jobs.recv() {
        let block = match job {
            Job::Member(stream) => {
                let mut decoded = Vec::with_capacity(stream.len() * 4);
                let result = match codec {
                    Compression::Bzip2 => {
                        bzip2::read::MultiBzDecoder::new(&stream[..]).read_to_end(&mut decoded)
                    }
                    _ => liblzma::read::XzDecoder::new_multi_decoder(&stream[..])
                        .read_to_end(&mut decoded),
                };
                // An empty stream reads as the end: only an empty file has one (writers
                // put data in every stream of a longer file).
                result.map(|n| (decoded, n))
            }
            Job::Ready(buf, len) => Ok((buf, len)),
            Job::Failed(e) => Err(e),
            Job::End => Ok((Vec::new(), 0)),
        };
        if out.send(block).is_err() {
            return;
        }
    }
}
