#!/usr/bin/env bash
# Set-up command 2: install what is missing, build, run every test: the suite (ctest), the
# suite again under AddressSanitizer + UBSan, and the installed package from a user's project.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# oneDNN's OpenMP threads otherwise spin between the many small ops of the test suite.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

# build/ is the main job's folder too (scripts/build.sh release, same configuration): what
# scripts/main.sh compiled is reused. scripts/ctest.sh fails when it finds no tests.
echo "== build and test (Release, with the Vulkan backend on lavapipe + validation layer)"
scripts/build.sh release
# The browser tests in build/'s ctest (web/*) load the WebAssembly build and the demo: build them
# first. The demo's models: 1 epoch each (CI); runs/ models already there are used as they are.
echo "== WebAssembly build (emscripten) and the web demo's assets"
scripts/build-wasm.sh
EMBER_DEMO_EPOCHS=${EMBER_DEMO_EPOCHS:-1} EMBER_DEMO_FASHION_LIMIT=${EMBER_DEMO_FASHION_LIMIT:-8000} \
  scripts/web-demo.sh
scripts/ctest.sh build
echo "== the WebAssembly tests under node (both flavours: single-threaded and pthreads)"
scripts/ctest.sh build-wasm

echo "== build and test under AddressSanitizer + UndefinedBehaviorSanitizer (without Vulkan:"
echo "   the Release stage runs it; Mesa's lavapipe under LSan is not checked yet)"
scripts/build.sh asan
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 scripts/ctest.sh build-asan

echo "== install, then build examples/quickstart with find_package(Ember) and pkg-config"
prefix=$(mktemp -d)
cmake --install build --prefix "$prefix" >/dev/null
"$prefix/bin/ember" devices >/dev/null   # the installed command starts (RPATH: bin/../lib)
cmake -S examples/quickstart -B build/quickstart-user -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build build/quickstart-user -j"$(nproc)" >/dev/null
./build/quickstart-user/quickstart | tail -n 3
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" c++ -std=c++20 examples/quickstart/main.cpp \
  $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs ember) -o build/quickstart-pc
LD_LIBRARY_PATH="$prefix/lib" ./build/quickstart-pc | tail -n 1
rm -rf "$prefix"
echo "all tests passed"
