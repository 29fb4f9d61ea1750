#!/usr/bin/env bash
# `tracekit export` to Parquet against what people do today to get packet fields into a
# data frame: `tshark -T fields -E separator=,` to CSV, then pandas `read_csv`. One
# interleaved run (RUNS=n for more, round-robin): wall-clock time of each step, output
# size, and the time pandas takes to load each output.
#
#   tracekit  tracekit export -e FIELDS --parquet out.parquet INPUT     (+ pandas read_parquet)
#   tshark    tshark -r INPUT -T fields -E separator=, -e FIELDS > out.csv  (+ pandas read_csv)
#
# The same twelve fields both ways. INPUT: BENCH_INPUT, or tracekit-gen's 400,000 packets
# (target/compare/gen-400000.pcap, made by benches/compare.sh). Needs the release binary
# and the Python venv (scripts/python-env; pandas, pyarrow).
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-1}"
input="${BENCH_INPUT:-target/compare/gen-400000.pcap}"
target="${CARGO_TARGET_DIR:-target}"
tracekit="$target/release/tracekit"
venv=$(./scripts/python-env)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fields=(frame.number frame.time_epoch frame.len ip.src ip.dst ip.proto tcp.srcport tcp.dstport
    tcp.flags tcp.len udp.srcport udp.dstport)
e_args=()
for f in "${fields[@]}"; do e_args+=(-e "$f"); done

now() { date +%s.%N; }
elapsed() { echo "$(now) - $1" | bc; }

for run in $(seq "$runs"); do
    t=$(now)
    "$tracekit" export "${e_args[@]}" --parquet "$out/t.parquet" "$input"
    tk=$(elapsed "$t")
    t=$(now)
    tshark -n -r "$input" -T fields -E separator=, -E header=y "${e_args[@]}" >"$out/t.csv" 2>/dev/null
    ts=$(elapsed "$t")
    load() {
        "$venv/bin/python" -c "
import sys, time, pandas as pd
t = time.perf_counter()
df = pd.read_csv(sys.argv[1], low_memory=False) if sys.argv[1].endswith('.csv') else pd.read_parquet(sys.argv[1])
print(f'{time.perf_counter() - t:.2f} {len(df)}')" "$1"
    }
    read -r pq_load pq_rows <<<"$(load "$out/t.parquet")"
    read -r csv_load csv_rows <<<"$(load "$out/t.csv")"
    printf 'run %s: tracekit export %.2f s, %s bytes, pandas read_parquet %s s (%s rows)\n' \
        "$run" "$tk" "$(stat -c %s "$out/t.parquet")" "$pq_load" "$pq_rows"
    printf 'run %s: tshark to CSV   %.2f s, %s bytes, pandas read_csv     %s s (%s rows)\n' \
        "$run" "$ts" "$(stat -c %s "$out/t.csv")" "$csv_load" "$csv_rows"
done
