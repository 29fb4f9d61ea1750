//! `tracekit info`: what a trace holds, like capinfos.

use std::io::Write;

use anyhow::Result;
use clap::Args;
use serde::Serialize;
use tracekit::Summary;

use crate::Outcome;
use crate::progress::Progress;
use crate::timefmt;

/// Print format, compression, link types, packet and byte counts, time span and snap
/// length of each trace.
///
/// Example: `tracekit info --json -f "tcp port 443" samples/sample.pcap`
#[derive(Args)]
pub struct InfoArgs {
    /// Print one JSON object per file (keys: file, format, compression, link_types,
    /// packets, captured_bytes, wire_bytes, first_ts_ns, last_ts_ns, duration_ns,
    /// snaplen; time stamps in integer nanoseconds since the epoch). When the input is
    /// damaged, two more keys say that the figures cover only the packets before the
    /// damage: `"complete": false` and `error`, what the damage was.
    #[arg(long)]
    json: bool,
    /// Count only the packets matching this tcpdump filter expression.
    #[arg(short = 'f', long = "filter", value_name = "EXPR")]
    filter: Option<String>,
    /// Trace files (`-` for standard input).
    #[arg(required = true)]
    files: Vec<String>,
}

#[derive(Serialize)]
struct InfoJson<'a> {
    file: &'a str,
    format: &'static str,
    compression: &'static str,
    link_types: Vec<String>,
    packets: u64,
    captured_bytes: u64,
    wire_bytes: u64,
    first_ts_ns: Option<u64>,
    last_ts_ns: Option<u64>,
    duration_ns: Option<u64>,
    snaplen: Option<u32>,
    /// `Some(false)` when the figures cover only the packets before damage.
    #[serde(skip_serializing_if = "Option::is_none")]
    complete: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

pub fn run(args: InfoArgs) -> Result<Outcome> {
    let mut outcome = Outcome::Ok;
    let stdout = std::io::stdout();
    for (i, file) in args.files.iter().enumerate() {
        let opened = crate::open_source(file).and_then(|s| match &args.filter {
            Some(expr) => s.with_filter(expr),
            None => Ok(s),
        });
        let mut source = match opened {
            Ok(s) => s,
            Err(e) => {
                eprintln!("tracekit info: {e}");
                outcome = Outcome::Failed;
                continue;
            }
        };
        let mut summary = Summary::default();
        let mut progress = Progress::new(file, source.size_hint());
        let error = crate::numbered::read_all(
            &mut source,
            &mut progress,
            #[inline(always)]
            |p| {
                summary.add(p);
                Ok(true)
            },
        )?;
        progress.finish();
        if summary.link_types.is_empty() {
            summary.link_types.extend(source.declared_link_type());
        }
        let mut out = stdout.lock();
        if args.json {
            let record = InfoJson {
                file,
                format: source.format_name(),
                compression: source.compression().name(),
                link_types: summary.link_types.iter().map(ToString::to_string).collect(),
                packets: summary.packets,
                captured_bytes: summary.captured_bytes,
                wire_bytes: summary.wire_bytes,
                first_ts_ns: summary.first_ts.map(|t| t.as_unix_nanos()),
                last_ts_ns: summary.last_ts.map(|t| t.as_unix_nanos()),
                duration_ns: summary.duration_ns(),
                snaplen: source.snaplen(),
                complete: error.is_some().then_some(false),
                error: error.as_ref().map(ToString::to_string),
            };
            serde_json::to_writer(&mut out, &record)?;
            writeln!(out)?;
        } else {
            if i > 0 {
                writeln!(out)?;
            }
            print_text(&mut out, file, &source, &summary)?;
        }
        out.flush()?;
        drop(out);
        for note in source.notes() {
            eprintln!("tracekit info: {file}: note: {note}");
        }
        if let Some(e) = error {
            eprintln!(
                "tracekit info: {e}\ntracekit info: {file}: the figures above cover the {} packets before the damage",
                summary.packets
            );
            outcome = Outcome::Failed;
        }
    }
    Ok(outcome)
}

fn print_text(
    out: &mut impl Write,
    file: &str,
    source: &tracekit::Source,
    s: &Summary,
) -> std::io::Result<()> {
    let links: Vec<String> = s
        .link_types
        .iter()
        .map(|l| format!("{l} ({})", l.0))
        .collect();
    writeln!(out, "File:            {file}")?;
    writeln!(out, "Format:          {}", source.format_description())?;
    writeln!(out, "Compression:     {}", source.compression())?;
    writeln!(out, "Link types:      {}", links.join(", "))?;
    writeln!(out, "Packets:         {}", s.packets)?;
    writeln!(out, "Captured bytes:  {}", s.captured_bytes)?;
    writeln!(out, "Wire bytes:      {}", s.wire_bytes)?;
    match (s.first_ts, s.last_ts, s.duration_ns()) {
        (Some(first), Some(last), Some(d)) => {
            writeln!(out, "First packet:    {} ({first})", timefmt::utc(first))?;
            writeln!(out, "Last packet:     {} ({last})", timefmt::utc(last))?;
            writeln!(out, "Duration:        {}", timefmt::seconds(d))?;
        }
        _ => {
            writeln!(out, "First packet:    n/a")?;
            writeln!(out, "Last packet:     n/a")?;
            writeln!(out, "Duration:        n/a")?;
        }
    }
    match source.snaplen() {
        Some(snaplen) => writeln!(out, "Snaplen:         {snaplen}"),
        None => writeln!(out, "Snaplen:         n/a"),
    }
}
