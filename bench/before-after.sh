#!/usr/bin/env bash
# Times two chit binaries in one run, on the same generated inputs, with the
# benchmark scripts: run receipts (a folder), signed packets (JSON Lines with
# a trust file) and Lattice packets (JSON Lines). Rounds alternate between
# the two binaries so that drift on the machine falls on both.
#
#   bench/before-after.sh OLD_CHIT [NEW_CHIT] [PAIRS]
#
# NEW_CHIT defaults to ./target/release/chit (built first); PAIRS (default
# 3) is how many times each script runs per binary.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
old=$(realpath "$1")
new=$(realpath "${2:-$root/target/release/chit}")
pairs=${3:-3}
cd "$root"
cargo build --quiet --release -p chit -p chit-corpus
for script in run-receipts envelopes lattice; do
  for _ in $(seq "$pairs"); do
    for which in old new; do
      bin=$old
      [ "$which" = new ] && bin=$new
      printf '%-4s %-13s ' "$which" "$script"
      CHIT=$bin BENCH_ROUNDS=3 "$here/$script.sh" | sed -n 1p
    done
  done
done
