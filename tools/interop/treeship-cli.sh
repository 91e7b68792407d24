#!/usr/bin/env bash
# chit and Treeship's own CLI, both directions, every outcome asserted:
#
#   tools/interop/treeship-cli.sh PATH/TO/treeship
#
# Exits 0 only when every expected outcome holds, 1 when any does not (each
# is printed as "ok" or "FAIL"), 2 when it cannot run at all.
#
# Treeship (github.com/zerkerlabs/treeship, Apache-2.0) is built by hand
# (`cargo build --release -p treeship-cli` in its checkout, its
# rust-toolchain.toml removed if that toolchain is missing); nothing of it is
# in this repository. chit is built with `cargo build --release -p chit`
# into $CARGO_TARGET_DIR (default: target/ of this repository). Everything
# else happens in a throwaway HOME. Needs python3.
#
# 1. chit signs, Treeship verifies: a chit key is pinned in Treeship
#    (`treeship trust add`), a packet chit signed is filed in Treeship's
#    store under chit's art id, and `treeship verify ART --no-chain` passes
#    it; with one payload value changed after signing, or one signature byte,
#    it fails.
# 2. Treeship attests, chit verifies: a session with three packets, a
#    recompute result and an action, closed; then `chit verify --trust T
#    --allow-unchecked` passes the whole store, the session package and a
#    `treeship receipt export` in one command (and fails without
#    --allow-unchecked: Treeship's actions are SIGNED, payload not checked).
#    Each tamper is caught: a payload byte, a signature byte, a record
#    field, the index, a session member (dropped, added, changed), the
#    package's receipt changed elsewhere, the export's claimed key.
set -uo pipefail
treeship=$(realpath "${1:?usage: $0 PATH/TO/treeship}") || exit 2
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tools/interop/treeship-session.sh
. "$root/tools/interop/treeship-session.sh"
interop_start chit-interop
# check NAME WANT_RC PATTERN CMD...: CMD exits WANT_RC and its output
# (stdout and stderr) holds PATTERN (an extended regex; empty: anything).
check() {
  local name=$1 want=$2 pattern=$3
  shift 3
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [[ $rc -eq $want ]] && { [[ -z $pattern ]] || grep -qE -- "$pattern" <<<"$out"; }; then
    echo "ok    $name"
  else
    echo "FAIL  $name (exit $rc, wanted $want${pattern:+, output matching /$pattern/})"
    sed 's/^/      /' <<<"$out" | tail -20
    failures=$((failures + 1))
  fi
}

echo "== 1. chit signs, treeship verifies"
"$chit" keygen --out chit.pem > key.txt || exit 2
pub=$(awk '$1 == "treeship" {print $2}' key.txt)
keyid=$(awk '$1 == "key" {print $3}' key.txt)
"$treeship" trust add "$keyid" "$pub" --kind cert_issuer --label chit --yes > /dev/null || exit 2
cat > packet.json <<'JSON'
{"schema":"verification.packet.v1","stream_id":"interop","packet_id":"pkt-0","sequence":0,
 "prev_packet_id":null,"produced_at":"2026-11-30T08:00:00Z","reproducibility":"bit_exact",
 "input_digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000",
 "model_digest":"sha256:00000000000000000000000000000000000000000000000000000000000000a1",
 "output_digest":"sha256:0000000000000000000000000000000000000000000000000000000000000001",
 "token_count":17}
JSON
art=$("$chit" sign --key chit.pem --kind verification.packet.v1 --out packet.env.json packet.json \
  | grep -o 'art_[0-9a-f]*') || exit 2
file_record() { # $1: none, payload (one value changed after signing) or sig (one byte)
  python3 - "$art" "$keyid" "$store" "$1" <<'PY'
import base64, hashlib, json, sys
art, keyid, store, tamper = sys.argv[1:]
env = json.load(open("packet.env.json"))
raw = base64.urlsafe_b64decode(env["payload"] + "=" * (-len(env["payload"]) % 4))
if tamper == "payload":
    raw = raw.replace(b'"token_count":17', b'"token_count":18')
    env["payload"] = base64.urlsafe_b64encode(raw).decode().rstrip("=")
if tamper == "sig":
    sig = bytearray(base64.urlsafe_b64decode(env["signatures"][0]["sig"] + "=="))
    sig[10] ^= 1
    env["signatures"][0]["sig"] = base64.urlsafe_b64encode(bytes(sig)).decode().rstrip("=")
pt = env["payloadType"].encode()
pae = b"DSSEv1 %d %s %d %s" % (len(pt), pt, len(raw), raw)
rec = {"artifact_id": art, "digest": "sha256:" + hashlib.sha256(pae).hexdigest(),
       "payload_type": env["payloadType"], "key_id": keyid,
       "signed_at": "2026-11-30T09:00:00Z", "envelope": env}
json.dump(rec, open(f"{store}/{art}.json", "w"), indent=2)
json.dump({"entries": [{"id": art, "payload_type": env["payloadType"],
                        "signed_at": "2026-11-30T09:00:00Z"}]}, open(f"{store}/index.json", "w"))
PY
}
file_record none
check "treeship verify passes what chit signed" 0 '"outcome": "pass"' \
  "$treeship" verify "$art" --no-chain --format json
file_record payload
check "treeship verify fails it with a payload value changed" 1 'invalid signature' \
  "$treeship" verify "$art" --no-chain --format json
file_record sig
check "treeship verify fails it with a signature byte changed" 1 '"outcome": "fail"' \
  "$treeship" verify "$art" --no-chain --format json
rm -f "$store/$art.json" "$store/index.json" .treeship/artifacts/.last

echo "== 2. treeship attests, chit verifies"
# A fresh ship: the store holds only what Treeship itself wrote.
treeship_session || exit 2
store=.treeship/artifacts
pkg=$(ls -d .treeship/sessions/*.treeship)
check "treeship verify passes its own session package" 0 '' "$treeship" verify "$pkg"
check "chit verifies the store, the package and the export in one command" 0 \
  'inputs: [0-9]+ valid, [0-9]+ signed \(payload not checked\), 0 invalid, 0 unreadable; checks across inputs: [0-9]+ valid, 0 invalid$' \
  "$chit" verify --trust T.toml --allow-unchecked --expect-count 3 "$store" "$pkg" export.json
check "chit: the stream, the recompute result, the chains, the index and the session" 0 \
  '^VALID stream interop \(3 packets\)' \
  "$chit" verify --trust T.toml --allow-unchecked --expect-count 3 "$store" "$pkg" export.json
check "chit: Treeship's actions are SIGNED, so without --allow-unchecked exit 1" 1 '^SIGNED ' \
  "$chit" verify --trust T.toml "$store" "$pkg" export.json

# tamper NAME PATTERN PYTHON: on a fresh copy of the store, the package and
# the export, PYTHON (run there) changes one thing; chit must fail, saying
# PATTERN.
tamper() {
  local name=$1 pattern=$2 code=$3
  rm -rf t && mkdir t && cp -r "$store" t/artifacts && cp -r "$pkg" t/pkg.treeship && cp export.json T.toml t/
  (cd t && python3 -c "$code") || { echo "FAIL  $name (could not tamper)"; failures=$((failures + 1)); return; }
  check "chit catches: $name" 1 "$pattern" \
    "$chit" verify --trust t/T.toml --allow-unchecked --expect-count 3 t/artifacts t/pkg.treeship t/export.json
}
lib='import base64, glob, json
def load(p): return json.load(open(p))
def save(p, v): json.dump(v, open(p, "w"), indent=2)
def flip(s):
    i = len(s) // 2
    return s[:i] + ("A" if s[i] != "A" else "B") + s[i + 1:]
packet = "artifacts/'"${arts[1]}"'.json"
'
tamper "a payload byte" 'error signature' "$lib
r = load(packet); r['envelope']['payload'] = flip(r['envelope']['payload']); save(packet, r)"
tamper "a signature byte" 'error signature' "$lib
r = load(packet); r['envelope']['signatures'][0]['sig'] = flip(r['envelope']['signatures'][0]['sig']); save(packet, r)"
tamper "a record field (digest)" 'error record: the record.s digest' "$lib
r = load(packet); r['digest'] = 'sha256:' + '0' * 64; save(packet, r)"
tamper "a record field (parent_id)" 'error record: the record.s parent_id' "$lib
r = load(packet); r['parent_id'] = 'art_' + '0' * 32; save(packet, r)"
tamper "an index entry dropped" 'INVALID index' "$lib
i = load('artifacts/index.json'); i['entries'].pop(); save('artifacts/index.json', i)"
tamper "a session member dropped" 'error (leaf_count|merkle_root)' "$lib
r = load('pkg.treeship/receipt.json'); r['artifacts'].pop(); save('pkg.treeship/receipt.json', r)"
tamper "a session member added" 'error (leaf_count|merkle_root)' "$lib
r = load('pkg.treeship/receipt.json'); r['artifacts'].append(dict(r['artifacts'][0], artifact_id='art_' + '0' * 32)); save('pkg.treeship/receipt.json', r)"
tamper "a session member changed" 'error merkle_root' "$lib
r = load('pkg.treeship/receipt.json'); r['artifacts'][0]['artifact_id'] = 'art_' + '0' * 32; save('pkg.treeship/receipt.json', r)"
tamper "the session receipt changed elsewhere (its narrative)" 'error session: the signed session record' "$lib
r = load('pkg.treeship/receipt.json'); r['session']['narrative'] = {'headline': 'nothing to see'}; save('pkg.treeship/receipt.json', r)"
tamper "the export's claimed key" 'error export: the export claims key' "$lib
e = load('export.json'); e['public_key_b64'] = base64.b64encode(bytes(range(32))).decode(); save('export.json', e)"
tamper "the export's message" 'error signature' "$lib
e = load('export.json'); m = base64.b64decode(e['message_b64']).replace(b'system://interop', b'system://interoq'); e['message_b64'] = base64.b64encode(m).decode(); save('export.json', e)"

interop_end
