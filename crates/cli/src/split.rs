//! `tracekit split`: cut a trace into parts (libtrace's tracesplit, `editcap -c/-i`).

use std::io::Write;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde::Serialize;
use tracekit::{CaptureSource, Compression, Format, InputFiles, InterfaceDescriber, Sink};

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

/// Which part a packet belongs to.
enum By {
    Packets(u64),
    Bytes(u64),
    Interval(u64),
    Nothing,
}

#[derive(Serialize)]
struct Part {
    file: String,
    packets: u64,
    bytes: u64,
}

/// (stem, extensions) of an output prefix, and its format.
pub fn name_parts(prefix: &str, fallback: Format) -> (String, String, Format) {
    let (dir, file) = match prefix.rfind('/') {
        Some(i) => prefix.split_at(i + 1),
        None => ("", prefix),
    };
    let mut stem = file;
    let mut comp_ext = "";
    if Compression::from_file_name(stem) != Compression::None
        && let Some(i) = stem.rfind('.')
    {
        comp_ext = &stem[i..];
        stem = &stem[..i];
    }
    let (stem, ext, format) = match Format::from_file_name(stem) {
        Some(f) => {
            let i = stem.rfind('.').unwrap_or(stem.len());
            (&stem[..i], stem[i..].to_string(), f)
        }
        None => (stem, format!(".{}", fallback.name()), fallback),
    };
    (format!("{dir}{stem}"), format!("{ext}{comp_ext}"), format)
}

pub fn run(args: SplitArgs) -> Result<Outcome> {
    let by = match (args.packets, args.bytes, args.seconds) {
        (Some(0), ..) | (_, Some(0), _) => bail!("--packets and --bytes must be at least 1"),
        (Some(n), ..) => By::Packets(n),
        (_, Some(n), _) => By::Bytes(n),
        (.., Some(s)) if !(s > 0.0 && s.is_finite()) => {
            bail!("--seconds must be a positive number")
        }
        (.., Some(s)) => By::Interval(((s * 1e9).round() as u64).max(1)),
        _ => By::Nothing,
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
    let (stem, ext, format) = name_parts(&args.prefix, source.format().unwrap_or(Format::Pcap));
    check_parts(&inputs, &stem, &ext)?;
    let mut options = args.output.create_options(
        [source.ts_resolution()],
        source.snaplen().filter(|s| *s != 0),
        source.declared_link_type(),
    );
    options.format = Some(args.output.format.unwrap_or(format));
    let (start, end) = (args.start.unwrap_or(0), args.end.unwrap_or(u64::MAX));

    let mut parts: Vec<Part> = Vec::new();
    let mut sink: Option<Sink> = None;
    let mut describer = InterfaceDescriber::default();
    // The current part's key (interval number) and fill.
    let (mut key, mut in_part, mut part_bytes) = (0u64, 0u64, 0u64);
    let mut progress = Progress::new(&args.input, source.size_hint());
    let mut limit_reached = false;
    let mut write_error = None;
    let mut part_failed = false;
    let read_error = loop {
        progress.tick(|| source.position());
        if stop.is_stopped() {
            break None;
        }
        let packet = match source.next_packet() {
            Ok(Some(p)) => p,
            Ok(None) => break None,
            Err(e) => break Some(e),
        };
        let ts = packet.ts().as_unix_nanos();
        if ts < start || ts >= end {
            continue;
        }
        let caplen = packet.caplen() as u64;
        let id = packet.meta().interface;
        let new_part = match (&sink, &by) {
            (None, _) => true,
            (Some(_), By::Packets(n)) => in_part >= *n,
            (Some(_), By::Bytes(n)) => part_bytes + caplen > *n,
            (Some(_), By::Interval(len)) => ts / len != key,
            (Some(_), By::Nothing) => false,
        };
        if new_part {
            if !close_part(&mut sink, &mut parts, &stem, &ext) {
                part_failed = true;
                break None;
            }
            if args.max_files.is_some_and(|m| parts.len() as u64 >= m) {
                limit_reached = true;
                break None;
            }
            let name = part_name(&stem, &ext, parts.len());
            sink = Some(
                tracekit::create_checked(&name, &options, &inputs)
                    .with_context(|| format!("cannot create {name}"))?,
            );
            describer.reset();
            (in_part, part_bytes) = (0, 0);
            if let By::Interval(len) = by {
                key = ts / len;
            }
        }
        let Some(out) = sink.as_mut() else {
            continue;
        };
        let written = if describer.is_new(id) {
            describer
                .describe(out, id, |i| source.interface_info(i))
                .and_then(|()| match source.current_packet() {
                    Some(p) => out.write_packet(&p),
                    None => Ok(()),
                })
        } else {
            out.write_packet(&packet)
        };
        if let Err(e) = written {
            write_error = Some(e);
            break None;
        }
        in_part += 1;
        part_bytes += caplen;
    };
    progress.finish();
    let failed_part = match write_error {
        Some(e) => {
            let name = part_name(&stem, &ext, parts.len());
            if let Some(kept) = sink.take().map(Sink::salvage) {
                let message = output::explain(&e, args.output.exact_timestamps);
                output::report_failure("split", &name, &message, kept);
                if let Some(n) = kept.packets().filter(|n| *n > 0) {
                    let bytes = std::fs::metadata(&name).map_or(0, |m| m.len());
                    parts.push(Part {
                        file: name,
                        packets: n,
                        bytes,
                    });
                }
            }
            true
        }
        None => part_failed || !close_part(&mut sink, &mut parts, &stem, &ext),
    };
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
    if failed_part {
        return Ok(Outcome::Failed);
    }
    // Ctrl-C is how a live capture ends: not an interruption.
    if stop.is_stopped() && !(crate::is_live(&args.input)) {
        eprintln!(
            "tracekit split: interrupted after {} packets: the parts above are complete files holding them",
            parts.iter().map(|p| p.packets).sum::<u64>()
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
            parts.iter().map(|p| p.packets).sum::<u64>()
        );
        return Ok(Outcome::Failed);
    }
    Ok(Outcome::Ok)
}

/// Completes the part being written, if any, and lists it; on failure, says what the
/// part holds, lists it if it holds packets, and returns `false`.
fn close_part(sink: &mut Option<Sink>, parts: &mut Vec<Part>, stem: &str, ext: &str) -> bool {
    let Some(done) = sink.take() else {
        return true;
    };
    let name = part_name(stem, ext, parts.len());
    let (packets, bytes, ok) = match done.finish_or_salvage() {
        Ok(report) => {
            if let Some(lost) = report.loss_summary() {
                eprintln!("tracekit split: {name}: {lost}");
            }
            (report.packets, report.bytes, true)
        }
        Err(f) => {
            output::report_failure("split", &name, &f.error.to_string(), f.kept);
            let bytes = std::fs::metadata(&name).map_or(0, |m| m.len());
            (f.kept.packets().unwrap_or(0), bytes, false)
        }
    };
    if packets > 0 || ok {
        parts.push(Part {
            file: name,
            packets,
            bytes,
        });
    }
    ok
}

/// Refuses, before anything is written, a prefix one of whose parts already on disk is
/// an input (`split d/p-000000.pcap d/p.pcap`); parts are checked again as they are
/// created.
fn check_parts(inputs: &InputFiles, stem: &str, ext: &str) -> Result<()> {
    let (dir, base) = match stem.rfind('/') {
        Some(i) => (&stem[..=i], &stem[i + 1..]),
        None => ("", stem),
    };
    let listing = std::fs::read_dir(if dir.is_empty() { "." } else { dir });
    for entry in listing.into_iter().flatten().flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let number = name
            .strip_prefix(base)
            .and_then(|r| r.strip_prefix('-'))
            .and_then(|r| r.strip_suffix(ext));
        if number.is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())) {
            inputs.check_output(&format!("{dir}{name}"))?;
        }
    }
    Ok(())
}

pub fn part_name(stem: &str, ext: &str, n: usize) -> String {
    format!("{stem}-{n:06}{ext}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        let n = |p: &str| {
            let (s, e, f) = name_parts(p, Format::Pcapng);
            (part_name(&s, &e, 3), f)
        };
        assert_eq!(n("out.pcap"), ("out-000003.pcap".into(), Format::Pcap));
        assert_eq!(
            n("d/x.y/out.pcapng.zst"),
            ("d/x.y/out-000003.pcapng.zst".into(), Format::Pcapng)
        );
        assert_eq!(n("p.erf.gz"), ("p-000003.erf.gz".into(), Format::Erf));
        assert_eq!(
            n("parts/p"),
            ("parts/p-000003.pcapng".into(), Format::Pcapng)
        );
        assert_eq!(n("p.gz"), ("p-000003.pcapng.gz".into(), Format::Pcapng));
    }
}
