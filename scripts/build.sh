#!/usr/bin/env bash
# Configures and builds Ember into ${BUILD_DIR:-build} (Release, ccache when present).
# Extra arguments are passed to cmake (e.g. -DEMBER_SANITIZE=address,undefined).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} "$@" >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)"
