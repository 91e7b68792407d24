#!/usr/bin/env bash
# Does Treeship's own CLI accept an envelope chit signs?
#
#   tools/interop/treeship-cli.sh PATH/TO/treeship
#
# Treeship (github.com/zerkerlabs/treeship) is built by hand; nothing of it is
# in this repository. In a throwaway HOME this script: makes a Treeship ship
# (`treeship init`), makes a chit key and pins it in Treeship
# (`treeship trust add`), signs a verification.packet.v1 with `chit sign`,
# files the envelope in Treeship's artifact store under the art id chit
# computed, and runs `treeship verify ART --no-chain` (expected: pass). It
# then edits one value in the signed payload and verifies again (expected:
# fail, "invalid signature"). Needs python3 to write the store's record.
set -euo pipefail
treeship=$(realpath "${1:?usage: $0 PATH/TO/treeship}")
root=$(cd "$(dirname "$0")/../.." && pwd)
cargo build --quiet --release -p chit --manifest-path "$root/Cargo.toml"
chit="$root/target/release/chit"
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
export HOME="$home"
cd "$home"
"$treeship" init --name chit-interop < /dev/null > /dev/null
"$chit" keygen --out chit.pem > key.txt
pub=$(awk '$1 == "treeship" {print $2}' key.txt)
keyid=$(awk '$1 == "key" {print $3}' key.txt)
"$treeship" trust add "$keyid" "$pub" --kind cert_issuer --label chit --yes > /dev/null
cat > packet.json <<'JSON'
{"schema":"verification.packet.v1","stream_id":"interop","packet_id":"pkt-0","sequence":0,
 "prev_packet_id":null,"produced_at":"2026-11-30T08:00:00Z","reproducibility":"bit_exact",
 "input_digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000",
 "model_digest":"sha256:00000000000000000000000000000000000000000000000000000000000000a1",
 "output_digest":"sha256:0000000000000000000000000000000000000000000000000000000000000001",
 "token_count":17}
JSON
art=$("$chit" sign --key chit.pem --kind verification.packet.v1 --out packet.env.json packet.json \
  | grep -o 'art_[0-9a-f]*')
store=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["storage_dir"])' .treeship/config.json)
file_record() { # $1: 1 to change one payload value after signing
  python3 - "$art" "$keyid" ".treeship/$store" "$1" <<'PY'
import base64, hashlib, json, sys
art, keyid, store, tamper = sys.argv[1:]
env = json.load(open("packet.env.json"))
raw = base64.urlsafe_b64decode(env["payload"] + "=" * (-len(env["payload"]) % 4))
if tamper == "1":
    raw = raw.replace(b'"token_count":17', b'"token_count":18')
    env["payload"] = base64.urlsafe_b64encode(raw).decode().rstrip("=")
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
file_record 0
echo "== treeship verify $art (as chit signed it)"
"$treeship" verify "$art" --no-chain --format json | grep '"outcome"' | tail -1
file_record 1
echo "== treeship verify $art (one payload value changed after signing)"
"$treeship" verify "$art" --no-chain --format json | grep -E '"(outcome|reason)"' | head -2
