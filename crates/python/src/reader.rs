//! `tracekit.open(path)`: packets read in batches with the GIL released, each packet a
//! Python object that lends its bytes through the buffer protocol.

use std::os::raw::c_int;
use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyStopIteration;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDateTime, PyMemoryView, PyTzInfo};
use tracekit::{Direction, Filter, Meta, Source};

use crate::decoded::Decoded;
use crate::error::trace_error;

/// Packets per batch read with the GIL released.
const BATCH_PACKETS: usize = 1024;
/// Captured bytes per batch (a batch holds at least one packet, however long).
const BATCH_BYTES: usize = 1 << 20;

/// One batch of packets copied out of the source's buffer: their bytes back to back and
/// where each one starts. Packet objects share it (`Arc`); a batch no Python object holds
/// any more is refilled in place, so a loop that drops its packets allocates nothing.
#[derive(Default)]
pub(crate) struct Batch {
    bytes: Vec<u8>,
    packets: Vec<Entry>,
}

#[derive(Clone, Copy)]
struct Entry {
    start: usize,
    len: usize,
    number: u64,
    meta: Meta,
}

impl Batch {
    fn clear(&mut self) {
        self.bytes.clear();
        self.packets.clear();
    }

    fn push(&mut self, number: u64, packet: &tracekit::Packet<'_>) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(packet.data());
        self.packets.push(Entry {
            start,
            len: packet.data().len(),
            number,
            meta: *packet.meta(),
        });
    }

    fn is_full(&self) -> bool {
        self.packets.len() >= BATCH_PACKETS || self.bytes.len() >= BATCH_BYTES
    }

    fn data(&self, i: usize) -> &[u8] {
        let e = &self.packets[i];
        &self.bytes[e.start..e.start + e.len]
    }
}

/// A packet's place: its batch and its index there.
#[derive(Clone)]
pub(crate) struct Slot {
    batch: Arc<Batch>,
    index: usize,
}

impl Slot {
    pub(crate) fn data(&self) -> &[u8] {
        self.batch.data(self.index)
    }

    pub(crate) fn meta(&self) -> &Meta {
        &self.batch.packets[self.index].meta
    }

    pub(crate) fn number(&self) -> u64 {
        self.batch.packets[self.index].number
    }
}

/// An open trace: iterate it for its packets (`for p in tracekit.open("x.pcap"): ...`).
///
/// Reading and the copy out of the read buffer happen in batches of up to 1,024
/// packets with the GIL released. A damaged trace gives every good packet first; the
/// next step raises `TraceError` naming the file, the byte offset and the reason.
#[pyclass(module = "tracekit")]
pub struct Reader {
    path: String,
    /// A `Source` is `Send` but not `Sync`; Python objects must be both. `__next__` has
    /// the reader mutably (`get_mut`), so the mutex is never locked.
    source: Mutex<Option<Source>>,
    /// Applied here rather than in the source, so that packet numbers stay those of the
    /// file (as in `tracekit fields -f`).
    filter: Option<Filter>,
    batch: Arc<Batch>,
    next: usize,
    read: u64,
    error: Option<tracekit::Error>,
}

impl Reader {
    /// Opens `path` (any format and compression tracekit reads), with an optional
    /// tcpdump filter.
    pub(crate) fn open(path: &str, filter: Option<&str>) -> PyResult<Reader> {
        let filter = filter.map(crate::error::compile_filter).transpose()?;
        let source = tracekit::open(path).map_err(|e| trace_error(e, path))?;
        Ok(Reader {
            path: path.to_string(),
            source: Mutex::new(Some(source)),
            filter,
            batch: Arc::new(Batch::default()),
            next: 0,
            read: 0,
            error: None,
        })
    }

    fn has_source(&mut self) -> bool {
        self.source
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    /// Reads the next batch (without the GIL): refills the current batch in place if no
    /// packet object holds it, else starts a new one.
    fn fill(&mut self) {
        let source_slot = self.source.get_mut().unwrap_or_else(|p| p.into_inner());
        let Some(source) = source_slot.as_mut() else {
            return;
        };
        if Arc::get_mut(&mut self.batch).is_none() {
            self.batch = Arc::new(Batch::default());
        }
        let batch = Arc::get_mut(&mut self.batch).expect("the batch was just made unshared");
        batch.clear();
        self.next = 0;
        loop {
            match source.next_packet() {
                Ok(Some(p)) => {
                    self.read += 1;
                    if let Some(f) = self.filter.as_mut() {
                        match f.matches(&p) {
                            Ok(true) => {}
                            Ok(false) => continue,
                            Err(e) => {
                                self.error = Some(e);
                                break;
                            }
                        }
                    }
                    batch.push(self.read, &p);
                    if batch.is_full() {
                        return;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    self.error = Some(e);
                    break;
                }
            }
        }
        *source_slot = None;
    }
}

#[pymethods]
impl Reader {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Packet> {
        if self.next >= self.batch.packets.len() {
            if self.has_source() {
                py.detach(|| self.fill());
            }
            if self.next >= self.batch.packets.len() {
                return match self.error.take() {
                    Some(e) => Err(trace_error(e, &self.path)),
                    None => Err(PyStopIteration::new_err(())),
                };
            }
        }
        let slot = Slot {
            batch: Arc::clone(&self.batch),
            index: self.next,
        };
        self.next += 1;
        Ok(Packet { slot })
    }

    /// The path the trace was opened with.
    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    /// Packets read so far (including those still waiting in the current batch and those
    /// the filter left out).
    #[getter]
    fn packets_read(&self) -> u64 {
        self.read
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Closes the trace (the packets already handed out stay valid).
    fn close(&mut self) {
        *self.source.get_mut().unwrap_or_else(|p| p.into_inner()) = None;
        self.batch = Arc::new(Batch::default());
        self.next = 0;
    }

    fn __exit__(
        &mut self,
        _ty: Option<&Bound<'_, PyAny>>,
        _value: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> bool {
        self.close();
        false
    }

    fn __repr__(&self) -> String {
        format!("<tracekit.Reader {:?}>", self.path)
    }
}

/// One packet: metadata, bytes and a decoder.
///
/// `memoryview(packet)` (and `packet.data`) lends the captured bytes without a copy;
/// `bytes(packet)` copies them. The bytes live in the batch the packet was read in
/// (copied once out of the reader's buffer, which is reused for the next batch): keeping
/// a packet keeps its batch (at most about 1 MiB) alive.
#[pyclass(module = "tracekit", frozen)]
pub struct Packet {
    slot: Slot,
}

impl Packet {
    fn known_ns(&self) -> Option<u64> {
        let ts = self.slot.meta().ts;
        ts.is_known().then(|| ts.as_unix_nanos())
    }
}

#[pymethods]
impl Packet {
    /// 1-based number of the packet in its file (as Wireshark numbers frames).
    #[getter]
    fn number(&self) -> u64 {
        self.slot.number()
    }

    /// Time stamp in nanoseconds since the Unix epoch (exact for µs and ns sources;
    /// rounded to the nearest ns from ERF's and pcapng's binary fractions); `None` for a
    /// packet without one (pcapng Simple Packet Block).
    #[getter]
    fn ts_ns(&self) -> Option<u64> {
        self.known_ns()
    }

    /// Time stamp as seconds since the epoch (a float: about 0.2 µs precision today).
    #[getter]
    fn timestamp(&self) -> Option<f64> {
        self.known_ns().map(|ns| ns as f64 / 1e9)
    }

    /// Time stamp as a timezone-aware `datetime` in UTC (microsecond precision, truncated:
    /// use `ts_ns` for the exact value).
    #[getter]
    fn time<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDateTime>>> {
        let Some(ns) = self.known_ns() else {
            return Ok(None);
        };
        let secs = ns / 1_000_000_000;
        let micros = (ns % 1_000_000_000) / 1000;
        let (year, month, day) = civil_from_days((secs / 86_400) as i64);
        let rem = secs % 86_400;
        let utc = PyTzInfo::utc(py)?;
        PyDateTime::new(
            py,
            year as i32,
            month,
            day,
            (rem / 3600) as u8,
            (rem / 60 % 60) as u8,
            (rem % 60) as u8,
            micros as u32,
            Some(&utc),
        )
        .map(Some)
    }

    /// Length on the wire, as the format recorded it.
    #[getter]
    fn wire_len(&self) -> u32 {
        self.slot.meta().wire_len
    }

    /// Captured length (`len(packet.data)`).
    #[getter]
    fn cap_len(&self) -> usize {
        self.slot.data().len()
    }

    /// Interface id (pcapng interface, ERF interface; 0 when unknown).
    #[getter]
    fn interface(&self) -> u32 {
        self.slot.meta().interface
    }

    /// Link type (the LINKTYPE_ number: 1 is Ethernet).
    #[getter]
    fn link_type(&self) -> u32 {
        self.slot.meta().link.0
    }

    /// `"in"`, `"out"`, or `None` when the format does not say.
    #[getter]
    fn direction(&self) -> Option<&'static str> {
        match self.slot.meta().direction {
            Direction::Inbound => Some("in"),
            Direction::Outbound => Some("out"),
            Direction::Unknown => None,
        }
    }

    /// Packets lost just before this one, when the format counts them (ERF).
    #[getter]
    fn loss(&self) -> u32 {
        self.slot.meta().loss
    }

    /// The captured bytes as a read-only `memoryview` (no copy).
    #[getter]
    fn data<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyMemoryView>> {
        PyMemoryView::from(slf.as_any())
    }

    /// The packet's decoder: layers are decoded when asked for.
    #[getter]
    fn decoded(&self) -> Decoded {
        Decoded::new(self.slot.clone())
    }

    fn __len__(&self) -> usize {
        self.slot.data().len()
    }

    fn __bytes__<'py>(&self, py: Python<'py>) -> Bound<'py, pyo3::types::PyBytes> {
        pyo3::types::PyBytes::new(py, self.slot.data())
    }

    /// # Safety
    ///
    /// Called by Python with a `view` to fill. The buffer is the packet's slice of its
    /// batch: the batch is immutable once handed out (the packet is `frozen` and holds an
    /// `Arc` of it) and `PyBuffer_FillInfo` stores a new reference to the packet in
    /// `view.obj`, so the memory stays valid until the view is released.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        let data = slf.get().slot.data();
        // SAFETY: `view` is the Py_buffer Python passed in; the pointer and length
        // describe `data`, which outlives the view (see above); readonly = 1, and
        // FillInfo raises BufferError if the caller asked for a writable buffer.
        let rc = unsafe {
            ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                data.as_ptr() as *mut std::os::raw::c_void,
                data.len() as ffi::Py_ssize_t,
                1,
                flags,
            )
        };
        if rc == -1 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    fn __repr__(&self) -> String {
        let m = self.slot.meta();
        format!(
            "<tracekit.Packet #{} ts_ns={} wire_len={} cap_len={}>",
            self.slot.number(),
            m.ts.as_unix_nanos(),
            m.wire_len,
            self.slot.data().len()
        )
    }
}

/// (year, month, day) of a day count since 1970-01-01 in the proleptic Gregorian
/// calendar (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u8, u8) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u8;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}
