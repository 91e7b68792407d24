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
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
"$chit" log init --store "$work/s.db" --key "$out/log.pem" --origin bench.example/threads --trust "$out/p/trust.toml" > /dev/null
# shellcheck disable=SC2086
"$chit" serve --store "$work/s.db" --key "$out/log.pem" --listen 127.0.0.1:18398 --tokens "$out/tokens.toml" ${SERVE_EXTRA:-} > "$work/serve.txt" 2>&1 &
server=$!
for _ in $(seq 50); do curl -sf http://127.0.0.1:18398/healthz > /dev/null && break; sleep 0.1; done
# Each thread name: CPU ticks and context switches, summed over threads of
# that name.
threads() {
  for t in /proc/$server/task/*; do
    echo "$(tr ' ' _ < "$t/comm") $(awk '{print $14 + $15}' "$t/stat") $(awk '/ctxt/ {s += $2} END {print s}' "$t/status")"
  done | awk '{cpu[$1] += $2; cs[$1] += $3} END {for (k in cpu) print k, cpu[k], cs[k]}' | sort
}
threads > "$work/before"
/usr/bin/time -f "load generator: %U s user + %S s system" "$load" http://127.0.0.1:18398 loadtoken "$out/p/packets.jsonl" "$clients"
threads > "$work/after"
kill "$server"; wait "$server" || true
tick=$(getconf CLK_TCK)
join "$work/before" "$work/after" | awk -v n="$n" -v tick="$tick" '
  { cpu = ($4 - $2) / tick * 1e6 / n; cs = ($5 - $3) / n; all += cpu; alls += cs
    printf "%-24s %6.1f us/entry  %5.2f switches/entry\n", $1, cpu, cs }
  END { printf "%-24s %6.1f us/entry  %5.2f switches/entry\n", "server, all threads", all, alls }'
