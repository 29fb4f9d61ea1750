#!/usr/bin/env bash
# Side-by-side comparison of tracekit with peer implementations of the same tasks, in one
# interleaved run: every command is run RUNS times (default 7), round-robin, and the
# table shows median wall-clock times, the ratio peer/tracekit (above 1: tracekit is
# faster) and whether the result lines agree.
#
#   T1 count      tracekit-bench t1   | libpcap (pcap_next_ex), libtrace 3, pcap-parser, gopacket
#   T2 tcp        tracekit-bench t2   | libtins, etherparse, gopacket
#   T3 tcpopts    tracekit-bench t3   | libtins, etherparse, gopacket
#   T4 dns        tracekit-bench t4   | libtins, domain, gopacket
#   T5 ports      tracekit-bench t5   | libtrace 3, etherparse, gopacket
#   T6 gzread     tracekit-bench t6   | libtrace 3, zcat | libpcap, flate2, Go gzip,
#                                       rapidgzip -P 2 (decompression alone)
#   T7 bz2read    tracekit-bench t7   | libtrace 3, bzcat | libpcap, lbzip2 -n 2 (alone)
#   T8 gzwrite    tracekit-bench t8   | libtrace 3, gzip -6
#   T10 flows     tracekit-bench t10  | gopacket (DecodingLayerParser), libtins (5-tuple
#                                         tables), tshark -q -z conv,tcp -z conv,udp
#   T11 streams   tracekit-bench t11  | gopacket (tcpassembly), libtins (TCPIP::StreamFollower)
#   merge         tracekit merge      | mergecap (the two halves of the full trace)
#   split         tracekit split      | editcap -c 100000
#   anon          tracekit anon       | traceanon -s -d -c KEY (libtrace 3; the IPv4 packets)
#   report        tracekit report     | tracereport (libtrace 3; every report but flows)
#
# The Rust and Go rows are ../shared/peers' programs (pcap-parser + etherparse + domain +
# flate2; gopacket), built by its build.sh into target/peers when that folder is there
# (PEERS=DIR names another); their known differences from tracekit's results are listed in
# its README. The C peers are written in benches/peers/ and built here with the system libraries
# (libpcap-dev, libtins-dev, libtrace3-dev; installed when run as root). Inputs come from
# tracekit-gen (400,000 packets; the same cut to 96 bytes; its DNS packets alone) unless BENCH_INPUT names a
# file to use for every task. RUNS=n sets the runs, ONLY=regex the tasks (by name). The peer harness of ../shared/bench, when present, can
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
cc -O2 -o "$out/libtrace_count" benches/peers/libtrace_count.c -ltrace
cc -O2 -o "$out/libtrace_gzwrite" benches/peers/libtrace_gzwrite.c -ltrace
g++ -O2 -o "$out/libtins_flows" benches/peers/libtins_flows.cpp -ltins
g++ -O2 -o "$out/libtins_streams" benches/peers/libtins_streams.cpp -ltins
# gopacket comes through the Go module proxy (go.sum pins it).
(cd benches/peers/gopacket_flows && go build -o "../../../$out/gopacket_flows" .)
(cd benches/peers/gopacket_streams && go build -o "../../../$out/gopacket_streams" .)
peers_src="${PEERS:-../shared/peers}"
if [ -x "$peers_src/build.sh" ] && { [ ! -x target/peers/rust-peer ] || [ ! -x target/peers/go-peer ]; }; then
    "$peers_src/build.sh" >/dev/null
fi
cargo build --release -q -p tracekit-bench --bin tracekit-bench --bin tracekit-gen
cargo build --release -q -p tracekit-cli
bin=${CARGO_TARGET_DIR:-target}/release

full="${BENCH_INPUT:-$out/gen-400000.pcap}"
snap="${BENCH_INPUT:-$out/gen-400000-snap96.pcap}"
# tracereport writes its reports into the current directory: the report row runs it in
# the write directory, so it needs the input by its absolute path.
full_abs=$(realpath -m "$full")
if [ -z "${BENCH_INPUT:-}" ]; then
    [ -f "$full" ] || "$bin/tracekit-gen" "$full" 400000 >/dev/null
    [ -f "$snap" ] || "$bin/tracekit" convert --snaplen 96 "$full" "$snap" 2>/dev/null \
        || cargo run --release -q -p tracekit-cli -- convert --snaplen 96 "$full" "$snap"
fi
dns="${BENCH_INPUT:-$out/gen-400000-dns.pcap}"
if [ -z "${BENCH_INPUT:-}" ] && [ ! -f "$dns" ]; then
    cargo run --release -q -p tracekit-cli -- convert -f "udp port 53" "$full" "$dns"
fi

# anon's input: the IPv4 packets (traceanon 3 rewrites no IPv6), so that both outputs hold
# the same packets.
v4="${BENCH_INPUT:-$out/gen-400000-v4.pcap}"
if [ -z "${BENCH_INPUT:-}" ] && [ ! -f "$v4" ]; then
    "$bin/tracekit" convert -f "ip" "$full" "$v4"
fi
key=tracekit-compare-key-32-bytes-ok

# Inputs of the compression and trace-tool tasks: gzip and bzip2 files as the standard
# tools write them (single stream), and the two halves of the full trace.
[ -f "$full.gz" ] || gzip -6 -c "$full" >"$full.gz"
[ -f "$full.bz2" ] || bzip2 -9 -c "$full" >"$full.bz2"
halves() { # FILE PREFIX: the first and second half of FILE's packets
    if [ ! -f "$2-000001.pcap" ]; then
        n=$("$bin/tracekit-bench" t1 "$1" | awk '/^packets/ {print $2}')
        "$bin/tracekit" split --packets $(((n + 1) / 2)) "$1" "$2.pcap" >/dev/null
    fi
}
half="$out/half"
halves "$full" "$half"
shalf="$out/snap-half"
halves "$snap" "$shalf"
# Outputs of T8, merge and split go to WRITE_DIR (default: target/compare; a tmpfs such
# as /dev/shm/tracekit takes the disk's writeback out of the comparison).
# Each round writes into a fresh directory (@W@ in the commands) and the previous round's
# is deleted between rounds, untimed: no tool pays for truncating or unlinking a file the
# kernel is still writing back.
wbase="${WRITE_DIR:-$out}/written"
rm -rf "$wbase"
w=@W@
tk="$bin/tracekit"
dg="$bin/tracekit-bench digest"

# The Rust and Go peers' rows, where they were built: tasks t1-t6 on the same inputs.
peer_rows=()
for peer in "rust-peer^pcap-parser/etherparse" "go-peer^gopacket"; do
    p=target/peers/${peer%%^*}
    [ -x "$p" ] || continue
    lib=${peer#*^}
    peer_rows+=(
        "T1 count^$bin/tracekit-bench t1 $full^$lib^$p t1 $full"
        "T1 count (96 B)^$bin/tracekit-bench t1 $snap^$lib^$p t1 $snap"
        "T2 tcp^$bin/tracekit-bench t2 $full^$lib^$p t2 $full"
        "T2 tcp (96 B)^$bin/tracekit-bench t2 $snap^$lib^$p t2 $snap"
        "T3 tcpopts^$bin/tracekit-bench t3 $full^$lib^$p t3 $full"
        "T3 tcpopts (96 B)^$bin/tracekit-bench t3 $snap^$lib^$p t3 $snap"
        "T4 dns^$bin/tracekit-bench t4 $full^$lib^$p t4 $full"
        "T4 dns (DNS only)^$bin/tracekit-bench t4 $dns^$lib^$p t4 $dns"
        "T5 ports^$bin/tracekit-bench t5 $full^$lib^$p t5 $full"
        "T5 ports (96 B)^$bin/tracekit-bench t5 $snap^$lib^$p t5 $snap"
        "T6 gzread^$bin/tracekit-bench t6 $full.gz^$lib^$p t6 $full.gz"
    )
done
# Decompression alone on 2 cores, to /dev/null: a lower bound for any reader (no result
# lines, so these rows always show as differing).
command -v rapidgzip >/dev/null && peer_rows+=("T6 gzread^$bin/tracekit-bench t6 $full.gz^rapidgzip -P 2 (alone)^rapidgzip -d -c -P 2 $full.gz > /dev/null")
command -v lbzip2 >/dev/null && peer_rows+=("T7 bz2read^$bin/tracekit-bench t7 $full.bz2^lbzip2 -n 2 (alone)^lbzip2 -d -c -n 2 $full.bz2 > /dev/null")

# task ^ tracekit command ^ peer name ^ peer command [^ tracekit check ^ peer check]
# Without checks, the commands' own outputs are compared; with them, the checks' outputs
# (digests of the files written). Commands with | or > run under bash.
tasks=(
    "T1 count^$bin/tracekit-bench t1 $full^libpcap^$out/libpcap_count $full"
    "T1 count^$bin/tracekit-bench t1 $full^libtrace 3^$out/libtrace_count $full"
    "T1 count (96 B)^$bin/tracekit-bench t1 $snap^libpcap^$out/libpcap_count $snap"
    "T2 tcp^$bin/tracekit-bench t2 $full^libtins^$out/libtins_tasks t2 $full"
    "T2 tcp (96 B)^$bin/tracekit-bench t2 $snap^libtins^$out/libtins_tasks t2 $snap"
    "T3 tcpopts^$bin/tracekit-bench t3 $full^libtins^$out/libtins_tasks t3 $full"
    "T3 tcpopts (96 B)^$bin/tracekit-bench t3 $snap^libtins^$out/libtins_tasks t3 $snap"
    "T4 dns^$bin/tracekit-bench t4 $full^libtins^$out/libtins_tasks t4 $full"
    "T4 dns (DNS only)^$bin/tracekit-bench t4 $dns^libtins^$out/libtins_tasks t4 $dns"
    "T5 ports (96 B)^$bin/tracekit-bench t5 $snap^libtrace 3^$out/libtrace_ports $snap"
    "T6 gzread^$bin/tracekit-bench t6 $full.gz^libtrace 3^$out/libtrace_count $full.gz"
    "T6 gzread^$bin/tracekit-bench t6 $full.gz^zcat | libpcap^zcat $full.gz | $out/libpcap_count -"
    "T7 bz2read^$bin/tracekit-bench t7 $full.bz2^libtrace 3^$out/libtrace_count $full.bz2"
    "T7 bz2read^$bin/tracekit-bench t7 $full.bz2^bzcat | libpcap^bzcat $full.bz2 | $out/libpcap_count -"
    "T8 gzwrite^$bin/tracekit-bench t8 $full $w/t8-ours.pcap.gz^libtrace 3^$out/libtrace_gzwrite $full $w/t8-libtrace.pcap.gz^$dg $w/t8-ours.pcap.gz^$dg $w/t8-libtrace.pcap.gz"
    "T8 gzwrite^$bin/tracekit-bench t8 $full $w/t8-ours.pcap.gz^gzip -6^gzip -6 -c $full > $w/t8-gzip.pcap.gz^$dg $w/t8-ours.pcap.gz^$dg $w/t8-gzip.pcap.gz"
    "T10 flows^$bin/tracekit-bench t10 $full^gopacket^$out/gopacket_flows $full"
    "T10 flows^$bin/tracekit-bench t10 $full^libtins^$out/libtins_flows $full"
    "T10 flows (no bytes)^$bin/tracekit-bench t10 $full | grep -v bytes^tshark -z conv^tshark -n -q -r $full -z conv,tcp -z conv,udp 2>/dev/null | awk -f benches/peers/tshark_conv.awk"
    "T11 streams^$bin/tracekit-bench t11 $full^gopacket^$out/gopacket_streams $full"
    "T11 streams^$bin/tracekit-bench t11 $full^libtins^$out/libtins_streams $full"
    "merge halves^$tk merge -w $w/merge-ours.pcap $half-000000.pcap $half-000001.pcap^mergecap^mergecap -F pcap -w $w/merge-theirs.pcap $half-000000.pcap $half-000001.pcap^$dg $w/merge-ours.pcap^$dg $w/merge-theirs.pcap"
    "split 100k^$tk split --packets 100000 $full $w/split-ours/s.pcap^editcap -c^editcap -c 100000 $full $w/split-theirs/e.pcap^bash -c \"$dg $w/split-ours/*\"^bash -c \"$dg $w/split-theirs/*\""
    "merge halves (96 B)^$tk merge -w $w/smerge-ours.pcap $shalf-000000.pcap $shalf-000001.pcap^mergecap^mergecap -F pcap -w $w/smerge-theirs.pcap $shalf-000000.pcap $shalf-000001.pcap^$dg $w/smerge-ours.pcap^$dg $w/smerge-theirs.pcap"
    "anon^$tk anon --checksums zero -c $key $v4 $w/anon-ours.pcap^traceanon^traceanon -s -d -c $key pcapfile:$v4 pcapfile:$w/anon-theirs.pcap^$dg $w/anon-ours.pcap^$dg $w/anon-theirs.pcap"
    "report^$tk report --json $full > $w/report.json^tracereport^cd $w && tracereport pcapfile:$full_abs 2>/dev/null^grep -o packets.:[0-9]* $w/report.json | awk NR==1 | tr -dc 0-9^grep -o 'Total Packets: [0-9]*' $w/misc.rpt | tr -dc 0-9"
    "convert^$tk convert $full $w/conv-ours.pcap^editcap^editcap -F pcap $full $w/conv-theirs.pcap^$dg $w/conv-ours.pcap^$dg $w/conv-theirs.pcap"
    "convert^$tk convert $full $w/conv-ours2.pcap^tcpdump -r -w^tcpdump -r $full -w $w/conv-tcpdump.pcap 2>/dev/null^$dg $w/conv-ours2.pcap^$dg $w/conv-tcpdump.pcap"
    "convert^$tk convert $full $w/conv-ours3.pcap^cat > file (floor)^cat $full > $w/conv-cat.pcap^$dg $w/conv-ours3.pcap^$dg $w/conv-cat.pcap"
    "convert (96 B)^$tk convert $snap $w/sconv-ours.pcap^editcap^editcap -F pcap $snap $w/sconv-theirs.pcap^$dg $w/sconv-ours.pcap^$dg $w/sconv-theirs.pcap"
    "convert (96 B)^$tk convert $snap $w/sconv-ours2.pcap^tcpdump -r -w^tcpdump -r $snap -w $w/sconv-tcpdump.pcap 2>/dev/null^$dg $w/sconv-ours2.pcap^$dg $w/sconv-tcpdump.pcap"
    "convert (96 B)^$tk convert $snap $w/sconv-ours3.pcap^cat > file (floor)^cat $snap > $w/sconv-cat.pcap^$dg $w/sconv-ours3.pcap^$dg $w/sconv-cat.pcap"
    "convert to /dev/null^$tk convert --format pcap $full /dev/null^T1 count (reading alone)^$bin/tracekit-bench t1 $full^$tk convert $full - | $bin/tracekit-bench t1 -^$bin/tracekit-bench t1 $full"
    "convert to /dev/null (96 B)^$tk convert --format pcap $snap /dev/null^T1 count (reading alone)^$bin/tracekit-bench t1 $snap^$tk convert $snap - | $bin/tracekit-bench t1 -^$bin/tracekit-bench t1 $snap"
    "split 100k (96 B)^$tk split --packets 100000 $snap $w/ssplit-ours/s.pcap^editcap -c^editcap -c 100000 $snap $w/ssplit-theirs/e.pcap^bash -c \"$dg $w/ssplit-ours/*\"^bash -c \"$dg $w/ssplit-theirs/*\""
    "${peer_rows[@]}"
)

# ONLY=regex keeps the tasks whose name matches.
if [ -n "${ONLY:-}" ]; then
    kept=()
    for t in "${tasks[@]}"; do
        [[ ${t%%^*} =~ $ONLY ]] && kept+=("$t")
    done
    tasks=("${kept[@]}")
fi

now() { date +%s%N; }
declare -A times
for ((r = 0; r < runs; r++)); do
    rm -rf "$wbase"
    mkdir -p "$wbase"/{split-ours,split-theirs,ssplit-ours,ssplit-theirs}
    sync
    for i in "${!tasks[@]}"; do
        IFS='^' read -r _ ours _ theirs _ <<<"${tasks[$i]}"
        for side in ours theirs; do
            cmd="${!side}"
                        cmd="${cmd//@W@/$wbase}"
            # Untimed: earlier rounds' and rows' written data goes to disk first, so
            # that no command is slowed by another's writeback.
            [[ $cmd == *@W@* || ${tasks[$i]} == *"$wbase"* || ${!side} == *@W@* ]] && sync
            t0=$(now)
            if [[ $cmd == *[\|\>]* ]]; then
                bash -c "$cmd" >"$out/result-$i-$side.txt"
            else
                $cmd >"$out/result-$i-$side.txt"
            fi
            t1=$(now)
            times[$i-$side]+="$(((t1 - t0) / 1000)) "
        done
    done
done

median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf "| task | tracekit | peer | peer time | peer / tracekit | results |\n|---|---|---|---|---|---|\n"
status=0
for i in "${!tasks[@]}"; do
    IFS='^' read -r name _ peer _ check_ours check_theirs <<<"${tasks[$i]}"
    if [ -n "${check_ours:-}" ]; then
        eval "${check_ours//@W@/$wbase}" >"$out/result-$i-ours.txt"
        eval "${check_theirs//@W@/$wbase}" >"$out/result-$i-theirs.txt"
    fi
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
