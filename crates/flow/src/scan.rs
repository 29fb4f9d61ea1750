//! The libtrace paper's "Scans" analysis on flow records: sources that tried TCP
//! connections (sent a SYN) to many distinct destinations without completing the
//! handshakes.

use std::net::IpAddr;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::key::Endpoint;
use crate::table::FlowRecord;

/// One source's failed connection attempts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scanner {
    /// The source address.
    pub source: IpAddr,
    /// Distinct destinations (address and port) it sent a SYN to without completing a
    /// handshake with.
    pub destinations: usize,
    /// Distinct destination addresses among them.
    pub hosts: usize,
    /// Whether `destinations` reached [`ScanDetector::MAX_PER_SOURCE`] and stopped
    /// counting.
    pub capped: bool,
}

/// Collects failed TCP connection attempts per source from ended flows (feed it every
/// [`FlowRecord`] a [`FlowTable`](crate::FlowTable) hands out).
///
/// Memory is bounded: at most [`MAX_PER_SOURCE`](Self::MAX_PER_SOURCE) destinations per
/// source and [`MAX_SOURCES`](Self::MAX_SOURCES) sources (attempts from further sources
/// are counted in [`dropped_sources`](Self::dropped_sources)).
#[derive(Default)]
pub struct ScanDetector {
    per_source: FxHashMap<IpAddr, FxHashSet<Endpoint>>,
    dropped_sources: u64,
    attempts: u64,
}

impl ScanDetector {
    /// Destinations remembered per source.
    pub const MAX_PER_SOURCE: usize = 1 << 16;
    /// Sources remembered.
    pub const MAX_SOURCES: usize = 1 << 20;

    /// An empty detector.
    pub fn new() -> ScanDetector {
        ScanDetector::default()
    }

    /// Takes an ended flow.
    pub fn add(&mut self, r: &FlowRecord) {
        let Some(opener) = r.attempted_by() else {
            return;
        };
        if r.handshake_completed() {
            return;
        }
        self.attempts += 1;
        let src = opener.addr;
        let target = if opener == r.src() { r.dst() } else { r.src() };
        let full = self.per_source.len() >= ScanDetector::MAX_SOURCES;
        let set = match self.per_source.get_mut(&src) {
            Some(set) => set,
            None if full => {
                self.dropped_sources += 1;
                return;
            }
            None => self.per_source.entry(src).or_default(),
        };
        if set.len() < ScanDetector::MAX_PER_SOURCE {
            set.insert(target);
        }
    }

    /// Failed attempts seen (flows).
    pub fn attempts(&self) -> u64 {
        self.attempts
    }

    /// Attempts from sources beyond [`MAX_SOURCES`](Self::MAX_SOURCES), not counted per
    /// source.
    pub fn dropped_sources(&self) -> u64 {
        self.dropped_sources
    }

    /// Sources with failed attempts.
    pub fn sources(&self) -> usize {
        self.per_source.len()
    }

    /// The sources with more than `threshold` distinct destinations, most first (then
    /// by address).
    pub fn scanners(&self, threshold: usize) -> Vec<Scanner> {
        let mut v: Vec<Scanner> = self
            .per_source
            .iter()
            .filter(|(_, d)| d.len() > threshold)
            .map(|(src, d)| Scanner {
                source: *src,
                destinations: d.len(),
                hosts: d.iter().map(|e| e.addr).collect::<FxHashSet<_>>().len(),
                capped: d.len() >= ScanDetector::MAX_PER_SOURCE,
            })
            .collect();
        v.sort_by(|a, b| {
            b.destinations
                .cmp(&a.destinations)
                .then(a.source.cmp(&b.source))
        });
        v
    }
}
