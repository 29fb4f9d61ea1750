//! The read loop shared by the per-packet commands (`fields`, `dump`, `stats`, `ports`,
//! `rtstats`): every packet of a file numbered from 1, as in the file, with an optional
//! tcpdump filter and a progress bar on a terminal.

use anyhow::{Context, Result};
use tracekit::{Filter, Packet};

use crate::progress::Progress;

/// How a numbered read ended.
pub struct Ended {
    /// Packets read (kept or not).
    pub read: u64,
    /// The damage that stopped the read, if any.
    pub error: Option<tracekit::Error>,
}

/// Compiles a `-f` expression (checked once, before any packet is read).
pub fn compile(expr: &str) -> Result<Filter> {
    Filter::new(expr, tracekit::MAX_SNAPLEN).with_context(|| format!("filter '{expr}'"))
}

/// Compiles every `-f` expression of a command.
pub fn compile_all(exprs: &[String]) -> Result<Vec<Filter>> {
    exprs.iter().map(|e| compile(e)).collect()
}

/// Hands each packet of `file` that `filter` keeps to `f` with its number in the file;
/// `f` returns `false` to stop early.
pub fn each_packet(
    file: &str,
    filter: Option<&str>,
    f: impl FnMut(u64, &Packet<'_>) -> Result<bool>,
) -> Result<Ended> {
    each_packet_joined(file, filter, None, f)
}

/// [`each_packet`], with IP fragments joined first when `defrag` is given (`--reassemble`):
/// a fragment is held until its datagram is complete, then the whole datagram is handed
/// on under the number of the fragment that completed it; fragments that are held, or
/// dropped with their datagram, are not handed on. The filter sees whole datagrams.
pub fn each_packet_joined(
    file: &str,
    filter: Option<&str>,
    defrag: Option<&mut tracekit::flow::Defragmenter>,
    f: impl FnMut(u64, &Packet<'_>) -> Result<bool>,
) -> Result<Ended> {
    each_packet_joined_seen(file, filter, defrag, |_| {}, f)
}

/// [`each_packet_joined`], with `seen` called for every packet read first, before it
/// is joined or filtered (a flow table's trace time moves on with every packet).
pub fn each_packet_joined_seen(
    file: &str,
    filter: Option<&str>,
    mut defrag: Option<&mut tracekit::flow::Defragmenter>,
    mut seen: impl FnMut(&Packet<'_>),
    mut f: impl FnMut(u64, &Packet<'_>) -> Result<bool>,
) -> Result<Ended> {
    let mut filter = filter.map(compile).transpose()?;
    let mut source = crate::open_source(file)?;
    let mut progress = Progress::new(file, source.size_hint());
    let mut read = 0u64;
    // One packet read: joined, filtered, handed on; `false` to stop.
    let mut handle = |read: u64, packet: &Packet<'_>| -> Result<bool> {
        seen(packet);
        let joined;
        let packet = match defrag.as_deref_mut() {
            Some(d) => match d.add(packet).packet() {
                Some(p) => {
                    joined = p;
                    &joined
                }
                None => return Ok(true),
            },
            None => packet,
        };
        if let Some(flt) = filter.as_mut()
            && !flt.matches(packet)?
        {
            return Ok(true);
        }
        f(read, packet)
    };
    let error = read_all(
        &mut source,
        &mut progress,
        #[inline(always)]
        |packet| {
            read += 1;
            handle(read, packet)
        },
    )?;
    progress.finish();
    Ok(Ended { read, error })
}

/// Hands every packet of `source` to `f` until the end, the first damage (returned) or
/// `f`'s `false` or error. With a bar on the terminal: a `next_packet` loop that moves the
/// bar; without: the reader's own loop (a third of the instructions a packet of
/// `next_packet`'s, on 96-byte records).
pub fn read_all(
    source: &mut tracekit::Source,
    progress: &mut Progress,
    mut f: impl FnMut(&Packet<'_>) -> Result<bool>,
) -> Result<Option<tracekit::Error>> {
    if progress.is_shown() {
        loop {
            progress.tick(|| source.position());
            let packet = match source.next_packet() {
                Ok(Some(p)) => p,
                Ok(None) => return Ok(None),
                Err(e) => return Ok(Some(e)),
            };
            if !f(&packet)? {
                return Ok(None);
            }
        }
    }
    let run = source.try_for_each(
        #[inline(always)]
        |p| match f(p) {
            Ok(true) => Ok(()),
            Ok(false) => Err(Stop::Done),
            Err(e) => Err(Stop::Failed(e)),
        },
    );
    match run {
        Ok(_) | Err(Stop::Done) => Ok(None),
        Err(Stop::Source(e)) => Ok(Some(e)),
        Err(Stop::Failed(e)) => Err(e),
    }
}

/// Why the reader's own loop stopped early.
enum Stop {
    /// The callback asked to stop.
    Done,
    /// The callback (or the filter) failed.
    Failed(anyhow::Error),
    /// The source is damaged: every packet before was handed on.
    Source(tracekit::Error),
}

impl From<tracekit::Error> for Stop {
    fn from(e: tracekit::Error) -> Stop {
        Stop::Source(e)
    }
}

/// A defragmenter for `--reassemble` (tracekit's defaults: BSD overlap policy, 60 s
/// timeout, 4,096 datagrams and 32 MiB held at most).
pub fn defragmenter(reassemble: bool) -> Option<tracekit::flow::Defragmenter> {
    reassemble.then(|| tracekit::flow::Defragmenter::new(Default::default()))
}

/// Whether `--threads` asks for a parallel run: anything but 1 (everything on one
/// thread); 0 is one per core (the reader runs one of the workers).
pub fn is_parallel(threads: usize) -> bool {
    threads != 1
}

/// Runs one `make(i)` worker per thread over the packets of `file` that `filter` keeps
/// (see `tracekit::parallel`); returns the workers, how the read ended (`read`: the
/// packets handed to workers) and the run's figures. Ctrl-C stops reading.
pub fn parallel<W: tracekit::parallel::Worker>(
    file: &str,
    filter: Option<&str>,
    threads: usize,
    make: impl Fn(usize) -> W + Sync,
) -> Result<(Vec<W>, Ended, tracekit::parallel::RunStats)> {
    if crate::is_live(file) {
        return run_live(file, filter, threads, make);
    }
    // Counts that add up: the workers take turns at the input, each reading and
    // processing its own buffers.
    run_parallel(
        file,
        filter,
        tracekit::parallel::Parallel::new(threads)
            .distribution(tracekit::parallel::Distribution::Blocks),
        make,
        |_, _| {},
    )
}

/// [`parallel`] with a run of the caller's making (ticks, order) and a combiner for
/// what the workers emit.
pub fn run_parallel<W: tracekit::parallel::Worker>(
    file: &str,
    filter: Option<&str>,
    run: tracekit::parallel::Parallel,
    make: impl Fn(usize) -> W + Sync,
    combine: impl FnMut(u64, W::Item),
) -> Result<(Vec<W>, Ended, tracekit::parallel::RunStats)> {
    let stop = crate::ctrl_c_stop();
    let mut source = with_filter(crate::open_source(file)?, filter)?;
    let done = run.stop_flag(stop.flag()).run(&mut source, make, combine)?;
    Ok(ended_run(done))
}

/// `source` with the `-f` expression, if any.
fn with_filter(source: tracekit::Source, filter: Option<&str>) -> Result<tracekit::Source> {
    match filter {
        Some(expr) => source
            .with_filter(expr)
            .with_context(|| format!("filter '{expr}'")),
        None => Ok(source),
    }
}

/// A live interface on `threads` workers: one fan-out member each (0: one per core; no
/// reader thread), the kernel spreading the packets by flow.
fn run_live<W: tracekit::parallel::Worker>(
    uri: &str,
    filter: Option<&str>,
    threads: usize,
    make: impl Fn(usize) -> W + Sync,
) -> Result<(Vec<W>, Ended, tracekit::parallel::RunStats)> {
    let n = if threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        threads
    };
    let stop = crate::ctrl_c_stop();
    let mut members = Vec::with_capacity(n);
    for mut m in tracekit::open_members(uri, n)? {
        if let Some(live) = m.as_live_mut() {
            live.set_stop_handle(stop.clone());
        }
        members.push(with_filter(m, filter)?);
    }
    let done = tracekit::parallel::Parallel::new(n)
        .stop_flag(stop.flag())
        .run_members(members, make, |_, _| {})?;
    Ok(ended_run(done))
}

/// The workers, how the read ended and the figures of a finished run.
pub fn ended_run<W>(
    done: tracekit::parallel::Finished<W>,
) -> (Vec<W>, Ended, tracekit::parallel::RunStats) {
    // A worker's error stops the run at its packet: the ones before it count.
    let read = done
        .error
        .as_ref()
        .and_then(|e| e.packet())
        .map_or(done.stats.packets, |p| {
            done.stats.packets.min(p.saturating_sub(1))
        });
    let ended = Ended {
        read,
        error: done.error,
    };
    (done.workers, ended, done.stats)
}

/// A worker of [`ordered_text`]: formats its packets into strings recycled by the
/// writer.
struct TextWorker<'a, F> {
    index: usize,
    filter: Option<Filter>,
    format: &'a F,
    spare: std::sync::mpsc::Receiver<String>,
}

impl<F> tracekit::parallel::Worker for TextWorker<'_, F>
where
    F: Fn(u64, &Packet<'_>, &mut String) + Sync,
{
    type Item = (usize, String);

    fn packet(
        &mut self,
        packet: &Packet<'_>,
        out: &mut tracekit::parallel::Emit<'_, (usize, String)>,
    ) -> Result<(), tracekit::Error> {
        if let Some(f) = self.filter.as_mut()
            && !f.matches(packet)?
        {
            return Ok(());
        }
        let mut text = self.spare.try_recv().unwrap_or_default();
        text.clear();
        (self.format)(out.seq() + 1, packet, &mut text);
        out.emit((self.index, text));
        Ok(())
    }
}

/// Strings in flight back to each worker, at most.
const SPARE_TEXTS: usize = 4096;

/// `fields`/`dump --threads`: `format(number, packet, text)` runs on `threads` workers
/// for every packet of `file` that `filter` keeps (numbers are the file's, from 1), and
/// the texts are written to `out` in file order, at most `limit` of them. Strings go back
/// to the workers that made them: nothing is allocated per packet once they circulate.
/// Returns how the read ended and the texts written.
pub fn ordered_text<F>(
    file: &str,
    filter: Option<&str>,
    threads: usize,
    limit: Option<u64>,
    format: F,
    out: &mut impl std::io::Write,
) -> Result<(Ended, u64)>
where
    F: Fn(u64, &Packet<'_>, &mut String) + Sync,
{
    let filter = filter.map(compile).transpose()?;
    let run = tracekit::parallel::Parallel::new(threads)
        .distribution(tracekit::parallel::Distribution::Blocks)
        .order(tracekit::parallel::Order::Stream);
    let n = run.workers();
    let (back, spares): (Vec<_>, Vec<_>) = (0..n)
        .map(|_| std::sync::mpsc::sync_channel::<String>(SPARE_TEXTS))
        .unzip();
    let spares = std::sync::Mutex::new(spares.into_iter().map(Some).collect::<Vec<_>>());
    let stop = crate::ctrl_c_stop();
    let mut written = 0u64;
    let mut error = None;
    let (_, ended, _) = run_parallel(
        file,
        None,
        run,
        |index| TextWorker {
            index,
            filter: filter.clone(),
            format: &format,
            spare: spares.lock().expect("spares")[index]
                .take()
                .expect("one worker per index"),
        },
        |_, (worker, text)| {
            if error.is_none() && limit.is_none_or(|l| written < l) {
                match out.write_all(text.as_bytes()) {
                    Ok(()) => written += 1,
                    Err(e) => error = Some(e),
                }
                if error.is_some() || limit.is_some_and(|l| written >= l) {
                    // Enough: stop reading (what is in flight is dropped).
                    stop.stop();
                }
            }
            let _ = back[worker].try_send(text);
        },
    )?;
    if let Some(e) = error {
        return Err(e.into());
    }
    let mut ended = ended;
    if limit.is_some_and(|l| written >= l) {
        // Done before whatever the reader met after.
        ended.error = None;
    }
    Ok((ended, written))
}
