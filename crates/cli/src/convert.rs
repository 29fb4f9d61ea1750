//! `tracekit convert`: copy a trace into another format or time stamp resolution.

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use tracekit::{InputFiles, TsResolution};

use crate::Outcome;
use crate::output::{self, OutputArgs};
use crate::progress::Progress;

/// Copy a trace into another file, format or time stamp resolution.
///
/// The output format comes from the output name (`.pcap`, `.pcapng`) or `--format`; `-`
/// writes to standard output (pcap unless `--format`). Every packet is kept: pcap keeps
/// µs input in µs and writes everything else in ns unless `--ts-resolution` asks for
/// another; a time stamp finer than that (ERF's binary fractions, ns to µs) is rounded
/// down and counted, or refused with `--exact-timestamps`. pcapng picks a resolution per
/// interface that holds every time stamp. What the output format cannot carry (pcap:
/// direction, interfaces, comments; rounded time stamps) is reported in one line.
///
/// The output is never one of the inputs under another name (hard or symbolic link,
/// /dev/fd/N): that is refused before anything is written. A file is written under a
/// temporary name beside it and renamed into place when complete. When writing fails
/// (disk full), the file is cut after its last whole packet and the count is reported;
/// Ctrl-C or SIGTERM stops reading, completes the output with every packet so far and
/// exits with 130.
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

pub fn run(args: ConvertArgs) -> Result<Outcome> {
    let stop = crate::ctrl_c_stop();
    let inputs = InputFiles::new([&args.input]);
    inputs.check_output(&args.output)?;
    let mut source = crate::open_source(&args.input)?;
    if let Some(expr) = &args.filter {
        source = source.with_filter(expr)?;
    }
    let input_res = source.ts_resolution();
    let resolution = match args.ts_resolution {
        Some(Resolution::Us) => TsResolution::MICRO,
        Some(Resolution::Ns) => TsResolution::NANO,
        None if input_res == TsResolution::MICRO => TsResolution::MICRO,
        None => TsResolution::NANO,
    };
    let mut options = args.out.create_options(
        [resolution],
        source.snaplen().filter(|s| *s != 0),
        source.declared_link_type(),
    );
    options.ts_resolution = Some(resolution);
    let mut sink = tracekit::create_checked(&args.output, &options, &inputs)
        .with_context(|| format!("cannot create {}", args.output))?;
    let mut progress = Progress::new(&args.input, source.size_hint());
    // With a bar on the terminal, a loop that moves it; without, the reader's own loop.
    let copied = if progress.is_shown() {
        tracekit::copy_while(&mut source, &mut sink, |s| {
            progress.tick(|| s.position());
            !stop.is_stopped()
        })
    } else {
        tracekit::copy_until(&mut source, &mut sink, || !stop.is_stopped())
    };
    progress.finish();
    let exact = args.out.exact_timestamps;
    let (read_error, report) = match output::end_copy("convert", &args.output, copied, sink, exact)
    {
        Ok(ended) => ended,
        Err(outcome) => return Ok(outcome),
    };
    for note in source.notes() {
        eprintln!("tracekit convert: {}: note: {note}", args.input);
    }
    if let Some(lost) = report.loss_summary() {
        eprintln!("tracekit convert: {}: {lost}", args.output);
    }
    // Ctrl-C is how a live capture ends: not an interruption.
    if stop.is_stopped() && !(crate::is_live(&args.input)) {
        eprintln!(
            "tracekit convert: interrupted after {} packets: {} is a complete file holding them",
            report.packets, args.output
        );
        return Ok(Outcome::Interrupted);
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
