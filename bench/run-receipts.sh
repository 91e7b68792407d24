#!/usr/bin/env bash
# Benchmark: chit verify against the reference verifier over a folder of
# generated run receipts (20,000 by default), on this machine, in one run.
#
#   bench/run-receipts.sh [PATH/TO/run-receipts/verify.mjs]
#
# chit is timed as a user runs it: one process over the folder
# (`chit verify --quiet DIR`), start-up, directory walk and file reads
# included, best of ROUNDS. The reference is timed in one warm Node process
# (bench/reference-warm.mjs), best of ROUNDS after a warm-up pass. Without
# Node or the reference, only chit's figure is printed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
reference=${1:-}
count=${BENCH_COUNT:-20000}
rounds=${BENCH_ROUNDS:-5}
dir="$root/bench/out/receipts-$count"

cd "$root"
cargo build --quiet --release -p chit -p chit-corpus
# CHIT names another chit binary to time (bench/before-after.sh uses it).
chit=${CHIT:-./target/release/chit}
if [ ! -d "$dir" ] || [ "$(find "$dir" -name '*.json' | wc -l)" -ne "$count" ]; then
  rm -rf "$dir"
  ./target/release/chit-corpus files "$dir" "$count" 7
fi
# Warm the file cache and check the answer once.
set +e
"$chit" verify --quiet "$dir" > /dev/null
set -e

run() {
  "$chit" verify --quiet "$dir" > /dev/null || true
}
best=$(best_of "$rounds" run)
chit_rate=$(echo "$count / $best" | bc -l)
printf 'chit verify:     %6d receipts in %.3f s = %8.0f receipts/s (%s cores, best of %s)\n' \
  "$count" "$best" "$chit_rate" "$(nproc)" "$rounds"

read -r _ floor_s < <(./target/release/chit-corpus read-floor "$dir")
floor_rate=$(echo "$count / $floor_s" | bc -l)
printf 'read floor:      %6d files    in %.3f s = %8.0f files/s    (list and read only, no checking: a ceiling)\n' \
  "$count" "$floor_s" "$floor_rate"

if [ -n "$reference" ] && [ -f "$reference" ] && command -v node > /dev/null; then
  ref=$(node "$here/reference-warm.mjs" "$reference" "$dir" "$rounds")
  ref_s=$(echo "$ref" | sed 's/.*"seconds":\([0-9.e+-]*\).*/\1/')
  ref_rate=$(echo "$count / $ref_s" | bc -l)
  printf 'verify.mjs warm: %6d receipts in %.3f s = %8.0f receipts/s (one Node process, best of %s)\n' \
    "$count" "$ref_s" "$ref_rate" "$rounds"
  printf 'ratio:           %.1fx (the read floor alone would be %.1fx)\n' \
    "$(echo "$chit_rate / $ref_rate" | bc -l)" "$(echo "$floor_rate / $ref_rate" | bc -l)"
else
  echo "reference: not run (give the path to verify.mjs, and have node on PATH, to compare)"
fi
