#!/usr/bin/env bash
# Issue 17's speed targets: the same ONNX files through ember::onnx (bench_onnx_model) and ONNX
# Runtime (onnxruntime-node 1.30 from npm, bench/onnx_ort.mjs), same machine and threads, rounds
# alternating. Prints, per case and round, both figures and Ember's throughput / ONNX Runtime's
# (>= 1.0 is the target) and the load-to-first-result times. Models come from
# scripts/onnx_models.py (python3-torch), made once in MODELS_DIR (default BUILD_DIR/onnx_models).
#   bench/onnx_vs_ort.sh [BUILD_DIR] [ROUNDS] [THREADS]
# Both run in the caller's environment: Ember's oneDNN kernels use libgomp's default wait policy
# (its threads spin briefly between parallel regions, as ONNX Runtime's pool does). Runs before
# 2026-12-06 forced OMP_WAIT_POLICY=passive on Ember alone, which cost it 1.6-1.9x on MobileNetV2
# and the BERT encoder (a thread wake-up per primitive); set it yourself on a loaded machine.
set -euo pipefail
build=${1:-build-bench}
rounds=${2:-3}
threads=${3:-2}
here=$(cd "$(dirname "$0")" && pwd)
exe="$build/bench/bench_onnx_model"
[ -x "$exe" ] || { echo "missing $exe (configure with -DEMBER_BUILD_BENCH=ON)" >&2; exit 2; }
models=${MODELS_DIR:-$build/onnx_models}
[ -f "$models/COMPLETE" ] || /usr/bin/python3 "$here/../scripts/onnx_models.py" "$models" >/dev/null 2>&1
dir=${ORT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ember/ort}
mkdir -p "$dir"
if [ ! -d "$dir/node_modules/onnxruntime-node" ]; then
  ONNXRUNTIME_NODE_INSTALL=skip npm install --prefix "$dir" onnxruntime-node@1.30.0 >/dev/null 2>&1
fi
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)," \
     "flags: $(grep -m1 -o -w 'avx512f\|avx512_bf16\|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')"
for c in "resnet50 1" "resnet50 8" "mobilenet_v2 1" "bert_encoder 0"; do
  set -- $c
  for r in $(seq 1 "$rounds"); do
    ort=$(NODE_PATH="$dir/node_modules" node "$here/onnx_ort.mjs" "$models/$1" "$2" "$threads" 10)
    ember=$("$exe" "$models/$1" --batch "$2" --threads "$threads" --iters 10)
    awk -v c="$1 batch $2" -v r="$r" -v o="$ort" -v e="$ember" 'BEGIN {
      split(o, a, " "); split(e, b, " ");
      printf "%-22s round %d: onnxruntime best %7.2f ms median %7.2f (load+first %6.0f ms); ember best %7.2f median %7.2f (load+first %6.0f ms); ember / onnxruntime %.2fx best, %.2fx median\n",
        c, r, a[6], a[9], a[3], b[6], b[9], b[3], a[6] / b[6], a[9] / b[9] }'
  done
done
