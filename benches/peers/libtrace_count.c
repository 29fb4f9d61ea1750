/* Peer implementation of tasks T1/T6/T7 with libtrace 3: count packets and captured
 * bytes of a pcap file, plain or compressed (libtrace reads gzip and bzip2 through its
 * wandio layer, on a thread of its own). Prints the same lines as
 * `tracekit-bench t1 FILE`. Written here; uses libtrace's public API. */
#include <libtrace.h>
#include <inttypes.h>
#include <stdio.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: libtrace_count FILE\n");
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
    uint64_t packets = 0, bytes = 0;
    while (trace_read_packet(trace, packet) > 0) {
        packets++;
        bytes += trace_get_capture_length(packet);
    }
    if (trace_is_err(trace)) {
        trace_perror(trace, "%s", uri);
        return 1;
    }
    printf("packets %" PRIu64 "\nbytes %" PRIu64 "\n", packets, bytes);
    trace_destroy_packet(packet);
    trace_destroy(trace);
    return 0;
}
