#!/usr/bin/env bash
# Benchmark: Lattice executor packets. One JSON Lines file of N (default
# 100,000) sealed lattice.executor_packet.v1 packets (pairs of
# content-preserving epoch rebinds, one in eight with a lone surrogate);
# chit verifies each (X1-X5: schema, canonical bytes, both digests) and the
# 50,000 rebinds (X6), as one whole process.
#
#   bench/lattice.sh [PATH/TO/Lattice]
#
# With a checkout of Lattice (github.com/kitepon/Lattice; not part of this
# repository), its own validator runs over the same file in one warm Node
# process, and the ratio is printed. Target: 100,000 packets/s.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
count=${BENCH_COUNT:-100000}
rounds=${BENCH_ROUNDS:-5}
lattice=${1:-}
file="$root/bench/out/lattice-$count.jsonl"

cd "$root"
cargo build --quiet --release -p chit -p chit-corpus
# CHIT names another chit binary to time (bench/before-after.sh uses it).
chit=${CHIT:-./target/release/chit}
if [ ! -f "$file" ]; then
  mkdir -p "$(dirname "$file")"
  ./target/release/chit-corpus lattice "$file" "$count"
fi
run() {
  "$chit" verify --lines --quiet "$file" > /dev/null
}
run # warm the file cache; fails the benchmark if a packet is not valid

best=$(best_of "$rounds" run)
chit_rate=$(echo "$count / $best" | bc -l)
printf 'chit verify --lines:  %d packets in %.3f s = %.0f packets/s (%s cores, whole process, best of %s)\n' \
  "$count" "$best" "$chit_rate" "$(nproc)" "$rounds"
if [ -n "$lattice" ]; then
  ref=$(node "$here/lattice-reference.mjs" "$lattice" "$file" "$rounds")
  ref_rate=$(echo "$ref" | sed 's/.*"per_second":\([0-9.]*\).*/\1/')
  ref_valid=$(echo "$ref" | sed 's/.*"valid":\([0-9]*\).*/\1/')
  printf 'Lattice (Node, warm): %d packets, %d valid, %.0f packets/s (one process, best of %s)\n' \
    "$count" "$ref_valid" "$ref_rate" "$rounds"
  printf 'ratio:                %.1fx\n' "$(echo "$chit_rate / $ref_rate" | bc -l)"
fi
