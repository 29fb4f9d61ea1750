"""The Spark examples (examples/spark) in local[2] mode: their Ports and flows reports
equal `tracekit ports --json` and `tracekit flows --json` on the same files."""

import json
import subprocess
import sys
from collections import Counter, defaultdict

import pytest

from conftest import REPO, corpus, need

pyspark = pytest.importorskip("pyspark")
sys.path.insert(0, str(REPO / "examples" / "spark"))

# TCP and UDP, VLANs, non-first fragments (IPv4 and IPv6), a cut TCP header, tunnels
# (VXLAN: counted under its outer UDP port; GRE: not TCP/UDP), IPv6.
FILES = [
    "ndpi__1kxun.pcap",
    "libtrace__vlan.pcap",
    "zeek__ipv6-fragmented-dns.pcap",
    "zeek__tcp__truncated-header.pcap",
    "zeek__tunnels__vxlan-encapsulated-http.pcap",
    "zeek__tunnels__gre-within-gre.pcap",
    "zeek__dns__mdns.pcap",
]


@pytest.fixture(scope="module")
def spark():
    need("java")
    from parquet_reports import session

    s = session("local[2]")
    yield s
    s.stop()


def cli_ports(cli, paths):
    """`tracekit ports --json` of each file, added up: (rows by (protocol, port), counts)."""
    rows = defaultdict(Counter)
    counts = Counter()
    for p in paths:
        out = subprocess.run([cli, "ports", "--json", p], capture_output=True, text=True, check=True)
        j = json.loads(out.stdout)
        for r in j["ports"]:
            rows[(r["protocol"], r["port"])].update(
                {k: r[k] for k in ("src_packets", "src_bytes", "dst_packets", "dst_bytes")}
            )
        counts.update(
            {k: j[k] for k in ("packets", "attributed_packets", "attributed_bytes", "fragments", "truncated", "other")}
        )
    return rows, counts


def cli_flows(cli, path):
    out = subprocess.run([cli, "flows", "--json", path], capture_output=True, text=True, check=True)
    return [json.loads(line) for line in out.stdout.splitlines()]


def flows_report_of(records):
    """The flows report, computed in plain Python from `tracekit flows --json` records."""
    report = defaultdict(Counter)
    for r in records:
        report[(r["proto"], r["state"])].update(
            flows=1, packets=r["packets"], bytes=r["bytes"], payload_ab=r["payload_ab"], payload_ba=r["payload_ba"]
        )
    return {k: dict(v) for k, v in report.items()}


def assert_ports_equal(rows, counts, want_rows, want_counts):
    got = {
        (r["protocol"], r["port"]): {k: r[k] for k in ("src_packets", "src_bytes", "dst_packets", "dst_bytes")}
        for r in rows
    }
    want = {k: {f: v.get(f, 0) for f in ("src_packets", "src_bytes", "dst_packets", "dst_bytes")} for k, v in want_rows.items()}
    assert got == want
    assert [(r["protocol"], r["port"]) for r in rows] == sorted(want, key=lambda k: (k[0] != "tcp", k[1]))
    assert counts == dict(want_counts)


def assert_flows_report_equal(report, want):
    got = {(r["proto"], r["state"]): {k: r[k] for k in ("flows", "packets", "bytes", "payload_ab", "payload_ba")} for r in report}
    assert got == want


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """The corpus files, and a copy of one cut to 50 bytes a packet by editcap (TCP
    headers cut: counted as truncated)."""
    editcap = need("editcap")
    cut = tmp_path_factory.mktemp("spark") / "1kxun-snap50.pcap"
    subprocess.run([editcap, "-s", "50", corpus("ndpi__1kxun.pcap"), str(cut)], check=True)
    return [corpus(f) for f in FILES] + [str(cut)]


def test_raw_traces_job_equals_cli(spark, cli, traces):
    from raw_traces import run

    paths = traces
    rows, counts, report, records = run(spark, paths)
    want_rows, want_counts = cli_ports(cli, paths)
    assert counts["fragments"] > 0 and counts["truncated"] > 0 and counts["other"] > 0
    assert_ports_equal(rows, counts, want_rows, want_counts)
    every = []
    for p in paths:
        theirs = cli_flows(cli, p)
        every += theirs
        ours = [r for r in records if r["file"] == p]
        key = lambda r: (r["proto"], r["src_addr"], r["src_port"], r["dst_addr"], r["dst_port"], r["packets"], r["bytes"], r["state"])  # noqa: E731
        assert Counter(map(key, ours)) == Counter(map(key, theirs)), p
    assert_flows_report_equal(report, flows_report_of(every))


def export(cli, *args):
    subprocess.run([cli, "export", *args], check=True, capture_output=True)


def test_parquet_reports_job_equals_cli(spark, cli, traces, tmp_path):
    from parquet_reports import run
    from reports import PORTS_FIELDS

    packets, flows = tmp_path / "packets", tmp_path / "flows"
    packets.mkdir()
    flows.mkdir()
    for i, p in enumerate(traces):
        export(cli, "--parquet", str(packets / f"part-{i}.parquet"), p)
        export(cli, "--flows", "--parquet", str(flows / f"part-{i}.parquet"), p)
    rows, counts, report = run(spark, str(packets), str(flows))
    want_rows, want_counts = cli_ports(cli, traces)
    assert_ports_equal(rows, counts, want_rows, want_counts)
    assert_flows_report_equal(report, flows_report_of([r for p in traces for r in cli_flows(cli, p)]))

    # The same packets as one Hive-style export partitioned by day (the traces span
    # 2004 to 2020): Spark reads the date=... directories as a column.
    by_day = tmp_path / "by-day"
    export(cli, "--partition", "day", "-e", "frame.time_epoch", *sum((["-e", f] for f in PORTS_FIELDS), []), "--parquet", str(by_day), *traces)
    assert len(list(by_day.glob("date=*"))) > 3
    rows, counts, _ = run(spark, str(by_day), None)
    assert_ports_equal(rows, counts, want_rows, want_counts)
