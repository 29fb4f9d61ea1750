//! `tracekit rtstats`: packets and bytes per interval and filter (libtrace's
//! tracertstats), as fast as the file can be read.

use std::io::Write;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use tracekit::Packet;

use crate::Outcome;
use crate::numbered;
use crate::timefmt;

/// Print packets and bytes per time interval (or per group of packets), in total and
/// per filter, like libtrace's tracertstats, reading the file as fast as it can be
/// read.
///
/// Intervals are aligned to the trace clock: with `-i 60` they start on whole minutes
/// of the time stamps, and intervals without packets between two with packets are
/// printed with zeros. A packet whose time stamp goes back before the current interval
/// is counted in the current one. Bytes are wire bytes.
///
/// Example: `tracekit rtstats -i 1 -f tcp -f udp --format csv samples/sample.pcap`
#[derive(Args)]
pub struct RtstatsArgs {
    /// Interval length in seconds (fractions allowed).
    #[arg(
        short = 'i',
        long = "interval",
        value_name = "SECONDS",
        conflicts_with = "count"
    )]
    interval: Option<f64>,
    /// One row per this many packets instead of per time interval.
    #[arg(short = 'c', long = "count", value_name = "PACKETS")]
    count: Option<u64>,
    /// Also count the packets matching this tcpdump filter expression (repeatable).
    #[arg(short = 'f', long = "filter", value_name = "EXPR")]
    filters: Vec<String>,
    /// Output: text (aligned columns), csv, or json (one array of rows).
    #[arg(long, value_enum, default_value_t = RowFormat::Text)]
    format: RowFormat,
    /// Same as `--format json`.
    #[arg(long)]
    json: bool,
    /// Trace file (`-` for standard input).
    file: String,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum RowFormat {
    Text,
    Csv,
    Json,
}

/// The longest run of empty intervals printed as zero rows.
const MAX_EMPTY: u64 = 1_000_000;

/// How rows are cut.
enum Cut {
    /// By time: interval length in ns.
    Interval(u64),
    /// By packet count.
    Count(u64),
}

/// One row being accumulated: the interval's start, then (packets, bytes) in total
/// (first) and per filter.
struct Row {
    start_ns: u64,
    counts: Vec<(u64, u64)>,
}

impl Row {
    fn reset(&mut self, start_ns: u64) {
        self.start_ns = start_ns;

        self.counts.iter_mut().for_each(|c| *c = (0, 0));
    }
}

struct Printer<W: Write> {
    out: W,
    format: RowFormat,
    rows: u64,
    columns: usize,
}

impl<W: Write> Printer<W> {
    fn header(&mut self, filters: &[String]) -> std::io::Result<()> {
        match self.format {
            RowFormat::Text => {
                for (i, f) in filters.iter().enumerate() {
                    writeln!(self.out, "# f{}: {f}", i + 1)?;
                }
                write!(
                    self.out,
                    "{:<30} {:>10} {:>14}",
                    "start", "packets", "bytes"
                )?;
                for (i, _) in filters.iter().enumerate() {
                    write!(
                        self.out,
                        " {:>10} {:>14}",
                        format!("f{}_pkts", i + 1),
                        format!("f{}_bytes", i + 1)
                    )?;
                }
                writeln!(self.out)?;
            }
            RowFormat::Csv => {
                write!(self.out, "start,start_ns,packets,bytes")?;
                for f in filters {
                    write!(
                        self.out,
                        ",{},{}",
                        csv_field(&format!("packets[{f}]")),
                        csv_field(&format!("bytes[{f}]"))
                    )?;
                }
                writeln!(self.out)?;
            }
            RowFormat::Json => writeln!(self.out, "[")?,
        }
        Ok(())
    }

    fn row(&mut self, row: &Row) -> std::io::Result<()> {
        let start = timefmt::decimal_seconds(row.start_ns);
        let (total, filters) = row.counts.split_first().expect("total column");
        match self.format {
            RowFormat::Text => {
                write!(self.out, "{:<30} {:>10} {:>14}", start, total.0, total.1)?;
                for c in filters {
                    write!(self.out, " {:>10} {:>14}", c.0, c.1)?;
                }
                writeln!(self.out)?;
            }
            RowFormat::Csv => {
                write!(self.out, "{start},{},{},{}", row.start_ns, total.0, total.1)?;
                for c in filters {
                    write!(self.out, ",{},{}", c.0, c.1)?;
                }
                writeln!(self.out)?;
            }
            RowFormat::Json => {
                if self.rows > 0 {
                    writeln!(self.out, ",")?;
                }
                write!(
                    self.out,
                    "{{\"start\":\"{start}\",\"start_ns\":{},\"packets\":{},\"bytes\":{},\"filters\":[",
                    row.start_ns, total.0, total.1
                )?;
                for (i, c) in filters.iter().enumerate() {
                    if i > 0 {
                        write!(self.out, ",")?;
                    }
                    write!(self.out, "{{\"packets\":{},\"bytes\":{}}}", c.0, c.1)?;
                }
                write!(self.out, "]}}")?;
            }
        }
        self.rows += 1;
        debug_assert_eq!(row.counts.len(), self.columns);
        Ok(())
    }

    fn end(&mut self) -> std::io::Result<()> {
        if self.format == RowFormat::Json {
            if self.rows > 0 {
                writeln!(self.out)?;
            }
            writeln!(self.out, "]")?;
        }
        self.out.flush()
    }
}

/// A CSV field, quoted when it needs to be.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub fn run(args: RtstatsArgs) -> Result<Outcome> {
    let cut = match (args.interval, args.count) {
        (_, Some(0)) => bail!("--count must be at least 1"),
        (_, Some(n)) => Cut::Count(n),
        (Some(s), None) if !(s > 0.0 && s.is_finite()) => {
            bail!("--interval must be a positive number of seconds")
        }
        (Some(s), None) => Cut::Interval(((s * 1e9).round() as u64).max(1)),
        (None, None) => Cut::Interval(60_000_000_000),
    };
    let mut filters = numbered::compile_all(&args.filters)?;
    let format = if args.json {
        RowFormat::Json
    } else {
        args.format
    };
    let mut printer = Printer {
        out: std::io::BufWriter::new(std::io::stdout().lock()),
        format,
        rows: 0,
        columns: filters.len() + 1,
    };
    printer.header(&args.filters)?;
    let mut row = Row {
        start_ns: 0,

        counts: vec![(0, 0); filters.len() + 1],
    };
    let mut started = false;
    let mut add = |row: &mut Row, p: &Packet<'_>| -> Result<()> {
        let bytes = u64::from(p.wire_len());

        row.counts[0].0 += 1;
        row.counts[0].1 += bytes;
        for (f, c) in filters.iter_mut().zip(&mut row.counts[1..]) {
            if f.matches(p)? {
                c.0 += 1;
                c.1 += bytes;
            }
        }
        Ok(())
    };
    let ended = numbered::each_packet(&args.file, None, |_, p| {
        let ts = p.ts().as_unix_nanos();
        match cut {
            Cut::Interval(len) => {
                let start = ts - ts % len;
                if !started {
                    row.reset(start);
                    started = true;
                } else if start > row.start_ns {
                    // Close the current interval and the empty ones up to this packet's
                    // (a jump of more than MAX_EMPTY intervals is not spelled out).
                    printer.row(&row)?;
                    let empty = (start - row.start_ns) / len - 1;
                    if empty > MAX_EMPTY {
                        eprintln!(
                            "tracekit rtstats: {} empty intervals skipped before {}",
                            empty,
                            timefmt::decimal_seconds(start)
                        );
                        row.reset(start);
                    } else {
                        row.reset(row.start_ns + len);
                        while row.start_ns < start {
                            printer.row(&row)?;
                            row.reset(row.start_ns + len);
                        }
                    }
                }
            }
            Cut::Count(n) => {
                if !started {
                    row.reset(ts);
                    started = true;
                } else if row.counts[0].0 == n {
                    printer.row(&row)?;
                    row.reset(ts);
                }
            }
        }
        add(&mut row, p)?;
        Ok(true)
    })?;
    if started {
        printer.row(&row)?;
    }
    printer.end()?;
    drop(printer);
    if let Some(e) = ended.error {
        eprintln!(
            "tracekit rtstats: {e}\ntracekit rtstats: {}: the rows above cover the {} packets before the damage",
            args.file, ended.read
        );
        return Ok(Outcome::Failed);
    }
    Ok(Outcome::Ok)
}
