//! `tracekit.fields()`, `tracekit.fields_reader()` and `tracekit.flows()`: Arrow record
//! batches built in Rust by tracekit-export's batchers (`tracekit::export`), handed to
//! pyarrow through the Arrow C data interface (the columns are not copied).

use std::path::PathBuf;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use arrow::pyarrow::{PyArrowType, ToPyArrow};
use arrow::record_batch::RecordBatchReader;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tracekit::decode::Decoded;
use tracekit::decode::fields::Field;
use tracekit::export::{FlowBatcher, PacketBatcher};
use tracekit::flow::{FlowConfig, FlowTable, KeyOptions};
use tracekit::{Filter, Source};

use crate::error::{compile_filter, trace_error};

/// Rows per batch when the caller does not say.
const DEFAULT_BATCH_ROWS: usize = 65_536;

/// The `tracekit fields` defaults, when no field is named.
const DEFAULT_FIELDS: [Field; 6] = [
    Field::FrameNumber,
    Field::FrameTimeEpoch,
    Field::IpSrc,
    Field::IpDst,
    Field::IpProto,
    Field::FrameLen,
];

/// Field names as `Field`s (`ValueError` for an unknown one).
fn parse_fields(names: Option<Vec<String>>) -> PyResult<Vec<Field>> {
    match names {
        None => Ok(DEFAULT_FIELDS.to_vec()),
        Some(names) if names.is_empty() => Err(PyValueError::new_err("no field named")),
        Some(names) => names
            .iter()
            .map(|n| {
                n.parse::<Field>()
                    .map_err(|e| PyValueError::new_err(e.to_string()))
            })
            .collect(),
    }
}

/// A path as tracekit takes it (UTF-8).
pub(crate) fn path_str(path: &std::path::Path) -> PyResult<String> {
    path.to_str()
        .map(str::to_string)
        .ok_or_else(|| PyValueError::new_err(format!("{}: not a UTF-8 path", path.display())))
}

/// The packets of one trace as rows of `tracekit fields` columns, a batch at a time.
struct PacketRows {
    path: String,
    source: Option<Source>,
    filter: Option<Filter>,
    batcher: PacketBatcher,
    /// Packets read, kept or not: the packet number of `frame.number`.
    read: u64,
    error: Option<tracekit::Error>,
}

impl PacketRows {
    fn open(
        path: &str,
        fields: &[Field],
        filter: Option<&str>,
        batch_rows: usize,
    ) -> PyResult<PacketRows> {
        let filter = filter.map(compile_filter).transpose()?;
        let source = tracekit::open(path).map_err(|e| trace_error(e, path))?;
        Ok(PacketRows {
            path: path.to_string(),
            source: Some(source),
            filter,
            batcher: PacketBatcher::new(fields, batch_rows),
            read: 0,
            error: None,
        })
    }

    /// The next batch; `Ok(None)` at the end. A damaged trace gives the rows before the
    /// damage first, then the error.
    fn next_batch(&mut self) -> Result<Option<RecordBatch>, tracekit::Error> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let Some(source) = self.source.as_mut() else {
            return Ok(None);
        };
        loop {
            match source.next_packet() {
                Ok(Some(packet)) => {
                    self.read += 1;
                    if let Some(f) = self.filter.as_mut() {
                        match f.matches(&packet) {
                            Ok(true) => {}
                            Ok(false) => continue,
                            Err(e) => {
                                self.error = Some(e);
                                break;
                            }
                        }
                    }
                    let d = Decoded::new(&packet);
                    if let Some(batch) = self.batcher.push(self.read, &packet, &d) {
                        return Ok(Some(batch));
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    self.error = Some(e);
                    break;
                }
            }
        }
        self.source = None;
        match self.batcher.finish() {
            Some(batch) => Ok(Some(batch)),
            None => self.error.take().map_or(Ok(None), Err),
        }
    }
}

/// pyarrow pulls this through the Arrow C stream interface (`read_next_batch` releases
/// the GIL while our `next` runs).
impl Iterator for PacketRows {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_batch() {
            Ok(batch) => batch.map(Ok),
            Err(e) => {
                let e = e.with_path(&self.path);
                Some(Err(ArrowError::ExternalError(Box::new(e))))
            }
        }
    }
}

impl RecordBatchReader for PacketRows {
    fn schema(&self) -> SchemaRef {
        self.batcher.schema()
    }
}

/// `batches` as one `pyarrow.Table` of `schema`.
fn to_table<'py>(
    py: Python<'py>,
    schema: &SchemaRef,
    batches: &[RecordBatch],
) -> PyResult<Bound<'py, PyAny>> {
    let batches = batches
        .iter()
        .map(|b| b.to_pyarrow(py))
        .collect::<PyResult<Vec<_>>>()?;
    let schema = schema.as_ref().to_pyarrow(py)?;
    py.import("pyarrow")?
        .getattr("Table")?
        .call_method1("from_batches", (batches, schema))
}

/// A table, or the damage that ended the read with the table of what came before it as
/// the exception's `table` attribute.
fn table_or_error<'py>(
    py: Python<'py>,
    schema: &SchemaRef,
    batches: &[RecordBatch],
    error: Option<(tracekit::Error, String)>,
) -> PyResult<Bound<'py, PyAny>> {
    let table = to_table(py, schema, batches)?;
    match error {
        None => Ok(table),
        Some((e, path)) => {
            let err = trace_error(e, &path);
            err.value(py).setattr("table", table)?;
            Err(err)
        }
    }
}

/// The named fields of every packet of a trace as a `pyarrow.Table`: one row per packet
/// (that `filter` keeps), one typed column per field, the values `tracekit fields`
/// prints (see tracekit-export for the types). Read and built with the GIL released.
///
/// A damaged trace raises `TraceError` whose `table` attribute holds the rows of every
/// packet before the damage.
#[pyfunction]
#[pyo3(signature = (path, fields = None, filter = None, batch_rows = DEFAULT_BATCH_ROWS))]
pub(crate) fn fields<'py>(
    py: Python<'py>,
    path: PathBuf,
    fields: Option<Vec<String>>,
    filter: Option<&str>,
    batch_rows: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let path = path_str(&path)?;
    let fields = parse_fields(fields)?;
    let mut rows = PacketRows::open(&path, &fields, filter, batch_rows)?;
    let schema = rows.batcher.schema();
    let (batches, error) = py.detach(|| {
        let mut batches = Vec::new();
        loop {
            match rows.next_batch() {
                Ok(Some(b)) => batches.push(b),
                Ok(None) => return (batches, None),
                Err(e) => return (batches, Some(e)),
            }
        }
    });
    table_or_error(py, &schema, &batches, error.map(|e| (e, path)))
}

/// Like `fields`, as a `pyarrow.RecordBatchReader` that reads the trace as its batches
/// are pulled: memory stays bounded by one batch (for large traces and for Spark's
/// `mapInArrow`). Damage raises when the batch after the last good rows is pulled.
#[pyfunction]
#[pyo3(signature = (path, fields = None, filter = None, batch_rows = DEFAULT_BATCH_ROWS))]
pub(crate) fn fields_reader<'py>(
    py: Python<'py>,
    path: PathBuf,
    fields: Option<Vec<String>>,
    filter: Option<&str>,
    batch_rows: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let path = path_str(&path)?;
    let fields = parse_fields(fields)?;
    let rows = PacketRows::open(&path, &fields, filter, batch_rows)?;
    let reader: Box<dyn RecordBatchReader + Send> = Box::new(rows);
    PyArrowType(reader).into_pyobject(py)
}

/// One path, or several.
#[derive(FromPyObject)]
pub(crate) enum Paths {
    One(PathBuf),
    Many(Vec<PathBuf>),
}

/// One record per bidirectional flow of the trace(s) as a `pyarrow.Table` with the
/// columns of `tracekit flows --json` (the same flow table, the same defaults; several
/// files are read one after the other as one trace). Read with the GIL released.
///
/// `timeout_idle` and `timeout_active` are seconds of trace time (0: never);
/// `vlan` and `tunnel_level` add the outer VLAN id and the tunnel depth to the flow key;
/// `tunnels=False` counts tunnelled packets only in their outer flow.
///
/// A damaged trace raises `TraceError` whose `table` attribute holds the flows of every
/// packet before the damage.
#[pyfunction]
#[pyo3(signature = (
    paths,
    filter = None,
    timeout_idle = 300.0,
    timeout_active = 0.0,
    max_flows = None,
    vlan = false,
    tunnel_level = false,
    tunnels = true,
    batch_rows = DEFAULT_BATCH_ROWS,
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn flows<'py>(
    py: Python<'py>,
    paths: Paths,
    filter: Option<&str>,
    timeout_idle: f64,
    timeout_active: f64,
    max_flows: Option<usize>,
    vlan: bool,
    tunnel_level: bool,
    tunnels: bool,
    batch_rows: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let paths = match paths {
        Paths::One(p) => vec![path_str(&p)?],
        Paths::Many(ps) => ps.iter().map(|p| path_str(p)).collect::<PyResult<_>>()?,
    };
    let config = FlowConfig {
        idle_timeout_ns: seconds_to_ns(timeout_idle, "timeout_idle")?,
        active_timeout_ns: seconds_to_ns(timeout_active, "timeout_active")?,
        max_flows: max_flows.unwrap_or(FlowConfig::default().max_flows).max(1),
        key: KeyOptions { vlan, tunnel_level },
        tunnels,
    };
    let mut filter = filter.map(compile_filter).transpose()?;
    let mut batcher = FlowBatcher::new(batch_rows);
    let schema = batcher.schema();
    let (batches, error) = py.detach(|| {
        let mut table = FlowTable::new(config);
        let mut batches = Vec::new();
        let mut emit = |r: &tracekit::flow::FlowRecord| {
            if let Some(b) = batcher.push(r) {
                batches.push(b);
            }
        };
        let mut error = None;
        'files: for path in &paths {
            let mut source = match tracekit::open(path) {
                Ok(s) => s,
                Err(e) => {
                    error = Some((e, path.clone()));
                    break;
                }
            };
            loop {
                match source.next_packet() {
                    Ok(Some(packet)) => {
                        if let Some(f) = filter.as_mut() {
                            match f.matches(&packet) {
                                Ok(true) => {}
                                Ok(false) => continue,
                                Err(e) => {
                                    error = Some((e, path.clone()));
                                    break 'files;
                                }
                            }
                        }
                        table.add(&packet, &mut emit);
                    }
                    Ok(None) => break,
                    Err(e) => {
                        error = Some((e, path.clone()));
                        break 'files;
                    }
                }
            }
        }
        // As `tracekit flows`: the flows of the packets before any damage are ended and
        // written too.
        table.finish(&mut emit);
        batches.extend(batcher.finish());
        (batches, error)
    });
    table_or_error(py, &schema, &batches, error)
}

fn seconds_to_ns(s: f64, what: &str) -> PyResult<u64> {
    if !s.is_finite() || s < 0.0 {
        return Err(PyValueError::new_err(format!(
            "{what} must be a number of seconds, 0 or more (got {s})"
        )));
    }
    Ok((s * 1e9).round() as u64)
}
