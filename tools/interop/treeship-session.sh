# Sourced by the Treeship interop scripts, after they set $root (this
# repository) and $treeship (Treeship's CLI).
#
# `interop_start NAME` builds chit (`cargo build --release -p chit` into
# $CARGO_TARGET_DIR, default target/ of this repository) and sets $chit;
# moves into a throwaway HOME, removed on exit; makes a ship named NAME
# there and sets $store to its storage folder, and $failures to 0.
interop_start() {
  local target
  target=$(cd "$root" && realpath -m "${CARGO_TARGET_DIR:-target}")
  (cd "$root" && CARGO_TARGET_DIR="$target" cargo build --quiet --release -p chit) || exit 2
  chit="$target/release/chit"
  home=$(mktemp -d)
  trap 'rm -rf "$home"' EXIT
  export HOME="$home"
  cd "$home" || exit 2
  "$treeship" init --name "$1" < /dev/null > /dev/null || exit 2
  store=.treeship/$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["storage_dir"])' .treeship/config.json)
  failures=0
}

# `interop_end` says how many outcomes were not as expected, and exits 0
# when none, else 1.
interop_end() {
  echo
  if [[ $failures -eq 0 ]]; then
    echo "all outcomes as expected"
    exit 0
  fi
  echo "$failures outcome(s) not as expected"
  exit 1
}

# `treeship_session` has
# $treeship make a fresh ship in the current folder and attest a session
# there: three packets of the stream "interop", a recompute result of the
# third, an action; closed, and the third packet's receipt exported. It
# leaves p0-p2.json and r.json (the payloads), export.json, T.toml (a trust
# file of the ship's key) and the packets' art ids in the array `arts`.
treeship_session() {
  rm -rf .treeship
  "$treeship" init --name chit-interop < /dev/null > /dev/null || return 1
  "$treeship" session start --name "interop run" > /dev/null || return 1
  local zero=0000000000000000000000000000000000000000000000000000000000000000
  local prev=null i
  arts=()
  for i in 0 1 2; do
    cat > p$i.json <<JSON
{"schema":"verification.packet.v1","stream_id":"interop","packet_id":"pkt-$i","sequence":$i,
 "prev_packet_id":$prev,"produced_at":"2026-11-30T08:0$i:00Z","reproducibility":"bit_exact",
 "input_digest":"sha256:$zero","model_digest":"sha256:${zero:0:62}a1",
 "output_digest":"sha256:${zero:0:63}$i","token_count":17}
JSON
    prev="\"pkt-$i\""
    arts+=("$("$treeship" attest receipt --system system://interop --kind verification.packet.v1 \
      --payload-file p$i.json --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')") || return 1
  done
  cat > r.json <<JSON
{"schema":"verification.recompute.v1","packet":"${arts[2]}","packet_id":"pkt-2","verdict":"match",
 "method":"bit_exact","output_digest_recomputed":"sha256:${zero:0:63}2","recomputed_at":"2026-11-30T09:00:00Z"}
JSON
  "$treeship" attest receipt --system system://recompute --kind verification.recompute.v1 \
    --subject "${arts[2]}" --payload-file r.json > /dev/null || return 1
  "$treeship" attest action --actor agent://interop --action tool.call > /dev/null || return 1
  "$treeship" session close --summary "interop done" > /dev/null || return 1
  "$treeship" receipt export "${arts[2]}" --format json > export.json || return 1
  printf '[[key]]\nname = "ship"\npublic_key = "%s"\n' \
    "$("$treeship" keys export --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["public_key"])')" > T.toml
}
