# Shared by the benchmark scripts: source it, then `best_of ROUNDS CMD...`
# prints the shortest wall time, in seconds, of ROUNDS runs of CMD.
best_of() {
  local rounds=$1 best="" t0 t1 t
  shift
  for _ in $(seq "$rounds"); do
    t0=$(date +%s.%N)
    "$@"
    t1=$(date +%s.%N)
    t=$(echo "$t1 - $t0" | bc -l)
    if [ -z "$best" ] || [ "$(echo "$t < $best" | bc -l)" = 1 ]; then best=$t; fi
  done
  echo "$best"
}
