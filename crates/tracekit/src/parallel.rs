//! Spreading a trace over every core: N workers, each reading in turn (or a reader
//! thread that runs the first), and one combiner.
//!
//! The user writes a [`Worker`] (per-worker state and what to do with a packet, and with
//! a [`Tick`]); [`Parallel::run`] reads the source, hands each packet to
//! the worker the [`Distribution`] chooses (by default the flow: both directions of a
//! conversation and every fragment of a datagram reach the same worker, in file order;
//! [`Distribution::FlowLevels`] hands a tunnelled packet to one worker per level), passes what workers emit to the caller in the chosen [`Order`], and
//! returns the workers when the trace is done, for a reduce.
//!
//! **Every worker reads.** Over an input that offers its buffers (a file, compressed or
//! not) there is no reader thread: the workers take turns at the input, a buffer (about
//! 1 MiB of records) each, reading an uncompressed file's next bytes ahead of their turn
//! outside the lock; the worker whose turn it was deals the buffer's packets (their
//! positions in it) to every worker by the distribution, and each worker processes its
//! share of every buffer in file order. So reading, choosing and the copy out of the page
//! cache are spread over all cores ([`RunStats::turns`]). Over other inputs (a live
//! capture, a memory mapping) a reader thread reads and deals, and runs worker 0 itself
//! on a smaller share of the flows ([`Parallel::reader_share`]), with no hand-over. Either
//! way N workers keep N cores busy, and one worker is one thread.
//!
//! **No copy, no allocation per packet.** The reader's input keeps the buffers its
//! window leaves ([`tracekit_io::Input::share_windows`]); the reader of a buffer sends
//! each worker the positions of its packets in it, and workers lend packets straight out
//! of the shared buffer; a buffer goes back to the input's pool when its last holder
//! drops it. Position lists and emitted-item lists are recycled through return channels.
//! Only inputs that are not read through buffers of the reader's own (a memory mapping)
//! are copied, packet by packet, into shared blocks; [`RunStats::copied`] says so.
//!
//! **Ticks** ([`TickEvery`]) are put into every worker's stream at the same point of the
//! packet stream, so that per-interval figures stay exact. **Stopping**: a damaged input
//! or a worker's error stops reading; every packet before the damage (before the failing
//! packet) is processed by every worker, and [`Finished::error`] says where it stopped.
//!
//! ```no_run
//! use tracekit::parallel::{Emit, Parallel, Worker};
//! use tracekit::{Error, Packet};
//!
//! /// Counts TCP packets.
//! #[derive(Default)]
//! struct Tcp(u64);
//!
//! impl Worker for Tcp {
//!     type Item = ();
//!     fn packet(&mut self, packet: &Packet<'_>, _: &mut Emit<'_, ()>) -> Result<(), Error> {
//!         let d = tracekit::decode::Decoded::new(packet);
//!         self.0 += u64::from(d.tcp().is_some());
//!         Ok(())
//!     }
//! }
//!
//! let mut source = tracekit::open("trace.pcap.gz")?;
//! let done = Parallel::new(4).run(&mut source, |_| Tcp::default(), |_, _| {})?;
//! let tcp: u64 = done.workers.iter().map(|w| w.0).sum();
//! println!("{tcp} TCP packets; {:?}", done.error);
//! # Ok::<(), tracekit::Error>(())
//! ```

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tracekit_core::{
    ByteOrder, CaptureSource, Error, Meta, Packet, PacketOptions, Polled, Stats, Timestamp,
};
use tracekit_decode::Decoded;

use crate::Source;

/// What each worker runs. One value per worker; it is handed back in [`Finished`].
pub trait Worker: Send {
    /// What the worker emits for the combiner (`()` when results are only reduced).
    type Item: Send;

    /// One packet, in stream order among this worker's packets.
    fn packet(&mut self, packet: &Packet<'_>, out: &mut Emit<'_, Self::Item>) -> Result<(), Error>;

    /// A tick: every worker gets every tick, at the same point of the packet stream. A
    /// gap in the time stamps brings up to [`MAX_EMPTY_TICKS`] ticks in a row at one
    /// point: emit little or nothing for an interval with no packets (the combiner can
    /// tell an empty interval by its missing items), or what is emitted is kept until
    /// the batch is done.
    fn tick(&mut self, tick: &Tick, out: &mut Emit<'_, Self::Item>) -> Result<(), Error> {
        let _ = (tick, out);
        Ok(())
    }

    /// In a run over live members ([`Parallel::run_members`]): the worker's items are
    /// about to be sent on time (once [`MEMBER_FLUSH`] has passed while packets come,
    /// looked at every 8 packets; whenever its member was quiet that long; and once more
    /// before [`finish`](Self::finish)). A
    /// worker that holds packets back in batches of its own emits them here, so that
    /// nothing waits for the next packet. Not called in a run over a file.
    fn flush(&mut self, out: &mut Emit<'_, Self::Item>) -> Result<(), Error> {
        let _ = out;
        Ok(())
    }

    /// After this worker's last packet and tick (also when the run stopped early, unless
    /// this worker failed): a last chance to emit, e.g. what is left of an interval or
    /// the flows still open. Its items come after every packet's; [`Emit::seq`] is the
    /// number of packets the run handed out.
    fn finish(&mut self, out: &mut Emit<'_, Self::Item>) -> Result<(), Error> {
        let _ = out;
        Ok(())
    }
}

/// Where a worker's items go, tagged with the position in the packet stream.
pub struct Emit<'a, T> {
    /// The position as an order key: twice the packet number, plus one for a packet
    /// (a tick at packet `n` comes before packet `n`).
    key: u64,
    items: &'a mut Vec<(u64, T)>,
    /// Asked to send the items now ([`Emit::send_soon`]).
    soon: bool,
    /// What the reader noted about this packet for this worker.
    note: Note,
}

/// The tunnel levels of a packet that a worker counts as its own (see
/// [`Distribution::FlowLevels`]): one bit per level, level 0 the outermost; the bit of
/// level 7 stands for it and every deeper one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Levels(u8);

impl Levels {
    /// Every level: what a worker gets unless [`Distribution::FlowLevels`] shares the
    /// packet out.
    pub const ALL: Levels = Levels(u8::MAX);

    /// Whether tunnel level `level` (0: the outermost packet) is this worker's.
    #[inline]
    pub fn contains(self, level: usize) -> bool {
        self.0 & (1 << level.min(7)) != 0
    }
}

/// What the reader tells a worker about one packet beyond the packet itself: which of
/// its levels are the worker's, and the stream's clock when the packet's own time stamp
/// does not give it. Kept in a sparse list beside a batch's slots: most packets have
/// nothing to note.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Note {
    levels: Levels,
    clock: Option<Timestamp>,
}

impl Note {
    /// Nothing to note.
    const PLAIN: Note = Note {
        levels: Levels::ALL,
        clock: None,
    };
}

/// The stream's clock (its latest known time stamp, in `clock`) moved on by a packet
/// stamped `ts`; returns the clock to note for the packet: `Some` when the packet's own
/// time stamp is unknown or earlier, so that it does not tell the worker the time.
#[inline]
fn clock_note(clock: &mut Option<Timestamp>, ts: Timestamp) -> Option<Timestamp> {
    match *clock {
        Some(c) if !ts.is_known() || ts < c => Some(c),
        _ if ts.is_known() => {
            *clock = Some(ts);
            None
        }
        _ => None,
    }
}

impl<'a, T> Emit<'a, T> {
    /// An emitter for packet `seq` into `items` (order key, item): to run a worker on
    /// one thread without the machinery, as a reference or a baseline.
    pub fn new(seq: u64, items: &'a mut Vec<(u64, T)>) -> Emit<'a, T> {
        Emit::keyed(packet_key(seq), items)
    }

    /// An emitter at order key `key` (a packet's or a tick's).
    fn keyed(key: u64, items: &'a mut Vec<(u64, T)>) -> Emit<'a, T> {
        Emit {
            key,
            items,
            soon: false,
            note: Note::PLAIN,
        }
    }

    /// The packet's tunnel levels that are this worker's to count: with
    /// [`Distribution::FlowLevels`], a packet that carries tunnels may go to several
    /// workers, each counting the levels whose address pair is its own (a flow table
    /// counts each level in its flow, and each flow on one worker). Otherwise
    /// [`Levels::ALL`].
    #[inline]
    pub fn levels(&self) -> Levels {
        self.note.levels
    }

    /// The stream's clock at this packet, when the packet's own time stamp does not give
    /// it: the latest known time stamp of the packets up to this one, if this packet's
    /// is unknown or earlier (`None` with [`Distribution::Blocks`] taking turns, where a
    /// worker reads its packets itself, and for a live source's members). A worker
    /// sees only its own packets, so without this its clock could lag behind the
    /// stream's at a packet stamped out of order, and a table that times flows out by
    /// trace time would then keep a flow that one thread would have ended.
    #[inline]
    pub fn clock(&self) -> Option<Timestamp> {
        self.note.clock
    }

    /// In a run over members: asks that this worker's items go to the combiner after
    /// this packet rather than once 256 have gathered — for items that each hold many
    /// packets (a batch of copies), so that what is in flight stays small. Runs over a
    /// file send with every batch anyway.
    pub fn send_soon(&mut self) {
        self.soon = true;
    }

    /// Emits an item for the combiner.
    #[inline]
    pub fn emit(&mut self, item: T) {
        self.items.push((self.key, item));
    }

    /// The packet's number in the stream (from 0); for a tick, the number of packets
    /// before it.
    pub fn seq(&self) -> u64 {
        self.key >> 1
    }
}

/// The order key of packet `seq`.
fn packet_key(seq: u64) -> u64 {
    seq.saturating_mul(2).saturating_add(1)
}

/// The order key of a tick before packet `seq`.
fn tick_key(seq: u64) -> u64 {
    seq.saturating_mul(2)
}

/// A point in the packet stream where every worker is told that an interval ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tick {
    /// Ticks before this one.
    pub index: u64,
    /// Packets before this point of the stream.
    pub packets: u64,
    /// With [`TickEvery::TraceTime`]: the start of the interval that begins here, in
    /// nanoseconds since the epoch (the end of the one that ended).
    pub time: Option<u64>,
}

/// How often ticks come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TickEvery {
    /// Every this many packets.
    Packets(u64),
    /// Every this many nanoseconds of trace time (intervals aligned to the epoch): a
    /// tick before the first packet of each new interval, one per interval boundary
    /// crossed (after more than [`MAX_EMPTY_TICKS`] empty intervals, one only). A
    /// packet whose time stamp goes back before the current interval is in the current
    /// one.
    TraceTime(u64),
}

/// A user's choice of worker: any number, taken modulo the worker count.
pub type Chooser = Arc<dyn Fn(&Packet<'_>) -> u64 + Send + Sync>;

/// Which worker gets a packet.
#[derive(Clone, Default)]
pub enum Distribution {
    /// By a hash of the IP addresses and protocol, the same for both directions:
    /// every packet of a flow, and every fragment of a datagram (ports or not), reach
    /// the same worker. Packets that are not IP go round-robin.
    #[default]
    Flow,
    /// As [`Distribution::Flow`], with the packets that carry tunnels shared out by
    /// level: a packet goes to the worker of each of its levels' address pairs (the
    /// outer packet's, then each one its tunnels carry, a first fragment's included),
    /// and each of those workers is told which levels are its own ([`Emit::levels`]).
    /// A flow table that counts every level of a packet in that level's flow then
    /// counts each flow whole on one worker, also a flow inside tunnels whose packets
    /// come through different outer address pairs. A worker must count only its own
    /// levels: the others reach their own workers too. The levels a later fragment
    /// hides (and so those of a datagram reassembled from fragments, which is done
    /// where its last fragment goes) are the fragment's worker's: a flow inside
    /// tunnels some of whose packets are reassembled is counted whole only if those
    /// reach the worker of its own address pair.
    FlowLevels,
    /// In turn.
    RoundRobin,
    /// By a user function.
    By(Chooser),
    /// By buffer: there is no reader thread; each worker in turn takes the next buffer
    /// of the input (about 1 MiB of records), reads it itself and processes all of its
    /// packets, so a packet is read, decoded and analysed on one core and nothing is
    /// handed over between cores. Packets of a flow may reach several workers: for
    /// analyses whose per-worker results add up (counts, histograms, sets; libtrace's
    /// `HASHER_BALANCE`). Stream order, ticks and stopping keep their guarantees. An
    /// input with no buffers of its own to share (a memory mapping, a live capture) is
    /// dealt round-robin instead.
    Blocks,
}

impl std::fmt::Debug for Distribution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Distribution::Flow => "Flow",
            Distribution::FlowLevels => "FlowLevels",
            Distribution::RoundRobin => "RoundRobin",
            Distribution::By(_) => "By(..)",
            Distribution::Blocks => "Blocks",
        })
    }
}

/// In which order the combiner is handed the workers' items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    /// As they come (after a worker's error, items of later packets that other workers
    /// had already processed may have come too).
    #[default]
    Arrival,
    /// In packet-stream order (the order one thread would have produced them; items of
    /// the same tick in worker order): a merge of the workers' ordered streams. After a
    /// worker's error, exactly the items of the packets before the failing one.
    Stream,
}

/// One worker's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerStats {
    /// Packets it processed (with [`Distribution::FlowLevels`] a packet shared out by
    /// level counts for each worker it reached).
    pub packets: u64,
    /// Batches it received.
    pub batches: u64,
    /// Time it waited for a batch (with [`Distribution::Blocks`], for its turn).
    pub idle: Duration,
    /// With [`Distribution::Blocks`] over an uncompressed file: turns whose bytes it read
    /// ahead, outside the lock, and fed to the source.
    pub read_ahead: u64,
    /// In a run over members: the member's own counters at its end (packets received,
    /// dropped by the kernel or card, filtered, delivered).
    pub source: Option<Stats>,
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Packets read and handed out.
    pub packets: u64,
    /// Per worker.
    pub workers: Vec<WorkerStats>,
    /// Time the reader waited for a worker's queue to have room.
    pub reader_blocked: Duration,
    /// Whether packets were copied for other workers (an input with no buffers of its
    /// own to share); never with one worker, which reads the packets in place.
    pub copied: bool,
    /// Whether each worker read a member of its own ([`Parallel::run_members`]): no
    /// reader thread.
    pub members: bool,
    /// Whether the workers took turns reading buffers of the input (any input that
    /// offers its buffers, with more than one worker): no reader thread; a worker's idle
    /// time is its wait for its turn, or for its share of another's.
    pub turns: bool,
}

impl std::fmt::Display for RunStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.members {
            write!(
                f,
                "{} packets over {} workers, each reading a member of its own",
                self.packets,
                self.workers.len()
            )?;
        } else if self.turns {
            write!(
                f,
                "{} packets over {} workers, each reading buffers of the input in turn",
                self.packets,
                self.workers.len()
            )?;
        } else {
            write!(
                f,
                "{} packets over {} workers; reader waited {:.3} s for full queues",
                self.packets,
                self.workers.len(),
                self.reader_blocked.as_secs_f64()
            )?;
        }
        for (i, w) in self.workers.iter().enumerate() {
            write!(
                f,
                "\n  worker {i}: {} packets in {} batches, idle {:.3} s",
                w.packets,
                w.batches,
                w.idle.as_secs_f64()
            )?;
            if let Some(m) = w.source {
                write!(
                    f,
                    "; its member received {}, dropped {}, filtered {}",
                    m.received, m.dropped, m.filtered
                )?;
            }
        }
        Ok(())
    }
}

/// The end of a run.
#[derive(Debug)]
pub struct Finished<W> {
    /// The workers, in order, with their state (for a reduce).
    pub workers: Vec<W>,
    /// What the run did.
    pub stats: RunStats,
    /// Why it stopped before the end of the input, if it did: damage in the input (every
    /// packet before it was processed), a worker's error (every packet before the one
    /// that failed was processed), or `None` (the end, or a stop asked for).
    pub error: Option<Error>,
}

/// The most workers a run takes.
pub const MAX_WORKERS: usize = 256;

/// Batches in flight per worker: queued, being processed, or coming back.
const QUEUE: usize = 4;

/// Worker 0's items are sent to the combiner at least every this many.
const OWN_ITEMS: usize = 1024;

/// How often a member's worker sends what it has, and how long a member may be quiet
/// before it does ([`Worker::flush`]).
pub const MEMBER_FLUSH: Duration = Duration::from_millis(50);

/// In copy mode, the size of a shared block.
const COPY_BLOCK: usize = 1 << 18;

/// How a run goes: workers, distribution, ticks, order, stop flag.
#[derive(Debug, Clone)]
pub struct Parallel {
    workers: usize,
    reader_share: Option<f64>,
    distribution: Distribution,
    tick: Option<TickEvery>,
    order: Order,
    stop: Option<Arc<AtomicBool>>,
    watch: Option<MemberWatch>,
}

/// The members' counters while a run over members goes on ([`Parallel::watch`]): each
/// worker publishes its member's [`Stats`] whenever it sends on time (at most every
/// [`MEMBER_FLUSH`]), so that a caller can report drops during a long capture.
#[derive(Debug, Clone, Default)]
pub struct MemberWatch(Arc<Mutex<Vec<Stats>>>);

impl MemberWatch {
    /// A watch with nothing published yet.
    pub fn new() -> MemberWatch {
        MemberWatch::default()
    }

    /// Each member's counters as last published (an empty list before the run starts).
    pub fn stats(&self) -> Vec<Stats> {
        self.0.lock().map(|s| s.clone()).unwrap_or_default()
    }

    fn publish(&self, member: usize, stats: Stats) {
        if let Ok(mut s) = self.0.lock()
            && let Some(slot) = s.get_mut(member)
        {
            *slot = stats;
        }
    }
}

impl Parallel {
    /// A run over `workers` workers (0: one per core; at most [`MAX_WORKERS`]), by flow,
    /// without ticks, items in arrival order. A run takes `workers` threads (and the
    /// caller's, for the combiner): the workers read in turn, or worker 0 runs on the
    /// reader thread.
    pub fn new(workers: usize) -> Parallel {
        let workers = if workers == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            workers
        };
        Parallel {
            workers: workers.min(MAX_WORKERS),
            reader_share: None,
            distribution: Distribution::Flow,
            tick: None,
            order: Order::Arrival,
            stop: None,
            watch: None,
        }
    }

    /// Workers this run uses.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// The share of the flows (of the packets, round-robin) that worker 0 gets, from 0
    /// to 1. With a reader thread (which runs worker 0) by default a tenth of another
    /// worker's share: with 2 workers 0.09, with 4 0.03; when the workers take turns at
    /// the input, by default an equal share. Reading and dealing every packet
    /// is most of the reader's time, so it takes little more: on 2 cores and 96-byte
    /// packets, Scans ran fastest at 0.1 (1.5× one thread, against 1.38× at 0), Ports at
    /// 0 to 0.1. Not used by [`Distribution::By`], whose user function picks the worker
    /// itself.
    pub fn reader_share(mut self, share: f64) -> Parallel {
        self.reader_share = Some(if share.is_nan() {
            0.0
        } else {
            share.clamp(0.0, 1.0)
        });
        self
    }

    /// Which worker gets a packet.
    pub fn distribution(mut self, d: Distribution) -> Parallel {
        self.distribution = d;
        self
    }

    /// Ticks every so many packets or so much trace time.
    pub fn tick_every(mut self, every: TickEvery) -> Parallel {
        self.tick = match every {
            TickEvery::Packets(0) | TickEvery::TraceTime(0) => None,
            e => Some(e),
        };
        self
    }

    /// The order items reach the combiner.
    pub fn order(mut self, order: Order) -> Parallel {
        self.order = order;
        self
    }

    /// In a run over members, publishes their counters into `watch` as the run goes.
    pub fn watch(mut self, watch: MemberWatch) -> Parallel {
        self.watch = Some(watch);
        self
    }

    /// Stops reading when `stop` becomes true (Ctrl-C): the packets read so far are
    /// processed and the run ends without an error.
    pub fn stop_flag(mut self, stop: Arc<AtomicBool>) -> Parallel {
        self.stop = Some(stop);
        self
    }

    /// Runs in [`Order::Stream`] and returns, with the workers, every emitted item sorted
    /// by `key`: the combiner for results wanted in an order of their own (by flow, by
    /// address). The sort is stable over the stream order, so items with equal keys come
    /// as one thread would have produced them, and the result is the same for any number
    /// of workers. Every item is kept until the end.
    pub fn run_sorted<W, F, K>(
        &self,
        source: &mut Source,
        make: F,
        key: impl FnMut(&W::Item) -> K,
    ) -> Result<(Finished<W>, Vec<W::Item>), Error>
    where
        W: Worker,
        F: Fn(usize) -> W + Sync,
        K: Ord,
    {
        let mut items = Vec::new();
        let done = self
            .clone()
            .order(Order::Stream)
            .run(source, make, |_, item| items.push(item))?;
        items.sort_by_key(key);
        Ok((done, items))
    }

    /// Runs one worker per member of `members` — the sockets of a live fan-out group,
    /// where the kernel already spreads packets by flow, or a card's streams — each on a
    /// thread of its own that reads its member directly: packets are lent from the
    /// member's ring to the worker, with no reader thread and no copy. The worker count
    /// is the member count; the same [`Worker`] as for files.
    ///
    /// What differs from [`run`](Self::run): there is no single packet stream, so
    /// items reach `combine` as they come ([`Order::Arrival`], whatever the run's order;
    /// the `seq` handed with them is the member's own packet number), and ticks count
    /// each member's own packets or time stamps. A worker sends its items every 256
    /// items (or when it asks, [`Emit::send_soon`]), on time ([`MEMBER_FLUSH`]: once that
    /// long has passed, looked at every 8 packets, and whenever its member was quiet that
    /// long; [`Worker::flush`] is called then), and at the end. Members are read with
    /// [`CaptureSource::next_packet_within`]: a source that implements it only by
    /// waiting for its next packet delays the sends on time of a quiet member.
    ///
    /// **Stopping.** A live member ends when it is stopped: give every member the stop
    /// handle whose flag is this run's [`stop_flag`](Self::stop_flag) (for AF_PACKET,
    /// `set_stop_handle`), and a worker's error or a member's read error stops all of
    /// them through that flag. [`Finished::error`] is the first error, with the member's
    /// packet number.
    pub fn run_members<S, W, F, C>(
        &self,
        members: Vec<S>,
        make: F,
        mut combine: C,
    ) -> Result<Finished<W>, Error>
    where
        S: CaptureSource + Send,
        W: Worker,
        F: Fn(usize) -> W + Sync,
        C: FnMut(u64, W::Item),
    {
        let n = members.len();
        if n == 0 || n > MAX_WORKERS {
            return Err(Error::invalid_argument(format!(
                "a parallel run takes 1 to {MAX_WORKERS} members, not {n}"
            )));
        }
        let shared = Shared::new(self.stop.clone().unwrap_or_default());
        let (done_tx, done_rx, back_tx, back_rx) = item_channels::<W::Item>(n);
        if let Some(w) = &self.watch
            && let Ok(mut s) = w.0.lock()
        {
            *s = vec![Stats::default(); n];
        }
        let (shared, make, tick, watch) = (&shared, &make, self.tick, self.watch.as_ref());
        std::thread::scope(|scope| {
            let mut handles = Vec::with_capacity(n);
            for (i, (member, back)) in members.into_iter().zip(back_rx).enumerate() {
                let done_tx = done_tx.clone();
                let link = MemberLink {
                    i,
                    done_tx,
                    back,
                    watch,
                };
                handles.push(scope.spawn(move || read_member(member, make(i), tick, link, shared)));
            }
            drop(done_tx);
            combine_items(n, Order::Arrival, &done_rx, &back_tx, &mut combine, shared);
            let mut stats = RunStats {
                members: true,
                ..RunStats::default()
            };
            let mut workers = Vec::with_capacity(n);
            let mut first_error: Option<Error> = None;
            for h in handles {
                match h.join() {
                    Ok((w, s, e)) => {
                        workers.push(w);
                        stats.packets += s.packets;
                        stats.workers.push(s);
                        if first_error.is_none() {
                            first_error = e;
                        }
                    }
                    Err(_) => return Err(Error::unsupported("a member's thread panicked")),
                }
            }
            let worker_error = shared.worker_error.lock().ok().and_then(|mut e| e.take());
            Ok(Finished {
                workers,
                stats,
                error: worker_error.map(|(_, e)| e).or(first_error),
            })
        })
    }

    /// Runs: one thread per worker, each made by `make(i)`, taking turns at `source` (or,
    /// over an input that does not offer its buffers, a reader thread that also runs
    /// worker 0); calls `combine(seq, item)` on this thread with what the workers emit,
    /// in the run's [`Order`].
    pub fn run<W, F, C>(
        &self,
        source: &mut Source,
        make: F,
        mut combine: C,
    ) -> Result<Finished<W>, Error>
    where
        W: Worker,
        F: Fn(usize) -> W + Sync,
        C: FnMut(u64, W::Item),
    {
        let n = self.workers;
        if n > 1 && source.input_mut().is_some_and(|i| i.share_windows()) {
            // No reader thread: the workers take turns at the source. With blocks, a
            // turn's packets are its reader's; otherwise the reader of a turn deals its
            // packets to every worker.
            let deal = (!matches!(self.distribution, Distribution::Blocks)).then(|| Deal {
                distribution: self.distribution.clone(),
                // No reader to spare: equal shares, unless the caller chose worker 0's.
                table: share_table(n, Some(self.reader_share.unwrap_or(1.0 / n as f64))),
                n,
                levels: n > 1 && matches!(self.distribution, Distribution::FlowLevels),
            });
            return self.run_turns(source, deal, make, combine);
        }
        let shared = Shared::new(self.stop.clone().unwrap_or_default());
        // Workers 1.. get batches; worker 0 is the reader's.
        let mut batch_tx = Vec::with_capacity(n);
        let mut batch_rx = Vec::with_capacity(n);
        for _ in 1..n {
            let (tx, rx) = sync_channel::<Batch>(QUEUE);
            batch_tx.push(tx);
            batch_rx.push(rx);
        }
        // Emptied position lists, back to the reader.
        let (spare_tx, spare_rx) = sync_channel::<Lists>(QUEUE * n + n);
        let (done_tx, done_rx, items_back_tx, items_back_rx) = item_channels::<W::Item>(n);
        let deal = Deal {
            distribution: self.distribution.clone(),
            table: share_table(n, self.reader_share),
            n,
            levels: n > 1 && matches!(self.distribution, Distribution::FlowLevels),
        };
        let tick = self.tick;
        let order = self.order;
        let shared = &shared;
        let make = &make;
        // With a core for each thread, the reader and each worker get their own: left to
        // itself the scheduler kept a fresh reader/worker pair on one core (every batch
        // hand-over a sleep and a wake-up next to the waker), and a run on 2 cores was
        // slower than one thread. With fewer cores than threads, nothing is pinned.
        let cores = core_affinity::get_core_ids().unwrap_or_default();
        let pin = cores.len() >= n;
        let core = |i: usize| pin.then(|| cores[i % cores.len()]);
        let mut items_back_rx = items_back_rx.into_iter();
        let own_back = items_back_rx.next();
        std::thread::scope(|scope| {
            let reader_core = core(0);
            let own_done = done_tx.clone();
            let reader = scope.spawn(move || {
                if let Some(c) = reader_core {
                    core_affinity::set_for_current(c);
                }
                let own = own_back.map(|back| Running::new(0, make(0), order, &own_done, back));
                read_and_deal(source, &deal, own, tick, &batch_tx, &spare_rx, shared)
            });
            let mut handles = Vec::with_capacity(n);
            for (i, (rx, back)) in batch_rx.into_iter().zip(items_back_rx).enumerate() {
                let i = i + 1;
                let done_tx = done_tx.clone();
                let spare_tx = spare_tx.clone();
                let worker_core = core(i);
                handles.push(scope.spawn(move || {
                    if let Some(c) = worker_core {
                        core_affinity::set_for_current(c);
                    }
                    work(
                        Running::new(i, make(i), order, &done_tx, back),
                        rx,
                        &spare_tx,
                        shared,
                    )
                }));
            }
            drop(done_tx);
            drop(spare_tx);
            combine_items(n, order, &done_rx, &items_back_tx, &mut combine, shared);
            let (stats, read_error, own) = reader.join().unwrap_or_else(|_| {
                (
                    RunStats::default(),
                    Some(Error::unsupported("the reader thread panicked")),
                    None,
                )
            });
            let mut stats = stats;
            let mut workers = Vec::with_capacity(n);
            let Some((w, s)) = own else {
                return Err(Error::unsupported("the reader thread panicked"));
            };
            workers.push(w);
            stats.workers.push(s);
            join_workers(handles, &mut workers, &mut stats)?;
            let worker_error = shared.worker_error.lock().ok().and_then(|mut e| e.take());
            Ok(Finished {
                workers,
                stats,
                error: earlier_error(read_error, worker_error),
            })
        })
    }

    /// An input that shares its buffers: `n` worker threads take turns at the source, no
    /// reader thread. With [`Distribution::Blocks`] (`deal` is `None`) each processes the
    /// packets of its turns ([`take_turns`]); otherwise each deals its turns' packets to
    /// all ([`take_dealt_turns`]).
    fn run_turns<W, F, C>(
        &self,
        source: &mut Source,
        deal: Option<Deal>,
        make: F,
        mut combine: C,
    ) -> Result<Finished<W>, Error>
    where
        W: Worker,
        F: Fn(usize) -> W + Sync,
        C: FnMut(u64, W::Item),
    {
        let n = self.workers;
        let shared = Shared::new(self.stop.clone().unwrap_or_default());
        let (done_tx, done_rx, back_tx, back_rx) = item_channels::<W::Item>(n);
        let generation = generation_of(source);
        let ahead = source.input_mut().and_then(|i| {
            let file = i.read_ahead_file()?;
            let plain = i.compression() == tracekit_io::Compression::None;
            plain.then(|| Ahead {
                file,
                first: i.next_read_offset(),
                size: i.size_hint().unwrap_or(0),
            })
        });
        let turns = Mutex::new(Turns {
            source,
            generation,
            seq: 0,
            carried: Vec::new(),
            refill: false,
            ticker: Ticker {
                every: self.tick,
                ticks: 0,
                interval: None,
            },
            // Dealt turns deal every tick of a turn to every worker: one list, for the
            // ticks carried to the next turn.
            owed: (0..if deal.is_some() { 1 } else { n })
                .map(|_| Vec::new())
                .collect(),
            ended: false,
            error: None,
            ticket: 0,
            clocked: deal.is_some(),
            clock: None,
        });
        let next_turn = std::sync::Condvar::new();
        let claims = AtomicU64::new(0);
        let (shared, make, order) = (&shared, &make, self.order);
        let at = TurnOrder {
            turns: &turns,
            next_turn: &next_turn,
            claims: &claims,
            ahead: ahead.as_ref(),
        };
        let board = deal.map(|deal| Board {
            deal,
            state: Mutex::new(BoardState {
                dealt: std::collections::VecDeque::new(),
                base: 0,
                ended: false,
                spare: Vec::new(),
                buffers: Vec::new(),
            }),
            changed: std::sync::Condvar::new(),
        });
        let board = board.as_ref();
        let cores = core_affinity::get_core_ids().unwrap_or_default();
        let pin = cores.len() >= n;
        std::thread::scope(|scope| {
            let mut handles = Vec::with_capacity(n);
            for (i, back) in back_rx.into_iter().enumerate() {
                let done_tx = done_tx.clone();
                let core = pin.then(|| cores[i % cores.len()]);
                handles.push(scope.spawn(move || {
                    if let Some(c) = core {
                        core_affinity::set_for_current(c);
                    }
                    let running = Running::new(i, make(i), order, &done_tx, back);
                    match board {
                        Some(board) => take_dealt_turns(running, at, board, shared),
                        None => take_turns(running, at, shared),
                    }
                }));
            }
            drop(done_tx);
            combine_items(n, order, &done_rx, &back_tx, &mut combine, shared);
            let mut stats = RunStats {
                turns: true,
                ..RunStats::default()
            };
            let mut workers = Vec::with_capacity(n);
            join_workers(handles, &mut workers, &mut stats)?;
            let (read_error, packets) = match turns.lock() {
                Ok(mut t) => (t.error.take(), t.seq),
                Err(_) => return Err(Error::unsupported("a worker thread panicked")),
            };
            stats.packets = packets;
            let worker_error = shared.worker_error.lock().ok().and_then(|mut e| e.take());
            Ok(Finished {
                workers,
                stats,
                error: earlier_error(read_error, worker_error),
            })
        })
    }
}

/// Workers' items and progress to the combiner, and each worker's emptied item lists
/// coming back: (to the combiner, the combiner's end, back per worker, each worker's end).
#[allow(clippy::type_complexity)]
fn item_channels<T>(
    n: usize,
) -> (
    SyncSender<Done<T>>,
    Receiver<Done<T>>,
    Vec<SyncSender<Vec<(u64, T)>>>,
    Vec<Receiver<Vec<(u64, T)>>>,
) {
    let (done_tx, done_rx) = sync_channel::<Done<T>>(QUEUE * n);
    let (back_tx, back_rx) = (0..n)
        .map(|_| sync_channel::<Vec<(u64, T)>>(QUEUE + 1))
        .unzip();
    (done_tx, done_rx, back_tx, back_rx)
}

/// Joins worker threads, in order, into `workers` and `stats`.
fn join_workers<W>(
    handles: Vec<std::thread::ScopedJoinHandle<'_, (W, WorkerStats)>>,
    workers: &mut Vec<W>,
    stats: &mut RunStats,
) -> Result<(), Error> {
    for h in handles {
        let (w, s) = h
            .join()
            .map_err(|_| Error::unsupported("a worker thread panicked"))?;
        workers.push(w);
        stats.workers.push(s);
    }
    Ok(())
}

/// Buckets of the weighted choice of a worker: a flow hash (or a packet number, round
/// robin) picks one of them, and the bucket names the worker.
const BUCKETS: usize = 256;

/// Which worker each bucket is for: worker 0, the reader's, gets `share` of them (by
/// default a tenth of another worker's share), spread evenly; the others get the rest
/// in turn.
fn share_table(n: usize, share: Option<f64>) -> [u8; BUCKETS] {
    let mut table = [0u8; BUCKETS];
    if n <= 1 {
        return table;
    }
    let share = share.unwrap_or(0.1 / (0.1 + (n - 1) as f64));
    let own = ((BUCKETS as f64 * share).round() as usize).min(BUCKETS);
    let mut next = 1;
    for (b, slot) in table.iter_mut().enumerate() {
        if (b + 1) * own / BUCKETS > b * own / BUCKETS {
            *slot = 0;
        } else {
            *slot = next as u8;
            next = if next + 1 == n { 1 } else { next + 1 };
        }
    }
    table
}

/// How the reader chooses a packet's worker.
struct Deal {
    distribution: Distribution,
    table: [u8; BUCKETS],
    n: usize,
    /// [`Distribution::FlowLevels`] over more than one worker: packets are dealt by
    /// [`Deal::level_targets`].
    levels: bool,
}

/// Where a packet goes: up to one worker per tunnel level (worker numbers fit a byte:
/// [`MAX_WORKERS`]), each with the levels that are its own. 17 bytes: one is made for
/// every packet.
#[derive(Clone, Copy)]
struct Targets {
    len: u8,
    workers: [u8; 8],
    levels: [u8; 8],
}

impl Targets {
    const NONE: Targets = Targets {
        len: 0,
        workers: [0; 8],
        levels: [0; 8],
    };

    /// Every level to worker `w`.
    #[inline]
    fn one(w: usize) -> Targets {
        Targets {
            len: 1,
            workers: [w as u8; 8],
            levels: [Levels::ALL.0; 8],
        }
    }

    /// The levels `bits` to worker `w`.
    #[inline]
    fn add(&mut self, w: usize, bits: u8) {
        if bits == 0 {
            return;
        }
        let len = usize::from(self.len);
        match self.workers[..len]
            .iter()
            .position(|&v| usize::from(v) == w)
        {
            Some(i) => self.levels[i] |= bits,
            None => {
                self.workers[len] = w as u8;
                self.levels[len] = bits;
                self.len += 1;
            }
        }
    }

    /// The workers and their levels.
    #[inline]
    fn get(&self) -> impl Iterator<Item = (usize, Levels)> + '_ {
        let len = usize::from(self.len);
        self.workers[..len]
            .iter()
            .zip(&self.levels[..len])
            .map(|(&w, &l)| (usize::from(w), Levels(l)))
    }
}

/// A worker at work, on the reader thread (worker 0: the packets dealt to it are
/// processed as they are read, lent straight from the reader's input) or on a thread of
/// its own (the packets of its batches): its state, the items it emitted since it last
/// sent them to the combiner, and whether it failed (then it does nothing more).
struct Running<'a, W: Worker> {
    index: usize,
    worker: W,
    items: Vec<(u64, W::Item)>,
    stats: WorkerStats,
    failed: bool,
    /// Whether the combiner needs this worker's progress with every batch (stream
    /// order); in arrival order, a send with no items is skipped.
    progress: bool,
    done_tx: &'a SyncSender<Done<W::Item>>,
    back: Receiver<Vec<(u64, W::Item)>>,
}

impl<'a, W: Worker> Running<'a, W> {
    fn new(
        index: usize,
        worker: W,
        order: Order,
        done_tx: &'a SyncSender<Done<W::Item>>,
        back: Receiver<Vec<(u64, W::Item)>>,
    ) -> Running<'a, W> {
        Running {
            index,
            worker,
            items: Vec::new(),
            stats: WorkerStats::default(),
            failed: false,
            progress: order == Order::Stream,
            done_tx,
            back,
        }
    }

    /// A run of ticks, unless the run stopped before it (packets from `limit` on are
    /// not processed).
    fn ticks(&mut self, run: &TickRun, limit: u64, shared: &Shared) {
        if self.failed {
            return;
        }
        if let Err((at, e)) = run_ticks(&mut self.worker, run, &mut self.items, limit) {
            fail(shared, at, e);
            self.failed = true;
        }
    }

    /// Packet `seq`; `false` once the worker stops (it failed, or the run stops before
    /// `seq`).
    #[inline]
    fn packet(
        &mut self,
        p: &Packet<'_>,
        seq: u64,
        note: Note,
        limit: u64,
        shared: &Shared,
    ) -> bool {
        if self.failed || seq >= limit {
            return false;
        }
        self.stats.packets += 1;
        let mut out = Emit::keyed(packet_key(seq), &mut self.items);
        out.note = note;
        if let Err(e) = self.worker.packet(p, &mut out) {
            fail(shared, seq, e);
            self.failed = true;
            return false;
        }
        true
    }

    /// The items so far to the combiner, with the progress: every packet before `seq`
    /// was seen. `false` when the combiner is gone.
    fn send(&mut self, seq: u64) -> bool {
        self.stats.batches += 1;
        // Nothing to hand on: no message, and no wake-up of the combiner's thread (on a
        // VM each is an inter-processor interrupt, and the combiner takes a core from
        // the reader or a worker while it runs).
        if self.items.is_empty() && !self.progress && !self.failed {
            return true;
        }
        let fresh = self.back.try_recv().unwrap_or_default();
        let items = std::mem::replace(&mut self.items, fresh);
        let upto = if self.failed { u64::MAX } else { tick_key(seq) };
        self.done_tx
            .send(Done {
                worker: self.index,
                items,
                upto,
            })
            .is_ok()
    }

    /// The end of the input at packet `end`: `finish`, the last items.
    fn finish(mut self, end: u64, shared: &Shared) -> (W, WorkerStats) {
        if !self.failed {
            let at = end.min(shared.limit.load(Ordering::Relaxed));
            let mut out = Emit::keyed(tick_key(at), &mut self.items);
            if let Err(e) = self.worker.finish(&mut out) {
                fail(shared, at, e);
            }
        }
        let items = std::mem::take(&mut self.items);
        let _ = self.done_tx.send(Done {
            worker: self.index,
            items,
            upto: u64::MAX,
        });
        (self.worker, self.stats)
    }
}

/// One packet of a worker's batch: its number, where its bytes and options are in the
/// batch's buffer, and its metadata. 64 bytes: the lists cross from the reader's core to
/// the worker's, so they are kept small.
#[derive(Clone, Copy)]
struct Slot {
    seq: u64,
    start: u32,
    len: u32,
    opt_start: u32,
    /// Length of the options (0: none), big-endian options marked by [`BIG_ENDIAN`].
    opt_len: u32,
    meta: Meta,
}

/// In [`Slot::opt_len`]: the options are big-endian.
const BIG_ENDIAN: u32 = 1 << 31;

/// [`Slot::opt_len`] for `len` bytes of options in `order`.
fn options_field(len: usize, order: ByteOrder) -> u32 {
    len as u32
        | if order == ByteOrder::Big {
            BIG_ENDIAN
        } else {
            0
        }
}

/// What a reader keeps of a packet lent from its input's window, taken while it is lent:
/// the addresses and lengths of its bytes and options, and its metadata.
#[derive(Clone, Copy)]
struct Lent {
    data: (usize, usize),
    options: Option<(usize, usize, ByteOrder)>,
    meta: Meta,
}

impl Lent {
    #[inline]
    fn of(p: &Packet<'_>) -> Lent {
        Lent {
            data: (p.data().as_ptr() as usize, p.data().len()),
            options: p
                .options()
                .map(|o| (o.bytes().as_ptr() as usize, o.bytes().len(), o.byte_order())),
            meta: *p.meta(),
        }
    }

    /// Packet `seq`'s slot in the input's current window; `None` when it was lent from
    /// elsewhere ([`outside_window`]).
    #[inline]
    fn slot(&self, input: &tracekit_io::Input, seq: u64) -> Option<Slot> {
        let start = input.window_offset(self.data.0, self.data.1)?;
        let (opt_start, opt_len) = match self.options {
            Some((addr, len, order)) => (
                input.window_offset(addr, len).unwrap_or(0) as u32,
                options_field(len, order),
            ),
            None => (0, 0),
        };
        Some(Slot {
            seq,
            start: start as u32,
            len: self.data.1 as u32,
            opt_start,
            opt_len,
            meta: self.meta,
        })
    }
}

/// A source that offers its buffers must lend every packet from them; one that does not
/// is refused at packet `seq` rather than losing the packet.
#[cold]
fn outside_window(seq: u64) -> Error {
    Error::unsupported(
        "this source lent a packet from outside the buffer it shares with the workers (read it with one thread)",
    )
    .with_packet(seq + 1)
}

impl Slot {
    /// The packet in `block`.
    #[inline]
    fn packet<'a>(&self, block: &'a [u8]) -> Packet<'a> {
        let (start, len) = (self.start as usize, self.len as usize);
        let packet = Packet::new(&block[start..start + len], self.meta);
        let opt_len = (self.opt_len & !BIG_ENDIAN) as usize;
        if opt_len == 0 {
            return packet;
        }
        let order = if self.opt_len & BIG_ENDIAN != 0 {
            ByteOrder::Big
        } else {
            ByteOrder::Little
        };
        let at = self.opt_start as usize;
        packet.with_options(Some(PacketOptions::new(&block[at..at + opt_len], order)))
    }
}

/// Ticks in a row at one point of the stream: the first, and how many (each next one's
/// index one more and its time `step` later). A gap in the time stamps is one entry, not
/// one per empty interval, so a batch's lists stay as long as its packets.
#[derive(Clone, Copy)]
struct TickRun {
    first: Tick,
    count: u64,
    step: u64,
}

impl TickRun {
    fn ticks(&self) -> impl Iterator<Item = Tick> + '_ {
        (0..self.count).map(|j| Tick {
            index: self.first.index + j,
            packets: self.first.packets,
            time: self.first.time.map(|t| t + j * self.step),
        })
    }
}

/// A worker's share of one buffer: the buffer, its packets in it, and the ticks that
/// come before the packet at each index.
struct Batch {
    block: Arc<Vec<u8>>,
    slots: Vec<Slot>,
    ticks: Vec<(usize, TickRun)>,
    /// Notes on some of the slots, by index.
    notes: Vec<(usize, Note)>,
    /// Packets before this number have all been dealt.
    end_seq: u64,
}

/// A worker's lists, refilled by the reader and recycled.
#[derive(Default)]
struct Lists {
    slots: Vec<Slot>,
    ticks: Vec<(usize, TickRun)>,
    /// Notes on some of the slots, by index (none on a turn's own list).
    notes: Vec<(usize, Note)>,
    /// A turn's list of every packet: the stream's clock before its first packet
    /// (kept with the dealt distributions only).
    clock: Option<Timestamp>,
}

impl Lists {
    /// Emptied for reuse.
    fn clear(&mut self) {
        self.slots.clear();
        self.ticks.clear();
        self.notes.clear();
    }

    /// Slot `slot` for the worker of these lists, with `note` unless it is plain.
    #[inline]
    fn push(&mut self, slot: Slot, note: Note) {
        if note.levels != Levels::ALL || note.clock.is_some() {
            self.notes.push((self.slots.len(), note));
        }
        self.slots.push(slot);
    }

    /// Ticks that come before the next packet of worker `w`'s turn: in its own list, at
    /// that packet; every other worker owes them.
    fn tick(&mut self, run: TickRun, owed: &mut [Vec<TickRun>], w: usize) {
        self.ticks.push((self.slots.len(), run));
        for (v, o) in owed.iter_mut().enumerate() {
            if v != w {
                o.push(run);
            }
        }
    }
}

/// A worker's items for one batch (with their order keys), and its progress.
struct Done<T> {
    worker: usize,
    items: Vec<(u64, T)>,
    /// Every item this worker will still emit has an order key at least this.
    upto: u64,
}

/// What the reader, the workers and the combiner share.
struct Shared {
    /// Asked to stop by the user.
    stop: Arc<AtomicBool>,
    /// Stop reading (a worker failed).
    halt: AtomicBool,
    /// Packets from this number on are not processed (a worker failed there).
    limit: AtomicU64,
    /// The first worker error and the packet it came at.
    worker_error: Mutex<Option<(u64, Error)>>,
}

impl Shared {
    fn new(stop: Arc<AtomicBool>) -> Shared {
        Shared {
            stop,
            halt: AtomicBool::new(false),
            limit: AtomicU64::new(u64::MAX),
            worker_error: Mutex::new(None),
        }
    }
}

/// The reader: reads, chooses workers, runs worker 0 on its packets, deals the others'
/// per buffer; returns its figures, the read error, if any, and worker 0.
fn read_and_deal<W: Worker>(
    source: &mut Source,
    deal: &Deal,
    mut own: Option<Running<'_, W>>,
    tick: Option<TickEvery>,
    batch_tx: &[SyncSender<Batch>],
    spare_rx: &Receiver<Lists>,
    shared: &Shared,
) -> (RunStats, Option<Error>, Option<(W, WorkerStats)>) {
    let n = deal.n;
    // One worker is run by the reader on packets lent in place: nothing is dealt, and
    // windows kept for sharing would only take fresh, cache-cold buffers.
    let sharing = n > 1 && source.input_mut().is_some_and(|i| i.share_windows());
    let mut dealer = Dealer {
        n,
        pending: (0..n).map(|_| Lists::default()).collect(),
        batch_tx,
        spare_rx,
        blocked: Duration::ZERO,
        closed: n == 1,
        dealt: 0,
    };
    let mut own_sent = 0;
    let mut stats = RunStats {
        copied: n > 1 && !sharing,
        ..RunStats::default()
    };
    let mut generation = generation_of(source);
    let mut copy = CopyBlocks::default();
    let mut seq = 0u64;
    // The stream's clock (see `Emit::clock`).
    let mut clock = None;
    let mut ticker = Ticker {
        every: tick,
        ticks: 0,
        interval: None,
    };
    let mut error = None;
    loop {
        if shared.stop.load(Ordering::Relaxed)
            || shared.halt.load(Ordering::Relaxed)
            || (dealer.closed && own.is_none())
        {
            break;
        }
        // What the reader needs of the packet, taken while it is lent; positions are
        // found after (the packet in hand, not the record stored behind it, which would be
        // read back in pieces). The ticks before the packet go first: into the lists of
        // the batches being filled (after the packets already there, so a tick that ends
        // up last in a batch still comes before this packet) and to worker 0.
        // `None`: the packet was worker 0's, processed in place.
        // Borrowed where `next_packet` put it, not moved (see `crate::copy_while`).
        let next = source.next_packet();
        let dealt = match next {
            Ok(Some(ref p)) => {
                let targets = if deal.levels {
                    deal.level_targets(p, seq)
                } else {
                    Targets::one(deal.choose(p, seq))
                };
                let clock = clock_note(&mut clock, p.ts());
                ticker.before(seq, p.ts(), |run| {
                    dealer.tick(run);
                    if let Some(own) = own.as_mut() {
                        own.ticks(&run, shared.limit.load(Ordering::Relaxed), shared);
                    }
                });
                // Worker 0's share is processed here; the others' are dealt.
                let mut others = Targets::NONE;
                for (w, levels) in targets.get() {
                    if w == 0
                        && let Some(own) = own.as_mut()
                    {
                        let note = Note { levels, clock };
                        own.packet(p, seq, note, shared.limit.load(Ordering::Relaxed), shared);
                    } else {
                        others.add(w, levels.0);
                    }
                }
                if others.len == 0 {
                    None
                } else {
                    if !sharing {
                        let slot = copy.add(p, &mut dealer, seq);
                        for (w, levels) in others.get() {
                            dealer.pending[w].push(slot, Note { levels, clock });
                        }
                    }
                    Some((others, clock, Lent::of(p)))
                }
            }
            Ok(None) => break,
            Err(e) => {
                error = Some(e);
                break;
            }
        };
        if sharing {
            // The packet's positions index the current buffer: what came before is in
            // the buffer the window left, and goes out now.
            let g = generation_of(source);
            if g != generation {
                let block = source.input_mut().and_then(|i| i.take_retired(generation));
                if let Some(block) = block {
                    dealer.deal(block, seq);
                }
                generation = g;
            }
        }
        if sharing && let Some((others, clock, lent)) = dealt {
            match source.input_mut().and_then(|i| lent.slot(i, seq)) {
                Some(slot) => {
                    for (w, levels) in others.get() {
                        dealer.pending[w].push(slot, Note { levels, clock });
                    }
                }
                None => {
                    error = Some(outside_window(seq));
                    break;
                }
            }
        }
        seq += 1;
        // With each buffer dealt (or every so many items), worker 0's items and progress
        // go to the combiner too.
        if let Some(own) = own.as_mut()
            && (dealer.dealt != own_sent || own.items.len() >= OWN_ITEMS)
        {
            let _ = own.send(seq);
            own_sent = dealer.dealt;
        }
    }
    // The last buffer: the one the window left while looking for more, or the current
    // one.
    let last = if n == 1 {
        None
    } else if sharing {
        source.input_mut().and_then(|i| {
            if i.generation() != generation {
                i.take_retired(generation)
            } else {
                i.share_current()
            }
        })
    } else {
        Some(copy.take())
    };
    if let Some(block) = last {
        dealer.deal(block, seq);
    }
    stats.packets = seq;
    stats.reader_blocked = dealer.blocked;
    (stats, error, own.map(|o| o.finish(seq, shared)))
}

/// Of a read error and a worker's error (with the packet it came at), the earlier: the
/// one that stopped the run.
fn earlier_error(read: Option<Error>, worker: Option<(u64, Error)>) -> Option<Error> {
    match (read, worker) {
        (Some(r), Some((seq, w))) => Some(if r.packet().is_some_and(|p| p <= seq + 1) {
            r
        } else {
            w
        }),
        (Some(r), None) => Some(r),
        (None, Some((_, w))) => Some(w),
        (None, None) => None,
    }
}

/// [`Distribution::Blocks`]: the source and what the workers taking turns at it share.
/// A turn reads packets up to the end of the input's current buffer; the packet read
/// past it is in the next buffer, and is carried over to the next turn.
struct Turns<'s> {
    source: &'s mut Source,
    /// The buffer generation that the carried packets are in.
    generation: u64,
    /// Packets read so far.
    seq: u64,
    /// Packets read past the end of the last turn's buffer, for the next turn.
    carried: Vec<Slot>,
    /// The last turn ended before its buffer ran out: the next one fills the fresh
    /// buffer first.
    refill: bool,
    ticker: Ticker,
    /// Per worker: ticks found in other workers' turns, which come before its next
    /// packet.
    owed: Vec<Vec<TickRun>>,
    /// The input ended (or failed, or the run stops).
    ended: bool,
    error: Option<Error>,
    /// The number of the next turn: turns are taken in the order their numbers were
    /// claimed ([`Ahead`]).
    ticket: u64,
    /// Whether turns are dealt: then each turn's list starts with the stream's clock
    /// ([`Lists::clock`]), kept in `clock` (the latest known time stamp of the packets
    /// of the turns taken).
    clocked: bool,
    clock: Option<Timestamp>,
}

/// A turn over an uncompressed file starts with the file's next bytes, which the worker
/// read ahead before its turn (`pread`, outside the lock): the copy out of the page cache,
/// most of reading a file, is done by all workers at once. Turn `k` (from 0, which reads
/// the window the source was opened with) takes chunk `k - 1`, the [`BLOCK_SIZE`]
/// bytes from `first + (k - 1) * BLOCK_SIZE`: each turn ends just before its window runs
/// out, so the next chunk starts where the window's next read would.
///
/// [`BLOCK_SIZE`]: tracekit_io::BLOCK_SIZE
struct Ahead {
    file: std::fs::File,
    first: u64,
    size: u64,
}

/// Bytes of the file read ahead for a turn: `buf[AHEAD_RESERVE..][..len]`, from `offset`.
struct Chunk {
    buf: Vec<u8>,
    len: usize,
    offset: u64,
}

/// Room in front of a chunk for the unread tail of the window before it (a turn leaves
/// fewer than [`TURN_TAIL`] bytes).
const AHEAD_RESERVE: usize = TURN_TAIL;

impl Ahead {
    /// Reads the chunk of turn `k` into `buf` (or a new buffer); `None` for turn 0, past
    /// the file's end (as it was at the start) or on a read error (the window then reads
    /// for itself, and meets the error there).
    fn read(&self, k: u64, buf: Option<Vec<u8>>) -> (Option<Chunk>, Option<Vec<u8>>) {
        use std::os::unix::fs::FileExt;
        let len = tracekit_io::BLOCK_SIZE;
        let offset = self.first + k.saturating_sub(1) * len as u64;
        if k == 0 || offset >= self.size {
            return (None, buf);
        }
        let mut buf = buf.unwrap_or_default();
        if buf.len() < AHEAD_RESERVE + len {
            buf.resize(AHEAD_RESERVE + len, 0);
        }
        let mut got = 0;
        while got < len {
            match self.file.read_at(
                &mut buf[AHEAD_RESERVE + got..AHEAD_RESERVE + len],
                offset + got as u64,
            ) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if got == 0 {
            return (None, Some(buf));
        }
        (
            Some(Chunk {
                buf,
                len: got,
                offset,
            }),
            None,
        )
    }
}

/// A turn over an uncompressed input ends once fewer unread bytes than this are left
/// in the buffer (they are copied to the front of the next one). A turn's walk measures
/// from the end of a packet's bytes, so it may end a block's trailer later than that.
const TURN_TAIL: usize = 16 << 10;

/// A turn's walk with the reader's own loop: where the window's buffer is, and what
/// each packet is placed into.
struct Walk<'a> {
    base: usize,
    buffer_len: usize,
    window_end: usize,
    /// The file goes on past the window: a short tail ends the turn.
    more: bool,
    /// The worker whose turn it is.
    w: usize,
    seq: &'a mut u64,
    ticker: &'a mut Ticker,
    owed: &'a mut Vec<Vec<TickRun>>,
    lists: &'a mut Lists,
}

impl Walk<'_> {
    /// Where `len` bytes at `addr` start in the window's buffer, if they lie in it.
    #[inline(always)]
    fn within(&self, addr: usize, len: usize) -> Option<usize> {
        let at = addr.wrapping_sub(self.base);
        (at <= self.buffer_len && len <= self.buffer_len - at).then_some(at)
    }

    /// Places packet `p` of the turn (its ticks, then its slot).
    #[inline(always)]
    fn packet(&mut self, p: &Packet<'_>) -> Result<(), TurnStop> {
        let Some(start) = self.within(p.data().as_ptr() as usize, p.data().len()) else {
            return Err(TurnStop::Outside);
        };
        let (opt_start, opt_len) = match p.options() {
            Some(o) => match self.within(o.bytes().as_ptr() as usize, o.bytes().len()) {
                Some(at) => (at as u32, options_field(o.bytes().len(), o.byte_order())),
                None => return Err(TurnStop::Outside),
            },
            None => (0, 0),
        };
        let n = *self.seq;
        *self.seq += 1;
        let (lists, owed, w) = (&mut *self.lists, &mut *self.owed, self.w);
        self.ticker
            .before(n, p.ts(), |run| lists.tick(run, owed, w));
        lists.slots.push(Slot {
            seq: n,
            start: start as u32,
            len: p.data().len() as u32,
            opt_start,
            opt_len,
            meta: *p.meta(),
        });
        let read_to = start + p.data().len();
        if self.more && self.window_end.saturating_sub(read_to) < TURN_TAIL {
            return Err(TurnStop::Tail);
        }
        Ok(())
    }
}

/// Why a turn's walk with the reader's own loop stopped before the input's end.
enum TurnStop {
    /// The packet just read lies outside the window's buffer (the window moved on).
    Outside,
    /// The window's unread tail got short.
    Tail,
    /// The input failed.
    Source(Error),
}

impl From<Error> for TurnStop {
    fn from(e: Error) -> TurnStop {
        TurnStop::Source(e)
    }
}

/// What a worker got at its turn.
struct Turn {
    /// The buffer its packets are in (none when it got no packets).
    block: Option<Arc<Vec<u8>>>,
    /// Every packet before this one was read when the turn ended.
    end_seq: u64,
    /// The input is done: after this turn's packets and ticks, the worker finishes.
    last: bool,
    /// The turn started with bytes this worker read ahead.
    fed: bool,
}

impl Turns<'_> {
    /// Worker `w`'s turn: its owed ticks, then the packets of one buffer, into `lists`
    /// (emptied first).
    fn take(
        &mut self,
        w: usize,
        lists: &mut Lists,
        spare: &mut Option<Vec<u8>>,
        chunk: Option<Chunk>,
        shared: &Shared,
    ) -> Turn {
        lists.clear();
        lists.clock = self.clock;
        lists
            .ticks
            .extend(self.owed[w].drain(..).map(|run| (0, run)));
        if self.ended {
            return Turn {
                block: None,
                end_seq: self.seq,
                last: true,
                fed: false,
            };
        }
        std::mem::swap(&mut lists.slots, &mut self.carried);
        self.carried.clear();
        if shared.stop.load(Ordering::Relaxed) || shared.halt.load(Ordering::Relaxed) {
            return self.end(lists, false);
        }
        // An uncompressed file is read by the worker whose turn it is: the turn ends just
        // before the buffer runs out (unless the file does), so that the next worker
        // reads the next buffer, into its own core's cache, rather than this one's last
        // packet.
        let plain = self
            .source
            .input_mut()
            .is_some_and(|i| i.compression() == tracekit_io::Compression::None);
        let mut fed = false;
        if std::mem::take(&mut self.refill)
            && let Some(input) = self.source.input_mut()
        {
            // The last turn left the unread tail at the front of a fresh buffer (nothing
            // carried). It moves to this worker's own buffer, if it has one (the last it
            // processed): a buffer the other worker last had would have every line of it
            // fetched from that worker's cache, which doubled the cost of reading it.
            // Then it is filled behind the tail; a read error comes again, with its
            // packet, from the reader's own fill.
            // With the next bytes of the file read ahead by this worker (outside the
            // lock, while the others read and process), they are fed to the window
            // instead.
            fed = match chunk {
                Some(c) => match input.feed(c.buf, AHEAD_RESERVE, c.len, c.offset) {
                    Ok(()) => true,
                    Err(buf) => {
                        *spare = Some(buf);
                        false
                    }
                },
                None => false,
            };
            if !fed {
                if let Some(buf) = spare.take()
                    && let Err(buf) = input.swap_window(buf)
                {
                    *spare = Some(buf);
                }
                let _ = input.fill(tracekit_io::BLOCK_SIZE);
            }
        } else if let Some(c) = chunk {
            // Not usable: the window was not left where the chunk starts.
            *spare = Some(c.buf);
        }
        // The packets are read with the reader's own loop (`try_for_each`). Each is
        // placed by its address in the window's buffer; the loop stops at a packet
        // outside that buffer (the window moved on), which `place` then places with the
        // input at hand, and when the window's unread tail may be short, which `tail`
        // checks exactly.
        loop {
            let Some(input) = self.source.input_mut() else {
                self.error = Some(outside_window(self.seq));
                return self.end(lists, fed);
            };
            let (base, buffer_len, window_end) = input.window_span();
            // Whether the file goes on past the window: only then does a short tail end
            // the turn.
            let more = plain
                && input.size_hint().is_some_and(|size| {
                    input.position() + ((window_end - input.window_pos()) as u64) < size
                });
            let Turns {
                source,
                seq,
                ticker,
                owed,
                ..
            } = self;
            let mut walk = Walk {
                base,
                buffer_len,
                window_end,
                more,
                w,
                seq,
                ticker,
                owed,
                lists,
            };
            // Inlined into the reader's loop (as the wrappers on the way are): the
            // packet's metadata then goes from the registers the reader built it in to
            // the slot (called, the closure loaded it from memory just written in
            // narrower pieces, and waited: 40 % of its time).
            let run = source.try_for_each(
                #[inline(always)]
                |p| walk.packet(p),
            );
            match run {
                Ok(_) => return self.end(lists, fed),
                Err(TurnStop::Source(e)) => {
                    self.error = Some(e);
                    return self.end(lists, fed);
                }
                Err(TurnStop::Outside) => {
                    let Some(lent) = self.source.current_packet().map(|p| Lent::of(&p)) else {
                        self.error = Some(outside_window(self.seq));
                        return self.end(lists, fed);
                    };
                    if let Some(turn) = self.place(w, lists, lent, plain, fed) {
                        return turn;
                    }
                }
                Err(TurnStop::Tail) => {
                    if let Some(turn) = self.tail(lists, plain, fed) {
                        return turn;
                    }
                }
            }
        }
    }

    /// A packet read by the turn of worker `w`, placed by the input at hand: into this
    /// turn's list, or, when the window moved to another buffer, carried to the next
    /// turn, which this one then ends. `Some` when the turn ends.
    fn place(
        &mut self,
        w: usize,
        lists: &mut Lists,
        lent: Lent,
        plain: bool,
        fed: bool,
    ) -> Option<Turn> {
        let seq = self.seq;
        self.seq += 1;
        // Before this packet: where its ticks go depends on whose turn it is.
        let mut found = None;
        self.ticker
            .before(seq, lent.meta.ts, |run| found = Some(run));
        let Some(input) = self.source.input_mut() else {
            self.error = Some(outside_window(seq));
            return Some(self.end(lists, fed));
        };
        let Some(slot) = lent.slot(input, seq) else {
            self.error = Some(outside_window(seq));
            return Some(self.end(lists, fed));
        };
        if input.generation() != self.generation {
            // The buffer is done: its packets are this turn's; this one and its
            // ticks are the next turn's (every worker owes them).
            let block = input.take_retired(self.generation);
            self.generation = input.generation();
            if let Some(run) = found {
                self.owed.iter_mut().for_each(|o| o.push(run));
            }
            self.carried.push(slot);
            return Some(self.checked(block, lists, seq, false, fed));
        }
        if let Some(run) = found {
            lists.tick(run, &mut self.owed, w);
        }
        lists.slots.push(slot);
        self.tail(lists, plain, fed)
    }

    /// Ends the turn when the window's unread tail is short and the file goes on past
    /// it: the tail goes to the front of a fresh buffer, and this buffer is this
    /// worker's to keep once processed.
    fn tail(&mut self, lists: &mut Lists, plain: bool, fed: bool) -> Option<Turn> {
        let input = self.source.input_mut()?;
        if plain
            && input.available().len() < TURN_TAIL
            && input
                .size_hint()
                .is_some_and(|size| input.position() + (input.available().len() as u64) < size)
        {
            let block = input.hand_over_current();
            self.generation = input.generation();
            self.refill = true;
            return Some(self.checked(block, lists, self.seq, false, fed));
        }
        None
    }

    /// The input ended: the turn gets the last buffer with what is read of it.
    fn end(&mut self, lists: &mut Lists, fed: bool) -> Turn {
        self.ended = true;
        let input = self.source.input_mut();
        let block = input.and_then(|i| {
            if i.generation() != self.generation {
                i.take_retired(self.generation)
            } else {
                i.share_current()
            }
        });
        self.checked(block, lists, self.seq, true, fed)
    }

    /// A turn with `block`, unless packets were read into a buffer the input did not
    /// hand over: then they are not lost quietly but the run stops at the first of them.
    fn checked(
        &mut self,
        block: Option<Arc<Vec<u8>>>,
        lists: &mut Lists,
        end_seq: u64,
        last: bool,
        fed: bool,
    ) -> Turn {
        // The clock after this turn's packets, for the next turn's (packets carried to
        // it are in its list, not this one's).
        if self.clocked {
            for slot in &lists.slots {
                clock_note(&mut self.clock, slot.meta.ts);
            }
        }
        if block.is_none()
            && let Some(first) = lists.slots.first()
        {
            let seq = first.seq;
            lists.slots.clear();
            lists.ticks.retain(|(at, _)| *at == 0);
            self.error = Some(
                Error::unsupported("the input did not hand over the buffer of these packets")
                    .with_packet(seq + 1),
            );
            self.ended = true;
            return Turn {
                block: None,
                end_seq: seq,
                last: true,
                fed,
            };
        }
        Turn {
            block,
            end_seq,
            last,
            fed,
        }
    }
}

/// Where workers of [`Distribution::Blocks`] take their turns, in the order claimed.
#[derive(Clone, Copy)]
struct TurnOrder<'a, 's> {
    turns: &'a Mutex<Turns<'s>>,
    next_turn: &'a std::sync::Condvar,
    claims: &'a AtomicU64,
    ahead: Option<&'a Ahead>,
}

impl TurnOrder<'_, '_> {
    /// Turn `k`: its bytes read ahead (outside the lock), then, once every earlier turn
    /// is taken, the turn itself into `lists` as worker `w`'s ([`Turns::take`]). `None`
    /// when another worker panicked holding the lock.
    fn take(
        &self,
        k: u64,
        w: usize,
        lists: &mut Lists,
        spare: &mut Option<Vec<u8>>,
        stats: &mut WorkerStats,
        shared: &Shared,
    ) -> Option<Turn> {
        let chunk = match self.ahead {
            Some(ahead) => {
                let (chunk, back) = ahead.read(k, spare.take());
                *spare = back;
                chunk
            }
            None => None,
        };
        let waited = Instant::now();
        let mut t = self.turns.lock().ok()?;
        while t.ticket != k {
            t = self.next_turn.wait(t).ok()?;
        }
        stats.idle += waited.elapsed();
        let turn = t.take(w, lists, spare, chunk, shared);
        stats.read_ahead += u64::from(turn.fed);
        t.ticket += 1;
        drop(t);
        self.next_turn.notify_all();
        Some(turn)
    }
}

/// A worker of [`Distribution::Blocks`]: takes turns at the source and processes each
/// turn's packets; sends its items and progress at the start of each turn (by then it
/// knows where its next packet or tick is).
fn take_turns<W: Worker>(
    mut running: Running<'_, W>,
    at: TurnOrder<'_, '_>,
    shared: &Shared,
) -> (W, WorkerStats) {
    let mut lists = Lists::default();
    // The last buffer this worker processed, when nothing else holds it.
    let mut spare = None;
    let mut end_seq;
    loop {
        // This worker's next turn, and the file's bytes for it. No user code runs from
        // here to the end of the turn, so every turn number claimed is taken.
        let k = at.claims.fetch_add(1, Ordering::Relaxed);
        let w = running.index;
        let Some(turn) = at.take(k, w, &mut lists, &mut spare, &mut running.stats, shared) else {
            return running.finish(0, shared);
        };
        end_seq = turn.end_seq;
        // Everything this worker emits from now on is at or after this point.
        let from = (lists.ticks.first().map(|(_, run)| run.first.packets))
            .into_iter()
            .chain(lists.slots.first().map(|s| s.seq))
            .min()
            .unwrap_or(end_seq);
        running.send(from);
        let limit = shared.limit.load(Ordering::Relaxed);
        let mut ticks = lists.ticks.iter().peekable();
        if let Some(block) = &turn.block {
            for (i, slot) in lists.slots.iter().enumerate() {
                while let Some((_, run)) = ticks.next_if(|(at, _)| *at == i) {
                    running.ticks(run, limit, shared);
                }
                if !running.packet(&slot.packet(block), slot.seq, Note::PLAIN, limit, shared) {
                    break;
                }
            }
        }
        for (_, run) in ticks {
            running.ticks(run, limit, shared);
        }
        if let Some(block) = turn.block {
            spare = Arc::try_unwrap(block).ok();
        }
        if turn.last {
            break;
        }
    }
    running.finish(end_seq, shared)
}

/// Dealt turns a worker may claim ahead of the slowest worker's next one, per worker:
/// each holds a buffer of the input.
const DEALT_AHEAD: usize = QUEUE;

/// Turns taken and dealt ([`take_dealt_turns`]), waiting for their workers.
struct Board {
    deal: Deal,
    state: Mutex<BoardState>,
    /// A turn was dealt, or a worker took its share of one (room to claim another).
    changed: std::sync::Condvar,
}

struct BoardState {
    /// Turns `base..` in turn order: dealt, or (`None`) claimed and not dealt yet.
    dealt: std::collections::VecDeque<Option<DealtTurn>>,
    base: u64,
    /// The last turn was dealt: no more are claimed.
    ended: bool,
    /// Emptied lists, to deal into again.
    spare: Vec<Lists>,
    /// Buffers of processed turns that nothing else holds, for the turns to come to be
    /// read into (a fresh buffer costs its pages' first touches).
    buffers: Vec<Vec<u8>>,
}

/// One turn's packets and ticks, dealt: each worker's share, which it takes.
struct DealtTurn {
    block: Option<Arc<Vec<u8>>>,
    lists: Vec<Option<Lists>>,
    /// Shares taken.
    taken: usize,
    /// Every packet and tick of the turn is at or after this packet number.
    from: u64,
    end_seq: u64,
    last: bool,
}

/// What a worker of dealt turns does next.
enum Step {
    /// Its share of a turn: the lists, the turn's buffer, `from`, `end_seq`, `last`.
    Share(Lists, Option<Arc<Vec<u8>>>, u64, u64, bool),
    /// Take turn `k` (claimed), dealing into these lists.
    Take(u64, Vec<Lists>),
}

/// A worker of the dealt distributions ([`Distribution::Flow`], `FlowLevels`,
/// `RoundRobin`, `By`)
/// over an input that shares its buffers: there is no reader thread. The workers take
/// turns at the source as with [`Distribution::Blocks`] ([`take_turns`]), so reading,
/// finding each packet's worker and the copy out of the page cache are spread over them
/// all; the worker whose turn it was deals the turn's packets (positions in the turn's
/// buffer) and ticks to every worker, and each worker processes its share of every turn,
/// in turn order: the packets of a flow reach one worker, in file order, as with a
/// reader thread. A worker claims a turn when it has no share waiting, at most
/// [`DEALT_AHEAD`] turns per worker ahead of the slowest one.
fn take_dealt_turns<W: Worker>(
    mut running: Running<'_, W>,
    at: TurnOrder<'_, '_>,
    board: &Board,
    shared: &Shared,
) -> (W, WorkerStats) {
    let w = running.index;
    let n = board.deal.n;
    let mut all = Lists::default();
    let mut spare = None;
    // This worker's next turn, and its emptied lists to give back.
    let mut next = 0u64;
    let mut emptied: Option<Lists> = None;
    let mut freed: Option<Vec<u8>> = None;
    let end_seq = loop {
        let waited = Instant::now();
        let step = {
            let Ok(mut b) = board.state.lock() else {
                return running.finish(0, shared);
            };
            if let Some(lists) = emptied.take() {
                b.spare.push(lists);
            }
            // Kept up to as many as can be in flight (every turn on the board, and
            // each worker's own): one dropped here would be allocated again, its pages
            // touched afresh, when the turns in flight next rise to that many.
            if let Some(buf) = freed.take()
                && b.buffers.len() < (DEALT_AHEAD + 1) * n
            {
                b.buffers.push(buf);
            }
            loop {
                let i = (next - b.base) as usize;
                if let Some(Some(turn)) = b.dealt.get_mut(i) {
                    let lists = turn.lists[w].take().unwrap_or_default();
                    turn.taken += 1;
                    let step = Step::Share(
                        lists,
                        turn.block.clone(),
                        turn.from,
                        turn.end_seq,
                        turn.last,
                    );
                    while b
                        .dealt
                        .front()
                        .is_some_and(|t| t.as_ref().is_some_and(|t| t.taken == n))
                    {
                        b.dealt.pop_front();
                        b.base += 1;
                    }
                    board.changed.notify_all();
                    break step;
                }
                if !b.ended && b.dealt.len() < DEALT_AHEAD * n {
                    b.dealt.push_back(None);
                    let k = at.claims.fetch_add(1, Ordering::Relaxed);
                    let outs = (0..n).map(|_| b.spare.pop().unwrap_or_default()).collect();
                    if spare.is_none() {
                        spare = b.buffers.pop();
                    }
                    break Step::Take(k, outs);
                }
                b = match board.changed.wait(b) {
                    Ok(b) => b,
                    Err(_) => return running.finish(0, shared),
                };
            }
        };
        running.stats.idle += waited.elapsed();
        match step {
            Step::Share(lists, block, from, end_seq, last) => {
                next += 1;
                running.send(from);
                let limit = shared.limit.load(Ordering::Relaxed);
                let mut ticks = lists.ticks.iter().peekable();
                let mut notes = lists.notes.iter().peekable();
                if let Some(block) = &block {
                    for (i, slot) in lists.slots.iter().enumerate() {
                        while let Some((_, run)) = ticks.next_if(|(at, _)| *at == i) {
                            running.ticks(run, limit, shared);
                        }
                        let note = notes
                            .next_if(|(at, _)| *at == i)
                            .map_or(Note::PLAIN, |n| n.1);
                        if !running.packet(&slot.packet(block), slot.seq, note, limit, shared) {
                            break;
                        }
                    }
                }
                for (_, run) in ticks {
                    running.ticks(run, limit, shared);
                }
                // The last holder of the turn's buffer keeps it for a turn to come.
                if let Some(block) = block
                    && let Ok(buf) = Arc::try_unwrap(block)
                {
                    match spare {
                        None => spare = Some(buf),
                        Some(_) => freed = Some(buf),
                    }
                }
                emptied = Some(lists);
                if last {
                    break end_seq;
                }
            }
            Step::Take(k, mut outs) => {
                // One list of carried ticks (see `run_turns`): index 0.
                let Some(turn) = at.take(k, 0, &mut all, &mut spare, &mut running.stats, shared)
                else {
                    return running.finish(0, shared);
                };
                let from = (all.ticks.first().map(|(_, run)| run.first.packets))
                    .into_iter()
                    .chain(all.slots.first().map(|s| s.seq))
                    .min()
                    .unwrap_or(turn.end_seq);
                if let Some(block) = &turn.block {
                    deal_turn(&board.deal, block, &all, &mut outs);
                } else {
                    for o in &mut outs {
                        o.clear();
                        o.ticks.extend(all.ticks.iter().map(|&(_, run)| (0, run)));
                    }
                }
                let dealt = DealtTurn {
                    block: turn.block,
                    lists: outs.into_iter().map(Some).collect(),
                    taken: 0,
                    from,
                    end_seq: turn.end_seq,
                    last: turn.last,
                };
                let Ok(mut b) = board.state.lock() else {
                    return running.finish(0, shared);
                };
                let i = (k - b.base) as usize;
                b.ended |= dealt.last;
                b.dealt[i] = Some(dealt);
                drop(b);
                board.changed.notify_all();
            }
        }
    };
    running.finish(end_seq, shared)
}

/// A turn's packets and ticks (`all`, in `block`) into each worker's lists: every
/// packet to the worker [`Deal::choose`] picks (to those [`Deal::level_targets`]
/// picks, with their notes), every tick to all, before the packets that follow it.
fn deal_turn(deal: &Deal, block: &[u8], all: &Lists, outs: &mut [Lists]) {
    // Room for an even share at once: a fresh list (the first turns, or more turns in
    // flight than before) then grows once, if its share is larger, rather than doubling
    // its way up from nothing.
    let share = all.slots.len() / outs.len().max(1) + 1;
    for o in outs.iter_mut() {
        o.clear();
        o.slots.reserve(share);
    }
    let mut ticks = all.ticks.iter().peekable();
    let mut clock = all.clock;
    for (i, slot) in all.slots.iter().enumerate() {
        while let Some(&(_, run)) = ticks.next_if(|(at, _)| *at == i) {
            for o in outs.iter_mut() {
                o.ticks.push((o.slots.len(), run));
            }
        }
        let clock = clock_note(&mut clock, slot.meta.ts);
        let p = slot.packet(block);
        if deal.levels {
            for (w, levels) in deal.level_targets(&p, slot.seq).get() {
                outs[w].push(*slot, Note { levels, clock });
            }
        } else {
            let w = deal.choose(&p, slot.seq);
            outs[w].push(
                *slot,
                Note {
                    levels: Levels::ALL,
                    clock,
                },
            );
        }
    }
    for &(_, run) in ticks {
        for o in outs.iter_mut() {
            o.ticks.push((o.slots.len(), run));
        }
    }
}

/// With [`TickEvery::TraceTime`], the longest run of empty intervals that gets a tick
/// each: a longer gap in the time stamps gets one tick, at the end of the gap.
pub const MAX_EMPTY_TICKS: u64 = 1_000_000;

/// Where ticks go: every so many packets, or at interval boundaries of trace time.
struct Ticker {
    every: Option<TickEvery>,
    ticks: u64,
    interval: Option<u64>,
}

impl Ticker {
    /// The ticks that come before packet `seq` (time `ts`), into every worker's lists.
    #[inline]
    fn before(&mut self, seq: u64, ts: Timestamp, mut dealer: impl FnMut(TickRun)) {
        match self.every {
            Some(TickEvery::Packets(every)) if seq > 0 && seq.is_multiple_of(every) => {
                self.run(seq, None, 1, 0, &mut dealer);
            }
            Some(TickEvery::TraceTime(len)) => {
                // Converted here only: the reader calls this for every packet.
                let k = ts.as_unix_nanos() / len;
                match self.interval {
                    None => self.interval = Some(k),
                    Some(current) if k > current => {
                        // One tick per boundary crossed; past MAX_EMPTY_TICKS empty
                        // intervals, one tick only, at the new interval (its time says
                        // how many were skipped).
                        let first = if k - current - 1 > MAX_EMPTY_TICKS {
                            k
                        } else {
                            current + 1
                        };
                        self.run(seq, Some(first * len), k - first + 1, len, &mut dealer);
                        self.interval = Some(k);
                    }
                    Some(_) => {}
                }
            }
            _ => {}
        }
    }

    /// `count` ticks before packet `seq`, the first at `time`, each next `step` later.
    fn run(
        &mut self,
        seq: u64,
        time: Option<u64>,
        count: u64,
        step: u64,
        dealer: &mut impl FnMut(TickRun),
    ) {
        dealer(TickRun {
            first: Tick {
                index: self.ticks,
                packets: seq,
                time,
            },
            count,
            step,
        });
        self.ticks += count;
    }
}

fn generation_of(source: &mut Source) -> u64 {
    source.input_mut().map_or(0, |i| i.generation())
}

/// The reader's per-worker lists and their sending.
struct Dealer<'a> {
    n: usize,
    pending: Vec<Lists>,
    batch_tx: &'a [SyncSender<Batch>],
    spare_rx: &'a Receiver<Lists>,
    blocked: Duration,
    /// Every worker thread is gone (or there is none).
    closed: bool,
    /// Buffers dealt.
    dealt: u64,
}

impl Dealer<'_> {
    /// Ticks into the lists of workers 1.. (worker 0 runs them as it reads).
    fn tick(&mut self, tick: TickRun) {
        for p in self.pending.iter_mut().skip(1) {
            p.ticks.push((p.slots.len(), tick));
        }
    }

    /// Sends every worker its share of `block` (possibly nothing: the batch still
    /// carries the progress).
    fn deal(&mut self, block: Arc<Vec<u8>>, end_seq: u64) {
        self.dealt += 1;
        if self.n == 1 {
            return;
        }
        let mut sent = 0;
        for w in 1..self.n {
            let fresh = match self.spare_rx.try_recv() {
                Ok(mut lists) => {
                    lists.clear();
                    lists
                }
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => Lists::default(),
            };
            let Lists {
                slots,
                ticks,
                notes,
                ..
            } = std::mem::replace(&mut self.pending[w], fresh);
            let batch = Batch {
                block: block.clone(),
                slots,
                ticks,
                notes,
                end_seq,
            };
            let batch = match self.batch_tx[w - 1].try_send(batch) {
                Ok(()) => {
                    sent += 1;
                    continue;
                }
                Err(std::sync::mpsc::TrySendError::Full(b)) => b,
                Err(std::sync::mpsc::TrySendError::Disconnected(_)) => continue,
            };
            let waited = Instant::now();
            if self.batch_tx[w - 1].send(batch).is_ok() {
                sent += 1;
            }
            self.blocked += waited.elapsed();
        }
        if sent == 0 {
            self.closed = true;
        }
    }
}

/// Copy mode: packets copied into shared blocks.
#[derive(Default)]
struct CopyBlocks {
    block: Vec<u8>,
    /// Blocks handed out, reused when their holders are done.
    lent: Vec<Arc<Vec<u8>>>,
}

impl CopyBlocks {
    /// Copies `p` (and its options) into the block, dealing the block first when full;
    /// returns its record in the block.
    fn add(&mut self, p: &Packet<'_>, dealer: &mut Dealer<'_>, seq: u64) -> Slot {
        let options = p.options().map(|o| (o.bytes(), o.byte_order()));
        let need = p.data().len() + options.map_or(0, |o| o.0.len());
        if self.block.len() + need > self.block.capacity().max(COPY_BLOCK) && !self.block.is_empty()
        {
            let full = self.take();
            dealer.deal(full, seq);
        }
        let start = self.block.len();
        self.block.extend_from_slice(p.data());
        let mut slot = Slot {
            seq,
            start: start as u32,
            len: p.data().len() as u32,
            opt_start: 0,
            opt_len: 0,
            meta: *p.meta(),
        };
        if let Some((bytes, order)) = options {
            slot.opt_start = self.block.len() as u32;
            slot.opt_len = options_field(bytes.len(), order);
            self.block.extend_from_slice(bytes);
        }
        slot
    }

    /// The current block, shared; a reusable one takes its place.
    fn take(&mut self) -> Arc<Vec<u8>> {
        let mut next = Vec::new();
        if let Some(i) = self.lent.iter().position(|b| Arc::strong_count(b) == 1) {
            let b = self.lent.swap_remove(i);
            if let Ok(mut b) = Arc::try_unwrap(b) {
                b.clear();
                next = b;
            }
        }
        if next.capacity() == 0 {
            next.reserve(COPY_BLOCK);
        }
        let full = Arc::new(std::mem::replace(&mut self.block, next));
        if self.lent.len() < 64 {
            self.lent.push(full.clone());
        }
        full
    }
}

impl Deal {
    /// The worker packet `seq` goes to.
    #[inline]
    fn choose(&self, p: &Packet<'_>, seq: u64) -> usize {
        if self.n == 1 {
            return 0;
        }
        let bucket = match &self.distribution {
            // The hash's top byte: it is mixed, and the low bits fed the old modulo.
            Distribution::Flow | Distribution::FlowLevels => {
                flow_hash(p).map_or(seq as usize, |h| (h >> 56) as usize)
            }
            Distribution::RoundRobin | Distribution::Blocks => seq as usize,
            Distribution::By(f) => return (f(p) % self.n as u64) as usize,
        };
        usize::from(self.table[bucket % BUCKETS])
    }
}

impl Deal {
    /// [`Distribution::FlowLevels`]: the worker of each tunnel level's address pair, as
    /// far as the decoder sees (into a first fragment; the levels a later fragment
    /// hides are its worker's, whatever a reassembly finds there). A level with no
    /// address pair is its outer level's worker's (round robin at the outermost). Level 7 and deeper are level 6's
    /// worker's.
    #[inline(always)]
    fn level_targets(&self, p: &Packet<'_>, seq: u64) -> Targets {
        match quick_flow(p) {
            Some((h, false)) => Targets::one(self.worker(h)),
            _ => self.levels_decoded(p, seq),
        }
    }

    /// The worker of address-pair hash `h`.
    #[inline(always)]
    fn worker(&self, h: u64) -> usize {
        usize::from(self.table[(h >> 56) as usize % BUCKETS])
    }

    /// [`Deal::level_targets`] for a packet that may carry a tunnel, or that the quick
    /// look does not read: the decoder walks its levels.
    #[inline(never)]
    fn levels_decoded(&self, p: &Packet<'_>, seq: u64) -> Targets {
        let worker = |h: u64| self.worker(h);
        let mut t = Targets::NONE;
        let mut last = usize::from(self.table[seq as usize % BUCKETS]);
        let mut level = Some(Decoded::new(p));
        let mut depth = 0;
        while let Some(l) = level {
            if let Some(h) = l.address_pair_hash() {
                last = worker(h);
            }
            t.add(last, 1 << depth);
            depth += 1;
            if depth == 7 {
                break;
            }
            // A first fragment shows what its tunnel carries; a later one nothing.
            level = l.inner();
        }
        // The levels not walked: the last one's worker's.
        t.add(last, !((1u8 << depth) - 1));
        t
    }
}

/// A hash of the IP addresses and protocol, equal for both directions
/// ([`tracekit_decode::address_pair_hash`]).
#[inline]
fn flow_hash(p: &Packet<'_>) -> Option<u64> {
    // The common case straight from the bytes: Ethernet (up to two VLAN tags) or raw
    // IP, then IPv4 or IPv6. The reader does this for every packet, and the full
    // decoder's walk cost as much as a light analysis itself.
    if let Some(h) = quick_flow_hash(p) {
        return Some(h);
    }
    Decoded::new(p).address_pair_hash()
}

/// [`flow_hash`] for Ethernet and raw-IP frames carrying IPv4 or IPv6 (fragments
/// included); `None` for anything else, which the decoder then walks.
#[inline]
fn quick_flow_hash(p: &Packet<'_>) -> Option<u64> {
    quick_flow(p).map(|(h, _)| h)
}

/// [`quick_flow_hash`], and whether the packet may carry a tunnel (IP in IP, GRE, or
/// UDP to or from a port the decoder looks for tunnels on; not a fragment after the
/// first).
#[inline(always)]
fn quick_flow(p: &Packet<'_>) -> Option<(u64, bool)> {
    let b = p.data();
    let (mut ethertype, mut at) = match p.link_type() {
        tracekit_core::LinkType::ETHERNET => (u16::from_be_bytes([*b.get(12)?, *b.get(13)?]), 14),
        tracekit_core::LinkType::RAW
        | tracekit_core::LinkType::IPV4
        | tracekit_core::LinkType::IPV6 => match b.first()? >> 4 {
            4 => (0x0800, 0),
            6 => (0x86dd, 0),
            _ => return None,
        },
        _ => return None,
    };
    for _ in 0..2 {
        if ethertype == 0x8100 || ethertype == 0x88a8 {
            ethertype = u16::from_be_bytes([*b.get(at + 2)?, *b.get(at + 3)?]);
            at += 4;
        }
    }
    // Where the transport header is (`None` for a fragment after the first).
    let (src, dst, proto, l4) = match ethertype {
        0x0800 => {
            let ip = b.get(at..at + 20)?;
            if ip[0] >> 4 != 4 {
                return None;
            }
            let src = u128::from(u32::from_be_bytes([ip[12], ip[13], ip[14], ip[15]]));
            let dst = u128::from(u32::from_be_bytes([ip[16], ip[17], ip[18], ip[19]]));
            // A fragment offset: no transport header (a first fragment has one).
            let first = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff == 0;
            (
                src,
                dst,
                ip[9],
                first.then(|| at + usize::from(ip[0] & 0x0f) * 4),
            )
        }
        0x86dd => {
            let ip = b.get(at..at + 40)?;
            if ip[0] >> 4 != 6 {
                return None;
            }
            // The protocol after extension headers is the decoder's business.
            if !matches!(ip[6], 6 | 17 | 58 | 132) {
                return None;
            }
            let src = u128::from_be_bytes(ip[8..24].try_into().ok()?);
            let dst = u128::from_be_bytes(ip[24..40].try_into().ok()?);
            (src, dst, ip[6], Some(at + 40))
        }
        _ => return None,
    };
    let tunnel = match (proto, l4) {
        (_, None) => false,
        (4 | 41 | 47, _) => true,
        (17, Some(l4)) => match b.get(l4..l4 + 4) {
            Some(u) => tracekit_decode::TunnelPorts::default().carries(
                u16::from_be_bytes([u[0], u[1]]),
                u16::from_be_bytes([u[2], u[3]]),
            ),
            None => false,
        },
        _ => false,
    };
    Some((tracekit_decode::address_pair_hash(src, dst, proto), tunnel))
}

/// A worker thread: processes batches until the reader is done, sends its items and
/// progress after each; returns the worker and its figures.
fn work<W: Worker>(
    mut running: Running<'_, W>,
    rx: Receiver<Batch>,
    spare_tx: &SyncSender<Lists>,
    shared: &Shared,
) -> (W, WorkerStats) {
    let mut last_end = 0;
    loop {
        let waited = Instant::now();
        let Ok(batch) = rx.recv() else {
            break;
        };
        running.stats.idle += waited.elapsed();
        let limit = shared.limit.load(Ordering::Relaxed);
        let mut ticks = batch.ticks.iter().peekable();
        let mut notes = batch.notes.iter().peekable();
        for (i, slot) in batch.slots.iter().enumerate() {
            // The ticks that come before this packet.
            while let Some((_, run)) = ticks.next_if(|(at, _)| *at == i) {
                running.ticks(run, limit, shared);
            }
            let note = notes
                .next_if(|(at, _)| *at == i)
                .map_or(Note::PLAIN, |n| n.1);
            if !running.packet(&slot.packet(&batch.block), slot.seq, note, limit, shared) {
                break;
            }
        }
        // Ticks after the batch's last packet.
        for (_, run) in ticks {
            running.ticks(run, limit, shared);
        }
        let Batch {
            slots,
            ticks,
            notes,
            end_seq,
            ..
        } = batch;
        let _ = spare_tx.try_send(Lists {
            slots,
            ticks,
            notes,
            clock: None,
        });
        last_end = end_seq;
        if !running.send(end_seq) {
            break;
        }
    }
    running.finish(last_end, shared)
}

/// What a member's worker is connected to: its number, the combiner, its emptied item
/// lists coming back, the caller's watch.
struct MemberLink<'a, T> {
    i: usize,
    done_tx: SyncSender<Done<T>>,
    back: Receiver<Vec<(u64, T)>>,
    watch: Option<&'a MemberWatch>,
}

/// A member's thread of [`Parallel::run_members`]: reads the member and runs its worker;
/// sends the items every 256, and on time ([`MEMBER_FLUSH`]: while packets come, and when
/// the member is quiet); returns the worker, its figures and the member's read error.
fn read_member<S: CaptureSource, W: Worker>(
    mut member: S,
    mut worker: W,
    tick: Option<TickEvery>,
    link: MemberLink<'_, W::Item>,
    shared: &Shared,
) -> (W, WorkerStats, Option<Error>) {
    let mut stats = WorkerStats::default();
    let mut ticker = Ticker {
        every: tick,
        ticks: 0,
        interval: None,
    };
    let mut items: Vec<(u64, W::Item)> = Vec::new();
    let mut sent = Instant::now();
    let mut seq = 0u64;
    let mut read_error = None;
    let mut failed = false;
    let send = |items: &mut Vec<(u64, W::Item)>, stats: &mut WorkerStats| {
        let fresh = link.back.try_recv().unwrap_or_default();
        let full = std::mem::replace(items, fresh);
        stats.batches += 1;
        let _ = link.done_tx.send(Done {
            worker: link.i,
            items: full,
            upto: 0,
        });
    };
    while !shared.stop.load(Ordering::Relaxed) && !shared.halt.load(Ordering::Relaxed) {
        let polled = member.next_packet_within(MEMBER_FLUSH);
        let on_time = match polled {
            Ok(Polled::Packet(p)) => {
                let mut run = None;
                ticker.before(seq, p.ts(), |r| run = Some(r));
                if let Some(run) = run
                    && let Err((at, e)) = run_ticks(&mut worker, &run, &mut items, u64::MAX)
                {
                    fail(shared, at, e);
                    failed = true;
                    break;
                }
                let mut out = Emit::keyed(packet_key(seq), &mut items);
                if let Err(e) = worker.packet(&p, &mut out) {
                    fail(shared, seq, e);
                    failed = true;
                    break;
                }
                let soon = out.soon;
                seq += 1;
                stats.packets += 1;
                if items.len() >= 256 || (soon && !items.is_empty()) {
                    send(&mut items, &mut stats);
                }
                // The clock is read every 8 packets (a worker may hold packets back in
                // batches of its own, which `flush` hands on).
                seq.is_multiple_of(8) && sent.elapsed() >= MEMBER_FLUSH
            }
            Ok(Polled::Idle) => true,
            Ok(Polled::Ended) => break,
            Err(e) => {
                read_error = Some(e);
                // The others stop too.
                shared.stop.store(true, Ordering::Relaxed);
                break;
            }
        };
        if on_time {
            let mut out = Emit::keyed(tick_key(seq), &mut items);
            if let Err(e) = worker.flush(&mut out) {
                fail(shared, seq, e);
                failed = true;
                break;
            }
            if !items.is_empty() {
                send(&mut items, &mut stats);
            }
            if let Some(w) = link.watch {
                w.publish(link.i, member.stats());
            }
            sent = Instant::now();
        }
    }
    if failed {
        shared.stop.store(true, Ordering::Relaxed);
    } else {
        let mut out = Emit::keyed(tick_key(seq), &mut items);
        if let Err(e) = worker
            .flush(&mut out)
            .and_then(|()| worker.finish(&mut out))
        {
            fail(shared, seq, e);
        }
    }
    if !items.is_empty() {
        send(&mut items, &mut stats);
    }
    stats.source = Some(member.stats());
    if let Some(w) = link.watch {
        w.publish(link.i, member.stats());
    }
    (worker, stats, read_error)
}

/// A run of ticks for a worker, unless the run stopped before it; an error with the
/// packet it came before.
fn run_ticks<W: Worker>(
    worker: &mut W,
    run: &TickRun,
    items: &mut Vec<(u64, W::Item)>,
    limit: u64,
) -> Result<(), (u64, Error)> {
    let at = run.first.packets;
    if at >= limit {
        return Ok(());
    }
    for tick in run.ticks() {
        let mut out = Emit::keyed(tick_key(at), items);
        worker.tick(&tick, &mut out).map_err(|e| (at, e))?;
    }
    Ok(())
}

/// Records a worker's error at packet `seq` (the earliest wins) and stops the run.
fn fail(shared: &Shared, seq: u64, e: Error) {
    shared.limit.fetch_min(seq, Ordering::Relaxed);
    shared.halt.store(true, Ordering::Relaxed);
    if let Ok(mut slot) = shared.worker_error.lock()
        && slot.as_ref().is_none_or(|(s, _)| seq < *s)
    {
        *slot = Some((seq, e.with_packet(seq + 1)));
    }
}

/// The combiner: hands items to `combine` as they come, or merged into stream order.
fn combine_items<T, C: FnMut(u64, T)>(
    n: usize,
    order: Order,
    done_rx: &Receiver<Done<T>>,
    back: &[SyncSender<Vec<(u64, T)>>],
    combine: &mut C,
    shared: &Shared,
) {
    if order == Order::Arrival {
        while let Ok(done) = done_rx.recv() {
            let mut items = done.items;
            for (key, item) in items.drain(..) {
                combine(key >> 1, item);
            }
            let _ = back[done.worker].try_send(items);
        }
        return;
    }
    // Stream order: per worker, the items received and not yet handed on, and how far
    // the worker has got.
    let mut queues: Vec<std::collections::VecDeque<(u64, T)>> =
        (0..n).map(|_| std::collections::VecDeque::new()).collect();
    let mut upto = vec![0u64; n];
    let mut emit_ready = |queues: &mut Vec<std::collections::VecDeque<(u64, T)>>, upto: &[u64]| {
        loop {
            // The smallest head, the lowest worker first on ties.
            let mut best: Option<(u64, usize)> = None;
            for (w, q) in queues.iter().enumerate() {
                if let Some(&(seq, _)) = q.front()
                    && best.is_none_or(|(b, _)| seq < b)
                {
                    best = Some((seq, w));
                }
            }
            let Some((seq, w)) = best else {
                return;
            };
            // Every worker with nothing queued must be past it; one with something
            // queued has it at or after `seq`, and a tie goes to the lower worker.
            let ready = queues
                .iter()
                .enumerate()
                .all(|(v, q)| !q.is_empty() || upto[v] > seq);
            if !ready {
                return;
            }
            if let Some((key, item)) = queues[w].pop_front() {
                // Nothing of a packet at or after one a worker failed on (the failing
                // worker's limit is set before its last items come, so this is exact).
                if key < packet_key(shared.limit.load(Ordering::Relaxed)) {
                    combine(key >> 1, item);
                }
            }
        }
    };
    while let Ok(done) = done_rx.recv() {
        let mut items = done.items;
        queues[done.worker].extend(items.drain(..));
        upto[done.worker] = upto[done.worker].max(done.upto);
        let _ = back[done.worker].try_send(items);
        emit_ready(&mut queues, &upto);
    }
    // Every worker is done.
    let all = vec![u64::MAX; n];
    emit_ready(&mut queues, &all);
}

#[cfg(test)]
mod share_tests {
    use super::*;

    /// The reader's buckets follow the share, spread evenly; the rest go to the other
    /// workers in turn.
    #[test]
    fn the_table_gives_each_worker_its_share() {
        let count = |t: &[u8; BUCKETS], w: u8| t.iter().filter(|&&x| x == w).count();
        let t = share_table(2, None);
        assert_eq!(count(&t, 0), 23); // 0.1 / 1.1 of 256
        assert_eq!(count(&t, 1), 233);
        // Evenly: no run of more than 11 other buckets between two of the reader's.
        let own: Vec<usize> = (0..BUCKETS).filter(|&b| t[b] == 0).collect();
        assert!(own.windows(2).all(|w| w[1] - w[0] <= 12), "{own:?}");
        let t = share_table(2, Some(0.2));
        assert_eq!(count(&t, 0), 51);
        let t = share_table(3, None);
        assert_eq!(count(&t, 0), 12); // 0.1 / 2.1 of 256
        assert_eq!(count(&t, 1), 122);
        assert_eq!(count(&t, 2), 122);
        let t = share_table(4, Some(0.0));
        assert_eq!(count(&t, 0), 0);
        assert!((1..4).all(|w| (85..=86).contains(&count(&t, w))));
        assert_eq!(count(&share_table(2, Some(1.0)), 0), BUCKETS);
        assert_eq!(count(&share_table(1, Some(0.0)), 0), BUCKETS);
    }
}
