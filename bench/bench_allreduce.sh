#!/usr/bin/env bash
# Issue 19's all_reduce target: 40 MB f32 between 2 local processes >= 2.4 GB/s (algorithm
# bandwidth, bytes / seconds). Runs, alternating, ROUNDS times each:
#   ember mpi   mpirun -np 2 bench_allreduce
#   ember gloo  2 processes with RANK / WORLD_SIZE / MASTER_ADDR=127.0.0.1 / MASTER_PORT (when
#               this Ember has the gloo engine)
#   torch gloo  PyTorch's torch.distributed (python3-torch), bench/peers/allreduce_torch.py
# and prints each figure and ember / torch.
#   bench/bench_allreduce.sh [BUILD_DIR] [MB] [ROUNDS]
set -euo pipefail
build=${1:-build-bench}
mb=${2:-40}
rounds=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
exe="$build/bench/bench_allreduce"
[ -x "$exe" ] || { echo "missing $exe (configure with -DEMBER_BUILD_BENCH=ON)" >&2; exit 2; }
mpirun=(mpirun --allow-run-as-root -np 2)
port=$((29500 + RANDOM % 1000))

pair() {  # COMMAND...: two processes with torchrun's variables; prints rank 0's output
  local out rc=0
  out=$(mktemp)
  port=$((port + 1))
  RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$@" >/dev/null &
  local peer=$!
  RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$@" >"$out" || rc=$?
  wait "$peer" || rc=$?
  cat "$out"
  rm -f "$out"
  return "$rc"
}

gbps() { sed -n 's/.* \([0-9.]*\) GB\/s$/\1/p'; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
gloo=0
if EMBER_DIST_BACKEND=gloo pair "$exe" --mb 1 --iters 1 --warmup 0 >/dev/null 2>&1; then
  gloo=1
else
  echo "ember gloo: not in this build (or it failed: run it by hand to see why)"
fi
for r in $(seq 1 "$rounds"); do
  m=$("${mpirun[@]}" "$exe" --mb "$mb")
  echo "round $r: $m"
  if [ "$gloo" = 1 ]; then
    g=$(EMBER_DIST_BACKEND=gloo pair "$exe" --mb "$mb")
    echo "round $r: $g"
  fi
  t=$(pair /usr/bin/python3 "$here/peers/allreduce_torch.py" "$mb")
  echo "round $r: $t"
  awk -v r="$r" -v m="$(echo "$m" | gbps)" -v t="$(echo "$t" | gbps)" -v g="$([ "$gloo" = 1 ] && echo "$g" | gbps)" 'BEGIN {
    printf "round %d: ember mpi / torch gloo %.2fx", r, m / t;
    if (g != "") printf ", ember gloo / torch gloo %.2fx", g / t;
    printf " (target: >= 2.4 GB/s)\n" }'
done
