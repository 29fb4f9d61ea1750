// Peer implementation of task T11 (TCP streams) with libtins' TCPIP::StreamFollower, for
// benches/compare.sh: every TCP stream's payload reassembled in order, counted each way,
// printed as `tracekit-bench t11 FILE` prints it. Written here for tracekit's
// comparison; uses libtins' documented API.
#include <tins/tins.h>
#include <tins/tcp_ip/stream_follower.h>
#include <cstdint>
#include <cstdio>
#include <unordered_map>

using namespace Tins;
using Tins::TCPIP::Stream;
using Tins::TCPIP::StreamFollower;

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: libtins_streams FILE\n");
        return 2;
    }
    uint64_t client = 0, server = 0, streams = 0;
    // Whether each live stream has carried data yet (a new stream may reuse an ended
    // one's address: it is reset when created).
    std::unordered_map<const Stream *, bool> has_data;
    auto first_data = [&](const Stream &s) {
        bool &seen = has_data[&s];
        if (!seen) {
            seen = true;
            streams++;
        }
    };
    StreamFollower follower;
    follower.new_stream_callback([&](Stream &stream) {
        has_data[&stream] = false;
        // Payloads are cleared after each callback (auto cleanup, the default).
        stream.client_data_callback([&](Stream &s) {
            first_data(s);
            client += s.client_payload().size();
        });
        stream.server_data_callback([&](Stream &s) {
            first_data(s);
            server += s.server_payload().size();
        });
    });
    FileSniffer sniffer(argv[1]);
    sniffer.sniff_loop([&](Packet &packet) {
        follower.process_packet(packet);
        return true;
    });
    std::printf("streams %llu\nclient_bytes %llu\nserver_bytes %llu\n", (unsigned long long)streams,
                (unsigned long long)client, (unsigned long long)server);
    return 0;
}
