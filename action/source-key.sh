#!/usr/bin/env bash
# The action's first step: a key for what chit is built from (the
# workspace's manifests, lock file, sources and schemas, hashed in path
# order), and the folder the built chit is cached in. Writes `key` and
# `root` to $GITHUB_OUTPUT.
set -euo pipefail
cd "$GITHUB_ACTION_PATH"
# Linux runners have sha256sum; macOS runners have shasum.
if command -v sha256sum > /dev/null; then
  sha256sum() { command sha256sum "$@"; }
else
  sha256sum() { shasum -a 256 "$@"; }
fi
key=$(
  { printf '%s\n' Cargo.toml Cargo.lock; find crates schemas -type f \
      \( -name '*.rs' -o -name '*.toml' -o -name '*.json' -o -name '*.html' -o -name '*.js' \
         -o -name '*.css' -o -name '*.svg' -o -name '*.md' \) -not -path '*/tests/*' | LC_ALL=C sort; } \
    | while read -r f; do printf '%s\0' "$f"; sha256sum < "$f"; done \
    | sha256sum | cut -c1-24
)
{
  echo "key=$key"
  echo "root=${HOME}/.cache/chit-action"
} >> "$GITHUB_OUTPUT"
echo "chit source key $key"
