//! Output options shared by the commands that write traces (`merge`, `split`).

use anyhow::Result;
use clap::Args;
use tracekit::{Compression, CreateOptions, Format, LinkType, Sink, SinkReport, TsResolution};

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
    /// Compression threads (default: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Cut packets to at most this many bytes (for `capture`: in the kernel).
    #[arg(short = 's', long)]
    pub snaplen: Option<u32>,
}

pub fn parse_compression(s: &str) -> Result<Compression, String> {
    Compression::from_name(s)
        .ok_or_else(|| format!("unknown codec '{s}' (known: gzip, bzip2, zstd, xz, lz4, none)"))
}

pub fn parse_format(s: &str) -> Result<Format, String> {
    Format::from_name(s).ok_or_else(|| format!("unknown format '{s}' (known: pcap, pcapng, erf)"))
}

impl OutputArgs {
    /// Options for an output fed by sources with these time stamp resolutions, snap
    /// length and link type: pcap keeps µs when every input is µs, ns otherwise, so that
    /// no time stamp changes.
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
            allow_precision_loss: false,
            snaplen: self.snaplen.or(snaplen),
            link_type,
            compression: self.compress,
            level: self.level,
            threads: self.threads,
        }
    }
}

/// Finishes an output, saying on stderr what the format could not carry; an error
/// means the output is incomplete (also said on stderr).
pub fn finish(command: &str, name: &str, sink: Sink) -> Result<SinkReport> {
    match sink.finish() {
        Ok(report) => {
            if let Some(lost) = report.loss_summary() {
                eprintln!("tracekit {command}: {name}: {lost}");
            }
            Ok(report)
        }
        Err(e) => Err(anyhow::Error::from(e).context(format!("{name} is incomplete"))),
    }
}
