//! `tracekit split`: cut a trace into parts (libtrace's tracesplit, `editcap -c/-i`).

use std::io::Write;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde::Serialize;
use tracekit::{Cut, Format, InputFiles, PartNames, PartWriter};

use crate::Outcome;
use crate::output::{self, OutputArgs};
use crate::progress::Progress;
use crate::timefmt;

/// Cut a trace into parts by packets, bytes or time, like libtrace's tracesplit and
/// editcap -c / -i.
///
/// Parts are named OUT_PREFIX's stem, a dash and a six-digit number from 000000, then
/// its extensions: `tracekit split --packets 1000 in.pcapng parts/p.pcap.gz` writes
/// parts/p-000000.pcap.gz, parts/p-000001.pcap.gz, ... (names sort in packet order).
/// The extensions choose format and compression; without a format extension the
/// input's format is kept. With `--seconds`, parts hold the packets of intervals aligned
/// to the trace clock (`--seconds 3600` cuts on the hour); intervals without packets
/// make no file. `--start`/`--end` keep the packets with start <= time < end.
///
/// No part is ever the input under another name (refused before it is written); each
/// part is written under a temporary name and renamed when complete. Ctrl-C completes
/// the part being written and exits with 130.
///
/// Example: `tracekit split --packets 100000 big.pcap.gz parts/big.pcap`
#[derive(Args)]
pub struct SplitArgs {
    /// Input trace (`-` for standard input).
    input: String,
    /// Output name prefix with extensions (`parts/p.pcapng.zst`).
    prefix: String,
    /// Start a new part every this many packets.
    #[arg(long, value_name = "N", group = "by")]
    packets: Option<u64>,
    /// Start a new part before a packet that would take the part's captured bytes past N.
    #[arg(long, value_name = "N", group = "by")]
    bytes: Option<u64>,
    /// Start a new part every this many seconds of trace time (fractions allowed).
    #[arg(long, value_name = "SECONDS", group = "by")]
    seconds: Option<f64>,
    /// Keep only packets at or after this time (seconds since the epoch or a UTC
    /// date-time such as 2024-04-10T15:39:00Z).
    #[arg(long, value_parser = timefmt::parse_time, value_name = "TIME")]
    start: Option<u64>,
    /// Keep only packets before this time.
    #[arg(long, value_parser = timefmt::parse_time, value_name = "TIME")]
    end: Option<u64>,
    /// Write at most this many parts, then stop.
    #[arg(long, value_name = "N")]
    max_files: Option<u64>,
    /// Keep only the packets matching this tcpdump filter expression.
    #[arg(short = 'f', long = "filter", value_name = "EXPR")]
    filter: Option<String>,
    /// Print the parts written as JSON (name, packets, bytes).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    output: OutputArgs,
}

#[derive(Serialize)]
struct Part {
    file: String,
    packets: u64,
    bytes: u64,
}

pub fn run(args: SplitArgs) -> Result<Outcome> {
    let cut = match (args.packets, args.bytes, args.seconds) {
        (Some(0), ..) | (_, Some(0), _) => bail!("--packets and --bytes must be at least 1"),
        (Some(n), ..) => Cut::Packets(n),
        (_, Some(n), _) => Cut::Bytes(n),
        (.., Some(s)) if !(s > 0.0 && s.is_finite()) => {
            bail!("--seconds must be a positive number")
        }
        (.., Some(s)) => Cut::Interval(((s * 1e9).round() as u64).max(1)),
        _ => Cut::Never,
    };
    if args.max_files == Some(0) {
        bail!("--max-files must be at least 1");
    }
    let stop = crate::ctrl_c_stop();
    let inputs = InputFiles::new([&args.input]);
    let mut source = crate::open_source(&args.input)?;
    if let Some(expr) = &args.filter {
        source = source.with_filter(expr)?;
    }
    let names = PartNames::new(&args.prefix, source.format().unwrap_or(Format::Pcap));
    let mut options = args.output.create_options(
        [source.ts_resolution()],
        source.snaplen().filter(|s| *s != 0),
        source.declared_link_type(),
    );
    options.format = Some(args.output.format.unwrap_or(names.format()));
    let mut writer = PartWriter::new(names, cut, options, inputs)?;
    if let Some(m) = args.max_files {
        writer = writer.with_max_parts(m);
    }
    let (start, end) = (args.start.unwrap_or(0), args.end.unwrap_or(u64::MAX));

    let mut progress = Progress::new(&args.input, source.size_hint());
    let mut limit_reached = false;
    let mut failure = None;
    let read_error = loop {
        progress.tick(|| source.position());
        if stop.is_stopped() {
            break None;
        }
        let ts = match source.next_packet() {
            Ok(Some(p)) => p.ts().as_unix_nanos(),
            Ok(None) => break None,
            Err(e) => break Some(e),
        };
        if ts < start || ts >= end {
            continue;
        }
        match writer.write_current(&source) {
            Ok(true) => {}
            Ok(false) => {
                limit_reached = true;
                break None;
            }
            Err(f) => {
                failure = Some(f);
                break None;
            }
        }
    };
    progress.finish();
    let mut done = writer.finish();
    let failure = failure.or(done.failure.take());
    for part in done.parts.iter() {
        if let Some(lost) = &part.lost {
            eprintln!("tracekit split: {}: {lost}", part.file);
        }
    }
    let failed = failure.is_some();
    if let Some(f) = failure {
        let Some(kept) = f.kept else {
            return Err(anyhow::Error::from(f.error)).context(format!("cannot create {}", f.file));
        };
        let message = output::explain(&f.error, args.output.exact_timestamps);
        output::report_failure("split", &f.file, &message, kept);
    }
    let parts: Vec<Part> = done
        .parts
        .iter()
        .map(|p| Part {
            file: p.file.clone(),
            packets: p.packets,
            bytes: p.bytes,
        })
        .collect();
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &parts)?;
        writeln!(out)?;
    } else {
        for p in &parts {
            writeln!(out, "{}\t{} packets\t{} bytes", p.file, p.packets, p.bytes)?;
        }
    }
    out.flush()?;
    drop(out);
    if failed {
        return Ok(Outcome::Failed);
    }
    // Ctrl-C is how a live capture ends: not an interruption.
    if stop.is_stopped() && !(crate::is_live(&args.input)) {
        eprintln!(
            "tracekit split: interrupted after {} packets: the parts above are complete files holding them",
            done.packets()
        );
        return Ok(Outcome::Interrupted);
    }
    if limit_reached {
        eprintln!(
            "tracekit split: stopped after {} parts (--max-files)",
            parts.len()
        );
    }
    if let Some(e) = read_error {
        eprintln!(
            "tracekit split: {e}\ntracekit split: the parts above are complete files holding the {} packets before the damage",
            done.packets()
        );
        return Ok(Outcome::Failed);
    }
    Ok(Outcome::Ok)
}
