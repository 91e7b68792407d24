#!/usr/bin/env bash
# The action's first step: a key for what chit is built from (the
# workspace's manifests, lock file, sources, schemas and the examples the
# binary embeds, hashed in path order, and the machine it runs on), and the
# folder the built chit is cached in, one for each key. Writes `key` and
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
  { printf 'arch %s\n' "$(uname -sm)"; printf '%s\n' Cargo.toml Cargo.lock; find crates schemas examples -type f \
      \( -name '*.rs' -o -name '*.toml' -o -name '*.json' -o -name '*.html' -o -name '*.js' \
         -o -name '*.css' -o -name '*.svg' -o -name '*.md' -o -name '*.jsonl' -o -name '*.txt' \) -not -path '*/tests/*' | LC_ALL=C sort; } \
    | while read -r f; do
        if [[ -f $f ]]; then printf '%s\0' "$f"; sha256sum < "$f"; else printf '%s\n' "$f"; fi
      done \
    | sha256sum | cut -c1-24
)
{
  echo "key=$key"
  echo "root=${HOME}/.cache/chit-action/$key"
} >> "$GITHUB_OUTPUT"
echo "chit source key $key"
