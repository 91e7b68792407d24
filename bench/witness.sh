#!/usr/bin/env bash
# Benchmark: witnessing, on loopback.
#
# 1. A witness alone (`chit witness serve`): LOGS (default 64) logs, each
#    growing a leaf at a time, PER (default 300) checkpoints each, one
#    keep-alive client a log (crates/chit/examples/witness_load.rs, a
#    process of its own); checkpoints cosigned a second, latency, and the
#    witness's CPU time a checkpoint. Once with an Ed25519 key (target:
#    2,000 a second), once with an ML-DSA-44 key.
# 2. The server's write rate with two witnesses (`chit serve
#    --witness-policy`, a quorum of both) against its rate without, in
#    PAIRS (default 3) alternated pairs, each on a new log folder: N
#    (default 30,000) signed packet envelopes from chit-corpus, CLIENTS
#    (default 64) clients of the load generator, one receipt a request.
#    Target: with witnesses within 10% of without. After each run with
#    witnesses, how far the cosigned checkpoint lagged the log's size.
set -euo pipefail
shopt -s inherit_errexit
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
logs=${LOGS:-64}
per=${PER:-300}
pairs=${PAIRS:-3}
n=${BENCH_COUNT:-30000}
clients=${BENCH_CLIENTS:-64}
out="$root/bench/out/witness"
cd "$root"
cargo build --quiet --release -p chit -p chit-corpus
cargo build --quiet --release -p chit --example load --example witness_load
chit=./target/release/chit
load=./target/release/examples/load
wload=./target/release/examples/witness_load
rm -rf "$out"; mkdir -p "$out"
pids=()
trap 'kill "${pids[@]}" 2> /dev/null || true' EXIT

cpu_secs() { # PID: user + system CPU seconds so far
  awk -v hz="$(getconf CLK_TCK)" '{ printf "%.3f", ($14 + $15) / hz }' "/proc/$1/stat"
}
witness() { # KEY NAME STORE PORT POLICY: starts a witness, its pid in $wpid
  "$chit" witness serve --key "$1" --name "$2" --store "$3" --policy "$5" \
    --listen "127.0.0.1:$4" --quiet > "$out/witness-$4.txt" 2>&1 &
  wpid=$!
  pids+=("$wpid")
  for _ in $(seq 50); do grep -q '^chit witness:' "$out/witness-$4.txt" 2> /dev/null && return; sleep 0.1; done
  echo "the witness on $4 did not start"; cat "$out/witness-$4.txt"; exit 1
}

# 1. A witness alone (SKIP_ALONE=1 skips it).
"$wload" policy "$logs" > "$out/logs.policy"
algs=(ed25519 ml-dsa-44); [ -n "${SKIP_ALONE:-}" ] && algs=()
for alg in "${algs[@]}"; do
  "$chit" keygen --algorithm "$alg" --out "$out/w-$alg.pem" > /dev/null
  witness "$out/w-$alg.pem" "bench.example/witness" "$out/w-$alg.db" 18401 "$out/logs.policy"
  c0=$(cpu_secs "$wpid")
  line=$("$wload" run 127.0.0.1:18401 "$logs" "$per")
  c1=$(cpu_secs "$wpid")
  kill "$wpid"; wait "$wpid" 2> /dev/null || true
  us=$(echo "1000000 * ($c1 - $c0) / ($logs * $per)" | bc -l)
  printf 'witness (%s): %s; witness CPU %.0f µs a checkpoint\n' "$alg" "$line" "$us"
done

# 2. The server with and without two witnesses.
./target/release/chit-corpus packets "$out/p" "$n" > /dev/null
file="$out/p/packets.jsonl"; trust="$out/p/trust.toml"
"$chit" keygen --out "$out/log.pem" > /dev/null
"$chit" keygen --out "$out/a.pem" > /dev/null
"$chit" keygen --out "$out/b.pem" > /dev/null
printf '[[token]]\nname = "load"\nsha256 = "%s"\n' "$(printf %s loadtoken | sha256sum | cut -d' ' -f1)" > "$out/tokens.toml"
chmod 600 "$out/tokens.toml"
settle() { sync; sleep 0.5; }
serve() { # STORE [--witness-policy FILE]: starts the server on 18410, its pid in $spid
  "$chit" serve --store "$1" --listen 127.0.0.1:18410 --tokens "$out/tokens.toml" --quiet "${@:2}" > "$out/serve.txt" 2>&1 &
  spid=$!
  pids+=("$spid")
  for _ in $(seq 50); do curl -sf http://127.0.0.1:18410/healthz > /dev/null && return; sleep 0.1; done
  echo "the server did not start"; cat "$out/serve.txt"; exit 1
}
rate_of() { echo "$1" | sed -n 's/.* = \([0-9]*\)\/s.*/\1/p'; }
ratios=()
for pair in $(seq "$pairs"); do
  order=(without with); [ $((pair % 2)) -eq 0 ] && order=(with without)
  for which in "${order[@]}"; do
    store="$out/s-$which-$pair"
    key=$("$chit" log init --store "$store" --key "$out/log.pem" --origin bench.example/witnessed --trust "$trust" | sed -n 's/^log key: //p')
    if [ "$which" = with ]; then
      printf 'log %s\nquorum none\n' "$key" > "$out/log.policy"
      witness "$out/a.pem" bench.example/a "$out/a-$pair.db" 18402 "$out/log.policy"; wa=$wpid
      witness "$out/b.pem" bench.example/b "$out/b-$pair.db" 18403 "$out/log.policy"; wb=$wpid
      {
        echo "log $key"
        echo "witness A $(sed -n 's/^witness key: //p' "$out/witness-18402.txt") http://127.0.0.1:18402"
        echo "witness B $(sed -n 's/^witness key: //p' "$out/witness-18403.txt") http://127.0.0.1:18403"
        echo "group both all A B"
        echo "quorum both"
      } > "$out/witnessed.policy"
      serve "$store" --witness-policy "$out/witnessed.policy"
    else
      serve "$store"
    fi
    settle
    line=$("$load" http://127.0.0.1:18410 loadtoken "$file" "$clients")
    if [ "$which" = with ]; then
      lag=$(curl -sf http://127.0.0.1:18410/metrics | awk '/^chit_cosigned_size / { print $2 }')
      size=$(curl -sf http://127.0.0.1:18410/metrics | awk '/^chit_log_size / { print $2 }')
      echo "with two witnesses:    $line (cosigned size $lag of $size as the load ended)"
      with=$(rate_of "$line")
      kill "$wa" "$wb"
    else
      echo "without witnesses:     $line"
      without=$(rate_of "$line")
    fi
    kill "$spid"; wait "$spid" 2> /dev/null || true
    rm -rf "$store"
  done
  ratios+=("$(echo "100 * $with / $without" | bc -l | xargs printf '%.1f')")
  echo "                       = with witnesses at ${ratios[-1]}% of the rate without"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '
  { v[NR] = $1 }
  END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "with witnesses, %% of without: median %s, from %s to %s (%d pairs; target at least 90)\n", m, v[1], v[NR], NR }'
