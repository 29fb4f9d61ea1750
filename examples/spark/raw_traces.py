"""PySpark job: the Ports and flows reports straight from raw trace files, tracekit
running in Python on each worker (`mapInArrow`): no Parquet copy of the traces.

    spark-submit examples/spark/raw_traces.py trace-1.pcap.gz trace-2.pcapng ...

The list of paths is the DataFrame Spark spreads over its workers; each worker reads its
files with `tracekit.fields_reader` (packet rows, a batch at a time, read in Rust with
the GIL released) and `tracekit.flows` (flow records), and hands Arrow batches back to
Spark without a copy through pandas or Python objects. Every worker needs the `tracekit`
package (`pip install tracekit`) and must see the files (a shared file system).
Flows are those of each file on its own (a flow that crosses two files is two records).
"""

import argparse
import json
import os
import sys
from pathlib import Path

import pyarrow as pa
from pyspark.sql import SparkSession

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reports import PORTS_FIELDS, flows_report, ports_report, spark_name  # noqa: E402

# Spark has no unsigned integers: each column is widened to the next signed type.
PACKET_SCHEMA = pa.schema(
    [
        ("ip_proto", pa.int16()),
        ("ip_frag_offset", pa.int32()),
        ("ipv6_fraghdr_offset", pa.int32()),
        ("tcp_srcport", pa.int32()),
        ("tcp_dstport", pa.int32()),
        ("udp_srcport", pa.int32()),
        ("udp_dstport", pa.int32()),
        ("tracekit_payload_len", pa.int64()),
    ]
)
assert PACKET_SCHEMA.names == [spark_name(f) for f in PORTS_FIELDS]

FLOW_SCHEMA = pa.schema(
    [
        ("file", pa.string()),
        ("proto", pa.string()),
        ("src_addr", pa.string()),
        ("src_port", pa.int32()),
        ("dst_addr", pa.string()),
        ("dst_port", pa.int32()),
        ("packets", pa.int64()),
        ("bytes", pa.int64()),
        ("payload_ab", pa.int64()),
        ("payload_ba", pa.int64()),
        ("state", pa.string()),
    ]
)

PACKET_DDL = (
    "ip_proto SMALLINT, ip_frag_offset INT, ipv6_fraghdr_offset INT, tcp_srcport INT, "
    "tcp_dstport INT, udp_srcport INT, udp_dstport INT, tracekit_payload_len BIGINT"
)
FLOW_DDL = (
    "file STRING, proto STRING, src_addr STRING, src_port INT, dst_addr STRING, "
    "dst_port INT, packets BIGINT, bytes BIGINT, payload_ab BIGINT, payload_ba BIGINT, "
    "state STRING"
)


def packet_rows(batches):
    """mapInArrow: paths in, the Ports columns of every packet of those files out."""
    import tracekit

    for batch in batches:
        for path in batch.column("path").to_pylist():
            for rows in tracekit.fields_reader(path, PORTS_FIELDS):
                yield pa.RecordBatch.from_arrays(
                    [rows.column(i).cast(f.type) for i, f in enumerate(PACKET_SCHEMA)],
                    schema=PACKET_SCHEMA,
                )


def flow_rows(batches):
    """mapInArrow: paths in, the flow records of each file out."""
    import tracekit

    for batch in batches:
        for path in batch.column("path").to_pylist():
            table = tracekit.flows(path)
            columns = [pa.array([path] * table.num_rows, pa.string())]
            columns += [table.column(f.name).cast(f.type) for f in FLOW_SCHEMA if f.name != "file"]
            yield from pa.Table.from_arrays(columns, schema=FLOW_SCHEMA).to_batches()


def run(spark: SparkSession, paths: list[str]):
    """(ports rows, ports counts, flows report, flow records) as lists of dicts."""
    # The workers unpickle the functions below by module name: ship the modules.
    here = Path(__file__).resolve().parent
    for module in ("reports.py", "raw_traces.py"):
        spark.sparkContext.addPyFile(str(here / module))
    files = spark.createDataFrame([(p,) for p in paths], "path STRING").repartition(
        min(len(paths), spark.sparkContext.defaultParallelism)
    )
    packets = files.mapInArrow(packet_rows, PACKET_DDL)
    rows, counts = ports_report(packets)
    flows = files.mapInArrow(flow_rows, FLOW_DDL).cache()
    return (
        [r.asDict() for r in rows.collect()],
        counts.collect()[0].asDict(),
        [r.asDict() for r in flows_report(flows).collect()],
        [r.asDict() for r in flows.collect()],
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", help="trace files (any format tracekit reads)")
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args()
    builder = SparkSession.builder.master(args.master)
    if args.master.startswith("local"):
        # The Python workers run this interpreter, which has tracekit and pyarrow.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = builder.appName("tracekit-raw-traces").config("spark.ui.enabled", "false").getOrCreate()
    ports_rows, ports_counts, report, _ = run(spark, [str(Path(p).resolve()) for p in args.paths])
    print(json.dumps({"ports": ports_rows, "counts": ports_counts}))
    print(json.dumps({"flows": report}))
    spark.stop()


if __name__ == "__main__":
    main()
