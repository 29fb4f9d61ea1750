//! Packet-by-packet comparison of two traces (libtrace's tracediff, extended).
//!
//! Packets are paired in file order. A pair differs in its time stamps (compared to the
//! nanosecond), its wire lengths, or its contents: the captured bytes up to the wire
//! length, which is exactly what tracediff compares (it ignores time stamps and framing).
//! A trace that goes on after the other has ended has packets "only in A" or "only in B".
//!
//! ```no_run
//! use tracekit::diff::{DiffOptions, diff};
//!
//! let mut a = tracekit::open("a.pcap")?;
//! let mut b = tracekit::open("b.pcapng")?;
//! let done = diff(&mut a, &mut b, DiffOptions::default(), |n, d| {
//!     println!("packet {n}: {d:?}");
//!     true // keep going
//! });
//! println!("{} of {} packets differ", done.summary.differing, done.summary.compared);
//! # Ok::<(), tracekit::Error>(())
//! ```

use tracekit_core::{Error, Packet};

use crate::Source;

/// What to compare.
#[derive(Clone, Copy, Debug)]
pub struct DiffOptions {
    /// Compare time stamps (tracediff does not).
    pub time: bool,
    /// Compare wire lengths (tracediff does not, beyond their cutting the contents).
    pub wire_len: bool,
}

impl Default for DiffOptions {
    /// Everything compared.
    fn default() -> DiffOptions {
        DiffOptions {
            time: true,
            wire_len: true,
        }
    }
}

impl DiffOptions {
    /// Contents only, as tracediff compares.
    pub fn contents_only() -> DiffOptions {
        DiffOptions {
            time: false,
            wire_len: false,
        }
    }
}

/// How one pair of packets differs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PacketDiff {
    /// Time stamps (ns since the epoch), when they differ (and are compared).
    pub time: Option<(u64, u64)>,
    /// Wire lengths, when they differ (and are compared).
    pub wire_len: Option<(u32, u32)>,
    /// Lengths of the compared contents (captured bytes up to the wire length), when
    /// they differ.
    pub contents_len: Option<(usize, usize)>,
    /// The first byte offset where the contents differ (within the shorter one), if any.
    pub first_byte: Option<usize>,
}

impl PacketDiff {
    /// Compares two packets.
    pub fn of(a: &Packet<'_>, b: &Packet<'_>, options: DiffOptions) -> PacketDiff {
        let (ca, cb) = (contents(a), contents(b));
        let (ta, tb) = (a.ts().as_unix_nanos(), b.ts().as_unix_nanos());
        PacketDiff {
            time: (options.time && ta != tb).then_some((ta, tb)),
            wire_len: (options.wire_len && a.wire_len() != b.wire_len())
                .then_some((a.wire_len(), b.wire_len())),
            contents_len: (ca.len() != cb.len()).then_some((ca.len(), cb.len())),
            first_byte: ca.iter().zip(cb).position(|(x, y)| x != y),
        }
    }

    /// Whether the packets are the same in everything compared.
    pub fn is_same(&self) -> bool {
        *self == PacketDiff::default()
    }

    /// Whether the contents differ (what tracediff reports).
    pub fn contents_differ(&self) -> bool {
        self.contents_len.is_some() || self.first_byte.is_some()
    }
}

/// The captured bytes up to the wire length.
fn contents<'a>(p: &Packet<'a>) -> &'a [u8] {
    let d = p.data();
    &d[..d.len().min(p.wire_len() as usize)]
}

/// A difference found by [`diff`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Difference {
    /// Both traces have this packet, and it differs.
    Packet(PacketDiff),
    /// Only the first trace has this packet.
    OnlyInA,
    /// Only the second trace has this packet.
    OnlyInB,
}

/// The counts of a comparison.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiffSummary {
    /// Packets in the first trace (read before any error).
    pub packets_a: u64,
    /// Packets in the second trace.
    pub packets_b: u64,
    /// Pairs compared.
    pub compared: u64,
    /// Pairs that differ in anything compared.
    pub differing: u64,
    /// Pairs whose time stamps differ.
    pub time: u64,
    /// Pairs whose wire lengths differ.
    pub wire_len: u64,
    /// Pairs whose contents differ (tracediff's count).
    pub contents: u64,
}

impl DiffSummary {
    /// Whether the traces are the same in everything compared.
    pub fn is_same(&self) -> bool {
        self.differing == 0 && self.packets_a == self.packets_b
    }
}

/// Which input a read error came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The first trace.
    A,
    /// The second trace.
    B,
}

/// The end of a comparison.
#[derive(Debug)]
pub struct DiffDone {
    /// The counts so far.
    pub summary: DiffSummary,
    /// The read error that stopped the comparison, if any (the counts cover the packets
    /// before it).
    pub error: Option<(Side, Error)>,
    /// Whether `report` asked to stop.
    pub stopped: bool,
}

/// Compares `a` and `b` packet by packet; `report(n, difference)` is called for each
/// difference (`n` counts from 1 in both traces) and returns `false` to stop early.
/// Nothing is copied or allocated per packet.
pub fn diff(
    a: &mut Source,
    b: &mut Source,
    options: DiffOptions,
    mut report: impl FnMut(u64, Difference) -> bool,
) -> DiffDone {
    let mut s = DiffSummary::default();
    let mut n = 0u64;
    let (mut a_open, mut b_open) = (true, true);
    let finish = |summary, error, stopped| DiffDone {
        summary,
        error,
        stopped,
    };
    loop {
        let pa = if a_open {
            match a.next_packet() {
                Ok(p) => p,
                Err(e) => return finish(s, Some((Side::A, e)), false),
            }
        } else {
            None
        };
        let pb = if b_open {
            match b.next_packet() {
                Ok(p) => p,
                Err(e) => return finish(s, Some((Side::B, e)), false),
            }
        } else {
            None
        };
        n += 1;
        let found = match (&pa, &pb) {
            (Some(x), Some(y)) => {
                s.packets_a += 1;
                s.packets_b += 1;
                s.compared += 1;
                let d = PacketDiff::of(x, y, options);
                s.time += u64::from(d.time.is_some());
                s.wire_len += u64::from(d.wire_len.is_some());
                s.contents += u64::from(d.contents_differ());
                (!d.is_same()).then_some(Difference::Packet(d))
            }
            (Some(_), None) => {
                s.packets_a += 1;
                Some(Difference::OnlyInA)
            }
            (None, Some(_)) => {
                s.packets_b += 1;
                Some(Difference::OnlyInB)
            }
            (None, None) => return finish(s, None, false),
        };
        a_open = pa.is_some();
        b_open = pb.is_some();
        if let Some(d) = found {
            if matches!(d, Difference::Packet(_)) {
                s.differing += 1;
            }
            if !report(n, d) {
                return finish(s, None, true);
            }
        }
    }
}
