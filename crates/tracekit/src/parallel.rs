//! Spreading a trace over every core: one reader thread, N workers, one combiner.
//!
//! The user writes a [`Worker`] (per-worker state and what to do with a packet, and with
//! a [`Tick`]); [`Parallel::run`] reads the source on a thread of its own, hands each
//! packet to one worker chosen by the [`Distribution`] (by default the flow: both
//! directions of a conversation and every fragment of a datagram reach the same worker,
//! in file order), passes what workers emit to the caller in the chosen [`Order`], and
//! returns the workers when the trace is done, for a reduce.
//!
//! **No copy, no allocation per packet.** The reader's input keeps the buffers its
//! window leaves ([`tracekit_io::Input::share_windows`]); the reader sends each worker,
//! per buffer, the positions of its packets in it, and workers lend packets straight out
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

use tracekit_core::{ByteOrder, CaptureSource, Error, Meta, Packet, PacketOptions};
use tracekit_decode::Decoded;

use crate::Source;

/// What each worker runs. One value per worker; it is handed back in [`Finished`].
pub trait Worker: Send {
    /// What the worker emits for the combiner (`()` when results are only reduced).
    type Item: Send;

    /// One packet, in stream order among this worker's packets.
    fn packet(&mut self, packet: &Packet<'_>, out: &mut Emit<'_, Self::Item>) -> Result<(), Error>;

    /// A tick: every worker gets every tick, at the same point of the packet stream.
    fn tick(&mut self, tick: &Tick, out: &mut Emit<'_, Self::Item>) -> Result<(), Error> {
        let _ = (tick, out);
        Ok(())
    }
}

/// Where a worker's items go, tagged with the position in the packet stream.
pub struct Emit<'a, T> {
    /// The position as an order key: twice the packet number, plus one for a packet
    /// (a tick at packet `n` comes before packet `n`).
    key: u64,
    items: &'a mut Vec<(u64, T)>,
}

impl<'a, T> Emit<'a, T> {
    /// An emitter for packet `seq` into `items` (order key, item): to run a worker on
    /// one thread without the machinery, as a reference or a baseline.
    pub fn new(seq: u64, items: &'a mut Vec<(u64, T)>) -> Emit<'a, T> {
        Emit {
            key: packet_key(seq),
            items,
        }
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
    /// crossed.
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
    /// In turn.
    RoundRobin,
    /// By a user function.
    By(Chooser),
}

impl std::fmt::Debug for Distribution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Distribution::Flow => "Flow",
            Distribution::RoundRobin => "RoundRobin",
            Distribution::By(_) => "By(..)",
        })
    }
}

/// In which order the combiner is handed the workers' items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    /// As they come.
    #[default]
    Arrival,
    /// In packet-stream order (the order one thread would have produced them; items of
    /// the same tick in worker order): a merge of the workers' ordered streams.
    Stream,
}

/// One worker's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerStats {
    /// Packets it processed.
    pub packets: u64,
    /// Batches it received.
    pub batches: u64,
    /// Time it waited for a batch.
    pub idle: Duration,
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
    /// Whether packets were copied (an input with no buffers of its own to share).
    pub copied: bool,
}

impl std::fmt::Display for RunStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} packets over {} workers; reader waited {:.3} s for full queues",
            self.packets,
            self.workers.len(),
            self.reader_blocked.as_secs_f64()
        )?;
        for (i, w) in self.workers.iter().enumerate() {
            write!(
                f,
                "\n  worker {i}: {} packets in {} batches, idle {:.3} s",
                w.packets,
                w.batches,
                w.idle.as_secs_f64()
            )?;
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

/// In copy mode, the size of a shared block.
const COPY_BLOCK: usize = 1 << 18;

/// How a run goes: workers, distribution, ticks, order, stop flag.
#[derive(Debug, Clone)]
pub struct Parallel {
    workers: usize,
    distribution: Distribution,
    tick: Option<TickEvery>,
    order: Order,
    stop: Option<Arc<AtomicBool>>,
}

impl Parallel {
    /// A run over `workers` workers (0: one per core but the reader's, at least one; at
    /// most [`MAX_WORKERS`]), by flow, without ticks, items in arrival order. The reader
    /// is a thread of its own: on 2 cores, 1 worker measured fastest (Ports 1.46× the
    /// single-threaded loop on 96-byte packets; 2 workers, three threads on two cores,
    /// 1.0×).
    pub fn new(workers: usize) -> Parallel {
        let workers = if workers == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get().saturating_sub(1).max(1))
        } else {
            workers
        };
        Parallel {
            workers: workers.min(MAX_WORKERS),
            distribution: Distribution::Flow,
            tick: None,
            order: Order::Arrival,
            stop: None,
        }
    }

    /// Workers this run uses.
    pub fn workers(&self) -> usize {
        self.workers
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

    /// Stops reading when `stop` becomes true (Ctrl-C): the packets read so far are
    /// processed and the run ends without an error.
    pub fn stop_flag(mut self, stop: Arc<AtomicBool>) -> Parallel {
        self.stop = Some(stop);
        self
    }

    /// Runs: reads `source` on a thread of its own, one worker made by `make(i)` per
    /// thread, and calls `combine(seq, item)` on this thread with what the workers emit,
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
        let stop = self.stop.clone().unwrap_or_default();
        let shared = Shared {
            stop: stop.clone(),
            halt: AtomicBool::new(false),
            limit: AtomicU64::new(u64::MAX),
            worker_error: Mutex::new(None),
        };
        let mut batch_tx = Vec::with_capacity(n);
        let mut batch_rx = Vec::with_capacity(n);
        for _ in 0..n {
            let (tx, rx) = sync_channel::<Batch>(QUEUE);
            batch_tx.push(tx);
            batch_rx.push(rx);
        }
        // Emptied position lists, back to the reader.
        let (spare_tx, spare_rx) = sync_channel::<Lists>(QUEUE * n + n);
        // Workers' items and progress, to the combiner.
        let (done_tx, done_rx) = sync_channel::<Done<W::Item>>(QUEUE * n);
        // Emptied item lists, back to each worker.
        let mut items_back_tx = Vec::with_capacity(n);
        let mut items_back_rx = Vec::with_capacity(n);
        for _ in 0..n {
            let (tx, rx) = sync_channel::<Vec<(u64, W::Item)>>(QUEUE + 1);
            items_back_tx.push(tx);
            items_back_rx.push(rx);
        }
        let distribution = self.distribution.clone();
        let tick = self.tick;
        let order = self.order;
        let shared = &shared;
        let make = &make;
        // With a core for each thread, the reader and each worker get their own: left to
        // itself the scheduler kept a fresh reader/worker pair on one core (every batch
        // hand-over a sleep and a wake-up next to the waker), and a run on 2 cores was
        // slower than one thread. With fewer cores than threads, nothing is pinned.
        let cores = core_affinity::get_core_ids().unwrap_or_default();
        let pin = cores.len() > n;
        let core = |i: usize| pin.then(|| cores[i % cores.len()]);
        std::thread::scope(|scope| {
            let reader_core = core(0);
            let reader = scope.spawn(move || {
                if let Some(c) = reader_core {
                    core_affinity::set_for_current(c);
                }
                read_and_deal(source, n, &distribution, tick, &batch_tx, &spare_rx, shared)
            });
            let mut handles = Vec::with_capacity(n);
            for (i, (rx, back)) in batch_rx.into_iter().zip(items_back_rx).enumerate() {
                let done_tx = done_tx.clone();
                let spare_tx = spare_tx.clone();
                let worker_core = core(i + 1);
                handles.push(scope.spawn(move || {
                    if let Some(c) = worker_core {
                        core_affinity::set_for_current(c);
                    }
                    work(i, make(i), rx, &spare_tx, &done_tx, back, shared)
                }));
            }
            drop(done_tx);
            drop(spare_tx);
            combine_items(n, order, &done_rx, &items_back_tx, &mut combine);
            let (stats, read_error) = reader.join().unwrap_or_else(|_| {
                (
                    RunStats::default(),
                    Some(Error::unsupported("the reader thread panicked")),
                )
            });
            let mut stats = stats;
            let mut workers = Vec::with_capacity(n);
            for h in handles {
                match h.join() {
                    Ok((w, s)) => {
                        workers.push(w);
                        stats.workers.push(s);
                    }
                    Err(_) => return Err(Error::unsupported("a worker thread panicked")),
                }
            }
            let worker_error = shared.worker_error.lock().ok().and_then(|mut e| e.take());
            // The earlier of the two stopped the run.
            let error = match (read_error, worker_error) {
                (Some(r), Some((seq, w))) => Some(if r.packet().is_some_and(|p| p <= seq + 1) {
                    r
                } else {
                    w
                }),
                (Some(r), None) => Some(r),
                (None, Some((_, w))) => Some(w),
                (None, None) => None,
            };
            Ok(Finished {
                workers,
                stats,
                error,
            })
        })
    }
}

impl Parallel {
    /// Runs one worker per source, each on a thread of its own reading its source
    /// directly: for sources that are already split by flow, such as the receive
    /// streams of a DAG card (`tracekit_dag::open_streams("dag:/dev/dag0,0,2,4")`),
    /// whose steering keeps each flow on one stream. The run's distribution is not used
    /// (and its worker count is the number of sources); ticks come per source, at that
    /// source's packet counts or trace-time boundaries; `combine(i, item)` gets worker
    /// `i`'s items on this thread, in arrival order ([`Order::Stream`] has no meaning
    /// across independent sources: each worker's items keep their order). A worker's
    /// error or a source's damage stops the run (and sets the stop flag, so that
    /// sources sharing it end too); [`Finished::error`] says which. A live source only
    /// ends when told: give the run its stop flag ([`Parallel::stop_flag`]; DAG streams
    /// opened together share one, `DagStream::stop_flag`).
    ///
    /// ```no_run
    /// # #[cfg(feature = "dag")]
    /// # fn main() -> Result<(), tracekit::Error> {
    /// use tracekit::parallel::{Emit, Parallel, Worker};
    /// use tracekit::{Error, Packet};
    ///
    /// #[derive(Default)]
    /// struct Bytes(u64);
    /// impl Worker for Bytes {
    ///     type Item = ();
    ///     fn packet(&mut self, p: &Packet<'_>, _: &mut Emit<'_, ()>) -> Result<(), Error> {
    ///         self.0 += u64::from(p.wire_len());
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let streams = tracekit::dag::open_streams("dag:/dev/dag0,0,2,4", &Default::default())?;
    /// let stop = streams[0].stop_flag();
    /// let done = Parallel::new(streams.len()).stop_flag(stop).run_sources(
    ///     streams,
    ///     |_| Bytes::default(),
    ///     |_, _| {},
    /// )?;
    /// println!("{} bytes", done.workers.iter().map(|w| w.0).sum::<u64>());
    /// # Ok(())
    /// # }
    /// # #[cfg(not(feature = "dag"))]
    /// # fn main() {}
    /// ```
    pub fn run_sources<S, W, F, C>(
        &self,
        sources: Vec<S>,
        make: F,
        mut combine: C,
    ) -> Result<Finished<W>, Error>
    where
        S: CaptureSource + Send,
        W: Worker,
        F: Fn(usize) -> W + Sync,
        C: FnMut(usize, W::Item),
    {
        let n = sources.len();
        let stop = self.stop.clone().unwrap_or_default();
        let (items_tx, items_rx) = sync_channel::<(usize, Vec<(u64, W::Item)>)>(QUEUE * n.max(1));
        let tick = self.tick;
        let make = &make;
        let stop = &stop;
        std::thread::scope(|scope| {
            let handles: Vec<_> = sources
                .into_iter()
                .enumerate()
                .map(|(i, mut source)| {
                    let items_tx = items_tx.clone();
                    scope.spawn(move || {
                        let mut worker = make(i);
                        let mut stats = WorkerStats::default();
                        let mut ticker = Ticker {
                            every: tick,
                            ticks: 0,
                            interval: None,
                        };
                        let mut items = Vec::new();
                        let mut seq = 0u64;
                        let result = loop {
                            if stop.load(Ordering::Relaxed) {
                                break Ok(());
                            }
                            let packet = match source.next_packet() {
                                Ok(Some(p)) => p,
                                Ok(None) => break Ok(()),
                                Err(e) => break Err(e),
                            };
                            let mut tick_error = None;
                            ticker.before_with(seq, packet.ts().as_unix_nanos(), &mut |t| {
                                let mut out = Emit {
                                    key: tick_key(seq),
                                    items: &mut items,
                                };
                                if let Err(e) = worker.tick(&t, &mut out) {
                                    tick_error.get_or_insert(e);
                                }
                            });
                            if let Some(e) = tick_error {
                                break Err(e);
                            }
                            let mut out = Emit::new(seq, &mut items);
                            if let Err(e) = worker.packet(&packet, &mut out) {
                                break Err(e.with_packet(seq + 1));
                            }
                            seq += 1;
                            if items.len() >= 256 {
                                stats.batches += 1;
                                if items_tx.send((i, std::mem::take(&mut items))).is_err() {
                                    break Ok(());
                                }
                            }
                        };
                        stats.packets = seq;
                        if !items.is_empty() {
                            stats.batches += 1;
                            let _ = items_tx.send((i, items));
                        }
                        if result.is_err() {
                            stop.store(true, Ordering::Relaxed);
                        }
                        (worker, stats, result.err())
                    })
                })
                .collect();
            drop(items_tx);
            for (i, batch) in items_rx {
                for (_, item) in batch {
                    combine(i, item);
                }
            }
            let mut workers = Vec::with_capacity(n);
            let mut stats = RunStats::default();
            let mut error = None;
            for h in handles {
                let (w, s, e) = h
                    .join()
                    .map_err(|_| Error::unsupported("a worker thread panicked"))?;
                workers.push(w);
                stats.packets += s.packets;
                stats.workers.push(s);
                if error.is_none() {
                    error = e;
                }
            }
            Ok(Finished {
                workers,
                stats,
                error,
            })
        })
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

/// A worker's share of one buffer: the buffer, its packets in it, and the ticks that
/// come before the packet at each index.
struct Batch {
    block: Arc<Vec<u8>>,
    slots: Vec<Slot>,
    ticks: Vec<(usize, Tick)>,
    /// Packets before this number have all been dealt.
    end_seq: u64,
}

/// A worker's lists, refilled by the reader and recycled.
#[derive(Default)]
struct Lists {
    slots: Vec<Slot>,
    ticks: Vec<(usize, Tick)>,
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

/// The reader: reads, chooses workers, deals per buffer; returns its figures and the
/// read error, if any.
fn read_and_deal(
    source: &mut Source,
    n: usize,
    distribution: &Distribution,
    tick: Option<TickEvery>,
    batch_tx: &[SyncSender<Batch>],
    spare_rx: &Receiver<Lists>,
    shared: &Shared,
) -> (RunStats, Option<Error>) {
    let sharing = source.input_mut().is_some_and(|i| i.share_windows());
    let mut dealer = Dealer {
        n,
        pending: (0..n).map(|_| Lists::default()).collect(),
        batch_tx,
        spare_rx,
        blocked: Duration::ZERO,
        closed: false,
    };
    let mut stats = RunStats {
        copied: !sharing,
        ..RunStats::default()
    };
    let mut generation = generation_of(source);
    let mut copy = CopyBlocks::default();
    let mut seq = 0u64;
    let mut ticker = Ticker {
        every: tick,
        ticks: 0,
        interval: None,
    };
    let mut error = None;
    loop {
        if shared.stop.load(Ordering::Relaxed)
            || shared.halt.load(Ordering::Relaxed)
            || dealer.closed
        {
            break;
        }
        // What the reader needs of the packet, taken while it is lent; positions are
        // found after (the packet in hand, not the record stored behind it, which would be
        // read back in pieces).
        let (w, ts, data, options, meta) = match source.next_packet() {
            Ok(Some(p)) => {
                let w = choose(distribution, &p, seq, n);
                let data = (p.data().as_ptr() as usize, p.data().len());
                let options = p
                    .options()
                    .map(|o| (o.bytes().as_ptr() as usize, o.bytes().len(), o.byte_order()));
                let meta = *p.meta();
                let ts = meta.ts.as_unix_nanos();
                if !sharing {
                    ticker.before(seq, ts, &mut dealer);
                    let slot = copy.add(&p, &mut dealer, seq);
                    dealer.pending[w].slots.push(slot);
                }
                (w, ts, data, options, meta)
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
            ticker.before(seq, ts, &mut dealer);
        }
        if sharing
            && let Some(input) = source.input_mut()
            && let Some(start) = input.window_offset(data.0, data.1)
        {
            let (opt_start, opt_len) = match options {
                Some((addr, len, order)) => (
                    input.window_offset(addr, len).unwrap_or(0) as u32,
                    len as u32
                        | if order == ByteOrder::Big {
                            BIG_ENDIAN
                        } else {
                            0
                        },
                ),
                None => (0, 0),
            };
            dealer.pending[w].slots.push(Slot {
                seq,
                start: start as u32,
                len: data.1 as u32,
                opt_start,
                opt_len,
                meta,
            });
        }
        seq += 1;
    }
    // The last buffer: the one the window left while looking for more, or the current
    // one.
    let last = if sharing {
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
    (stats, error)
}

/// Where ticks go: every so many packets, or at interval boundaries of trace time.
struct Ticker {
    every: Option<TickEvery>,
    ticks: u64,
    interval: Option<u64>,
}

impl Ticker {
    /// The ticks that come before packet `seq` (time `ts`), into every worker's lists.
    #[inline]
    fn before(&mut self, seq: u64, ts: u64, dealer: &mut Dealer<'_>) {
        self.before_with(seq, ts, &mut |t| dealer.tick(t));
    }

    /// The ticks that come before packet `seq` (time `ts`), to `out`.
    #[inline]
    fn before_with(&mut self, seq: u64, ts: u64, out: &mut impl FnMut(Tick)) {
        match self.every {
            Some(TickEvery::Packets(every)) if seq > 0 && seq.is_multiple_of(every) => {
                out(Tick {
                    index: self.ticks,
                    packets: seq,
                    time: None,
                });
                self.ticks += 1;
            }
            Some(TickEvery::TraceTime(len)) => {
                let k = ts / len;
                match self.interval {
                    None => self.interval = Some(k),
                    Some(current) if k > current => {
                        // One tick per boundary crossed (a long gap is a few empty ones;
                        // past a million, the rest are folded into the last).
                        let first = (current + 1).max(k.saturating_sub(1_000_000));
                        for b in first..=k {
                            out(Tick {
                                index: self.ticks,
                                packets: seq,
                                time: Some(b * len),
                            });
                            self.ticks += 1;
                        }
                        self.interval = Some(k);
                    }
                    Some(_) => {}
                }
            }
            _ => {}
        }
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
    /// Every worker is gone.
    closed: bool,
}

impl Dealer<'_> {
    fn tick(&mut self, tick: Tick) {
        for p in &mut self.pending {
            p.ticks.push((p.slots.len(), tick));
        }
    }

    /// Sends every worker its share of `block` (possibly nothing: the batch still
    /// carries the progress).
    fn deal(&mut self, block: Arc<Vec<u8>>, end_seq: u64) {
        let mut sent = 0;
        for w in 0..self.n {
            let fresh = match self.spare_rx.try_recv() {
                Ok(mut lists) => {
                    lists.slots.clear();
                    lists.ticks.clear();
                    lists
                }
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => Lists::default(),
            };
            let Lists { slots, ticks } = std::mem::replace(&mut self.pending[w], fresh);
            let batch = Batch {
                block: block.clone(),
                slots,
                ticks,
                end_seq,
            };
            let batch = match self.batch_tx[w].try_send(batch) {
                Ok(()) => {
                    sent += 1;
                    continue;
                }
                Err(std::sync::mpsc::TrySendError::Full(b)) => b,
                Err(std::sync::mpsc::TrySendError::Disconnected(_)) => continue,
            };
            let waited = Instant::now();
            if self.batch_tx[w].send(batch).is_ok() {
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
            slot.opt_len = bytes.len() as u32
                | if order == ByteOrder::Big {
                    BIG_ENDIAN
                } else {
                    0
                };
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

/// The worker a packet goes to.
#[inline]
fn choose(distribution: &Distribution, p: &Packet<'_>, seq: u64, n: usize) -> usize {
    if n == 1 {
        return 0;
    }
    let h = match distribution {
        Distribution::Flow => flow_hash(p).unwrap_or(seq),
        Distribution::RoundRobin => seq,
        Distribution::By(f) => f(p),
    };
    (h % n as u64) as usize
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
    let (src, dst, proto) = match ethertype {
        0x0800 => {
            let ip = b.get(at..at + 20)?;
            if ip[0] >> 4 != 4 {
                return None;
            }
            let src = u128::from(u32::from_be_bytes([ip[12], ip[13], ip[14], ip[15]]));
            let dst = u128::from(u32::from_be_bytes([ip[16], ip[17], ip[18], ip[19]]));
            (src, dst, ip[9])
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
            (src, dst, ip[6])
        }
        _ => return None,
    };
    Some(tracekit_decode::address_pair_hash(src, dst, proto))
}

/// A worker thread: processes batches until the reader is done, sends its items and
/// progress after each; returns the worker and its figures.
fn work<W: Worker>(
    i: usize,
    mut worker: W,
    rx: Receiver<Batch>,
    spare_tx: &SyncSender<Lists>,
    done_tx: &SyncSender<Done<W::Item>>,
    items_back: Receiver<Vec<(u64, W::Item)>>,
    shared: &Shared,
) -> (W, WorkerStats) {
    let mut stats = WorkerStats::default();
    let mut failed = false;
    loop {
        let waited = Instant::now();
        let Ok(batch) = rx.recv() else {
            break;
        };
        stats.idle += waited.elapsed();
        stats.batches += 1;
        let mut items = items_back.try_recv().unwrap_or_default();
        let limit = shared.limit.load(Ordering::Relaxed);
        if !failed {
            let mut ticks = batch.ticks.iter().peekable();
            for (i, slot) in batch.slots.iter().enumerate() {
                // The ticks that come before this packet.
                while let Some((_, tick)) = ticks.next_if(|(at, _)| *at == i) {
                    if let Err(e) = run_tick(&mut worker, tick, &mut items, limit) {
                        fail(shared, tick.packets, e);
                        failed = true;
                        break;
                    }
                }
                if failed || slot.seq >= limit {
                    break;
                }
                stats.packets += 1;
                let packet = slot.packet(&batch.block);
                let mut out = Emit {
                    key: packet_key(slot.seq),
                    items: &mut items,
                };
                if let Err(e) = worker.packet(&packet, &mut out) {
                    fail(shared, slot.seq, e);
                    failed = true;
                    break;
                }
            }
            // Ticks after the batch's last packet.
            if !failed {
                for (_, tick) in ticks {
                    if let Err(e) = run_tick(&mut worker, tick, &mut items, limit) {
                        fail(shared, tick.packets, e);
                        failed = true;
                        break;
                    }
                }
            }
        }
        let Batch {
            slots,
            ticks,
            end_seq,
            ..
        } = batch;
        let _ = spare_tx.try_send(Lists { slots, ticks });
        let upto = if failed { u64::MAX } else { tick_key(end_seq) };
        if done_tx
            .send(Done {
                worker: i,
                items,
                upto,
            })
            .is_err()
        {
            break;
        }
    }
    (worker, stats)
}

/// A tick for a worker, unless the run stopped before it.
fn run_tick<W: Worker>(
    worker: &mut W,
    tick: &Tick,
    items: &mut Vec<(u64, W::Item)>,
    limit: u64,
) -> Result<(), Error> {
    if tick.packets >= limit {
        return Ok(());
    }
    let mut out = Emit {
        key: tick_key(tick.packets),
        items,
    };
    worker.tick(tick, &mut out)
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
            // Every worker with nothing queued must be past it (those before `w` on a
            // tie must be past it too: their item at `seq` would come first).
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
                combine(key >> 1, item);
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
