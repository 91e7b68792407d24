#!/usr/bin/env bash
# What one chit serve on SQLite costs an entry: its rate, its CPU (the
# whole process, and the sequencer thread alone, from /proc) and the bytes
# it wrote to disk (/proc/PID/io write_bytes), for N (default 30,000)
# signed packet envelopes of about 1 KB POSTed one a request by CLIENTS
# (default 64) clients. With two binaries it alternates them, PAIRS times
# (default 3), each on a new log: noise on the machine falls on both.
# The new binary's log is a log folder (BENCH_STORE=file: one SQLite file),
# the old one's one SQLite file (BENCH_OLD_STORE=folder: a log folder, for
# an old binary that makes them).
#
#   bench/serve-disk.sh [OLD_CHIT] [NEW_CHIT]
#
# NEW_CHIT defaults to ./target/release/chit (built first).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cd "$root"
n=${BENCH_COUNT:-30000}
clients=${BENCH_CLIENTS:-64}
pairs=${PAIRS:-3}
cargo build --quiet --release -p chit -p chit-corpus
cargo build --quiet --release -p chit --example load
new=$(realpath "${2:-./target/release/chit}")
old=${1:+$(realpath "$1")}
out="$root/bench/out/serve-disk"
rm -rf "$out"; mkdir -p "$out"
./target/release/chit-corpus packets "$out/p" "$n" > /dev/null
"$new" keygen --out "$out/log.pem" > /dev/null
printf '[[token]]\nname = "load"\nsha256 = "%s"\n' "$(printf %s loadtoken | sha256sum | cut -d' ' -f1)" > "$out/tokens.toml"
tck=$(getconf CLK_TCK)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2> /dev/null || true' EXIT

run() { # run BIN NAME STORE
  local db="$out/$3" line wb ut st seq a b
  rm -rf "$db" "$db-wal" "$db-shm"
  "$1" log init --store "$db" --key "$out/log.pem" --origin bench.example/disk --trust "$out/p/trust.toml" > /dev/null
  sync; sleep 0.5
  "$1" serve --store "$db" --key "$out/log.pem" --listen 127.0.0.1:18421 --tokens "$out/tokens.toml" > "$out/serve.txt" 2>&1 &
  pid=$!
  for _ in $(seq 50); do curl -sf http://127.0.0.1:18421/healthz > /dev/null && break; sleep 0.1; done
  line=$(./target/release/examples/load http://127.0.0.1:18421 loadtoken "$out/p/packets.jsonl" "$clients")
  wb=$(awk '/^write_bytes/ {print $2}' "/proc/$pid/io")
  read -r ut st < <(awk '{print $14, $15}' "/proc/$pid/stat")
  seq=0
  for t in /proc/"$pid"/task/*; do
    if [ "$(cat "$t/comm")" = chit-sequencer ]; then
      read -r a b < <(awk '{print $14, $15}' "$t/stat"); seq=$((a + b))
    fi
  done
  kill "$pid"; wait "$pid" 2> /dev/null || true; pid=
  printf '%-4s %s/s  process %d µs/entry  sequencer %d µs/entry  disk %d bytes/entry\n' "$2" \
    "$(echo "$line" | sed -n 's/.* = \([0-9]*\)\/s.*/\1/p')" \
    "$(echo "($ut + $st) * 1000000 / $tck / $n" | bc)" "$(echo "$seq * 1000000 / $tck / $n" | bc)" \
    "$(echo "$wb / $n" | bc)"
}

echo "$n envelopes of $(head -1 "$out/p/packets.jsonl" | wc -c) bytes, $clients clients, one a request"
for _ in $(seq "$pairs"); do
  if [ -n "$old" ]; then
    if [ "${BENCH_OLD_STORE:-file}" = folder ]; then run "$old" old s; else run "$old" old s.db; fi
  fi
  if [ "${BENCH_STORE:-folder}" = file ]; then run "$new" new s.db; else run "$new" new s; fi
done
