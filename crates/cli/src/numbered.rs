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
