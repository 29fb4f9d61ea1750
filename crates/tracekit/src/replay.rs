//! Pacing for replaying a trace in its own time (libtrace's tracereplay): when each
//! packet is due, from its time stamp, the first packet's and a speed factor.
//!
//! ```
//! use std::time::Duration;
//! use tracekit::replay::Pacer;
//!
//! // Twice as fast as captured: a packet 1 s after the first is due 0.5 s after it was
//! // sent.
//! let mut pacer = Pacer::new(Some(2.0));
//! assert_eq!(pacer.offset(5_000_000_000), Some(Duration::ZERO));
//! assert_eq!(pacer.offset(6_000_000_000), Some(Duration::from_millis(500)));
//! // As fast as possible: never wait.
//! assert_eq!(Pacer::new(None).offset(6_000_000_000), None);
//! ```

use std::time::{Duration, Instant};

/// When packets are due.
#[derive(Clone, Debug)]
pub struct Pacer {
    speed: Option<f64>,
    first_ns: Option<u64>,
    start: Option<Instant>,
}

impl Pacer {
    /// A pacer at `speed` times the trace's pace (`None`: as fast as possible).
    pub fn new(speed: Option<f64>) -> Pacer {
        Pacer {
            speed: speed.filter(|s| s.is_finite() && *s > 0.0),
            first_ns: None,
            start: None,
        }
    }

    /// How long after the first packet a packet stamped `ts_ns` is due (`None` when not
    /// paced). A time stamp before the first packet's is due at once.
    pub fn offset(&mut self, ts_ns: u64) -> Option<Duration> {
        let speed = self.speed?;
        let first = *self.first_ns.get_or_insert(ts_ns);
        let trace = ts_ns.saturating_sub(first) as f64 / speed;
        Some(Duration::from_secs_f64(trace / 1e9))
    }

    /// Waits until the packet stamped `ts_ns` is due; the first call starts the clock.
    /// Sleeps most of the wait and spins the last 200 µs, for gaps of a few µs to stay
    /// close to the trace's.
    pub fn wait(&mut self, ts_ns: u64) {
        let Some(offset) = self.offset(ts_ns) else {
            return;
        };
        let start = *self.start.get_or_insert_with(Instant::now);
        let due = start + offset;
        loop {
            let now = Instant::now();
            if now >= due {
                return;
            }
            let left = due - now;
            if left > Duration::from_micros(200) {
                std::thread::sleep(left - Duration::from_micros(200));
            } else {
                std::hint::spin_loop();
            }
        }
    }
}
