# Sums `tshark -q -z conv,tcp -z conv,udp` into the lines `tracekit-bench t10` prints
# (without the byte counts, which tshark rounds to kB/MB): conversations and frames per
# protocol. For benches/compare.sh.
/^TCP Conversations/ { p = "tcp" }
/^UDP Conversations/ { p = "udp" }
$2 == "<->" { flows[p]++; frames[p] += $10 }
END {
    printf "tcp_flows %d\ntcp_packets %d\nudp_flows %d\nudp_packets %d\n", flows["tcp"], frames["tcp"], flows["udp"], frames["udp"]
}
