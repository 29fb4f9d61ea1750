//! `tracekit rtstats`: packets and bytes per interval and filter (libtrace's
//! tracertstats), as fast as the file can be read.

use std::io::Write;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use tracekit::Packet;
use tracekit::parallel::Emit;

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
    /// Threads (0: one per core; 1, the default: everything on one thread). The threads
    /// take turns at the file, each reading the next megabyte and counting its packets,
    /// and every worker's counts are added up at each interval's end: the rows are those
    /// of one thread.
    #[arg(long, default_value_t = 1, value_parser = crate::parse_workers)]
    threads: usize,
    /// Print the parallel run's figures (packets per worker, waits) to stderr.
    #[arg(long)]
    stats: bool,
    /// Trace file (`-` for standard input).
    file: String,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum RowFormat {
    Text,
    Csv,
    Json,
}

/// The longest run of empty intervals printed as zero rows (the parallel run's ticks
/// fold longer gaps the same way).
const MAX_EMPTY: u64 = tracekit::parallel::MAX_EMPTY_TICKS;

/// Says that a gap of `empty` intervals before `start` was not spelled out.
fn skipped(empty: u64, start: u64) {
    eprintln!(
        "tracekit rtstats: {} empty intervals skipped before {}",
        empty,
        timefmt::decimal_seconds(start)
    );
}

/// How rows are cut.
#[derive(Clone, Copy)]
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
    // A live interface has no single stream for the ticks: one thread reads it.
    if numbered::is_parallel(args.threads) && !crate::is_live(&args.file) {
        return run_parallel(&args, cut, filters, printer);
    }
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
                        skipped(empty, start);
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
    Ok(outcome(&args.file, ended))
}

/// A parallel worker: its share of the open row's counts (total first, then per filter).
struct RtWorker {
    index: usize,
    cut: Cut,
    filters: Vec<tracekit::Filter>,
    counts: Vec<(u64, u64)>,
    started: bool,
    /// Ticks seen: the open row's number.
    ticks: u64,
}

/// What a worker emits.
enum RtItem {
    /// A row starts at this packet's time stamp (the first packet of a worker, and with
    /// `--count` every packet that opens a row).
    Start(u64),
    /// The worker's counts of row `row` (the rows are numbered by the ticks that close
    /// them), and the next row's start when a tick by time closed it. A worker sends
    /// only rows it counted packets in (worker 0 also the last row, so that it is
    /// printed); a row nobody sent is empty.
    Counts {
        row: u64,
        next: Option<u64>,
        counts: Vec<(u64, u64)>,
    },
}

impl RtWorker {
    fn send(&mut self, next: Option<u64>, last: bool, out: &mut Emit<'_, RtItem>) {
        let counted = self.counts[0].0 > 0;
        if counted || (last && self.index == 0) {
            let zero = vec![(0, 0); self.counts.len()];
            out.emit(RtItem::Counts {
                row: self.ticks,
                next,
                counts: std::mem::replace(&mut self.counts, zero),
            });
        }
    }
}

impl tracekit::parallel::Worker for RtWorker {
    type Item = RtItem;

    fn packet(
        &mut self,
        p: &Packet<'_>,
        out: &mut Emit<'_, RtItem>,
    ) -> Result<(), tracekit::Error> {
        let ts = p.ts().as_unix_nanos();
        let opens = match self.cut {
            Cut::Count(n) => out.seq().is_multiple_of(n),
            Cut::Interval(_) => !self.started,
        };
        if opens {
            out.emit(RtItem::Start(ts));
            self.started = true;
        }
        let bytes = u64::from(p.wire_len());
        self.counts[0].0 += 1;
        self.counts[0].1 += bytes;
        for (f, c) in self.filters.iter_mut().zip(&mut self.counts[1..]) {
            if f.matches(p)? {
                c.0 += 1;
                c.1 += bytes;
            }
        }
        Ok(())
    }

    fn tick(
        &mut self,
        tick: &tracekit::parallel::Tick,
        out: &mut Emit<'_, RtItem>,
    ) -> Result<(), tracekit::Error> {
        self.send(tick.time, false, out);
        self.ticks = tick.index + 1;
        Ok(())
    }

    fn finish(&mut self, out: &mut Emit<'_, RtItem>) -> Result<(), tracekit::Error> {
        self.send(None, true, out);
        Ok(())
    }
}

/// Counts of a row sent at one stream position: (row, next row's start, counts).
type Pending = (u64, Option<u64>, Vec<(u64, u64)>);

/// The combiner: adds the workers' counts of each row up and prints the rows in order,
/// the empty ones between included.
struct Rows<W: Write> {
    printer: Printer<W>,
    cut: Cut,
    /// The open row's start; `None` before the first packet.
    start: Option<u64>,
    /// The open row's number.
    row: u64,
    /// Counts sent at the current stream position, by row: (row, next start, counts).
    pending: Vec<Pending>,
    pending_seq: u64,
    error: Option<std::io::Error>,
}

impl<W: Write> Rows<W> {
    fn item(&mut self, seq: u64, item: RtItem) {
        match item {
            RtItem::Counts { row, next, counts } => {
                if seq != self.pending_seq {
                    self.flush();
                    self.pending_seq = seq;
                }
                match self.pending.binary_search_by_key(&row, |p| p.0) {
                    Ok(at) => {
                        for (s, c) in self.pending[at].2.iter_mut().zip(&counts) {
                            s.0 += c.0;
                            s.1 += c.1;
                        }
                        self.pending[at].1 = self.pending[at].1.or(next);
                    }
                    Err(at) => self.pending.insert(at, (row, next, counts)),
                }
            }
            RtItem::Start(ts) => {
                self.flush();
                match self.cut {
                    Cut::Count(_) => self.start = Some(ts),
                    Cut::Interval(len) => {
                        self.start.get_or_insert(ts - ts % len);
                    }
                }
            }
        }
    }

    fn print(&mut self, row: &Row) {
        if self.error.is_none()
            && let Err(e) = self.printer.row(row)
        {
            self.error = Some(e);
        }
    }

    /// Prints the rows the pending counts close, and the empty ones before each.
    fn flush(&mut self) {
        for (row, next, counts) in std::mem::take(&mut self.pending) {
            let Some(mut start) = self.start else {
                continue;
            };
            if let Cut::Interval(len) = self.cut {
                let mut empty = Row {
                    start_ns: start,
                    counts: vec![(0, 0); counts.len()],
                };
                while self.row < row {
                    empty.start_ns = start;
                    self.print(&empty);
                    start += len;
                    self.row += 1;
                }
            }
            self.print(&Row {
                start_ns: start,
                counts,
            });
            self.row = row + 1;
            self.start = Some(start);
            if let (Cut::Interval(len), Some(next)) = (self.cut, next) {
                let empty = (next - start) / len - 1;
                if empty > MAX_EMPTY {
                    skipped(empty, next);
                }
                self.start = Some(next);
            }
        }
    }
}
/// `rtstats --threads`: workers count, ticks cut the rows, the combiner adds up.
fn run_parallel<W: Write>(
    args: &RtstatsArgs,
    cut: Cut,
    filters: Vec<tracekit::Filter>,
    printer: Printer<W>,
) -> Result<Outcome> {
    let columns = filters.len() + 1;
    let every = match cut {
        Cut::Interval(len) => tracekit::parallel::TickEvery::TraceTime(len),
        Cut::Count(n) => tracekit::parallel::TickEvery::Packets(n),
    };
    let run = tracekit::parallel::Parallel::new(args.threads)
        .distribution(tracekit::parallel::Distribution::Blocks)
        .tick_every(every)
        .order(tracekit::parallel::Order::Stream);
    let mut rows = Rows {
        printer,
        cut,
        start: None,
        row: 0,
        pending: Vec::new(),
        pending_seq: 0,
        error: None,
    };
    let (_, ended, stats) = numbered::run_parallel(
        &args.file,
        None,
        run,
        |index| RtWorker {
            index,
            cut,
            filters: filters.clone(),
            counts: vec![(0, 0); columns],
            started: false,
            ticks: 0,
        },
        |seq, item| rows.item(seq, item),
    )?;
    rows.flush();
    if let Some(e) = rows.error {
        return Err(e.into());
    }
    rows.printer.end()?;
    if args.stats {
        eprintln!("tracekit rtstats: {stats}");
    }
    Ok(outcome(&args.file, ended))
}

/// Says where damage stopped the read, if it did.
fn outcome(file: &str, ended: numbered::Ended) -> Outcome {
    match ended.error {
        Some(e) => {
            eprintln!(
                "tracekit rtstats: {e}\ntracekit rtstats: {file}: the rows above cover the {} packets before the damage",
                ended.read
            );
            Outcome::Failed
        }
        None => Outcome::Ok,
    }
}
