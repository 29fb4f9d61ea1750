// Peer implementation of tasks T2 (tcp), T3 (tcpopts) and T4 (dns) with libtins, for
// benches/compare.sh. Prints the same lines as `tracekit-bench t2|t3|t4 FILE`.
// Written here for tracekit's side-by-side comparison; uses libtins' documented API.
#include <tins/tins.h>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

using namespace Tins;

static uint64_t tcp_payload(const PDU &pdu, const TCP &tcp) {
    // As declared by the IP header (snap-length independent), like tracekit's payload_wire_len.
    if (const IP *ip = pdu.find_pdu<IP>()) {
        long n = (long)ip->tot_len() - (long)ip->header_size() - (long)tcp.header_size();
        return n > 0 ? (uint64_t)n : 0;
    }
    if (const IPv6 *ip6 = pdu.find_pdu<IPv6>()) {
        long n = (long)ip6->payload_length() + 40 - (long)ip6->header_size() - (long)tcp.header_size();
        return n > 0 ? (uint64_t)n : 0;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: libtins_tasks t2|t3|t4 FILE\n");
        return 2;
    }
    std::string task = argv[1];
    FileSniffer sniffer(argv[2]);
    uint64_t a[8] = {0};
    sniffer.sniff_loop([&](PDU &pdu) {
        if (task == "t2") {
            const TCP *tcp = pdu.find_pdu<TCP>();
            if (!tcp) return true;
            a[0]++;
            a[1] += tcp->sport() + tcp->dport();
            a[2] += tcp->seq();
            a[3] += tcp->get_flag(TCP::SYN) ? 1 : 0;
            a[4] += tcp_payload(pdu, *tcp);
        } else if (task == "t3") {
            const TCP *tcp = pdu.find_pdu<TCP>();
            if (!tcp) return true;
            a[0]++;
            for (const TCP::option &o : tcp->options()) {
                switch (o.option()) {
                case TCP::MSS:
                    a[1]++;
                    if (o.data_size() == 2) a[2] += (o.data_ptr()[0] << 8) | o.data_ptr()[1];
                    break;
                case TCP::WSCALE: a[3]++; break;
                case TCP::SACK_OK: a[4]++; break;
                case TCP::SACK: a[5] += o.data_size() / 8; break;
                case TCP::TSOPT: a[6]++; break;
                case TCP::NOP: case TCP::EOL: break;
                default: a[7]++;
                }
            }
        } else {
            const UDP *udp = pdu.find_pdu<UDP>();
            if (!udp) return true;
            auto is = [&](uint16_t p) { return udp->sport() == p || udp->dport() == p; };
            if (!(is(53) || is(5353) || is(5355))) return true;
            const RawPDU *raw = udp->find_pdu<RawPDU>();
            if (!raw) return true;
            try {
                DNS dns = raw->to<DNS>();
                a[0]++;
                if (dns.type() == DNS::RESPONSE) a[1]++;
                for (const DNS::query &q : dns.queries()) {
                    a[2]++;
                    const std::string &n = q.dname();
                    size_t dots = 0;
                    for (char c : n) dots += c == '.';
                    a[4] += n.empty() ? 0 : n.size() - dots;
                }
                for (const DNS::resource &r : dns.answers()) {
                    a[3]++;
                    if (r.query_type() == DNS::A || r.query_type() == DNS::AAAA) a[5]++;
                }
            } catch (std::exception &) {
            }
        }
        return true;
    });
    if (task == "t2")
        std::printf("tcp_packets %lu\nport_sum %lu\nseq_sum %lu\nsyn %lu\npayload_bytes %lu\n", a[0], a[1], a[2], a[3], a[4]);
    else if (task == "t3")
        std::printf("tcp_packets %lu\nmss %lu\nmss_sum %lu\nwscale %lu\nsackok %lu\nsack_blocks %lu\ntimestamps %lu\nother %lu\n",
                    a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
    else
        std::printf("messages %lu\nresponses %lu\nquestions %lu\nanswers %lu\nname_bytes %lu\naddresses %lu\n", a[0], a[1], a[2], a[3], a[4], a[5]);
    return 0;
}
