#!/usr/bin/env bash
# Benchmark: chit serve under load on loopback. N (default 50,000) signed
# packet envelopes from chit-corpus, each POSTed to /v1/entries by CLIENTS
# (default 256) concurrent clients of a load generator running as its own
# process (crates/chit/examples/load.rs), verification and proofs included;
# beside it, in the same run, `chit verify --lines --trust` on the same
# file (the floor), timed before and after each server run (each run is
# held to the mean of the two). Then two servers on one PostgreSQL log
# (CHIT_BENCH_POSTGRES), the clients split between them.
# Targets (issue 14): SQLite 40% of the verify rate with p99 under 50 ms;
# two servers on PostgreSQL 25%.
#
# BENCH_LINES=K sends K receipts a request as one JSON Lines body (what a
# gateway that gathers its receipts would send) instead of one receipt a
# request; the rate is then receipts a second and the latency a request's.
# The targets above are for one receipt a request (BENCH_LINES unset).
#
# The one server's log is a log folder (BENCH_STORE=file: one SQLite file).
#
# BENCH_OLD=path/to/chit also runs the one SQLite server, and the two
# servers on one PostgreSQL log, with that binary in each round,
# alternating which goes first, and ends with the new binary's rate over
# the old one's for each (median and range): a change measured against
# the binary before it in the same run.
#
# BENCH_ROUNDS (default 1) repeats the SQLite and PostgreSQL runs on new
# logs, each round held to its own verify runs, and ends with each
# target's median ratio and range over the rounds: this shared machine's
# speed drifts, and one run is not enough to say a ratio this close to
# its target holds.
set -euo pipefail
shopt -s inherit_errexit
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
n=${BENCH_COUNT:-50000}
clients=${BENCH_CLIENTS:-256}
pg=${CHIT_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432/test}
out="$root/bench/out/serve"
cd "$root"
cargo build --quiet --release -p chit -p chit-corpus
cargo build --quiet --release -p chit --example load
chit=./target/release/chit
load=./target/release/examples/load
rm -rf "$out"; mkdir -p "$out"
./target/release/chit-corpus packets "$out/p" "$n" > /dev/null
file="$out/p/packets.jsonl"; trust="$out/p/trust.toml"
"$chit" keygen --out "$out/log.pem" > /dev/null
printf '[[token]]\nname = "load"\nsha256 = "%s"\n' "$(printf %s loadtoken | sha256sum | cut -d' ' -f1)" > "$out/tokens.toml"

"$chit" verify --lines --quiet --trust "$trust" "$file" > /dev/null
# Each timed run starts with what the run before it wrote on its way to the
# disk: the kernel's writeback of a log of 50,000 entries (some 100 MB)
# would otherwise take CPU from whichever run comes next.
settle() { sync; sleep 0.5; }
verify() { # the verify rate now; also the floor the next server run is held to
  local t0 t1 rate
  settle
  t0=$(date +%s.%N)
  "$chit" verify --lines --quiet --trust "$trust" "$file" > /dev/null || { echo "chit verify failed" >&2; exit 1; }
  t1=$(date +%s.%N)
  rate=$(echo "$n / ($t1 - $t0)" | bc -l)
  printf 'chit verify --lines --trust: %d envelopes = %.0f/s\n' "$n" "$rate" >&2
  echo "$rate"
}
# The machine's speed drifts (a shared VM): each server run is held to the
# mean of the verify runs just before and just after it.
v0=$(verify)

start() { # STORE PORT [CHIT]
  "${3:-$chit}" serve --store "$1" --key "$out/log.pem" --listen "127.0.0.1:$2" --tokens "$out/tokens.toml" > "$out/serve-$2.txt" 2>&1 &
  for _ in $(seq 50); do curl -sf "http://127.0.0.1:$2/healthz" > /dev/null && return; sleep 0.1; done
  echo "the server on $2 did not start"; cat "$out/serve-$2.txt"; exit 1
}
ratio() { # LINE BEFORE AFTER: the load generator's rate as a share of verify's
  local rate
  rate=$(echo "$1" | sed -n 's/.* = \([0-9]*\)\/s.*/\1/p')
  printf '%.1f%%' "$(echo "200 * $rate / ($2 + $3)" | bc -l)"
}

s1= s2= s3=
trap 'kill $s1 $s2 $s3 2> /dev/null || true' EXIT
rounds=${BENCH_ROUNDS:-1}
per=${BENCH_LINES:-1}
export LOAD_LINES=$per
shape=""; [ "$per" -gt 1 ] && shape=" ($per receipts a request, JSON Lines)"
sqlite_ratios=(); pg_ratios=(); p99s=(); versus=(); pg_versus=()
schema="bench_serve_$$"
sep='?'; case "$pg" in *\?*) sep='&';; esac
url="$pg${sep}schema=$schema"
for round in $(seq "$rounds"); do
  [ "$rounds" -gt 1 ] && echo "round $round of $rounds"
  if [ -n "${BENCH_OLD:-}" ]; then
    # The old binary beside the new, first in odd rounds, second in even.
    order=(old new); [ $((round % 2)) -eq 0 ] && order=(new old)
    for which in "${order[@]}"; do
      bin=$chit; [ "$which" = old ] && bin=$BENCH_OLD
      rm -f "$out/s.db" "$out/s.db-wal" "$out/s.db-shm"
      "$bin" log init --store "$out/s.db" --key "$out/log.pem" --origin bench.example/serve --trust "$trust" > /dev/null
      start "$out/s.db" 18301 "$bin"; s1=$!
      settle
      line=$("$load" http://127.0.0.1:18301 loadtoken "$file" "$clients")
      kill "$s1"; wait || true
      rate=$(echo "$line" | sed -n 's/.* = \([0-9]*\)\/s.*/\1/p')
      [ "$which" = old ] && old_rate=$rate || new_rate=$rate
      echo "SQLite, one server, the $which binary$shape: $line"
    done
    versus+=("$(echo "100 * $new_rate / $old_rate" | bc -l | xargs printf '%.1f')")
    echo "                           = the new binary at ${versus[-1]}% of the old's rate"
  fi
  if [ -n "${BENCH_OLD:-}" ]; then
    # Two servers on one PostgreSQL log, old binary beside new, the same
    # alternation (each on a schema of its own, dropped after).
    order=(old new); [ $((round % 2)) -eq 0 ] && order=(new old)
    old_rate= new_rate=
    for which in "${order[@]}"; do
      bin=$chit; [ "$which" = old ] && bin=$BENCH_OLD
      ourl="$pg${sep}schema=${schema}_$which"
      if ! "$bin" log init --store "$ourl" --key "$out/log.pem" --origin bench.example/serve2 --trust "$trust" > /dev/null 2>&1; then
        echo "PostgreSQL at $pg cannot be reached: the two binaries not compared there"
        break
      fi
      start "$ourl" 18304 "$bin"; s2=$!
      start "$ourl" 18305 "$bin"; s3=$!
      settle
      line=$("$load" http://127.0.0.1:18304,http://127.0.0.1:18305 loadtoken "$file" "$clients")
      kill "$s2" "$s3"; wait || true
      psql "${pg%%\?*}" -q -c "DROP SCHEMA ${schema}_$which CASCADE" 2> /dev/null || echo "(drop schema ${schema}_$which by hand)"
      rate=$(echo "$line" | sed -n 's/.* = \([0-9]*\)\/s.*/\1/p')
      [ "$which" = old ] && old_rate=$rate || new_rate=$rate
      echo "PostgreSQL, two servers, the $which binary$shape: $line"
    done
    if [ -n "${old_rate:-}" ] && [ -n "${new_rate:-}" ]; then
      pg_versus+=("$(echo "100 * $new_rate / $old_rate" | bc -l | xargs printf '%.1f')")
      echo "                           = the new binary at ${pg_versus[-1]}% of the old's rate"
    fi
  fi
  # The new binary's one server on a log folder (BENCH_STORE=file: a file).
  one="$out/s-folder"; kind="log folder"
  [ "${BENCH_STORE:-folder}" = file ] && one="$out/s.db" && kind="SQLite file"
  rm -rf "$one" "$one-wal" "$one-shm"
  "$chit" log init --store "$one" --key "$out/log.pem" --origin bench.example/serve --trust "$trust" > /dev/null
  start "$one" 18301; s1=$!
  settle
  line=$("$load" http://127.0.0.1:18301 loadtoken "$file" "$clients")
  kill "$s1"; wait || true
  v1=$(verify)
  r=$(ratio "$line" "$v0" "$v1")
  sqlite_ratios+=("${r%\%}")
  p99s+=("$(echo "$line" | sed -n 's/.*p99 \([0-9.]*\) ms.*/\1/p')")
  echo "One server ($kind)$shape: $line"
  echo "                           = $r of verify (target 40%, p99 under 50 ms)"
  v0=$v1

  if "$chit" log init --store "$url" --key "$out/log.pem" --origin bench.example/serve2 --trust "$trust" > /dev/null 2>&1; then
    start "$url" 18302; s2=$!
    start "$url" 18303; s3=$!
    settle
    line=$("$load" http://127.0.0.1:18302,http://127.0.0.1:18303 loadtoken "$file" "$clients")
    kill "$s2" "$s3"; wait || true
    v2=$(verify)
    r=$(ratio "$line" "$v1" "$v2")
    pg_ratios+=("${r%\%}")
    echo "PostgreSQL, two servers$shape: $line"
    echo "                           = $r of verify (target 25%)"
    psql "${pg%%\?*}" -q -c "DROP SCHEMA $schema CASCADE" 2> /dev/null || echo "(drop schema $schema by hand)"
    v0=$v2
  else
    echo "PostgreSQL at $pg cannot be reached: not measured"
  fi
done
summary() { # NAME VALUES...: the median, and the range
  local name=$1
  shift
  [ $# -gt 0 ] || return 0
  printf '%s\n' "$@" | sort -n | awk -v name="$name" '
    { v[NR] = $1 }
    END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
          printf "%-27s median %s, from %s to %s (%d rounds)\n", name, m, v[1], v[NR], NR }'
}
if [ -n "${BENCH_OLD:-}" ]; then
  summary "new rate, % of old:" "${versus[@]}"
  summary "PostgreSQL new, % of old:" "${pg_versus[@]}"
fi
if [ "$rounds" -gt 1 ]; then
  summary "One server, % of verify:" "${sqlite_ratios[@]}"
  summary "One server, p99 ms:" "${p99s[@]}"
  summary "PostgreSQL, % of verify:" "${pg_ratios[@]}"
fi
