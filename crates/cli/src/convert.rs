//! `tracekit convert`: copy a trace into another format or time stamp resolution.

use std::path::Path;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use tracekit::{CopyError, CreateOptions, TsResolution};

use crate::Outcome;
use crate::output::OutputArgs;
use crate::progress::Progress;

/// Copy a trace into another file, format or time stamp resolution.
///
/// The output format comes from the output name (`.pcap`, `.pcapng`) or `--format`; `-`
/// writes to standard output (pcap unless `--format`). Time stamps stay exact: pcap keeps
/// the input's resolution unless `--ts-resolution` asks for another (asking for a coarser
/// one, ns to µs, is the consent to round, and the packets that lost digits are counted);
/// pcapng picks a resolution per interface that holds every time stamp. What the output
/// format cannot carry (pcap: direction, interfaces, comments) is reported in one line.
///
/// The output is compressed when its name ends in .gz, .bz2, .zst, .xz or .lz4 (or with
/// `--compress`), on all cores; gzip output is multi-member with a BGZF-style size field,
/// readable by gzip, zcat and pigz, and by tracekit in parallel.
///
/// Example: `tracekit convert capture.pcapng capture.pcap.gz`
#[derive(Args)]
pub struct ConvertArgs {
    /// Input trace (`-` for standard input).
    input: String,
    /// Output trace (`-` for standard output).
    output: String,
    /// Copy only the packets matching this tcpdump filter expression.
    #[arg(short = 'f', long = "filter", value_name = "EXPR")]
    filter: Option<String>,
    /// Output time stamp resolution (default: the input's).
    #[arg(long, value_enum)]
    ts_resolution: Option<Resolution>,
    #[command(flatten)]
    out: OutputArgs,
}

#[derive(Clone, Copy, ValueEnum)]
enum Resolution {
    /// Microseconds.
    Us,
    /// Nanoseconds.
    Ns,
}

/// Refuses to write over the input.
pub fn check_not_same_file(input: &str, output: &str) -> Result<()> {
    if input == "-" || output == "-" || !Path::new(output).exists() {
        return Ok(());
    }
    let a = std::fs::canonicalize(input);
    let b = std::fs::canonicalize(output);
    if let (Ok(a), Ok(b)) = (a, b)
        && a == b
    {
        bail!("the output {output} is the input file: refusing to overwrite it");
    }
    Ok(())
}

pub fn run(args: ConvertArgs) -> Result<Outcome> {
    check_not_same_file(&args.input, &args.output)?;
    let mut source = crate::open_source(&args.input)?;
    if let Some(expr) = &args.filter {
        source = source.with_filter(expr)?;
    }
    let input_res = source.ts_resolution();
    let (resolution, allow_loss) = match args.ts_resolution {
        Some(Resolution::Us) => (TsResolution::MICRO, true),
        Some(Resolution::Ns) => (TsResolution::NANO, true),
        None if input_res == TsResolution::MICRO => (TsResolution::MICRO, false),
        None => (TsResolution::NANO, false),
    };
    let options = CreateOptions {
        format: args.out.format,
        ts_resolution: Some(resolution),
        allow_precision_loss: allow_loss,
        snaplen: args.out.snaplen.or(source.snaplen().filter(|s| *s != 0)),
        link_type: source.declared_link_type(),
        compression: args.out.compress,
        level: args.out.level,
        threads: args.out.threads,
    };
    let mut sink = tracekit::create(&args.output, &options)
        .with_context(|| format!("cannot create {}", args.output))?;
    let mut progress = Progress::new(&args.input, source.size_hint());
    let copied = tracekit::copy(&mut source, &mut sink, |s| progress.tick(|| s.position()));
    progress.finish();
    let read_error = match copied {
        Ok(_) => None,
        Err((CopyError::Read(e), _)) => Some(e),
        Err((CopyError::Write(e), written)) => {
            if e.is_broken_pipe() {
                return Ok(Outcome::Ok);
            }
            eprintln!(
                "tracekit convert: {e}\ntracekit convert: {} is incomplete: it holds the first {written} packets",
                args.output
            );
            return Ok(Outcome::Failed);
        }
    };
    let report = match sink.finish() {
        Ok(r) => r,
        Err(e) if e.is_broken_pipe() => return Ok(Outcome::Ok),
        Err(e) => {
            eprintln!(
                "tracekit convert: {e}\ntracekit convert: {} is incomplete",
                args.output
            );
            return Ok(Outcome::Failed);
        }
    };
    for note in source.notes() {
        eprintln!("tracekit convert: {}: note: {note}", args.input);
    }
    if let Some(lost) = report.loss_summary() {
        eprintln!("tracekit convert: {}: {lost}", args.output);
    }
    if let Some(e) = read_error {
        eprintln!(
            "tracekit convert: {e}\ntracekit convert: {} is a complete file holding the {} packets before the damage",
            args.output, report.packets
        );
        return Ok(Outcome::Failed);
    }
    Ok(Outcome::Ok)
}
