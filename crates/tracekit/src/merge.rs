//! Merging traces: a streaming k-way merge by time stamp (or a concatenation), and
//! duplicate removal.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::hash::Hasher;

use tracekit_core::{Error, InterfaceInfo, Packet, Timestamp};

use crate::Source;

/// How a merge numbers the interfaces of its output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum InterfaceMode {
    /// Keep the inputs' interface numbers when every input describes the same
    /// interfaces (as `mergecap` does by default); otherwise one output interface per
    /// input interface.
    #[default]
    Auto,
    /// One output interface per input interface, numbered in order of first packet, so
    /// that every output packet still tells which input it came from.
    PerInput,
}

/// How [`Merge`] combines its inputs.
#[derive(Debug, Clone, Copy, Default)]
pub struct MergeOptions {
    /// Concatenate the inputs in the order given instead of merging by time stamp
    /// (`mergecap -a`).
    pub append: bool,
    /// Interface numbering of the output.
    pub interfaces: InterfaceMode,
}

struct MergeInput {
    source: Source,
    /// Whether the source holds a packet not handed out yet.
    has_head: bool,
    /// Packets read from it.
    packets: u64,
    /// The damage or I/O error that ended it early.
    error: Option<Error>,
}

/// A streaming merge of traces: memory is bounded by the number of inputs, not their
/// size, and packets are lent straight from each input's buffer (no copy).
///
/// Packets come out in time stamp order, ties broken by input order, like `mergecap`;
/// each input is expected to be in time order itself (out-of-order packets are passed on
/// where they are met). An input that fails (damage, I/O) ends at its last good packet;
/// the others go on, and [`Merge::errors`] reports it.
///
/// ```no_run
/// use tracekit::merge::{Merge, MergeOptions};
/// use tracekit::CreateOptions;
///
/// let inputs = ["a.pcap", "b.pcapng.gz"].iter().map(|f| tracekit::open(f)).collect::<Result<Vec<_>, _>>()?;
/// let mut merge = Merge::new(inputs, MergeOptions::default());
/// let mut sink = tracekit::create("merged.pcapng", &CreateOptions::default())?;
/// while let Some((_input, packet)) = merge.next_packet() {
///     sink.write_packet(&packet)?;
/// }
/// sink.finish()?;
/// for (input, e) in merge.errors() {
///     eprintln!("input {input}: {e}");
/// }
/// # Ok::<(), tracekit::Error>(())
/// ```
pub struct Merge {
    inputs: Vec<MergeInput>,
    /// Inputs with a packet waiting, by (time stamp, input) (merge mode only).
    heap: BinaryHeap<Reverse<(Timestamp, usize)>>,
    /// The input whose packet was handed out last; it is advanced on the next call.
    pending: Option<usize>,
    append: bool,
    /// Append mode: the input being read.
    cursor: usize,
    /// Whether input interface numbers are kept as they are.
    keep_numbers: bool,
    /// Per input: input interface → output interface (`u32::MAX`: none yet).
    map: Vec<Vec<u32>>,
    /// Per output interface: (input, input interface).
    owners: Vec<(usize, u32)>,
}

impl Merge {
    /// Starts a merge: reads the first packet of every input (so that their interfaces
    /// are known before the first packet comes out).
    pub fn new(sources: Vec<Source>, options: MergeOptions) -> Merge {
        let n = sources.len();
        let mut merge = Merge {
            inputs: sources
                .into_iter()
                .map(|source| MergeInput {
                    source,
                    has_head: false,
                    packets: 0,
                    error: None,
                })
                .collect(),
            heap: BinaryHeap::new(),
            pending: None,
            append: options.append,
            cursor: 0,
            keep_numbers: false,
            map: vec![Vec::new(); n],
            owners: Vec::new(),
        };

        for i in 0..merge.inputs.len() {
            if let Some(ts) = merge.advance(i)
                && !merge.append
            {
                merge.heap.push(Reverse((ts, i)));
            }
        }
        merge.keep_numbers = options.interfaces == InterfaceMode::Auto && merge.same_interfaces();
        merge
    }

    /// Whether every input describes the same list of interfaces.
    fn same_interfaces(&self) -> bool {
        let list = |s: &Source| -> Vec<InterfaceInfo> {
            (0..)
                .map_while(|id| s.interface_info(id))
                .take(1 << 16)
                .collect()
        };
        let mut lists = self.inputs.iter().map(|i| list(&i.source));
        match lists.next() {
            Some(first) => lists.all(|l| l == first),
            None => true,
        }
    }

    /// Reads the next packet of input `i`; its time stamp when there is one.
    #[inline]
    fn advance(&mut self, i: usize) -> Option<Timestamp> {
        let input = &mut self.inputs[i];
        input.has_head = false;
        if input.error.is_some() {
            return None;
        }
        match input.source.next_packet() {
            Ok(Some(p)) => {
                let ts = p.ts();
                input.has_head = true;
                input.packets += 1;
                Some(ts)
            }
            Ok(None) => None,
            Err(e) => {
                input.error = Some(e);
                None
            }
        }
    }

    /// Merge mode: the input with the earliest packet, after advancing `pending`.
    #[inline]
    fn pick(&mut self, pending: Option<usize>) -> Option<usize> {
        let Some(i) = pending else {
            return Some(self.heap.pop()?.0.1);
        };
        let Some(ts) = self.advance(i) else {
            return Some(self.heap.pop()?.0.1);
        };
        // The input just read usually stays the earliest (long runs from one input):
        // then no heap work at all; otherwise it takes the top's place in one sift.
        match self.heap.peek_mut() {
            Some(mut top) if top.0 < (ts, i) => {
                let chosen = top.0.1;
                *top = Reverse((ts, i));
                Some(chosen)
            }
            _ => Some(i),
        }
    }

    /// The next packet and the index of the input it came from; `None` when every input
    /// has ended. The packet's interface number is the output's (see [`InterfaceMode`]).
    #[inline]
    pub fn next_packet(&mut self) -> Option<(usize, Packet<'_>)> {
        let pending = self.pending.take();
        let i = if self.append {
            if let Some(i) = pending {
                self.advance(i);
            }
            while !self.inputs.get(self.cursor)?.has_head {
                self.cursor += 1;
            }
            self.cursor
        } else {
            self.pick(pending)?
        };
        self.pending = Some(i);
        let mut packet = self.inputs[i].source.current_packet()?;
        if !self.keep_numbers {
            let id = packet.meta().interface;
            let slots = &mut self.map[i];
            if slots.len() <= id as usize {
                slots.resize(id as usize + 1, u32::MAX);
            }
            if slots[id as usize] == u32::MAX {
                slots[id as usize] = self.owners.len() as u32;
                self.owners.push((i, id));
            }
            packet.meta_mut().interface = slots[id as usize];
        }
        Some((i, packet))
    }

    /// What the input says about output interface `id` (for [`crate::Sink::describe_interface`]).
    pub fn interface_info(&self, id: u32) -> Option<InterfaceInfo> {
        if self.keep_numbers {
            return self
                .inputs
                .iter()
                .find_map(|input| input.source.interface_info(id));
        }
        let &(input, local) = self.owners.get(id as usize)?;
        self.inputs[input].source.interface_info(local)
    }

    /// The inputs that ended early, with their errors.
    pub fn errors(&self) -> impl Iterator<Item = (usize, &Error)> {
        self.inputs
            .iter()
            .enumerate()
            .filter_map(|(i, input)| input.error.as_ref().map(|e| (i, e)))
    }

    /// Packets read so far from input `i`.
    pub fn packets_read(&self, i: usize) -> u64 {
        self.inputs[i].packets
    }

    /// The inputs, in the order given.
    pub fn sources(&self) -> impl Iterator<Item = &Source> {
        self.inputs.iter().map(|i| &i.source)
    }

    /// Bytes consumed from all inputs, for progress display.
    pub fn position(&self) -> u64 {
        self.inputs.iter().map(|i| i.source.position()).sum()
    }

    /// Total size of the inputs, when every one is known.
    pub fn size_hint(&self) -> Option<u64> {
        self.inputs.iter().map(|i| i.source.size_hint()).sum()
    }
}

/// Duplicate packet removal as `editcap -d` does it: a packet is a duplicate when its
/// captured bytes equal those of one of the previous `window` packets (length and a
/// 64-bit hash compared; every packet, duplicate or not, enters the window). Each packet
/// costs one hash of its bytes (keyed per `Dedup`, so that a trace cannot be made to
/// collide), then a search of the window up to 64 packets, or one table look-up beyond;
/// memory is 32 bytes or so per packet of the window, which is at most
/// [`Dedup::MAX_WINDOW`].
#[derive(Debug, Clone)]
pub struct Dedup {
    /// The window's keys, oldest first.
    recent: VecDeque<Key>,
    /// How many times each key is in the window; kept for windows larger than
    /// [`SEARCHED_WINDOW`] only (a smaller one is searched).
    counts: HashMap<Key, u32, KeyHasher>,
    /// The key of the hash of packet bytes.
    bytes_key: std::hash::RandomState,
    window: usize,
    /// Duplicates found so far.
    pub duplicates: u64,
}

/// What identifies a packet's bytes: their hash and length.
type Key = (u64, usize);

/// Windows up to this many packets are searched key by key: for `editcap -d`'s four, a
/// merge with the map took 1.7 times as long (criterion `merge/snap96/two_halves_dedup`,
/// interleaved: 55.7 ms with the map, 33.3 ms searched).
const SEARCHED_WINDOW: usize = 64;

/// Hashes a [`Key`], whose first half already is a keyed hash of the bytes, with a
/// multiply rather than SipHash again.
#[derive(Clone, Copy, Default)]
struct KeyHasher(u64);

impl std::hash::BuildHasher for KeyHasher {
    type Hasher = KeyHasher;
    fn build_hasher(&self) -> KeyHasher {
        KeyHasher(0)
    }
}

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(29) ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    #[inline]
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

impl Dedup {
    /// `editcap -d`'s window: the previous four packets.
    pub const DEFAULT_WINDOW: usize = 4;

    /// The largest window (`editcap -D` allows 1 000 000): about 64 MiB of keys.
    pub const MAX_WINDOW: usize = 1 << 20;

    /// Compares each packet with the previous `window` ones (at most
    /// [`Dedup::MAX_WINDOW`]: a larger window is clamped to it).
    pub fn new(window: usize) -> Dedup {
        let window = window.min(Dedup::MAX_WINDOW);
        Dedup {
            recent: VecDeque::with_capacity(window.min(1 << 12) + 1),
            counts: HashMap::with_capacity_and_hasher(
                if window > SEARCHED_WINDOW {
                    window.min(1 << 12)
                } else {
                    0
                },
                KeyHasher(0),
            ),
            bytes_key: std::hash::RandomState::new(),
            window,
            duplicates: 0,
        }
    }

    /// The window in use.
    pub fn window(&self) -> usize {
        self.window
    }

    /// Whether `packet` repeats one of the previous packets in the window; it enters
    /// the window either way.
    #[inline]
    pub fn is_duplicate(&mut self, packet: &Packet<'_>) -> bool {
        if self.window == 0 {
            return false;
        }
        let mut h = std::hash::BuildHasher::build_hasher(&self.bytes_key);
        h.write(packet.data());
        let key = (h.finish(), packet.caplen());
        let searched = self.window <= SEARCHED_WINDOW;
        let dup = if searched {
            self.recent.contains(&key)
        } else {
            let seen = self.counts.entry(key).or_insert(0);
            *seen += 1;
            *seen > 1
        };
        self.recent.push_back(key);
        if self.recent.len() > self.window
            && let Some(old) = self.recent.pop_front()
            && !searched
            && let Some(n) = self.counts.get_mut(&old)
        {
            *n -= 1;
            if *n == 0 {
                self.counts.remove(&old);
            }
        }
        self.duplicates += u64::from(dup);
        dup
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracekit_core::{LinkType, Meta};

    fn packet(data: &[u8]) -> Packet<'_> {
        Packet::new(
            data,
            Meta::new(
                Timestamp::from_nanos(0, 0),
                data.len() as u32,
                LinkType::ETHERNET,
            ),
        )
    }

    #[test]
    fn dedup_window_slides() {
        let mut d = Dedup::new(2);
        let seq: [&[u8]; 6] = [b"a", b"b", b"a", b"c", b"d", b"a"];
        let dups: Vec<bool> = seq.iter().map(|p| d.is_duplicate(&packet(p))).collect();
        // "a" again after one packet: duplicate; after three: out of the window.
        assert_eq!(dups, [false, false, true, false, false, false]);
        assert_eq!(d.duplicates, 1);
    }

    #[test]
    fn searched_and_counted_windows_find_the_same_duplicates() {
        // Packets drawn from a few distinct ones, so that repeats fall inside and
        // outside windows of every size; each window size checked against a plain scan.
        let bodies: Vec<Vec<u8>> = (0..97u8).map(|i| vec![i; 1 + usize::from(i % 7)]).collect();
        let mut x = 12345u32;
        let seq: Vec<usize> = (0..5000)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (x >> 16) as usize % bodies.len()
            })
            .collect();
        for window in [1, 4, SEARCHED_WINDOW, SEARCHED_WINDOW + 1, 200] {
            let mut d = Dedup::new(window);
            for (i, &k) in seq.iter().enumerate() {
                let expected = seq[i.saturating_sub(window)..i].contains(&k);
                assert_eq!(
                    d.is_duplicate(&packet(&bodies[k])),
                    expected,
                    "window {window}, packet {i}"
                );
            }
        }
    }

    #[test]
    fn huge_windows_are_clamped_not_allocated() {
        let mut d = Dedup::new(1 << 40);
        assert_eq!(d.window(), Dedup::MAX_WINDOW);
        assert!(!d.is_duplicate(&packet(b"x")));
        assert!(d.is_duplicate(&packet(b"x")));
    }
}
