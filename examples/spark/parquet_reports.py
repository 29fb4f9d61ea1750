"""PySpark job: the Ports and flows reports over directories of exported Parquet files.

    tracekit export --parquet packets/ trace-*.pcap            # one row per packet
    tracekit export --parquet --flows flows/ trace-*.pcap      # one row per flow
    spark-submit examples/spark/parquet_reports.py --packets packets/ --flows flows/

Any layout that `spark.read.parquet` takes works: one file, a directory of files, or the
Hive-style directories of `--partition hour|day` (Spark then prunes by `date`/`hour`).
The reports are printed as JSON lines (`--out DIR` writes them as CSV instead).
"""

import argparse
import json
import os
import sys
from pathlib import Path

from pyspark.sql import SparkSession

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reports import flows_report, ports_report, underscored  # noqa: E402


def session(master: str = "local[2]") -> SparkSession:
    """A Spark session that reads tracekit's Parquet files: their time stamps are
    nanoseconds, which Spark reads as integers (nanosAsLong) rather than refusing. In
    local mode the Python workers run this interpreter (with its packages)."""
    builder = SparkSession.builder.master(master)
    if master.startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return (
        builder
        .appName("tracekit-parquet-reports")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.legacy.parquet.nanosAsLong", "true")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )


def run(spark: SparkSession, packets: str | None, flows: str | None):
    """(ports rows, ports counts, flows report) as lists of dicts (None where no input)."""
    ports_rows = ports_counts = flow_rows = None
    if packets:
        rows, counts = ports_report(underscored(spark.read.parquet(packets)))
        ports_rows = [r.asDict() for r in rows.collect()]
        ports_counts = counts.collect()[0].asDict()
    if flows:
        flow_rows = [r.asDict() for r in flows_report(spark.read.parquet(flows)).collect()]
    return ports_rows, ports_counts, flow_rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", help="Parquet of packet rows (tracekit export --parquet)")
    ap.add_argument("--flows", help="Parquet of flow rows (tracekit export --parquet --flows)")
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args()
    spark = session(args.master)
    ports_rows, ports_counts, flow_rows = run(spark, args.packets, args.flows)
    if ports_rows is not None:
        print(json.dumps({"ports": ports_rows, "counts": ports_counts}))
    if flow_rows is not None:
        print(json.dumps({"flows": flow_rows}))
    spark.stop()


if __name__ == "__main__":
    main()
