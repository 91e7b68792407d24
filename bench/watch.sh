#!/usr/bin/env bash
# Benchmark: the monitor against the auditor, over loopback HTTP.
#
#   bench/watch.sh
#
# A log of BIG (default 1,000,000) signed packet envelopes from
# chit-corpus (about 1 KB each, a log folder), served by `chit serve`.
# Then PAIRS (default 3) alternated pairs, each from an empty state:
# `chit log audit URL` (it reads every entry bundle and hash tile and
# recomputes the tree) and `chit log watch URL` (it reads every entry
# bundle, proves the checkpoint by them and prints a line an entry, to
# /dev/null). Each run's wall time and CPU time (user + system, the
# command's own); medians with ranges, and the monitor's time as a
# fraction of the auditor's. Target: the monitor at least as fast.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
big=${BENCH_BIG:-1000000}
pairs=${PAIRS:-3}
out="$root/bench/out/watch"
cd "$root"
cargo build --quiet --release -p chit -p chit-corpus
chit=./target/release/chit
corpus=./target/release/chit-corpus
rm -rf "$out"
mkdir -p "$out"
pids=()
trap 'kill "${pids[@]}" 2> /dev/null || true' EXIT

"$corpus" packets "$out/big" "$big" > /dev/null
"$chit" keygen --out "$out/log.pem" > /dev/null
store="$out/big-log"
"$chit" log init --store "$store" --key "$out/log.pem" --origin bench.example/watch \
  --trust "$out/big/trust.toml" > /dev/null
"$chit" log append --store "$store" --lines "$out/big/packets.jsonl" > /dev/null
vkey=$("$chit" log info --store "$store" | sed -n 's/^log key: //p')
printf 'log %s\nquorum none\n' "$vkey" > "$out/log.policy"
"$chit" serve --store "$store" --key "$out/log.pem" --listen 127.0.0.1:18420 --quiet > "$out/serve.txt" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -sf http://127.0.0.1:18420/healthz > /dev/null && break; sleep 0.1; done
url=http://127.0.0.1:18420/
echo "machine: $(nproc) cores; a log of $big entries ($(du -sh "$store" | cut -f1)) served at $url"

run() { # NAME CMD...: wall and CPU seconds of CMD, appended to $out/NAME.txt
  local name=$1
  shift
  /usr/bin/time -f '%e %U %S' -o "$out/time.txt" "$@" > /dev/null 2> "$out/$name.err" || {
    echo "$name failed:"; cat "$out/$name.err"; exit 1
  }
  read -r wall user sys < "$out/time.txt"
  echo "$wall $(echo "$user + $sys" | bc -l)" >> "$out/$name.txt"
}
for i in $(seq "$pairs"); do
  rm -f "$out"/state-*.json
  run audit "$chit" log audit "$url" --log-key "$vkey" --state "$out/state-audit.json"
  run watch "$chit" log watch "$url" --policy "$out/log.policy" --state "$out/state-watch.json"
  tail -1 "$out/watch.err"
done

median() { # FILE COLUMN: the median, then the range
  cut -d' ' -f"$2" "$1" | sort -n | awk '{ v[NR] = $1 } END { printf "%.2f (%.2f-%.2f)", v[int((NR + 1) / 2)], v[1], v[NR] }'
}
for name in audit watch; do
  printf 'chit log %-6s %s entries: wall %s s, CPU %s s\n' "$name" "$big" "$(median "$out/$name.txt" 1)" "$(median "$out/$name.txt" 2)"
done
paste -d' ' "$out/watch.txt" "$out/audit.txt" \
  | awk '{ print $1 / $3 }' | sort -n \
  | awk '{ v[NR] = $1 } END { printf "watch / audit wall time, pair by pair: median %.2f (%.2f-%.2f); target at most 1\n", v[int((NR + 1) / 2)], v[1], v[NR] }'
