//! The read loop shared by the per-packet commands (`fields`, `dump`, `stats`, `ports`,
//! `rtstats`): every packet of a file numbered from 1, as in the file, with an optional
//! tcpdump filter and a progress bar on a terminal.

use anyhow::{Context, Result};
use tracekit::{CaptureSource, Filter, Packet};

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
    mut defrag: Option<&mut tracekit::flow::Defragmenter>,
    mut f: impl FnMut(u64, &Packet<'_>) -> Result<bool>,
) -> Result<Ended> {
    let mut filter = filter.map(compile).transpose()?;
    let mut source = crate::open_source(file)?;
    let mut progress = Progress::new(file, source.size_hint());
    let mut read = 0u64;
    let error = loop {
        progress.tick(|| source.position());
        let packet = match source.next_packet() {
            Ok(Some(p)) => p,
            Ok(None) => break None,
            Err(e) => break Some(e),
        };
        read += 1;
        let packet = match defrag.as_deref_mut() {
            Some(d) => match d.add(&packet).packet() {
                Some(p) => p,
                None => continue,
            },
            None => packet,
        };
        if let Some(flt) = filter.as_mut()
            && !flt.matches(&packet)?
        {
            continue;
        }
        if !f(read, &packet)? {
            break None;
        }
    };
    progress.finish();
    Ok(Ended { read, error })
}

/// A defragmenter for `--reassemble` (tracekit's defaults: BSD overlap policy, 60 s
/// timeout, 4,096 datagrams and 32 MiB held at most).
pub fn defragmenter(reassemble: bool) -> Option<tracekit::flow::Defragmenter> {
    reassemble.then(|| tracekit::flow::Defragmenter::new(Default::default()))
}

/// Whether `--threads` asks for a parallel run: anything but 1 (everything on one
/// thread); 0 is one worker per core but the reader's.
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
    let mut source = crate::open_source(file)?;
    if let Some(expr) = filter {
        source = source
            .with_filter(expr)
            .with_context(|| format!("filter '{expr}'"))?;
    }
    let done = tracekit::parallel::Parallel::new(threads)
        .stop_flag(crate::ctrl_c_stop().flag())
        .run(&mut source, make, |_, _| {})?;
    let ended = Ended {
        read: done.stats.packets,
        error: done.error,
    };
    Ok((done.workers, ended, done.stats))
}
