#!/usr/bin/env bash
# Live capture rates: the highest packet rate captured without drops by `tracekit
# capture` (1 and 2 fan-out members) and by `tcpdump -w /dev/null`, on one veth pair
# between two network namespaces, with tracekit-livegen sending in the other namespace.
# Needs root. Every capturer gets the same rates and packet counts; it "keeps up" at a
# rate when its own counters report no kernel drop and it captured every packet sent.
#
#   COUNT=packets per run (default 1000000)  SIZE=frame bytes (default 64)
#   RATES="250000 500000 ..." (packets/s; 0 = as fast as the generator can send)
#   OUT=file every capturer writes (default /dev/null, as the issue asks; a file on
#   disk or tmpfs adds the write cost)
#   THREADS=generator threads (default 1; 2 makes the generator compete with the
#   capturer for this machine's two CPUs)
set -euo pipefail
cd "$(dirname "$0")/.."
count="${COUNT:-1000000}"
size="${SIZE:-64}"
rates="${RATES:-250000 500000 750000 1000000 1250000 1500000 0}"
threads="${THREADS:-1}"
out="${OUT:-/dev/null}"
[ "$(id -u)" = 0 ] || { echo "benches/live.sh needs root (network namespaces)" >&2; exit 1; }
command -v tcpdump >/dev/null || apt-get install -y -qq tcpdump >/dev/null
cargo build --release -q -p tracekit-cli -p tracekit-bench
bin=target/release
a="tklive$$a"
b="tklive$$b"
cleanup() { ip netns del "$a" 2>/dev/null || true; ip netns del "$b" 2>/dev/null || true; }
trap cleanup EXIT
for ns in "$a" "$b"; do
    ip netns add "$ns"
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
done
ip link add va netns "$a" type veth peer name vb netns "$b"
ip -n "$a" link set va up
ip -n "$b" link set vb up
log=$(mktemp)

# name | command (run in namespace b; it must print its drop counter on SIGINT)
capturers=(
    "tracekit, 1 member (64 MiB ring)|$bin/tracekit capture -i vb --format pcap -w $out"
    "tracekit, 2 members (2 × 64 MiB)|$bin/tracekit capture -i vb --members 2 --format pcap -w $out"
    "tracekit, 1 member (2 MiB ring)|$bin/tracekit capture -i vb --block-size 131072 --blocks 16 --format pcap -w $out"
    "tcpdump (default 2 MiB buffer)|tcpdump -i vb -n -w $out"
    "tcpdump -B 65536 (64 MiB)|tcpdump -i vb -n -B 65536 -w $out"
)

# Prints "captured dropped" from a capturer's final report.
parse() {
    if grep -q "tracekit capture:" "$1"; then
        grep -E "packets captured" "$1" | tail -1 | \
            sed -E 's/.* ([0-9]+) packets captured, ([0-9]+) received by the socket, ([0-9]+) dropped by the kernel.*/\1 \3/'
    else
        c=$(grep -E "^[0-9]+ packets captured" "$1" | awk '{print $1}')
        d=$(grep -E "^[0-9]+ packets dropped by kernel" "$1" | awk '{print $1}')
        echo "$c $d"
    fi
}

echo "| capturer | rate asked (pps) | rate sent (pps) | captured | dropped |"
echo "|---|---|---|---|---|"
declare -A best
# ONLY=regex keeps the capturers whose name matches; REPEAT=n runs each rate n times.
for entry in "${capturers[@]}"; do
    IFS='|' read -r name cmd <<<"$entry"
    [[ $name =~ ${ONLY:-.} ]] || continue
    best[$name]="none"
        for rate in $(for r in $rates; do for ((k = 0; k < ${REPEAT:-1}; k++)); do echo "$r"; done; done); do
        ip netns exec "$b" $cmd >"$log" 2>&1 &
        pid=$!
        sleep 0.7
        sent=$(ip netns exec "$a" "$bin/tracekit-livegen" va "$count" "$rate" "$size" 1024 "$threads" | awk '/^rate/ {print $2}')
                sleep 1.5 # tcpdump's blocks wait up to its 1 s timeout
        kill -INT "$pid"
        wait "$pid" || true
        [ "$out" = /dev/null ] || rm -f "$out"
                read -r captured dropped < <(parse "$log") || true
        captured="${captured:-?}" dropped="${dropped:-?}"
        echo "| $name | $rate | ${sent:-?} | $captured | $dropped |"
        if [ "$dropped" = 0 ] && [ "$captured" != "?" ] && [ "$captured" -ge "$count" ]; then
            best[$name]="$sent"
        fi
    done
done
echo
echo "Highest rate captured without drops ($count frames of $size bytes per run, 1024 flows, $threads sender thread(s), written to $out):"
echo
echo "| capturer | packets/s |"
echo "|---|---|"
for entry in "${capturers[@]}"; do
    IFS='|' read -r name _ <<<"$entry"
    [[ $name =~ ${ONLY:-.} ]] || continue
    echo "| $name | ${best[$name]} |"
done
rm -f "$log"
