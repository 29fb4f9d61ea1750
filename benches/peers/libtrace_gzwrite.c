/* Peer implementation of task T8 (gzip writing) with libtrace 3: read a pcap file and
 * write it as gzip-compressed pcap at level 6 (libtrace compresses on a wandio thread).
 * Prints the packets written. Written here; uses libtrace's public API. */
#include <libtrace.h>
#include <inttypes.h>
#include <stdio.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: libtrace_gzwrite IN OUT.gz\n");
        return 2;
    }
    char in_uri[4096], out_uri[4096];
    snprintf(in_uri, sizeof in_uri, "pcapfile:%s", argv[1]);
    snprintf(out_uri, sizeof out_uri, "pcapfile:%s", argv[2]);
    libtrace_t *in = trace_create(in_uri);
    if (trace_is_err(in) || trace_start(in) == -1) {
        trace_perror(in, "%s", in_uri);
        return 1;
    }
    libtrace_out_t *out = trace_create_output(out_uri);
    int level = 6;
    trace_option_compresstype_t type = TRACE_OPTION_COMPRESSTYPE_ZLIB;
    if (trace_is_err_output(out) ||
        trace_config_output(out, TRACE_OPTION_OUTPUT_COMPRESSTYPE, &type) == -1 ||
        trace_config_output(out, TRACE_OPTION_OUTPUT_COMPRESS, &level) == -1 ||
        trace_start_output(out) == -1) {
        trace_perror_output(out, "%s", out_uri);
        return 1;
    }
    libtrace_packet_t *packet = trace_create_packet();
    uint64_t packets = 0;
    while (trace_read_packet(in, packet) > 0) {
        if (trace_write_packet(out, packet) == -1) {
            trace_perror_output(out, "%s", out_uri);
            return 1;
        }
        packets++;
    }
    printf("packets %" PRIu64 "\n", packets);
    trace_destroy_packet(packet);
    trace_destroy_output(out);
    trace_destroy(in);
    return 0;
}
