#!/usr/bin/env bash
# The action's install step: chit from the cache when the cache holds the
# build of this source (CHIT_KEY), else built with cargo install --locked
# from the action's own checkout into CHIT_ROOT (cached after the job).
# Writes `chit` (the binary's path) to $GITHUB_OUTPUT.
set -euo pipefail
bin="$CHIT_ROOT/bin/chit"
if [[ -x $bin && $(cat "$CHIT_ROOT/source-key" 2> /dev/null) == "$CHIT_KEY" ]]; then
  echo "chit from the cache: $("$bin" --version)"
else
  if ! command -v cargo > /dev/null; then
    echo "::error::cargo is not on this runner, so chit cannot be built: add a Rust toolchain step (dtolnay/rust-toolchain@stable) before this action"
    exit 1
  fi
  echo "building chit (cargo install --locked): a few minutes, once per chit version"
  rm -f "$CHIT_ROOT/source-key"
  cargo install --locked --quiet --path "$GITHUB_ACTION_PATH/crates/chit" --root "$CHIT_ROOT"
  echo "$CHIT_KEY" > "$CHIT_ROOT/source-key"
  echo "built $("$bin" --version)"
fi
echo "chit=$bin" >> "$GITHUB_OUTPUT"
