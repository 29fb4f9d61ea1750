//! `tracekit merge`: merge traces by time stamp or concatenate them (mergecap,
//! libtrace's tracemerge).

use std::io::Write;

use anyhow::{Context, Result};
use clap::Args;
use serde::Serialize;
use tracekit::merge::{Dedup, InterfaceMode, Merge, MergeOptions};
use tracekit::{InputFiles, InterfaceDescriber, OpenOptions, ReadMode, Source};

use crate::Outcome;
use crate::output::{self, OutputArgs};
use crate::progress::Progress;

/// Merge traces into one, in time stamp order, like mergecap and libtrace's tracemerge.
///
/// The merge streams: memory depends on the number of inputs, not their size. Packets
/// with equal time stamps keep the order of the inputs on the command line. Inputs may
/// be of any format and compression, and each may be read in parallel with the others
/// by the decompressor. The output format comes from the name (or `--format`): pcapng
/// keeps every input's interfaces; pcap needs one link type. When the inputs describe
/// the same interfaces, interface numbers are kept (as mergecap does); otherwise, or with
/// `--unique-interfaces`, each input interface becomes an output interface of its own.
///
/// An input that is damaged ends at its last good packet; the merge goes on with the
/// others, the error is reported and the exit status is 1. Time stamps the output
/// cannot hold exactly are rounded and counted (`--exact-timestamps` refuses them). The
/// output is never one of the inputs (refused before writing), is written under a
/// temporary name and renamed when complete; Ctrl-C completes it with the packets so
/// far and exits with 130.
///
/// Example: `tracekit merge -w all.pcapng.gz east.pcap west.pcapng.zst`
#[derive(Args)]
pub struct MergeArgs {
    /// Input traces.
    #[arg(required = true)]
    inputs: Vec<String>,
    /// Output trace (`-` for standard output).
    #[arg(short = 'w', long = "write", value_name = "OUT")]
    output_file: String,
    /// Concatenate the inputs in the order given instead of merging by time (mergecap -a).
    #[arg(short = 'a', long)]
    append: bool,
    /// Give every input interface an output interface of its own, so that each packet
    /// still tells which input it came from (pcapng; ERF keeps 4 interfaces).
    #[arg(long)]
    unique_interfaces: bool,
    /// Drop duplicate packets: identical captured bytes within the previous
    /// `--dedup-window` packets of the merged stream (editcap -d).
    #[arg(long)]
    dedup: bool,
    /// How many previous packets `--dedup` compares with (at most 1048576).
    #[arg(long, default_value_t = Dedup::DEFAULT_WINDOW, requires = "dedup", value_parser = parse_window)]
    dedup_window: usize,
    /// Keep only the packets matching this tcpdump filter expression.
    #[arg(short = 'f', long = "filter", value_name = "EXPR")]
    filter: Option<String>,
    /// Print a JSON summary: packets per input, written, duplicates dropped.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    output: OutputArgs,
}

fn parse_window(s: &str) -> Result<usize, String> {
    let n: usize = s.parse().map_err(|e| format!("{e}"))?;
    if n > Dedup::MAX_WINDOW {
        return Err(format!("at most {} packets", Dedup::MAX_WINDOW));
    }
    Ok(n)
}

/// With more inputs than this, regular files are mapped rather than read into a
/// 256 KiB block each, so that a merge of hundreds of files stays small.
const MAP_ABOVE_INPUTS: usize = 16;

#[derive(Serialize)]
struct InputJson<'a> {
    file: &'a str,
    packets: u64,
    error: Option<String>,
}

#[derive(Serialize)]
struct MergeJson<'a> {
    output: &'a str,
    written: u64,
    duplicates: u64,
    bytes: u64,
    inputs: Vec<InputJson<'a>>,
}

pub fn run(args: MergeArgs) -> Result<Outcome> {
    let stop = crate::ctrl_c_stop();
    let files = InputFiles::new(&args.inputs);
    files.check_output(&args.output_file)?;
    let open_options = OpenOptions {
        read_mode: if args.inputs.len() > MAP_ABOVE_INPUTS {
            ReadMode::Mmap
        } else {
            ReadMode::Auto
        },
        ..OpenOptions::default()
    };
    let mut sources: Vec<Source> = Vec::with_capacity(args.inputs.len());
    for input in &args.inputs {
        let mut s = crate::open_source_with(input, &open_options)?;
        if let Some(expr) = &args.filter {
            s = s.with_filter(expr)?;
        }
        sources.push(s);
    }
    let options = args.output.create_options(
        sources.iter().map(Source::ts_resolution),
        sources
            .iter()
            .filter_map(|s| s.snaplen().filter(|s| *s != 0))
            .max(),
        sources.first().and_then(Source::declared_link_type),
    );
    let mut merge = Merge::new(
        sources,
        MergeOptions {
            append: args.append,
            interfaces: if args.unique_interfaces {
                InterfaceMode::PerInput
            } else {
                InterfaceMode::Auto
            },
        },
    );
    let mut sink = tracekit::create_checked(&args.output_file, &options, &files)
        .with_context(|| format!("cannot create {}", args.output_file))?;
    let mut dedup = args.dedup.then(|| Dedup::new(args.dedup_window));
    let mut describer = InterfaceDescriber::default();
    let mut progress = Progress::new("merge", merge.size_hint());
    let mut written = 0u64;
    let write_error = loop {
        progress.tick(|| merge.position());
        if stop.is_stopped() {
            break None;
        }
        let Some((_, packet)) = merge.next_packet() else {
            break None;
        };
        if let Some(d) = dedup.as_mut()
            && d.is_duplicate(&packet)
        {
            continue;
        }
        let id = packet.meta().interface;
        let wrote = if describer.is_new(id) {
            // The packet borrows the merge; describe from a copy of its metadata, then
            // write the packet itself (it stays lent until the next call).
            let packet = packet.to_owned();
            describer
                .describe(&mut sink, id, |i| merge.interface_info(i))
                .and_then(|()| sink.write_packet(&packet.as_packet()))
        } else {
            sink.write_packet(&packet)
        };
        if let Err(e) = wrote {
            break Some(e);
        }
        written += 1;
    };
    progress.finish();
    if let Some(e) = write_error {
        let kept = sink.salvage();
        if e.is_broken_pipe() {
            return Ok(Outcome::Ok);
        }
        let message = output::explain(&e, args.output.exact_timestamps);
        output::report_failure("merge", &args.output_file, &message, kept);
        return Ok(Outcome::Failed);
    }
    let report = match sink.finish_or_salvage() {
        Ok(report) => report,
        Err(f) if f.error.is_broken_pipe() => return Ok(Outcome::Ok),
        Err(f) => {
            let message = output::explain(&f.error, args.output.exact_timestamps);
            output::report_failure("merge", &args.output_file, &message, f.kept);
            return Ok(Outcome::Failed);
        }
    };
    if let Some(lost) = report.loss_summary() {
        eprintln!("tracekit merge: {}: {lost}", args.output_file);
    }
    // Ctrl-C is how a live capture ends: not an interruption.
    if stop.is_stopped() && !(args.inputs.iter().any(|i| crate::is_live(i))) {
        eprintln!(
            "tracekit merge: interrupted after {} packets: {} is a complete file holding them",
            report.packets, args.output_file
        );
        return Ok(Outcome::Interrupted);
    }
    let mut failed = false;
    for (i, e) in merge.errors() {
        eprintln!(
            "tracekit merge: {e}\ntracekit merge: {}: its {} packets before the damage were merged",
            args.inputs[i],
            merge.packets_read(i)
        );
        failed = true;
    }
    if args.json {
        let errors: Vec<Option<String>> = (0..args.inputs.len())
            .map(|i| {
                merge
                    .errors()
                    .find(|(j, _)| *j == i)
                    .map(|(_, e)| e.to_string())
            })
            .collect();
        let record = MergeJson {
            output: &args.output_file,
            written,
            duplicates: dedup.map_or(0, |d| d.duplicates),
            bytes: report.bytes,
            inputs: args
                .inputs
                .iter()
                .zip(errors)
                .enumerate()
                .map(|(i, (file, error))| InputJson {
                    file,
                    packets: merge.packets_read(i),
                    error,
                })
                .collect(),
        };
        let mut out = std::io::stdout().lock();
        serde_json::to_writer(&mut out, &record)?;
        writeln!(out)?;
        out.flush()?;
    }
    Ok(if failed { Outcome::Failed } else { Outcome::Ok })
}
