#!/usr/bin/env bash
# What chit serve's memory comes to (release build, peak RSS from /proc):
#
# 1. shapes: one POST /v1/verify of each of the costliest document shapes
#    (16 MB and 1 MB), on a fresh server each, with a budget large enough
#    to take it: the peak RSS's growth over the idle server, and that over
#    the body's size. verify_cost (crates/chit/src/serve/api.rs) must stay
#    above every one of them.
# 2. load: 64 clients at once, for SECS (default 12) seconds, send the
#    largest bodies each route takes (/v1/verify documents as large as
#    the budget lets it check, 64 MiB of JSON Lines on /v1/entries; their
#    length announced and not), again and again: the server's peak RSS,
#    under each --max-in-flight given (default: the server's own).
#
#   bench/serve-memory.sh                    # both
#   BUDGETS="83886080 134217728" bench/serve-memory.sh load
#   CHIT=path/to/chit bench/serve-memory.sh shapes
#   CHIT=old/chit LARGEST=67108864 bench/serve-memory.sh load   # before the budget
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cd "$root"
what=${1:-both}
if [ -z "${CHIT:-}" ]; then
  cargo build --quiet --release -p chit
fi
chit=${CHIT:-./target/release/chit}
work=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill "$server" 2> /dev/null; rm -rf "$work"' EXIT
"$chit" keygen --out "$work/log.pem" > /dev/null
"$chit" log init --store "$work/s.db" --key "$work/log.pem" --origin bench.example/memory > /dev/null
printf '[[token]]\nname = "load"\nsha256 = "%s"\n' "$(printf %s loadtoken | sha256sum | cut -d' ' -f1)" > "$work/tokens.toml"
chmod 600 "$work/tokens.toml"
port=18411

serve() { # [--max-in-flight BYTES]: starts a server, its pid in $server
  "$chit" serve --store "$work/s.db" --listen "127.0.0.1:$port" --tokens "$work/tokens.toml" --quiet "$@" > "$work/serve.txt" 2>&1 &
  server=$!
  for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/healthz" > /dev/null && return; sleep 0.1; done
  echo "the server did not start:"; cat "$work/serve.txt"; exit 1
}
stop() { kill "$server"; wait "$server" 2> /dev/null || true; server=; }
hwm() { awk '/VmHWM/ {print $2}' "/proc/$server/status"; }

if [ "$what" = shapes ] || [ "$what" = both ]; then
  python3 - "$work" <<'EOF'
import json, sys
w = sys.argv[1]
ex = lambda p: json.load(open(p))
run = ex('examples/run-receipts/agreed-verified.json')
for n, tag in ((16 << 20, '16MB'), (1 << 20, '1MB')):
    def put(name, doc, compact=False):
        text = json.dumps(doc, separators=(',', ':')) if compact else json.dumps(doc)
        open(f'{w}/{tag}-{name}.json', 'w').write(text)
    put('run-receipt, a string of escapes', dict(run, id='\n' * ((n - 3000) // 2)))
    put('run-receipt, a plain string', dict(run, id='x' * (n - 3000)))
    put('run-receipt, empty objects', dict(run, extra=[{}] * ((n - 3000) // 3)), True)
    put('array of zeros', [0] * ((n - 2) // 2), True)
    r = ex('examples/reason/bundle.json'); r['request']['mission']['id'] = '\n' * ((n - 20000) // 2)
    put('Reason bundle, escapes', r)
    l = ex('examples/lattice/packet.json'); l['scope']['note'] = '\n' * ((n - 20000) // 2)
    put('Lattice packet, escapes', l)
    l = ex('examples/lattice/packet.json'); l['scope']['extra'] = [0.5] * ((n - 20000) // 4)
    put('Lattice packet, numbers', l, True)
    l = ex('examples/lattice/packet.json'); l['scope']['extra'] = [{}] * ((n - 20000) // 3)
    put('Lattice packet, empty objects', l, True)
    g = ex('examples/lineage/receipt.json'); g['receipt_id'] = '\n' * ((n - 20000) // 2)
    put('lineage receipt, escapes', g)
EOF
  printf '%-44s %6s %10s %8s\n' "document" "status" "growth MB" "x body"
  for f in "$work"/16MB-*.json "$work"/1MB-*.json; do
    serve --max-in-flight 2000000000
    before=$(hwm)
    code=$(curl -s -o /dev/null -w '%{http_code}' --data-binary @"$f" "http://127.0.0.1:$port/v1/verify")
    after=$(hwm)
    stop
    size=$(stat -c %s "$f")
    name=$(basename "$f" .json)
    awk -v n="$name" -v c="$code" -v b="$before" -v a="$after" -v s="$size" \
      'BEGIN { printf "%-44s %6s %10.1f %8.2f\n", n, c, (a - b) / 1024, (a - b) * 1024 / s }'
  done
fi

if [ "$what" = load ] || [ "$what" = both ]; then
  secs=${SECS:-12}
  for budget in ${BUDGETS:-default}; do
    if [ "$budget" = default ]; then serve; else serve --max-in-flight "$budget"; fi
    # The largest /v1/verify takes, as its 413 says (LARGEST=BYTES for a
    # server that does not say: an older binary).
    largest=${LARGEST:-$(curl -s -H 'Content-Length: 67108864' -X POST "http://127.0.0.1:$port/v1/verify" \
      | sed -n 's/.*at most \([0-9]*\) bytes.*/\1/p')}
    python3 - "$port" "$secs" "$largest" <<'EOF'
import socket, sys, threading, time
port, secs, vsize = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
size = 64 << 20
escapes = b'{"receiptVersion":"0.1","id":"' + b'\\n' * ((vsize - 40) // 2) + b'"}'
zeros = b'[' + b'0,' * ((vsize - 3) // 2) + b'0]'
line = b'{"receiptVersion":"0.1","id":"' + b'x' * 60000 + b'"}\n'
lines = line * (size // len(line))
codes, lock, until = {}, threading.Lock(), time.time() + secs
def client(i):
    while time.time() < until:
        jsonl = i % 4 == 3
        body = lines if jsonl else (escapes, zeros)[i % 2]
        chunked = i % 8 >= 4
        head = ('POST %s HTTP/1.1\r\nHost: x\r\n%s%sConnection: close\r\n\r\n' % (
            '/v1/entries' if jsonl else '/v1/verify',
            'Authorization: Bearer loadtoken\r\nContent-Type: application/jsonl\r\n' if jsonl else '',
            'Transfer-Encoding: chunked\r\n' if chunked else 'Content-Length: %d\r\n' % len(body))).encode()
        s = socket.create_connection(('127.0.0.1', port)); got = [0]
        def read():
            try:
                got[0] = int(s.recv(12)[9:12])
                while s.recv(1 << 16): pass
            except Exception: pass
        r = threading.Thread(target=read); r.start()
        try:
            s.sendall(head)
            if chunked:
                for k in range(0, len(body), 1 << 20):
                    p = body[k:k + (1 << 20)]; s.sendall(b'%x\r\n' % len(p) + p + b'\r\n')
                s.sendall(b'0\r\n\r\n')
            else:
                s.sendall(body)
        except Exception: pass
        r.join(); s.close()
        with lock: codes[got[0]] = codes.get(got[0], 0) + 1
        if got[0] == 503: time.sleep(0.05)
ts = [threading.Thread(target=client, args=(i,)) for i in range(64)]
for t in ts: t.start()
for t in ts: t.join()
print('answers', dict(sorted(codes.items())), end='; ')
EOF
    echo "--max-in-flight $budget (/v1/verify up to $largest bytes): peak RSS $(( $(hwm) / 1024 )) MB"
    stop
  done
fi
