#!/usr/bin/env bash
# The libtrace paper's Ports analysis in parallel: `tracekit ports --threads N` against the
# same analysis written with libtrace 4's parallel API (benches/peers/libtrace4_ports.c)
# with 1 and 2 per-packet threads, and against libtrace 3 (benches/peers/libtrace_ports.c,
# one thread). Every command runs RUNS times (default 7), round-robin in one interleaved
# run, so that a busy machine slows every row alike; the table shows median wall-clock and
# CPU (user + system) times, the ratio to `tracekit ports --threads 1` and whether the
# figures agree (attributed packets, non-first fragments, truncated, other, and the
# checksum over the whole port table, as benches/compare.sh's T5).
#
# Inputs: target/compare/gen-400000.pcap and gen-400000-snap96.pcap (what compare.sh uses;
# made with tracekit-gen when absent), or the files named in BENCH_INPUTS (space-separated).
# TARGET (default: $CARGO_TARGET_DIR or target) is where the tracekit binaries and inputs
# are; OUT (default: $TARGET/compare) where the peers are built and the outputs written.
#
# libtrace 4 is not packaged by Debian (bookworm has libtrace 3.0.22 only). Build it and
# libwandio 4 from their public sources into a prefix of their own, never over the
# system's libtrace 3 (LIBTRACE4_PREFIX, default /work/lt4). The commands used here
# (libtrace 4.0.34 at 29f1f67a, wandio 4.2.6 at 2c889c44):
#
#   apt-get install autoconf automake libtool flex bison pkg-config \
#       libpcap-dev zlib1g-dev libbz2-dev liblzma-dev
#   git clone https://github.com/LibtraceTeam/wandio && cd wandio
#   ./bootstrap.sh && ./configure --prefix=$LIBTRACE4_PREFIX --with-http=no
#   make -j2 && make install && cd ..
#   git clone https://github.com/LibtraceTeam/libtrace && cd libtrace
#   ./bootstrap.sh
#   CPPFLAGS=-I$LIBTRACE4_PREFIX/include \
#   LDFLAGS="-L$LIBTRACE4_PREFIX/lib -Wl,-rpath,$LIBTRACE4_PREFIX/lib" \
#       ./configure --prefix=$LIBTRACE4_PREFIX --without-dpdk --without-dag \
#       --without-pfring --without-xdp --with-man=no --without-ncurses --without-llvm
#   make -j2 && make install
#
# (configure's default CFLAGS, -g -O2, as a distribution package would have.) Set
# LIBTRACE4_SRC and WANDIO_SRC to the two source trees to have this script run those
# steps when the prefix has no libtrace 4 yet.
#
# The peer is linked with -I$PREFIX/include -L$PREFIX/lib -Wl,-rpath,$PREFIX/lib, so it
# never picks up the system's libtrace 3.
#
# CORPUS_CHECK=1 also compares the figures on every pcap of the corpus ($TRACEKIT_CORPUS or
# ../shared/corpus; not the corrupt__ ones) and lists the files where tracekit, libtrace 4
# (2 threads) and libtrace 3 disagree. Known differences (not timing): libtrace cannot
# decode some link types (BSD null/loop, raw IPv4 linktype 228, SLL with ARPHRD 0x212) or
# PBB, and counts those packets as "other"; the peers open files as pcapfile:, so pcapng
# content under a .pcap name and the modified (Kuznetzov) pcap magic are refused;
# libtrace's trace_get_transport() skips IPv4-carried IPv6 (6in4) to the inner transport
# where tracekit's Ports counts the outermost level; on a Linux cooked (SLL) capture whose
# protocol field is 0x0060 libtrace reads an Ethernet header behind it (as tshark and
# tracekit do not); and non-first IPv6 fragments get ports read from fragment payload in
# libtrace (the peers only recognise IPv4 fragments; libtrace 3 and 4 even differ there).
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-7}"
prefix="${LIBTRACE4_PREFIX:-/work/lt4}"
target="${TARGET:-${CARGO_TARGET_DIR:-target}}"
bin="$target/release"
out="${OUT:-$target/compare}"
mkdir -p "$out"

# As root on Debian: the system packages the peers (and a build from source) need.
if [ "$(id -u)" = 0 ]; then
    need=(libtrace3-dev libpcap-dev zlib1g-dev libbz2-dev liblzma-dev)
    [ -n "${LIBTRACE4_SRC:-}" ] && need+=(autoconf automake libtool flex bison pkg-config)
    dpkg -s "${need[@]}" >/dev/null 2>&1 \
        || DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null
fi
if [ ! -f "$prefix/include/libtrace_parallel.h" ]; then
    if [ -n "${LIBTRACE4_SRC:-}" ] && [ -n "${WANDIO_SRC:-}" ]; then
        (cd "$WANDIO_SRC" && ./bootstrap.sh && ./configure --prefix="$prefix" --with-http=no \
            && make -j2 && make install) >"$out/wandio-build.log" 2>&1
        (cd "$LIBTRACE4_SRC" && ./bootstrap.sh \
            && CPPFLAGS="-I$prefix/include" LDFLAGS="-L$prefix/lib -Wl,-rpath,$prefix/lib" \
                ./configure --prefix="$prefix" --without-dpdk --without-dag --without-pfring \
                --without-xdp --with-man=no --without-ncurses --without-llvm \
            && make -j2 && make install) >"$out/libtrace4-build.log" 2>&1
    else
        echo "benches/libtrace4.sh: no libtrace 4 in $prefix (no include/libtrace_parallel.h);" >&2
        echo "build it as this script's header says, or set LIBTRACE4_SRC and WANDIO_SRC" >&2
        exit 1
    fi
fi
cc -O2 -Wall -I"$prefix/include" -o "$out/libtrace4_ports" benches/peers/libtrace4_ports.c \
    -L"$prefix/lib" -Wl,-rpath,"$prefix/lib" -ltrace
cc -O2 -o "$out/libtrace3_ports" benches/peers/libtrace_ports.c -ltrace

if [ ! -x "$bin/tracekit" ] || [ ! -x "$bin/tracekit-bench" ] || [ ! -x "$bin/tracekit-gen" ]; then
    cargo build --release -q -p tracekit-cli -p tracekit-bench
fi
if [ -n "${BENCH_INPUTS:-}" ]; then
    read -r -a inputs <<<"$BENCH_INPUTS"
else
    full="$target/compare/gen-400000.pcap"
    snap="$target/compare/gen-400000-snap96.pcap"
    [ -f "$full" ] || full="$out/gen-400000.pcap"
    [ -f "$snap" ] || snap="$out/gen-400000-snap96.pcap"
    [ -f "$full" ] || "$bin/tracekit-gen" "$full" 400000 >/dev/null
    [ -f "$snap" ] || "$bin/tracekit" convert --snaplen 96 "$full" "$snap" >/dev/null
    inputs=("$full" "$snap")
fi

# name ^ command (FILE is replaced by the input). `tracekit ports` runs with --json, which
# prints every row of the table as the text output does; the figures are read from it.
# --threads N is N threads, the reading thread among them (it runs worker 0 with a small
# share of the flows); the default, 0, is one per core: 2 on this machine.
lt4="$out/libtrace4_ports"
commands=(
    "tracekit ports --threads 1^$bin/tracekit ports --json --threads 1 FILE"
    "tracekit ports --threads 2^$bin/tracekit ports --json --threads 2 FILE"
    "tracekit ports --threads 3^$bin/tracekit ports --json --threads 3 FILE"
    "libtrace 4, 1 per-packet thread^$lt4 -t 1 FILE"
    "libtrace 4, 2 threads, bidirectional hasher^$lt4 -t 2 -H bidirectional FILE"
    "libtrace 4, 2 threads, balance (no hasher)^$lt4 -t 2 -H balance FILE"
    "libtrace 3 (one thread)^$out/libtrace3_ports FILE"
)

# The five figures of a result file: the peers print them; tracekit's JSON has them as
# top-level keys (the rows' keys are other names).
figures() {
    if head -c1 "$1" | grep -q '{'; then
        for k in attributed_packets fragments truncated other checksum; do
            v=$(grep -o "\"$k\":[0-9]*" "$1" | head -1 | cut -d: -f2)
            echo "${k#attributed_} $v"
        done
    else
        # libtrace prints some warnings (unknown link types) to standard output.
        grep -E '^(packets|fragments|truncated|other|checksum) ' "$1" || true
    fi
}

TIMEFORMAT='%3R %3U %3S'
declare -A wall cpu
for ((r = 0; r < runs; r++)); do
    for f in "${!inputs[@]}"; do
        for c in "${!commands[@]}"; do
            IFS='^' read -r _ cmd <<<"${commands[$c]}"
            cmd="${cmd//FILE/${inputs[$f]}}"
            # bash's `time` keyword: wall, user and system seconds of the command and all
            # its threads, without an extra process.
            t=$({ time $cmd >"$out/lt4-$f-$c.txt" 2>"$out/lt4-$f-$c.err"; } 2>&1)
            read -r w u s <<<"$t"
            wall[$f-$c]+="$w "
            cpu[$f-$c]+="$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.3f", u + s }') "
        done
    done
done

median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
status=0
for f in "${!inputs[@]}"; do
    echo "${inputs[$f]}"
    echo
    printf "| command | wall (median) | vs tracekit 1 thread | CPU user+sys (median) | figures |\n"
    printf "|---|---|---|---|---|\n"
    base=$(echo "${wall[$f-0]}" | median)
    figures "$out/lt4-$f-0.txt" >"$out/lt4-$f-ref.txt"
    for c in "${!commands[@]}"; do
        IFS='^' read -r name _ <<<"${commands[$c]}"
        w=$(echo "${wall[$f-$c]}" | median)
        u=$(echo "${cpu[$f-$c]}" | median)
        if figures "$out/lt4-$f-$c.txt" | cmp -s - "$out/lt4-$f-ref.txt"; then
            same="same"
        else
            same="DIFFER: $(figures "$out/lt4-$f-$c.txt" | diff "$out/lt4-$f-ref.txt" - | grep '^[<>]' | head -2 | tr '\n' ' ' || true)"
            status=1
        fi
        awk -v n="$name" -v w="$w" -v b="$base" -v u="$u" -v s="$same" \
            'BEGIN { printf "| %s | %.0f ms | %.2f× | %.0f ms | %s |\n", n, w * 1000, w / b, u * 1000, s }'
    done
    echo
    echo "figures: $(tr '\n' ' ' <"$out/lt4-$f-ref.txt")"
    echo
done
echo "$runs interleaved runs of every command, medians; $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end."
echo "vs tracekit 1 thread: the command's median wall time / that of tracekit ports --threads 1 (below 1: faster)."

if [ "${CORPUS_CHECK:-}" = 1 ]; then
    corpus="${TRACEKIT_CORPUS:-../shared/corpus}"
    echo
    echo "Corpus check ($corpus): files where the figures differ (tracekit | libtrace 4 -t 2 | libtrace 3)"
    n=0
    d=0
    for path in "$corpus"/*.pcap "$corpus"/*.pcap.gz; do
        [[ $(basename "$path") == corrupt__* ]] && continue
        n=$((n + 1))
        "$bin/tracekit" ports --json --threads 1 "$path" >"$out/lt4-c-tk.txt" 2>/dev/null || true
        figures "$out/lt4-c-tk.txt" >"$out/lt4-c-tk-figures.txt"
        "$lt4" -t 2 "$path" >"$out/lt4-c-l4-raw.txt" 2>/dev/null || true
        figures "$out/lt4-c-l4-raw.txt" >"$out/lt4-c-l4.txt"
        "$out/libtrace3_ports" "$path" >"$out/lt4-c-l3-raw.txt" 2>/dev/null || true
        figures "$out/lt4-c-l3-raw.txt" >"$out/lt4-c-l3.txt"
        if ! cmp -s "$out/lt4-c-tk-figures.txt" "$out/lt4-c-l4.txt" \
            || ! cmp -s "$out/lt4-c-l3.txt" "$out/lt4-c-l4.txt"; then
            d=$((d + 1))
            echo "  $(basename "$path"):"
            paste "$out/lt4-c-tk-figures.txt" "$out/lt4-c-l4.txt" "$out/lt4-c-l3.txt" | sed 's/^/    /'
        fi
    done
    echo "$n files, $d differ"
fi

# Untimed: how each run spread the work (tracekit's per-worker figures, libtrace 4's threads).
echo
for c in 1 2; do
    IFS='^' read -r name cmd <<<"${commands[$c]}"
    cmd="${cmd//FILE/${inputs[0]}}"
    echo "$name: $($cmd --stats 2>&1 >/dev/null | tail -3)"
done
for c in 3 4 5; do
    IFS='^' read -r name cmd <<<"${commands[$c]}"
    cmd="${cmd//FILE/${inputs[0]}}"
    echo "$name: $(LIBTRACE4_PORTS_STATS=1 $cmd 2>&1 >/dev/null)"
done

# PROFILE=1 (needs perf): the share of the CPU samples of each thread in the two-thread runs
# on the first input, to see which thread limits scaling (tracekit's threads are unnamed:
# the reader is the one in Reader::next_packet; libtrace names its threads).
if [ "${PROFILE:-}" = 1 ] && command -v perf >/dev/null; then
    for c in 2 4 5; do
        IFS='^' read -r name cmd <<<"${commands[$c]}"
        cmd="${cmd//FILE/${inputs[0]}}"
        perf record -q -o "$out/lt4-perf.data" $cmd >/dev/null 2>&1
        echo
        echo "$name: share of CPU samples per thread (tid:name), its top two symbols (share of all samples)"
        perf report -i "$out/lt4-perf.data" --no-children -s pid --stdio 2>/dev/null \
            | awk '/^ +[0-9]/ && n++ < 6 { print $2, $1 }' >"$out/lt4-perf-threads.txt"
        perf report -i "$out/lt4-perf.data" --no-children -s pid,sym --stdio 2>/dev/null \
            | awk '/^ +[0-9]/ { if (seen[$2]++ < 2) { s = $1; for (i = 4; i <= NF; i++) s = s " " $i; top[$2] = top[$2] (top[$2] ? "; " : "") s } }
                   END { while ((getline l < f) > 0) { split(l, a, " "); print "  " a[2] " " a[1] ": " top[a[1]] } }' \
                f="$out/lt4-perf-threads.txt"
    done
fi
exit "$status"
