#!/usr/bin/env bash
# Builds the browser demo (examples/web-mnist) and its assets, then serve it with
#   node examples/web-mnist/serve.mjs        (http://127.0.0.1:8080/)
# Steps, each skipped when done: installs emscripten, chromium and nodejs when missing (apt);
# builds the wasm modules (build-wasm/web/) and the native `ember` command (build/); trains the
# digits model (runs/mnist-cnn, `ember train mnist`) and the Fashion-MNIST one (scripts/main.sh's
# runs/fashion-mnist-cnn, else runs/web-fashion-mnist-cnn) when absent; copies into
# examples/web-mnist/ (gitignored): the API (web/*.mjs), the modules (wasm/), the models, the
# 2,000 MNIST test digits and 48 Fashion-MNIST test images (assets/).
# EMBER_DEMO_EPOCHS (default 10, ember train's): epochs of the models it trains; CI uses 1 (a
# 1-epoch digits model scores about 95%, 10 epochs about 98%, at about 2.5 minutes an epoch on
# 2 loaded cores). EMBER_DEMO_FASHION_LIMIT (default 0: all 60,000): Fashion-MNIST training
# images, 8000 for a quick model.
set -euo pipefail
cd "$(dirname "$0")/.."
epochs=${EMBER_DEMO_EPOCHS:-10}
fashion_limit=${EMBER_DEMO_FASHION_LIMIT:-0}

missing=()
command -v emcc >/dev/null || missing+=(emscripten)
command -v chromium >/dev/null || missing+=(chromium)
command -v node >/dev/null || missing+=(nodejs)
command -v cmake >/dev/null || bash scripts/install-deps.sh
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

echo "---- building the wasm modules and the ember command ----"
scripts/build-wasm.sh ember_web ember_web_threads
scripts/build.sh release ember_cli
ember=./build/tools/ember

if [ ! -f runs/mnist-cnn/model.safetensors ]; then
  echo "---- training the digits model (epochs: $epochs) ----"
  $ember train mnist --model cnn --epochs "$epochs" --out runs/mnist-cnn
fi
# The main job's model (scripts/main.sh) when it is there, else one of the demo's own.
fashion=runs/fashion-mnist-cnn
if [ ! -f $fashion/model.safetensors ]; then
  fashion=runs/web-fashion-mnist-cnn
  if [ ! -f $fashion/model.safetensors ]; then
    echo "---- training the Fashion-MNIST model (epochs: $epochs) ----"
    $ember train fashion-mnist --model cnn --epochs "$epochs" --limit-train "$fashion_limit" \
      --out $fashion
  fi
fi

echo "---- copying the demo's assets into examples/web-mnist ----"
demo=examples/web-mnist
mkdir -p "$demo/wasm" "$demo/assets"
cp web/ember.mjs "$demo/"
[ -f web/webgpu_device.mjs ] && cp web/webgpu_device.mjs "$demo/"
cp build-wasm/web/ember.mjs build-wasm/web/ember.wasm "$demo/wasm/"
cp build-wasm/web/ember-threads.mjs build-wasm/web/ember-threads.wasm \
   build-wasm/web/ember-threads.worker.js "$demo/wasm/"
cp runs/mnist-cnn/model.safetensors "$demo/assets/mnist-cnn.safetensors"
cp $fashion/model.safetensors "$demo/assets/fashion-mnist-cnn.safetensors"
node scripts/web-demo-export.mjs data/mnist/t10k-images-idx3-ubyte \
  data/mnist/t10k-labels-idx1-ubyte 2000 "$demo/assets/mnist-test"
fm=/usr/share/datasets/fashion-mnist
node scripts/web-demo-export.mjs $fm/t10k-images-idx3-ubyte $fm/t10k-labels-idx1-ubyte 48 \
  "$demo/assets/fashion-test"
echo "done: node $demo/serve.mjs, then open http://127.0.0.1:8080/"
