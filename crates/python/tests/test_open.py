"""tracekit.open: packets, time stamps, lengths and decoded fields against tshark, dpkt
and tcpdump; damage reported as TraceError after every good packet."""

import datetime
import shutil
import struct
import subprocess

import pytest

import tracekit
from conftest import corpus, epoch_ns, need, tshark_fields

# Files tshark reads as they are: pcap (µs, ns, byte-swapped), pcapng with several
# interfaces and resolutions, ERF, gzip, Linux SLL/SLL2, radiotap, VLAN, MPLS.
FRAME_FILES = [
    "libtrace__100_packets.pcap",
    "libtrace__100_packetsns.pcap",
    "swapbe_nsec__libtrace__100_packetsns.pcap",
    "libtrace__100_packets.pcapng",
    "libtrace__100_packets.erf",
    "libtrace__100_packets.erf.gz",
    "libtrace__100_sll.pcap",
    "zeek__linux_dlt_sll2.pcap",
    "libtrace__10_packets_radiotap.pcap",
    "libtrace__vlan.pcap.gz",
    "libtrace__mpls.pcap",
    "zeek__pcapng-multi-interface.pcapng",
    "zeek__pcapng-multi-interface.pcapng.gz",
    "pcapnggen__test011_be.pcapng",  # Simple Packet Blocks: no time stamp
    "zeek__http__get-to-ssh-server.pcap",
    "ndpi__1kxun.pcap",
]


@pytest.mark.parametrize("name", FRAME_FILES)
def test_frames_equal_tshark(name):
    path = corpus(name)
    # tshark numbers interfaces in the order it meets them; for ERF tracekit gives the
    # record's own capture interface, which tshark shows as erf.flags.cap.
    iface_field = "erf.flags.cap" if ".erf" in name else "frame.interface_id"
    theirs = tshark_fields(
        path,
        ["frame.number", "frame.time_epoch", "frame.len", "frame.cap_len", iface_field],
    )
    ours = list(tracekit.open(path))
    assert len(ours) == len(theirs), "packet count"
    for p, (number, ts, wire, cap, iface) in zip(ours, theirs):
        assert p.number == int(number)
        assert p.ts_ns == (epoch_ns(ts) if ts else None), f"packet {number} time stamp"
        assert (p.time is None) == (p.timestamp is None) == (ts == "")
        assert p.wire_len == int(wire), f"packet {number} wire length"
        assert p.cap_len == int(cap) == len(p) == len(memoryview(p))
        assert p.interface == int(iface or 0), f"packet {number} interface"


# Files whose packets are plain (no tunnels, no ICMP-quoted headers), so the outermost
# header is tshark's first occurrence of every field.
DECODE_FILES = [
    "libtrace__100_packets.pcap",
    "zeek__http__get-to-ssh-server.pcap",
    "ndpi__1kxun.pcap",
    "zeek__dns__mdns.pcap",
    "zeek__pcapng-multi-interface.pcapng",
    "libtrace__vlan.pcap",
]


def _opt(text):
    return int(text, 0) if text else None


@pytest.mark.parametrize("name", DECODE_FILES)
def test_decoded_equals_tshark(name):
    path = corpus(name)
    names = [
        "ip.src", "ipv6.src", "ip.dst", "ipv6.dst", "ip.proto", "ipv6.nxt", "ip.ttl",
        "ipv6.hlim", "tcp.srcport", "udp.srcport", "tcp.dstport", "udp.dstport",
        "tcp.flags", "tcp.seq_raw", "tcp.window_size_value", "eth.src", "vlan.id",
        "dns.qry.name",
    ]
    theirs = tshark_fields(path, names)
    ours = list(tracekit.open(path))
    assert len(ours) == len(theirs)
    for p, row in zip(ours, theirs):
        t = dict(zip(names, row + [""] * (len(names) - len(row))))
        d = p.decoded
        where = f"{name} packet {p.number}"
        assert d.src_addr == (t["ip.src"] or t["ipv6.src"] or None), where
        assert d.dst_addr == (t["ip.dst"] or t["ipv6.dst"] or None), where
        if t["ip.proto"]:
            assert d.protocol == int(t["ip.proto"]), where
            assert d.ttl == int(t["ip.ttl"]), where
        if t["ipv6.hlim"] and not t["ip.ttl"]:
            assert d.ttl == int(t["ipv6.hlim"]), where
        if d.transport in ("tcp", "udp"):
            assert d.src_port == _opt(t["tcp.srcport"] or t["udp.srcport"]), where
            assert d.dst_port == _opt(t["tcp.dstport"] or t["udp.dstport"]), where
        assert d.tcp_flags == _opt(t["tcp.flags"]), where
        assert d.tcp_seq == _opt(t["tcp.seq_raw"]), where
        assert d.tcp_window == _opt(t["tcp.window_size_value"]), where
        assert d.eth_src == (t["eth.src"] or None), where
        assert d.vlans[:1] == ([int(t["vlan.id"])] if t["vlan.id"] else []), where
        if t["dns.qry.name"]:
            assert d.dns_names and d.dns_names[0] == t["dns.qry.name"], where
        assert d.field("ip.src") == (t["ip.src"] or t["ipv6.src"] or None), where


def test_bytes_and_time_stamps_equal_dpkt():
    dpkt = pytest.importorskip("dpkt")
    path = corpus("ndpi__1kxun.pcap")
    with open(path, "rb") as f:
        theirs = [(ts, buf) for ts, buf in dpkt.pcap.Reader(f)]
    ours = list(tracekit.open(path))
    assert len(ours) == len(theirs)
    for p, (ts, buf) in zip(ours, theirs):
        assert bytes(p) == buf
        assert memoryview(p) == buf
        assert abs(p.timestamp - ts) < 1e-6
        expected = datetime.datetime.fromtimestamp(p.ts_ns // 10**9, datetime.timezone.utc)
        expected += datetime.timedelta(microseconds=p.ts_ns % 10**9 // 1000)
        assert p.time == expected


def test_packet_buffer_is_a_read_only_view_of_the_packet():
    p = next(iter(tracekit.open(corpus("libtrace__100_packets.pcap"))))
    view = memoryview(p)
    assert view.readonly and view.obj is p and view.format == "B"
    with pytest.raises(TypeError):
        view[0] = 0
    assert p.data.obj is p
    d = p.decoded
    if d.payload is not None:
        assert bytes(p.data[d.payload_offset:]) == d.payload


def test_packets_outlive_their_batch_and_the_reader():
    path = corpus("ndpi__1kxun.pcap")
    kept = []
    reader = tracekit.open(path)
    for i, p in enumerate(reader):
        if i % 500 == 0:
            kept.append(p)
    reader.close()
    del reader
    fresh = list(tracekit.open(path))
    for p in kept:
        assert bytes(p) == bytes(fresh[p.number - 1])


def test_filter_keeps_what_tcpdump_keeps_with_file_numbers():
    tcpdump = need("tcpdump")
    path = corpus("ndpi__1kxun.pcap")
    expr = "tcp[tcpflags] & tcp-syn != 0"
    out = subprocess.run(
        [tcpdump, "-n", "-r", path, "-tt", expr], capture_output=True, text=True, check=True
    ).stdout
    theirs = [line.split()[0] for line in out.splitlines()]
    ours = list(tracekit.open(path, filter=expr))
    assert len(ours) == len(theirs) > 0
    for p, ts in zip(ours, theirs):
        assert p.ts_ns == epoch_ns(ts)
    # Packet numbers stay those of the file: tshark's frame numbers of the same packets.
    numbers = tshark_fields(path, ["frame.number"], "-Y", "tcp.flags.syn == 1")
    assert [p.number for p in ours] == [int(row[0]) for row in numbers]
    with pytest.raises(ValueError, match="filter"):
        tracekit.open(path, filter="tcp port")


def _pcap_record_starts(path):
    """Byte offsets of each record of a classic little-endian pcap file."""
    with open(path, "rb") as f:
        data = f.read()
    starts, off = [], 24
    while off + 16 <= len(data):
        caplen = struct.unpack_from("<I", data, off + 8)[0]
        starts.append(off)
        off += 16 + caplen
    return starts


def test_damaged_file_gives_good_packets_then_trace_error(tmp_path):
    src = corpus("ndpi__1kxun.pcap")
    starts = _pcap_record_starts(src)
    cut_record = 1500  # cut in the middle of record 1501 (beyond the first batch)
    damaged = tmp_path / "cut.pcap"
    shutil.copy(src, damaged)
    with open(damaged, "r+b") as f:
        f.truncate(starts[cut_record] + 16 + 10)
    theirs = tshark_fields(str(damaged), ["frame.number"])
    ours = []
    with pytest.raises(tracekit.TraceError) as err:
        for p in tracekit.open(damaged):
            ours.append(p.number)
    assert ours == [int(row[0]) for row in theirs] == list(range(1, cut_record + 1))
    e = err.value
    assert isinstance(e, OSError)
    assert e.filename == str(damaged)
    assert str(damaged) in str(e)
    assert e.packet == cut_record + 1
    assert e.offset == starts[cut_record]


def test_missing_file_and_unknown_format(tmp_path):
    with pytest.raises(tracekit.TraceError) as err:
        tracekit.open(tmp_path / "nope.pcap")
    assert err.value.errno == 2 and err.value.filename == str(tmp_path / "nope.pcap")
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"this is not a trace at all" * 10)
    with pytest.raises(tracekit.TraceError, match="junk.pcap"):
        tracekit.open(junk)


TUNNEL_FILES = [
    "zeek__tunnels__vxlan-encapsulated-http.pcap",
    "zeek__tunnels__gre-within-gre.pcap",
    "zeek__tunnels__geneve.pcap",
    "zeek__tunnels__4in4.pcap",
    "zeek__tunnels__4in6.pcap",
    "zeek__tunnels__6in4.pcap",
    "zeek__tunnels__6in6in6.pcap",
]


@pytest.mark.parametrize("name", TUNNEL_FILES)
def test_inner_levels_equal_tshark_occurrences(name):
    """Following `decoded.inner` from the outer header inward meets the IP source
    addresses tshark lists (every occurrence, outermost first)."""
    path = corpus(name)
    theirs = tshark_fields(path, ["ip.src", "ipv6.src"], "-E", "occurrence=a", "-E", "aggregator=;")
    ours = list(tracekit.open(path))
    assert len(ours) == len(theirs)
    tunnels = 0
    for p, row in zip(ours, theirs):
        v4, v6 = (row + [""])[:2]
        levels = {4: [], 6: []}
        d = p.decoded
        while d is not None:
            if d.ip_version:
                levels[d.ip_version].append(d.src_addr)
            tunnels += d.tunnel is not None
            d = d.inner
        assert levels[4] == [a for a in v4.split(";") if a], f"{name} packet {p.number}"
        assert levels[6] == [a for a in v6.split(";") if a], f"{name} packet {p.number}"
    assert tunnels > 0
