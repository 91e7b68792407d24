#!/usr/bin/env bash
# Benchmark: the receipt log, measured in one run against the floor it
# stands on (chit verify on the same file) and the machine's own limits.
#
#   bench/log.sh
#
# 1. N (default 100,000) signed packet envelopes (one stream, about 1 KB
#    each) from chit-corpus; `chit verify --lines --trust` on them: the
#    verification rate, the floor.
# 2. `chit log append --lines` of the same file into a new log folder, a new
#    SQLite file and a new PostgreSQL log (CHIT_BENCH_POSTGRES, default
#    postgres://postgres@127.0.0.1:5432/test), verification included, each
#    as a fraction of step 1's rate. Targets: SQLite 60%, PostgreSQL 40%.
# 3. A log of BIG (default 1,000,000) entries (a log folder; BENCH_BIG_STORE=
#    file for one SQLite file): an inclusion proof
#    (target under 1 ms), `chit log audit` recomputing the tree (target
#    under 10 s) and with --reverify, each with its peak memory (target
#    under 200 MB).
# 4. The machine's limits beside them: SHA-256 throughput over the same
#    entries and one fsync's latency on the store's disk.
#
# BENCH_SKIP_BIG=1 skips step 3 (it builds a log of about 1.2 GB).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
n=${BENCH_COUNT:-100000}
big=${BENCH_BIG:-1000000}
pg=${CHIT_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432/test}
out="$root/bench/out/log"

cd "$root"
cargo build --quiet --release -p chit -p chit-corpus
cargo build --quiet --release -p chit-logstore --example logbench
chit=./target/release/chit
corpus=./target/release/chit-corpus
logbench=./target/release/examples/logbench
rm -rf "$out"
mkdir -p "$out"
"$corpus" packets "$out/p" "$n" > /dev/null
file="$out/p/packets.jsonl"
trust="$out/p/trust.toml"
bytes=$(head -1 "$file" | wc -c)
"$chit" keygen --out "$out/log.pem" > /dev/null

secs() { # secs OUTFILE CMD...: runs CMD (its output to OUTFILE), prints its wall time in seconds
  local t0 t1 o=$1
  shift
  t0=$(date +%s.%N)
  "$@" > "$o"
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
"$logbench" limits "$file" "$out"

# 1. the floor
cat "$file" > /dev/null
"$chit" verify --lines --quiet --trust "$trust" "$file" > /dev/null # warm, and all valid
v=$(secs /dev/null "$chit" verify --lines --quiet --trust "$trust" "$file")
vrate=$(echo "$n / $v" | bc -l)
printf 'chit verify --lines --trust:      %d envelopes of %d bytes in %.2f s = %.0f/s\n' "$n" "$bytes" "$v" "$vrate"

# 2. appends
"$chit" log init --store "$out/folder" --key "$out/log.pem" --origin bench.example/log --trust "$trust" > /dev/null
s=$(secs "$out/append-folder.txt" "$chit" log append --store "$out/folder" --lines "$file")
tail -1 "$out/append-folder.txt"
srate=$(echo "$n / $s" | bc -l)
printf 'chit log append (log folder):     %.2f s = %.0f/s = %.0f%% of verify (target 60%%)\n' "$s" "$srate" "$(echo "100 * $srate / $vrate" | bc -l)"
"$chit" log init --store "$out/s.db" --key "$out/log.pem" --origin bench.example/log --trust "$trust" > /dev/null
s=$(secs "$out/append-sqlite.txt" "$chit" log append --store "$out/s.db" --lines "$file")
tail -1 "$out/append-sqlite.txt"
srate=$(echo "$n / $s" | bc -l)
printf 'chit log append (SQLite file):    %.2f s = %.0f/s = %.0f%% of verify (target 60%%)\n' "$s" "$srate" "$(echo "100 * $srate / $vrate" | bc -l)"

schema="bench_$$"
sep='?'; case "$pg" in *\?*) sep='&';; esac
pgurl="$pg${sep}schema=$schema"
if "$chit" log init --store "$pgurl" --key "$out/log.pem" --origin bench.example/log --trust "$trust" > /dev/null; then
  p=$(secs "$out/append-postgres.txt" "$chit" log append --store "$pgurl" --lines "$file")
  tail -1 "$out/append-postgres.txt"
  prate=$(echo "$n / $p" | bc -l)
  printf 'chit log append (PostgreSQL):     %.2f s = %.0f/s = %.0f%% of verify (target 40%%)\n' "$p" "$prate" "$(echo "100 * $prate / $vrate" | bc -l)"
  psql "${pg%%\?*}" -q -c "DROP SCHEMA $schema CASCADE" 2> /dev/null || echo "(drop schema $schema by hand)"
else
  echo "PostgreSQL at $pg cannot be reached: its append not measured"
fi

# 3. a big log
if [ "${BENCH_SKIP_BIG:-}" != 1 ]; then
  bigstore="$out/big-log"; [ "${BENCH_BIG_STORE:-folder}" = file ] && bigstore="$out/big.db"
  "$corpus" packets "$out/big" "$big" > /dev/null
  "$chit" log init --store "$bigstore" --key "$out/log.pem" --origin bench.example/big --trust "$out/big/trust.toml" > /dev/null
  b=$(secs "$out/append-big.txt" "$chit" log append --store "$bigstore" --lines "$out/big/packets.jsonl")
  tail -1 "$out/append-big.txt"
  printf 'building it:                      %.1f s = %.0f/s\n' "$b" "$(echo "$big / $b" | bc -l)"
  printf 'store size:                       %s\n' "$(du -sh "$bigstore" | cut -f1)"
  "$logbench" prove "$bigstore" 10000
  c=$(secs /dev/null "$chit" log prove --store "$bigstore" 123457)
  printf 'chit log prove (whole process):   %.1f ms\n' "$(echo "$c * 1000" | bc -l)"
  vkey=$("$chit" log info --store "$bigstore" | sed -n 's/^log key: //p')
  for mode in "" "--reverify"; do
    /usr/bin/time -f '%e %M' -o "$out/time.txt" "$chit" log audit "$bigstore" --log-key "$vkey" --state "$out/audit-state$mode.json" $mode > "$out/audit$mode.txt"
    read -r t kb < "$out/time.txt"
    printf 'chit log audit %-12s        %s entries in %.2f s, peak memory %.0f MB (%s)\n' "$mode" "$big" "$t" "$(echo "$kb / 1024" | bc -l)" "$(head -c 60 "$out/audit$mode.txt")"
  done
fi
