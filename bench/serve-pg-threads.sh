#!/usr/bin/env bash
# Where the CPU goes with two chit servers on one PostgreSQL log under
# bench/serve.sh's load (the clients split between them): each server
# thread name's CPU per entry (both servers summed), the load generator's,
# and the whole machine's from /proc/stat over the run; PostgreSQL's own
# processes are what is left (by difference, with whatever else the
# machine ran). Run bench/serve.sh first (it makes the envelopes, the key
# and the tokens).
#
#   bench/serve-pg-threads.sh
#   CHIT_BENCH_POSTGRES=postgres://USER@HOST:PORT/DB bench/serve-pg-threads.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cd "$root"
out=bench/out/serve
[ -f "$out/p/packets.jsonl" ] || { echo "run bench/serve.sh first"; exit 2; }
chit=${CHIT:-./target/release/chit}
load=./target/release/examples/load
n=$(grep -c . "$out/p/packets.jsonl")
clients=${BENCH_CLIENTS:-256}
pg=${CHIT_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432/test}
schema="bench_threads_$$"
sep='?'; case "$pg" in *\?*) sep='&';; esac
url="$pg${sep}schema=$schema"
work=$(mktemp -d)
s1= s2=
cleanup() {
  kill $s1 $s2 2> /dev/null || true
  psql "${pg%%\?*}" -q -c "DROP SCHEMA IF EXISTS $schema CASCADE" > /dev/null 2>&1 || echo "(drop schema $schema by hand)"
  rm -rf "$work"
}
trap cleanup EXIT
"$chit" log init --store "$url" --key "$out/log.pem" --origin bench.example/pg-threads --trust "$out/p/trust.toml" > /dev/null
start() { # PORT
  "$chit" serve --quiet --store "$url" --key "$out/log.pem" --listen "127.0.0.1:$1" --tokens "$out/tokens.toml" > "$work/serve-$1.txt" 2>&1 &
  for _ in $(seq 50); do curl -sf "http://127.0.0.1:$1/healthz" > /dev/null && return; sleep 0.1; done
  echo "the server on $1 did not start:"; cat "$work/serve-$1.txt"; exit 1
}
start 18396; s1=$!
start 18397; s2=$!
threads() {
  for t in /proc/$s1/task/* /proc/$s2/task/*; do
    echo "$(tr ' ' _ < "$t/comm") $(awk '{print $14 + $15}' "$t/stat")"
  done | awk '{cpu[$1] += $2} END {for (k in cpu) print k, cpu[k]}' | sort
}
process() { cat "/proc/$s1/stat" "/proc/$s2/stat" | awk '{s += $14 + $15} END {print s}'; }
threads > "$work/before"; p0=$(process)
read -r -a m0 < /proc/stat
/usr/bin/time -o "$work/time" -f "%U %S" "$load" http://127.0.0.1:18396,http://127.0.0.1:18397 loadtoken "$out/p/packets.jsonl" "$clients"
read -r -a m1 < /proc/stat
threads > "$work/after"; p1=$(process)
tick=$(getconf CLK_TCK)
join "$work/before" "$work/after" | awk -v n="$n" -v tick="$tick" '
  { printf "%-24s %6.1f us/entry\n", $1, ($3 - $2) / tick * 1e6 / n }'
# /proc/stat's cpu line: user nice system idle iowait irq softirq steal
busy=0; idle=0
for i in 1 2 3 6 7; do busy=$((busy + m1[i] - m0[i])); done
for i in 4 5 8; do idle=$((idle + m1[i] - m0[i])); done
awk -v n="$n" -v tick="$tick" -v srv="$((p1 - p0))" -v busy="$busy" -v idle="$idle" -v t="$(cat "$work/time")" '
  BEGIN { split(t, lt, " ")
          us = 1e6 / n; s = srv / tick * us; l = (lt[1] + lt[2]) * us; all = busy / tick * us
          printf "%-24s %6.1f us/entry\n", "the two servers", s
          printf "%-24s %6.1f us/entry\n", "the load generator", l
          printf "%-24s %6.1f us/entry (busy CPU over the run)\n", "the machine", all
          printf "%-24s %6.1f us/entry (by difference)\n", "PostgreSQL and the rest", all - s - l
          printf "idle, waiting on the disk or stolen: %.1f%% of the cores\n", 100 * idle / (busy + idle) }'
