//! Output options and endings shared by the commands that write traces (`convert`,
//! `merge`, `split`, `capture`, `anon`).

use anyhow::Result;
use clap::Args;
use tracekit::{
    Compression, CreateOptions, ErrorKind, Format, LinkType, MAX_COMPRESS_THREADS, TsResolution,
};

/// How output traces are written.
#[derive(Args, Clone)]
pub struct OutputArgs {
    /// Output format: pcap, pcapng or erf (default: from the output name).
    #[arg(long, value_parser = parse_format)]
    pub format: Option<Format>,
    /// Compress the output: gzip, bzip2, zstd, xz, lz4 or none (default: from the output
    /// name's extension, .gz .bz2 .zst .xz .lz4).
    #[arg(long, value_parser = parse_compression)]
    pub compress: Option<Compression>,
    /// Compression level in the codec's own range: gzip 1-9 (default 6), bzip2 1-9 (9),
    /// zstd 1-22 (3), xz 0-9 (6), lz4 1.
    #[arg(long)]
    pub level: Option<i32>,
    /// Compression threads (default: one per core; at most 256).
    #[arg(long, default_value_t = 0, value_parser = parse_threads)]
    pub threads: usize,
    /// Cut packets to at most this many bytes (for `capture`: in the kernel); 0 keeps
    /// whole packets, as tcpdump's `-s 0`.
    #[arg(short = 's', long)]
    pub snaplen: Option<u32>,
    /// Refuse to round time stamps: stop at the first packet whose time stamp the output
    /// cannot hold exactly (by default such time stamps are rounded down to the output's
    /// resolution, ERF's binary fractions to ns for example, and counted).
    #[arg(long)]
    pub exact_timestamps: bool,
}

pub fn parse_compression(s: &str) -> Result<Compression, String> {
    Compression::from_name(s)
        .ok_or_else(|| format!("unknown codec '{s}' (known: gzip, bzip2, zstd, xz, lz4, none)"))
}

pub fn parse_format(s: &str) -> Result<Format, String> {
    Format::from_name(s).ok_or_else(|| format!("unknown format '{s}' (known: pcap, pcapng, erf)"))
}

fn parse_threads(s: &str) -> Result<usize, String> {
    let n: usize = s.parse().map_err(|e| format!("{e}"))?;
    if n > MAX_COMPRESS_THREADS {
        return Err(format!(
            "at most {MAX_COMPRESS_THREADS} compression threads (0: one per core)"
        ));
    }
    Ok(n)
}

impl OutputArgs {
    /// Options for an output fed by sources with these time stamp resolutions, snap
    /// length and link type: pcap keeps µs when every input is µs, ns otherwise.
    pub fn create_options(
        &self,
        resolutions: impl IntoIterator<Item = TsResolution>,
        snaplen: Option<u32>,
        link_type: Option<LinkType>,
    ) -> CreateOptions {
        let all_micro = resolutions.into_iter().all(|r| r == TsResolution::MICRO);
        CreateOptions {
            format: self.format,
            ts_resolution: Some(if all_micro {
                TsResolution::MICRO
            } else {
                TsResolution::NANO
            }),
            allow_precision_loss: !self.exact_timestamps,
            snaplen: self.snaplen.or(snaplen),
            link_type,
            compression: self.compress,
            level: self.level,
            threads: self.threads,
            in_place: false,
        }
    }
}

/// A write error, explained: with `--exact-timestamps`, a time stamp the output cannot
/// hold names the flag.
pub fn explain(e: &tracekit::Error, exact_timestamps: bool) -> String {
    let text = e.to_string();
    if exact_timestamps
        && matches!(e.kind(), ErrorKind::WouldLose(m) if m.starts_with("time stamp"))
    {
        let text = text.split(" (allow precision loss").next().unwrap_or(&text);
        return format!(
            "{text}: --exact-timestamps refuses to round it (without the flag it is rounded down and counted; pcapng keeps every time stamp exact)"
        );
    }
    text
}

/// Says on stderr why writing `name` stopped and what it holds now; see
/// [`tracekit::Sink::salvage`].
pub fn report_failure(command: &str, name: &str, message: &str, kept: tracekit::Kept) {
    eprintln!("tracekit {command}: {name}: {message}\ntracekit {command}: {name} {kept}");
}

/// How a copy into `sink` (named `name`) ended, for `command`: the read error that
/// stopped it (the output then holds every packet before it) and the finished sink's
/// report; or the outcome to exit with when writing failed (reported on stderr, the
/// output salvaged) or standard output was closed (a quiet success).
pub fn end_copy(
    command: &str,
    name: &str,
    copied: Result<u64, (tracekit::CopyError, u64)>,
    sink: tracekit::Sink,
    exact_timestamps: bool,
) -> Result<(Option<tracekit::Error>, tracekit::SinkReport), crate::Outcome> {
    let read_error = match copied {
        Ok(_) => None,
        Err((tracekit::CopyError::Read(e), _)) => Some(e),
        Err((tracekit::CopyError::Write(e), _)) => {
            let kept = sink.salvage();
            if e.is_broken_pipe() {
                return Err(crate::Outcome::Ok);
            }
            report_failure(command, name, &explain(&e, exact_timestamps), kept);
            return Err(crate::Outcome::Failed);
        }
    };
    match sink.finish_or_salvage() {
        Ok(report) => Ok((read_error, report)),
        Err(f) if f.error.is_broken_pipe() => Err(crate::Outcome::Ok),
        Err(f) => {
            report_failure(command, name, &explain(&f.error, exact_timestamps), f.kept);
            Err(crate::Outcome::Failed)
        }
    }
}
