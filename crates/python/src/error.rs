//! tracekit errors as Python exceptions.

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

pyo3::create_exception!(
    tracekit,
    TraceError,
    PyOSError,
    "A trace could not be read: the file is missing or unreadable, not a trace format \
     tracekit knows, or damaged. `str(e)` names the file, the packet and the byte offset; \
     the attributes `filename`, `packet` (1-based, or None), `offset` (byte offset, or \
     None; of the decompressed data when `offset_decompressed`) and, for operating-system \
     errors, `errno` say the same for programs."
);

/// `e` (met while reading `path`) as a `TraceError`.
pub(crate) fn trace_error(e: tracekit::Error, path: &str) -> PyErr {
    let e = e.with_path(path);
    Python::attach(|py| {
        let err = TraceError::new_err(e.to_string());
        let value = err.value(py);
        let set = || -> PyResult<()> {
            value.setattr("filename", path)?;
            value.setattr("packet", e.packet())?;
            value.setattr("offset", e.offset())?;
            value.setattr("offset_decompressed", e.offset_is_decompressed())?;
            if let Some(errno) = e.io_error().and_then(|io| io.raw_os_error()) {
                // OSError prints `[Errno N] strerror: 'filename'` once errno is set.
                let text = e.to_string();
                let prefix = format!("{path}: ");
                value.setattr("errno", errno)?;
                value.setattr("strerror", text.strip_prefix(&prefix).unwrap_or(&text))?;
            }
            Ok(())
        };
        match set() {
            Ok(()) => err,
            Err(other) => other,
        }
    })
}

/// A tcpdump filter expression, compiled by the system libpcap (`ValueError` if it
/// refuses the expression or cannot be loaded).
pub(crate) fn compile_filter(expr: &str) -> PyResult<tracekit::Filter> {
    tracekit::Filter::new(expr, tracekit::MAX_SNAPLEN)
        .map_err(|e| PyValueError::new_err(format!("filter '{expr}': {e}")))
}
