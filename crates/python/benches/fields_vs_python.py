"""Per-packet fields of a large trace into a pandas DataFrame: tracekit against the
Python packet libraries people use for it (dpkt, scapy), in one interleaved run.

    python crates/python/benches/fields_vs_python.py TRACE.pcap [--runs 3] [--scapy-packets 20000]

Every contender builds the same DataFrame, one row per packet: time stamp (ns), wire
length, IP source and destination (text), IP protocol, TCP and UDP ports (null where the
packet has none), for Ethernet + IPv4/IPv6 traffic:

- tracekit.fields(...).to_pandas(): read, decode and build the Arrow table in Rust;
- tracekit.open loop: a Python loop over tracekit's packet objects (decoded in Rust);
- dpkt loop: dpkt.pcap.Reader, dpkt.ethernet.Ethernet, socket.inet_ntop;
- scapy loop: scapy's PcapReader on the first --scapy-packets packets only (it is slow),
  its rate extrapolated to the whole trace.

Contenders run round-robin --runs times; the table shows the median wall-clock time,
packets per second, and whether the DataFrame agrees with tracekit.fields' (row count,
sums of the port and length columns, the address columns).
"""

import argparse
import socket
import statistics
import time

import pandas as pd

import tracekit

FIELDS = [
    "frame.time_epoch",
    "frame.len",
    "ip.src",
    "ip.dst",
    "ip.proto",
    "tcp.srcport",
    "tcp.dstport",
    "udp.srcport",
    "udp.dstport",
]
COLUMNS = ["ts_ns", "len", "src", "dst", "proto", "tcp_sport", "tcp_dport", "udp_sport", "udp_dport"]


def frame(rows):
    df = pd.DataFrame(rows, columns=COLUMNS)
    for c in ["proto", "tcp_sport", "tcp_dport", "udp_sport", "udp_dport"]:
        df[c] = df[c].astype("UInt16")
    return df


def with_tracekit_fields(path, limit=None):
    table = tracekit.fields(path, FIELDS)
    # Each address column has a 16-byte twin (ip.src_bytes): not part of this task.
    df = table.drop_columns([c for c in table.column_names if c.endswith("_bytes")]).to_pandas()
    df.columns = COLUMNS
    df["ts_ns"] = df["ts_ns"].astype("int64")
    for c in ["proto", "tcp_sport", "tcp_dport", "udp_sport", "udp_dport"]:
        df[c] = df[c].astype("UInt16")
    return df


def with_tracekit_open(path, limit=None):
    rows = []
    append = rows.append
    for p in tracekit.open(path):
        d = p.decoded
        proto = d.protocol
        t = d.transport
        sport, dport = d.src_port, d.dst_port
        append(
            (
                p.ts_ns,
                p.wire_len,
                d.src_addr,
                d.dst_addr,
                proto,
                sport if t == "tcp" else None,
                dport if t == "tcp" else None,
                sport if t == "udp" else None,
                dport if t == "udp" else None,
            )
        )
    return frame(rows)


def with_dpkt(path, limit=None):
    import dpkt

    rows = []
    append = rows.append
    with open(path, "rb") as f:
        # dpkt hands out the captured bytes only: the wire length is taken as their
        # length (the generated benchmark traces are not cut by a snap length).
        for ts, buf in dpkt.pcap.Reader(f):
            ts_ns = round(ts * 1e9)
            src = dst = proto = None
            tsp = tdp = usp = udp_ = None
            try:
                eth = dpkt.ethernet.Ethernet(buf)
                ip = eth.data
                family = (
                    socket.AF_INET if isinstance(ip, dpkt.ip.IP)
                    else socket.AF_INET6 if isinstance(ip, dpkt.ip6.IP6)
                    else None
                )
                if family is not None:
                    src = socket.inet_ntop(family, ip.src)
                    dst = socket.inet_ntop(family, ip.dst)
                    proto = ip.p
                l4 = ip.data if src is not None else None
                if isinstance(l4, dpkt.tcp.TCP):
                    tsp, tdp = l4.sport, l4.dport
                elif isinstance(l4, dpkt.udp.UDP):
                    usp, udp_ = l4.sport, l4.dport
            except (dpkt.UnpackError, ValueError):
                pass
            append((ts_ns, len(buf), src, dst, proto, tsp, tdp, usp, udp_))
    return frame(rows)


def with_scapy(path, limit):
    from scapy.layers.inet import IP, TCP, UDP
    from scapy.layers.inet6 import IPv6
    from scapy.utils import PcapReader

    rows = []
    append = rows.append
    with PcapReader(path) as reader:
        for i, pkt in enumerate(reader):
            if i >= limit:
                break
            src = dst = proto = None
            tsp = tdp = usp = udp_ = None
            if IP in pkt:
                ip = pkt[IP]
                src, dst, proto = ip.src, ip.dst, ip.proto
            elif IPv6 in pkt:
                ip = pkt[IPv6]
                src, dst, proto = ip.src, ip.dst, ip.nh
            if TCP in pkt:
                tsp, tdp = pkt[TCP].sport, pkt[TCP].dport
            elif UDP in pkt:
                usp, udp_ = pkt[UDP].sport, pkt[UDP].dport
            append((int(pkt.time * 10**9), pkt.wirelen or len(pkt), src, dst, proto, tsp, tdp, usp, udp_))
    return frame(rows)


def digest(df):
    """What two DataFrames of the same packets must agree on."""
    return (
        len(df),
        int(df["len"].sum()),
        int(df["proto"].astype("float").fillna(0).sum()),
        int(sum(df[c].astype("float").fillna(0).sum() for c in ["tcp_sport", "tcp_dport", "udp_sport", "udp_dport"])),
        tuple(df["src"].fillna("").head(1000)),
        tuple(df["dst"].fillna("").tail(1000)),
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--scapy-packets", type=int, default=20000)
    args = ap.parse_args()

    reference = with_tracekit_fields(args.trace)
    total = len(reference)
    contenders = [
        ("tracekit.fields -> pandas", with_tracekit_fields, None),
        ("tracekit.open loop", with_tracekit_open, None),
        ("dpkt loop", with_dpkt, None),
        (f"scapy loop (first {args.scapy_packets})", with_scapy, args.scapy_packets),
    ]
    times = {name: [] for name, _, _ in contenders}
    agree = {}
    for _ in range(args.runs):
        for name, fn, limit in contenders:
            start = time.perf_counter()
            df = fn(args.trace, limit)
            times[name].append(time.perf_counter() - start)
            want = reference if limit is None else reference.head(limit).reset_index(drop=True)
            agree[name] = digest(df) == digest(want)
    print(f"{args.trace}: {total} packets, {args.runs} interleaved runs (median)")
    print(f"{'contender':<34} {'seconds':>9} {'packets/s':>12} {'vs tracekit.fields':>19}  agrees")
    base = statistics.median(times[contenders[0][0]])
    for name, _, limit in contenders:
        t = statistics.median(times[name])
        n = total if limit is None else min(limit, total)
        rate = n / t
        full = total / rate
        print(f"{name:<34} {t:9.2f} {rate:12,.0f} {full / base:18.1f}x  {agree[name]}")


if __name__ == "__main__":
    main()
