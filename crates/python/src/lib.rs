//! Python bindings of tracekit: the `tracekit` package on PyPI (built with maturin from
//! `pyproject.toml`; this crate is not published on crates.io).
//!
//! - `tracekit.open(path, filter=None)` iterates the packets of any trace tracekit reads
//!   (pcap, pcapng, ERF, legacy DAG; gzip, bzip2, zstd, xz, lz4): number, time stamp
//!   (`ts_ns`, `time` as a `datetime`), lengths, interface, direction, the bytes through
//!   the buffer protocol (`memoryview(packet)`, no copy) and `decoded`, the lazy decoder
//!   with the accessors of [`tracekit::decode::Decoded`].
//! - `TraceError` (an `OSError`) names the file, the packet and the byte offset; every
//!   good packet before damage is delivered first.
//!
//! Reading happens in batches with the GIL released, so other Python threads run
//! meanwhile. What is copied: each packet once, out of the reader's buffer into a batch
//! of up to 1,024 packets or 1 MiB shared by the packet objects (the reader reuses its
//! buffer for the next packets, so lending it would be unsound); a batch that no packet
//! object holds any more is refilled in place. `bytes(packet)` and `decoded.payload`
//! copy; `memoryview(packet)`, `packet.data` and the decoder do not.
//!
//! ```python
//! import tracekit
//!
//! syns = 0
//! for packet in tracekit.open("trace.pcapng.gz"):
//!     d = packet.decoded
//!     if d.tcp_flags is not None and d.tcp_flags & 0x12 == 0x02:
//!         syns += 1
//!         print(packet.time, d.src_addr, "->", d.dst_addr, d.dst_port)
//! ```

#![deny(missing_docs)]

mod decoded;
mod error;
mod reader;
mod tables;

use pyo3::prelude::*;
use tracekit::decode::fields::Field;

pub use decoded::Decoded;
pub use error::TraceError;
pub use reader::{Packet, Reader};

/// Opens a trace (a path; any format and compression tracekit reads, detected from the
/// content) for iteration; `filter` is a tcpdump expression (compiled by the system
/// libpcap) that packets must match.
#[pyfunction]
#[pyo3(signature = (path, filter = None))]
fn open(path: std::path::PathBuf, filter: Option<&str>) -> PyResult<Reader> {
    Reader::open(&tables::path_str(&path)?, filter)
}

/// The extension module (`tracekit._tracekit`; the `tracekit` package re-exports it).
#[pymodule]
fn _tracekit(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_function(wrap_pyfunction!(tables::fields, m)?)?;
    m.add_function(wrap_pyfunction!(tables::fields_reader, m)?)?;
    m.add_function(wrap_pyfunction!(tables::flows, m)?)?;
    m.add_class::<Reader>()?;
    m.add_class::<Packet>()?;
    m.add_class::<Decoded>()?;
    m.add("TraceError", m.py().get_type::<TraceError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    let names: Vec<&str> = Field::ALL.iter().map(|f| f.name()).collect();
    m.add("FIELD_NAMES", names)?;
    Ok(())
}
