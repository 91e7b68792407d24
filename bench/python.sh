#!/usr/bin/env bash
# Benchmark: chit for Python against the chit command, in one run.
#
#   bench/python.sh            (PAIRS=5 BENCH_COUNT=100000 by default)
#
# 1. chit.check_all over N signed verification.packet.v1 envelopes (one
#    stream, --expect-count N), the file read and split in Python, against
#    `chit verify --lines` on the same file: PAIRS alternated pairs, the
#    ratio of their rates (Python's over the command's), median and range,
#    and each side's CPU time per envelope.
# 2. What one chit.check call on a small receipt costs beyond the check
#    itself: Python's time per call minus chit_core::check's alone (the
#    chit-core example check_time), best of 5 rounds each, ROUNDS times
#    alternated, median and range.
# 3. Log.append, one envelope at a time (the first 1,000 of the file) to a
#    new SQLite log trusting their key, ROUNDS times: wall and CPU an
#    append, medians and ranges.
#
# Builds the release binaries and the package (release) into
# bench/out/python-venv (maturin from PyPI, once).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
count=${BENCH_COUNT:-100000}
pairs=${PAIRS:-5}
rounds=${ROUNDS:-5}
dir="$root/bench/out/packets-$count"
venv="$root/bench/out/python-venv"

cd "$root"
cargo build --quiet --release -p chit -p chit-corpus
cargo build --quiet --release -p chit-core --example check_time
if ! "$venv/bin/python" -c 'import maturin' 2> /dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q maturin==1.16.0
fi
PATH="$venv/bin:$PATH" "$venv/bin/pip" install -q --no-build-isolation --force-reinstall ./python
if [ ! -f "$dir/packets.jsonl" ]; then
  ./target/release/chit-corpus packets "$dir" "$count"
fi
py="$venv/bin/python"
chit=./target/release/chit
cli=("$chit" verify --quiet --lines --trust "$dir/trust.toml" --expect-count "$count" "$dir/packets.jsonl")
python_all=("$py" "$here/python_check.py" all "$dir/packets.jsonl" "$dir/trust.toml" "$count")
# Prints "WALL CPU" seconds of one run of the command.
timed() {
  local out
  out=$( { /usr/bin/time -f '%e %U %S' "$@" > /dev/null; } 2>&1 | tail -1)
  awk '{ printf "%s %.3f\n", $1, $2 + $3 }' <<< "$out"
}
# Warm the file cache; each fails the benchmark unless all is valid.
"${cli[@]}" > /dev/null
"${python_all[@]}"

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
ratios=() cli_cpu=() py_cpu=() cli_wall=() py_wall=()
for i in $(seq "$pairs"); do
  read -r cw cc < <(timed "${cli[@]}")
  read -r pw pc < <(timed "${python_all[@]}")
  ratios+=("$(echo "$cw / $pw" | bc -l)")
  cli_wall+=("$cw") py_wall+=("$pw") cli_cpu+=("$cc") py_cpu+=("$pc")
  printf 'pair %d: chit verify --lines %.2f s (CPU %.2f s), chit.check_all %.2f s (CPU %.2f s)\n' "$i" "$cw" "$cc" "$pw" "$pc"
done
range() { printf '%s\n' "$@" | sort -g | sed -n '1p;$p' | paste -sd' ' | awk '{ printf "%.2f-%.2f", $1, $2 }'; }
range_int() { printf '%s\n' "$@" | sort -g | sed -n '1p;$p' | paste -sd' ' | awk '{ printf "%d-%d", $1, $2 }'; }
printf 'check_all rate / chit verify --lines rate: median %.2f (%s), %d pairs, %s envelopes, %s cores\n' \
  "$(printf '%s\n' "${ratios[@]}" | median)" "$(range "${ratios[@]}")" "$pairs" "$count" "$(nproc)"
printf 'wall: chit verify --lines %.2f s, check_all %.2f s (medians)\n' \
  "$(printf '%s\n' "${cli_wall[@]}" | median)" "$(printf '%s\n' "${py_wall[@]}" | median)"
printf 'CPU per envelope: chit verify --lines %.1f µs, check_all %.1f µs (medians)\n' \
  "$(echo "$(printf '%s\n' "${cli_cpu[@]}" | median) * 1000000 / $count" | bc -l)" \
  "$(echo "$(printf '%s\n' "${py_cpu[@]}" | median) * 1000000 / $count" | bc -l)"

receipt=examples/run-receipts/agreed-verified.json
overheads=() alone=() called=()
for i in $(seq "$rounds"); do
  a=$(./target/release/examples/check_time "$receipt" 20000 5)
  c=$("$py" "$here/python_check.py" one "$receipt" 20000 5)
  alone+=("$a") called+=("$c") overheads+=("$((c - a))")
done
printf 'one chit.check on %s: %s ns a call, chit_core::check alone %s ns: %s ns more (median; range %s ns)\n' \
  "$receipt" "$(printf '%s\n' "${called[@]}" | median)" "$(printf '%s\n' "${alone[@]}" | median)" \
  "$(printf '%s\n' "${overheads[@]}" | median)" "$(range_int "${overheads[@]}")"

walls=() cpus=()
for i in $(seq "$rounds"); do
  log_dir=$(mktemp -d)
  ./target/release/chit keygen --out "$log_dir/log.pem" > /dev/null
  ./target/release/chit log init --store "$log_dir/log.db" --key "$log_dir/log.pem" \
    --origin bench.example/python --trust "$dir/trust.toml" > /dev/null
  read -r w c < <("$py" "$here/python_check.py" append "$log_dir/log.db" "$log_dir/log.pem" "$dir/packets.jsonl" 1000)
  walls+=("$w") cpus+=("$c")
  rm -rf "$log_dir"
done
printf 'Log.append, one at a time: %s µs wall (%s), %s µs CPU (%s) an append (medians; ranges)\n' \
  "$(printf '%s\n' "${walls[@]}" | median)" "$(range_int "${walls[@]}")" \
  "$(printf '%s\n' "${cpus[@]}" | median)" "$(range_int "${cpus[@]}")"
