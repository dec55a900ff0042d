#!/usr/bin/env bash
# ctest onnx/export_ort: ONNX Runtime (npm onnxruntime-node 1.30, the CPU build, installed once
# into ${XDG_CACHE_HOME:-~/.cache}/ember/ort) loads what ember::onnx::save and `ember export`
# write and gives the same outputs as Ember:
#   - the models of OnnxExport.ModelsRunOnEveryDeviceAtAnyBatch with the module's own outputs;
#   - `ember export` of a cnn and an mlp briefly trained by `ember train`, with `ember run`'s
#     outputs (export itself checks those against the model).
#   tests/onnx_export_ort.sh EMBER_TESTS EMBER_CLI
set -euo pipefail
tests=$(realpath "$1")
cli=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
ort=${ORT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ember/ort}
mkdir -p "$ort"
(
  flock 9
  if [ ! -d "$ort/node_modules/onnxruntime-node" ]; then
    ONNXRUNTIME_NODE_INSTALL=skip npm install --prefix "$ort" onnxruntime-node@1.30.0 \
      >"$ort/install.log" 2>&1 ||
      { echo "cannot install onnxruntime-node@1.30.0 into $ort (npm; see $ort/install.log)"; exit 1; }
  fi
) 9>"$ort.lock"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/models"
if ! EMBER_EXPORT_ORT_DIR="$work/models" "$tests" \
    --gtest_filter='OnnxExport.ModelsRunOnEveryDeviceAtAnyBatch' >"$work/gtest.log" 2>&1; then
  cat "$work/gtest.log"
  exit 1
fi
cd "$work"
/usr/bin/python3 -c "import numpy; numpy.random.seed(0); numpy.save('x.npy', numpy.random.randn(3, 1, 28, 28).astype('float32'))"
for model in cnn mlp; do
  "$cli" train fashion-mnist --model "$model" --epochs 1 --limit-train 128 --limit-test 64 \
    --out "run-$model" >/dev/null
  "$cli" export --checkpoint "run-$model/model.safetensors" --onnx "models/cli_$model.onnx"
  "$cli" run "models/cli_$model.onnx" --input x.npy --output-dir "out-$model" >/dev/null
  cp x.npy "models/cli_$model.input.npy"
  cp "out-$model/output.npy" "models/cli_$model.output.npy"
done
NODE_PATH="$ort/node_modules" node "$here/onnx_export_ort.mjs" models
