#!/usr/bin/env bash
# Re-records the reference verdicts the parity test compares chit with.
# Run it when the corpus generator changes (the parity test says so):
#
#   tools/parity/record.sh PATH/TO/run-receipts/verify.mjs
#
# Needs Node 18 or later and the reference package (verify.mjs with
# receipt.schema.json beside it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
verifier=${1:?usage: tools/parity/record.sh PATH/TO/verify.mjs}
seed=${PARITY_SEED:-2026}
count=${PARITY_COUNT:-8000}
cd "$root"
cargo build --quiet --release -p chit-corpus
./target/release/chit-corpus parity "$seed" "$count" \
  | node "$here/record-reference.mjs" "$verifier" \
  > crates/chit/tests/data/run-receipts-reference.jsonl
echo "recorded $(wc -l < crates/chit/tests/data/run-receipts-reference.jsonl) verdicts (seed $seed)"
