//! The two abstractions every format implements: a source of packets and a sink for them.

use core::time::Duration;

use crate::{Error, Packet};

/// Counters a source keeps. Live sources fill `received`/`dropped`; filters fill
/// `filtered`; file sources count what they delivered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Packets (records) read from the source.
    pub received: u64,
    /// Packets the capture lost (kernel or card drops), when known.
    pub dropped: u64,
    /// Packets a filter rejected.
    pub filtered: u64,
    /// Packets handed to the caller.
    pub captured: u64,
}

/// A source of packets: a trace file, a pipe, a live ring.
///
/// `next_packet` lends the packet: it borrows the source until the next call, so a
/// zero-copy packet can never be read after its buffer was reused.
///
/// ```
/// use tracekit_core::{CaptureSource, Error, LinkType, Meta, Packet, Timestamp};
///
/// /// A source over packets kept in memory.
/// struct Memory { frames: Vec<Vec<u8>>, next: usize }
///
/// impl CaptureSource for Memory {
///     fn next_packet(&mut self) -> Result<Option<Packet<'_>>, Error> {
///         let Some(frame) = self.frames.get(self.next) else { return Ok(None) };
///         self.next += 1;
///         let meta = Meta::new(Timestamp::from_micros(self.next as u32, 0), frame.len() as u32, LinkType::ETHERNET);
///         Ok(Some(Packet::new(frame, meta)))
///     }
/// }
///
/// let mut src = Memory { frames: vec![vec![0; 60], vec![0; 1514]], next: 0 };
/// let mut bytes = 0;
/// while let Some(p) = src.next_packet()? {
///     bytes += p.caplen();
/// }
/// assert_eq!(bytes, 1574);
/// # Ok::<(), Error>(())
/// ```
pub trait CaptureSource {
    /// The next packet, borrowing from the source until the next call; `Ok(None)` at the
    /// end of the trace. After an error the source should not be read further: the error
    /// says where the damage is, and every good packet before it was delivered.
    fn next_packet(&mut self) -> Result<Option<Packet<'_>>, Error>;

    /// The next packet if one comes within `timeout`, for a reader that has other work
    /// while a live source is quiet (sending on what it holds, checking a clock).
    /// [`Polled::Idle`] when nothing came in time, [`Polled::Ended`] where
    /// `next_packet` gives `None`. Sources that never wait (files) need not implement
    /// it: the default reads the next packet, however long that takes.
    fn next_packet_within(&mut self, timeout: Duration) -> Result<Polled<'_>, Error> {
        let _ = timeout;
        Ok(match self.next_packet()? {
            Some(p) => Polled::Packet(p),
            None => Polled::Ended,
        })
    }

    /// Counters so far.
    fn stats(&self) -> Stats {
        Stats::default()
    }
}

/// What [`CaptureSource::next_packet_within`] found.
#[derive(Debug)]
pub enum Polled<'a> {
    /// A packet, lent until the next call.
    Packet(Packet<'a>),
    /// Nothing within the time given.
    Idle,
    /// The source ended (its end, or a stop asked for).
    Ended,
}

impl<S: CaptureSource + ?Sized> CaptureSource for &mut S {
    fn next_packet(&mut self) -> Result<Option<Packet<'_>>, Error> {
        (**self).next_packet()
    }
    fn next_packet_within(&mut self, timeout: Duration) -> Result<Polled<'_>, Error> {
        (**self).next_packet_within(timeout)
    }
    fn stats(&self) -> Stats {
        (**self).stats()
    }
}

impl<S: CaptureSource + ?Sized> CaptureSource for Box<S> {
    fn next_packet(&mut self) -> Result<Option<Packet<'_>>, Error> {
        (**self).next_packet()
    }
    fn next_packet_within(&mut self, timeout: Duration) -> Result<Polled<'_>, Error> {
        (**self).next_packet_within(timeout)
    }
    fn stats(&self) -> Stats {
        (**self).stats()
    }
}

/// What a sink reports when it finishes: what was written, and what the output format
/// could not carry (so that nothing is dropped silently).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SinkReport {
    /// Packets written.
    pub packets: u64,
    /// Bytes written to the output (after any compression).
    pub bytes: u64,
    /// One entry per kind of information lost, with the number of packets affected,
    /// e.g. `("direction", 120)` when writing pcap from pcapng.
    pub lost: Vec<(&'static str, u64)>,
}

impl SinkReport {
    /// Adds `count` packets that lost `what` (entries are merged by name).
    pub fn add_loss(&mut self, what: &'static str, count: u64) {
        if count == 0 {
            return;
        }
        match self.lost.iter_mut().find(|(w, _)| *w == what) {
            Some((_, n)) => *n += count,
            None => self.lost.push((what, count)),
        }
    }

    /// A one-line summary of what was lost, or `None` when nothing was.
    pub fn loss_summary(&self) -> Option<String> {
        if self.lost.is_empty() {
            return None;
        }
        let parts: Vec<String> = self
            .lost
            .iter()
            .map(|(what, n)| format!("{what} of {n} packet(s)"))
            .collect();
        Some(format!(
            "the output format could not carry: {}",
            parts.join(", ")
        ))
    }
}

/// A destination for packets: a trace file or a pipe.
pub trait CaptureSink {
    /// Writes one packet.
    fn write_packet(&mut self, packet: &Packet<'_>) -> Result<(), Error>;

    /// Flushes, writes trailers and joins worker threads. `Ok` means the output is
    /// complete; an error means it is not, and says why.
    fn finish(self: Box<Self>) -> Result<SinkReport, Error>;
}
