#!/usr/bin/env bash
# chit for Python and Treeship's own CLI, both directions:
#
#   tools/interop/treeship-python.sh PATH/TO/treeship PATH/TO/python
#
# PYTHON is an interpreter with the package `chit` installed (python/, see
# docs/python.md). Exits 0 only when every expected outcome holds, 1 when
# any does not (each printed as "ok" or "FAIL"), 2 when it cannot run.
# Treeship is built by hand, as for tools/interop/treeship-cli.sh; chit is
# built with `cargo build --release -p chit` into $CARGO_TARGET_DIR.
#
# 1. Python signs, Treeship verifies: a packet signed by chit.Key (a key
#    from chit keygen, pinned in Treeship) is filed in Treeship's store
#    under its art id; `treeship verify ART --no-chain` passes it, and
#    fails it with one payload value changed after signing.
# 2. Treeship attests, Python verifies: a session of three packets, a
#    recompute result and an action; chit.check_all over the store's files
#    and the receipt export gives, line for line, what `chit verify --json`
#    gives for the same files in the same order (with --trust and
#    --allow-unchecked, --expect-count 3); a payload byte changed fails the
#    signature in both.
set -uo pipefail
treeship=$(realpath "${1:?usage: $0 PATH/TO/treeship PATH/TO/python}") || exit 2
# Its path as given (a virtual environment's python is a link, which
# resolved would leave the environment).
python=${2:?usage: $0 PATH/TO/treeship PATH/TO/python}
python=$(cd "$(dirname "$python")" && pwd)/$(basename "$python") || exit 2
"$python" -c 'import chit' || exit 2
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tools/interop/treeship-session.sh
. "$root/tools/interop/treeship-session.sh"
interop_start chit-python
outcome() { # NAME WANT GOT
  if [[ $2 == "$3" ]]; then
    echo "ok    $1"
  else
    echo "FAIL  $1 (wanted $2, got $3)"
    failures=$((failures + 1))
  fi
}

echo "== 1. Python signs, treeship verifies"
"$chit" keygen --out py.pem > key.txt || exit 2
chmod 600 py.pem
pub=$(awk '$1 == "treeship" {print $2}' key.txt)
keyid=$(awk '$1 == "key" {print $3}' key.txt)
"$treeship" trust add "$keyid" "$pub" --kind cert_issuer --label chit-python --yes > /dev/null || exit 2
file_record() { # $1: none or payload (one value changed after signing)
  "$python" - "$keyid" "$store" "$1" <<'PY'
import base64, hashlib, json, sys
import chit
keyid, store, tamper = sys.argv[1:]
packet = {"schema": "verification.packet.v1", "stream_id": "py", "packet_id": "pkt-0",
          "sequence": 0, "prev_packet_id": None, "produced_at": "2026-12-06T08:00:00Z",
          "reproducibility": "bit_exact", "input_digest": "sha256:" + "0" * 64,
          "model_digest": "sha256:" + "0" * 62 + "a1", "output_digest": "sha256:" + "0" * 63 + "1",
          "token_count": 17}
env = json.loads(chit.Key.from_path("py.pem").sign("verification.packet.v1", json.dumps(packet).encode()))
art = chit.check(json.dumps(env).encode()).artifact_id
raw = base64.urlsafe_b64decode(env["payload"] + "=" * (-len(env["payload"]) % 4))
if tamper == "payload":
    raw = raw.replace(b'"token_count":17', b'"token_count":18')
    env["payload"] = base64.urlsafe_b64encode(raw).decode().rstrip("=")
pt = env["payloadType"].encode()
pae = b"DSSEv1 %d %s %d %s" % (len(pt), pt, len(raw), raw)
rec = {"artifact_id": art, "digest": "sha256:" + hashlib.sha256(pae).hexdigest(),
       "payload_type": env["payloadType"], "key_id": keyid,
       "signed_at": "2026-12-06T09:00:00Z", "envelope": env}
json.dump(rec, open(f"{store}/{art}.json", "w"), indent=2)
json.dump({"entries": [{"id": art, "payload_type": env["payloadType"],
                        "signed_at": "2026-12-06T09:00:00Z"}]}, open(f"{store}/index.json", "w"))
print(art)
PY
}
art=$(file_record none) || exit 2
"$treeship" verify "$art" --no-chain --format json > out.txt 2>&1
outcome "treeship verify passes what chit.Key signed" 0 $?
art=$(file_record payload) || exit 2
"$treeship" verify "$art" --no-chain --format json > out.txt 2>&1
outcome "treeship verify fails it with a payload value changed" 1 $?

echo "== 2. treeship attests, Python verifies"
treeship_session || exit 2
mapfile -t files < <(ls .treeship/artifacts/*.json | sort; echo export.json)
compare() { # NAME: chit verify --json and chit.check_all on the same files
  "$chit" verify --json --trust T.toml --allow-unchecked --expect-count 3 "${files[@]}" > cli.jsonl
  "$python" - T.toml "${files[@]}" > py.jsonl <<'PY'
import sys
import chit
trust = chit.Trust.from_path(sys.argv[1])
inputs = [(p, open(p, "rb").read()) for p in sys.argv[2:]]
reports = chit.check_all(inputs, trust=trust, allow_unchecked=True, expect_count=3)
for line in [r.to_json() for r in reports] + [c.to_json() for c in reports.across]:
    print(line)
PY
  if cmp -s cli.jsonl py.jsonl; then
    echo "ok    $1: chit.check_all gives chit verify --json's $(wc -l < cli.jsonl) lines"
  else
    echo "FAIL  $1: chit.check_all and chit verify --json differ"
    diff cli.jsonl py.jsonl | head -10 | sed 's/^/      /'
    failures=$((failures + 1))
  fi
}
compare "Treeship's store and export"
outcome "every input and check across them valid or signed" 0 \
  "$(grep -cvE '"status":"(valid|signed)"' cli.jsonl)"
outcome "the stream of three is checked" 1 "$(grep -c '^{"stream":"interop","valid":true' cli.jsonl)"
packet=".treeship/artifacts/${arts[1]}.json"
"$python" - "$packet" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
p = r["envelope"]["payload"]
i = len(p) // 2
r["envelope"]["payload"] = p[:i] + ("A" if p[i] != "A" else "B") + p[i + 1:]
json.dump(r, open(sys.argv[1], "w"), indent=2)
PY
compare "a payload byte changed"
outcome "the changed packet fails its signature" 1 \
  "$(grep -F "\"file\":\"$packet\"" py.jsonl | grep -c '"rule":"signature"')"

interop_end
