#!/usr/bin/env bash
# Regenerates the committed Rust bindings of dag-sys from tracekit's own headers with the
# bindgen command-line tool, or with --check verifies that the committed files are what
# bindgen produces (CI runs the check).
#
#   crates/dag-sys/regen.sh           rewrite src/bindings.rs and src/emulator_bindings.rs
#   crates/dag-sys/regen.sh --check   exit 1 if they differ from bindgen's output
#
# Needs libclang (Debian: apt-get install libclang-dev) and bindgen-cli at the version
# below (cargo install bindgen-cli --version $BINDGEN_VERSION --locked); rustfmt formats
# the output. Normal builds need neither: the output is committed.
#
# On a host with the vendor SDK, the declarations can be compared with the vendor's by
# building with `--features libdag` (a wrong signature then fails to link or misbehaves
# in the tests) and by reading both headers side by side.
set -euo pipefail
cd "$(dirname "$0")"

BINDGEN_VERSION=0.73.2
have=$(bindgen --version 2>/dev/null | awk '{print $2}') || true
if [ "$have" != "$BINDGEN_VERSION" ]; then
    echo "regen.sh: needs bindgen-cli $BINDGEN_VERSION (found: ${have:-none}); cargo install bindgen-cli --version $BINDGEN_VERSION --locked" >&2
    exit 2
fi

generate() {
    local out=$1
    bindgen include/dagapi_min.h -o "$out/bindings.rs" \
        --rust-target 1.88 \
        --allowlist-function 'dag_.*' \
        --allowlist-type 'dag_.*' --allowlist-type 'flags_t' \
        --allowlist-var 'DAG_.*' \
        --blocklist-type 'timeval|__time_t|__suseconds_t' \
        --raw-line 'use libc::timeval;'
    bindgen emulator/dagemu.h -o "$out/emulator_bindings.rs" \
        --rust-target 1.88 \
        --allowlist-function 'dagemu_.*'
    rustfmt --edition 2024 "$out/bindings.rs" "$out/emulator_bindings.rs"
}

if [ "${1:-}" = "--check" ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    generate "$tmp"
    status=0
    for f in bindings.rs emulator_bindings.rs; do
        if ! diff -u "src/$f" "$tmp/$f"; then
            echo "regen.sh: src/$f is not what bindgen produces from the headers; run crates/dag-sys/regen.sh" >&2
            status=1
        fi
    done
    exit $status
fi
generate src
echo "regen.sh: wrote src/bindings.rs and src/emulator_bindings.rs"
