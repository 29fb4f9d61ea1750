"""tracekit: read, decode and tabulate packet traces at native speed.

- ``open(path, filter=None)`` iterates the packets of a trace (pcap, pcapng, ERF, legacy
  DAG; gzip, bzip2, zstd, xz or lz4 compressed): time stamps, lengths, the bytes through
  the buffer protocol, and ``packet.decoded``, the lazy protocol decoder.
- ``fields(path, names, filter=None)`` returns a ``pyarrow.Table`` with one row per
  packet and one typed column per ``tracekit fields`` name (``FIELD_NAMES``);
  ``fields_reader`` streams the same rows as a ``pyarrow.RecordBatchReader``.
- ``flows(paths)`` returns the ``tracekit flows`` records as a ``pyarrow.Table``.
- ``TraceError`` (an ``OSError``) names the file, the packet and the byte offset of
  what could not be read.

Reading and decoding run in Rust with the GIL released.
"""

import pyarrow as _pyarrow  # noqa: F401  (the tables are pyarrow's: load it first)

from ._tracekit import (
    FIELD_NAMES,
    Decoded,
    Packet,
    Reader,
    TraceError,
    __version__,
    fields,
    fields_reader,
    flows,
    open,
)

__all__ = [
    "FIELD_NAMES",
    "Decoded",
    "Packet",
    "Reader",
    "TraceError",
    "__version__",
    "fields",
    "fields_reader",
    "flows",
    "open",
]
