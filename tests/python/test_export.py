"""`tracekit export` read by the engines people use: pyarrow (the schema the README
documents), DuckDB and DataFusion (row counts and every column's values equal to
`tracekit fields` on the same files, which is itself checked against tshark).

The tracekit binary is $TRACEKIT_BIN, or target/debug/tracekit (under $CARGO_TARGET_DIR
when set). The corpus is ../shared/corpus or $TRACEKIT_CORPUS; its files are skipped
when it is absent.
"""

import ipaddress
import os
import re
import subprocess
from pathlib import Path

import datafusion
import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("TRACEKIT_CORPUS", ROOT.parent / "shared" / "corpus"))
SAMPLE = ROOT / "samples" / "sample.pcap"
CORPUS_FILES = [
    "zeek__dns__mdns.pcap",
    "libtrace__vlan.pcap.gz",
    "libtrace__complex.pcapng",
    "ndpi__1kxun.pcap",
    "zeek__ipv6-fragmented-dns.pcap",
]
# tshark prints these in hex; the export stores integers.
HEX = {"eth.type", "ip.id", "tcp.flags", "dns.id", "tls.handshake.version", "gtp.teid", "quic.version"}


def tracekit_bin():
    if "TRACEKIT_BIN" in os.environ:
        return os.environ["TRACEKIT_BIN"]
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return str(target / "debug" / "tracekit")


def tracekit(*args):
    return subprocess.run(
        [tracekit_bin(), *map(str, args)], capture_output=True, text=True, check=True
    ).stdout


def inputs():
    files = [SAMPLE]
    files += [CORPUS / f for f in CORPUS_FILES if (CORPUS / f).exists()]
    return files


def all_fields():
    help_text = tracekit("fields", "--help")
    listed = help_text.split("Fields:\n", 1)[1]
    return [line.split()[0] for line in listed.splitlines() if line.strip()]


def fields_text(path, fields):
    """`tracekit fields` output: one list of strings per packet."""
    args = ["fields"]
    for f in fields:
        args += ["-e", f]
    out = tracekit(*args, path)
    return [line.split("\t") for line in out.splitlines()]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Each input exported with every field: (input, parquet path, fields lines)."""
    fields = all_fields()
    out = []
    for i, path in enumerate(inputs()):
        pq_path = tmp_path_factory.mktemp("export") / f"{i}.parquet"
        tracekit("export", "--row-group", "100", "--parquet", pq_path, path)
        out.append((path, pq_path, fields_text(path, fields)))
    return fields, out


def render(name, value):
    """A Python value as `tracekit fields` prints it."""
    if value is None:
        return ""
    if isinstance(value, list):
        return ",".join(render(name, v) for v in value)
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        # tshark's width: 8 hex digits for 32-bit identifiers, 4 for the rest.
        width = 8 if name in ("gtp.teid", "quic.version") else 4
        return f"0x{value:0{width}x}" if name in HEX else str(value)
    return str(value)


def check_rows(engine, path, names, rows, fields, expected):
    assert len(rows) == len(expected), f"{engine} {path}: row count"
    for row, want in zip(rows, expected):
        k = 0
        for name, value in zip(names, row):
            if name.endswith("_bytes"):
                text = want[k - 1]
                if text == "":
                    assert value is None, f"{engine} {path} {name}"
                else:
                    addr = ipaddress.ip_address(text)
                    if addr.version == 4:
                        addr = ipaddress.IPv6Address("::ffff:" + text)
                    assert bytes(value) == addr.packed, f"{engine} {path} {name}"
                continue
            assert name == fields[k]
            assert render(name, value) == want[k], (
                f"{engine} {path} packet {want[0]}: {name}"
            )
            k += 1
        assert k == len(fields)


def readme_schema():
    text = (ROOT / "README.md").read_text()
    table = re.search(
        r"<!-- export-schema:begin -->(.*?)<!-- export-schema:end -->", text, re.S
    ).group(1)
    rows = re.findall(r"^\| `([^`]+)` \| `([^`]+)` \|", table, re.M)
    assert len(rows) > 50
    return rows


def test_pyarrow_reads_the_schema_the_readme_documents(exported):
    _, files = exported
    documented = readme_schema()
    for path, pq_path, expected in files:
        schema = pq.read_schema(pq_path)
        assert [(f.name, str(f.type)) for f in schema] == documented, path
        table = pq.read_table(pq_path)
        assert table.num_rows == len(expected)
        assert table.schema.field("frame.time_epoch").type == pa.timestamp("ns", tz="UTC")


def test_duckdb_reads_every_value(exported):
    fields, files = exported
    for path, pq_path, expected in files:
        con = duckdb.connect()
        count = con.execute(f"SELECT count(*) FROM read_parquet('{pq_path}')").fetchone()[0]
        assert count == len(expected), path
        # Time stamps as ns since the epoch: DuckDB keeps them exact (TIMESTAMPTZ_NS).
        rel = con.execute(
            'SELECT * REPLACE (epoch_ns("frame.time_epoch") AS "frame.time_epoch")'
            f" FROM read_parquet('{pq_path}') ORDER BY \"frame.number\""
        )
        names = [d[0] for d in rel.description]
        i = names.index("frame.time_epoch")
        rows = [
            r[:i] + (None if r[i] is None else f"{r[i] // 10**9}.{r[i] % 10**9:09d}",) + r[i + 1 :]
            for r in rel.fetchall()
        ]
        check_rows("duckdb", path, names, rows, fields, expected)


def test_datafusion_reads_every_value(exported):
    fields, files = exported
    for path, pq_path, expected in files:
        ctx = datafusion.SessionContext()
        ctx.register_parquet("packets", str(pq_path))
        count = ctx.sql("SELECT count(*) AS n FROM packets").to_pydict()["n"][0]
        assert count == len(expected), path
        table = ctx.sql('SELECT * FROM packets ORDER BY "frame.number"').to_arrow_table()
        names = table.column_names
        ts = table.column("frame.time_epoch").cast(pa.int64()).to_pylist()
        columns = [table.column(n).to_pylist() for n in names]
        i = names.index("frame.time_epoch")
        columns[i] = [None if t is None else f"{t // 10**9}.{t % 10**9:09d}" for t in ts]
        rows = list(zip(*columns))
        check_rows("datafusion", path, names, rows, fields, expected)


def test_engines_prune_hive_partitions(tmp_path):
    out = tmp_path / "parts"
    files = inputs()
    tracekit(
        "export", "--partition", "hour", "-e", "frame.number,frame.time_epoch,ip.src",
        "--parquet", out, *files,
    )
    total = sum(len(fields_text(f, ["frame.number"])) for f in files)
    con = duckdb.connect()
    glob = f"{out}/**/*.parquet"
    rows = con.execute(
        f"SELECT date, hour, strftime(\"frame.time_epoch\" AT TIME ZONE 'UTC', '%Y-%m-%d'),"
        f" strftime(\"frame.time_epoch\" AT TIME ZONE 'UTC', '%H')"
        f" FROM read_parquet('{glob}', hive_partitioning = true, hive_types_autocast = false)"
    ).fetchall()
    assert len(rows) == total
    for date, hour, want_date, want_hour in rows:
        # No time stamp (pcapng Simple Packet Blocks): Hive's null partition, read as NULL.
        assert (date, hour) == (want_date, want_hour)
    ctx = datafusion.SessionContext()
    ctx.register_parquet(
        "parts", str(out), table_partition_cols=[("date", pa.string()), ("hour", pa.string())]
    )
    n = ctx.sql("SELECT count(*) AS n FROM parts").to_pydict()["n"][0]
    assert n == total


def test_flows_match_flows_json(tmp_path):
    import json

    for path in inputs():
        pq_path = tmp_path / (path.name + ".flows.parquet")
        tracekit("export", "--flows", "--parquet", pq_path, path)
        want = [json.loads(line) for line in tracekit("flows", "--json", path).splitlines()]
        con = duckdb.connect()
        rel = con.execute(
            "SELECT * EXCLUDE (src_addr_bytes, dst_addr_bytes)"
            " REPLACE (epoch_ns(first_ts_ns) AS first_ts_ns, epoch_ns(last_ts_ns) AS last_ts_ns)"
            f" FROM read_parquet('{pq_path}')"
        )
        names = [d[0] for d in rel.description]
        got = [dict(zip(names, r)) for r in rel.fetchall()]
        assert got == want, path
