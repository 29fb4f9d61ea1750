//! `tracekit export`: packets or flow records to Parquet (tracekit::export), for Spark,
//! DuckDB, DataFusion, pandas and polars.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::Args;
use serde::Serialize;
use tracekit::Filter;
use tracekit::decode::Decoded;
use tracekit::decode::fields::Field;
use tracekit::export::arrow::array::RecordBatch;
use tracekit::export::{
    Codec, ExportOptions, ExportSummary, PacketBatcher, ParquetExport, PartitionKey, Partitioning,
};
use tracekit::flow::{FlowConfig, FlowRecord, FlowTable};

use crate::Outcome;
use crate::flows::FlowsWorker;
use crate::numbered::{compile, each_packet};

/// Write one row per packet (or per flow with `--flows`) to Parquet, with typed columns
/// named as `tracekit fields` names them.
///
/// The columns are the fields chosen with `-e` (default: every field of `tracekit fields
/// --help`) in that order; each IP address column (`ip.src`, …) is followed by its
/// 16-byte form (`ip.src_bytes`, IPv4 mapped into IPv6). Values are those `tracekit
/// fields` prints, typed: time stamps as timestamp[ns, UTC], numbers as unsigned
/// integers (also those printed in hex), flags as booleans, comma-joined values as
/// lists, absent fields as null. Several files are read one after the other as one
/// trace: `frame.number` goes on counting. With `--flows` the rows are the records of
/// `tracekit flows --json` (default flow settings), partitioned by their first packet.
///
/// Files are written as NAME.partial and renamed when complete. When an input is
/// damaged, the rows before the damage are written and the files keep the .partial
/// suffix: the export is incomplete and the command fails. Memory stays bounded: a
/// row group (`--row-group` rows) per open file.
///
/// Example: `tracekit export --parquet trace.parquet samples/sample.pcap`, or
/// `tracekit export --partition hour --parquet out/ -e frame.time_epoch -e ip.src a.pcap b.pcap`
#[derive(Args)]
pub struct ExportArgs {
    /// Output: a Parquet file, or with --partition a directory (new or empty).
    #[arg(long, value_name = "OUT")]
    parquet: PathBuf,
    /// A field to export (repeatable, or comma-separated; see `tracekit fields --help`).
    /// Default: every field.
    #[arg(
        short = 'e',
        long = "field",
        alias = "fields",
        value_name = "FIELD",
        value_delimiter = ','
    )]
    fields: Vec<String>,
    /// Export the flow records (`tracekit flows --json` columns) instead of packets.
    #[arg(long, conflicts_with = "fields")]
    flows: bool,
    /// Rows per Parquet row group (what one open file holds in memory before writing).
    #[arg(long, default_value_t = 131_072, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    row_group: u64,
    /// Split the output by time (UTC) into a Hive-style directory:
    /// `date=YYYY-MM-DD/hour=HH/part-N.parquet` (hour) or `date=YYYY-MM-DD/part-N.parquet`
    /// (day). Rows without a time stamp go to `date=__HIVE_DEFAULT_PARTITION__`.
    #[arg(long, value_parser = ["hour", "day"])]
    partition: Option<String>,
    /// Column compression: zstd (level 1), snappy or none.
    #[arg(long, default_value = "zstd", value_parser = ["zstd", "snappy", "none"])]
    compression: String,
    /// Export only the packets matching this tcpdump filter expression (with --flows:
    /// count only them).
    #[arg(short = 'f', long = "filter", value_name = "EXPR")]
    filter: Option<String>,
    /// Threads, the reading thread among them, which works too (1, the default:
    /// everything on one thread; 0: one per core). Packets: rows are built by the
    /// workers in batches (one partition each) and written as the batches come, so the
    /// rows are not in file order (sort by frame.number). Flows: spread by address pair,
    /// one flow table per worker, as `tracekit flows --threads`.
    #[arg(long, default_value_t = 1, value_parser = crate::parse_workers)]
    threads: usize,
    /// Print what was written (rows, files) as one JSON object.
    #[arg(long)]
    json: bool,
    /// Trace files (`-` for standard input), read one after the other.
    #[arg(required = true)]
    files: Vec<String>,
}

#[derive(Serialize)]
struct FileJson {
    path: String,
    rows: u64,
}

#[derive(Serialize)]
struct SummaryJson {
    rows: u64,
    complete: bool,
    files: Vec<FileJson>,
}

/// How reading the inputs ended: the damaged file, its error and the packets read from
/// it before the damage.
type Failure = Option<(String, tracekit::Error, u64)>;

pub fn run(args: ExportArgs) -> Result<Outcome> {
    let fields: Vec<Field> = if args.fields.is_empty() {
        Field::ALL.to_vec()
    } else {
        args.fields
            .iter()
            .map(|f| f.trim().parse::<Field>())
            .collect::<Result<_, _>>()?
    };
    let partition = args.partition.as_deref().and_then(Partitioning::from_name);
    let options = ExportOptions {
        row_group_rows: usize::try_from(args.row_group).unwrap_or(usize::MAX),
        partition,
        codec: match args.compression.as_str() {
            "snappy" => Codec::Snappy,
            "none" => Codec::None,
            _ => Codec::Zstd,
        },
        ..ExportOptions::default()
    };
    let parallel = crate::numbered::is_parallel(args.threads);
    if args.files.iter().any(|f| crate::is_live(f)) {
        bail!("export reads trace files; capture to a file first (tracekit capture)");
    }
    let filter = args.filter.as_deref().map(compile).transpose()?;
    let mut export = if args.flows {
        ParquetExport::flows(&args.parquet, options)?
    } else {
        ParquetExport::packets(&args.parquet, &fields, options)?
    };
    // Ctrl-C stops reading; the files are then completed but keep their .partial names.
    let stop = crate::ctrl_c_stop();
    let failure = match (args.flows, parallel) {
        (false, false) => packets(&args, &mut export)?,
        (false, true) => packets_parallel(&args, &fields, filter, partition, &mut export)?,
        (true, false) => flows(&args, &mut export)?,
        (true, true) => flows_parallel(&args, &mut export)?,
    };
    let interrupted = stop.is_stopped();
    let complete = failure.is_none() && !interrupted;
    let summary = if complete {
        export.finish()?
    } else {
        export.finish_incomplete()?
    };
    if args.json {
        print_json(&summary, complete)?;
    }
    if interrupted && failure.is_none() {
        eprintln!(
            "tracekit export: interrupted: {} rows written to {} left with the .partial suffix: the export is incomplete",
            summary.rows,
            names(&summary)
        );
        return Ok(Outcome::Interrupted);
    }
    match failure {
        Some((file, e, read)) => {
            eprintln!(
                "tracekit export: {e}\ntracekit export: {file}: the export stops at the damage ({read} packets of this file read before it); {} rows written to {} left with the .partial suffix: the export is incomplete",
                summary.rows,
                names(&summary)
            );
            Ok(Outcome::Failed)
        }
        None => Ok(Outcome::Ok),
    }
}

fn names(summary: &ExportSummary) -> String {
    let names: Vec<String> = summary
        .files
        .iter()
        .map(|(p, _)| p.display().to_string())
        .collect();
    names.join(", ")
}

fn print_json(summary: &ExportSummary, complete: bool) -> Result<()> {
    let j = SummaryJson {
        rows: summary.rows,
        complete,
        files: summary
            .files
            .iter()
            .map(|(p, rows)| FileJson {
                path: p.display().to_string(),
                rows: *rows,
            })
            .collect(),
    };
    println!("{}", serde_json::to_string(&j)?);
    Ok(())
}

/// One thread: every packet in file order.
fn packets(args: &ExportArgs, export: &mut ParquetExport) -> Result<Failure> {
    let stop = crate::ctrl_c_stop();
    let mut offset = 0u64;
    for file in &args.files {
        if crate::ctrl_c_stop().is_stopped() {
            break;
        }
        let ended = each_packet(file, args.filter.as_deref(), |number, packet| {
            export.push_packet(offset + number, packet, &Decoded::new(packet))?;
            Ok(!stop.is_stopped())
        })?;
        if let Some(e) = ended.error {
            return Ok(Some((file.clone(), e, ended.read)));
        }
        offset += ended.read;
    }
    Ok(None)
}

/// A batch of rows of one partition, with the time stamp of its first row (which
/// names the partition).
type Batch = (Option<tracekit::Timestamp>, RecordBatch);

/// A worker building rows of its packets; a batch goes to the writer when full, or when
/// the next packet belongs to another time partition.
struct BatchWorker {
    batcher: PacketBatcher,
    filter: Option<Filter>,
    offset: u64,
    partition: Option<Partitioning>,
    /// The partition of the rows in `batcher` (`None` unpartitioned), and the first
    /// row's time stamp; `None` when the batcher is empty.
    pending: Option<(Option<PartitionKey>, Option<tracekit::Timestamp>)>,
}

impl BatchWorker {
    fn flush(&mut self, out: &mut tracekit::parallel::Emit<'_, Batch>) {
        if let (Some((_, ts)), Some(batch)) = (self.pending.take(), self.batcher.finish()) {
            out.emit((ts, batch));
        }
    }
}

impl tracekit::parallel::Worker for BatchWorker {
    type Item = Batch;

    fn packet(
        &mut self,
        packet: &tracekit::Packet<'_>,
        out: &mut tracekit::parallel::Emit<'_, Batch>,
    ) -> Result<(), tracekit::Error> {
        if let Some(f) = self.filter.as_mut()
            && !f.matches(packet)?
        {
            return Ok(());
        }
        let ts = Some(packet.ts()).filter(|t| t.is_known());
        let key = self.partition.map(|p| p.key(ts));
        if self.pending.is_some_and(|(k, _)| k != key) {
            self.flush(out);
        }
        self.pending.get_or_insert((key, ts));
        let number = self.offset + out.seq() + 1;
        if let Some(batch) = self.batcher.push(number, packet, &Decoded::new(packet)) {
            let first = self.pending.take().map_or(ts, |(_, t)| t);
            out.emit((first, batch));
        }
        Ok(())
    }

    fn finish(
        &mut self,
        out: &mut tracekit::parallel::Emit<'_, Batch>,
    ) -> Result<(), tracekit::Error> {
        self.flush(out);
        Ok(())
    }
}

/// Rows per worker batch (a worker's batch is what it holds in memory).
const WORKER_BATCH: usize = 8192;

fn packets_parallel(
    args: &ExportArgs,
    fields: &[Field],
    filter: Option<Filter>,
    partition: Option<Partitioning>,
    export: &mut ParquetExport,
) -> Result<Failure> {
    let mut offset = 0u64;
    for file in &args.files {
        if crate::ctrl_c_stop().is_stopped() {
            break;
        }
        let mut source = crate::open_source(file)?;
        let mut error = None;
        let done = tracekit::parallel::Parallel::new(args.threads)
            .distribution(tracekit::parallel::Distribution::Blocks)
            .stop_flag(crate::ctrl_c_stop().flag())
            .run(
                &mut source,
                |_| BatchWorker {
                    batcher: PacketBatcher::new(fields, WORKER_BATCH),
                    filter: filter.clone(),
                    offset,
                    partition,
                    pending: None,
                },
                |_, (ts, batch)| {
                    if error.is_none()
                        && let Err(e) = export.push_batch(&batch, ts)
                    {
                        error = Some(e);
                    }
                },
            )?;
        if let Some(e) = error {
            return Err(e.into());
        }
        let (_, ended, stats) = crate::numbered::ended_run(done);
        if let Some(e) = ended.error {
            return Ok(Some((file.clone(), e, ended.read)));
        }
        offset += stats.packets;
    }
    Ok(None)
}

fn flows(args: &ExportArgs, export: &mut ParquetExport) -> Result<Failure> {
    let stop = crate::ctrl_c_stop();
    let mut table = FlowTable::new(FlowConfig::default());
    let mut error = None;
    let mut failure = None;
    {
        let mut emit = |r: &FlowRecord| {
            if error.is_none()
                && let Err(e) = export.push_flow(r)
            {
                error = Some(e);
            }
        };
        for file in &args.files {
            if crate::ctrl_c_stop().is_stopped() {
                break;
            }
            let ended = each_packet(file, args.filter.as_deref(), |_, packet| {
                table.add(packet, &mut emit);
                Ok(!stop.is_stopped())
            })?;
            if let Some(e) = ended.error {
                failure = Some((file.clone(), e, ended.read));
                break;
            }
        }
        table.finish(&mut emit);
    }
    match error {
        Some(e) => Err(e.into()),
        None => Ok(failure),
    }
}

fn flows_parallel(args: &ExportArgs, export: &mut ParquetExport) -> Result<Failure> {
    let mut error = None;
    for file in &args.files {
        if crate::ctrl_c_stop().is_stopped() {
            break;
        }
        // The same workers as `tracekit flows --threads`; the filter runs in the reader
        // (flow records have no packet numbers to keep).
        let mut push = |r: &FlowRecord| {
            if error.is_none()
                && let Err(e) = export.push_flow(r)
            {
                error = Some(e);
            }
        };
        let (mut workers, ended, _) = crate::numbered::run_parallel(
            file,
            args.filter.as_deref(),
            tracekit::parallel::Parallel::new(args.threads),
            |_| FlowsWorker::plain(FlowConfig::default()),
            |_, r| push(&r),
        )?;
        crate::flows::end_flows(&mut workers, &mut push);
        if let Some(e) = error {
            return Err(e.into());
        }
        if let Some(e) = ended.error {
            return Ok(Some((file.clone(), e, ended.read)));
        }
    }
    Ok(None)
}
