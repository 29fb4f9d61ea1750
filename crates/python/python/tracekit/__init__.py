"""tracekit: read, decode and tabulate packet traces at native speed.

``open(path)`` iterates packets; ``fields(path, [...])`` and ``flows(path)`` return
``pyarrow.Table`` objects built in Rust. See the package README for the details.
"""

from ._tracekit import Decoded, Packet, Reader, TraceError, __version__, open

__all__ = ["Decoded", "Packet", "Reader", "TraceError", "__version__", "open"]
