/* Peer implementation of task T5 (the libtrace paper's "Ports" analysis) with libtrace 3,
 * for benches/compare.sh. Prints the same lines as `tracekit-bench t5 FILE`: packets and
 * application bytes per (TCP/UDP, source/destination port), non-first IPv4 fragments and
 * truncated transport headers counted apart. Written here; uses libtrace's public API. */
#include <libtrace.h>
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t table[4 * 65536][2];

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: libtrace_ports FILE\n");
        return 2;
    }
    char uri[4096];
    snprintf(uri, sizeof uri, "pcapfile:%s", argv[1]);
    libtrace_t *trace = trace_create(uri);
    if (trace_is_err(trace) || trace_start(trace) == -1) {
        trace_perror(trace, "%s", uri);
        return 1;
    }
    libtrace_packet_t *packet = trace_create_packet();
    uint64_t fragments = 0, truncated = 0, other = 0;
    while (trace_read_packet(trace, packet) > 0) {
        uint8_t proto = 0;
        uint32_t rem = 0;
        libtrace_ip_t *ip = trace_get_ip(packet);
        libtrace_ip6_t *ip6 = ip ? NULL : trace_get_ip6(packet);
        if (!ip && !ip6) { other++; continue; }
        void *l4 = trace_get_transport(packet, &proto, &rem);
        if (ip && (ntohs(ip->ip_off) & 0x1fff)) {
            if (ip->ip_p == 6 || ip->ip_p == 17) fragments++; else other++;
            continue;
        }
        if (proto != 6 && proto != 17) { other++; continue; }
        if (!l4 || rem < (proto == 6 ? 20u : 8u)) { truncated++; continue; }
        uint16_t sp = trace_get_source_port(packet), dp = trace_get_destination_port(packet);
        long seg;
        if (ip) seg = (long)ntohs(ip->ip_len) - ip->ip_hl * 4;
        else seg = (long)ntohs(ip6->plen) - ((uint8_t *)l4 - ((uint8_t *)ip6 + 40));
        long bytes;
        if (proto == 6) {
            libtrace_tcp_t *tcp = (libtrace_tcp_t *)l4;
            bytes = seg - tcp->doff * 4;
        } else {
            libtrace_udp_t *udp = (libtrace_udp_t *)l4;
            long len = ntohs(udp->len);
            bytes = (len >= 8 && len <= seg) ? len - 8 : seg - 8;
        }
        if (bytes < 0) bytes = 0;
        size_t base = (proto == 17) * 2 * 65536;
        table[base + sp][0]++;
        table[base + sp][1] += bytes;
        table[base + 65536 + dp][0]++;
        table[base + 65536 + dp][1] += bytes;
    }
    if (trace_is_err(trace)) trace_perror(trace, "%s", uri);
    uint64_t h = 0, n = 0;
    for (uint64_t i = 0; i < 4 * 65536; i++) {
        if (table[i][0]) h += (i + 1) * (table[i][0] * 31 + table[i][1]);
        if (i < 65536 || (i >= 2 * 65536 && i < 3 * 65536)) n += table[i][0];
    }
    printf("packets %lu\nfragments %lu\ntruncated %lu\nother %lu\nchecksum %lu\n", n, fragments, truncated, other, h);
    trace_destroy_packet(packet);
    trace_destroy(trace);
    return 0;
}
