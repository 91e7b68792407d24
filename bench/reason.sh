#!/usr/bin/env bash
# Benchmark: Zerker Reason certificates held to their requests. One JSON
# Lines file of N (default 20,000) copies of one authorization bundle;
# chit verifies each as a whole (A1-A3, A5, and A7-A9: every digest
# recomputed in Reason's encoding, the program rebuilt and the reasoning
# re-run, every proof replayed), as one whole process.
#
#   bench/reason.sh [BUNDLE]
#
# BUNDLE defaults to examples/reason/bundle.json. The issue's figure is for
# Reason's conformance suite's authorized bundle (about 22 KB;
# zerkerlabs/reason conformance/v1/inputs/authorized.bundle.json, not part
# of this repository): pass its path. Target: 5,000 certificates/s.
# Reason's own verifier cannot be built here, so there is no ratio.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
count=${BENCH_COUNT:-20000}
rounds=${BENCH_ROUNDS:-5}
bundle=${1:-$root/examples/reason/bundle.json}
file="$root/bench/out/reason-$(basename "$bundle" .json)-$count.jsonl"

cd "$root"
cargo build --quiet --release -p chit
chit=${CHIT:-./target/release/chit}
mkdir -p "$(dirname "$file")"
# One compact line per copy; numbers keep their literal spelling (Python's
# json keeps whole numbers exact).
python3 -c '
import json, sys
line = json.dumps(json.load(open(sys.argv[1])), separators=(",", ":"), ensure_ascii=False)
with open(sys.argv[2], "w") as out:
    for _ in range(int(sys.argv[3])):
        out.write(line + "\n")
' "$bundle" "$file" "$count"
bytes=$(head -1 "$file" | wc -c)

all() { "$chit" verify --lines --quiet --require-authorized "$file" > /dev/null; }
one() { taskset -c 0 "$chit" verify --lines --quiet --require-authorized "$file" > /dev/null; }
all # warm the file cache; fails the benchmark if a certificate does not verify as authorized

best=$(best_of "$rounds" all)
printf 'chit verify --lines --require-authorized: %d bundles of %d bytes in %.3f s = %.0f certificates/s (%s cores, whole process, best of %s)\n' \
  "$count" "$bytes" "$best" "$(echo "$count / $best" | bc -l)" "$(nproc)" "$rounds"
best=$(best_of "$rounds" one)
printf 'the same on one core:                     %.3f s = %.0f certificates/s\n' \
  "$best" "$(echo "$count / $best" | bc -l)"
