#!/usr/bin/env bash
# Where chit serve's CPU goes under bench/serve.sh's load: the same N
# envelopes from CLIENTS clients, and each of the server's threads' CPU
# time (from /proc) per entry, with its context switches, summed by thread
# name; the load generator's own CPU, and the whole machine's busy CPU over
# the run (/proc/stat) with what is left of it (the kernel's flusher
# threads, and PostgreSQL's own processes). Run bench/serve.sh first (it
# makes the envelopes, the key and the tokens).
#
#   bench/serve-threads.sh            # one server on SQLite, target/release
#   bench/serve-threads.sh postgres   # two servers on one PostgreSQL log
#                                     # (CHIT_BENCH_POSTGRES), clients split
#   CHIT=path/to/chit bench/serve-threads.sh
#   SERVE_EXTRA=--quiet bench/serve-threads.sh   # without the access log
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
mode=${1:-sqlite}
work=$(mktemp -d)
servers=()
schema=
pg=${CHIT_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432/test}
cleanup() {
  [ ${#servers[@]} -gt 0 ] && kill "${servers[@]}" 2> /dev/null
  if [ -n "$schema" ]; then
    psql "${pg%%\?*}" -q -c "DROP SCHEMA IF EXISTS $schema CASCADE" > /dev/null 2>&1 || echo "(drop schema $schema by hand)"
  fi
  rm -rf "$work"
}
trap cleanup EXIT
case "$mode" in
  sqlite) store="$work/s.db"; ports=(18398) ;;
  postgres)
    schema="bench_threads_$$"
    sep='?'; case "$pg" in *\?*) sep='&';; esac
    store="$pg${sep}schema=$schema"; ports=(18396 18397) ;;
  *) echo "usage: bench/serve-threads.sh [sqlite|postgres]"; exit 2 ;;
esac
"$chit" log init --store "$store" --key "$out/log.pem" --origin bench.example/threads --trust "$out/p/trust.toml" > /dev/null
urls=
for port in "${ports[@]}"; do
  # shellcheck disable=SC2086
  "$chit" serve --store "$store" --key "$out/log.pem" --listen "127.0.0.1:$port" --tokens "$out/tokens.toml" ${SERVE_EXTRA:-} > "$work/serve-$port.txt" 2>&1 &
  servers+=($!)
  up=
  for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/healthz" > /dev/null && { up=1; break; }; sleep 0.1; done
  [ -n "$up" ] || { echo "the server on $port did not start:"; cat "$work/serve-$port.txt"; exit 1; }
  urls="${urls:+$urls,}http://127.0.0.1:$port"
done
# Each thread name: CPU ticks and context switches, summed over threads of
# that name (and over the servers).
threads() {
  for s in "${servers[@]}"; do
    for t in /proc/$s/task/*; do
      echo "$(tr ' ' _ < "$t/comm") $(awk '{print $14 + $15}' "$t/stat") $(awk '/ctxt/ {s += $2} END {print s}' "$t/status")"
    done
  done | awk '{cpu[$1] += $2; cs[$1] += $3} END {for (k in cpu) print k, cpu[k], cs[k]}' | sort
}
# The whole processes' CPU too: a thread that ends between the two samples
# (tokio's blocking threads idle out) is counted there, not by name.
process() { for s in "${servers[@]}"; do cat "/proc/$s/stat"; done | awk '{s += $14 + $15} END {print s}'; }
p0=$(process)
threads > "$work/before"
read -r -a m0 < /proc/stat
/usr/bin/time -o "$work/time" -f "%U %S" "$load" "$urls" loadtoken "$out/p/packets.jsonl" "$clients"
read -r -a m1 < /proc/stat
threads > "$work/after"
p1=$(process)
kill "${servers[@]}"; wait "${servers[@]}" || true
servers=()
tick=$(getconf CLK_TCK)
join "$work/before" "$work/after" | awk -v n="$n" -v tick="$tick" -v all="$((p1 - p0))" '
  { cpu = ($4 - $2) / tick * 1e6 / n; cs = ($5 - $3) / n; alls += cs
    printf "%-24s %6.1f us/entry  %5.2f switches/entry\n", $1, cpu, cs }
  END { printf "%-24s %6.1f us/entry  %5.2f switches/entry\n", "server, the process", all / tick * 1e6 / n, alls }'
# /proc/stat's cpu line: user nice system idle iowait irq softirq steal.
busy=0; idle=0
for i in 1 2 3 6 7; do busy=$((busy + m1[i] - m0[i])); done
for i in 4 5 8; do idle=$((idle + m1[i] - m0[i])); done
awk -v n="$n" -v tick="$tick" -v srv="$((p1 - p0))" -v busy="$busy" -v idle="$idle" -v t="$(cat "$work/time")" '
  BEGIN { split(t, lt, " "); us = 1e6 / n
          s = srv / tick * us; l = (lt[1] + lt[2]) * us; all = busy / tick * us
          printf "%-24s %6.1f us/entry (%.2f s user + %.2f s system)\n", "load generator", l, lt[1], lt[2]
          printf "%-24s %6.1f us/entry (busy CPU over the run)\n", "the machine", all
          printf "%-24s %6.1f us/entry (by difference)\n", "the rest", all - s - l
          printf "idle, waiting on the disk or stolen: %.1f%% of the cores\n", 100 * idle / (busy + idle) }'
