//! bzip2 decoded block by block on several threads, for files made by plain `bzip2` (one
//! stream of many blocks) as well as multi-stream ones (pbzip2, lbzip2, tracekit).
//!
//! # The technique
//!
//! A bzip2 stream is `BZh` and a level digit, then blocks, each starting with the 48-bit
//! magic `0x314159265359` and its 32-bit CRC, then the 48-bit end-of-stream magic
//! `0x177245385090`, the stream's combined CRC and padding to a byte. Blocks are not
//! byte-aligned and carry no length, but each is independent of the others (its own
//! Burrows–Wheeler transform, Huffman tables and run-length state), so a splitter that
//! finds the magics can hand blocks to workers. This is what lbzip2 does (Laszlo Ersek's
//! parallel bzip2 utility: a bit-level search for the magic, blocks decoded independently,
//! output put back in order); the format itself is described in the bzip2 sources
//! (`decompress.c`) and in Joe Tsai's "bzip2 format specification".
//!
//! - **Splitter** ([`split`]): whatever its bit offset, a magic covers five whole bytes,
//!   so the scan looks at every fourth pair of bytes only, through a 64 Ki-entry table
//!   of the placements each pair can belong to, and verifies the rare hits against a
//!   64-bit window (1.7 ms per MB here; 4.8 ms looking at every pair). Every block
//!   magic found becomes a job: the compressed bytes from that block on, up to the most
//!   a block of the stream's level can take ([`max_block_bytes`]), or to the input's end.
//! - **Workers** ([`work`]): our own block decoder ([`crate::bzblock`], about 1.5 times
//!   as fast as libbz2 here; why, there) reads the block straight from the job's bytes
//!   and knows where it ends; its output streams out in [`DECOMPRESSED_BLOCK`] pieces
//!   and its CRC is checked at its end. A block it declines (a randomised one, or
//!   anything it finds invalid) goes to libbz2 (the `bzip2` crate's raw
//!   [`bzip2::Decompress`]), re-framed as a one-block stream: `BZh` + the level, then the
//!   block's bits shifted to byte alignment. libbz2 is first given no room for output:
//!   it then stops once it has read the block's whole Huffman-coded part (it produces
//!   nothing before), and as it reads its input a byte at a time, only when it needs
//!   more bits, the input it consumed says, to 8 bits, where the block ends. The
//!   output then comes with no more input given (so libbz2 cannot go on into the next
//!   block), and libbz2 checks the block CRC at its end. Either way a block or
//!   end-of-stream magic must follow the block.
//! - **False magics**: 48 bits can occur inside compressed data. A job is first given its
//!   bytes only up to the next magic found. If the decoder wants more, the block is longer
//!   (the magic in between was false) or damaged; the worker then waits until the blocks
//!   before it are settled, and goes on past the false magic only if its own start is a
//!   real block start; a job that starts at a false magic is dropped unread. So each
//!   input byte is decoded a small, fixed number of times at most (an eager look, then
//!   the real block's own decoder and libbz2 if it declines), however many magics a
//!   hostile file holds, and a join never reaches further than a block can be long.
//! - **Order** ([`Ledger`]): which jobs are real blocks is settled in job order: a job is
//!   a block if it starts where the previous block ended (or where the next stream's
//!   first block starts). The ledger also combines the block CRCs of each stream
//!   (`combined = rotl(combined, 1) ^ block_crc`) and checks them against the stream's,
//!   and it says what follows a stream (another stream, the end, trailing data). Pieces
//!   reach the reader through the workers' queues in job order ([`BlockStream`]).
//!
//! Damage: every block before a damaged one is delivered, then a [`Fault`] naming the
//! stream, the block and its compressed bit offset. A block whose data fails its CRC is
//! delivered as decoded (both decoders give libbz2's bytes), then the error, as on the
//! sequential path.
//!
//! Memory: per worker, its queued jobs (at most [`max_block_bytes`] each), a decoder's
//! state (4 bytes per block byte of the level) and a few output pieces; nothing a file
//! claims is used to size a buffer.
//!
//! A block longer than [`max_block_bytes`] compressed: no encoder writes one, but libbz2
//! accepts code-length tables padded with any number of +1/-1 steps, and so do `bzip2`
//! and `lbzip2`. Its fault says so ([`Fault::sequential_may_read`]); a reader of a
//! regular file then reads the file again on one thread from the start, leaving out
//! what it already delivered (`Input`), and any other reader reports the error. (A
//! damaged block that libbz2 reads on past that limit takes the same way: its error then
//! comes from the sequential decoder.)

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::{self, Read};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};

use crossbeam_channel::bounded;

use crate::bzblock::{BlockDecoder, BlockEnd, Reject};
use crate::decompress::{BlockStream, DECOMPRESSED_BLOCK, Fault, Piece};

/// The magic that starts a block ("1AY&SY", the digits of π in BCD).
const BLOCK_MAGIC: u64 = 0x3141_5926_5359;
/// The magic that ends a stream (the digits of √π).
const END_MAGIC: u64 = 0x1772_4538_5090;

/// Compressed bytes read at a time.
const READ_CHUNK: usize = 1 << 20;

/// Bytes past the next magic found that an eager first look at a block is given.
const PROBE_SLACK: usize = 8;

/// Jobs queued per worker's output and per worker's input.
const OUT_QUEUE: usize = 3;

/// The most compressed bytes a block of `level` (1-9) can take: at most `level` × 100 000
/// symbols of at most 20 bits each, plus its tables and selectors (under 40 000 bytes).
pub(crate) fn max_block_bytes(level: u8) -> usize {
    usize::from(level) * 250_000 + 40_000
}

/// Which magic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Magic {
    Block,
    End,
}

/// `n` (≤ 56) bits of `bytes` from bit `bit` on (bits counted from each byte's most
/// significant one), or `None` when the bytes end first.
fn bits(bytes: &[u8], bit: u64, n: u32) -> Option<u64> {
    let byte = usize::try_from(bit / 8).ok()?;
    let shift = (bit % 8) as u32;
    let need = (shift + n).div_ceil(8) as usize;
    let src = bytes.get(byte..byte.checked_add(need)?)?;
    let mut word = [0u8; 8];
    word[..need].copy_from_slice(src);
    Some((u64::from_be_bytes(word) << shift) >> (64 - n))
}

/// The magic that starts at bit `bit` of `bytes`, if any.
fn magic_at(bytes: &[u8], bit: u64) -> Option<Magic> {
    match bits(bytes, bit, 48)? {
        BLOCK_MAGIC => Some(Magic::Block),
        END_MAGIC => Some(Magic::End),
        _ => None,
    }
}

/// Bytes between the pairs the scan looks at.
const STRIDE: usize = 4;

/// For each pair of consecutive bytes, the placements of a magic that have those bytes
/// whole: bit `32 * kind + 4 * shift + d` (kind 0 the block magic, 1 the end-of-stream
/// one) when the magic starts `shift` bits into a byte `i` and the pair is at bytes
/// `i + 1 + d`, `i + 2 + d`. Whatever its shift, a magic covers the five whole bytes
/// `i + 1 ..= i + 5`, so looking at every [`STRIDE`]-th pair meets each placement once.
fn scan_table() -> &'static [u64] {
    static TABLE: OnceLock<Box<[u64]>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = vec![0u64; 1 << 16].into_boxed_slice();
        for (kind, magic) in [BLOCK_MAGIC, END_MAGIC].into_iter().enumerate() {
            for shift in 0..8 {
                for d in 0..STRIDE as u64 {
                    // Magic bits [8 - shift + 8 d, 24 - shift + 8 d) fall on the pair.
                    let key = ((magic >> (24 + shift - 8 * d)) & 0xffff) as usize;
                    table[key] |= 1 << (32 * kind as u64 + 4 * shift + d);
                }
            }
        }
        table
    })
}

/// Appends to `found` every magic that starts in `bytes[from..to]` (in bit order);
/// `base` is the compressed byte offset of `bytes[0]`.
fn scan(bytes: &[u8], from: usize, to: usize, base: u64, found: &mut VecDeque<(u64, Magic)>) {
    let table = scan_table();
    let first_new = found.len();
    // Pairs at from + 1, from + 1 + STRIDE, ... up to the last that a magic starting
    // before `to` can have whole.
    let mut j = from + 1;
    while j < to + STRIDE && j + 1 < bytes.len() {
        let hits = table[usize::from(bytes[j]) << 8 | usize::from(bytes[j + 1])];
        if hits != 0 {
            let mut bits_left = hits;
            while bits_left != 0 {
                let b = u64::from(bits_left.trailing_zeros());
                bits_left &= bits_left - 1;
                let (shift, d) = ((b % 32) / 4, (b % 4) as usize);
                let Some(byte) = j.checked_sub(1 + d) else {
                    continue;
                };
                if byte < from || byte >= to {
                    continue;
                }
                if let Some(magic) = magic_at(bytes, byte as u64 * 8 + shift) {
                    found.push_back(((base + byte as u64) * 8 + shift, magic));
                }
            }
        }
        j += STRIDE;
    }
    if found.len() - first_new > 1 {
        found.make_contiguous()[first_new..].sort_unstable_by_key(|f| f.0);
    }
}

/// What follows the end of a stream (or the start of the input), from a byte offset on.
#[derive(Debug)]
enum NextStream {
    /// A stream with blocks: the bit of its first block magic, its level, and how many
    /// empty streams came before it.
    Blocks { bit: u64, level: u8, empty: u64 },
    /// The input ends (after any empty streams).
    End,
    /// Bytes that do not start a bzip2 stream, at this byte offset: their first bytes in
    /// hex, and their length as far as it is known.
    Trailing {
        at: u64,
        empty: u64,
        preview: String,
        len: String,
    },
    /// A stream header at this byte offset, but the stream is damaged or cut short.
    Damaged {
        at: u64,
        empty: u64,
        why: &'static str,
    },
    /// More bytes are needed to tell.
    Short,
}

impl NextStream {
    /// The same, for `bytes` that start at compressed byte offset `base`.
    fn offset_by(self, base: u64) -> NextStream {
        match self {
            NextStream::Blocks { bit, level, empty } => NextStream::Blocks {
                bit: bit + base * 8,
                level,
                empty,
            },
            NextStream::Trailing {
                at,
                empty,
                preview,
                len,
            } => NextStream::Trailing {
                at: at + base,
                empty,
                preview,
                len,
            },
            NextStream::Damaged { at, empty, why } => NextStream::Damaged {
                at: at + base,
                empty,
                why,
            },
            other => other,
        }
    }
}

/// Reads what starts at byte `at` of `bytes` (the input's end when `at_eof`): stream
/// headers, skipping empty streams.
fn next_stream(bytes: &[u8], mut at: usize, at_eof: bool) -> NextStream {
    let mut empty = 0;
    loop {
        let head = bytes.get(at..).unwrap_or_default();
        if head.is_empty() {
            return match at_eof {
                true => NextStream::End,
                false => NextStream::Short,
            };
        }
        if head.len() < 4 && !at_eof {
            return NextStream::Short;
        }
        let level = match head {
            [b'B', b'Z', b'h', digit @ b'1'..=b'9', ..] => digit - b'0',
            _ => {
                let preview: Vec<String> =
                    head.iter().take(8).map(|b| format!("{b:02x}")).collect();
                let n = head.len();
                let len = match at_eof {
                    true => format!("{n} byte{}", if n == 1 { "" } else { "s" }),
                    false => format!("at least {n} bytes"),
                };
                return NextStream::Trailing {
                    at: at as u64,
                    empty,
                    preview: preview.join(" "),
                    len,
                };
            }
        };
        let first = (at as u64 + 4) * 8;
        match bits(bytes, first, 48) {
            None if !at_eof => return NextStream::Short,
            None => {
                return NextStream::Damaged {
                    at: at as u64,
                    empty,
                    why: "the input ends inside the stream header",
                };
            }
            Some(BLOCK_MAGIC) => {
                return NextStream::Blocks {
                    bit: first,
                    level,
                    empty,
                };
            }
            Some(END_MAGIC) => match bits(bytes, first + 48, 32) {
                None if !at_eof => return NextStream::Short,
                None => {
                    return NextStream::Damaged {
                        at: at as u64,
                        empty,
                        why: "the input ends inside the end-of-stream marker",
                    };
                }
                // An empty stream: its combined CRC is that of no blocks.
                Some(0) => {
                    empty += 1;
                    at += 14;
                }
                Some(_) => {
                    return NextStream::Damaged {
                        at: at as u64,
                        empty,
                        why: "an empty stream whose CRC is not 0",
                    };
                }
            },
            Some(_) => {
                return NextStream::Damaged {
                    at: at as u64,
                    empty,
                    why: "neither a block nor an end-of-stream marker follows the stream header",
                };
            }
        }
    }
}

/// Work for a worker, in job order.
pub(crate) enum BlockJob {
    /// A block candidate.
    Block(Block),
    /// The input failed here (a read error): every job before comes first.
    Failed(Fault),
    /// The end of the input, after this many block jobs.
    End(u64),
}

/// A place where a block magic was found, with the compressed bytes from there on.
pub(crate) struct Block {
    /// The job's number (0-based, in input order).
    number: u64,
    /// The compressed bit offset of the magic.
    start: u64,
    /// The input from byte `start / 8` on: up to [`max_block_bytes`] or its end.
    bytes: Vec<u8>,
    /// The level of the stream the block seems to be in.
    level: u8,
    /// How many of `bytes` reach just past the next magic found.
    next: usize,
    /// Whether `bytes` end where the input ends.
    at_eof: bool,
}

/// Where a block that the ledger accepted sits, for messages.
#[derive(Clone, Copy, Debug)]
struct Place {
    stream: u64,
    stream_at: u64,
    block: u64,
    bit: u64,
}

impl Place {
    fn fault(&self, why: impl std::fmt::Display) -> Fault {
        Fault::damaged(
            Some(self.stream),
            Some(self.stream_at),
            format!(
                "block {}, which starts at compressed bit offset {} (byte {}): {why}",
                self.block,
                self.bit,
                self.bit / 8
            ),
        )
    }
}

/// What a worker found out about its job before any output.
enum Probe {
    /// Not decoded: the job was known not to start a block.
    Skipped,
    /// The block does not decode.
    Bad(String),
    /// The block goes on past the most a block of its level can take: no encoder writes
    /// one, but libbz2 reads it (code-length tables padded with +1/-1 steps).
    TooLong(String),
    /// The block decodes: its stored CRC and what follows it.
    Decodes { crc: u32, after: After },
}

/// What follows a block that decodes.
enum After {
    /// Another block, at this compressed bit offset.
    Block(u64),
    /// The end of the stream, with the stream's stored CRC, then what comes next.
    Stream { stored: u32, next: NextStream },
    /// Neither: the block's output is good, then the input is damaged or cut.
    Broken(&'static str),
}

/// The ledger's judgement of a job.
enum Verdict {
    /// Not a block (a false magic inside one, or after the end).
    Skip,
    /// A block that does not decode: the error, instead of output.
    Fail(Fault),
    /// A block: decode it, then report `then` if set.
    Real { place: Place, then: Option<Fault> },
}

/// The settled state of the input, job by job (see the module documentation).
struct Book {
    abandoned: bool,
    begun: bool,
    /// Where the next block must start; `None` once the input is finished or failed.
    expected: Option<u64>,
    /// The next job to judge.
    judged: u64,
    entries: BTreeMap<u64, (u64, Probe)>,
    verdicts: HashMap<u64, Verdict>,
    stream: u64,
    stream_at: u64,
    block: u64,
    combined: u32,
}

/// The jobs' judge, shared by the splitter and the workers.
pub(crate) struct Ledger {
    book: Mutex<Book>,
    changed: Condvar,
}

impl Ledger {
    fn new() -> Ledger {
        Ledger {
            book: Mutex::new(Book {
                abandoned: false,
                begun: false,
                expected: None,
                judged: 0,
                entries: BTreeMap::new(),
                verdicts: HashMap::new(),
                stream: 0,
                stream_at: 0,
                block: 0,
                combined: 0,
            }),
            changed: Condvar::new(),
        }
    }

    fn book(&self) -> MutexGuard<'_, Book> {
        // A worker that panicked leaves the book as consistent as before its call.
        self.book.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The input's first block is at bit `bit`, in stream `stream` starting at `at`.
    fn begin(&self, bit: u64, stream: u64, at: u64) {
        let mut book = self.book();
        book.begun = true;
        book.expected = Some(bit);
        book.stream = stream;
        book.stream_at = at;
    }

    /// The reader is gone: every wait ends.
    fn abandon(&self) {
        self.book().abandoned = true;
        self.changed.notify_all();
    }

    fn abandoned(&self) -> bool {
        self.book().abandoned
    }

    /// Whether no further block can come (the input ended or failed).
    fn finished(&self) -> bool {
        let book = self.book();
        book.begun && book.expected.is_none()
    }

    /// Whether a job starting at `bit` is already known not to be a block.
    fn passed(&self, bit: u64) -> bool {
        let book = self.book();
        book.begun && book.expected.is_none_or(|x| x > bit)
    }

    /// Where the next block must start once every job before `job` is judged (`None`
    /// inside: no further block); `None` when the reader is gone.
    fn expected_before(&self, job: u64) -> Option<Option<u64>> {
        let mut book = self.book();
        while book.judged < job && !book.abandoned {
            book = self.changed.wait(book).unwrap_or_else(|e| e.into_inner());
        }
        (!book.abandoned).then_some(book.expected)
    }

    /// Records what job `job` (starting at bit `start`) found, judges every job it
    /// completes the sequence of, and waits for its own verdict (`None`: the reader is
    /// gone).
    fn record(&self, job: u64, start: u64, probe: Probe) -> Option<Verdict> {
        let mut book = self.book();
        book.entries.insert(job, (start, probe));
        let mut judged_any = false;
        loop {
            let next = book.judged;
            let Some((start, probe)) = book.entries.remove(&next) else {
                break;
            };
            let verdict = book.judge(start, probe);
            let n = book.judged;
            book.verdicts.insert(n, verdict);
            book.judged += 1;
            judged_any = true;
        }
        if judged_any {
            self.changed.notify_all();
        }
        loop {
            if let Some(v) = book.verdicts.remove(&job) {
                return Some(v);
            }
            if book.abandoned {
                return None;
            }
            book = self.changed.wait(book).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Book {
    fn judge(&mut self, start: u64, probe: Probe) -> Verdict {
        let Some(expected) = self.expected else {
            return Verdict::Skip;
        };
        if start < expected {
            return Verdict::Skip;
        }
        let place = Place {
            stream: self.stream,
            stream_at: self.stream_at,
            block: self.block + 1,
            bit: expected,
        };
        self.expected = None;
        if start > expected || matches!(probe, Probe::Skipped) {
            return Verdict::Fail(place.fault("no block magic where the previous block ends"));
        }
        self.block += 1;
        let (crc, after) = match probe {
            Probe::Skipped => unreachable!("handled above"),
            Probe::Bad(why) => return Verdict::Fail(place.fault(why)),
            Probe::TooLong(why) => {
                let mut fault = place.fault(why);
                fault.sequential_may_read = true;
                return Verdict::Fail(fault);
            }
            Probe::Decodes { crc, after } => (crc, after),
        };
        self.combined = self.combined.rotate_left(1) ^ crc;
        let then = match after {
            After::Block(bit) => {
                self.expected = Some(bit);
                None
            }
            After::Broken(why) => Some(place.fault(why)),
            After::Stream { stored, next } if stored != self.combined => {
                let _ = next;
                Some(Fault::damaged(
                    Some(self.stream),
                    Some(self.stream_at),
                    format!(
                        "the stream's CRC is {stored:08x}, but its {} blocks' CRCs combine to {:08x}",
                        self.block, self.combined
                    ),
                ))
            }
            After::Stream { next, .. } => match next {
                NextStream::Blocks { bit, empty, .. } => {
                    self.stream += 1 + empty;
                    self.stream_at = bit / 8 - 4;
                    self.block = 0;
                    self.combined = 0;
                    self.expected = Some(bit);
                    None
                }
                NextStream::End => None,
                NextStream::Trailing {
                    at,
                    empty,
                    preview,
                    len,
                } => {
                    let stream = self.stream + empty;
                    Some(Fault {
                        trailing: true,
                        sequential_may_read: false,
                        unit: Some(stream),
                        at: Some(at),
                        detail: format!(
                            "trailing data after stream {stream}, the last complete one: {len} \
                             at compressed byte offset {at} ({preview}), not a bzip2 stream; \
                             everything before it was read"
                        ),
                    })
                }
                NextStream::Damaged { at, empty, why } => {
                    Some(Fault::damaged(Some(self.stream + empty + 1), Some(at), why))
                }
                NextStream::Short => Some(place.fault("the input ends after the stream")),
            },
        };
        Verdict::Real { place, then }
    }
}

/// Appends to `out` bytes `from..to` of the bit string that starts `shift` bits into
/// `src` (a missing last byte counts as zeros).
fn append_shifted(out: &mut Vec<u8>, src: &[u8], shift: u32, from: usize, to: usize) {
    if from >= to {
        return;
    }
    if shift == 0 {
        out.extend_from_slice(&src[from..to]);
        return;
    }
    let whole = to.min(src.len().saturating_sub(1));
    if from < whole {
        out.extend(
            src[from..=whole]
                .windows(2)
                .map(|w| (w[0] << shift) | (w[1] >> (8 - shift))),
        );
    }
    for k in whole.max(from)..to {
        let hi = src.get(k).map_or(0, |b| b << shift);
        let lo = src.get(k + 1).map_or(0, |b| b >> (8 - shift));
        out.push(hi | lo);
    }
}

/// A worker's job, with our own block decoder (or, without, libbz2 alone); returns the
/// job's byte buffer for reuse.
pub(crate) fn work(
    job: BlockJob,
    ledger: &Ledger,
    own: Option<&mut BlockDecoder>,
    buffer: &mut dyn FnMut() -> Vec<u8>,
    emit: &mut dyn FnMut(Piece) -> bool,
) -> Option<Vec<u8>> {
    match job {
        BlockJob::Block(block) => {
            if !ledger.abandoned() && !decode_block(&block, ledger, own, buffer, emit) {
                ledger.abandon();
            }
            Some(block.bytes)
        }
        BlockJob::Failed(fault) => {
            emit(Piece::Failed(fault));
            None
        }
        BlockJob::End(jobs) => {
            match ledger.expected_before(jobs) {
                None => {}
                Some(None) => {
                    emit(Piece::End);
                }
                Some(Some(bit)) => {
                    let book = ledger.book();
                    let place = Place {
                        stream: book.stream,
                        stream_at: book.stream_at,
                        block: book.block + 1,
                        bit,
                    };
                    drop(book);
                    emit(Piece::Failed(
                        place.fault("the input ends before this block"),
                    ));
                }
            }
            None
        }
    }
}

/// How libbz2's complaint reads.
fn libbz2_says(e: bzip2::Error) -> String {
    match e {
        bzip2::Error::Data => "its compressed data is invalid".into(),
        other => format!("libbz2 rejects it ({other})"),
    }
}

/// How an error while a block's output comes reads.
fn block_error(e: bzip2::Error) -> String {
    match e {
        bzip2::Error::Data => "its data is damaged (it fails its CRC)".to_string(),
        other => libbz2_says(other),
    }
}

/// Decodes one block job (see the module documentation); `false` when the reader is gone.
fn decode_block(
    block: &Block,
    ledger: &Ledger,
    own: Option<&mut BlockDecoder>,
    buffer: &mut dyn FnMut() -> Vec<u8>,
    emit: &mut dyn FnMut(Piece) -> bool,
) -> bool {
    let skip = |ledger: &Ledger, emit: &mut dyn FnMut(Piece) -> bool| match ledger.record(
        block.number,
        block.start,
        Probe::Skipped,
    ) {
        Some(Verdict::Fail(fault)) => {
            emit(Piece::Failed(fault));
            true
        }
        Some(_) => emit(Piece::JobDone),
        None => false,
    };
    if ledger.passed(block.start) {
        return skip(ledger, emit);
    }
    let bytes = &block.bytes[..];
    // The fast path: our own decoder, on the bytes up to the next magic, then (if the
    // block is real) on all of them.
    let mut limit = block.next.min(bytes.len());
    let mut own = own;
    while let Some(own) = own.as_deref_mut() {
        match own.read(&bytes[..limit], block.start % 8, block.level) {
            Ok(end) => return decode_own(block, ledger, own, end, buffer, emit),
            Err(Reject::NeedMore) if limit < bytes.len() => {
                #[cfg(test)]
                tests::JOINS.with(|n| n.set(n.get() + 1));
                match ledger.expected_before(block.number) {
                    None => return false,
                    Some(expected) if expected != Some(block.start) => {
                        return skip(ledger, emit);
                    }
                    Some(_) => limit = bytes.len(),
                }
            }
            // Anything else is libbz2's to decode or to reject.
            Err(_) => break,
        }
    }
    #[cfg(test)]
    tests::LIBBZ2_BLOCKS.with(|n| n.set(n.get() + 1));
    let shift = (block.start % 8) as u32;
    // Re-framed bytes available from the first `n` input bytes: whole bytes only, except
    // at the input's end.
    let usable = |n: usize| {
        if shift == 0 || (n == bytes.len() && block.at_eof) {
            n
        } else {
            n.saturating_sub(1)
        }
    };
    let mut framed = Vec::with_capacity(block.next + 8);
    framed.extend_from_slice(&[b'B', b'Z', b'h', b'0' + block.level]);
    let mut covered = usable(block.next.min(bytes.len()));
    append_shifted(&mut framed, bytes, shift, 0, covered);
    let all = usable(bytes.len());

    let mut decoder = bzip2::Decompress::new(false);
    let mut out = fresh_block(buffer);
    // Output already taken while probing (0 or 1 byte), and an error libbz2 gave after it.
    let mut len = 0;
    let mut late_error = None;
    let probe = loop {
        let fed = decoder.total_in() as usize;
        // No room for output: libbz2 stops once the block's coded part is read, or when
        // the input runs out.
        match decoder.decompress(&framed[fed..], &mut []) {
            Err(e) => break Probe::Bad(libbz2_says(e)),
            Ok(bzip2::Status::StreamEnd) => {
                break Probe::Bad("it is an end-of-stream marker".into());
            }
            Ok(bzip2::Status::MemNeeded) => break Probe::Bad("libbz2 is out of memory".into()),
            Ok(_) => {}
        }
        let read = decoder.total_in();
        if (read as usize) < framed.len() {
            break ends(block, read);
        }
        // Every byte read: the block may end right there. One byte of room tells (and
        // no input, so that a one-byte block does not go on into the next).
        match decoder.decompress(&[], &mut out[..1]) {
            Err(e) if decoder.total_out() == 1 => {
                len = 1;
                late_error = Some(e);
                break ends(block, read);
            }
            Err(e) => break Probe::Bad(libbz2_says(e)),
            Ok(_) if decoder.total_out() == 1 => {
                len = 1;
                break ends(block, read);
            }
            Ok(_) => {}
        }
        if covered == all {
            break match block.at_eof {
                true => Probe::Bad("the input ends inside it".into()),
                false => Probe::TooLong(format!(
                    "it is longer than a level-{} block can be ({} bytes)",
                    block.level,
                    max_block_bytes(block.level)
                )),
            };
        }
        // Past the next magic: this block goes on (that magic was false) or is damaged.
        // Go on only if the block is real, i.e. starts where the one before ended.
        match ledger.expected_before(block.number) {
            None => return false,
            Some(expected) if expected != Some(block.start) => return skip(ledger, emit),
            Some(_) => {}
        }
        #[cfg(test)]
        tests::JOINS.with(|n| n.set(n.get() + 1));
        append_shifted(&mut framed, bytes, shift, covered, all);
        covered = all;
    };
    let place = match ledger.record(block.number, block.start, probe) {
        None => return false,
        Some(Verdict::Skip) => return emit(Piece::JobDone),
        Some(Verdict::Fail(fault)) => {
            emit(Piece::Failed(fault));
            return true;
        }
        Some(Verdict::Real { place, then }) => (place, then),
    };
    let (place, then) = place;
    // The block is real: its output, in pieces, then libbz2 checks its CRC.
    let mut output = BlockOutput {
        out,
        len,
        buffer,
        emit,
    };
    loop {
        if let Some(e) = late_error.take() {
            return output.fail(place.fault(block_error(e)));
        }
        let Some(room) = output.room() else {
            return false;
        };
        let before = decoder.total_out();
        if let Err(e) = decoder.decompress(&[], room) {
            return output.fail(place.fault(block_error(e)));
        }
        let got = (decoder.total_out() - before) as usize;
        if got == 0 {
            break;
        }
        output.len += got;
    }
    output.finish(then)
}

/// A real block's output on its way out, in pieces of [`DECOMPRESSED_BLOCK`] bytes.
struct BlockOutput<'a> {
    out: Vec<u8>,
    /// Bytes of `out` written.
    len: usize,
    buffer: &'a mut dyn FnMut() -> Vec<u8>,
    emit: &'a mut dyn FnMut(Piece) -> bool,
}

impl BlockOutput<'_> {
    /// Room for more output, after handing on a full piece; `None` when the reader has
    /// gone.
    fn room(&mut self) -> Option<&mut [u8]> {
        if self.len == self.out.len() {
            if !(self.emit)(Piece::Data(std::mem::take(&mut self.out), self.len)) {
                return None;
            }
            self.out = fresh_block(self.buffer);
            self.len = 0;
        }
        Some(&mut self.out[self.len..])
    }

    /// Hands on what was decoded, then `fault`; false when the reader has gone.
    fn fail(self, fault: Fault) -> bool {
        if self.len > 0 && !(self.emit)(Piece::Data(self.out, self.len)) {
            return false;
        }
        (self.emit)(Piece::Failed(fault));
        true
    }

    /// Hands on what was decoded, then the end of the job, or the fault that the ledger
    /// found after the block (`then`).
    fn finish(self, then: Option<Fault>) -> bool {
        if self.len > 0 && !(self.emit)(Piece::Data(self.out, self.len)) {
            return false;
        }
        match then {
            Some(fault) => {
                (self.emit)(Piece::Failed(fault));
                true
            }
            None => (self.emit)(Piece::JobDone),
        }
    }
}

/// A recycled buffer of at least [`DECOMPRESSED_BLOCK`] bytes.
fn fresh_block(buffer: &mut dyn FnMut() -> Vec<u8>) -> Vec<u8> {
    let mut out = buffer();
    if out.len() < DECOMPRESSED_BLOCK {
        out.resize(DECOMPRESSED_BLOCK, 0);
    }
    out
}

/// A block our own decoder read: its verdict, then its output.
fn decode_own(
    block: &Block,
    ledger: &Ledger,
    own: &mut BlockDecoder,
    end: BlockEnd,
    buffer: &mut dyn FnMut() -> Vec<u8>,
    emit: &mut dyn FnMut(Piece) -> bool,
) -> bool {
    let probe = ends_within(block, end.end..=end.end);
    let (place, then) = match ledger.record(block.number, block.start, probe) {
        None => return false,
        Some(Verdict::Skip) => return emit(Piece::JobDone),
        Some(Verdict::Fail(fault)) => {
            emit(Piece::Failed(fault));
            return true;
        }
        Some(Verdict::Real { place, then }) => (place, then),
    };
    let mut output = BlockOutput {
        out: fresh_block(buffer),
        len: 0,
        buffer,
        emit,
    };
    loop {
        let Some(room) = output.room() else {
            return false;
        };
        match own.fill(room) {
            Ok(0) => break,
            Ok(got) => output.len += got,
            Err(_) => return output.fail(place.fault(block_error(bzip2::Error::Data))),
        }
    }
    output.finish(then)
}

/// After the decoder read the block's coded part, having consumed `total_in` re-framed
/// bytes: where the block ends and what follows it.
fn ends(block: &Block, total_in: u64) -> Probe {
    // The decoder has read through the block's last bit, which lies in its last input
    // byte: the block ends at re-framed bit (8 (total_in - 1), 8 total_in]; the re-framed
    // stream has 32 header bits before the block's first.
    let last = (total_in * 8 + block.start % 8).saturating_sub(32);
    ends_within(block, last.saturating_sub(7)..=last)
}

/// Where the block ends, at one of the job-relative bits `ends` (the first that starts
/// a magic), and what follows it.
fn ends_within(block: &Block, ends: std::ops::RangeInclusive<u64>) -> Probe {
    let bytes = &block.bytes[..];
    let shift = block.start % 8;
    let Some(crc) = bits(bytes, shift + 48, 32) else {
        return Probe::Bad("the input ends inside its header".into());
    };
    let crc = crc as u32;
    let mut cut_short = false;
    for rel in ends {
        match magic_at(bytes, rel) {
            Some(Magic::Block) => {
                return Probe::Decodes {
                    crc,
                    after: After::Block(block.start - shift + rel),
                };
            }
            Some(Magic::End) => {
                let after = match bits(bytes, rel + 48, 32) {
                    None => After::Broken("the input ends inside the end-of-stream marker"),
                    Some(stored) => {
                        let next = (rel + 80).div_ceil(8) as usize;
                        match next_stream(bytes, next, block.at_eof) {
                            NextStream::Short => After::Broken("the input ends after the stream"),
                            found => After::Stream {
                                stored: stored as u32,
                                next: found.offset_by(block.start / 8),
                            },
                        }
                    }
                };
                return Probe::Decodes { crc, after };
            }
            None => cut_short |= bits(bytes, rel, 48).is_none(),
        }
    }
    Probe::Decodes {
        crc,
        after: After::Broken(match cut_short && block.at_eof {
            true => "the input ends after it, inside the next marker",
            false => "neither a block nor an end-of-stream marker follows it",
        }),
    }
}

/// The splitter: finds the magics in `raw` and deals a job for each block magic, then
/// [`BlockJob::End`]. Stops when `deal` says no.
fn split(
    raw: Box<dyn Read + Send + '_>,
    ledger: &Ledger,
    deal: &mut dyn FnMut(BlockJob) -> bool,
    job_bytes: &mut dyn FnMut() -> Vec<u8>,
) {
    split_with(raw, ledger, deal, job_bytes, &[]);
}

/// [`split`], taking the bit offsets in `false_magics` for block magics too (the tests'
/// way to put false magics where a real file would have them only by rare chance).
fn split_with(
    mut raw: Box<dyn Read + Send + '_>,
    ledger: &Ledger,
    deal: &mut dyn FnMut(BlockJob) -> bool,
    job_bytes: &mut dyn FnMut() -> Vec<u8>,
    false_magics: &[u64],
) {
    let mut buf: Vec<u8> = Vec::new();
    // Compressed byte offset of `buf[0]`; bytes of `buf` scanned for magic starts.
    let mut base = 0u64;
    let mut scanned = 0usize;
    let mut eof = false;
    let mut found: VecDeque<(u64, Magic)> = VecDeque::new();
    let mut jobs = 0u64;
    let mut level = 9u8;
    let mut read_more = |buf: &mut Vec<u8>, eof: &mut bool| -> io::Result<()> {
        let old = buf.len();
        buf.resize(old + READ_CHUNK, 0);
        loop {
            match raw.read(&mut buf[old..]) {
                Ok(0) => {
                    *eof = true;
                    buf.truncate(old);
                }
                Ok(n) => buf.truncate(old + n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    buf.truncate(old);
                    return Err(e);
                }
            }
            return Ok(());
        }
    };
    // The first stream (after any empty ones).
    loop {
        if let Err(e) = read_more(&mut buf, &mut eof) {
            deal(BlockJob::Failed(Fault::damaged(None, Some(0), e)));
            return;
        }
        let head_ok = buf.len() < 4 && !eof
            || matches!(buf[..], [b'B', b'Z', b'h', b'1'..=b'9', ..])
            || buf.is_empty();
        if !head_ok {
            deal(BlockJob::Failed(Fault::damaged(
                None,
                Some(0),
                "the input does not start with a bzip2 header",
            )));
            return;
        }
        match next_stream(&buf, 0, eof) {
            NextStream::Short => continue,
            NextStream::Blocks { bit, empty, .. } => {
                ledger.begin(bit, empty + 1, bit / 8 - 4);
                break;
            }
            NextStream::End => {
                deal(BlockJob::End(0));
                return;
            }
            NextStream::Trailing {
                at,
                empty,
                preview,
                len,
            } => {
                deal(BlockJob::Failed(Fault {
                    trailing: true,
                    sequential_may_read: false,
                    unit: Some(empty),
                    at: Some(at),
                    detail: format!(
                        "trailing data after stream {empty}, the last complete one: {len} at \
                         compressed byte offset {at} ({preview}), not a bzip2 stream; \
                         everything before it was read"
                    ),
                }));
                return;
            }
            NextStream::Damaged { at, empty, why } => {
                deal(BlockJob::Failed(Fault::damaged(
                    Some(empty + 1),
                    Some(at),
                    why,
                )));
                return;
            }
        }
    }
    loop {
        // Scan what is new (a magic needs 7 bytes from its first).
        let limit = if eof {
            buf.len()
        } else {
            buf.len().saturating_sub(7)
        };
        let first_new = found.len();
        scan(&buf, scanned, limit, base, &mut found);
        let range = (base + scanned as u64) * 8..(base + limit as u64) * 8;
        let extra = false_magics.iter().filter(|b| range.contains(b));
        if extra.clone().next().is_some() {
            found.extend(extra.map(|&b| (b, Magic::Block)));
            found.make_contiguous()[first_new..].sort_unstable_by_key(|f| f.0);
        }
        scanned = scanned.max(limit);
        // Deal every block whose bytes are all here.
        while let Some(&(bit, magic)) = found.front() {
            if magic == Magic::End {
                found.pop_front();
                continue;
            }
            let rel = (bit / 8 - base) as usize;
            if bit % 8 == 0
                && let Some([b'B', b'Z', b'h', digit @ b'1'..=b'9']) =
                    rel.checked_sub(4).and_then(|h| buf.get(h..rel))
            {
                level = digit - b'0';
            }
            let end = rel + max_block_bytes(level);
            if end > buf.len() && !eof {
                break;
            }
            if ledger.finished() || ledger.abandoned() {
                deal(BlockJob::End(jobs));
                return;
            }
            let end = end.min(buf.len());
            let next = found.get(1).map_or(end - rel, |&(after, _)| {
                ((after - bit / 8 * 8).div_ceil(8) as usize + PROBE_SLACK).min(end - rel)
            });
            let mut bytes = job_bytes();
            bytes.clear();
            bytes.extend_from_slice(&buf[rel..end]);
            let job = Block {
                number: jobs,
                start: bit,
                bytes,
                level,
                next,
                at_eof: eof && end == buf.len(),
            };
            if !deal(BlockJob::Block(job)) {
                return;
            }
            jobs += 1;
            found.pop_front();
        }
        if eof {
            deal(BlockJob::End(jobs));
            return;
        }
        // Drop what no job needs any more (keeping a stream header before a magic).
        let keep = found
            .front()
            .map_or(scanned, |&(bit, _)| {
                ((bit / 8 - base) as usize).min(scanned)
            })
            .saturating_sub(4);
        if keep > buf.len() / 2 {
            buf.drain(..keep);
            base += keep as u64;
            scanned -= keep;
        }
        if let Err(e) = read_more(&mut buf, &mut eof) {
            let at = base + buf.len() as u64;
            deal(BlockJob::Failed(Fault::damaged(None, Some(at), e)));
            return;
        }
    }
}

/// Parallel bzip2: a splitter thread finds the blocks, `workers` threads decode them.
pub(crate) fn start(raw: Box<dyn Read + Send>, workers: usize) -> io::Result<BlockStream> {
    let workers = workers.max(1);
    let ledger = Arc::new(Ledger::new());
    let (pool_tx, pool_rx) = bounded::<Vec<u8>>(3 * workers + 2);
    let worker_ledger = Arc::clone(&ledger);
    let mut own = LazyDecoder(None);
    BlockStream::start_split(
        "tracekit-bzip2",
        workers,
        OUT_QUEUE,
        move |job, buffer, emit| {
            let own = own.get();
            if let Some(bytes) = work(job, &worker_ledger, Some(own), buffer, emit) {
                let _ = pool_tx.try_send(bytes);
            }
        },
        move |deal| {
            split(raw, &ledger, deal, &mut || {
                pool_rx.try_recv().unwrap_or_default()
            });
        },
    )
}

/// A worker's block decoder, made on its first job (each worker clones the empty one).
struct LazyDecoder(Option<BlockDecoder>);

impl LazyDecoder {
    fn get(&mut self) -> &mut BlockDecoder {
        self.0.get_or_insert_with(BlockDecoder::new)
    }
}

impl Clone for LazyDecoder {
    fn clone(&self) -> LazyDecoder {
        LazyDecoder(None)
    }
}

/// The same on the calling thread: each job runs as it is dealt (see
/// [`crate::decompress_here`]); stops when `stopped` says so.
pub(crate) fn decompress_here(
    raw: Box<dyn Read + Send + '_>,
    buffer: &mut dyn FnMut() -> Vec<u8>,
    emit: &mut dyn FnMut(Piece) -> bool,
    stopped: &dyn Fn() -> bool,
) {
    let ledger = Ledger::new();
    let spare = std::cell::RefCell::new(Vec::new());
    let mut own = BlockDecoder::new();
    split(
        raw,
        &ledger,
        &mut |job| {
            if let Some(bytes) = work(job, &ledger, Some(&mut own), buffer, emit) {
                *spare.borrow_mut() = bytes;
            }
            !stopped()
        },
        &mut || std::mem::take(&mut *spare.borrow_mut()),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::io::Write;

    thread_local! {
        /// Blocks decoded past the first magic after them (see `decode_block`), on
        /// this thread.
        pub(super) static JOINS: Cell<usize> = const { Cell::new(0) };
        /// Blocks libbz2 decoded, on this thread.
        pub(super) static LIBBZ2_BLOCKS: Cell<usize> = const { Cell::new(0) };
    }

    fn count(counter: &'static std::thread::LocalKey<Cell<usize>>) -> usize {
        counter.with(Cell::get)
    }

    /// Data that compresses like a trace: repeated headers with varying fields, runs of
    /// zeros, some noise.
    fn trace_like(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        let mut out = Vec::with_capacity(len);
        while out.len() < len {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let kind = x % 4;
            match kind {
                0 => out.extend_from_slice(&[0u8; 37][..(x >> 8) as usize % 37]),
                1 => out.extend_from_slice(b"\x45\x00\x05\xdc\x1c\x46\x40\x00\x40\x06"),
                _ => out.extend_from_slice(&x.to_le_bytes()[..(x >> 20) as usize % 8]),
            }
        }
        out.truncate(len);
        out
    }

    fn bz(data: &[u8], level: u32) -> Vec<u8> {
        let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(level));
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    /// Runs the splitter and the workers on this thread, with our block decoder and with
    /// libbz2 alone: the output and the error (which must be the same both ways).
    fn here(packed: &[u8], false_magics: &[u64]) -> (Vec<u8>, Option<Fault>) {
        let (out, err) = here_with(packed, false_magics, true);
        let (lib_out, lib_err) = here_with(packed, false_magics, false);
        assert!(
            out == lib_out,
            "own decoder {} bytes, libbz2 {}",
            out.len(),
            lib_out.len()
        );
        assert_eq!(
            err.as_ref().map(|e| e.to_string()),
            lib_err.as_ref().map(|e| e.to_string())
        );
        (out, err)
    }

    fn here_with(packed: &[u8], false_magics: &[u64], use_own: bool) -> (Vec<u8>, Option<Fault>) {
        let ledger = Ledger::new();
        let mut out = Vec::new();
        let mut failure = None;
        let mut ended = false;
        let mut emit = |piece: Piece| match piece {
            Piece::Data(buf, len) => {
                out.extend_from_slice(&buf[..len]);
                true
            }
            Piece::JobDone => true,
            Piece::End => {
                ended = true;
                false
            }
            Piece::Failed(f) => {
                failure = Some(f);
                false
            }
        };
        let mut go_on = true;
        let mut own = BlockDecoder::new();
        split_with(
            Box::new(packed),
            &ledger,
            &mut |job| {
                let own = use_own.then_some(&mut own);
                work(job, &ledger, own, &mut Vec::new, &mut |p| {
                    go_on = emit(p);
                    go_on
                });
                go_on
            },
            &mut Vec::new,
            false_magics,
        );
        assert!(ended || failure.is_some(), "ended or failed");
        (out, failure)
    }

    /// The bit offsets of every block magic in `packed`.
    fn magics(packed: &[u8]) -> Vec<u64> {
        let mut found = VecDeque::new();
        scan(packed, 0, packed.len(), 0, &mut found);
        found
            .into_iter()
            .filter(|f| f.1 == Magic::Block)
            .map(|f| f.0)
            .collect()
    }

    #[test]
    fn scan_finds_magics_at_every_bit_offset() {
        for at in 0..64u64 {
            for (magic, kind) in [(BLOCK_MAGIC, Magic::Block), (END_MAGIC, Magic::End)] {
                // 48 bits of magic at bit `at` of 16 bytes of 0xa5 around it.
                let mut bytes = vec![0xa5u8; 16];
                for i in 0..48 {
                    let bit = (magic >> (47 - i)) & 1;
                    let pos = at + i;
                    let byte = &mut bytes[(pos / 8) as usize];
                    let mask = 0x80 >> (pos % 8);
                    *byte = if bit == 1 {
                        *byte | mask
                    } else {
                        *byte & !mask
                    };
                }
                // Scanned whole, and in two pieces cut anywhere.
                for cut in 0..=bytes.len() {
                    let mut found = VecDeque::new();
                    scan(&bytes, 0, cut, 100, &mut found);
                    scan(&bytes, cut, bytes.len(), 100, &mut found);
                    assert_eq!(
                        found.into_iter().collect::<Vec<_>>(),
                        vec![(800 + at, kind)],
                        "magic at bit {at}, cut at byte {cut}"
                    );
                }
            }
        }
    }

    #[test]
    fn blocks_decode_as_libbz2_does() {
        for level in [1, 5, 9] {
            let data = trace_like(350_000 * level as usize + 12_345, u64::from(level));
            let packed = bz(&data, level);
            assert!(
                magics(&packed).len() >= 3,
                "several blocks at level {level}"
            );
            let (out, err) = here(&packed, &[]);
            assert!(err.is_none(), "{err:?}");
            assert!(out == data, "level {level}");
        }
    }

    #[test]
    fn false_magics_are_joined_over_and_skipped() {
        let data = trace_like(1_000_000, 7);
        let packed = bz(&data, 1);
        let real = magics(&packed);
        assert!(real.len() >= 5);
        // False magics inside blocks: just after a real one, in the middle, near the end.
        let mut fakes = Vec::new();
        for pair in real.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            fakes.extend([a + 81, a + (b - a) / 2 + 3, b - 9]);
        }
        let joins = count(&JOINS);
        let (out, err) = here(&packed, &fakes);
        assert!(err.is_none(), "{err:?}");
        assert!(out == data);
        // Each real block but the last was decoded past a false magic, both ways.
        assert!(count(&JOINS) >= joins + 2 * (real.len() - 1));
    }

    #[test]
    fn several_streams_and_empty_ones_decode() {
        let a = trace_like(250_000, 1);
        let b = trace_like(120_000, 2);
        let mut packed = bz(&a, 1);
        packed.extend(bz(b"", 9));
        packed.extend(bz(&b, 2));
        packed.extend(bz(b"", 3));
        let (out, err) = here(&packed, &[]);
        assert!(err.is_none(), "{err:?}");
        assert!(out == [a, b].concat());
        assert_eq!(here(&bz(b"", 9), &[]).0.len(), 0);
        assert!(here(b"", &[]).1.is_none());
    }

    #[test]
    fn a_cut_delivers_the_blocks_before_it() {
        let data = trace_like(700_000, 3);
        let packed = bz(&data, 1);
        let real = magics(&packed);
        // Cut inside the fourth block: the first three come out, then the error.
        let cut = (real[3] / 8 + 1000) as usize;
        let (out, err) = here(&packed[..cut], &[]);
        let err = err.expect("a cut stream fails");
        assert!(err.detail.contains("block 4"), "{}", err.detail);
        assert!(err.detail.contains("ends inside it"), "{}", err.detail);
        assert!(
            out.len() >= 300_000 && data.starts_with(&out),
            "{}",
            out.len()
        );
        // A flipped bit in the third block: the first two come out.
        let mut bad = packed.clone();
        bad[(real[2] / 8 + 5000) as usize] ^= 0x10;
        let (out, err) = here(&bad, &[]);
        assert!(err.is_some());
        assert!(out.len() >= 199_000 && out[..199_000] == data[..199_000]);
    }

    #[test]
    fn trailing_data_and_stream_crc_are_checked() {
        let data = trace_like(150_000, 4);
        let mut packed = bz(&data, 1);
        packed.extend_from_slice(b"garbage!");
        let (out, err) = here(&packed, &[]);
        assert!(out == data);
        let err = err.unwrap();
        assert!(
            err.trailing && err.detail.contains("8 bytes"),
            "{}",
            err.detail
        );
        // The stored combined CRC is the 32 bits after the end magic.
        let mut packed = bz(&data, 1);
        let n = packed.len();
        let ends: Vec<_> = {
            let mut f = VecDeque::new();
            scan(&packed, 0, n, 0, &mut f);
            f.into_iter().filter(|f| f.1 == Magic::End).collect()
        };
        let crc_bit = ends[0].0 + 48 + 7;
        packed[(crc_bit / 8) as usize] ^= 0x80 >> (crc_bit % 8);
        let (out, err) = here(&packed, &[]);
        assert!(out == data);
        assert!(err.unwrap().detail.contains("combine to"));
    }

    /// Reads `packed` with the threaded reader and `threads` workers.
    fn threaded(packed: &[u8], threads: usize) -> (Vec<u8>, Option<String>) {
        let raw = crate::Input::from_reader(io::Cursor::new(packed.to_vec()));
        let mut input =
            crate::Input::decompress_with(raw, crate::Compression::Bzip2, threads).unwrap();
        let mut out = Vec::new();
        loop {
            match input.fill(1) {
                Ok(0) => return (out, None),
                Ok(have) => {
                    out.extend_from_slice(&input.available()[..have]);
                    input.consume(have);
                }
                Err(e) => return (out, Some(e.to_string())),
            }
        }
    }

    #[test]
    fn random_block_and_stream_boundaries_with_false_magics() {
        use proptest::prelude::*;
        use proptest::test_runner::{Config, TestRunner};
        let mut runner = TestRunner::new(Config::with_cases(12));
        let case = (
            prop::collection::vec((0usize..260_000, 1u32..=3), 1..4),
            any::<u64>(),
            prop::collection::vec(0.0f64..1.0, 0..6),
            2usize..4,
        );
        runner
            .run(&case, |(streams, seed, fake_at, threads)| {
                // Streams of random sizes and levels: blocks end wherever the sizes fall.
                let mut data = Vec::new();
                let mut packed = Vec::new();
                for (i, (len, level)) in streams.iter().enumerate() {
                    let part = trace_like(*len, seed ^ i as u64);
                    packed.extend(bz(&part, *level));
                    data.extend(part);
                }
                // False magics anywhere in the compressed bits after the first block's.
                let bits = packed.len() as u64 * 8;
                let fakes: Vec<u64> = fake_at
                    .iter()
                    .map(|f| 80 + (f * (bits - 160) as f64) as u64)
                    .collect();
                let (out, err) = here(&packed, &fakes);
                prop_assert!(err.is_none(), "{:?}", err);
                prop_assert!(out == data);
                let (out, err) = threaded(&packed, threads);
                prop_assert!(err.is_none(), "{:?}", err);
                prop_assert!(out == data);
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn damage_anywhere_gives_what_libbz2_gives() {
        use proptest::prelude::*;
        use proptest::test_runner::{Config, TestRunner};
        let data = trace_like(260_000, 11);
        let packed = bz(&data, 1);
        let mut runner = TestRunner::new(Config::with_cases(48));
        let case = (
            prop::collection::vec((0.0f64..1.0, 0u8..8), 1..4),
            prop::option::of(0.0f64..1.0),
        );
        runner
            .run(&case, |(flips, cut)| {
                let mut bad = packed.clone();
                for (at, bit) in flips {
                    let i = ((at * bad.len() as f64) as usize).min(bad.len() - 1);
                    bad[i] ^= 1 << bit;
                }
                if let Some(cut) = cut {
                    bad.truncate((cut * bad.len() as f64) as usize);
                }
                // `here` compares our decoder with libbz2 (the same bytes, the same
                // error); the sequential reader's output is a start of it or the reverse.
                let (out, _) = here(&bad, &[]);
                let mut seq = Vec::new();
                let _ = crate::decompress_here(&bad[..], crate::Compression::Bzip2, false, |b| {
                    seq.extend_from_slice(b);
                    true
                });
                let common = out.len().min(seq.len());
                prop_assert!(out[..common] == seq[..common]);
                Ok(())
            })
            .unwrap();
    }
}
