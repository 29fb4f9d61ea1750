//! A deflate (RFC 1951) decoder that can start at any block boundary without knowing the
//! 32 KiB of output before it, for [`crate::pargzip`].
//!
//! Every decoder we could use (zlib, zlib-rs, miniz_oxide, libdeflate) needs the window
//! before the first block it decodes; a chunk in the middle of a file has none. This one
//! writes its output as any [`Symbol`] type: `u8` when the window is known, `u16` when it
//! is not, with the unknown window given as a virtual prefix of *markers* (values 256 and
//! up, each naming one window position) that back-references copy like any byte, to be
//! replaced once the window is known.
//!
//! The decoder is resumable: it stops at a block boundary at or after a given bit (where
//! a block header that the block finder would also find starts), when its output reaches
//! a limit, at the end of a final block, or when the input runs out, always at a point
//! where it can go on with more input or output room.

use std::fmt;

/// Bits the literal/length table resolves in one look-up; longer codes use a sub-table.
const LIT_BITS: u32 = 10;
/// Bits the distance table resolves in one look-up.
const DIST_BITS: u32 = 8;
/// Room for the largest tables the two-level scheme builds for valid codes (zlib's
/// `ENOUGH` figures for 10 and 8 root bits are 1444 and 1058 with 9/6 root bits smaller).
const LIT_TABLE: usize = 2048;
const DIST_TABLE: usize = 2048;

/// Output written past the limit at most: one match, and a word of a word-wise copy.
pub(crate) const OVERSHOOT: usize = 258 + 8;

/// Size of the deflate window.
pub(crate) const WINDOW: usize = 32768;

// Table entry layout: bits 0-4 the bits to consume, the code's length plus the extra
// bits of a length or distance (0: no code here), bits 8-11 the code's length, one bit
// for the kind (so that each test is one instruction; a literal's is the sign bit), bits
// 16-30 the value (literal, length or distance base, or the sub-table offset). A
// sub-table pointer holds the sub-table's index bits in bits 0-4. One shift thus consumes
// a length or distance code with its extra bits (as libdeflate's tables do), and the next
// look-up need not wait for the extra bits to be taken.
const KIND_LIT: u32 = 1 << 31;
const KIND_LEN: u32 = 1 << 12;
const KIND_EOB: u32 = 1 << 13;
const KIND_SUB: u32 = 1 << 14;
const VALUE_MASK: u32 = 0x7fff;

/// Whether a table entry is a literal.
#[inline(always)]
fn is_literal(e: u32) -> bool {
    (e as i32) < 0
}

const LEN_BASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LEN_EXTRA: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
const DIST_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
    2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
const DIST_EXTRA: [u8; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];
/// The order code-length code lengths are stored in.
const CL_ORDER: [usize; 19] = [
    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
];

/// An output element: a byte, or a byte-or-marker.
pub(crate) trait Symbol: Copy + Default + Send + Sync + 'static {
    /// The element for a literal byte.
    fn literal(b: u8) -> Self;
}

impl Symbol for u8 {
    #[inline(always)]
    fn literal(b: u8) -> u8 {
        b
    }
}

impl Symbol for u16 {
    #[inline(always)]
    fn literal(b: u8) -> u16 {
        u16::from(b)
    }
}

/// The unknown window as markers, a virtual prefix of the output: window position `j`
/// (oldest first) is `256 + j`.
pub(crate) fn marker_window() -> &'static [u16] {
    static MARKERS: std::sync::OnceLock<Vec<u16>> = std::sync::OnceLock::new();
    MARKERS.get_or_init(|| (0..WINDOW).map(|j| 256 + j as u16).collect())
}

/// Why the data is not deflate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InflateError {
    /// Bit offset (into the data given) of the block header or symbol at fault.
    pub(crate) bit: usize,
    /// What is wrong.
    pub(crate) what: &'static str,
}

impl fmt::Display for InflateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.what)
    }
}

/// Where [`Inflater::run`] stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// At a findable block header at or after the stop bit.
    Boundary,
    /// The output reached its limit (mid-block possibly).
    OutputFull,
    /// After the end-of-block of a final block: the bit offset is that of the next bit.
    FinalEnd,
    /// The input ends before the next symbol or header is complete.
    NeedInput,
}

/// What the history before `out[0]` is: `prefix` (the window, or markers), reachable
/// only while `floor` is 0 (a new gzip member starts a new, empty history at `floor`).
pub(crate) struct History<'a, T> {
    /// The virtual output before `out[0]`, oldest first.
    pub(crate) prefix: &'a [T],
    /// The first output index a back-reference may reach (with `prefix` when 0).
    pub(crate) floor: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Header,
    Huffman,
    Stored(u32),
    Done,
}

/// A resumable deflate decoder (see the module documentation).
pub(crate) struct Inflater {
    lit: Box<[u32; LIT_TABLE]>,
    dist: Box<[u32; DIST_TABLE]>,
    phase: Phase,
    last: bool,
    /// Bit offset into the data of the next bit to read.
    pub(crate) bit: usize,
}

impl Default for Inflater {
    fn default() -> Self {
        Inflater::new(0)
    }
}

/// LSB-first bit input with a 64-bit buffer; reads zeros past the end of the data
/// (whether that happened is checked with [`Bits::overrun`]).
struct Bits<'a> {
    data: &'a [u8],
    /// The next byte to load.
    pos: usize,
    buf: u64,
    n: u32,
}

impl<'a> Bits<'a> {
    fn at(data: &'a [u8], bit: usize) -> Bits<'a> {
        let mut b = Bits {
            data,
            pos: bit / 8,
            buf: 0,
            n: 0,
        };
        let skip = (bit % 8) as u32;
        if skip > 0 {
            b.refill();
            b.consume(skip);
        }
        b
    }

    /// At least 56 bits in the buffer.
    #[inline(always)]
    fn refill(&mut self) {
        if let Some(word) = self.data.get(self.pos..self.pos + 8) {
            let mut w = [0u8; 8];
            w.copy_from_slice(word);
            self.buf |= u64::from_le_bytes(w) << self.n;
            self.pos += ((63 - self.n) >> 3) as usize;
            self.n |= 56;
        } else {
            while self.n <= 56 {
                let b = self.data.get(self.pos).copied().unwrap_or(0);
                self.buf |= u64::from(b) << self.n;
                self.pos += 1;
                self.n += 8;
            }
        }
    }

    #[inline(always)]
    fn peek(&self, k: u32) -> u32 {
        (self.buf & ((1u64 << k) - 1)) as u32
    }

    #[inline(always)]
    fn consume(&mut self, k: u32) {
        self.buf >>= k;
        self.n -= k;
    }

    /// Consumes the code length of table entry `e` (bits 0-4; bits 5-7 are zero, so the
    /// shift needs no mask of its own: x86 shifts by the count modulo 64). This takes an
    /// instruction off the chain from one table look-up to the next.
    #[inline(always)]
    fn consume_entry(&mut self, e: u32) {
        self.buf >>= e & 63;
        self.n -= e & 0x1f;
    }

    /// Takes `k` ≤ 32 bits; the buffer must hold them.
    #[inline(always)]
    fn take(&mut self, k: u32) -> u32 {
        let v = self.peek(k);
        self.consume(k);
        v
    }

    /// Bit offset of the next unread bit.
    #[inline(always)]
    fn bit(&self) -> usize {
        self.pos * 8 - self.n as usize
    }

    /// Whether bits past the end of the data were consumed.
    #[inline(always)]
    fn overrun(&self) -> bool {
        self.pos > self.data.len() && self.bit() > self.data.len() * 8
    }
}

/// Builds a two-level decoding table for `lens` into `table`; `entry` gives the entry
/// (without length) for a symbol, or `None` for a symbol that must not occur. Returns an
/// error for an over-subscribed or (beyond what RFC 1951 / zlib allow) incomplete code.
fn build(
    lens: &[u8],
    root: u32,
    table: &mut [u32],
    entry: impl Fn(usize) -> Option<u32>,
    incomplete_ok: bool,
) -> Result<(), &'static str> {
    let count = check_code(lens, incomplete_ok)?;
    let root_size = 1usize << root;
    table[..root_size].fill(0);
    // Canonical codes.
    let mut next = [0u32; 16];
    let mut code = 0u32;
    for l in 1..16 {
        next[l] = code;
        code = (code + u32::from(count[l])) << 1;
    }
    let mut codes = [0u32; 320];
    for (sym, &l) in lens.iter().enumerate() {
        if l > 0 {
            let c = next[usize::from(l)];
            next[usize::from(l)] += 1;
            codes[sym] = c.reverse_bits() >> (32 - u32::from(l));
        }
    }
    // Sub-table sizes: the longest code under each root prefix.
    let mut longest = [0u8; 1 << LIT_BITS];
    for (sym, &l) in lens.iter().enumerate() {
        if u32::from(l) > root {
            let p = (codes[sym] & ((1 << root) - 1)) as usize;
            longest[p] = longest[p].max(l);
        }
    }
    let mut end = root_size;
    for (p, &l) in longest[..root_size].iter().enumerate() {
        if l > 0 {
            let bits = u32::from(l) - root;
            let size = 1usize << bits;
            if end + size > table.len() {
                return Err("a Huffman code too large for the tables");
            }
            table[end..end + size].fill(0);
            table[p] = ((end as u32) << 16) | KIND_SUB | bits;
            end += size;
        }
    }
    for (sym, &l) in lens.iter().enumerate() {
        if l == 0 {
            continue;
        }
        let l = u32::from(l);
        let e = match entry(sym) {
            // The extra bits' count is in bits 0-4 already.
            Some(e) => (e + l) | (l << 8),
            None => 0,
        };
        let c = codes[sym];
        if l <= root {
            let mut i = c as usize;
            while i < root_size {
                table[i] = e;
                i += 1 << l;
            }
        } else {
            let ptr = table[(c & ((1 << root) - 1)) as usize];
            let base = (ptr >> 16) as usize;
            let bits = ptr & 0x1f;
            let sub_len = l - root;
            let mut i = (c >> root) as usize;
            while i < 1 << bits {
                table[base + i] = e;
                i += 1 << sub_len;
            }
        }
    }
    Ok(())
}

/// The number of codes of each length in `lens`, if they make a code that RFC 1951 (as
/// zlib reads it) allows: not over-subscribed, and complete unless `incomplete_ok` and
/// it has one code of length 1 or none.
fn check_code(lens: &[u8], incomplete_ok: bool) -> Result<[u16; 16], &'static str> {
    let mut count = [0u16; 16];
    for &l in lens {
        count[usize::from(l)] += 1;
    }
    count[0] = 0;
    let mut left: i32 = 1;
    for &c in &count[1..] {
        left = left * 2 - i32::from(c);
        if left < 0 {
            return Err("an over-subscribed Huffman code");
        }
    }
    let used: u16 = count[1..].iter().sum();
    if left > 0 {
        // A single code of length 1 (RFC 1951: one distance code) or no code at all.
        let single = used == 1 && count[1] == 1;
        if !(incomplete_ok && (single || used == 0)) {
            return Err("an incomplete Huffman code");
        }
    }
    Ok(count)
}

fn lit_entry(sym: usize) -> Option<u32> {
    match sym {
        0..=255 => Some(KIND_LIT | ((sym as u32) << 16)),
        256 => Some(KIND_EOB),
        257..=285 => {
            let i = sym - 257;
            Some(KIND_LEN | u32::from(LEN_EXTRA[i]) | (u32::from(LEN_BASE[i]) << 16))
        }
        _ => None,
    }
}

fn dist_entry(sym: usize) -> Option<u32> {
    (sym < 30).then(|| u32::from(DIST_EXTRA[sym]) | (u32::from(DIST_BASE[sym]) << 16))
}

/// The value of a length or distance entry `e` whose code and extra bits were the low
/// bits of `saved`: the base plus the extra bits.
#[inline(always)]
fn value(e: u32, saved: u64) -> usize {
    let extra = (saved & ((1u64 << (e & 0x1f)) - 1)) >> ((e >> 8) & 0xf);
    ((e >> 16) & VALUE_MASK) as usize + extra as usize
}

/// Looks `bits` up in a two-level table; returns the entry (0 for no code).
#[inline(always)]
fn lookup(table: &[u32], buf: u64, root: u32) -> u32 {
    let e = table[(buf & ((1 << root) - 1)) as usize];
    if e & KIND_SUB == 0 {
        return e;
    }
    let sub = (buf >> root) as usize & ((1 << (e & 0x1f)) - 1);
    // Sub-table entries hold the full code length.
    table[(e >> 16) as usize + sub]
}

/// Reads a dynamic block header's code lengths (after BFINAL/BTYPE) and builds the
/// tables. Shared by the decoder and the block finder.
fn read_dynamic(
    bits: &mut Bits<'_>,
    lit: &mut [u32; LIT_TABLE],
    dist: &mut [u32; DIST_TABLE],
) -> Result<(), &'static str> {
    let mut lens = [0u8; 286 + 30];
    let (hlit, total) = read_lengths(bits, &mut lens)?;
    build(&lens[..hlit], LIT_BITS, &mut lit[..], lit_entry, true)?;
    build(
        &lens[hlit..total],
        DIST_BITS,
        &mut dist[..],
        dist_entry,
        true,
    )?;
    Ok(())
}

/// Reads a dynamic block header's code lengths into `lens`: the literal/length count and
/// the total count.
fn read_lengths(
    bits: &mut Bits<'_>,
    lens: &mut [u8; 286 + 30],
) -> Result<(usize, usize), &'static str> {
    bits.refill();
    let hlit = bits.take(5) as usize + 257;
    let hdist = bits.take(5) as usize + 1;
    let hclen = bits.take(4) as usize + 4;
    if hlit > 286 || hdist > 30 {
        return Err("too many length or distance codes");
    }
    let mut cl = [0u8; 19];
    for (k, &i) in CL_ORDER[..hclen].iter().enumerate() {
        if k % 10 == 0 {
            bits.refill();
        }
        cl[i] = bits.take(3) as u8;
    }
    let mut cl_table = [0u32; 128];
    build(&cl, 7, &mut cl_table, |s| Some((s as u32) << 16), false)?;
    let total = hlit + hdist;
    let mut i = 0;
    while i < total {
        bits.refill();
        let e = cl_table[bits.peek(7) as usize];
        let l = e & 0x1f;
        if l == 0 {
            return Err("an invalid code-length code");
        }
        bits.consume(l);
        let sym = e >> 16;
        let (value, repeat) = match sym {
            0..=15 => (sym as u8, 1),
            16 => {
                if i == 0 {
                    return Err("a repeat of no previous code length");
                }
                (lens[i - 1], 3 + bits.take(2) as usize)
            }
            17 => (0, 3 + bits.take(3) as usize),
            _ => (0, 11 + bits.take(7) as usize),
        };
        if i + repeat > total {
            return Err("code lengths that run past their count");
        }
        lens[i..i + repeat].fill(value);
        i += repeat;
    }
    if lens[256] == 0 {
        return Err("no end-of-block code");
    }
    Ok((hlit, total))
}

/// The fixed Huffman code's lengths.
fn fixed_tables(lit: &mut [u32; LIT_TABLE], dist: &mut [u32; DIST_TABLE]) {
    let mut lens = [0u8; 288];
    lens[..144].fill(8);
    lens[144..256].fill(9);
    lens[256..280].fill(7);
    lens[280..].fill(8);
    // Complete codes: these cannot fail.
    let _ = build(&lens, LIT_BITS, &mut lit[..], lit_entry, false);
    let _ = build(&[5u8; 32], DIST_BITS, &mut dist[..], dist_entry, false);
}

/// Whether a block that the block finder recognises starts at `bit`: a non-final
/// dynamic block, or a non-final stored block whose padding bits are zero. `None` when
/// the data ends first.
fn findable_at(data: &[u8], bit: usize) -> Option<bool> {
    if bit + 3 > data.len() * 8 {
        return None;
    }
    let mut b = Bits::at(data, bit);
    b.refill();
    let head = b.take(3);
    Some(match head {
        0b100 => true,
        0b000 => {
            let pad = (8 - (bit + 3) % 8) % 8;
            b.peek(pad as u32) == 0
        }
        _ => false,
    })
}

impl Inflater {
    /// A decoder about to read a block header at bit `bit`.
    pub(crate) fn new(bit: usize) -> Inflater {
        Inflater {
            lit: Box::new([0; LIT_TABLE]),
            dist: Box::new([0; DIST_TABLE]),
            phase: Phase::Header,
            last: false,
            bit,
        }
    }

    /// Starts over at a block header at `bit` (a new member's first block).
    pub(crate) fn restart(&mut self, bit: usize) {
        self.phase = Phase::Header;
        self.last = false;
        self.bit = bit;
    }

    /// Moves the bit offset back by `bytes` (the data will be given from `bytes` later).
    pub(crate) fn rebase(&mut self, bytes: usize) {
        self.bit -= bytes * 8;
    }

    /// Decodes from `self.bit` into `out[*len..]` (see [`Stop`]). `out` must hold
    /// `limit + OVERSHOOT` elements; back-references reach `hist`.
    pub(crate) fn run<T: Symbol>(
        &mut self,
        data: &[u8],
        out: &mut [T],
        len: &mut usize,
        limit: usize,
        hist: &History<'_, T>,
        stop_bit: usize,
    ) -> Result<Stop, InflateError> {
        debug_assert!(out.len() >= limit + OVERSHOOT);
        loop {
            if let Some(stop) = self.outside_huffman(data, out, len, limit, stop_bit)? {
                return Ok(stop);
            }
            match self.huffman(data, out, len, limit, hist)? {
                Flow::EndOfBlock => self.end_block(),
                Flow::Full => return Ok(Stop::OutputFull),
                Flow::NeedInput => return Ok(Stop::NeedInput),
            }
        }
    }

    /// The phases of [`Inflater::run`] other than a Huffman block's symbols (block
    /// headers, stored data): `None` when a Huffman block's symbols come next.
    fn outside_huffman<T: Symbol>(
        &mut self,
        data: &[u8],
        out: &mut [T],
        len: &mut usize,
        limit: usize,
        stop_bit: usize,
    ) -> Result<Option<Stop>, InflateError> {
        loop {
            match self.phase {
                Phase::Huffman => return Ok(None),
                Phase::Done => return Ok(Some(Stop::FinalEnd)),
                Phase::Header => {
                    if self.bit >= stop_bit {
                        match findable_at(data, self.bit) {
                            None => return Ok(Some(Stop::NeedInput)),
                            Some(true) => return Ok(Some(Stop::Boundary)),
                            Some(false) => {}
                        }
                    }
                    let start = self.bit;
                    let mut bits = Bits::at(data, start);
                    bits.refill();
                    let last = bits.take(1) == 1;
                    let kind = bits.take(2);
                    let result = match kind {
                        0 => {
                            let pad = (bits.bit() % 8) as u32;
                            if pad > 0 {
                                bits.consume(8 - pad);
                            }
                            bits.refill();
                            let l = bits.take(16);
                            let nl = bits.take(16);
                            if l != !nl & 0xffff {
                                Err("a stored block whose length check fails")
                            } else {
                                Ok(Phase::Stored(l))
                            }
                        }
                        1 => {
                            fixed_tables(&mut self.lit, &mut self.dist);
                            Ok(Phase::Huffman)
                        }
                        2 => read_dynamic(&mut bits, &mut self.lit, &mut self.dist)
                            .map(|()| Phase::Huffman),
                        _ => Err("a block of the reserved type 3"),
                    };
                    if bits.overrun() {
                        return Ok(Some(Stop::NeedInput));
                    }
                    self.phase = result.map_err(|what| InflateError { bit: start, what })?;
                    self.last = last;
                    self.bit = bits.bit();
                }
                Phase::Stored(left) => {
                    // Stored data starts byte-aligned.
                    let at = self.bit / 8;
                    let have = data.len().saturating_sub(at);
                    let room = limit.saturating_sub(*len);
                    let n = (left as usize).min(have).min(room);
                    for (o, &b) in out[*len..*len + n].iter_mut().zip(&data[at..at + n]) {
                        *o = T::literal(b);
                    }
                    *len += n;
                    self.bit += n * 8;
                    let left = left - n as u32;
                    if left == 0 {
                        self.end_block();
                    } else {
                        self.phase = Phase::Stored(left);
                        return Ok(Some(if room == n {
                            Stop::OutputFull
                        } else {
                            Stop::NeedInput
                        }));
                    }
                }
            }
        }
    }

    /// After a block's last symbol or byte: the next header, or the end.
    fn end_block(&mut self) {
        self.phase = if self.last {
            Phase::Done
        } else {
            Phase::Header
        };
    }

    /// Takes the state a fast step left: the bit position, and the next phase after an
    /// end-of-block (a fault is left to be met again by the sequential loop).
    fn settle(&mut self, step: Step, bits: &Bits<'_>) {
        match step {
            Step::Go => self.bit = bits.bit(),
            Step::EndOfBlock => {
                self.bit = bits.bit();
                self.end_block();
            }
            Step::Fault(e) => self.bit = e.bit,
        }
    }

    /// Decodes symbols of the current Huffman block.
    #[inline(never)]
    fn huffman<T: Symbol>(
        &mut self,
        data: &[u8],
        out: &mut [T],
        len: &mut usize,
        limit: usize,
        hist: &History<'_, T>,
    ) -> Result<Flow, InflateError> {
        let lit = &*self.lit;
        let dist_table = &*self.dist;
        let mut bits = Bits::at(data, self.bit);
        let mut n = *len;
        // The fast loop: at least 16 bytes of input ahead (no refill can run out, no
        // symbol can read past the end) and room for three literals or one match.
        while n < limit && bits.pos + 16 <= data.len() {
            match fast_step(&mut bits, lit, dist_table, out, &mut n, hist) {
                Step::Go => {}
                Step::EndOfBlock => {
                    *len = n;
                    self.bit = bits.bit();
                    return Ok(Flow::EndOfBlock);
                }
                Step::Fault(e) => {
                    *len = n;
                    self.bit = e.bit;
                    return Err(e);
                }
            }
        }
        let flow = loop {
            if n >= limit {
                break Ok(Flow::Full);
            }
            let saved = (bits.pos, bits.buf, bits.n);
            bits.refill();
            let e = lookup(lit, bits.buf, LIT_BITS);
            let l = e & 0x1f;
            if is_literal(e) {
                bits.consume(l);
                out[n] = T::literal((e >> 16) as u8);
                n += 1;
                if bits.overrun() {
                    n -= 1;
                    (bits.pos, bits.buf, bits.n) = saved;
                    break Ok(Flow::NeedInput);
                }
                continue;
            }
            let fail = |bits: &Bits<'_>, what| {
                if bits.overrun() {
                    Ok(Flow::NeedInput)
                } else {
                    Err(InflateError {
                        bit: saved.0 * 8 - saved.2 as usize,
                        what,
                    })
                }
            };
            if l == 0 {
                let r = fail(&bits, "an invalid literal/length code");
                (bits.pos, bits.buf, bits.n) = saved;
                break r;
            }
            let before = bits.buf;
            bits.consume_entry(e);
            if e & KIND_EOB != 0 {
                if bits.overrun() {
                    (bits.pos, bits.buf, bits.n) = saved;
                    break Ok(Flow::NeedInput);
                }
                break Ok(Flow::EndOfBlock);
            }
            let length = value(e, before);
            let d = lookup(dist_table, bits.buf, DIST_BITS);
            let dl = d & 0x1f;
            if dl == 0 {
                let r = fail(&bits, "an invalid distance code");
                (bits.pos, bits.buf, bits.n) = saved;
                break r;
            }
            let before = bits.buf;
            bits.consume_entry(d);
            let distance = value(d, before);
            if bits.overrun() {
                (bits.pos, bits.buf, bits.n) = saved;
                break Ok(Flow::NeedInput);
            }
            let reach = n - hist.floor
                + if hist.floor == 0 {
                    hist.prefix.len()
                } else {
                    0
                };
            if distance > reach {
                let r = fail(&bits, "a distance too far back");
                (bits.pos, bits.buf, bits.n) = saved;
                break r;
            }
            if distance <= n - hist.floor {
                let src = n - distance;
                if distance >= length {
                    out.copy_within(src..src + length, n);
                } else if distance == 1 {
                    let v = out[src];
                    out[n..n + length].fill(v);
                } else {
                    for k in 0..length {
                        out[n + k] = out[src + k];
                    }
                }
            } else {
                copy_from_prefix(out, n, distance, length, hist.prefix);
            }
            n += length;
        };
        *len = n;
        self.bit = bits.bit();
        flow
    }
}

/// One of two streams that [`run_pair`] decodes side by side: what [`Inflater::run`]
/// takes for it.
pub(crate) struct Lane<'a, 'o, T> {
    pub(crate) inf: &'a mut Inflater,
    pub(crate) data: &'a [u8],
    pub(crate) out: &'o mut [T],
    pub(crate) len: usize,
    pub(crate) limit: usize,
    pub(crate) hist: &'a History<'a, T>,
    pub(crate) stop_bit: usize,
}

impl<T: Symbol> Lane<'_, '_, T> {
    /// Whether the fast loop may take a step: output room for a match, and 16 bytes of
    /// input after the bit buffer's next load (which reads up to 8 bytes past the bit).
    fn fast_ready(&self) -> bool {
        self.len < self.limit && self.inf.bit / 8 + 8 + 16 <= self.data.len()
    }
}

/// Which of the two lanes of [`run_pair`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    A,
    B,
}

/// Runs two independent streams as [`Inflater::run`] would run each, until either
/// stops: returns that one's side and result, and leaves the other where a later call
/// (or `run`) goes on. While both are inside Huffman blocks, a fast-loop step of each
/// alternates with one of the other: one stream's symbols wait on a chain of table
/// look-ups (each look-up's index is the bits left by the one before), and two
/// independent chains let the core overlap them (on the corpus's traces, two streams
/// decode side by side in 72 % of the time they take one after the other;
/// `benches/inflate.rs`). The output is the same as from two runs.
pub(crate) fn run_pair<'a, 'o, T: Symbol>(
    a: &mut Lane<'a, 'o, T>,
    b: &mut Lane<'a, 'o, T>,
) -> (Side, Result<Stop, InflateError>) {
    loop {
        for (side, x) in [(Side::A, &mut *a), (Side::B, &mut *b)] {
            match x
                .inf
                .outside_huffman(x.data, x.out, &mut x.len, x.limit, x.stop_bit)
            {
                Ok(None) => {}
                Ok(Some(stop)) => return (side, Ok(stop)),
                Err(e) => return (side, Err(e)),
            }
        }
        let faulted = interleave(a, b);
        // A lane the fast loop cannot take on (near its output limit or its input's
        // end, or at damage) runs its block on its own, as `run` would.
        for (side, x, fault) in [
            (Side::A, &mut *a, faulted[0]),
            (Side::B, &mut *b, faulted[1]),
        ] {
            if x.inf.phase == Phase::Huffman && (fault || !x.fast_ready()) {
                match x.inf.huffman(x.data, x.out, &mut x.len, x.limit, x.hist) {
                    Ok(Flow::EndOfBlock) => x.inf.end_block(),
                    Ok(Flow::Full) => return (side, Ok(Stop::OutputFull)),
                    Ok(Flow::NeedInput) => return (side, Ok(Stop::NeedInput)),
                    Err(e) => return (side, Err(e)),
                }
            }
        }
    }
}

/// The fast loops of two lanes inside Huffman blocks, a step of each in turn, until
/// either leaves its fast loop; each lane's state is then stored back. Returns which
/// lanes met damage (left at the damaged symbol for the sequential loop to report).
fn interleave<T: Symbol>(a: &mut Lane<'_, '_, T>, b: &mut Lane<'_, '_, T>) -> [bool; 2] {
    debug_assert!(a.inf.phase == Phase::Huffman && b.inf.phase == Phase::Huffman);
    let mut ba = Bits::at(a.data, a.inf.bit);
    let mut bb = Bits::at(b.data, b.inf.bit);
    let (mut na, mut nb) = (a.len, b.len);
    let (mut sa, mut sb) = (Step::Go, Step::Go);
    {
        let (la, da) = (&*a.inf.lit, &*a.inf.dist);
        let (lb, db) = (&*b.inf.lit, &*b.inf.dist);
        while na < a.limit
            && ba.pos + 16 <= a.data.len()
            && nb < b.limit
            && bb.pos + 16 <= b.data.len()
        {
            sa = fast_step(&mut ba, la, da, a.out, &mut na, a.hist);
            sb = fast_step(&mut bb, lb, db, b.out, &mut nb, b.hist);
            if !matches!((&sa, &sb), (Step::Go, Step::Go)) {
                break;
            }
        }
    }
    let faulted = [matches!(sa, Step::Fault(_)), matches!(sb, Step::Fault(_))];
    a.inf.settle(sa, &ba);
    a.len = na;
    b.inf.settle(sb, &bb);
    b.len = nb;
    faulted
}

/// What one step of the fast loop ended with.
enum Step {
    /// Go on.
    Go,
    /// The block's end-of-block code was consumed.
    EndOfBlock,
    /// Damage at the bit given (the bits are left after it, the output before it).
    Fault(InflateError),
}

/// One step of the Huffman fast loop: up to three literals, or one match (the caller
/// makes sure of 16 bytes of input ahead and room for a match).
#[inline(always)]
fn fast_step<T: Symbol>(
    bits: &mut Bits<'_>,
    lit: &[u32; LIT_TABLE],
    dist_table: &[u32; DIST_TABLE],
    out: &mut [T],
    n: &mut usize,
    hist: &History<'_, T>,
) -> Step {
    bits.refill();
    let mut e = lookup(lit, bits.buf, LIT_BITS);
    if is_literal(e) {
        // Up to three literals from one refill (15 bits each at most).
        bits.consume_entry(e);
        out[*n] = T::literal((e >> 16) as u8);
        *n += 1;
        e = lookup(lit, bits.buf, LIT_BITS);
        if is_literal(e) {
            bits.consume_entry(e);
            out[*n] = T::literal((e >> 16) as u8);
            *n += 1;
            e = lookup(lit, bits.buf, LIT_BITS);
            if is_literal(e) {
                bits.consume_entry(e);
                out[*n] = T::literal((e >> 16) as u8);
                *n += 1;
                return Step::Go;
            }
        }
        if bits.n < 48 {
            bits.refill();
            e = lookup(lit, bits.buf, LIT_BITS);
        }
    }
    let l = e & 0x1f;
    let at = bits.bit();
    if l == 0 {
        return Step::Fault(InflateError {
            bit: at,
            what: "an invalid literal/length code",
        });
    }
    let saved = bits.buf;
    bits.consume_entry(e);
    if e & KIND_EOB != 0 {
        return Step::EndOfBlock;
    }
    let length = value(e, saved);
    let d = lookup(dist_table, bits.buf, DIST_BITS);
    let dl = d & 0x1f;
    if dl == 0 {
        return Step::Fault(InflateError {
            bit: at,
            what: "an invalid distance code",
        });
    }
    let saved = bits.buf;
    bits.consume_entry(d);
    let distance = value(d, saved);
    if distance <= *n - hist.floor {
        let src = *n - distance;
        if distance >= 8 {
            // Whole words, overshooting into the slack: each source word was
            // written before its destination.
            let mut k = 0;
            while k < length {
                let mut word = [T::default(); 8];
                word.copy_from_slice(&out[src + k..src + k + 8]);
                out[*n + k..*n + k + 8].copy_from_slice(&word);
                k += 8;
            }
        } else if distance == 1 {
            let v = out[src];
            out[*n..*n + length].fill(v);
        } else {
            for k in 0..length {
                out[*n + k] = out[src + k];
            }
        }
        *n += length;
    } else if distance
        <= *n - hist.floor
            + if hist.floor == 0 {
                hist.prefix.len()
            } else {
                0
            }
    {
        copy_from_prefix(out, *n, distance, length, hist.prefix);
        *n += length;
    } else {
        return Step::Fault(InflateError {
            bit: at,
            what: "a distance too far back",
        });
    }
    Step::Go
}

/// A match that starts in the history before `out[0]`.
fn copy_from_prefix<T: Symbol>(out: &mut [T], n: usize, distance: usize, length: usize, p: &[T]) {
    for k in 0..length {
        let at = n + k;
        out[at] = if at >= distance {
            out[at - distance]
        } else {
            p[p.len() + at - distance]
        };
    }
}

enum Flow {
    EndOfBlock,
    Full,
    NeedInput,
}

/// The first bit at or after `from` (and before `to`) where a block that [`findable_at`]
/// recognises plausibly starts: a non-final dynamic block whose header builds valid
/// codes, or a non-final stored block with zero padding and a matching length check.
///
/// The search takes 64 bit positions at a time. Cheap filters mark the candidates in a
/// mask without a branch per position: a table over the 13 bits of BFINAL, BTYPE, HLIT
/// and HDIST for dynamic blocks (about one position in nine passes), and for stored
/// blocks a test per byte of LEN against its complement, which marks the eight
/// positions a header ending at that byte could start at. Only the marked positions
/// get the full checks, in order.
pub(crate) fn find_block(data: &[u8], from: usize, to: usize) -> Option<usize> {
    let filter = &HEADER_FILTER;
    let to = to.min(data.len() * 8);
    // Windows of 64 positions start at a byte boundary.
    let mut byte = from / 8;
    while byte * 8 < to {
        let mut mask = 0u64;
        for g in 0..8 {
            // At least 21 bits: eight positions and the 13 bits after the last.
            let v = load64(data, byte + g);
            for s in 0..8 {
                mask |= u64::from(filter[(v >> s) as usize & 0x1fff]) << (8 * g + s);
            }
        }
        // A stored block's LEN starts at a byte `b`, after 3 header bits and 0-7 padding
        // bits: the header starts at one of the 8 positions 8b - 10 ..= 8b - 3.
        for b in byte + 1..byte + 10 {
            if let Some(h) = data.get(b..b + 4)
                && h[0] == !h[2]
                && h[1] == !h[3]
            {
                let last = b * 8 - 3;
                for at in last.saturating_sub(7)..=last {
                    if let Some(i) = at.checked_sub(byte * 8).filter(|&i| i < 64) {
                        mask |= 1 << i;
                    }
                }
            }
        }
        let first = from.saturating_sub(byte * 8);
        if first > 0 {
            mask &= !0u64 << first;
        }
        let span = to - byte * 8;
        if span < 64 {
            mask &= (1u64 << span) - 1;
        }
        while mask != 0 {
            let at = byte * 8 + mask.trailing_zeros() as usize;
            if block_at(data, at, filter) {
                return Some(at);
            }
            mask &= mask - 1;
        }
        byte += 8;
    }
    None
}

/// A table over the first 13 bits of a block header (BFINAL, BTYPE, HLIT, HDIST): 1
/// where a non-final dynamic block with allowed counts could start.
static HEADER_FILTER: [u8; 1 << 13] = {
    let mut t = [0u8; 1 << 13];
    let mut i = 0;
    while i < t.len() {
        let hlit = (i >> 3) & 0x1f;
        let hdist = (i >> 8) & 0x1f;
        t[i] = (i & 7 == 0b100 && hlit <= 29 && hdist <= 29) as u8;
        i += 1;
    }
    t
};

/// What four 3-bit code-length code lengths take from the Kraft sum (out of 128: a
/// length `l` takes `128 >> l`, a length 0 nothing), for each 12-bit group.
static KRAFT4: [u16; 1 << 12] = {
    let mut t = [0u16; 1 << 12];
    let mut i = 0;
    while i < t.len() {
        let mut k = 0;
        while k < 4 {
            let l = (i >> (3 * k)) & 7;
            if l > 0 {
                t[i] += 128 >> l;
            }
            k += 1;
        }
        i += 1;
    }
    t
};

/// The full check of a candidate position of [`find_block`].
fn block_at(data: &[u8], at: usize, filter: &[u8; 1 << 13]) -> bool {
    // At least 57 bits of the candidate: its 17 header bits and the HCLEN field.
    let v = load64(data, at / 8) >> (at % 8);
    if filter[(v & 0x1fff) as usize] != 0 {
        // The code-length code must be complete: up to 19 × 3 bits from bit 17,
        // again within one load, summed four lengths at a time.
        let hclen = ((v >> 13) & 0xf) as usize + 4;
        let cl = load64(data, (at + 17) / 8) >> ((at + 17) % 8);
        let cl = cl & ((1u64 << (3 * hclen)) - 1);
        let sum: u16 = (0..5)
            .map(|g| KRAFT4[(cl >> (12 * g)) as usize & 0xfff])
            .sum();
        sum == 128 && plausible_dynamic(data, at)
    } else if v & 7 == 0 {
        // Stored: zero padding to the byte boundary, then LEN and its complement.
        let pad = (8 - (at + 3) % 8) % 8;
        if (v >> 3) & ((1 << pad) - 1) != 0 {
            return false;
        }
        let b = (at + 3 + pad) / 8;
        data.get(b..b + 4)
            .is_some_and(|h| h[0] == !h[2] && h[1] == !h[3])
    } else {
        false
    }
}

/// Eight bytes from `at`, little-endian, zeros past the end.
#[inline(always)]
fn load64(data: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    match data.get(at..at + 8) {
        Some(b) => w.copy_from_slice(b),
        None => {
            let tail = data.get(at..).unwrap_or_default();
            w[..tail.len()].copy_from_slice(tail);
        }
    }
    u64::from_le_bytes(w)
}

/// The full check of a dynamic block header at `at`: its code lengths make codes that
/// the decoder accepts (checked by counting, without building tables).
fn plausible_dynamic(data: &[u8], at: usize) -> bool {
    let mut bits = Bits::at(data, at);
    bits.refill();
    bits.consume(3);
    let mut lens = [0u8; 286 + 30];
    let Ok((hlit, total)) = read_lengths(&mut bits, &mut lens) else {
        return false;
    };
    !bits.overrun()
        && check_code(&lens[..hlit], true).is_ok()
        && check_code(&lens[hlit..total], true).is_ok()
}

/// Entry points for `benches/inflate.rs` (not part of the API): the decoder's two loops
/// on a raw deflate stream, as the parallel gzip reader's workers run them.
#[doc(hidden)]
pub mod bench {
    use super::*;

    /// Decodes `data` to its final block into `out` as bytes; returns the output length.
    pub fn bytes(data: &[u8], out: &mut Vec<u8>) -> usize {
        run_all(data, 0, out, &[])
    }

    /// Decodes `data` from the first block start the finder finds at or after bit
    /// `from`, with an unknown window (16-bit output, markers for the window); returns
    /// the output length, or 0 when no block start is found.
    pub fn markers(data: &[u8], from: usize, out: &mut Vec<u16>) -> usize {
        let Some(at) = find_block(data, from, data.len() * 8) else {
            return 0;
        };
        run_all(data, at, out, marker_window())
    }

    /// Decodes `data` from bit 0 and from the first block start after bit `from`, both
    /// with markers, side by side (`run_pair`), each to the stream's end. Returns the
    /// two output lengths.
    pub fn markers_pair(data: &[u8], from: usize, outs: &mut [Vec<u16>; 2]) -> (usize, usize) {
        let Some(at) = find_block(data, from, data.len() * 8) else {
            return (0, 0);
        };
        let hist = History {
            prefix: marker_window(),
            floor: 0,
        };
        let (ia, ib) = (&mut Inflater::new(0), &mut Inflater::new(at));
        let [oa, ob] = outs;
        for o in [&mut *oa, &mut *ob] {
            if o.len() < data.len() * 20 {
                o.resize(data.len() * 20, 0);
            }
        }
        let limit = oa.len() - OVERSHOOT;
        let lane = |inf, out| Lane {
            inf,
            data,
            out,
            len: 0,
            limit,
            hist: &hist,
            stop_bit: usize::MAX,
        };
        let (mut a, mut b) = (lane(ia, &mut oa[..]), lane(ib, &mut ob[..]));
        // Both run to their final block; the one that ends first leaves the other to
        // finish alone.
        let (side, _) = run_pair(&mut a, &mut b);
        let rest = if side == Side::A { &mut b } else { &mut a };
        let _ = rest
            .inf
            .run(rest.data, rest.out, &mut rest.len, limit, &hist, usize::MAX);
        (a.len, b.len)
    }

    /// Where the block finder finds the first block start at or after `from`.
    pub fn find(data: &[u8], from: usize) -> Option<usize> {
        find_block(data, from, data.len() * 8)
    }

    fn run_all<T: Symbol>(data: &[u8], at: usize, out: &mut Vec<T>, prefix: &[T]) -> usize {
        let mut inf = Inflater::new(at);
        let mut len = 0;
        let hist = History { prefix, floor: 0 };
        loop {
            if out.len() < len + (1 << 20) + OVERSHOOT {
                out.resize((len + (1 << 20) + OVERSHOOT) * 2, T::default());
            }
            let limit = out.len() - OVERSHOOT;
            match inf.run(data, out, &mut len, limit, &hist, usize::MAX) {
                Ok(Stop::OutputFull) => {}
                _ => return len,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn deflate(data: &[u8], level: u32) -> Vec<u8> {
        let mut w = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(level));
        w.write_all(data).unwrap();
        w.finish().unwrap()
    }

    fn text(len: usize) -> Vec<u8> {
        let mut x = 12345u32;
        (0..len)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                b"the quick brown fox jumps over lazy dogs 0123"[(x >> 16) as usize % 45]
            })
            .collect()
    }

    fn inflate_all(packed: &[u8]) -> Result<Vec<u8>, InflateError> {
        let mut inf = Inflater::new(0);
        let mut out = vec![0u8; 1 << 16];
        let mut len = 0;
        let hist = History {
            prefix: &[],
            floor: 0,
        };
        loop {
            if out.len() < len + (1 << 15) + OVERSHOOT {
                out.resize(out.len() * 2, 0);
            }
            let limit = out.len() - OVERSHOOT;
            match inf.run(packed, &mut out, &mut len, limit, &hist, usize::MAX)? {
                Stop::FinalEnd => break,
                Stop::OutputFull => {}
                other => panic!("{other:?}"),
            }
        }
        out.truncate(len);
        Ok(out)
    }

    #[test]
    fn inflates_what_flate2_deflates() {
        for level in [0, 1, 6, 9] {
            for data in [text(300_000), vec![7u8; 100_000], b"a".to_vec(), Vec::new()] {
                let packed = deflate(&data, level);
                assert_eq!(inflate_all(&packed).unwrap(), data, "level {level}");
            }
        }
    }

    /// Runs of one stream: each result `run` gave (growing the limit by `step` after
    /// each full output) and the output.
    type Runs = (Vec<Result<Stop, InflateError>>, Vec<u16>);

    fn lane_start(data: &[u8], from: usize) -> usize {
        if from == 0 {
            0
        } else {
            find_block(data, from, data.len() * 8).unwrap()
        }
    }

    /// The unknown window as markers, or no window at all.
    fn window(marked: bool) -> &'static [u16] {
        if marked { marker_window() } else { &[] }
    }

    fn runs_alone(data: &[u8], from: usize, stop_bit: usize, step: usize, marked: bool) -> Runs {
        let hist = History {
            prefix: window(marked),
            floor: 0,
        };
        let mut inf = Inflater::new(lane_start(data, from));
        let mut out = vec![0u16; data.len() * 12 + OVERSHOOT];
        let (mut len, mut limit, mut got) = (0, step.min(data.len() * 12), Vec::new());
        loop {
            let r = inf.run(data, &mut out, &mut len, limit, &hist, stop_bit);
            let more = r == Ok(Stop::OutputFull) && limit < out.len() - OVERSHOOT;
            got.push(r);
            if !more {
                break;
            }
            limit = (limit + step).min(out.len() - OVERSHOOT);
        }
        out.truncate(len);
        (got, out)
    }

    /// A lane of a test: the data, the bit to search a start from (0: the data's
    /// start), the stop bit and the limit's step.
    type LaneCase = (&'static [u8], usize, usize, usize);

    fn runs_paired(lanes: [LaneCase; 2], marked: [bool; 2]) -> [Runs; 2] {
        let hists = marked.map(|m| History {
            prefix: window(m),
            floor: 0,
        });
        let mut infs = lanes.map(|(data, from, _, _)| Inflater::new(lane_start(data, from)));
        let mut outs = lanes.map(|(data, ..)| vec![0u16; data.len() * 12 + OVERSHOOT]);
        let mut got: [Vec<Result<Stop, InflateError>>; 2] = [Vec::new(), Vec::new()];
        let [ia, ib] = &mut infs;
        let [oa, ob] = &mut outs;
        let mut a = Lane {
            inf: ia,
            data: lanes[0].0,
            out: &mut oa[..],
            len: 0,
            limit: lanes[0].3.min(lanes[0].0.len() * 12),
            hist: &hists[0],
            stop_bit: lanes[0].2,
        };
        let mut b = Lane {
            inf: ib,
            data: lanes[1].0,
            out: &mut ob[..],
            len: 0,
            limit: lanes[1].3.min(lanes[1].0.len() * 12),
            hist: &hists[1],
            stop_bit: lanes[1].2,
        };
        let mut open = [true, true];
        while open[0] || open[1] {
            let (k, r) = if open[0] && open[1] {
                let (side, r) = run_pair(&mut a, &mut b);
                (usize::from(side == Side::B), r)
            } else {
                let k = usize::from(open[1]);
                let x = if k == 0 { &mut a } else { &mut b };
                (
                    k,
                    x.inf
                        .run(x.data, x.out, &mut x.len, x.limit, x.hist, x.stop_bit),
                )
            };
            let x = if k == 0 { &mut a } else { &mut b };
            let max = x.out.len() - OVERSHOOT;
            open[k] = r == Ok(Stop::OutputFull) && x.limit < max;
            got[k].push(r);
            x.limit = (x.limit + lanes[k].3).min(max);
        }
        let (la, lb) = (a.len, b.len);
        let [ga, gb] = got;
        let [mut oa, mut ob] = outs;
        oa.truncate(la);
        ob.truncate(lb);
        [(ga, oa), (gb, ob)]
    }

    #[test]
    fn two_lanes_side_by_side_give_what_two_runs_give() {
        // Dynamic, fixed and stored blocks; starts in the middle (markers), stop bits
        // (boundaries), small output limits (full output mid-block), a damaged block
        // header, and a stream cut short.
        let leak = |v: Vec<u8>| -> &'static [u8] { Box::leak(v.into_boxed_slice()) };
        let big = leak(deflate(&text(400_000), 6));
        let fast = leak(deflate(&text(150_000), 1));
        let stored = leak(deflate(&text(90_000), 0));
        // A block header two thirds in whose HLIT is made 31 (too many codes).
        let mut bad = big.to_vec();
        let (runs, _) = runs_alone(big, 0, big.len() * 8 * 2 / 3, 1 << 22, true);
        assert_eq!(runs.last(), Some(&Ok(Stop::Boundary)));
        let mut inf = Inflater::new(0);
        let mut out = vec![0u16; big.len() * 12 + OVERSHOOT];
        let hist = History {
            prefix: &[],
            floor: 0,
        };
        let limit = out.len() - OVERSHOOT;
        inf.run(big, &mut out, &mut 0, limit, &hist, big.len() * 8 * 2 / 3)
            .unwrap();
        for k in 3..8 {
            let at = inf.bit + k;
            bad[at / 8] |= 1 << (at % 8);
        }
        let bad = leak(bad);
        let cut = &big[..big.len() * 2 / 3];
        // A fixed block that starts with a match: with no window, a distance too far
        // back (met in the fast loop: 64 bytes follow).
        let mut early = vec![0u8; 64];
        // BFINAL 1, BTYPE 01, length code 257 (0000001), distance code 0 (00000).
        let head: u32 = 1 | (1 << 1) | (0b1000000 << 3);
        early[..2].copy_from_slice(&head.to_le_bytes()[..2]);
        let early = leak(early);
        let n = big.len() * 8;
        let cases: Vec<[LaneCase; 2]> = vec![
            [
                (big, 0, usize::MAX, 1 << 20),
                (big, n / 2, usize::MAX, 1 << 20),
            ],
            [(big, 0, n / 2, 5_000), (big, n / 2, usize::MAX, 3_000)],
            [(big, n / 3, n / 2, 777), (fast, 0, usize::MAX, 1 << 20)],
            [
                (stored, 0, usize::MAX, 10_000),
                (big, n / 4, usize::MAX, 1 << 20),
            ],
            [
                (bad, 0, usize::MAX, 1 << 20),
                (big, n / 2, usize::MAX, 4_096),
            ],
            [
                (big, 0, usize::MAX, 50_000),
                (bad, n / 3, usize::MAX, 1 << 20),
            ],
            [(cut, 0, usize::MAX, 1 << 20), (fast, 0, usize::MAX, 2_000)],
            [
                (big, n / 2, usize::MAX, 1 << 20),
                (early, 0, usize::MAX, 1 << 20),
            ],
            [
                (early, 0, usize::MAX, 1 << 20),
                (fast, 0, usize::MAX, 1 << 20),
            ],
            [
                (early, 0, usize::MAX, 1 << 20),
                (early, 0, usize::MAX, 1 << 20),
            ],
        ];
        for (k, lanes) in cases.into_iter().enumerate() {
            let marked = lanes.map(|(data, ..)| !std::ptr::eq(data, early));
            let paired = runs_paired(lanes, marked);
            for (side, &(data, from, stop_bit, step)) in lanes.iter().enumerate() {
                let alone = runs_alone(data, from, stop_bit, step, marked[side]);
                assert_eq!(paired[side].0, alone.0, "case {k} lane {side}");
                assert!(
                    paired[side].1 == alone.1,
                    "case {k} lane {side}: output differs"
                );
                if std::ptr::eq(data, bad) || std::ptr::eq(data, early) {
                    assert!(
                        matches!(alone.0.last(), Some(Err(_))),
                        "{:?}",
                        alone.0.last()
                    );
                }
            }
        }
    }

    #[test]
    fn kraft_groups_sum_as_the_lengths_one_by_one() {
        let mut x = 7u64;
        for _ in 0..20_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            for hclen in 4..=19 {
                let cl = x & ((1u64 << (3 * hclen)) - 1);
                let one_by_one: u32 = (0..hclen)
                    .map(|k| match (cl >> (3 * k)) & 7 {
                        0 => 0,
                        l => 128 >> l,
                    })
                    .sum();
                let grouped: u32 = (0..5)
                    .map(|g| u32::from(KRAFT4[(cl >> (12 * g)) as usize & 0xfff]))
                    .sum();
                assert_eq!(grouped, one_by_one, "{cl:x} {hclen}");
            }
        }
    }

    #[test]
    fn the_masked_search_finds_what_a_check_of_every_position_finds() {
        // Deflate data, random bytes, and bytes rich in stored-header look-alikes
        // (LEN/NLEN pairs, zero runs); searches from every offset of a sample.
        let mut x = 99u32;
        let mut random = || {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (x >> 16) as u8
        };
        let noise: Vec<u8> = (0..20_000).map(|_| random()).collect();
        let mut stored = Vec::new();
        for k in 0..2_000u16 {
            let len = k.wrapping_mul(7919);
            stored.push(random() & 0xf8);
            stored.extend_from_slice(&len.to_le_bytes());
            stored.extend_from_slice(&(!len).to_le_bytes());
            stored.extend(std::iter::repeat_n(0, usize::from(k % 3)));
        }
        let filter = &HEADER_FILTER;
        for data in [
            deflate(&text(200_000), 6),
            deflate(&text(50_000), 1),
            noise,
            stored,
        ] {
            let end = data.len() * 8;
            for from in (0..end)
                .step_by(997)
                .chain([0, 1, 7, end - 70, end - 3, end])
            {
                for to in [end, from + 1, from + 64, from + 200] {
                    let want = (from..to.min(end)).find(|&at| block_at(&data, at, filter));
                    assert_eq!(find_block(&data, from, to), want, "from {from} to {to}");
                }
            }
        }
    }

    #[test]
    fn finds_the_blocks_that_the_decoder_stops_at() {
        let data = text(2_000_000);
        let packed = deflate(&data, 6);
        // Every boundary the decoder stops at is the first the finder finds from there.
        let mut inf = Inflater::new(0);
        let mut out = vec![0u8; data.len() + 1000];
        let mut len = 0;
        let hist = History {
            prefix: &[],
            floor: 0,
        };
        let mut found = 0;
        let mut wrong = 0;
        for stop in (1..packed.len() * 8).step_by(50_000) {
            if inf.bit >= stop {
                continue;
            }
            let limit = out.len() - OVERSHOOT;
            match inf
                .run(&packed, &mut out, &mut len, limit, &hist, stop)
                .unwrap()
            {
                Stop::Boundary => {
                    // No false negative; false positives before it are rare.
                    let end = packed.len() * 8;
                    assert_eq!(find_block(&packed, inf.bit, end), Some(inf.bit));
                    let first = find_block(&packed, stop, end).unwrap();
                    if first != inf.bit {
                        let head = Bits::at(&packed, first).peek(3);
                        eprintln!("false positive at {first} (type bits {head:03b})");
                        wrong += 1;
                    }
                    found += 1;
                }
                Stop::FinalEnd => break,
                other => panic!("{other:?}"),
            }
        }
        assert!(found > 5 && wrong * 5 <= found, "{found} {wrong}");
    }
}
