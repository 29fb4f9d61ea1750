#!/usr/bin/env python3
"""Assembles a large benchmark trace from the corpus's real captures.

usage: real-trace.py CORPUS_DIR OUT.pcap [MEGABYTES]

Takes every classic pcap file of the corpus with Ethernet link type (µs or ns time stamps,
either byte order; damaged files are left out) and writes their packets, file after file
and round after round, into one little-endian µs pcap of about MEGABYTES (default 256) MB.
Each file is moved in time to start after the previous one ends (a file's own span is capped at
an hour), so the trace keeps each file's pacing.
The traffic is real (public test captures), so its compression ratio and its mix of
encapsulations are those of real traces, unlike tracekit-gen's synthetic payloads.
"""
import os, struct, sys

def records(path):
    with open(path, 'rb') as f:
        data = f.read()
    if len(data) < 24:
        return None
    magic = data[:4]
    table = {b'\xd4\xc3\xb2\xa1': ('<', 1000), b'\xa1\xb2\xc3\xd4': ('>', 1000),
             b'\x4d\x3c\xb2\xa1': ('<', 1), b'\xa1\xb2\x3c\x4d': ('>', 1)}
    if magic not in table:
        return None
    bo, ns_per_unit = table[magic]
    if struct.unpack(bo + 'I', data[20:24])[0] != 1:
        return None
    out, off = [], 24
    while off + 16 <= len(data):
        secs, frac, incl, orig = struct.unpack(bo + 'IIII', data[off:off + 16])
        if incl > 262144 or off + 16 + incl > len(data) or incl > orig:
            return None  # damaged: not used
        ns = secs * 1_000_000_000 + frac * ns_per_unit
        out.append((ns, orig, data[off + 16:off + 16 + incl]))
        off += 16 + incl
    return out if off == len(data) and out else None

def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    corpus, dest = sys.argv[1], sys.argv[2]
    target = int(float(sys.argv[3]) * 1_000_000) if len(sys.argv) > 3 else 256_000_000
    files = []
    for name in sorted(os.listdir(corpus)):
        if name.endswith('.pcap') and not name.startswith('corrupt'):
            recs = records(os.path.join(corpus, name))
            if recs:
                files.append(recs)
    if not files:
        sys.exit('no Ethernet pcap files in ' + corpus)
    tmp = dest + '.partial'
    written, packets, clock = 24, 0, 1_600_000_000 * 1_000_000_000
    with open(tmp, 'wb') as out:
        out.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 262144, 1))
        while written < target:
            for recs in files:
                base = min(ns for ns, _, _ in recs)
                last = clock
                for ns, orig, data in recs:
                    t = clock + min(max(ns - base, 0), 3600 * 1_000_000_000)
                    last = max(last, t)
                    out.write(struct.pack('<IIII', t // 1_000_000_000, t % 1_000_000_000 // 1000,
                                          len(data), orig))
                    out.write(data)
                    written += 16 + len(data)
                    packets += 1
                clock = last + 1000
    os.replace(tmp, dest)
    print(f'{dest}: {packets} packets, {written} bytes from {len(files)} corpus files')

main()
