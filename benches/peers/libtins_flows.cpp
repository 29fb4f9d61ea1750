// Peer implementation of task T10 (flows) with libtins, for benches/compare.sh: TCP and
// UDP conversations keyed by the 5-tuple with the endpoints ordered (both directions in
// one), their packets and bytes (captured lengths: the inputs are not cut), printed as
// `tracekit-bench t10 FILE` prints them. Written here for tracekit's comparison; uses
// libtins' documented API.
#include <tins/tins.h>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <unordered_map>

using namespace Tins;

struct Key {
    std::array<uint8_t, 16> a, b;
    uint16_t pa, pb;
    uint8_t proto;
    bool operator==(const Key &o) const {
        return a == o.a && b == o.b && pa == o.pa && pb == o.pb && proto == o.proto;
    }
};

struct KeyHash {
    size_t operator()(const Key &k) const {
        uint64_t h = 1469598103934665603ull ^ k.proto;
        auto mix = [&](const uint8_t *p, size_t n) {
            for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
        };
        mix(k.a.data(), 16);
        mix(k.b.data(), 16);
        mix(reinterpret_cast<const uint8_t *>(&k.pa), 2);
        mix(reinterpret_cast<const uint8_t *>(&k.pb), 2);
        return h;
    }
};

struct Counts {
    uint64_t packets = 0, bytes = 0;
};

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: libtins_flows FILE\n");
        return 2;
    }
    FileSniffer sniffer(argv[1]);
    std::unordered_map<Key, Counts, KeyHash> flows;
    flows.reserve(1 << 16);
    sniffer.sniff_loop([&](PDU &pdu) {
        std::array<uint8_t, 16> src{}, dst{};
        if (const IP *ip = pdu.find_pdu<IP>()) {
            uint32_t s = ip->src_addr(), d = ip->dst_addr();
            std::memcpy(src.data(), &s, 4);
            std::memcpy(dst.data(), &d, 4);
        } else if (const IPv6 *ip6 = pdu.find_pdu<IPv6>()) {
            ip6->src_addr().copy(src.begin());
            ip6->dst_addr().copy(dst.begin());
        } else {
            return true;
        }
        uint16_t sp, dp;
        uint8_t proto;
        if (const TCP *tcp = pdu.find_pdu<TCP>()) {
            sp = tcp->sport(), dp = tcp->dport(), proto = 6;
        } else if (const UDP *udp = pdu.find_pdu<UDP>()) {
            sp = udp->sport(), dp = udp->dport(), proto = 17;
        } else {
            return true;
        }
        Key k;
        if (std::make_pair(src, sp) <= std::make_pair(dst, dp)) {
            k = Key{src, dst, sp, dp, proto};
        } else {
            k = Key{dst, src, dp, sp, proto};
        }
        Counts &c = flows[k];
        c.packets++;
        c.bytes += pdu.size();
        return true;
    });
    uint64_t v[6] = {0};
    for (const auto &f : flows) {
        int i = f.first.proto == 6 ? 0 : 3;
        v[i]++;
        v[i + 1] += f.second.packets;
        v[i + 2] += f.second.bytes;
    }
    std::printf("tcp_flows %llu\ntcp_packets %llu\ntcp_bytes %llu\nudp_flows %llu\nudp_packets %llu\nudp_bytes %llu\n",
                (unsigned long long)v[0], (unsigned long long)v[1], (unsigned long long)v[2],
                (unsigned long long)v[3], (unsigned long long)v[4], (unsigned long long)v[5]);
    return 0;
}
