"""The Ports and flows reports as PySpark computations, shared by the two jobs.

Ports follows ``tracekit ports`` (the libtrace paper's Ports analysis): per transport
protocol and port, packets and application bytes (the payload's length on the wire) as
source port and as destination port; non-first IP fragments, TCP/UDP packets whose
header the capture cut, and packets that are not TCP or UDP are counted apart. Its input
is packet rows with the ``tracekit fields`` columns below (``tracekit export --parquet``
writes them, ``tracekit.fields_reader`` yields them), their dots made underscores
(``ip.proto`` is ``ip_proto``: Spark reads a dot as a struct field).

The flows report sums ``tracekit flows`` records (``tracekit export --parquet --flows``,
``tracekit.flows``) per protocol and Zeek connection state.
"""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

# The packet columns the Ports report reads (the `tracekit fields` names).
PORTS_FIELDS = [
    "ip.proto",
    "ip.frag_offset",
    "ipv6.fraghdr.offset",
    "tcp.srcport",
    "tcp.dstport",
    "udp.srcport",
    "udp.dstport",
    "tracekit.payload_len",
]

TCP, UDP = 6, 17


def spark_name(field: str) -> str:
    """The column name of a field in these DataFrames."""
    return field.replace(".", "_")


def underscored(df: DataFrame) -> DataFrame:
    """`df` with the dots of its column names made underscores."""
    return df.toDF(*[spark_name(c) for c in df.columns])


def _c(field: str):
    return F.col(spark_name(field))


def classify(packets: DataFrame) -> DataFrame:
    """Each packet with `protocol` ("tcp"/"udp"), `src_port`, `dst_port`, `bytes` and its
    `kind`: attributed, fragment, truncated or other (as tracekit's Ports decides)."""
    proto = _c("ip.proto")
    is_tcp, is_udp = proto == TCP, proto == UDP
    sport = F.when(is_tcp, _c("tcp.srcport")).when(is_udp, _c("udp.srcport"))
    dport = F.when(is_tcp, _c("tcp.dstport")).when(is_udp, _c("udp.dstport"))
    non_first = (F.coalesce(_c("ip.frag_offset").cast("long"), F.lit(0)) > 0) | (
        F.coalesce(_c("ipv6.fraghdr.offset").cast("long"), F.lit(0)) > 0
    )
    payload = _c("tracekit.payload_len").cast("long")
    kind = (
        F.when(proto.isNull() | ~(is_tcp | is_udp), "other")
        .when(non_first, "fragment")
        .when(sport.isNull() | payload.isNull(), "truncated")
        .otherwise("attributed")
    )
    return packets.select(
        F.when(is_tcp, "tcp").otherwise("udp").alias("protocol"),
        sport.cast("int").alias("src_port"),
        dport.cast("int").alias("dst_port"),
        payload.alias("bytes"),
        kind.alias("kind"),
    )


def ports_report(packets: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(rows, counts): the Ports table (protocol, port, src_packets, src_bytes,
    dst_packets, dst_bytes; TCP first, by port) and one row of counts (packets,
    attributed_packets, attributed_bytes, fragments, truncated, other)."""
    c = classify(packets).cache()
    attributed = c.where(F.col("kind") == "attributed")
    src = attributed.groupBy("protocol", F.col("src_port").alias("port")).agg(
        F.count(F.lit(1)).alias("src_packets"), F.sum("bytes").alias("src_bytes")
    )
    dst = attributed.groupBy("protocol", F.col("dst_port").alias("port")).agg(
        F.count(F.lit(1)).alias("dst_packets"), F.sum("bytes").alias("dst_bytes")
    )
    rows = (
        src.join(dst, ["protocol", "port"], "full_outer")
        .na.fill(0, ["src_packets", "src_bytes", "dst_packets", "dst_bytes"])
        .orderBy("protocol", "port")  # "tcp" before "udp"
    )
    counts = c.agg(
        F.count(F.lit(1)).alias("packets"),
        F.sum(F.when(F.col("kind") == "attributed", 1).otherwise(0)).alias("attributed_packets"),
        F.coalesce(
            F.sum(F.when(F.col("kind") == "attributed", F.col("bytes"))), F.lit(0)
        ).alias("attributed_bytes"),
        F.sum(F.when(F.col("kind") == "fragment", 1).otherwise(0)).alias("fragments"),
        F.sum(F.when(F.col("kind") == "truncated", 1).otherwise(0)).alias("truncated"),
        F.sum(F.when(F.col("kind") == "other", 1).otherwise(0)).alias("other"),
    )
    return rows, counts


def flows_report(flows: DataFrame) -> DataFrame:
    """Flow records summed per protocol and connection state: flows, packets, bytes and
    payload bytes each way, the first and last time stamps (ns)."""
    return (
        flows.groupBy("proto", "state")
        .agg(
            F.count(F.lit(1)).alias("flows"),
            F.sum(F.col("packets").cast("long")).alias("packets"),
            F.sum(F.col("bytes").cast("long")).alias("bytes"),
            F.sum(F.col("payload_ab").cast("long")).alias("payload_ab"),
            F.sum(F.col("payload_ba").cast("long")).alias("payload_ba"),
        )
        .orderBy("proto", "state")
    )
