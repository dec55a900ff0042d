#!/usr/bin/env bash
# Builds Ember for WebAssembly with Debian's emscripten into build-wasm/ (or BUILD_DIR):
#   scripts/build-wasm.sh [TARGET...]   default: every target (the library in both flavours, the
#   JavaScript API's modules under build-wasm/web/, the wasm tests). ccache when present.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v emcmake >/dev/null || { echo "build-wasm: emcmake not found (apt-get install emscripten)" >&2; exit 1; }
# emscripten's optimizer imports acorn from Debian's node modules.
export NODE_PATH=${NODE_PATH:-/usr/share/nodejs}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
# emscripten keeps its compiled system libraries in a cache inside /usr/share/emscripten; a
# user-writable copy lets non-root users build too.
if [ ! -w /usr/share/emscripten/cache ]; then
  export EM_CACHE=${EM_CACHE:-$HOME/.cache/emscripten}
fi
dir=${BUILD_DIR:-build-wasm}
emcmake cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DEMBER_BUILD_TESTS=ON >/dev/null
if [ $# -gt 0 ]; then
  cmake --build "$dir" -j"$(nproc)" --target "$@"
else
  cmake --build "$dir" -j"$(nproc)"
fi
