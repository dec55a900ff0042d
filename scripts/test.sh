#!/usr/bin/env bash
# Set-up command 2: install what is missing, build, run every test: the suite (ctest), the
# suite again under AddressSanitizer + UBSan, and the installed package from a user's project.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
# Hash paths relative to the checkout, so clones in other folders share the cache.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
# oneDNN's OpenMP threads otherwise spin between the many small ops of the test suite.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

echo "== build and test (Release, with the Vulkan backend on lavapipe + validation layer)"
BUILD_DIR=build scripts/build.sh -DEMBER_BACKEND_VULKAN=ON
(cd build && ctest --output-on-failure)

echo "== build and test under AddressSanitizer + UndefinedBehaviorSanitizer (without Vulkan:"
echo "   the Release stage runs it; Mesa's lavapipe under LSan is not checked yet)"
BUILD_DIR=build-asan BUILD_TYPE=RelWithDebInfo scripts/build.sh -DEMBER_SANITIZE=address,undefined \
  -DEMBER_BUILD_TOOLS=OFF
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure)

echo "== install, then build examples/quickstart with find_package(Ember) and pkg-config"
prefix=$(mktemp -d)
cmake --install build --prefix "$prefix" >/dev/null
cmake -S examples/quickstart -B build/quickstart-user -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build build/quickstart-user -j"$(nproc)" >/dev/null
./build/quickstart-user/quickstart | tail -n 3
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" c++ -std=c++20 examples/quickstart/main.cpp \
  $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs ember) -o build/quickstart-pc
LD_LIBRARY_PATH="$prefix/lib" ./build/quickstart-pc | tail -n 1
rm -rf "$prefix"
echo "all tests passed"
