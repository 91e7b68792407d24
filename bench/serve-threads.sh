#!/usr/bin/env bash
# Where chit serve's CPU goes under bench/serve.sh's load: one SQLite
# server, the same N envelopes from CLIENTS clients, and each of the
# server's threads' CPU time (from /proc) per entry, with its context
# switches; the load generator's own CPU beside it. Run bench/serve.sh
# first (it makes the envelopes, the key and the tokens).
#
#   bench/serve-threads.sh            # the build in target/release
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
work=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill "$server" 2> /dev/null; rm -rf "$work"' EXIT
"$chit" log init --store "$work/s.db" --key "$out/log.pem" --origin bench.example/threads --trust "$out/p/trust.toml" > /dev/null
# shellcheck disable=SC2086
"$chit" serve --store "$work/s.db" --key "$out/log.pem" --listen 127.0.0.1:18398 --tokens "$out/tokens.toml" ${SERVE_EXTRA:-} > "$work/serve.txt" 2>&1 &
server=$!
up=
for _ in $(seq 50); do curl -sf http://127.0.0.1:18398/healthz > /dev/null && { up=1; break; }; sleep 0.1; done
[ -n "$up" ] || { echo "the server did not start:"; cat "$work/serve.txt"; exit 1; }
# Each thread name: CPU ticks and context switches, summed over threads of
# that name.
threads() {
  for t in /proc/$server/task/*; do
    echo "$(tr ' ' _ < "$t/comm") $(awk '{print $14 + $15}' "$t/stat") $(awk '/ctxt/ {s += $2} END {print s}' "$t/status")"
  done | awk '{cpu[$1] += $2; cs[$1] += $3} END {for (k in cpu) print k, cpu[k], cs[k]}' | sort
}
# The whole process's CPU too: a thread that ends between the two samples
# (tokio's blocking threads idle out) is counted there, not by name.
process() { awk '{print $14 + $15}' "/proc/$server/stat"; }
p0=$(process)
threads > "$work/before"
/usr/bin/time -f "load generator: %U s user + %S s system" "$load" http://127.0.0.1:18398 loadtoken "$out/p/packets.jsonl" "$clients"
threads > "$work/after"
p1=$(process)
kill "$server"; wait "$server" || true
server=
tick=$(getconf CLK_TCK)
join "$work/before" "$work/after" | awk -v n="$n" -v tick="$tick" -v all="$((p1 - p0))" '
  { cpu = ($4 - $2) / tick * 1e6 / n; cs = ($5 - $3) / n; alls += cs
    printf "%-24s %6.1f us/entry  %5.2f switches/entry\n", $1, cpu, cs }
  END { printf "%-24s %6.1f us/entry  %5.2f switches/entry\n", "server, the process", all / tick * 1e6 / n, alls }'
