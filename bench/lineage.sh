#!/usr/bin/env bash
# Benchmark: numeric lineage, the gateway and the verifier.
#
#   bench/lineage.sh
#
# 1. Gateway overhead. `chit lineage measure` runs against chit-fixture
#    (coupled, step BENCH_STEP_MS) at levels BENCH_LEVELS (default 1,256:
#    255 fillers decoding beside each measured request at the top level),
#    BENCH_REQUESTS measured requests of BENCH_TOKENS tokens, BENCH_REPS
#    repetitions. A measured request's overhead is the gateway's elapsed_us
#    (from just before sending to its last token read) less the fixture's
#    own time for it (end_us - received_us, from /fixture/timings: until
#    the response's end, which is what the gateway waits for),
#    joined by response id. Target: under 1 ms at 256 in flight.
# 2. Verifying a receipt with a 10 MB transcript: `chit-corpus lineage`
#    writes a synthetic run (4 levels, 3 repetitions, 256 tokens a request,
#    token ids below BENCH_VOCAB) and its signed receipt; `chit verify
#    --transcript` is timed as one whole process, best of BENCH_ROUNDS.
#    Target: under a second.
#
# Needs curl (to read the fixture's timings). Prints the figures.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
levels=${BENCH_LEVELS:-1,256}
requests=${BENCH_REQUESTS:-8}
tokens=${BENCH_TOKENS:-16}
reps=${BENCH_REPS:-3}
step=${BENCH_STEP_MS:-2}
bytes=${BENCH_BYTES:-10485760}
vocab=${BENCH_VOCAB:-50000}
rounds=${BENCH_ROUNDS:-5}
work="$root/bench/out/lineage-measure"
synthetic="$root/bench/out/lineage-$bytes-$vocab"

cd "$root"
cargo build --quiet --release -p chit -p chit-fixture -p chit-corpus
bin="$root/target/release"
# chit never overwrites a file: every run measures into a fresh folder.
rm -rf "$work"
mkdir -p "$work"

fixture=""
stop_fixture() {
  if [ -n "$fixture" ]; then
    kill "$fixture" 2> /dev/null || true
    wait "$fixture" 2> /dev/null || true
    fixture=""
  fi
}
trap stop_fixture EXIT
"$bin/chit-fixture" --mode coupled --addr 127.0.0.1:0 --step-ms "$step" > "$work/fixture.log" 2>&1 &
fixture=$!
url=""
for _ in $(seq 100); do
  url=$(sed -n 's/^listening on //p' "$work/fixture.log")
  [ -n "$url" ] && break
  kill -0 "$fixture" 2> /dev/null || break
  sleep 0.05
done
if [ -z "$url" ]; then
  echo "chit-fixture did not start:" >&2
  cat "$work/fixture.log" >&2
  exit 1
fi

for i in $(seq 0 $((requests - 1))); do
  printf '{"prompt":"Request %d: tell me about the sea","max_tokens":%d}\n' "$i" "$tokens"
done > "$work/requests.jsonl"
"$bin/chit" keygen --out "$work/gateway.pem" > /dev/null
"$bin/chit" lineage bound --max-differing-positions 0 --min-first-divergent-index 0 \
  --max-distinct-sequences 1 --repetitions "$reps" --out "$work/bound.json" > /dev/null
sleep 1 # the bound must be committed (to the second) before the run starts

# CPU seconds a process has used, from /proc (user + system).
ticks=$(getconf CLK_TCK)
cpu_s() { awk -v t="$ticks" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$1/stat"; }
fixture_before=$(cpu_s "$fixture")
timed=()
if [ -x /usr/bin/time ]; then timed=(/usr/bin/time -f '%U %S %e' -o "$work/gateway.time"); fi
t0=$(date +%s.%N)
${timed[@]+"${timed[@]}"} "$bin/chit" lineage measure --endpoint "$url/v1" --model fixture-model \
  --requests "$work/requests.jsonl" --levels "$levels" --repetitions "$reps" \
  --bound "$work/bound.json" --key "$work/gateway.pem" --out "$work/receipt.json" \
  --transcript "$work/transcript.jsonl" > "$work/measure.log" 2>&1 ||
  { cat "$work/measure.log" >&2; exit 1; }
t1=$(date +%s.%N)
fixture_after=$(cpu_s "$fixture")
curl -sf "$url/fixture/timings" > "$work/timings.json"
stop_fixture
"$bin/chit" verify --quiet "$work/receipt.json" --transcript "$work/transcript.jsonl" > /dev/null

wall=$(echo "$t1 - $t0" | bc -l)
class=$(sed -n 's/^class *//p' "$work/measure.log")
printf 'gateway vs chit-fixture (coupled, step %s ms): levels %s, %d requests x %d tokens x %d repetitions, class %s\n' \
  "$step" "$levels" "$requests" "$tokens" "$reps" "$class"
printf '  overhead per measured request = elapsed_us - fixture (end_us - received_us), ms:\n'
ms() { echo "$1 / 1000" | bc -l; }
while read -r level in_flight n median p90 p99 max server; do
  c=$(echo "$levels" | cut -d, -f$((level + 1)))
  printf '  level %-4s (in flight at accept >= %3d, n=%2d): median %6.3f  p90 %6.3f  p99 %6.3f  max %6.3f   (fixture time median %.1f ms)\n' \
    "$c" "$in_flight" "$n" "$(ms "$median")" "$(ms "$p90")" "$(ms "$p99")" "$(ms "$max")" "$(ms "$server")"
done < <("$bin/chit-corpus" overhead "$work/transcript.jsonl" "$work/timings.json")
fixture_cpu=$(echo "$fixture_after - $fixture_before" | bc -l)
if [ -f "$work/gateway.time" ]; then
  read -r gu gs _ < "$work/gateway.time"
  printf '  CPU over %.2f s wall (%s cores, shared): gateway %.2f s user + %.2f s sys (%.0f%% of a core), fixture %.2f s (%.0f%% of a core)\n' \
    "$wall" "$(nproc)" "$gu" "$gs" "$(echo "100 * ($gu + $gs) / $wall" | bc -l)" \
    "$fixture_cpu" "$(echo "100 * $fixture_cpu / $wall" | bc -l)"
else
  printf '  CPU over %.2f s wall (%s cores, shared): fixture %.2f s (%.0f%% of a core)\n' \
    "$wall" "$(nproc)" "$fixture_cpu" "$(echo "100 * $fixture_cpu / $wall" | bc -l)"
fi

if [ ! -f "$synthetic/receipt.json" ]; then
  rm -rf "$synthetic"
  "$bin/chit-corpus" lineage "$synthetic" "$bytes" "$vocab"
fi
run() {
  "$bin/chit" verify --quiet "$synthetic/receipt.json" --transcript "$synthetic/transcript.jsonl" > /dev/null
}
run # warm the file cache; fails the benchmark if the receipt is not valid
best=$(best_of "$rounds" run)
size=$(wc -c < "$synthetic/transcript.jsonl")
lines=$(wc -l < "$synthetic/transcript.jsonl")
printf 'chit verify --transcript: %.1f MB transcript (%d lines, token ids < %d) in %.3f s (whole process, best of %s)\n' \
  "$(echo "$size / 1000000" | bc -l)" "$lines" "$vocab" "$best" "$rounds"
