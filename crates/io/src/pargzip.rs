//! Parallel decompression of ordinary gzip files: one member made by `gzip`, or several
//! concatenated ones, with no size field to split them by.
//!
//! # The technique
//!
//! This is the two-stage scheme of rapidgzip (M. Knespel and H. Brunst, "Rapidgzip:
//! Parallel Decompression and Seeking in Gzip Files Using Cache Prefetching", HPDC 2023),
//! written anew for tracekit:
//!
//! 1. The compressed input is cut into chunks of a fixed size (a few MiB). A worker takes
//!    chunk `k` (with the chunk after it, to finish its last block) and searches from its
//!    first bit for the first bit where a deflate block plausibly starts: a non-final
//!    dynamic block whose header passes a table over its first 13 bits (BFINAL, BTYPE,
//!    HLIT ≤ 29, HDIST ≤ 29), a complete code-length code, then literal/length and
//!    distance codes that RFC 1951 allows with an end-of-block code; or a non-final stored
//!    block with zero padding and a length that matches its complement
//!    (`inflate::find_block`).
//! 2. From there it decodes without knowing the 32 KiB window: back-references into the
//!    unknown window copy *markers* (16-bit values of 256 and up, each naming a window
//!    position). It stops at the first findable block start at or after the next chunk's
//!    first bit. A candidate start that does not decode is skipped and the search goes on.
//!    The worker decodes its chunk as two halves side by side on its one thread: the
//!    first from the start found up to the first findable block start at or after the
//!    chunk's middle bit, the second from that block start (found by a second search)
//!    to the chunk's end, a step of one and then of the other
//!    (`inflate::run_pair`). A deflate decoder spends most of its time waiting on a chain
//!    of table look-ups, each one's index being the bits the one before left; two
//!    independent chains let the core overlap them (T6: 438 -> 388 ms on 2 workers).
//!    The second half is accepted, as between chunks, only if the first stopped exactly
//!    where it started; its markers then name the first half's last 32 KiB and are
//!    renamed to what those hold. Otherwise the first half goes on alone. Without a
//!    second block start (small chunks, stored data), or once a member ends, one
//!    stretch is decoded as before, going on in bytes as soon as the last 32 KiB of its
//!    output hold no marker.
//! 3. A sequencing thread takes the chunks in order. Chunk `k + 1` is accepted only if it
//!    started exactly where chunk `k` stopped (a false block start found by the search
//!    cannot pass); then its markers are replaced from chunk `k`'s last 32 KiB and its
//!    bytes go out. Otherwise (no start found, a false start, a decoding error, output
//!    over the cap of [`Config::max_output`]) the sequencer decodes that chunk itself,
//!    from where the previous one verifiably ended, with the known window, in bounded
//!    blocks. Only the hand-down of windows and of the sequential fall-backs is serial.
//! 4. Every member's CRC-32 and ISIZE are checked: workers hash the bytes they decode
//!    (per member piece), the sequencer hashes resolved markers and joins the pieces with
//!    `crc32fast`'s `combine`. A chunk that reaches the end of a member reads its trailer
//!    and the next member's header and goes on, so concatenated gzip files and pigz
//!    output decode in parallel too.
//!
//! Damage is reported as by the sequential reader: every byte decoded before the damage,
//! then the error, with the member and its compressed offset.
//!
//! We wrote our own deflate decoder (the crate's `inflate` module) because no deflate crate can
//! start decoding with an unknown window; it also decodes the known-window parts, so that
//! a chunk is decoded by one loop from its start to its end. rapidgzip hands a chunk over
//! to zlib once its last 32 KiB hold no marker; we do not, because on packet traces that
//! point rarely comes: header fields that never change (addresses, ports, pcap record
//! heads) are copied from copy to copy, so a marker from the chunk's first window lives
//! on to its end (on a generated 400,000-packet trace every chunk ended with markers).
//! Nor would it pay where the window is known: in `benches/inflate.rs` (the corpus pcaps
//! repeated to 24 MB, level 6, one run) this decoder's byte output inflates at 450 MiB/s
//! and its marker output at 443 MiB/s, zlib-rs (through flate2) at 460 MiB/s.
//!
//! ```
//! use tracekit_io::pargzip::{Config, gunzip_parallel};
//! let mut packed = Vec::new();
//! let mut w = flate2::write::GzEncoder::new(&mut packed, flate2::Compression::default());
//! std::io::Write::write_all(&mut w, &b"a packet, another packet ".repeat(40_000)).unwrap();
//! w.finish().unwrap();
//! // Chunks of 4 KiB on 2 workers: many speculative starts, all verified.
//! let mut text = Vec::new();
//! gunzip_parallel(std::io::Cursor::new(packed), Config::with_chunk(2, 4096), |block| {
//!     text.extend_from_slice(block);
//!     true
//! })
//! .unwrap();
//! assert_eq!(text.len(), 25 * 40_000);
//! ```

use std::io::{self, Read};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, bounded};

use crate::decompress::{BlockStream, DECOMPRESSED_BLOCK, Fault, Piece};
use crate::inflate::{
    History, InflateError, Inflater, Lane, OVERSHOOT, Side, Stop, Symbol, WINDOW, marker_window,
    run_pair,
};
use crate::mmap::GuardedMap;

/// Compressed bytes per chunk by default.
pub const DEFAULT_CHUNK: usize = 2 << 20;

/// The smallest compressed input (when its size is known) that [`crate::Input`] decodes
/// in parallel: below two chunks there is little to share out.
pub const MIN_PARALLEL_INPUT: u64 = 2 * DEFAULT_CHUNK as u64;

/// Tuning of the parallel gzip reader.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// Compressed bytes per chunk (at least 1 KiB).
    pub chunk: usize,
    /// Decoding threads.
    pub workers: usize,
    /// The most output a worker decodes for one chunk; a chunk that inflates further
    /// (deflate expands up to 1032:1) is decoded by the sequencer in bounded blocks.
    pub max_output: usize,
}

impl Config {
    /// The default chunk size and output cap for `workers` threads.
    pub fn new(workers: usize) -> Config {
        Config::with_chunk(workers, DEFAULT_CHUNK)
    }

    /// `workers` threads and chunks of `chunk` compressed bytes; the output cap is 16
    /// times the chunk (at least 4 MiB).
    pub fn with_chunk(workers: usize, chunk: usize) -> Config {
        let chunk = chunk.max(1 << 10);
        Config {
            chunk,
            workers: workers.max(1),
            max_output: (chunk * 16).max(4 << 20),
        }
    }
}

/// A member's trailer and where the next member would start (byte offset in the data).
#[derive(Debug, Clone, Copy)]
struct Member {
    crc: u32,
    isize: u32,
    next_at: usize,
}

/// A run of output that belongs to one member: its end index, its CRC (empty for
/// marker output, hashed once resolved) and the trailer if the member ends with it.
struct Seg {
    end: usize,
    crc: crc32fast::Hasher,
    closes: Option<Member>,
}

/// Where a gzip-level decode is.
#[derive(Debug, Clone, Copy)]
enum Frame {
    /// At a member header (byte offset).
    Header(usize),
    /// Inside deflate data.
    Deflate,
    /// At a member trailer (byte offset).
    Trailer(usize),
}

/// Why a decode paused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Halt {
    /// At a findable block start at or after the stop bit (bit offset).
    Boundary(usize),
    /// The output reached its limit.
    Full,
    /// The input ends at a member end.
    StreamEnd,
    /// More input is needed.
    NeedInput,
    /// Bytes that are not a gzip member follow a member (byte offset).
    Trailing(usize),
}

/// Why decoding failed: bit offset in the data and reason.
#[derive(Debug)]
struct Damage {
    bit: usize,
    what: String,
}

impl From<InflateError> for Damage {
    fn from(e: InflateError) -> Damage {
        Damage {
            bit: e.bit,
            what: format!("invalid deflate data: {}", e.what),
        }
    }
}

/// A deflate decoder with gzip framing.
struct Engine {
    inf: Inflater,
    frame: Frame,
}

/// Outcomes of one engine step besides a halt.
enum Step {
    Halt(Halt),
    MemberStart,
    MemberEnd(Member),
}

enum Header {
    Len(usize),
    Incomplete,
    NotGzip,
    Bad(&'static str),
}

/// Parses a gzip member header at the start of `d`.
fn parse_header(d: &[u8], eof: bool) -> Header {
    let magic = [0x1f, 0x8b, 8];
    let n = d.len().min(3);
    if d[..n] != magic[..n] {
        return Header::NotGzip;
    }
    if d.len() < 10 {
        return if eof {
            if n < 3 {
                Header::NotGzip
            } else {
                Header::Bad("the member header is cut short")
            }
        } else {
            Header::Incomplete
        };
    }
    let flags = d[3];
    if flags & 0xe0 != 0 {
        return Header::Bad("the member header has reserved flags set");
    }
    let mut at = 10;
    let short = if eof {
        Header::Bad("the member header is cut short")
    } else {
        Header::Incomplete
    };
    if flags & 0x04 != 0 {
        let Some(x) = d.get(at..at + 2) else {
            return short;
        };
        at += 2 + usize::from(u16::from_le_bytes([x[0], x[1]]));
    }
    for flag in [0x08, 0x10] {
        if flags & flag != 0 {
            match d
                .get(at..)
                .and_then(|rest| rest.iter().position(|&b| b == 0))
            {
                Some(z) => at += z + 1,
                None => return short,
            }
        }
    }
    if flags & 0x02 != 0 {
        at += 2;
    }
    if at > d.len() {
        return short;
    }
    Header::Len(at)
}

impl Engine {
    fn at_header(byte: usize) -> Engine {
        Engine {
            inf: Inflater::new(0),
            frame: Frame::Header(byte),
        }
    }

    fn at_block(bit: usize) -> Engine {
        Engine {
            inf: Inflater::new(bit),
            frame: Frame::Deflate,
        }
    }

    /// The data will be given from `bytes` further on.
    fn rebase(&mut self, bytes: usize) {
        match &mut self.frame {
            Frame::Header(at) | Frame::Trailer(at) => *at -= bytes,
            Frame::Deflate => self.inf.rebase(bytes),
        }
    }

    fn step<T: Symbol>(
        &mut self,
        (data, eof): (&[u8], bool),
        out: &mut [T],
        len: &mut usize,
        limit: usize,
        hist: &History<'_, T>,
        stop_bit: usize,
    ) -> Result<Step, Damage> {
        let cut = |bit: usize, what: &str| Damage {
            bit,
            what: format!("the data ends inside {what}"),
        };
        match self.frame {
            Frame::Header(at) => {
                if at >= data.len() && eof {
                    return Ok(Step::Halt(Halt::StreamEnd));
                }
                match parse_header(&data[at.min(data.len())..], eof) {
                    Header::Len(n) => {
                        self.inf.restart((at + n) * 8);
                        self.frame = Frame::Deflate;
                        Ok(Step::MemberStart)
                    }
                    Header::Incomplete => Ok(Step::Halt(Halt::NeedInput)),
                    Header::NotGzip => Ok(Step::Halt(Halt::Trailing(at))),
                    Header::Bad(what) => Err(Damage {
                        bit: at * 8,
                        what: what.into(),
                    }),
                }
            }
            Frame::Trailer(at) => match data.get(at..at + 8) {
                Some(t) => {
                    self.frame = Frame::Header(at + 8);
                    Ok(Step::MemberEnd(Member {
                        crc: u32::from_le_bytes([t[0], t[1], t[2], t[3]]),
                        isize: u32::from_le_bytes([t[4], t[5], t[6], t[7]]),
                        next_at: at + 8,
                    }))
                }
                None if eof => Err(cut(at * 8, "the member trailer")),
                None => Ok(Step::Halt(Halt::NeedInput)),
            },
            Frame::Deflate => {
                let stop = self.inf.run(data, out, len, limit, hist, stop_bit);
                self.after_run(stop, (data, eof), out, len, limit, hist, stop_bit)
            }
        }
    }

    /// What a run of the deflate decoder (`stop`, as `run` or `run_pair` gave it)
    /// means for the gzip framing; after a final block, goes on to the trailer.
    #[allow(clippy::too_many_arguments)]
    fn after_run<T: Symbol>(
        &mut self,
        stop: Result<Stop, InflateError>,
        (data, eof): (&[u8], bool),
        out: &mut [T],
        len: &mut usize,
        limit: usize,
        hist: &History<'_, T>,
        stop_bit: usize,
    ) -> Result<Step, Damage> {
        match stop? {
            Stop::Boundary => Ok(Step::Halt(Halt::Boundary(self.inf.bit))),
            Stop::OutputFull => Ok(Step::Halt(Halt::Full)),
            Stop::FinalEnd => {
                self.frame = Frame::Trailer(self.inf.bit.div_ceil(8));
                self.step((data, eof), out, len, limit, hist, stop_bit)
            }
            Stop::NeedInput if eof => Err(Damage {
                bit: self.inf.bit,
                what: "the data ends inside the deflate data".into(),
            }),
            Stop::NeedInput => Ok(Step::Halt(Halt::NeedInput)),
        }
    }
}

/// Byte output with member segments: runs `engine` until it halts, closing a segment
/// (with its CRC) at every member end. `floor` is where the current member's history
/// starts in `out` (0: `prefix` is reachable too).
struct ByteRun<'a> {
    out: &'a mut Vec<u8>,
    len: usize,
    floor: usize,
    seg_start: usize,
    segs: Vec<Seg>,
}

impl<'a> ByteRun<'a> {
    /// An empty run into `out`.
    fn new(out: &'a mut Vec<u8>) -> ByteRun<'a> {
        ByteRun {
            out,
            len: 0,
            floor: 0,
            seg_start: 0,
            segs: Vec::new(),
        }
    }

    fn close(&mut self, closes: Option<Member>) {
        let mut crc = crc32fast::Hasher::new();
        crc.update(&self.out[self.seg_start..self.len]);
        self.segs.push(Seg {
            end: self.len,
            crc,
            closes,
        });
        self.seg_start = self.len;
    }

    /// Runs to a halt; `limit` caps the output.
    fn run(
        &mut self,
        engine: &mut Engine,
        data: &[u8],
        eof: bool,
        limit: usize,
        prefix: &[u8],
        stop_bit: usize,
    ) -> Result<Halt, Damage> {
        if self.out.len() < limit + OVERSHOOT {
            self.out.resize(limit + OVERSHOOT, 0);
        }
        loop {
            let hist = History {
                prefix,
                floor: self.floor,
            };
            match engine.step((data, eof), self.out, &mut self.len, limit, &hist, stop_bit)? {
                Step::Halt(h) => return Ok(h),
                Step::MemberStart => self.floor = self.len,
                Step::MemberEnd(m) => {
                    self.close(Some(m));
                    // Unreachable until the next member's header is read.
                    self.floor = self.len;
                }
            }
        }
    }
}

/// One chunk's compressed bytes: from byte `index * chunk` of the input to the end of
/// the next chunk (or of the input).
struct Job {
    index: usize,
    /// Where the `len` bytes are.
    held: Held,
    len: usize,
    eof: bool,
    /// A read error after the bytes (then `eof` is set).
    read_error: Option<String>,
}

/// Where a job's compressed bytes are.
enum Held {
    /// Read into a buffer: the bytes are its first `len`; the rest is room kept
    /// initialised for the next job it carries (not cleared and zeroed again for each).
    Buf(Vec<u8>),
    /// In a mapped file (verified before the job was made), from this byte on.
    Map(Arc<GuardedMap>, usize),
}

impl Job {
    /// The chunk's compressed bytes (and the next chunk's).
    fn data(&self) -> &[u8] {
        match &self.held {
            Held::Buf(buf) => &buf[..self.len],
            Held::Map(map, at) => &map.verified()[*at..*at + self.len],
        }
    }
}

impl Job {
    /// For bytes from a mapping, once they were decoded: whether the file shrank under
    /// them (pages past its new end read as zeros). If so the job now ends at the new
    /// end, with the shrinking as its read error.
    fn clamp(&mut self) -> bool {
        let Held::Map(map, at) = &self.held else {
            return false;
        };
        let usable = map.check();
        if usable >= at + self.len {
            return false;
        }
        self.read_error = Some(format!(
            "the file shrank from {} to {usable} bytes while it was read",
            map.mapped_len()
        ));
        self.len = usable.saturating_sub(*at);
        self.eof = true;
        true
    }
}

impl Held {
    /// Gives a read buffer back to `pool` for another job.
    fn recycle(self, pool: &Sender<Vec<u8>>) {
        if let Held::Buf(buf) = self {
            let _ = pool.try_send(buf);
        }
    }
}

/// Where the parallel gzip reader takes its compressed bytes from.
pub(crate) enum Compressed {
    /// A stream, read into buffers (each job's bytes, the next chunk's copied along).
    Read(Box<dyn Read + Send>),
    /// A regular file mapped whole: jobs borrow their bytes from the mapping, verified
    /// two chunks at a time ahead of them by the reading thread. Neither the kernel's
    /// copy into a buffer nor the copy of each next chunk is made (T6, 11 interleaved
    /// runs: 394.3 -> 354.8 ms, medians).
    Mapped(Arc<GuardedMap>),
}

/// How a speculative decode ended.
enum End {
    Boundary(usize),
    Finished,
    Trailing(usize),
    Failed,
}

/// A worker's result for one chunk.
struct ChunkOut {
    job: Job,
    /// Bit where decoding started: the first block found, or the first header.
    start: Option<usize>,
    /// Output before it went to bytes: markers and bytes (`wide_len` of them).
    wide: Vec<u16>,
    wide_len: usize,
    /// A member that ends where `wide` ends.
    wide_end: Option<Member>,
    narrow: Vec<u8>,
    narrow_len: usize,
    segs: Vec<Seg>,
    end: End,
}

/// Decodes chunk `job` speculatively (see the module documentation) into `narrow` and
/// `wide`, buffers to reuse; `behind` is the worker's room for the second half's
/// markers (see [`halves`]).
fn work(
    job: Job,
    cfg: &Config,
    narrow_buf: Vec<u8>,
    wide_buf: Vec<u16>,
    behind: &mut Vec<u16>,
) -> ChunkOut {
    let mut out = ChunkOut {
        start: None,
        wide: wide_buf,
        wide_len: 0,
        wide_end: None,
        narrow: narrow_buf,
        narrow_len: 0,
        segs: Vec::new(),
        end: End::Failed,
        job,
    };
    let data = out.job.data();
    let eof = out.job.eof;
    let stop = cfg.chunk * 8;
    if out.job.index == 0 {
        let mut engine = Engine::at_header(0);
        let mut run = ByteRun::new(&mut out.narrow);
        out.end = narrow(&mut run, &mut engine, data, eof, &[], stop, cfg.max_output);
        out.start = Some(0);
        out.narrow_len = run.len;
        out.segs = std::mem::take(&mut run.segs);
        return out;
    }
    let mut from = 0;
    while let Some(start) = crate::inflate::find_block(data, from, stop) {
        out.wide_end = None;
        let usual = 2 * data.len().saturating_sub(stop / 8);
        let mid = start + (stop - start) / 2;
        let (result, mut engine, len) =
            match crate::inflate::find_block(data, mid, stop).filter(|&b| b > start) {
                Some(second) => halves(
                    &mut out.wide,
                    behind,
                    [start, mid, second],
                    (data, eof),
                    stop,
                    usual,
                    cfg.max_output,
                ),
                None => {
                    let mut engine = Engine::at_block(start);
                    let mut lane = WideLane {
                        engine: &mut engine,
                        out: &mut out.wide,
                        len: 0,
                        stop,
                        usual,
                        switch: true,
                    };
                    let result = wide(&mut lane, (data, eof), cfg.max_output);
                    let len = lane.len;
                    (result, engine, len)
                }
            };
        out.wide_len = len;
        match result {
            Ok(WideEnd::Halt(h)) => {
                out.start = Some(start);
                out.end = settle(h);
                return out;
            }
            Ok(WideEnd::Clean(member)) => {
                out.wide_end = member;
                let mut prefix = [0u8; WINDOW];
                if member.is_none() {
                    for (p, &v) in prefix.iter_mut().zip(&out.wide[len - WINDOW..len]) {
                        *p = v as u8;
                    }
                }
                let mut run = ByteRun::new(&mut out.narrow);
                let prefix: &[u8] = if member.is_some() { &[] } else { &prefix };
                let room = cfg.max_output.saturating_sub(len);
                let end = narrow(&mut run, &mut engine, data, eof, prefix, stop, room);
                out.narrow_len = run.len;
                out.segs = std::mem::take(&mut run.segs);
                out.start = Some(start);
                out.end = end;
                return out;
            }
            Err(_) => from = start + 1,
        }
    }
    out
}

/// Decodes a chunk's stretch with markers from the block start `start` as two halves
/// side by side ([`wide_pair`]): the first up to the first findable block start at or
/// after `mid`, the second from `second` (the first findable block start at or after
/// `mid`) to the stretch's end, into `behind`. When the first half stops exactly where
/// the second began (a false start cannot pass, as between chunks), the second's
/// output follows the first's, its markers renamed ([`append_behind`]); otherwise the
/// first goes on alone, as [`wide`] would have from `start`. Returns how the stretch
/// ended, the engine to go on with, and the output's length in `out`.
#[allow(clippy::too_many_arguments)]
fn halves(
    out: &mut Vec<u16>,
    behind: &mut Vec<u16>,
    [start, mid, second]: [usize; 3],
    input: (&[u8], bool),
    stop: usize,
    usual: usize,
    cap: usize,
) -> (Result<WideEnd, Damage>, Engine, usize) {
    let mut first = Engine::at_block(start);
    let mut later = Engine::at_block(second);
    // The first half's room is the whole stretch's: the second half's output is appended
    // to it. The second half's room is half that, in the worker's buffer kept for it.
    let mut lanes = [
        WideLane {
            engine: &mut first,
            out,
            len: 0,
            stop: mid,
            usual,
            switch: false,
        },
        WideLane {
            engine: &mut later,
            out: behind,
            len: 0,
            stop,
            usual: usual / 2,
            switch: false,
        },
    ];
    // Half the cap each: the two hold no more than one stretch would.
    let [ends_first, ends_later] = wide_pair(&mut lanes, input, cap / 2);
    let [
        WideLane { len, out, .. },
        WideLane {
            len: later_len,
            out: behind,
            ..
        },
    ] = lanes;
    let mut len = len;
    match ends_first {
        Ok(WideEnd::Halt(Halt::Boundary(bit))) if bit == second && ends_later.is_ok() => {
            if len + later_len > cap {
                return (Ok(WideEnd::Halt(Halt::Full)), later, len);
            }
            append_behind(out, &mut len, &behind[..later_len]);
            (ends_later, later, len)
        }
        Ok(WideEnd::Halt(Halt::Boundary(bit))) if bit < stop => {
            let mut lane = WideLane {
                engine: &mut first,
                out,
                len,
                stop,
                usual,
                switch: true,
            };
            let end = wide(&mut lane, input, cap);
            let len = lane.len;
            (end, first, len)
        }
        other => (other, first, len),
    }
}

/// The smallest window position that a marker in `wide` names (`WINDOW` or more: none).
fn min_marker(wide: &[u16]) -> u16 {
    // Bytes wrap to 65280 and up: one pass without branches (vectorised).
    wide.iter()
        .fold(u16::MAX, |m, &v| m.min(v.wrapping_sub(256)))
}

/// A speculative decode's halt as a chunk end.
fn settle(h: Halt) -> End {
    match h {
        Halt::Boundary(b) => End::Boundary(b),
        Halt::StreamEnd => End::Finished,
        Halt::Trailing(at) => End::Trailing(at),
        Halt::Full | Halt::NeedInput => End::Failed,
    }
}

/// Decodes bytes until a halt that ends the chunk, growing `run.out` up to `cap`.
fn narrow(
    run: &mut ByteRun<'_>,
    engine: &mut Engine,
    data: &[u8],
    eof: bool,
    prefix: &[u8],
    stop: usize,
    cap: usize,
) -> End {
    // Room for three times the chunk's compressed bytes at first, doubled when it fills:
    // room that is not used still costs its zeroing and page faults (sized by the whole
    // job, four times the chunk, those were 6 % of T6's samples).
    let mut limit = (3 * (stop / 8)).clamp(1 << 16, cap.max(1 << 16));
    loop {
        match run.run(engine, data, eof, limit, prefix, stop) {
            Ok(Halt::Full) if limit < cap => {
                limit = (limit * 2).min(cap);
            }
            Ok(h) => {
                if run.len > run.seg_start {
                    run.close(None);
                }
                return settle(h);
            }
            Err(_) => return End::Failed,
        }
    }
}

enum WideEnd {
    /// The chunk ended while markers were still in the window.
    Halt(Halt),
    /// The window holds no marker (or a member ended, `Some`): go on in bytes.
    Clean(Option<Member>),
}

/// Room in `out` for output up to the next check (every 4 windows of output: the check
/// looks at one window only): the limit, or `None` past `cap`. Grows `out` to at least
/// `usual` at once (packet traces inflate 1.2-2.5 times at level 6): growing copies and
/// clears again, and room never used costs its zeroing and page faults (three times the
/// chunk was 3 % slower on T6 than two).
fn wide_room(out: &mut Vec<u16>, len: usize, usual: usize, cap: usize) -> Option<usize> {
    let limit = len + 4 * WINDOW;
    if limit > cap {
        return None;
    }
    if out.len() < limit + OVERSHOOT {
        out.resize((limit + OVERSHOOT).max(out.len() * 2).max(usual), 0);
    }
    Some(limit)
}

/// What a step of a marker decode means: go on (`None`), or how it ended. With
/// `switch`, a full output whose last 32 KiB hold no marker ends it (to go on in bytes).
fn wide_judge(
    step: Step,
    out: &[u16],
    len: usize,
    switch: bool,
) -> Result<Option<WideEnd>, Damage> {
    match step {
        Step::Halt(Halt::Full) => {
            let last = &out[len - WINDOW..len];
            let clean = switch && last.iter().fold(0, |a, &v| a | (v >> 8)) == 0;
            Ok(clean.then_some(WideEnd::Clean(None)))
        }
        Step::Halt(h) => Ok(Some(WideEnd::Halt(h))),
        Step::MemberEnd(m) => Ok(Some(WideEnd::Clean(Some(m)))),
        // A member cannot start in the middle of a block: not a real start.
        Step::MemberStart => Err(Damage {
            bit: 0,
            what: String::new(),
        }),
    }
}

/// A stretch of a chunk decoded with the unknown window (see [`wide`]).
struct WideLane<'e, 'o> {
    engine: &'e mut Engine,
    out: &'o mut Vec<u16>,
    len: usize,
    /// The bit at or after which the first findable block start ends the stretch.
    stop: usize,
    /// Room to give `out` at once.
    usual: usize,
    /// Whether the stretch ends where its window holds no marker (to go on in bytes).
    switch: bool,
}

/// Decodes with the unknown window into `lane.out[..lane.len]` until the stretch ends
/// (with `lane.switch`, also once the last 32 KiB of output hold no marker).
fn wide(
    lane: &mut WideLane<'_, '_>,
    (data, eof): (&[u8], bool),
    cap: usize,
) -> Result<WideEnd, Damage> {
    let hist = History {
        prefix: marker_window(),
        floor: 0,
    };
    loop {
        let Some(limit) = wide_room(lane.out, lane.len, lane.usual, cap) else {
            return Ok(WideEnd::Halt(Halt::Full));
        };
        let step = lane.engine.step(
            (data, eof),
            lane.out,
            &mut lane.len,
            limit,
            &hist,
            lane.stop,
        )?;
        if let Some(end) = wide_judge(step, lane.out, lane.len, lane.switch)? {
            return Ok(end);
        }
    }
}

/// Two stretches decoded as [`wide`] would decode each, side by side while both are
/// inside deflate data ([`crate::inflate::run_pair`]); the one left when the other
/// ends goes on alone.
fn wide_pair(
    lanes: &mut [WideLane<'_, '_>; 2],
    input: (&[u8], bool),
    cap: usize,
) -> [Result<WideEnd, Damage>; 2] {
    let (data, eof) = input;
    let hist = History {
        prefix: marker_window(),
        floor: 0,
    };
    let mut ends: [Option<Result<WideEnd, Damage>>; 2] = [None, None];
    while ends.iter().all(Option::is_none) {
        let mut limits = [0; 2];
        for (k, lane) in lanes.iter_mut().enumerate() {
            match wide_room(lane.out, lane.len, lane.usual, cap) {
                Some(l) => limits[k] = l,
                None => ends[k] = Some(Ok(WideEnd::Halt(Halt::Full))),
            }
        }
        if ends.iter().any(Option::is_some) {
            break;
        }
        let both = lanes
            .iter()
            .all(|l| matches!(l.engine.frame, Frame::Deflate));
        let (k, step) = if both {
            let [x, y] = lanes;
            let mut a = Lane {
                inf: &mut x.engine.inf,
                data,
                out: &mut x.out[..],
                len: x.len,
                limit: limits[0],
                hist: &hist,
                stop_bit: x.stop,
            };
            let mut b = Lane {
                inf: &mut y.engine.inf,
                data,
                out: &mut y.out[..],
                len: y.len,
                limit: limits[1],
                hist: &hist,
                stop_bit: y.stop,
            };
            let (side, stop) = run_pair(&mut a, &mut b);
            let (la, lb) = (a.len, b.len);
            x.len = la;
            y.len = lb;
            let k = usize::from(side == Side::B);
            let l = &mut lanes[k];
            let step = l.engine.after_run(
                stop,
                (data, eof),
                l.out,
                &mut l.len,
                limits[k],
                &hist,
                l.stop,
            );
            (k, step)
        } else {
            let k = usize::from(matches!(lanes[0].engine.frame, Frame::Deflate));
            let l = &mut lanes[k];
            let step = l
                .engine
                .step((data, eof), l.out, &mut l.len, limits[k], &hist, l.stop);
            (k, step)
        };
        let l = &lanes[k];
        match step.and_then(|step| wide_judge(step, l.out, l.len, l.switch)) {
            Ok(None) => {}
            Ok(Some(end)) => ends[k] = Some(Ok(end)),
            Err(e) => ends[k] = Some(Err(e)),
        }
    }
    for (end, lane) in ends.iter_mut().zip(lanes.iter_mut()) {
        if end.is_none() {
            *end = Some(wide(lane, input, cap));
        }
    }
    ends.map(|e| e.unwrap_or(Ok(WideEnd::Halt(Halt::Full))))
}

/// Appends `behind` (marker output decoded from a block start in the middle of the
/// stretch that `out[..*len]` decoded up to it) to that output: its markers name the
/// 32 KiB before it, which are the last of `out` (or, while `out` holds less, the
/// chunk's own markers before it).
fn append_behind(out: &mut Vec<u16>, len: &mut usize, behind: &[u16]) {
    let map: Vec<u16> = (*len..*len + WINDOW)
        .map(|v| {
            if v >= WINDOW {
                out[v - WINDOW]
            } else {
                256 + v as u16
            }
        })
        .collect();
    if out.len() < *len + behind.len() + OVERSHOOT {
        out.resize(*len + behind.len() + OVERSHOOT, 0);
    }
    // Mostly bytes: copied 64 at a time (vectorised), markers looked up where there are.
    for (o, b) in out[*len..*len + behind.len()]
        .chunks_mut(64)
        .zip(behind.chunks(64))
    {
        if b.iter().fold(0, |a, &v| a | (v >> 8)) == 0 {
            o.copy_from_slice(b);
        } else {
            for (o, &v) in o.iter_mut().zip(b) {
                *o = if v < 256 {
                    v
                } else {
                    map[usize::from(v) - 256]
                };
            }
        }
    }
    *len += behind.len();
}

/// The emitter's member accounting: what the current member has produced so far.
struct Books {
    crc: crc32fast::Hasher,
    size: u64,
    /// 1-based number of the current member.
    number: u64,
    /// Compressed offset of the current member.
    at: u64,
}

impl Books {
    fn fault(&self, what: impl Into<String>) -> Fault {
        Fault {
            trailing: false,
            sequential_may_read: false,
            unit: Some(self.number),
            at: Some(self.at),
            detail: what.into(),
        }
    }

    /// Accounts for a segment of `len` bytes hashed as `crc`; checks the trailer it
    /// closes (`base`: the compressed offset of the data's first byte).
    fn add(
        &mut self,
        len: usize,
        crc: &crc32fast::Hasher,
        closes: Option<Member>,
        base: u64,
    ) -> Result<(), Fault> {
        self.crc.combine(crc);
        self.size += len as u64;
        if let Some(m) = closes {
            let crc = std::mem::take(&mut self.crc).finalize();
            if self.size as u32 != m.isize {
                return Err(self.fault(format!(
                    "it inflates to {} bytes, its trailer (ISIZE) says {}",
                    self.size, m.isize
                )));
            }
            if crc != m.crc {
                return Err(self.fault("CRC mismatch: the member's data is damaged"));
            }
            self.number += 1;
            self.at = base + m.next_at as u64;
            self.size = 0;
        }
        Ok(())
    }
}

/// Keeps the last 32 KiB of the current member's output: `bytes` follow `window`, and
/// the member restarted at `bytes[restart]` if given.
fn slide(window: &mut Vec<u8>, bytes: &[u8], restart: Option<usize>) {
    let bytes = match restart {
        Some(r) => {
            window.clear();
            &bytes[r..]
        }
        None => bytes,
    };
    if bytes.len() >= WINDOW {
        window.clear();
        window.extend_from_slice(&bytes[bytes.len() - WINDOW..]);
    } else {
        window.extend_from_slice(bytes);
        if window.len() > WINDOW {
            window.drain(..window.len() - WINDOW);
        }
    }
}

/// Where the sequencer is.
enum Cursor {
    /// Before the first member header.
    Start,
    /// At a findable block start (global bit offset) with `window` known.
    Bit(u64),
    /// Inside a sequential decode that needs the next chunk's bytes: its engine, and the
    /// chunk index its offsets are relative to.
    Mid(Box<Engine>, usize),
}

/// Output in member segments (`segs` over `buf`), from data at compressed offset `base`.
struct Bytes {
    buf: Vec<u8>,
    segs: Vec<Seg>,
    base: u64,
}

/// What the sequencer hands the emitter, in order.
enum Emit {
    /// Bytes ready to go.
    Bytes(Bytes),
    /// Bytes that a worker is resolving (markers) and hashing.
    Later(Receiver<[Bytes; 2]>),
    /// Damage in the current member.
    Damage(String),
    /// Trailing data: where, how much, the first bytes.
    Trailing(u64, String, String),
    /// The end of the stream.
    End,
}

/// A worker's job of replacing markers from a window.
struct Resolve {
    chunk: ChunkOut,
    window: Vec<u8>,
    base: u64,
    reply: Sender<[Bytes; 2]>,
    /// Where used marker buffers go back to.
    wide_pool: Sender<Vec<u16>>,
    /// Where used input buffers go back to.
    data_pool: Sender<Vec<u8>>,
    spare: Vec<u8>,
}

/// Replaces the markers of a chunk whose window is known and hashes the result.
fn resolve(job: Resolve) {
    let Resolve {
        chunk,
        window,
        base,
        reply,
        wide_pool,
        data_pool,
        mut spare,
    } = job;
    // Marker 256 + j is window position j - (32 KiB - window length).
    let missing = WINDOW - window.len();
    let mut map = vec![0u8; 256 + WINDOW];
    for (i, m) in map.iter_mut().enumerate().take(256) {
        *m = i as u8;
    }
    map[256 + missing..].copy_from_slice(&window);
    let wide = &chunk.wide[..chunk.wide_len];
    if spare.len() < wide.len() {
        spare.resize(wide.len(), 0);
    }
    // Mostly bytes: narrow 64 at a time (vectorised), look markers up where there are;
    // hashed 64 KiB at a time while in the cache.
    let mut crc = crc32fast::Hasher::new();
    for (o, w) in spare.chunks_mut(1 << 16).zip(wide.chunks(1 << 16)) {
        for (o, w) in o.chunks_mut(64).zip(w.chunks(64)) {
            if w.iter().fold(0, |a, &v| a | (v >> 8)) == 0 {
                for (o, &v) in o.iter_mut().zip(w) {
                    *o = v as u8;
                }
            } else {
                for (o, &v) in o.iter_mut().zip(w) {
                    *o = map[usize::from(v)];
                }
            }
        }
        crc.update(&o[..w.len()]);
    }
    let first = Bytes {
        buf: spare,
        segs: vec![Seg {
            end: wide.len(),
            crc,
            closes: chunk.wide_end,
        }],
        base,
    };
    let second = Bytes {
        buf: chunk.narrow,
        segs: chunk.segs,
        base,
    };
    let _ = wide_pool.try_send(chunk.wide);
    chunk.job.held.recycle(&data_pool);
    let _ = reply.send([first, second]);
}

enum Flow {
    Next,
    Stop,
}

struct Sequencer<'a> {
    cfg: Config,
    emit: &'a Sender<Emit>,
    resolver: &'a Sender<Resolve>,
    wide_pool: &'a Sender<Vec<u16>>,
    data_pool: &'a Sender<Vec<u8>>,
    pool: &'a Receiver<Vec<u8>>,
    cursor: Cursor,
    window: Vec<u8>,
}

impl Sequencer<'_> {
    fn base(&self, index: usize) -> u64 {
        (index * self.cfg.chunk) as u64
    }

    fn send(&self, e: Emit) -> bool {
        self.emit.send(e).is_ok()
    }

    fn buffer(&self) -> Vec<u8> {
        self.pool.try_recv().unwrap_or_default()
    }

    /// Moves the window over `buf[..]` as cut by `segs`.
    fn slide_segs(&mut self, buf: &[u8], segs: &[Seg]) {
        let end = segs.last().map_or(0, |s| s.end);
        let restart = segs
            .iter()
            .rev()
            .find(|s| s.closes.is_some())
            .map(|s| s.end);
        slide(&mut self.window, &buf[..end], restart);
    }

    /// Takes a worker's result in order.
    fn take(&mut self, mut r: ChunkOut, results: &mut dyn FnMut() -> Option<ChunkOut>) -> Flow {
        // What the worker decoded may hold zeros of a vanished page: decoded again here,
        // up to the file's new end.
        if r.job.clamp() {
            return self.redo(r, results);
        }
        let base = self.base(r.job.index);
        let fits = match (&self.cursor, r.start) {
            (Cursor::Start, Some(0)) => r.job.index == 0,
            (Cursor::Bit(b), Some(s)) => *b == base * 8 + s as u64,
            _ => false,
        };
        // A marker before the window's start: a reference before the member's start,
        // for the sequential decoder to name.
        // (Only a member younger than a window can have a short one: the scan is rare.)
        let resolvable = self.window.len() == WINDOW
            || usize::from(min_marker(&r.wide[..r.wide_len])) >= WINDOW - self.window.len();
        if !fits || !resolvable || matches!(r.end, End::Failed) {
            return self.redo(r, results);
        }
        let end = match r.end {
            End::Boundary(b) => Some(base * 8 + b as u64),
            _ => None,
        };
        let trail = match r.end {
            End::Trailing(at) => Some((
                base + at as u64,
                preview(&r.job.data()[at..]),
                base + r.job.len as u64,
                r.job.eof,
            )),
            _ => None,
        };
        if r.wide_len > 0 {
            // The window for the next chunk: this one's resolved tail.
            let tail_from = r.wide_len.saturating_sub(WINDOW);
            let missing = WINDOW - self.window.len();
            let tail: Vec<u8> = r.wide[tail_from..r.wide_len]
                .iter()
                .map(|&v| match v {
                    0..=255 => v as u8,
                    m => self.window[usize::from(m) - 256 - missing],
                })
                .collect();
            let window = self.window.clone();
            slide(&mut self.window, &tail, r.wide_end.map(|_| tail.len()));
            self.slide_segs(&r.narrow, &r.segs);
            let (reply, later) = bounded(1);
            let job = Resolve {
                spare: self.buffer(),
                chunk: r,
                window,
                base,
                reply,
                wide_pool: self.wide_pool.clone(),
                data_pool: self.data_pool.clone(),
            };
            if self.resolver.send(job).is_err() || !self.send(Emit::Later(later)) {
                return Flow::Stop;
            }
        } else {
            self.slide_segs(&r.narrow, &r.segs);
            let _ = self.wide_pool.try_send(r.wide);
            r.job.held.recycle(self.data_pool);
            let bytes = Bytes {
                buf: r.narrow,
                segs: r.segs,
                base,
            };
            if !self.send(Emit::Bytes(bytes)) {
                return Flow::Stop;
            }
        }
        if let Some((at, preview, covered, eof)) = trail {
            return self.trailing(at, preview, covered, eof, results);
        }
        match end {
            Some(bit) => {
                self.cursor = Cursor::Bit(bit);
                Flow::Next
            }
            None => {
                self.send(Emit::End);
                Flow::Stop
            }
        }
    }

    /// Decodes chunk `r` here, from where the previous one ended.
    fn redo(&mut self, r: ChunkOut, results: &mut dyn FnMut() -> Option<ChunkOut>) -> Flow {
        let data_pool = self.data_pool;
        let (flow, held) = self.redo_job(r, results);
        held.recycle(data_pool);
        flow
    }

    /// [`Sequencer::redo`]; gives the job's bytes back.
    fn redo_job(
        &mut self,
        r: ChunkOut,
        results: &mut dyn FnMut() -> Option<ChunkOut>,
    ) -> (Flow, Held) {
        let ChunkOut {
            mut job,
            narrow,
            wide,
            ..
        } = r;
        let _ = self.wide_pool.try_send(wide);
        let index = job.index;
        let base = self.base(index);
        let mut engine = match std::mem::replace(&mut self.cursor, Cursor::Start) {
            Cursor::Start => Box::new(Engine::at_header(0)),
            Cursor::Bit(b) => Box::new(Engine::at_block((b - base * 8) as usize)),
            Cursor::Mid(mut e, from) => {
                e.rebase((index - from) * self.cfg.chunk);
                e
            }
        };
        let stop = self.cfg.chunk * 8;
        let mut spare = Some(narrow);
        let flow = loop {
            let mut buf = spare.take().unwrap_or_else(|| self.buffer());
            let window = std::mem::take(&mut self.window);
            let mut run = ByteRun::new(&mut buf);
            let result = run.run(
                &mut engine,
                job.data(),
                job.eof,
                DECOMPRESSED_BLOCK,
                &window,
                stop,
            );
            if run.len > run.seg_start {
                run.close(None);
            }
            let segs = std::mem::take(&mut run.segs);
            self.window = window;
            if let Some(what) = job.clamp().then(|| job.read_error.clone()).flatten() {
                self.send(Emit::Damage(format!("reading the input failed: {what}")));
                break Flow::Stop;
            }
            self.slide_segs(&buf, &segs);
            if !self.send(Emit::Bytes(Bytes { buf, segs, base })) {
                break Flow::Stop;
            }
            match result {
                Ok(Halt::Full) => {}
                Ok(Halt::Boundary(b)) => {
                    self.cursor = Cursor::Bit(base * 8 + b as u64);
                    break Flow::Next;
                }
                Ok(Halt::NeedInput) => {
                    self.cursor = Cursor::Mid(engine, index);
                    break Flow::Next;
                }
                Ok(Halt::StreamEnd) => {
                    self.send(Emit::End);
                    break Flow::Stop;
                }
                Ok(Halt::Trailing(at)) => {
                    let end = base + job.len as u64;
                    let preview = preview(&job.data()[at..]);
                    break self.trailing(base + at as u64, preview, end, job.eof, results);
                }
                Err(damage) => {
                    let what = match &job.read_error {
                        Some(e) if damage.what.starts_with("the data ends") => {
                            format!("reading the input failed: {e}")
                        }
                        _ => format!(
                            "{} (at compressed bit offset {})",
                            damage.what,
                            base * 8 + damage.bit as u64
                        ),
                    };
                    self.send(Emit::Damage(what));
                    break Flow::Stop;
                }
            }
        };
        (flow, job.held)
    }

    /// Reports the bytes from compressed offset `at` (the input is read up to `covered`,
    /// to its end if `eof`), which follow the last member and are not one, as the
    /// sequential reader does: counted up to 1 MiB.
    fn trailing(
        &mut self,
        at: u64,
        preview: String,
        mut covered: u64,
        mut eof: bool,
        results: &mut dyn FnMut() -> Option<ChunkOut>,
    ) -> Flow {
        const COUNT_LIMIT: u64 = 1 << 20;
        let mut count = covered - at;
        while !eof && count <= COUNT_LIMIT {
            let Some(r) = results() else { break };
            let end = self.base(r.job.index) + r.job.len as u64;
            count += end.saturating_sub(covered);
            covered = covered.max(end);
            eof = r.job.eof;
        }
        let len = if count > COUNT_LIMIT {
            "more than 1 MiB".to_string()
        } else {
            format!("{count} byte{}", if count == 1 { "" } else { "s" })
        };
        self.send(Emit::Trailing(at, len, preview));
        Flow::Stop
    }
}

/// The first bytes of trailing data, in hex.
fn preview(bytes: &[u8]) -> String {
    let hex: Vec<String> = bytes.iter().take(8).map(|b| format!("{b:02x}")).collect();
    hex.join(" ")
}

/// The emitter thread: hands the sequencer's output on in order, checking every
/// member's CRC and size as its bytes go out.
fn emitter(from: &Receiver<Emit>, to: &Sender<Piece>, pool: &Sender<Vec<u8>>) {
    let mut books = Books {
        crc: crc32fast::Hasher::new(),
        size: 0,
        number: 1,
        at: 0,
    };
    // Sends segments of bytes; false to stop.
    let send_bytes = |books: &mut Books, b: Bytes| -> bool {
        let mut from = 0;
        for s in &b.segs {
            if let Err(fault) = books.add(s.end - from, &s.crc, s.closes, b.base) {
                if s.end > 0 && to.send(Piece::Data(b.buf, s.end)).is_err() {
                    return false;
                }
                let _ = to.send(Piece::Failed(fault));
                return false;
            }
            from = s.end;
        }
        if from == 0 {
            // Nothing in it: straight back to the pool.
            let _ = pool.try_send(b.buf);
            return true;
        }
        to.send(Piece::Data(b.buf, from)).is_ok()
    };
    while let Ok(e) = from.recv() {
        let go_on = match e {
            Emit::Bytes(b) => send_bytes(&mut books, b),
            Emit::Later(rx) => match rx.recv() {
                Ok([a, b]) => send_bytes(&mut books, a) && send_bytes(&mut books, b),
                Err(_) => false,
            },
            Emit::Damage(what) => {
                let _ = to.send(Piece::Failed(books.fault(what)));
                false
            }
            Emit::Trailing(at, len, preview) => {
                let units = books.number - 1;
                let _ = to.send(Piece::Failed(Fault {
                    trailing: true,
                    sequential_may_read: false,
                    unit: Some(units),
                    at: Some(at),
                    detail: format!(
                        "trailing data after member {units}, the last complete one: {len} \
                         at compressed byte offset {at} ({preview}), not a gzip member; \
                         everything before it was read",
                    ),
                }));
                false
            }
            Emit::End => {
                let _ = to.send(Piece::End);
                false
            }
        };
        if !go_on {
            return;
        }
    }
}

/// Reads `raw` into overlapping jobs and deals them to the workers in turn.
fn read_jobs(
    mut raw: Box<dyn Read + Send>,
    chunk: usize,
    used: &Receiver<Vec<u8>>,
    deal: &mut dyn FnMut(Job) -> bool,
) {
    // Reads up to `chunk` bytes after `buf[..*len]`, into room that stays initialised
    // from job to job (`read_to_end` through `dyn Read` would zero it for every job: 3 %
    // of T6's samples).
    let mut fill = |buf: &mut Vec<u8>, len: &mut usize| -> Result<(), String> {
        let want = *len + chunk;
        if buf.len() < want {
            buf.resize(want, 0);
        }
        crate::read_until(&mut raw, &mut buf[..want], len, want)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    let buffer = || used.try_recv().unwrap_or_default();
    let mut data = buffer();
    let mut len = 0;
    let mut read_error = fill(&mut data, &mut len).err();
    let mut index = 0;
    loop {
        if read_error.is_none() && len == chunk {
            read_error = fill(&mut data, &mut len).err();
        }
        let eof = read_error.is_some() || len < 2 * chunk;
        let rest = data.get(chunk..len).unwrap_or_default();
        let mut next = buffer();
        if next.len() < rest.len() {
            next.resize(2 * chunk, 0);
        }
        next[..rest.len()].copy_from_slice(rest);
        let next_len = rest.len();
        let job = Job {
            index,
            held: Held::Buf(data),
            len,
            eof,
            read_error: read_error.clone(),
        };
        if !deal(job) || next_len == 0 {
            return;
        }
        data = next;
        len = next_len;
        index += 1;
    }
}

/// [`read_jobs`] for a mapped file: each job is the stretch of the mapping from byte
/// `index * chunk` to the end of the next chunk, verified readable before it is dealt.
fn map_jobs(map: &Arc<GuardedMap>, chunk: usize, deal: &mut dyn FnMut(Job) -> bool) {
    let mut index = 0;
    loop {
        let at = index * chunk;
        let want = at.saturating_add(2 * chunk);
        // After the file shrank, nothing past its new end is decoded.
        let end = map.verify(want).min(map.usable()).max(at);
        let shrank = map.shrank_from().filter(|_| end < want).map(|from| {
            format!(
                "the file shrank from {from} to {} bytes while it was read",
                map.usable()
            )
        });
        let len = end - at;
        let job = Job {
            index,
            held: Held::Map(map.clone(), at),
            len,
            eof: len < 2 * chunk,
            read_error: shrank,
        };
        if !deal(job) || len <= chunk {
            return;
        }
        index += 1;
    }
}

/// Starts the parallel gzip reader on `raw` (which starts with a gzip header).
pub(crate) fn start(raw: Compressed, cfg: Config) -> io::Result<BlockStream> {
    let workers = cfg.workers;
    let (pool_tx, pool_rx) = bounded::<Vec<u8>>(2 * workers + 4);
    let (wide_tx, wide_rx) = bounded::<Vec<u16>>(2 * workers + 2);
    let (data_tx, data_rx) = bounded::<Vec<u8>>(2 * workers + 2);
    let (out_tx, out_rx) = bounded::<Piece>(2);
    let (emit_tx, emit_rx) = bounded::<Emit>(workers + 1);
    let emit_pool = pool_tx.clone();
    let (resolve_tx, resolve_rx) = crossbeam_channel::unbounded::<Resolve>();
    let mut job_txs = Vec::new();
    let mut result_rxs = Vec::new();
    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    for k in 0..workers {
        let (job_tx, job_rx) = bounded::<Job>(1);
        let (res_tx, res_rx) = bounded::<ChunkOut>(1);
        let pool = pool_rx.clone();
        let wide_pool = wide_rx.clone();
        let resolves = resolve_rx.clone();
        threads.push(
            std::thread::Builder::new()
                .name(format!("tracekit-pargz-{k}"))
                .spawn(move || worker(&cfg, &job_rx, &res_tx, &resolves, &pool, &wide_pool))?,
        );
        job_txs.push(job_tx);
        result_rxs.push(res_rx);
    }
    drop(resolve_rx);
    threads.push(
        std::thread::Builder::new()
            .name("tracekit-pargz-read".into())
            .spawn(move || {
                let mut k = 0;
                let mut deal = |job| {
                    let ok = job_txs[k].send(job).is_ok();
                    k = (k + 1) % job_txs.len();
                    ok
                };
                match raw {
                    Compressed::Read(raw) => read_jobs(raw, cfg.chunk, &data_rx, &mut deal),
                    Compressed::Mapped(map) => map_jobs(&map, cfg.chunk, &mut deal),
                }
            })?,
    );
    threads.push(
        std::thread::Builder::new()
            .name("tracekit-pargz-emit".into())
            .spawn(move || emitter(&emit_rx, &out_tx, &emit_pool))?,
    );
    let pool = pool_rx;
    threads.push(
        std::thread::Builder::new()
            .name("tracekit-pargz-seq".into())
            .spawn(move || {
                sequence(
                    cfg,
                    result_rxs,
                    &emit_tx,
                    &resolve_tx,
                    &wide_tx,
                    &data_tx,
                    &pool,
                )
            })?,
    );
    Ok(BlockStream::from_parts(out_rx, pool_tx, threads))
}

/// A worker thread: decodes chunks, and resolves markers first whenever some wait
/// (also while its result waits to be taken, so the pipeline cannot lock up).
fn worker(
    cfg: &Config,
    jobs: &Receiver<Job>,
    results: &Sender<ChunkOut>,
    resolves: &Receiver<Resolve>,
    pool: &Receiver<Vec<u8>>,
    wide_pool: &Receiver<Vec<u16>>,
) {
    let mut behind = Vec::new();
    loop {
        if let Ok(r) = resolves.try_recv() {
            resolve(r);
            continue;
        }
        let mut sel = crossbeam_channel::Select::new();
        let on_job = sel.recv(jobs);
        let on_resolve = sel.recv(resolves);
        let op = sel.select();
        match op.index() {
            i if i == on_resolve => match op.recv(resolves) {
                Ok(r) => resolve(r),
                Err(_) => return,
            },
            i if i == on_job => {
                let Ok(job) = op.recv(jobs) else {
                    // No more chunks: resolve what the sequencer still sends.
                    while let Ok(r) = resolves.recv() {
                        resolve(r);
                    }
                    return;
                };
                let narrow = pool.try_recv().unwrap_or_default();
                let wide = wide_pool.try_recv().unwrap_or_default();
                let mut out = Some(work(job, cfg, narrow, wide, &mut behind));
                while let Some(o) = out.take() {
                    let mut sel = crossbeam_channel::Select::new();
                    let on_send = sel.send(results);
                    let on_resolve = sel.recv(resolves);
                    let op = sel.select();
                    if op.index() == on_send {
                        if op.send(results, o).is_err() {
                            // The sequencer is done (the stream ended before this
                            // chunk): what it handed out before still gets resolved.
                            while let Ok(r) = resolves.recv() {
                                resolve(r);
                            }
                            return;
                        }
                    } else {
                        debug_assert_eq!(op.index(), on_resolve);
                        match op.recv(resolves) {
                            Ok(r) => resolve(r),
                            Err(_) => return,
                        }
                        out = Some(o);
                    }
                }
            }
            _ => return,
        }
    }
}

/// The sequencer thread: takes results in order (see the module documentation).
fn sequence(
    cfg: Config,
    results: Vec<Receiver<ChunkOut>>,
    emit: &Sender<Emit>,
    resolver: &Sender<Resolve>,
    wide_pool: &Sender<Vec<u16>>,
    data_pool: &Sender<Vec<u8>>,
    pool: &Receiver<Vec<u8>>,
) {
    let mut seq = Sequencer {
        cfg,
        emit,
        resolver,
        wide_pool,
        data_pool,
        pool,
        cursor: Cursor::Start,
        window: Vec::with_capacity(WINDOW),
    };
    let mut k = 0;
    let mut next = || {
        let r = results[k % results.len()].recv().ok();
        k += 1;
        r
    };
    loop {
        let Some(r) = next() else {
            // Every job was taken and the stream has not ended: the input ended inside it.
            seq.send(Emit::Damage("the data ends inside the deflate data".into()));
            return;
        };
        if let Flow::Stop = seq.take(r, &mut next) {
            return;
        }
    }
}

/// Decompresses gzip `raw` with the parallel reader (chunks of `cfg.chunk` compressed
/// bytes on `cfg.workers` threads), handing each decompressed block to `out` until it
/// says no. Returns the number of bytes handed out, or the error that ended the stream
/// after every byte before it was handed out.
///
/// ```
/// use tracekit_io::pargzip::{Config, gunzip_parallel};
/// let mut packed = Vec::new();
/// let mut w = flate2::write::GzEncoder::new(&mut packed, flate2::Compression::default());
/// std::io::Write::write_all(&mut w, &b"trace ".repeat(100_000)).unwrap();
/// w.finish().unwrap();
/// let mut n = 0;
/// let total = gunzip_parallel(std::io::Cursor::new(packed), Config::with_chunk(2, 1024), |b| {
///     n += b.len();
///     true
/// })
/// .unwrap();
/// assert_eq!((total, n), (600_000, 600_000));
/// ```
pub fn gunzip_parallel(
    raw: impl Read + Send + 'static,
    cfg: Config,
    out: impl FnMut(&[u8]) -> bool,
) -> Result<u64, tracekit_core::Error> {
    deliver(start(Compressed::Read(Box::new(raw)), cfg)?, out)
}

/// [`gunzip_parallel`] for a regular file: it is mapped, and the workers decode its
/// bytes where they lie, with no copy (what [`crate::Input`] does for a compressed
/// file unless it was opened with [`crate::ReadMode::Read`]). A file that shrinks
/// meanwhile ends in an error after every byte before its new end. A file that cannot
/// be mapped (empty, not a regular file) is read.
pub fn gunzip_file_parallel(
    file: std::fs::File,
    cfg: Config,
    out: impl FnMut(&[u8]) -> bool,
) -> Result<u64, tracekit_core::Error> {
    let raw = match file.try_clone().ok().and_then(GuardedMap::open) {
        Some(map) => Compressed::Mapped(Arc::new(map)),
        None => Compressed::Read(Box::new(file)),
    };
    deliver(start(raw, cfg)?, out)
}

/// Hands `stream`'s blocks to `out` (see [`gunzip_parallel`]).
fn deliver(
    mut stream: BlockStream,
    mut out: impl FnMut(&[u8]) -> bool,
) -> Result<u64, tracekit_core::Error> {
    let mut delivered = 0u64;
    loop {
        match stream.next_block() {
            Ok(Some((buf, len))) => {
                delivered += len as u64;
                let go_on = out(&buf[..len]);
                stream.recycle(buf);
                if !go_on {
                    return Ok(delivered);
                }
            }
            Ok(None) => return Ok(delivered),
            Err(fault) => {
                return Err(crate::input::fault_error(
                    crate::Compression::Gzip,
                    &fault,
                    delivered,
                    None,
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(data: &[u8], level: u32) -> Vec<u8> {
        let mut w = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
        w.write_all(data).unwrap();
        w.finish().unwrap()
    }

    fn text(len: usize, seed: u32) -> Vec<u8> {
        let mut x = seed;
        (0..len)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                b"the quick brown fox jumps over lazy dogs 0123\n"[(x >> 16) as usize % 46]
            })
            .collect()
    }

    fn run(packed: Vec<u8>, chunk: usize, workers: usize) -> (Vec<u8>, Option<String>) {
        let mut got = Vec::new();
        let r = gunzip_parallel(
            std::io::Cursor::new(packed),
            Config::with_chunk(workers, chunk),
            |b| {
                got.extend_from_slice(b);
                true
            },
        );
        (got, r.err().map(|e| e.to_string()))
    }

    /// Decodes the gzip file at `path` mapped, in chunks of `chunk` bytes on 2 workers;
    /// once `cut.0` bytes came out, cuts the file to `cut.1` bytes. With `verified`,
    /// the whole mapping is verified first, and the cut made then, so that the jobs
    /// cover pages that are gone (read as zeros).
    fn run_mapped(
        file: &std::fs::File,
        chunk: usize,
        cut: Option<(usize, u64)>,
        verified: bool,
    ) -> (Vec<u8>, Option<String>) {
        let map = GuardedMap::open(file.try_clone().unwrap()).unwrap();
        if verified {
            map.verify(usize::MAX);
            if let Some((0, len)) = cut {
                file.set_len(len).unwrap();
            }
        }
        let mut stream = start(
            Compressed::Mapped(Arc::new(map)),
            Config::with_chunk(2, chunk),
        )
        .unwrap();
        let mut got = Vec::new();
        loop {
            match stream.next_block() {
                Ok(Some((buf, len))) => {
                    got.extend_from_slice(&buf[..len]);
                    stream.recycle(buf);
                    if let Some((after, len)) = cut
                        && got.len() >= after
                        && file.metadata().unwrap().len() > len
                    {
                        file.set_len(len).unwrap();
                    }
                }
                Ok(None) => return (got, None),
                Err(fault) => {
                    let e = crate::input::fault_error(
                        crate::Compression::Gzip,
                        &fault,
                        got.len() as u64,
                        None,
                    );
                    return (got, Some(e.to_string()));
                }
            }
        }
    }

    /// Jobs that borrow a mapped file give the bytes that jobs read into buffers give;
    /// when the file shrinks under the workers, every byte before its new end comes
    /// out, then the error says that it shrank.
    #[test]
    fn a_mapped_file_decodes_as_a_read_one_and_reports_shrinking() {
        let data = text(3 << 20, 7);
        let packed = gz(&data, 6);
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&packed).unwrap();
        let chunk = 32 << 10;
        assert_eq!(run_mapped(&f, chunk, None, false), (data.clone(), None));
        let half = packed.len() as u64 / 2;
        // What the first half of the compressed bytes holds, less the last block
        // (at most a chunk's worth of output here).
        let (whole, _) = run(packed[..half as usize].to_vec(), chunk, 2);
        // Cut to half once the first 64 KiB came out (the reading thread is then at
        // most a few chunks ahead, and finds the cut as it verifies the next job's
        // pages); or before the start, with every page verified, so that the workers
        // read the second half as zeros and the sequencer finds the cut.
        for (cut, verified) in [((64 << 10, half), false), ((0, half), true)] {
            f.set_len(0).unwrap();
            std::io::Seek::rewind(&mut f).unwrap();
            f.write_all(&packed).unwrap();
            let (got, err) = run_mapped(&f, chunk, Some(cut), verified);
            let err = err.expect("a cut file ends in an error");
            assert!(err.contains("shrank from"), "{err}");
            assert!(data.starts_with(&got), "only the file's bytes come out");
            assert!(
                got.len() + 4 * chunk >= whole.len(),
                "{} bytes out, {} before the cut",
                got.len(),
                whole.len()
            );
        }
    }

    #[test]
    fn small_chunks_decode_byte_exact() {
        let data = text(3_000_000, 7);
        for level in [1, 6, 9] {
            let packed = gz(&data, level);
            for chunk in [1 << 10, 10_000, 1 << 16, 1 << 18] {
                let (got, err) = run(packed.clone(), chunk, 3);
                assert_eq!(err, None, "level {level} chunk {chunk}");
                assert!(
                    got == data,
                    "level {level} chunk {chunk}: {} bytes",
                    got.len()
                );
            }
        }
    }

    /// Decodes 2 MiB of raw deflate `packed` from block start `start` with [`halves`],
    /// the second half from `second`, and checks the output against `data` (`bounds`:
    /// each block start's bit and the output before it).
    fn check_halves(
        packed: &[u8],
        data: &[u8],
        bounds: &[(usize, usize)],
        start: usize,
        second: usize,
    ) {
        let stop = start + (1 << 21);
        let mid = start + (stop - start) / 2;
        let at = |bit: usize| bounds.iter().find(|b| b.0 == bit).unwrap().1;
        let (mut wide_out, mut behind) = (Vec::new(), Vec::new());
        let (end, _, len) = halves(
            &mut wide_out,
            &mut behind,
            [start, mid, second],
            (packed, false),
            stop,
            1 << 20,
            1 << 24,
        );
        let Ok(WideEnd::Halt(Halt::Boundary(bit))) = end else {
            panic!("{:?}", end.err().map(|e| e.what));
        };
        // The first findable block start at or after `stop` ends it.
        let want_end = bounds.iter().find(|b| b.0 >= stop).unwrap();
        assert_eq!(bit, want_end.0);
        // Markers resolved with the real window give the real bytes.
        let (from, to) = (at(start), want_end.1);
        assert_eq!(len, to - from);
        let window = &data[from - WINDOW..from];
        for (k, &v) in wide_out[..len].iter().enumerate() {
            let b = if v < 256 {
                v as u8
            } else {
                window[usize::from(v) - 256]
            };
            assert_eq!(b, data[from + k], "output {k} of the stretch");
        }
    }

    #[test]
    fn a_chunk_decoded_as_two_halves_is_its_bytes() {
        // Packet-like records with random payloads: headers repeat (markers live long),
        // payloads do not.
        let mut x = 5u32;
        let mut data = Vec::new();
        while data.len() < 6_000_000 {
            data.extend_from_slice(
                b"\x45\x00\x05\xdc\x1c\x46\x40\x00\x40\x06 hdr 10.0.0.1 > 10.0.0.2 ",
            );
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            for _ in 0..(x >> 20) % 600 {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                data.push((x >> 16) as u8);
            }
        }
        let mut w = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(6));
        w.write_all(&data).unwrap();
        let packed = w.finish().unwrap();
        // Every block start (bit, output before it), from a sequential decode.
        let mut bounds = Vec::new();
        let mut inf = Inflater::new(0);
        let mut out = vec![0u8; data.len() + OVERSHOOT];
        let mut len = 0;
        let hist = History {
            prefix: &[],
            floor: 0,
        };
        let limit = data.len();
        while inf.run(&packed, &mut out, &mut len, limit, &hist, inf.bit + 1) == Ok(Stop::Boundary)
        {
            bounds.push((inf.bit, len));
        }
        assert!(bounds.len() > 100, "{} blocks", bounds.len());
        // Halves joined (the second half starts where the first stops), and a second
        // half that starts at a later block (the first goes on alone).
        let start = bounds[10].0;
        let mid = start + (1 << 20);
        let second = crate::inflate::find_block(&packed, mid, start + (1 << 21)).unwrap();
        assert!(bounds.iter().any(|b| b.0 == second), "a true block start");
        check_halves(&packed, &data, &bounds, start, second);
        let later = bounds.iter().find(|b| b.0 > second).unwrap().0;
        check_halves(&packed, &data, &bounds, start, later);
    }

    #[test]
    fn concatenated_members_decode() {
        let a = text(500_000, 1);
        let b = text(700_000, 2);
        let mut packed = gz(&a, 6);
        packed.extend(gz(&b, 1));
        packed.extend(gz(b"", 6));
        packed.extend(gz(&a, 9));
        let mut want = a.clone();
        want.extend(&b);
        want.extend(&a);
        for chunk in [1 << 10, 50_000] {
            let (got, err) = run(packed.clone(), chunk, 2);
            assert_eq!(err, None);
            assert!(got == want);
        }
    }

    /// A stream that ends before the last chunk (stored blocks, one worker): the worker
    /// that decodes the chunk after the end still resolves what came before.
    #[test]
    fn markers_before_an_early_end_are_resolved() {
        let mut x = 7u64;
        let data: Vec<u8> = (0..49_158)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let packed = gz(&data, 5);
        for workers in [1, 2] {
            let (got, err) = run(packed.clone(), 18_728, workers);
            assert_eq!(err, None);
            assert!(got == data);
        }
    }
}
