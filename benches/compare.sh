#!/usr/bin/env bash
# Side-by-side comparison of tracekit with peer implementations of the same tasks, in one
# interleaved run: every command is run RUNS times (default 7), round-robin, and the
# table shows median wall-clock times, the ratio peer/tracekit (above 1: tracekit is
# faster) and whether the result lines agree.
#
#   T1 count      tracekit-bench t1   | libpcap (pcap_next_ex)
#   T2 tcp        tracekit-bench t2   | libtins
#   T3 tcpopts    tracekit-bench t3   | libtins
#   T4 dns        tracekit-bench t4   | libtins
#   T5 ports      tracekit-bench t5   | libtrace 3
#
# The peers are written in benches/peers/ and built here with the system libraries
# (libpcap-dev, libtins-dev, libtrace3-dev; installed when run as root). Inputs come from
# tracekit-gen (400,000 packets; the same cut to 96 bytes; its DNS packets alone) unless BENCH_INPUT names a
# file to use for every task. The peer harness of ../shared/bench, when present, can
# call `tracekit-bench TASK FILE` directly.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-7}"
out=target/compare
mkdir -p "$out"

if [ "$(id -u)" = 0 ] && ! dpkg -s libtins-dev libtrace3-dev libpcap-dev g++ >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q libtins-dev libtrace3-dev libpcap-dev g++ >/dev/null
fi
cc -O2 -o "$out/libpcap_count" benches/peers/libpcap_count.c -lpcap
g++ -O2 -o "$out/libtins_tasks" benches/peers/libtins_tasks.cpp -ltins
cc -O2 -o "$out/libtrace_ports" benches/peers/libtrace_ports.c -ltrace
cargo build --release -q -p tracekit-bench --bin tracekit-bench --bin tracekit-gen
bin=target/release

full="${BENCH_INPUT:-$out/gen-400000.pcap}"
snap="${BENCH_INPUT:-$out/gen-400000-snap96.pcap}"
if [ -z "${BENCH_INPUT:-}" ]; then
    [ -f "$full" ] || "$bin/tracekit-gen" "$full" 400000 >/dev/null
    [ -f "$snap" ] || "$bin/tracekit" convert --snaplen 96 "$full" "$snap" 2>/dev/null \
        || cargo run --release -q -p tracekit-cli -- convert --snaplen 96 "$full" "$snap"
fi
dns="${BENCH_INPUT:-$out/gen-400000-dns.pcap}"
if [ -z "${BENCH_INPUT:-}" ] && [ ! -f "$dns" ]; then
    cargo run --release -q -p tracekit-cli -- convert -f "udp port 53" "$full" "$dns"
fi

# task | input | tracekit command | peer name | peer command
tasks=(
    "T1 count|$full|$bin/tracekit-bench t1 $full|libpcap|$out/libpcap_count $full"
    "T1 count (96 B)|$snap|$bin/tracekit-bench t1 $snap|libpcap|$out/libpcap_count $snap"
    "T2 tcp|$full|$bin/tracekit-bench t2 $full|libtins|$out/libtins_tasks t2 $full"
    "T2 tcp (96 B)|$snap|$bin/tracekit-bench t2 $snap|libtins|$out/libtins_tasks t2 $snap"
    "T3 tcpopts|$full|$bin/tracekit-bench t3 $full|libtins|$out/libtins_tasks t3 $full"
    "T3 tcpopts (96 B)|$snap|$bin/tracekit-bench t3 $snap|libtins|$out/libtins_tasks t3 $snap"
    "T4 dns|$full|$bin/tracekit-bench t4 $full|libtins|$out/libtins_tasks t4 $full"
    "T4 dns (DNS only)|$dns|$bin/tracekit-bench t4 $dns|libtins|$out/libtins_tasks t4 $dns"
    "T5 ports (96 B)|$snap|$bin/tracekit-bench t5 $snap|libtrace 3|$out/libtrace_ports $snap"
)

now() { date +%s%N; }
declare -A times
for ((r = 0; r < runs; r++)); do
    for i in "${!tasks[@]}"; do
        IFS='|' read -r _ _ ours _ theirs <<<"${tasks[$i]}"
        for side in ours theirs; do
            cmd="${!side}"
            t0=$(now)
            $cmd >"$out/result-$i-$side.txt"
            t1=$(now)
            times[$i-$side]+="$(((t1 - t0) / 1000)) "
        done
    done
done

median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf "| task | tracekit | peer | peer time | peer / tracekit | results |\n|---|---|---|---|---|---|\n"
status=0
for i in "${!tasks[@]}"; do
    IFS='|' read -r name _ _ peer _ <<<"${tasks[$i]}"
    a=$(echo "${times[$i-ours]}" | median)
    b=$(echo "${times[$i-theirs]}" | median)
    if cmp -s "$out/result-$i-ours.txt" "$out/result-$i-theirs.txt"; then
        same="identical"
    else
        same="DIFFER: $(diff "$out/result-$i-ours.txt" "$out/result-$i-theirs.txt" | grep '^[<>]' | head -2 | tr '\n' ' ' || true)"
        status=1
    fi
    awk -v n="$name" -v a="$a" -v b="$b" -v p="$peer" -v s="$same" \
        'BEGIN { printf "| %s | %.1f ms | %s | %.1f ms | %.2f× | %s |\n", n, a / 1000, p, b / 1000, b / a, s }'
done
echo
echo "$runs interleaved runs each, medians; inputs: $full, $snap, $dns"
if [ "$status" != 0 ]; then
    echo "Some results differ (< tracekit, > peer). Known: libtins drops the TCP layer of"
    echo "IPv6 packets cut by a snap length, so it counts fewer TCP packets on 96-byte inputs."
fi
