//! `tracekit diff`: compare two traces packet by packet (tracediff).

use std::io::Write;

use anyhow::Result;
use clap::Args;
use serde::Serialize;
use tracekit::diff::{DiffOptions, Difference, PacketDiff, Side, diff};

use crate::Outcome;
use crate::timefmt;

/// Compare two traces packet by packet (tracediff).
///
/// Packets are paired in file order; a pair differs in time stamp (to the nanosecond),
/// wire length, or contents (the captured bytes up to the wire length, which is what
/// tracediff compares). The first `--max` differences are printed, then a summary with
/// every count. Exit status: 0 when the traces are the same, 1 when they differ, 2 when
/// an input cannot be read to its end (the counts cover the packets before the damage).
///
/// Example: `tracekit diff --contents-only before.pcap after.pcapng`
#[derive(Args)]
pub struct DiffArgs {
    /// The first trace.
    a: String,
    /// The second trace.
    b: String,
    /// Print at most this many differences (0: all); every one is counted.
    #[arg(short = 'm', long = "max", default_value_t = 10)]
    max: u64,
    /// Compare contents only, as tracediff does (not time stamps or wire lengths).
    #[arg(long)]
    contents_only: bool,
    /// Print one JSON object: the counts and the differences printed.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct DiffJson {
    packet: u64,
    kind: &'static str,
    time_ns: Option<(u64, u64)>,
    wire_len: Option<(u32, u32)>,
    contents_len: Option<(usize, usize)>,
    first_byte: Option<usize>,
}

#[derive(Serialize)]
struct SummaryJson<'a> {
    a: &'a str,
    b: &'a str,
    same: bool,
    packets_a: u64,
    packets_b: u64,
    compared: u64,
    differing: u64,
    time_stamps: u64,
    wire_lengths: u64,
    contents: u64,
    differences: Vec<DiffJson>,
    error: Option<String>,
}

fn json_of(packet: u64, d: &Difference) -> DiffJson {
    let p = match d {
        Difference::Packet(p) => *p,
        _ => PacketDiff::default(),
    };
    DiffJson {
        packet,
        kind: match d {
            Difference::Packet(_) => "differ",
            Difference::OnlyInA => "only_in_a",
            Difference::OnlyInB => "only_in_b",
        },
        time_ns: p.time,
        wire_len: p.wire_len,
        contents_len: p.contents_len,
        first_byte: p.first_byte,
    }
}

fn describe(packet: u64, d: &Difference) -> String {
    let p = match d {
        Difference::Packet(p) => p,
        Difference::OnlyInA => return format!("packet {packet}: only in A"),
        Difference::OnlyInB => return format!("packet {packet}: only in B"),
    };
    let mut parts = Vec::new();
    if let Some((a, b)) = p.time {
        let delta = i128::from(b) - i128::from(a);
        let sign = if delta < 0 { "-" } else { "+" };
        parts.push(format!(
            "time stamp {} vs {} ({sign}{} s)",
            timefmt::decimal_seconds(a),
            timefmt::decimal_seconds(b),
            timefmt::decimal_seconds(delta.unsigned_abs() as u64)
        ));
    }
    if let Some((a, b)) = p.wire_len {
        parts.push(format!("wire length {a} vs {b}"));
    }
    if let Some((a, b)) = p.contents_len {
        parts.push(format!("compared bytes {a} vs {b}"));
    }
    if let Some(at) = p.first_byte {
        parts.push(format!("bytes differ from offset {at}"));
    }
    format!("packet {packet}: {}", parts.join("; "))
}

pub fn run(args: DiffArgs) -> Result<Outcome> {
    let mut a = crate::open_source(&args.a)?;
    let mut b = crate::open_source(&args.b)?;
    let options = if args.contents_only {
        DiffOptions::contents_only()
    } else {
        DiffOptions::default()
    };
    // Buffered: a table of many rows is one write, not one per line.
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut shown = Vec::new();
    let mut write_error = None;
    let done = diff(&mut a, &mut b, options, |n, d| {
        if args.max != 0 && shown.len() as u64 >= args.max {
            return true;
        }
        shown.push(json_of(n, &d));
        if !args.json
            && let Err(e) = writeln!(out, "{}", describe(n, &d))
        {
            write_error = Some(e);
            return false;
        }
        true
    });
    if let Some(e) = write_error {
        return Err(e.into());
    }
    let s = done.summary;
    // The reader's error names its file already; say which side it is.
    let error = done.error.as_ref().map(|(side, e)| match side {
        Side::A => format!("A: {e}"),
        Side::B => format!("B: {e}"),
    });
    if args.json {
        let record = SummaryJson {
            a: &args.a,
            b: &args.b,
            same: s.is_same() && error.is_none(),
            packets_a: s.packets_a,
            packets_b: s.packets_b,
            compared: s.compared,
            differing: s.differing,
            time_stamps: s.time,
            wire_lengths: s.wire_len,
            contents: s.contents,
            differences: shown,
            error: error.clone(),
        };
        serde_json::to_writer(&mut out, &record)?;
        writeln!(out)?;
    } else {
        let extra = if s.packets_a > s.packets_b {
            format!("; A has {} more packets", s.packets_a - s.packets_b)
        } else if s.packets_b > s.packets_a {
            format!("; B has {} more packets", s.packets_b - s.packets_a)
        } else {
            String::new()
        };
        writeln!(
            out,
            "{} packets in A, {} in B: {} of {} compared differ (time stamps {}, wire lengths {}, contents {}){extra}",
            s.packets_a, s.packets_b, s.differing, s.compared, s.time, s.wire_len, s.contents
        )?;
    }
    out.flush()?;
    if let Some(e) = error {
        eprintln!("tracekit diff: {e}");
        return Ok(Outcome::Exit(2));
    }
    Ok(if s.is_same() {
        Outcome::Ok
    } else {
        Outcome::Exit(1)
    })
}
