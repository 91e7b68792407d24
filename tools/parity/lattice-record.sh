#!/usr/bin/env bash
# Re-records Lattice's own verdicts, which the Lattice parity test compares
# chit with. Run it when the Lattice case generator changes:
#
#   tools/parity/lattice-record.sh PATH/TO/Lattice
#
# Lattice (github.com/kitepon/Lattice) is not part of this repository: give
# the path of a checkout. It asks for Node 22; its validator runs on Node 20.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
lattice=${1:?usage: tools/parity/lattice-record.sh PATH/TO/Lattice}
seed=${PARITY_SEED:-2026}
count=${PARITY_COUNT:-6000}
cd "$root"
cargo build --quiet --release -p chit-corpus
./target/release/chit-corpus lattice-cases "$seed" "$count" \
  | node "$here/lattice-record.mjs" "$lattice" \
  > crates/chit/tests/data/lattice-reference.jsonl
echo "recorded $(wc -l < crates/chit/tests/data/lattice-reference.jsonl) verdicts (seed $seed)"
