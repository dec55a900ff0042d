#!/usr/bin/env bash
# Configures and builds one of Ember's two build folders (ccache when present).
#   scripts/build.sh release [TARGET...]  build/: Release, cpu + Vulkan backends, the ember
#       command and the tests. Shared by the two set-up commands: scripts/main.sh builds only
#       ember_cli in it, scripts/test.sh the rest, reusing the library main.sh compiled.
#   scripts/build.sh asan [TARGET...]     build-asan/: RelWithDebInfo under AddressSanitizer +
#       UndefinedBehaviorSanitizer, without the Vulkan backend and the ember command.
# No TARGET: every target; --configure: configure only. BUILD_DIR overrides the folder. Every option is set explicitly, so a
# folder configured otherwise before (by hand, or by an older script) is reconfigured to the
# same build, whichever command ran first.
set -euo pipefail
cd "$(dirname "$0")/.."
# One ccache for both commands, hashing paths relative to the checkout (so clones in other
# folders, as CI's, share it too).
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
# The asan folder compiles with -g, for which ccache also hashes the working directory: every
# fresh clone (CI's) missed the whole cache. Objects differ only in the recorded folder.
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
common=(-DEMBER_BUILD_TESTS=ON -DEMBER_BUILD_EXAMPLES=ON -DEMBER_BUILD_BENCH=OFF
        -DEMBER_BACKEND_CPU=ON -DEMBER_SHARED=ON)
case "${1:-}" in
  release)
    dir=build
    opts=(-DCMAKE_BUILD_TYPE=Release -DEMBER_BACKEND_VULKAN=ON -DEMBER_BACKEND_OPENCL=ON -DEMBER_BUILD_TOOLS=ON
          -DEMBER_SANITIZE=) ;;
  asan)
    dir=build-asan
    opts=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_BACKEND_VULKAN=OFF -DEMBER_BUILD_TOOLS=OFF
          -DEMBER_SANITIZE=address,undefined) ;;
  *)
    echo "usage: scripts/build.sh release|asan [TARGET...]" >&2
    exit 2 ;;
esac
shift
dir=${BUILD_DIR:-$dir}
cmake -S . -B "$dir" "${common[@]}" "${opts[@]}" >/dev/null
if [ "${1:-}" = --configure ]; then
  exit 0
elif [ $# -gt 0 ]; then
  cmake --build "$dir" -j"$(nproc)" --target "$@"
else
  cmake --build "$dir" -j"$(nproc)"
fi
