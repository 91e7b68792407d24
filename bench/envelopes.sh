#!/usr/bin/env bash
# Benchmark: signed packets. One JSON Lines file of N (default 100,000)
# verification.packet.v1 envelopes in one stream, signed by one key that the
# trust file names; chit verifies every signature, art id, statement and
# payload, then the stream (P1-P8, --expect-count N).
#
#   bench/envelopes.sh
#
# Prints envelopes per second (best of ROUNDS) and chit's peak memory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
count=${BENCH_COUNT:-100000}
rounds=${BENCH_ROUNDS:-3}
dir="$root/bench/out/packets-$count"

cd "$root"
cargo build --quiet --release -p chit -p chit-corpus
# CHIT names another chit binary to time (bench/before-after.sh uses it).
chit=${CHIT:-./target/release/chit}
if [ ! -f "$dir/packets.jsonl" ]; then
  ./target/release/chit-corpus packets "$dir" "$count"
fi
run() {
  "$chit" verify --quiet --lines --trust "$dir/trust.toml" --expect-count "$count" "$dir/packets.jsonl" > /dev/null
}
run # warm the file cache; fails the benchmark if the stream is not valid

best=$(best_of "$rounds" run)
printf 'chit verify --lines: %d envelopes in %.3f s = %.0f envelopes/s (%s cores, best of %s)\n' \
  "$count" "$best" "$(echo "$count / $best" | bc -l)" "$(nproc)" "$rounds"
if [ -x /usr/bin/time ]; then
  peak=$( { /usr/bin/time -f '%M' "$chit" verify --quiet --lines --trust "$dir/trust.toml" \
    --expect-count "$count" "$dir/packets.jsonl" > /dev/null; } 2>&1 | tail -1)
  printf 'peak memory:         %d MiB for %d envelopes\n' "$((peak / 1024))" "$count"
fi
