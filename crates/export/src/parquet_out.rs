//! Streaming Parquet output: one file, or a Hive-style directory of time partitions.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::errors::ParquetError;
use parquet::file::properties::WriterProperties;
use tracekit_core::{Packet, Timestamp};
use tracekit_decode::Decoded;
use tracekit_decode::fields::Field;
use tracekit_flow::FlowRecord;

use crate::flows::{FlowBatcher, flow_schema};
use crate::packets::{PacketBatcher, schema};

/// The suffix of a file being written; it is renamed without it once complete.
pub const PARTIAL_SUFFIX: &str = ".partial";

/// The partition of rows without a time stamp (Hive's name for a null partition value).
pub const NULL_PARTITION: &str = "__HIVE_DEFAULT_PARTITION__";

/// How a partitioned export splits rows by time (UTC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Partitioning {
    /// `date=YYYY-MM-DD/hour=HH/part-N.parquet`.
    Hour,
    /// `date=YYYY-MM-DD/part-N.parquet`.
    Day,
}

impl Partitioning {
    /// `hour` or `day`.
    pub fn from_name(name: &str) -> Option<Partitioning> {
        match name {
            "hour" => Some(Partitioning::Hour),
            "day" => Some(Partitioning::Day),
            _ => None,
        }
    }
}

/// Parquet compression of the columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    /// zstd level 1: small files, fast to write (the default).
    Zstd,
    /// Snappy: Spark's default.
    Snappy,
    /// No compression.
    None,
}

/// Settings of a [`ParquetExport`].
#[derive(Clone, Debug)]
pub struct ExportOptions {
    /// Rows per Parquet row group (at least 1). A writer holds one row group in memory
    /// (encoded) before it goes to disk: this bounds memory per open file.
    pub row_group_rows: usize,
    /// Rows per Arrow batch handed to the Parquet writer (at most `row_group_rows`).
    pub batch_rows: usize,
    /// Split by time into a Hive-style directory, or write one file.
    pub partition: Option<Partitioning>,
    /// Partition files open at once, at most (at least 1). When a row belongs to a
    /// partition that is not open and this many are, the least recently used one is
    /// completed; a later row for it starts the next part file of that partition
    /// (`part-1.parquet`). Time-ordered traces touch one partition at a time.
    pub max_open: usize,
    /// Column compression.
    pub codec: Codec,
}

impl Default for ExportOptions {
    fn default() -> ExportOptions {
        ExportOptions {
            row_group_rows: 128 * 1024,
            batch_rows: 8192,
            partition: None,
            max_open: 8,
            codec: Codec::Zstd,
        }
    }
}

/// What went wrong while exporting.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// A file or directory could not be made, written or renamed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The Parquet writer failed.
    #[error("{}: Parquet: {source}", path.display())]
    Parquet {
        /// The file being written.
        path: PathBuf,
        /// The cause.
        source: ParquetError,
    },
    /// A ready batch was handed to a partitioned export (which splits rows by time
    /// itself), or a batch's schema is not the export's.
    #[error("{0}")]
    Unsupported(&'static str),
    /// A partitioned export's directory exists and is not empty.
    #[error("{}: output directory exists and is not empty (a partitioned export needs a new or empty directory)", path.display())]
    DirectoryNotEmpty {
        /// The directory.
        path: PathBuf,
    },
}

/// Where a partition's files go, relative to the output directory; `None` is the one
/// output file of an unpartitioned export.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Key {
    Single,
    /// Days since 1970-01-01 and the hour (0 for day partitions).
    Time(i64, u8),
    Unknown,
}

/// The rows a writer takes.
enum Rows {
    Packets(PacketBatcher),
    Flows(Box<FlowBatcher>),
}

impl Rows {
    fn finish(&mut self) -> Option<RecordBatch> {
        match self {
            Rows::Packets(b) => b.finish(),
            Rows::Flows(b) => b.finish(),
        }
    }
}

/// One open output file.
struct Part {
    key: Key,
    rows: Rows,
    writer: ArrowWriter<BufWriter<File>>,
    partial: PathBuf,
    path: PathBuf,
    last_use: u64,
    count: u64,
}

/// What an export wrote.
#[derive(Clone, Debug, Default)]
pub struct ExportSummary {
    /// Rows written.
    pub rows: u64,
    /// The files written, in the order they were completed, with their rows. After
    /// [`ParquetExport::finish_incomplete`] they carry the [`PARTIAL_SUFFIX`].
    pub files: Vec<(PathBuf, u64)>,
}

/// Writes packets or flow records to Parquet as they come, with bounded memory: Arrow
/// batches of [`ExportOptions::batch_rows`] rows, row groups of
/// [`ExportOptions::row_group_rows`], at most [`ExportOptions::max_open`] files open.
///
/// Each file is written as `NAME.partial` and renamed to `NAME` by [`finish`]: a file
/// without the suffix is complete. When the input is damaged, [`finish_incomplete`]
/// completes the files (valid Parquet with every row so far) but leaves the suffix, so
/// that no engine takes them for a whole export.
///
/// ```no_run
/// use tracekit_export::{ExportOptions, Field, ParquetExport, Partitioning};
/// let options = ExportOptions { partition: Some(Partitioning::Hour), ..Default::default() };
/// let mut out = ParquetExport::packets("trace.parquet.d", Field::ALL, options)?;
/// // for each packet: out.push_packet(number, &packet, &Decoded::new(&packet))?;
/// let summary = out.finish()?;
/// println!("{} rows in {} files", summary.rows, summary.files.len());
/// # Ok::<(), tracekit_export::ExportError>(())
/// ```
///
/// [`finish`]: ParquetExport::finish
/// [`finish_incomplete`]: ParquetExport::finish_incomplete
pub struct ParquetExport {
    out: PathBuf,
    fields: Option<Vec<Field>>,
    schema: SchemaRef,
    options: ExportOptions,
    props: WriterProperties,
    open: Vec<Part>,
    /// Next part number of each partition that was opened.
    next_part: std::collections::HashMap<Key, u32>,
    uses: u64,
    summary: ExportSummary,
}

impl ParquetExport {
    /// An export of packets with the columns of [`schema`]`(fields)` to `out`: a file, or
    /// with [`ExportOptions::partition`] a directory (created; it must be new or empty).
    pub fn packets(
        out: impl Into<PathBuf>,
        fields: &[Field],
        options: ExportOptions,
    ) -> Result<ParquetExport, ExportError> {
        ParquetExport::new(out.into(), Some(fields.to_vec()), schema(fields), options)
    }

    /// An export of flow records ([`flow_schema`]); partitions follow each record's first
    /// time stamp.
    pub fn flows(
        out: impl Into<PathBuf>,
        options: ExportOptions,
    ) -> Result<ParquetExport, ExportError> {
        ParquetExport::new(out.into(), None, flow_schema(), options)
    }

    fn new(
        out: PathBuf,
        fields: Option<Vec<Field>>,
        schema: SchemaRef,
        mut options: ExportOptions,
    ) -> Result<ParquetExport, ExportError> {
        options.row_group_rows = options.row_group_rows.max(1);
        options.batch_rows = options.batch_rows.clamp(1, options.row_group_rows);
        options.max_open = options.max_open.max(1);
        if options.partition.is_some() {
            let io = |source| ExportError::Io {
                path: out.clone(),
                source,
            };
            if out.is_dir() && out.read_dir().map_err(io)?.next().is_some() {
                return Err(ExportError::DirectoryNotEmpty { path: out });
            }
            std::fs::create_dir_all(&out).map_err(io)?;
        }
        let compression = match options.codec {
            Codec::Zstd => Compression::ZSTD(ZstdLevel::try_new(1).unwrap_or_default()),
            Codec::Snappy => Compression::SNAPPY,
            Codec::None => Compression::UNCOMPRESSED,
        };
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(options.row_group_rows))
            .set_compression(compression)
            .set_created_by(format!("tracekit-export {}", env!("CARGO_PKG_VERSION")))
            .build();
        Ok(ParquetExport {
            out,
            fields,
            schema,
            options,
            props,
            open: Vec::new(),
            next_part: Default::default(),
            uses: 0,
            summary: ExportSummary::default(),
        })
    }

    /// The schema of the rows.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Rows taken so far.
    pub fn rows(&self) -> u64 {
        self.summary.rows + self.open.iter().map(|p| p.count).sum::<u64>()
    }

    /// Adds packet number `number` (1-based, the `frame.number` column). Does nothing
    /// on a flow export.
    pub fn push_packet(
        &mut self,
        number: u64,
        packet: &Packet<'_>,
        decoded: &Decoded<'_>,
    ) -> Result<(), ExportError> {
        let ts = packet.ts();
        let i = self.part_for(ts.is_known().then_some(ts))?;
        let part = &mut self.open[i];
        let Rows::Packets(b) = &mut part.rows else {
            return Ok(());
        };
        part.count += 1;
        if let Some(batch) = b.push(number, packet, decoded) {
            write(part, &batch)?;
        }
        Ok(())
    }

    /// Adds a flow record. Does nothing on a packet export.
    pub fn push_flow(&mut self, record: &FlowRecord) -> Result<(), ExportError> {
        let i = self.part_for(Some(record.first))?;
        let part = &mut self.open[i];
        let Rows::Flows(b) = &mut part.rows else {
            return Ok(());
        };
        part.count += 1;
        if let Some(batch) = b.push(record) {
            write(part, &batch)?;
        }
        Ok(())
    }

    /// Writes a batch made by a [`PacketBatcher`] or [`FlowBatcher`] with this export's
    /// schema (e.g. on worker threads), as it is: for an unpartitioned export only.
    pub fn push_batch(&mut self, batch: &RecordBatch) -> Result<(), ExportError> {
        if self.options.partition.is_some() {
            return Err(ExportError::Unsupported(
                "a partitioned export takes rows one by one (it splits them by time)",
            ));
        }
        if batch.schema() != self.schema {
            return Err(ExportError::Unsupported(
                "the batch's columns are not the export's",
            ));
        }
        let i = self.part_for(None)?;
        let part = &mut self.open[i];
        part.count += batch.num_rows() as u64;
        write(part, batch)
    }

    /// Completes every file and gives each its final name.
    pub fn finish(self) -> Result<ExportSummary, ExportError> {
        self.close_all(true)
    }

    /// Completes every file (valid Parquet with every row so far) but leaves the
    /// [`PARTIAL_SUFFIX`] on their names: for an export cut short by damaged input.
    pub fn finish_incomplete(self) -> Result<ExportSummary, ExportError> {
        self.close_all(false)
    }

    fn close_all(mut self, complete: bool) -> Result<ExportSummary, ExportError> {
        if self.summary.rows == 0 && self.open.is_empty() && self.options.partition.is_none() {
            // An empty trace still gives a (row-less) file with the schema.
            self.part_for(None)?;
        }
        let mut parts = std::mem::take(&mut self.open);
        parts.sort_by_key(|p| p.key);
        for part in parts {
            close(part, complete, &mut self.summary)?;
        }
        Ok(self.summary)
    }

    /// The index of the open part for a row with time stamp `ts`, opened if needed.
    fn part_for(&mut self, ts: Option<Timestamp>) -> Result<usize, ExportError> {
        self.uses += 1;
        let key = match self.options.partition {
            None => Key::Single,
            Some(p) => match ts {
                None => Key::Unknown,
                Some(ts) => {
                    let secs = (ts.as_unix_nanos() / 1_000_000_000) as i64;
                    let hour = match p {
                        Partitioning::Hour => (secs.rem_euclid(86_400) / 3600) as u8,
                        Partitioning::Day => 0,
                    };
                    Key::Time(secs.div_euclid(86_400), hour)
                }
            },
        };
        if let Some(i) = self.open.iter().position(|p| p.key == key) {
            self.open[i].last_use = self.uses;
            return Ok(i);
        }
        if self.open.len() >= self.options.max_open {
            let lru = (0..self.open.len())
                .min_by_key(|&i| self.open[i].last_use)
                .unwrap_or(0);
            let part = self.open.swap_remove(lru);
            close(part, true, &mut self.summary)?;
        }
        let number = self.next_part.entry(key).or_insert(0);
        let path = match key {
            Key::Single => self.out.clone(),
            _ => {
                let dir = self.out.join(partition_dir(key, self.options.partition));
                std::fs::create_dir_all(&dir).map_err(|source| ExportError::Io {
                    path: dir.clone(),
                    source,
                })?;
                dir.join(format!("part-{number}.parquet"))
            }
        };
        *number += 1;
        let partial = with_suffix(&path);
        let file = File::create(&partial).map_err(|source| ExportError::Io {
            path: partial.clone(),
            source,
        })?;
        let writer = ArrowWriter::try_new(
            BufWriter::with_capacity(1 << 16, file),
            self.schema.clone(),
            Some(self.props.clone()),
        )
        .map_err(|source| ExportError::Parquet {
            path: partial.clone(),
            source,
        })?;
        let rows = match &self.fields {
            Some(f) => Rows::Packets(PacketBatcher::new(f, self.options.batch_rows)),
            None => Rows::Flows(Box::new(FlowBatcher::new(self.options.batch_rows))),
        };
        self.open.push(Part {
            key,
            rows,
            writer,
            partial,
            path,
            last_use: self.uses,
            count: 0,
        });
        Ok(self.open.len() - 1)
    }
}

fn write(part: &mut Part, batch: &RecordBatch) -> Result<(), ExportError> {
    part.writer
        .write(batch)
        .map_err(|source| ExportError::Parquet {
            path: part.partial.clone(),
            source,
        })
}

/// Writes what `part` holds, closes its file and (when `complete`) renames it.
fn close(mut part: Part, complete: bool, summary: &mut ExportSummary) -> Result<(), ExportError> {
    if let Some(batch) = part.rows.finish() {
        write(&mut part, &batch)?;
    }
    let file = part
        .writer
        .into_inner()
        .map_err(|source| ExportError::Parquet {
            path: part.partial.clone(),
            source,
        })?;
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ExportError::Io { path, source }
    };
    let file = file
        .into_inner()
        .map_err(|e| e.into_error())
        .map_err(io(&part.partial))?;
    file.sync_all().map_err(io(&part.partial))?;
    drop(file);
    let name = if complete {
        std::fs::rename(&part.partial, &part.path).map_err(io(&part.path))?;
        part.path
    } else {
        part.partial
    };
    summary.rows += part.count;
    summary.files.push((name, part.count));
    Ok(())
}

fn with_suffix(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(PARTIAL_SUFFIX);
    PathBuf::from(s)
}

/// `date=YYYY-MM-DD[/hour=HH]`, or the null partition.
fn partition_dir(key: Key, p: Option<Partitioning>) -> PathBuf {
    match key {
        Key::Time(days, hour) => {
            let (y, m, d) = civil_date(days);
            let date = format!("date={y:04}-{m:02}-{d:02}");
            match p {
                Some(Partitioning::Hour) => Path::new(&date).join(format!("hour={hour:02}")),
                _ => PathBuf::from(date),
            }
        }
        _ => match p {
            Some(Partitioning::Hour) => {
                Path::new(&format!("date={NULL_PARTITION}")).join(format!("hour={NULL_PARTITION}"))
            }
            _ => PathBuf::from(format!("date={NULL_PARTITION}")),
        },
    }
}

/// The proleptic Gregorian (year, month, day) of a count of days since 1970-01-01, by
/// counting 400-year eras of 146,097 days from 0000-03-01.
fn civil_date(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468; // days from 0000-03-01 to 1970-01-01
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // day of era, 0..146096
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // year of era
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of year from March 1st
    let mp = (5 * doy + 2) / 153; // month from March, 0..11
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::civil_date;

    #[test]
    fn civil_dates() {
        // Checked with `date -u -d @$((days*86400)) +%F`.
        assert_eq!(civil_date(0), (1970, 1, 1));
        assert_eq!(civil_date(-1), (1969, 12, 31));
        assert_eq!(civil_date(11_016), (2000, 2, 29));
        assert_eq!(civil_date(11_017), (2000, 3, 1));
        assert_eq!(civil_date(20_414), (2025, 11, 22));
        assert_eq!(civil_date(20_779), (2026, 11, 22));
        assert_eq!(civil_date(47_541), (2100, 3, 1));
    }
}
