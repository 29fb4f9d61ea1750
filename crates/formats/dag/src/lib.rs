//! Endace DAG capture for tracekit: receive streams read with zero copy, transmit streams
//! written with ERF records.
//!
//! - [`open`] (`dag:/dev/dag0`, `dag:/dev/dag0,2`) and [`open_streams`]
//!   (`dag:/dev/dag0,0,2,4`, one [`DagStream`] per receive stream, each movable to a
//!   thread of its own: the card's steering spreads flows over its streams, the DAG
//!   analogue of fan-out). A [`DagStream`] is a
//!   [`CaptureSource`] whose packets borrow the stream
//!   window between two advances; the records are decoded by the ERF crate's record
//!   decoder ([`tracekit_erf::decode_record`]); per-stream losses come from the records'
//!   loss counters, the first record of each interface excluded (its counter covers the
//!   time before the capture), as libtrace counts them.
//! - [`DagStreams`] reads several streams of a card on one thread, in turn.
//! - [`DagSink`] writes packets as ERF records into a transmit stream (odd numbers).
//!
//! The DAG API comes from `dag-sys`: the vendor's libdag (feature `libdag`) or
//! tracekit's software card (feature `dag-emulator`), which plays an ERF file
//! (`DAGEMU_INPUT`) as the traffic the card receives; tracekit's code runs the same on
//! both.
//!
//! ```no_run
//! use tracekit_core::CaptureSource;
//!
//! // With the software card: DAGEMU_INPUT=trace.erf DAGEMU_END=1
//! let mut stream = tracekit_dag::open("dag:/dev/dag0", &Default::default())?;
//! let mut bytes = 0;
//! while let Some(packet) = stream.next_packet()? {
//!     bytes += packet.caplen();
//! }
//! println!("{bytes} bytes, {} records lost", stream.stats().dropped);
//! # Ok::<(), tracekit_core::Error>(())
//! ```

#![deny(unsafe_code)]
#![deny(missing_docs)]

// `unsafe` is confined to `capture`, which wraps the DAG API once; each block there has
// its safety argument next to it.
#[allow(unsafe_code)]
mod capture;
mod sink;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

pub use capture::DagStream;
pub use sink::DagSink;
/// What [`DagStream::poll_packet`] found.
pub use tracekit_core::Polled;
use tracekit_core::{CaptureSource, Error, Packet, Stats, TraceInfo, TsResolution};

/// How receive streams are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DagOptions {
    /// Snap length the card cuts records to (`dag_configure("varlen slen=N")`); `None`:
    /// as the card is configured.
    pub snaplen: Option<u32>,
    /// Bytes the card must have before an advance returns early (poll minimum data;
    /// default one record header, libtrace's).
    pub min_data: u64,
    /// How long an advance waits for `min_data` at most (poll maximum wait): the
    /// latency of an idle stream and of the stop flag (default 100 ms).
    pub max_wait: Duration,
    /// How often the card is looked at while waiting (default 10 ms, libtrace's).
    pub poll: Duration,
    /// Skip ERF META (provenance) records instead of handing them out.
    pub skip_meta: bool,
}

impl Default for DagOptions {
    fn default() -> DagOptions {
        DagOptions {
            snaplen: None,
            min_data: 16,
            max_wait: Duration::from_millis(100),
            poll: Duration::from_millis(10),
            skip_meta: false,
        }
    }
}

/// A parsed `dag:` URI: the device and its streams.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DagUri {
    /// The device path, e.g. `/dev/dag0`.
    pub device: String,
    /// The stream numbers (`[0]` when none is given).
    pub streams: Vec<u32>,
}

impl DagUri {
    /// Parses `dag:/dev/dag0`, `dag:/dev/dag0,2` or `dag:/dev/dag0,0,2,4` (the `dag:`
    /// prefix is optional).
    ///
    /// ```
    /// let u = tracekit_dag::DagUri::parse("dag:/dev/dag0,0,2")?;
    /// assert_eq!((u.device.as_str(), u.streams.as_slice()), ("/dev/dag0", &[0, 2][..]));
    /// # Ok::<(), tracekit_core::Error>(())
    /// ```
    pub fn parse(uri: &str) -> Result<DagUri, Error> {
        let rest = match uri.split_once(':') {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("dag") => rest,
            _ => uri,
        };
        let mut parts = rest.split(',');
        let device = parts.next().unwrap_or_default().to_string();
        if device.is_empty() {
            return Err(Error::invalid_argument(format!(
                "{uri}: no DAG device (expected dag:/dev/dagN[,stream...])"
            )));
        }
        let mut streams = Vec::new();
        for p in parts {
            let s: u32 = p.trim().parse().map_err(|_| {
                Error::invalid_argument(format!("{uri}: stream {p:?} is not a number"))
            })?;
            if streams.contains(&s) {
                return Err(Error::invalid_argument(format!(
                    "{uri}: stream {s} named twice"
                )));
            }
            streams.push(s);
        }
        if streams.is_empty() {
            streams.push(0);
        }
        Ok(DagUri { device, streams })
    }
}

/// Opens one receive stream: `dag:/dev/dag0` (stream 0) or `dag:/dev/dag0,2`.
pub fn open(uri: &str, options: &DagOptions) -> Result<DagStream, Error> {
    let u = DagUri::parse(uri)?;
    if u.streams.len() != 1 {
        return Err(Error::invalid_argument(format!(
            "{uri}: {} streams; open them with open_streams (one reader each) or DagStreams",
            u.streams.len()
        )));
    }
    open_streams(uri, options)?
        .pop()
        .ok_or_else(|| Error::invalid_argument(format!("{uri}: no stream")))
}

/// Opens every receive stream a URI names (`dag:/dev/dag0,0,2,4`), on one card handle,
/// sharing one stop flag. Each stream can be read on a thread of its own.
pub fn open_streams(uri: &str, options: &DagOptions) -> Result<Vec<DagStream>, Error> {
    let u = DagUri::parse(uri)?;
    let card = capture::Card::open(&u.device, options)?;
    let available = card.rx_streams()?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut out = Vec::with_capacity(u.streams.len());
    for &s in &u.streams {
        if s.is_multiple_of(2) && s / 2 >= available {
            return Err(Error::invalid_argument(format!(
                "{uri}: {} has {available} receive stream(s) (0..={}, even numbers)",
                u.device,
                2 * available.saturating_sub(1)
            )));
        }
        out.push(DagStream::start(card.clone(), s, *options, stop.clone())?);
    }
    Ok(out)
}

/// Several receive streams of a card read on one thread, in turn: a window of one, then
/// of the next. Packets keep their stream's order; there is no order across streams.
/// The streams are polled without waiting (an idle stream must not hold the others
/// back); when a whole round found nothing, the reader sleeps [`IDLE_SLEEP`].
pub struct DagStreams {
    streams: Vec<DagStream>,
    next: usize,
    ended: Vec<bool>,
    current: Option<usize>,
    idle_in_a_row: usize,
}

/// How long [`DagStreams`] sleeps when none of its streams had anything.
pub const IDLE_SLEEP: Duration = Duration::from_millis(1);

impl DagStreams {
    /// Reads `streams` in turn (their advances are made not to wait).
    pub fn new(mut streams: Vec<DagStream>) -> DagStreams {
        if streams.len() > 1 {
            for s in &mut streams {
                // Best effort: a stream that refuses keeps its own wait.
                let max_wait = s.options().max_wait;
                let _ = s.set_wait(0, max_wait);
            }
        }
        let ended = vec![false; streams.len()];
        DagStreams {
            streams,
            next: 0,
            ended,
            current: None,
            idle_in_a_row: 0,
        }
    }

    /// Opens the streams a URI names ([`open_streams`]) to read them in turn.
    pub fn open(uri: &str, options: &DagOptions) -> Result<DagStreams, Error> {
        Ok(DagStreams::new(open_streams(uri, options)?))
    }

    /// The streams.
    pub fn streams(&self) -> &[DagStream] {
        &self.streams
    }

    /// The streams, to change (e.g. [`DagStream::set_stop_flag`]).
    pub fn streams_mut(&mut self) -> &mut [DagStream] {
        &mut self.streams
    }

    /// Takes the streams back (to read them on threads of their own).
    pub fn into_streams(self) -> Vec<DagStream> {
        self.streams
    }

    /// The next packet `keep` accepts from any stream, waiting for one; `None` once
    /// every stream ended.
    pub fn next_matching(
        &mut self,
        keep: &mut dyn FnMut(&Packet<'_>) -> Result<bool, Error>,
    ) -> Result<Option<Packet<'_>>, Error> {
        self.current = None;
        let n = self.streams.len();
        let (i, step) = loop {
            if self.ended.iter().all(|e| *e) {
                return Ok(None);
            }
            let i = self.next;
            if self.ended[i] {
                self.next = (i + 1) % n;
                continue;
            }
            match self.streams[i].step(keep)? {
                capture::Step::Record(a, b, m) => {
                    self.idle_in_a_row = 0;
                    break (i, capture::Step::Record(a, b, m));
                }
                capture::Step::Idle => {
                    self.next = (i + 1) % n;
                    self.idle_in_a_row += 1;
                    if self.idle_in_a_row >= n {
                        self.idle_in_a_row = 0;
                        std::thread::sleep(IDLE_SLEEP);
                    }
                    continue;
                }
                capture::Step::Ended => {
                    self.ended[i] = true;
                    self.next = (i + 1) % n;
                }
            }
        };
        self.current = Some(i);
        Ok(match self.streams[i].lend(step) {
            Polled::Packet(p) => Some(p),
            _ => None,
        })
    }

    /// The packet the last read lent, again.
    pub fn current_packet(&self) -> Option<Packet<'_>> {
        self.streams.get(self.current?)?.current_packet()
    }
}

impl CaptureSource for DagStreams {
    fn next_packet(&mut self) -> Result<Option<Packet<'_>>, Error> {
        self.next_matching(&mut |_| Ok(true))
    }

    /// The streams' counters added up.
    fn stats(&self) -> Stats {
        let mut t = Stats::default();
        for s in &self.streams {
            let x = s.stats();
            t.received += x.received;
            t.dropped += x.dropped;
            t.filtered += x.filtered;
            t.captured += x.captured;
        }
        t
    }
}

impl TraceInfo for DagStreams {
    fn description(&self) -> String {
        let device = self.streams.first().map_or("", |s| s.device());
        let numbers: Vec<String> = self
            .streams
            .iter()
            .map(|s| s.stream().to_string())
            .collect();
        format!(
            "live DAG capture on {device} streams {} (ERF records, 32.32 time stamps)",
            numbers.join(",")
        )
    }

    fn notes_described(&self) -> Vec<String> {
        let mut total = tracekit_erf::ErfNotes::default();
        for s in &self.streams {
            let n = s.notes();
            total.pad_records += n.pad_records;
            total.truncated += n.truncated;
            total.rx_errors += n.rx_errors;
            total.ds_errors += n.ds_errors;
            total.encapsulated += n.encapsulated;
            total.extension_headers += n.extension_headers;
        }
        total.describe()
    }

    fn snaplen(&self) -> Option<u32> {
        self.streams.first().and_then(|s| s.snaplen())
    }

    fn ts_resolution(&self) -> TsResolution {
        TsResolution::ERF
    }
}
