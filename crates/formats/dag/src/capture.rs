//! The DAG API wrapped once: a card, its receive streams (zero copy: packets borrow the
//! stream window) and its transmit streams. Every `unsafe` block of tracekit-dag is in
//! this module, each with its safety argument; everything above it is safe code.

use std::ffi::CString;
use std::io;
use std::os::raw::c_int;
use std::ptr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tracekit_core::{
    CaptureSource, Error, InterfaceInfo, Meta, Packet, PacketKind, Polled, Stats, TraceInfo,
    TsResolution,
};
use tracekit_erf::record::{ErfType, HEADER_LEN};
use tracekit_erf::{ErfNotes, decode_record};

use crate::DagOptions;

/// An open card, shared by the streams attached to it; closed when the last goes.
pub(crate) struct Card {
    fd: c_int,
    device: String,
}

impl Card {
    /// Opens the card at `device` (`/dev/dag0`).
    pub(crate) fn open(device: &str, options: &DagOptions) -> Result<Arc<Card>, Error> {
        let c = CString::new(device)
            .map_err(|_| Error::invalid_argument(format!("bad DAG device name {device:?}")))?;
        // SAFETY: `c` is a NUL-terminated string that outlives the call; dag_open only
        // reads it (the C signature lacks `const`).
        let fd = unsafe { dag_sys::dag_open(c.as_ptr().cast_mut()) };
        if fd < 0 {
            return Err(api_error(device, None, "dag_open"));
        }
        let card = Arc::new(Card {
            fd,
            device: device.to_string(),
        });
        if let Some(slen) = options.snaplen {
            let params = CString::new(format!("varlen slen={slen}")).unwrap_or_default();
            // SAFETY: `fd` is open; `params` is NUL-terminated and outlives the call.
            if unsafe { dag_sys::dag_configure(card.fd, params.as_ptr().cast_mut()) } < 0 {
                return Err(api_error(device, None, "dag_configure (snap length)"));
            }
        }
        Ok(card)
    }

    /// The card's receive streams.
    pub(crate) fn rx_streams(&self) -> Result<u32, Error> {
        // SAFETY: `fd` is open for the life of `self`.
        let n = unsafe { dag_sys::dag_rx_get_stream_count(self.fd) };
        if n < 0 {
            return Err(api_error(&self.device, None, "dag_rx_get_stream_count"));
        }
        Ok(n as u32)
    }

    /// Attaches and starts `stream`, with `extra` bytes of extra window (transmit).
    fn start(&self, stream: u32, extra: u64) -> Result<(), Error> {
        let s = stream as c_int;
        // SAFETY: `fd` is open; the call takes plain integers.
        if unsafe { dag_sys::dag_attach_stream64(self.fd, s, 0, extra) } < 0 {
            return Err(api_error(&self.device, Some(stream), "dag_attach_stream64"));
        }
        // SAFETY: as above; the stream was attached just now.
        if unsafe { dag_sys::dag_start_stream(self.fd, s) } < 0 {
            let e = api_error(&self.device, Some(stream), "dag_start_stream");
            // SAFETY: as above.
            unsafe { dag_sys::dag_detach_stream(self.fd, s) };
            return Err(e);
        }
        Ok(())
    }

    /// Stops and detaches `stream` (errors ignored: this is teardown).
    fn stop(&self, stream: u32) {
        // SAFETY: `fd` is open; plain integers. After this no pointer into the stream's
        // memory is used (its owner is being dropped).
        unsafe {
            dag_sys::dag_stop_stream(self.fd, stream as c_int);
            dag_sys::dag_detach_stream(self.fd, stream as c_int);
        }
    }
}

impl Drop for Card {
    fn drop(&mut self) {
        // SAFETY: the last stream holding this card is gone, so no pointer into its
        // memory remains; `fd` is closed exactly once.
        unsafe { dag_sys::dag_close(self.fd) };
    }
}

/// An error from a DAG API call, naming the device, the stream and the call.
fn api_error(device: &str, stream: Option<u32>, call: &str) -> Error {
    let e = io::Error::last_os_error();
    let hint = match e.raw_os_error() {
        Some(libc::ENOENT) => " (no such DAG card)",
        Some(libc::EBUSY) => " (in use by another capture)",
        Some(libc::ENOMEM) => " (no memory assigned to the stream)",
        Some(libc::EINVAL) if call == "dag_attach_stream64" => {
            " (no such stream: receive streams are even, transmit streams odd)"
        }
        _ => "",
    };
    let place = match stream {
        Some(s) => format!("{device} stream {s}"),
        None => device.to_string(),
    };
    Error::from(io::Error::new(
        e.kind(),
        format!("{place}: {call}: {e}{hint}"),
    ))
}

/// Converts a duration to the API's `timeval`.
fn timeval(d: Duration) -> libc::timeval {
    libc::timeval {
        tv_sec: d.as_secs() as libc::time_t,
        tv_usec: d.subsec_micros() as libc::suseconds_t,
    }
}

/// A receive stream of a DAG card: a [`CaptureSource`] whose packets borrow the stream
/// window. The window is handed back to the card only at the next advance, which needs
/// `&mut self`, so no packet can be read after the card reused its memory:
///
/// ```compile_fail
/// use tracekit_core::CaptureSource;
/// fn keep(s: &mut tracekit_dag::DagStream) {
///     let first = s.next_packet().unwrap().unwrap();
///     let second = s.next_packet(); // the window may move on here
///     println!("{}", first.caplen());
/// }
/// ```
///
/// `packet.to_owned()` keeps a copy.
pub struct DagStream {
    card: Arc<Card>,
    stream: u32,
    options: DagOptions,
    /// Start of the window the card gave at the last advance (null before the first).
    bottom: *mut u8,
    /// Bytes in the window.
    len: usize,
    /// Offset of the next record in the window.
    cursor: usize,
    /// The record last lent: its packet's place in the window, its metadata.
    current: Option<(usize, usize, Meta)>,
    stop: Arc<AtomicBool>,
    ended: bool,
    seen_interface: [bool; 8],
    delivered: u64,
    filtered: u64,
    dropped: u64,
    records: u64,
    bytes: u64,
    notes: ErfNotes,
}

// SAFETY: the raw pointer is into the stream's memory, which the card maps for the life
// of the attached stream; only this value reads it, and the DAG API allows each stream
// to be driven from any one thread at a time (libtrace runs one thread per stream).
unsafe impl Send for DagStream {}

impl std::fmt::Debug for DagStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DagStream")
            .field("device", &self.card.device)
            .field("stream", &self.stream)
            .field("delivered", &self.delivered)
            .field("dropped", &self.dropped)
            .finish_non_exhaustive()
    }
}

/// What one step of reading found.
pub(crate) enum Step {
    /// A record to lend: its packet's place in the window and its metadata.
    Record(usize, usize, Meta),
    /// Nothing arrived within the maximum wait.
    Idle,
    /// The capture ended (stop flag, or the software card's end of input).
    Ended,
}

impl DagStream {
    /// Attaches and starts receive stream `stream` of `card`.
    pub(crate) fn start(
        card: Arc<Card>,
        stream: u32,
        options: DagOptions,
        stop: Arc<AtomicBool>,
    ) -> Result<DagStream, Error> {
        if !stream.is_multiple_of(2) {
            return Err(Error::invalid_argument(format!(
                "{} stream {stream} is a transmit stream (receive streams are even)",
                card.device
            )));
        }
        card.start(stream, 0)?;
        let s = DagStream {
            card,
            stream,
            options,
            bottom: ptr::null_mut(),
            len: 0,
            cursor: 0,
            current: None,
            stop,
            ended: false,
            seen_interface: [false; 8],
            delivered: 0,
            filtered: 0,
            dropped: 0,
            records: 0,
            bytes: 0,
            notes: ErfNotes::default(),
        };
        s.set_poll(s.options.min_data, s.options.max_wait)?;
        Ok(s)
    }

    /// Changes how long an advance waits: until `min_data` bytes are there (0: it
    /// returns at once) or `max_wait` passed.
    pub fn set_wait(&mut self, min_data: u64, max_wait: Duration) -> Result<(), Error> {
        self.set_poll(min_data, max_wait)?;
        self.options.min_data = min_data;
        self.options.max_wait = max_wait;
        Ok(())
    }

    fn set_poll(&self, min_data: u64, max_wait: Duration) -> Result<(), Error> {
        let mut wait = timeval(max_wait);
        let mut poll = timeval(self.options.poll);
        // SAFETY: `fd` is open and the stream attached; both timevals outlive the call.
        let rc = unsafe {
            dag_sys::dag_set_stream_poll64(
                self.card.fd,
                self.stream as c_int,
                min_data,
                &mut wait,
                &mut poll,
            )
        };
        if rc < 0 {
            return Err(api_error(
                &self.card.device,
                Some(self.stream),
                "dag_set_stream_poll64",
            ));
        }
        Ok(())
    }

    /// How this stream is read.
    pub fn options(&self) -> &DagOptions {
        &self.options
    }

    /// The device path (`/dev/dag0`).
    pub fn device(&self) -> &str {
        &self.card.device
    }

    /// The stream number.
    pub fn stream(&self) -> u32 {
        self.stream
    }

    /// The card's descriptor (for the software card's test controls, say).
    pub fn raw_fd(&self) -> i32 {
        self.card.fd
    }

    /// Makes this stream obey `stop` (shared with other streams or a signal handler):
    /// once it is set, reading ends within the poll maximum wait.
    pub fn set_stop_flag(&mut self, stop: Arc<AtomicBool>) {
        self.stop = stop;
    }

    /// The stop flag of this stream.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// Records lost by the card on this stream, from the records' loss counters (the
    /// first record of each interface excluded: its counter covers the time before
    /// the capture started, as libtrace counts).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Oddities of the records read so far (flags, padding, types handed out whole).
    pub fn notes(&self) -> &ErfNotes {
        &self.notes
    }

    /// Bytes of records read so far (padding records included).
    pub fn bytes_read(&self) -> u64 {
        self.bytes
    }

    /// The window the card gave at the last advance.
    fn window(&self) -> &[u8] {
        if self.bottom.is_null() {
            return &[];
        }
        // SAFETY: the card returned `bottom` and `top = bottom + len` from the last
        // dag_advance_stream; the memory between them holds whole records, is mapped
        // for as long as the stream is attached (as long as `self` lives) and is not
        // reused by the card until the next dag_advance_stream, which needs `&mut self`
        // while this slice borrows `self`.
        unsafe { std::slice::from_raw_parts(self.bottom, self.len) }
    }

    /// Hands back what was read and waits (up to the poll maximum) for more. `false`:
    /// the capture ended.
    fn advance(&mut self) -> Result<bool, Error> {
        if self.stop.load(Ordering::Relaxed) {
            self.ended = true;
            return Ok(false);
        }
        self.current = None;
        let mut bottom = if self.bottom.is_null() {
            ptr::null_mut()
        } else {
            // SAFETY: `cursor <= len`, so this stays inside (or one past) the window.
            unsafe { self.bottom.add(self.cursor) }
        };
        // SAFETY: `fd` is open and the stream attached and started; `bottom` is NULL
        // before the first call (as the API asks) and afterwards a point of the last
        // window the card gave, at a record boundary: everything below it is handed
        // back. No slice of the window outlives this call (it needs `&mut self`).
        let top =
            unsafe { dag_sys::dag_advance_stream(self.card.fd, self.stream as c_int, &mut bottom) };
        if top.is_null() {
            if io::Error::last_os_error().raw_os_error() == Some(libc::ENODATA) {
                // The software card's end of input (DAGEMU_END=1); a card never ends.
                self.ended = true;
                self.bottom = ptr::null_mut();
                self.len = 0;
                self.cursor = 0;
                return Ok(false);
            }
            self.ended = true;
            return Err(api_error(
                &self.card.device,
                Some(self.stream),
                "dag_advance_stream",
            ));
        }
        self.bottom = bottom;
        self.len = (top as usize).saturating_sub(bottom as usize);
        self.cursor = 0;
        Ok(true)
    }

    /// The next record of the window, or advancing once when the window holds none.
    #[inline(always)]
    pub(crate) fn step(
        &mut self,
        keep: &mut dyn FnMut(&Packet<'_>) -> Result<bool, Error>,
    ) -> Result<Step, Error> {
        loop {
            if self.ended {
                return Ok(Step::Ended);
            }
            let w = self.window();
            let rest = w.get(self.cursor..).unwrap_or_default();
            if rest.len() < HEADER_LEN {
                if !self.advance()? {
                    return Ok(Step::Ended);
                }
                if self.len == 0 {
                    return Ok(Step::Idle);
                }
                continue;
            }
            let rlen = usize::from(u16::from_be_bytes([rest[10], rest[11]]));
            if rlen < HEADER_LEN {
                self.ended = true;
                return Err(self.damage(format!(
                    "bad ERF record length {rlen} in the stream (a record holds at least its 16-byte header)"
                )));
            }
            if rlen > rest.len() {
                // Only part of the record is there yet: wait for the rest.
                let before = self.len - self.cursor;
                if !self.advance()? {
                    return Ok(Step::Ended);
                }
                if self.len <= before {
                    return Ok(Step::Idle);
                }
                continue;
            }
            let record = &rest[..rlen];
            let rec = match decode_record(record) {
                Ok(r) => r,
                Err(e) => {
                    self.ended = true;
                    return Err(self.damage(e.to_string()));
                }
            };
            let at = self.cursor;
            self.cursor += rlen;
            self.records += 1;
            self.bytes += rlen as u64;
            if rec.erf_type == ErfType::PAD {
                self.notes.pad_records += 1;
                continue;
            }
            if rec.meta.kind == PacketKind::MetaRecord && self.options.skip_meta {
                continue;
            }
            let iface = (rec.meta.interface as usize) & 7;
            if self.seen_interface[iface] {
                self.dropped += u64::from(rec.meta.loss);
            } else {
                self.seen_interface[iface] = true;
            }
            self.notes.count(&rec);
            let start = at + rec.data_at;
            if !keep(&Packet::new(
                &self.window()[start..start + rec.caplen],
                rec.meta,
            ))? {
                self.filtered += 1;
                continue;
            }
            self.delivered += 1;
            return Ok(Step::Record(start, rec.caplen, rec.meta));
        }
    }

    /// An error about damage in the stream, saying where.
    #[cold]
    fn damage(&self, what: String) -> Error {
        Error::malformed(format!(
            "{} stream {}: {what}",
            self.card.device, self.stream
        ))
        .with_offset(self.bytes)
        .with_packet(self.records + 1)
    }

    pub(crate) fn lend(&mut self, step: Step) -> Polled<'_> {
        match step {
            Step::Record(start, len, meta) => {
                self.current = Some((start, len, meta));
                Polled::Packet(Packet::new(&self.window()[start..start + len], meta))
            }
            Step::Idle => Polled::Idle,
            Step::Ended => Polled::Ended,
        }
    }

    /// The next packet if one is in the window or arrives within the poll maximum
    /// wait ([`DagOptions::max_wait`]); [`Polled::Idle`] otherwise.
    pub fn poll_packet(&mut self) -> Result<Polled<'_>, Error> {
        let step = self.step(&mut |_| Ok(true))?;
        Ok(self.lend(step))
    }

    /// The next packet `keep` accepts (a filter over the lent packet), waiting for one;
    /// `None` once the stop flag is set or the (software) card's input ended.
    pub fn next_matching(
        &mut self,
        keep: &mut dyn FnMut(&Packet<'_>) -> Result<bool, Error>,
    ) -> Result<Option<Packet<'_>>, Error> {
        let step = loop {
            match self.step(keep)? {
                Step::Idle => continue,
                step => break step,
            }
        };
        Ok(match self.lend(step) {
            Polled::Packet(p) => Some(p),
            _ => None,
        })
    }

    /// The packet the last read lent, again (`None` once the window moved on).
    pub fn current_packet(&self) -> Option<Packet<'_>> {
        let (start, len, meta) = self.current?;
        Some(Packet::new(self.window().get(start..start + len)?, meta))
    }
}

impl CaptureSource for DagStream {
    /// The next packet, waiting for one; `None` once the stop flag is set (or, on the
    /// software card with `DAGEMU_END=1`, after the last record).
    #[inline]
    fn next_packet(&mut self) -> Result<Option<Packet<'_>>, Error> {
        self.next_matching(&mut |_| Ok(true))
    }

    /// The next packet if one comes within `timeout` (in steps of the poll maximum
    /// wait).
    fn next_packet_within(&mut self, timeout: Duration) -> Result<Polled<'_>, Error> {
        let deadline = std::time::Instant::now() + timeout;
        let step = loop {
            match self.step(&mut |_| Ok(true))? {
                Step::Idle if std::time::Instant::now() < deadline => continue,
                step => break step,
            }
        };
        Ok(self.lend(step))
    }

    /// `received`: records of this stream that reached the card (delivered, filtered
    /// out, or lost); `dropped`: lost by the card (see [`DagStream::dropped`]).
    fn stats(&self) -> Stats {
        Stats {
            received: self.delivered + self.filtered + self.dropped,
            dropped: self.dropped,
            filtered: self.filtered,
            captured: self.delivered,
        }
    }
}

impl TraceInfo for DagStream {
    fn description(&self) -> String {
        format!(
            "live DAG capture on {} stream {} (ERF records, 32.32 time stamps)",
            self.card.device, self.stream
        )
    }

    fn notes_described(&self) -> Vec<String> {
        self.notes.describe()
    }

    fn snaplen(&self) -> Option<u32> {
        self.options.snaplen
    }

    fn interface_info(&self, id: u32) -> Option<InterfaceInfo> {
        let _ = id;
        None
    }

    fn ts_resolution(&self) -> TsResolution {
        TsResolution::ERF
    }
}

impl Drop for DagStream {
    fn drop(&mut self) {
        self.card.stop(self.stream);
    }
}

/// A transmit stream: reserve space, copy whole ERF records in, commit them.
pub(crate) struct TxStream {
    card: Arc<Card>,
    stream: u32,
    /// Start of the current reservation (null: none).
    base: *mut u8,
    reserved: usize,
    /// Bytes copied into the reservation.
    written: usize,
    /// Offset of the next record header to look at, and the end of the last whole
    /// record (what may be committed).
    next_record: usize,
    whole: usize,
    committed: u64,
}

// SAFETY: as for `DagStream`: the reservation is the stream's memory, used only by this
// value, from one thread at a time.
unsafe impl Send for TxStream {}

/// Bytes reserved at a time (libtrace's figure).
const RESERVE: usize = 256 << 10;
/// Extra window asked for at attach, so that a reservation never wraps (libtrace's).
const EXTRA_WINDOW: u64 = 4 << 20;

impl TxStream {
    pub(crate) fn start(card: Arc<Card>, stream: u32) -> Result<TxStream, Error> {
        if stream.is_multiple_of(2) {
            return Err(Error::invalid_argument(format!(
                "{} stream {stream} is a receive stream (transmit streams are odd)",
                card.device
            )));
        }
        card.start(stream, EXTRA_WINDOW)?;
        let mut zero = timeval(Duration::ZERO);
        let mut zero2 = timeval(Duration::ZERO);
        // SAFETY: `fd` is open, the stream attached; the timevals outlive the call.
        unsafe {
            dag_sys::dag_set_stream_poll64(card.fd, stream as c_int, 0, &mut zero, &mut zero2)
        };
        Ok(TxStream {
            card,
            stream,
            base: ptr::null_mut(),
            reserved: 0,
            written: 0,
            next_record: 0,
            whole: 0,
            committed: 0,
        })
    }

    fn error(&self, call: &str) -> io::Error {
        let e = api_error(&self.card.device, Some(self.stream), call);
        io::Error::other(e.to_string())
    }

    /// Reserves room for at least `need` bytes, keeping the uncommitted bytes written.
    fn reserve(&mut self, need: usize) -> io::Result<()> {
        let size = need.max(RESERVE);
        // SAFETY: `fd` is open and the transmit stream started; plain integers.
        let p = unsafe {
            dag_sys::dag_tx_get_stream_space64(self.card.fd, self.stream as c_int, size as u64)
        };
        if p.is_null() {
            return Err(self.error("dag_tx_get_stream_space64"));
        }
        if !self.base.is_null() && p != self.base && self.written > 0 {
            // SAFETY: both areas are reserved stream memory of at least `written` bytes
            // (the old reservation held them; the new one holds `size >= written`);
            // `copy` allows overlap.
            unsafe { ptr::copy(self.base, p, self.written) };
        }
        self.base = p;
        self.reserved = size;
        Ok(())
    }

    /// Commits the whole records written so far.
    fn commit(&mut self) -> io::Result<()> {
        if self.whole == 0 {
            return Ok(());
        }
        // SAFETY: `fd` is open, the stream started, and the first `whole` bytes of the
        // reservation are whole ERF records written by us.
        let next = unsafe {
            dag_sys::dag_tx_stream_commit_records64(
                self.card.fd,
                self.stream as c_int,
                self.whole as u64,
            )
        };
        if next.is_null() {
            return Err(self.error("dag_tx_stream_commit_records64"));
        }
        let tail = self.written - self.whole;
        if tail > 0 && next != self.base.wrapping_add(self.whole) {
            // SAFETY: the uncommitted tail lies in reserved memory at `base + whole`;
            // the card's next write position has room for the whole reservation.
            unsafe { ptr::copy(self.base.add(self.whole), next, tail) };
        }
        self.base = next;
        self.reserved -= self.whole;
        self.committed += self.whole as u64;
        self.written = tail;
        self.next_record -= self.whole;
        self.whole = 0;
        Ok(())
    }

    /// Finds the record boundaries among the bytes written.
    fn scan(&mut self) -> io::Result<()> {
        while self.next_record + 12 <= self.written {
            // SAFETY: the two bytes are within the `written` bytes of the reservation.
            let rlen = unsafe {
                let p = self.base.add(self.next_record + 10);
                usize::from(u16::from_be_bytes([*p, *p.add(1)]))
            };
            if rlen < HEADER_LEN {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("an ERF record of length {rlen} cannot be transmitted"),
                ));
            }
            if self.next_record + rlen > self.written {
                break;
            }
            self.next_record += rlen;
            self.whole = self.next_record;
        }
        Ok(())
    }

    /// Bytes committed so far.
    pub(crate) fn committed(&self) -> u64 {
        self.committed
    }

    /// Commits everything and waits (a bounded time) until the card sent it.
    pub(crate) fn drain(&mut self) -> io::Result<()> {
        self.commit()?;
        if self.written > 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{} bytes of an incomplete ERF record were not sent",
                    self.written
                ),
            ));
        }
        for _ in 0..10_000 {
            // SAFETY: `fd` is open; plain integers.
            let level = unsafe {
                dag_sys::dag_get_stream_buffer_level64(self.card.fd, self.stream as c_int)
            };
            if level <= 0 {
                return Ok(());
            }
            std::thread::sleep(Duration::from_micros(500));
        }
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "{} stream {}: records still waiting to be sent after 5 s",
                self.card.device, self.stream
            ),
        ))
    }
}

impl io::Write for TxStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.base.is_null() || self.written == self.reserved {
            self.commit()?;
            let tail = self.written;
            self.reserve(tail + buf.len().min(RESERVE))?;
        }
        let n = buf.len().min(self.reserved - self.written);
        // SAFETY: the reservation has `reserved - written >= n` free bytes at
        // `base + written`; `buf` is a different (Rust-owned) allocation.
        unsafe { ptr::copy_nonoverlapping(buf.as_ptr(), self.base.add(self.written), n) };
        self.written += n;
        self.scan()?;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.commit()
    }
}

impl Drop for TxStream {
    fn drop(&mut self) {
        self.card.stop(self.stream);
    }
}
