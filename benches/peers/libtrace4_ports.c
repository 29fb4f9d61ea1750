/* Peer implementation of task T5 (the libtrace paper's "Ports" analysis) with libtrace 4's
 * parallel API, for benches/libtrace4.sh. Prints the same lines as `tracekit-bench t5 FILE`
 * and benches/peers/libtrace_ports.c (libtrace 3): packets and application bytes per
 * (TCP/UDP, source/destination port), non-first IPv4 fragments and truncated transport
 * headers counted apart, and the table's checksum.
 *
 *   libtrace4_ports [-t THREADS] [-H bidirectional|unidirectional|balance] FILE
 *
 * Each per-packet thread fills its own table (allocated in its starting callback); when a
 * thread stops it publishes the table as a result, and the reporter thread adds the tables
 * up through the unordered combiner. -H chooses the hasher: bidirectional (the default,
 * like tracekit's flow-hash distribution) runs a dedicated hasher thread that reads and
 * hashes every packet when there is more than one per-packet thread; balance has no hasher
 * thread, the per-packet threads take turns reading the file under libtrace's read lock.
 *
 * Written here from the documented API of libtrace_parallel.h; build against libtrace 4
 * (see benches/libtrace4.sh). */
#include <libtrace.h>
#include <libtrace_parallel.h>
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* (protocol, direction, port) -> packets, application bytes; protocol TCP = 0, UDP = 1;
 * direction source = 0, destination = 1. The layout of the libtrace 3 peer and of
 * tracekit::analysis::Ports, so that the checksums are comparable. */
#define SLOTS (4 * 65536)

struct ports {
    uint64_t table[SLOTS][2];
    uint64_t fragments, truncated, other;
};

static void count_packet(struct ports *p, libtrace_packet_t *packet) {
    uint8_t proto = 0;
    uint32_t rem = 0;
    libtrace_ip_t *ip = trace_get_ip(packet);
    libtrace_ip6_t *ip6 = ip ? NULL : trace_get_ip6(packet);
    if (!ip && !ip6) {
        p->other++;
        return;
    }
    void *l4 = trace_get_transport(packet, &proto, &rem);
    if (ip && (ntohs(ip->ip_off) & 0x1fff)) {
        /* A non-first fragment has no transport header: never guess its ports. */
        if (ip->ip_p == 6 || ip->ip_p == 17)
            p->fragments++;
        else
            p->other++;
        return;
    }
    if (proto != 6 && proto != 17) {
        p->other++;
        return;
    }
    if (!l4 || rem < (proto == 6 ? 20u : 8u)) {
        p->truncated++;
        return;
    }
    uint16_t sp = trace_get_source_port(packet);
    uint16_t dp = trace_get_destination_port(packet);
    /* The transport segment's length as the IP header states it (not the captured
     * length), so that cut packets still count their bytes on the wire. */
    long seg;
    if (ip)
        seg = (long)ntohs(ip->ip_len) - ip->ip_hl * 4;
    else
        seg = (long)ntohs(ip6->plen) - ((uint8_t *)l4 - ((uint8_t *)ip6 + 40));
    long bytes;
    if (proto == 6) {
        bytes = seg - ((libtrace_tcp_t *)l4)->doff * 4;
    } else {
        long len = ntohs(((libtrace_udp_t *)l4)->len);
        bytes = (len >= 8 && len <= seg) ? len - 8 : seg - 8;
    }
    if (bytes < 0)
        bytes = 0;
    size_t base = (size_t)(proto == 17) * 2 * 65536;
    p->table[base + sp][0]++;
    p->table[base + sp][1] += (uint64_t)bytes;
    p->table[base + 65536 + dp][0]++;
    p->table[base + 65536 + dp][1] += (uint64_t)bytes;
}

/* Per-packet threads: one table each. */
static void *worker_start(libtrace_t *trace, libtrace_thread_t *t, void *global) {
    (void)trace, (void)t, (void)global;
    struct ports *p = calloc(1, sizeof *p);
    if (!p) {
        perror("libtrace4_ports: table");
        exit(1);
    }
    return p;
}

static libtrace_packet_t *worker_packet(libtrace_t *trace, libtrace_thread_t *t, void *global,
                                        void *tls, libtrace_packet_t *packet) {
    (void)trace, (void)t, (void)global;
    count_packet(tls, packet);
    return packet; /* not kept: libtrace recycles it */
}

static void worker_stop(libtrace_t *trace, libtrace_thread_t *t, void *global, void *tls) {
    (void)global;
    libtrace_generic_t value = {.ptr = tls};
    trace_publish_result(trace, t, 0, value, RESULT_USER);
}

/* The reporter: adds every worker's table into the global total. It is the only thread
 * that writes the total; main reads it after trace_join(). */
static void reporter_result(libtrace_t *trace, libtrace_thread_t *sender, void *global,
                            void *tls, libtrace_result_t *result) {
    (void)trace, (void)sender, (void)tls;
    if (result->type != RESULT_USER)
        return;
    struct ports *total = global;
    struct ports *part = result->value.ptr;
    for (size_t i = 0; i < SLOTS; i++) {
        total->table[i][0] += part->table[i][0];
        total->table[i][1] += part->table[i][1];
    }
    total->fragments += part->fragments;
    total->truncated += part->truncated;
    total->other += part->other;
    free(part);
}

static void usage(void) {
    fprintf(stderr,
            "usage: libtrace4_ports [-t THREADS] [-H bidirectional|unidirectional|balance] FILE\n");
    exit(2);
}

int main(int argc, char **argv) {
    int threads = 1, opt;
    enum hasher_types hasher = HASHER_BIDIRECTIONAL;
    while ((opt = getopt(argc, argv, "t:H:")) != -1) {
        switch (opt) {
        case 't':
            threads = atoi(optarg);
            if (threads < 1)
                usage();
            break;
        case 'H':
            if (!strcmp(optarg, "bidirectional"))
                hasher = HASHER_BIDIRECTIONAL;
            else if (!strcmp(optarg, "unidirectional"))
                hasher = HASHER_UNIDIRECTIONAL;
            else if (!strcmp(optarg, "balance"))
                hasher = HASHER_BALANCE;
            else
                usage();
            break;
        default:
            usage();
        }
    }
    if (optind + 1 != argc)
        usage();

    char uri[4096];
    snprintf(uri, sizeof uri, "pcapfile:%s", argv[optind]);
    libtrace_t *trace = trace_create(uri);
    if (trace_is_err(trace)) {
        trace_perror(trace, "%s", uri);
        return 1;
    }
    struct ports *total = calloc(1, sizeof *total);
    if (!total) {
        perror("libtrace4_ports: table");
        return 1;
    }

    libtrace_callback_set_t *workers = trace_create_callback_set();
    trace_set_starting_cb(workers, worker_start);
    trace_set_packet_cb(workers, worker_packet);
    trace_set_stopping_cb(workers, worker_stop);
    libtrace_callback_set_t *reporter = trace_create_callback_set();
    trace_set_result_cb(reporter, reporter_result);

    if (trace_set_perpkt_threads(trace, threads) == -1 ||
        trace_set_hasher(trace, hasher, NULL, NULL) == -1) {
        trace_perror(trace, "%s: configuration", uri);
        return 1;
    }
    trace_set_combiner(trace, &combiner_unordered, (libtrace_generic_t){0});
    if (trace_pstart(trace, total, workers, reporter) == -1) {
        trace_perror(trace, "%s", uri);
        return 1;
    }
    trace_join(trace);
    int status = 0;
    if (trace_is_err(trace)) {
        trace_perror(trace, "%s", uri);
        status = 1;
    }

    uint64_t h = 0, n = 0;
    for (uint64_t i = 0; i < SLOTS; i++) {
        if (total->table[i][0])
            h += (i + 1) * (total->table[i][0] * 31 + total->table[i][1]);
        if (i < 65536 || (i >= 2 * 65536 && i < 3 * 65536))
            n += total->table[i][0];
    }
    printf("packets %lu\nfragments %lu\ntruncated %lu\nother %lu\nchecksum %lu\n", n,
           total->fragments, total->truncated, total->other, h);
    if (getenv("LIBTRACE4_PORTS_STATS"))
        fprintf(stderr, "libtrace4_ports: %d per-packet threads, dedicated hasher thread: %s\n",
                trace_get_perpkt_threads(trace),
                trace_has_dedicated_hasher(trace) ? "yes" : "no");
    trace_destroy_callback_set(workers);
    trace_destroy_callback_set(reporter);
    trace_destroy(trace);
    free(total);
    return status;
}
