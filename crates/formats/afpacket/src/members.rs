//! The members of a fan-out group read on one thread each and handed out as one stream,
//! for a consumer that writes one output (`tracekit capture --members N -w out`).
//!
//! Each member's thread copies the packets of a ring block into a batch (one buffer for
//! the bytes, one list of positions and metadata) and sends it to the consumer, which
//! lends the packets from it and hands the batch back to be filled again: buffers are
//! reused, so no packet allocates once the batches have grown to the blocks' size. The
//! copy is what frees the ring block at once, so that a slow consumer costs the members
//! batches, not ring space the kernel needs.

use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use tracekit_core::{CaptureSource, Error, Meta, Packet, Polled, Stats};

use crate::{AfPacket, RingStats, StopHandle};

/// Batches each member may have in flight (filled, being filled or waiting to be).
const BATCHES_PER_MEMBER: usize = 8;

/// How long a member waits for a block before looking at the stop handle again.
const MEMBER_TICK: Duration = Duration::from_millis(100);

/// Packets copied out of one ring block.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    /// Metadata, start and length in `bytes` of each packet.
    packets: Vec<(Meta, usize, usize)>,
}

type Worker = JoinHandle<Result<RingStats, Error>>;

/// Reads the members of a fan-out group (see [`crate::FanoutGroup::open`]) on one thread
/// each and hands their packets out, in arrival order, on the calling thread.
///
/// ```no_run
/// use std::time::Duration;
/// use tracekit_afpacket::{FanoutGroup, MemberThreads, Polled, StopHandle};
///
/// let members = FanoutGroup::new("eth0").members(4).open()?;
/// let stop = StopHandle::default();
/// let mut group = MemberThreads::start(members, stop.clone());
/// let mut n = 0;
/// while n < 1000 {
///     match group.poll(Duration::from_millis(100))? {
///         Polled::Packet(_) => n += 1,
///         Polled::Idle => {}
///         Polled::Ended => break,
///     }
/// }
/// let per_member = group.finish()?;
/// println!("{n} packets; {} dropped by the kernel", per_member.iter().map(|s| s.dropped).sum::<u64>());
/// # Ok::<(), tracekit_core::Error>(())
/// ```
pub struct MemberThreads {
    stop: StopHandle,
    full: Receiver<Batch>,
    /// Where emptied batches go back to, one channel per member.
    returns: Vec<SyncSender<Batch>>,
    workers: Vec<Worker>,
    /// Each member's counters, published after every block.
    live: Arc<Mutex<Vec<RingStats>>>,
    /// The batch being handed out, and the next packet in it.
    current: Option<Batch>,
    next: usize,
    /// The member the next emptied batch is offered to first.
    next_return: usize,
    /// Packets handed out.
    delivered: u64,
}

impl MemberThreads {
    /// Starts one thread per member; each stops when `stop` does (it replaces the
    /// members' own stop handles).
    pub fn start(members: Vec<AfPacket>, stop: StopHandle) -> MemberThreads {
        let n = members.len();
        let live = Arc::new(Mutex::new(vec![RingStats::default(); n]));
        let (full_tx, full) = sync_channel::<Batch>(BATCHES_PER_MEMBER / 2 * n.max(1));
        let mut returns = Vec::with_capacity(n);
        let mut workers = Vec::with_capacity(n);
        for (m, mut member) in members.into_iter().enumerate() {
            member.set_stop_handle(stop.clone());
            let (empty_tx, empty) = sync_channel::<Batch>(BATCHES_PER_MEMBER);
            for _ in 0..BATCHES_PER_MEMBER {
                let _ = empty_tx.try_send(Batch::default());
            }
            returns.push(empty_tx);
            let (full_tx, stop, live) = (full_tx.clone(), stop.clone(), live.clone());
            workers.push(std::thread::spawn(move || {
                run_member(m, &mut member, &stop, &empty, &full_tx, &live)
            }));
        }
        MemberThreads {
            stop,
            full,
            returns,
            workers,
            live,
            current: None,
            next: 0,
            next_return: 0,
            delivered: 0,
        }
    }

    /// Members read.
    pub fn members(&self) -> usize {
        self.workers.len()
    }

    /// The next packet, waiting at most `timeout` for one.
    pub fn poll(&mut self, timeout: Duration) -> Result<Polled<'_>, Error> {
        loop {
            if let Some(batch) = &self.current
                && self.next < batch.packets.len()
            {
                break;
            }
            if let Some(done) = self.current.take() {
                self.give_back(done);
            }
            match self.full.recv_timeout(timeout) {
                Ok(batch) => {
                    self.current = Some(batch);
                    self.next = 0;
                }
                Err(RecvTimeoutError::Timeout) => return Ok(Polled::Idle),
                Err(RecvTimeoutError::Disconnected) => return Ok(Polled::Ended),
            }
        }
        let batch = self.current.as_ref().expect("a batch with packets left");
        let (meta, start, len) = batch.packets[self.next];
        self.next += 1;
        self.delivered += 1;
        Ok(Polled::Packet(Packet::new(
            &batch.bytes[start..start + len],
            meta,
        )))
    }

    /// Hands an emptied batch back to a member with room for it (batches are alike).
    fn give_back(&mut self, batch: Batch) {
        let n = self.returns.len();
        let mut batch = Some(batch);
        for k in 0..n {
            let i = (self.next_return + k) % n;
            match self.returns[i].try_send(batch.take().expect("a batch")) {
                Ok(()) => break,
                Err(TrySendError::Full(b) | TrySendError::Disconnected(b)) => batch = Some(b),
            }
        }
        self.next_return = (self.next_return + 1) % n.max(1);
    }

    /// Each member's counters as last published (after its latest block).
    pub fn member_stats(&self) -> Vec<RingStats> {
        self.live.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Stops the members, waits for their threads and returns their final counters, or
    /// the first error a member met. Packets not yet handed out are dropped.
    pub fn finish(mut self) -> Result<Vec<RingStats>, Error> {
        self.stop.stop();
        // Members blocked on a full channel or waiting for an empty batch see their
        // channels close.
        self.returns.clear();
        drop(self.current.take());
        let MemberThreads { full, workers, .. } = self;
        drop(full);
        let mut stats = Vec::with_capacity(workers.len());
        let mut failure = None;
        for w in workers {
            match w.join() {
                Ok(Ok(s)) => stats.push(s),
                Ok(Err(e)) => {
                    failure.get_or_insert(e);
                }
                Err(_) => {
                    failure.get_or_insert(Error::unsupported("a capture member's thread panicked"));
                }
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(stats),
        }
    }
}

/// One member's loop: ring block to batch to consumer, until stopped or nobody listens.
fn run_member(
    m: usize,
    member: &mut AfPacket,
    stop: &StopHandle,
    empty: &Receiver<Batch>,
    full: &SyncSender<Batch>,
    live: &Mutex<Vec<RingStats>>,
) -> Result<RingStats, Error> {
    while !stop.is_stopped() {
        let Some(block) = member.next_block(Some(MEMBER_TICK))? else {
            continue;
        };
        let Ok(mut batch) = empty.recv() else {
            break;
        };
        batch.bytes.clear();
        batch.packets.clear();
        for p in block.packets() {
            let start = batch.bytes.len();
            batch.bytes.extend_from_slice(p.data());
            batch.packets.push((*p.meta(), start, p.caplen()));
        }
        drop(block);
        let stats = member.ring_stats()?;
        if let Ok(mut l) = live.lock() {
            l[m] = stats;
        }
        if full.send(batch).is_err() {
            break;
        }
    }
    member.ring_stats()
}

impl CaptureSource for MemberThreads {
    /// The next packet, waiting for one until every member has stopped.
    fn next_packet(&mut self) -> Result<Option<Packet<'_>>, Error> {
        loop {
            // Polled again to end the borrow of an idle answer before looping.
            match self.poll(MEMBER_TICK)? {
                Polled::Idle => continue,
                Polled::Ended => return Ok(None),
                Polled::Packet(_) => break,
            }
        }
        let batch = self.current.as_ref().expect("the batch just lent from");
        let (meta, start, len) = batch.packets[self.next - 1];
        Ok(Some(Packet::new(&batch.bytes[start..start + len], meta)))
    }

    fn stats(&self) -> Stats {
        let mut total = RingStats::default();
        for s in self.member_stats() {
            total += s;
        }
        Stats {
            received: total.received,
            captured: self.delivered,
            dropped: total.dropped,
            filtered: total.filtered,
        }
    }
}
