/* Peer implementation of task T1 (count packets and captured bytes) with libpcap, for
 * benches/compare.sh. Prints the same lines as `tracekit-bench t1 FILE`. */
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdio.h>

int main(int argc, char **argv) {
    char err[PCAP_ERRBUF_SIZE];
    if (argc != 2) {
        fprintf(stderr, "usage: libpcap_count FILE\n");
        return 2;
    }
    pcap_t *p = pcap_open_offline(argv[1], err);
    if (!p) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    struct pcap_pkthdr *h;
    const u_char *d;
    uint64_t packets = 0, bytes = 0;
    while (pcap_next_ex(p, &h, &d) == 1) {
        packets++;
        bytes += h->caplen;
    }
    printf("packets %lu\nbytes %lu\n", packets, bytes);
    pcap_close(p);
    return 0;
}
