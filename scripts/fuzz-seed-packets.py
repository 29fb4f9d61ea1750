#!/usr/bin/env python3
"""Seeds for the decoder and DNS fuzz targets: up to 40 packets from each classic pcap
file of the corpus, written as one link-type selector byte (an index into the target's
LINKS table) followed by the packet bytes; UDP/53 payloads go to the DNS target."""
import os, struct, sys

corpus, out_decoded, out_dns = sys.argv[1:4]
LINKS = [0, 1, 9, 12, 50, 51, 101, 104, 105, 108, 113, 117, 119, 127, 197, 228, 239, 276]
os.makedirs(out_decoded, exist_ok=True)
os.makedirs(out_dns, exist_ok=True)
n = 0
for name in sorted(os.listdir(corpus)):
    path = os.path.join(corpus, name)
    with open(path, 'rb') as f:
        head = f.read(24)
        if len(head) < 24:
            continue
        magic = head[:4]
        if magic in (b'\xd4\xc3\xb2\xa1', b'\x4d\x3c\xb2\xa1'):
            end = '<'
        elif magic in (b'\xa1\xb2\xc3\xd4', b'\xa1\xb2\x3c\x4d'):
            end = '>'
        else:
            continue
        link = struct.unpack(end + 'I', head[20:24])[0] & 0xffff
        if link not in LINKS:
            continue
        for i in range(40):
            rec = f.read(16)
            if len(rec) < 16:
                break
            caplen = struct.unpack(end + 'I', rec[8:12])[0]
            if caplen > 65535:
                break
            data = f.read(caplen)
            with open(os.path.join(out_decoded, f'{name}-{i}'), 'wb') as o:
                o.write(bytes([LINKS.index(link)]) + data)
            # Ethernet/IPv4/UDP port 53
            if link == 1 and len(data) > 42 and data[12:14] == b'\x08\x00' and data[23] == 17:
                ihl = (data[14] & 0xf) * 4
                udp = 14 + ihl
                sp, dp = struct.unpack('>HH', data[udp:udp + 4])
                if 53 in (sp, dp):
                    with open(os.path.join(out_dns, f'{name}-{i}'), 'wb') as o:
                        o.write(data[udp + 8:])
            n += 1
print(f"fuzz seeds: {n} packets")
