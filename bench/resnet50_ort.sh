#!/usr/bin/env bash
# Issue 16's ResNet-50 target: Ember's images/s against ONNX Runtime's on the same machine and
# threads (batch 8, 224x224, f32, eval). ONNX Runtime runs torchvision's ResNet-50 exported by
# torch.onnx (random weights: the time does not depend on them) through onnxruntime-node; Ember
# runs bench_resnet50's channels-last model. Rounds alternate; each prints both figures and the
# ratio Ember / ONNX Runtime (>= 1.0 is the target). Needs python3-torchvision (apt) and, once,
# npm to fetch onnxruntime-node 1.30 into ORT_DIR (default ~/.cache/ember/ort).
#   bench/resnet50_ort.sh [BUILD_DIR] [ROUNDS] [THREADS]
# Both run in the caller's environment: Ember's oneDNN kernels use libgomp's default wait policy
# (its threads spin briefly between parallel regions, as ONNX Runtime's pool does). Runs before
# 2026-12-06 forced OMP_WAIT_POLICY=passive on Ember alone, which cost it 1.6-1.9x on MobileNetV2
# and the BERT encoder (a thread wake-up per primitive); set it yourself on a loaded machine.
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
threads=${3:-2}
exe="$build/bench/bench_resnet50"
[ -x "$exe" ] || { echo "missing $exe (configure with -DEMBER_BUILD_BENCH=ON)" >&2; exit 2; }
dir=${ORT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ember/ort}
mkdir -p "$dir"
if [ ! -d "$dir/node_modules/onnxruntime-node" ]; then
  ONNXRUNTIME_NODE_INSTALL=skip npm install --prefix "$dir" onnxruntime-node@1.30.0 >/dev/null 2>&1
fi
model="$dir/resnet50_b8.onnx"
if [ ! -f "$model" ]; then
  /usr/bin/python3 - "$model" <<'PY'
import sys, torch, torchvision
m = torchvision.models.resnet50().eval()
torch.onnx.export(m, torch.randn(8, 3, 224, 224), sys.argv[1] + ".tmp", opset_version=13,
                  input_names=["x"], output_names=["y"])
PY
  mv "$model.tmp" "$model"
fi
here=$(cd "$(dirname "$0")" && pwd)
for r in $(seq 1 "$rounds"); do
  ort=$(NODE_PATH="$dir/node_modules" node "$here/resnet50_ort.mjs" "$model" "$threads" 5)
  ember=$("$exe" --iters 5 --warmup 1 --threads "$threads" \
            --only "ember channels" | grep '^ember channels_last')
  ob=$(awk '{print $3}' <<<"$ort"); om=$(awk '{print $6}' <<<"$ort")
  eb=$(awk '{print $3}' <<<"$ember"); em=$(awk '{print $4}' <<<"$ember")
  awk -v r="$r" -v ob="$ob" -v om="$om" -v eb="$eb" -v em="$em" 'BEGIN {
    printf "round %d: onnxruntime %.2f img/s best, %.2f median; ember channels-last %.2f best, %.2f median; ember / onnxruntime %.2fx best, %.2fx median\n",
      r, 8000 / ob, 8000 / om, 8000 / eb, 8000 / em, ob / eb, om / em }'
done
