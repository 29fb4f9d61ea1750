"""tracekit.fields, fields_reader and flows: the pyarrow tables equal what the
`tracekit fields` and `tracekit flows --json` commands print for the same files."""

import ipaddress
import json
import shutil
import subprocess

import pyarrow as pa
import pytest

import tracekit
from conftest import corpus, epoch_ns, need, tshark_fields

# Files covering the decoder's ground: DNS, TLS, VLAN/QinQ, MPLS, tunnels, fragments,
# IPv6 extension headers, SLL, radiotap, truncation, several interfaces, ERF.
FILES = [
    "libtrace__100_packets.pcap",
    "libtrace__100_packets.erf.gz",
    "libtrace__vlan.pcap",
    "libtrace__mpls.pcap",
    "libtrace__100_sll.pcap",
    "zeek__dns__mdns.pcap",
    "zeek__ipv6-fragmented-dns.pcap",
    "zeek__tunnels__vxlan-encapsulated-http.pcap",
    "zeek__tunnels__gre-within-gre.pcap",
    "zeek__pppoe-over-qinq.pcap",
    "zeek__pcapng-multi-interface.pcapng",
    "zeek__trunc__ip6-ext-trunc.pcap",
    "ndpi__sites.pcapng",
]


def cli_fields(cli, path, names, *extra):
    out = subprocess.run(
        [cli, "fields", *extra, *sum((["-e", n] for n in names), []), path],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return [line.split("\t") for line in out.splitlines()]


def parse_item(text, typ):
    if pa.types.is_integer(typ):
        return int(text, 0)
    if pa.types.is_boolean(typ):
        return {"1": True, "0": False}[text]
    if pa.types.is_timestamp(typ):
        return epoch_ns(text)
    return text


def cli_value(text, typ):
    """A `tracekit fields` text value as the Python value of an Arrow column of `typ`."""
    if text == "":
        return None
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        return [parse_item(t, typ.value_type) for t in text.split(",")]
    return parse_item(text, typ)


def table_value(value, typ):
    if value is None:
        return None
    if pa.types.is_timestamp(typ):
        return value.value  # pyarrow gives a pandas-free TimestampScalar.as_py() = datetime
    return value


def mapped16(text):
    a = ipaddress.ip_address(text)
    if a.version == 4:
        a = ipaddress.IPv6Address(b"\0" * 10 + b"\xff\xff" + a.packed)
    return a.packed


def assert_table_equals_cli(table, rows, names, where):
    assert table.num_rows == len(rows), f"{where}: row count"
    for name in names:
        column = table.column(name)
        typ = column.type
        if pa.types.is_timestamp(typ):
            ours = column.cast(pa.int64()).to_pylist()
        else:
            ours = column.to_pylist()
        i = names.index(name)
        theirs = [cli_value(r[i], typ) for r in rows]
        if pa.types.is_list(typ):
            ours = [v if v else None for v in ours]  # an empty list prints as nothing
        for n, (a, b) in enumerate(zip(ours, theirs)):
            assert a == b, f"{where}: {name} of row {n + 1}: table {a!r}, CLI {b!r}"
        twin = f"{name}_bytes"
        if twin in table.column_names:
            got = table.column(twin).to_pylist()
            want = [mapped16(r[i]) if r[i] else None for r in rows]
            assert got == want, f"{where}: {twin}"


@pytest.mark.parametrize("name", FILES)
def test_fields_equal_cli(cli, name):
    path = corpus(name)
    names = tracekit.FIELD_NAMES
    table = tracekit.fields(path, names)
    assert isinstance(table, pa.Table)
    assert_table_equals_cli(table, cli_fields(cli, path, names), names, name)


def test_fields_filter_keeps_file_numbers(cli):
    path = corpus("ndpi__1kxun.pcap")
    names = ["frame.number", "frame.time_epoch", "ip.src", "udp.dstport", "dns.qry.name"]
    table = tracekit.fields(path, names, filter="udp port 53")
    rows = cli_fields(cli, path, names, "-f", "udp port 53")
    assert table.num_rows > 0
    assert_table_equals_cli(table, rows, names, "filtered")


def test_fields_defaults_are_the_cli_defaults(cli):
    path = corpus("libtrace__100_packets.pcap")
    table = tracekit.fields(path)
    names = ["frame.number", "frame.time_epoch", "ip.src", "ip.dst", "ip.proto", "frame.len"]
    assert [c for c in table.column_names if not c.endswith("_bytes")] == names
    assert_table_equals_cli(table, cli_fields(cli, path, names), names, "defaults")


def test_fields_reader_streams_the_same_rows():
    path = corpus("ndpi__1kxun.pcap")
    names = ["frame.number", "ip.src", "tcp.srcport", "dns.qry.name"]
    reader = tracekit.fields_reader(path, names, batch_rows=100)
    assert isinstance(reader, pa.RecordBatchReader)
    batches = list(reader)
    assert len(batches) == 18 and all(b.num_rows == 100 for b in batches[:-1])
    assert pa.Table.from_batches(batches).equals(tracekit.fields(path, names))


def test_unknown_field_is_a_value_error():
    with pytest.raises(ValueError, match="no.such.field"):
        tracekit.fields(corpus("libtrace__100_packets.pcap"), ["ip.src", "no.such.field"])


def test_damaged_trace_raises_with_the_rows_before_the_damage(tmp_path):
    src = corpus("ndpi__1kxun.pcap")
    damaged = tmp_path / "cut.pcap"
    shutil.copy(src, damaged)
    with open(damaged, "r+b") as f:
        f.truncate(damaged.stat().st_size - 200)
    good = len(tshark_fields(str(damaged), ["frame.number"]))
    assert good > 1500
    with pytest.raises(tracekit.TraceError) as err:
        tracekit.fields(damaged, ["frame.number"])
    assert err.value.filename == str(damaged)
    assert err.value.table.column("frame.number").to_pylist() == list(range(1, good + 1))
    reader = tracekit.fields_reader(damaged, ["frame.number"], batch_rows=1000)
    rows = []
    # Through the C stream interface the error arrives as pyarrow's ArrowInvalid, with
    # tracekit's message.
    with pytest.raises(pa.ArrowInvalid, match=rf"cut\.pcap: packet {good + 1} at byte offset"):
        for batch in reader:
            rows += batch.column(0).to_pylist()
    assert rows == list(range(1, good + 1))


FLOW_FILES = [
    "ndpi__1kxun.pcap",
    "zeek__tunnels__vxlan-encapsulated-http.pcap",
    "libtrace__vlan.pcap",
    "zeek__ipv6-fragmented-dns.pcap",
    "zeek__http__get-to-ssh-server.pcap",
]


def cli_flows(cli, *args):
    out = subprocess.run(
        [cli, "flows", "--json", *args], capture_output=True, text=True, check=False
    ).stdout
    return [json.loads(line) for line in out.splitlines()]


def assert_flows_equal(table, records, where):
    assert table.num_rows == len(records), f"{where}: flow count"
    rows = table.to_pylist()
    for n, (row, rec) in enumerate(zip(rows, records)):
        for key, want in rec.items():
            if key in ("first_ts_ns", "last_ts_ns"):
                got = table.column(key).cast(pa.int64())[n].as_py()
            else:
                got = row[key]
            assert got == want, f"{where}: flow {n + 1} {key}: table {got!r}, CLI {want!r}"


@pytest.mark.parametrize("name", FLOW_FILES)
def test_flows_equal_cli(cli, name):
    path = corpus(name)
    assert_flows_equal(tracekit.flows(path), cli_flows(cli, path), name)


def test_flows_of_several_files_and_options_equal_cli(cli):
    a, b = corpus("ndpi__1kxun.pcap"), corpus("zeek__dns__mdns.pcap")
    assert_flows_equal(tracekit.flows([a, b]), cli_flows(cli, a, b), "two files")
    assert_flows_equal(
        tracekit.flows(a, filter="tcp", timeout_idle=5, vlan=True),
        cli_flows(cli, "-f", "tcp", "--timeout-idle", "5", "--vlan", a),
        "options",
    )


def test_reading_releases_the_gil(tmp_path):
    """While fields() and flows() read a 60,000-packet trace on one thread, another
    Python thread keeps running: it is never held up for more than a fraction of the
    call (a call holding the GIL would stop it for the whole call)."""
    import sys
    import threading
    import time

    mergecap = need("mergecap")
    big = tmp_path / "big.pcap"
    subprocess.run(
        [mergecap, "-a", "-F", "pcap", "-w", str(big)] + [corpus("ndpi__1kxun.pcap")] * 35,
        check=True,
    )
    old = sys.getswitchinterval()
    sys.setswitchinterval(0.001)
    try:
        for call in (
            lambda: tracekit.fields(big, ["frame.number", "ip.src", "tcp.srcport", "dns.qry.name"]),
            lambda: tracekit.flows(big),
        ):
            worker = threading.Thread(target=call)
            start = last = time.perf_counter()
            longest = 0.0
            worker.start()
            while worker.is_alive():
                now = time.perf_counter()
                longest = max(longest, now - last)
                last = now
            took = time.perf_counter() - start
            assert took > 0.05, "the trace is too small to tell"
            assert longest < took / 3, f"held up {longest:.3f} s of {took:.3f} s"
    finally:
        sys.setswitchinterval(old)
