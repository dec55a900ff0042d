#!/usr/bin/env bash
# The set-up commands' build and test steps (ctest test setup_scripts):
# 1. scripts/ctest.sh (every test stage of scripts/test.sh) fails on a build folder without tests,
#    as scripts/main.sh used to leave build/ (-DEMBER_BUILD_TESTS=OFF), where a plain ctest
#    printed "No tests were found!!!" and passed;
# 2. scripts/build.sh release, which both commands configure build/ with, turns the tests back on
#    in such a folder and gives it the same configuration as a fresh one;
# 3. both commands build their Release folder with it, and test.sh tests it with scripts/ctest.sh;
# 4. (below) scripts/ctest.sh's second run of a failed test.
set -uo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ember_setup_scripts_$$_XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

cmake -S . -B "$tmp/off" -DCMAKE_BUILD_TYPE=Release -DEMBER_BUILD_TESTS=OFF >"$tmp/log" 2>&1 ||
  fail "configure: $(cat "$tmp/log")"
if scripts/ctest.sh "$tmp/off" >"$tmp/ctest.log" 2>&1; then
  fail "scripts/ctest.sh passed on a folder without tests: $(cat "$tmp/ctest.log")"
fi
grep -q "No tests were found" "$tmp/ctest.log" || fail "unexpected ctest output: $(cat "$tmp/ctest.log")"

# 4. a failing test is run once more alone: one that fails again fails the run, one that then
#    passes (flaky) passes it with a warning naming it.
mkdir -p "$tmp/retry"
cat >"$tmp/retry/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.16)
project(retry NONE)
enable_testing()
add_test(NAME always_fails COMMAND false)
add_test(NAME passes COMMAND true)
add_test(NAME fails_once COMMAND sh -c "test -e ${CMAKE_BINARY_DIR}/seen || { touch ${CMAKE_BINARY_DIR}/seen; exit 1; }")
CM
cmake -S "$tmp/retry" -B "$tmp/retry/b" >"$tmp/log" 2>&1 || fail "configure retry: $(cat "$tmp/log")"
if scripts/ctest.sh "$tmp/retry/b" >"$tmp/ctest.log" 2>&1; then
  fail "scripts/ctest.sh passed with a test that always fails: $(cat "$tmp/ctest.log")"
fi
rm -f "$tmp/retry/b/seen"
scripts/ctest.sh "$tmp/retry/b" -R 'passes|fails_once' >"$tmp/ctest.log" 2>&1 ||
  fail "scripts/ctest.sh failed on a test that passes when run again: $(cat "$tmp/ctest.log")"
grep -q "WARNING: the tests above failed, then passed alone" "$tmp/ctest.log" &&
  grep -q "fails_once" "$tmp/ctest.log" || fail "no flaky warning: $(cat "$tmp/ctest.log")"

BUILD_DIR="$tmp/off" scripts/build.sh release --configure || fail "build.sh release --configure"
BUILD_DIR="$tmp/fresh" scripts/build.sh release --configure || fail "build.sh release --configure"
for f in "$tmp/off" "$tmp/fresh"; do
  grep -q '^EMBER_BUILD_TESTS:BOOL=ON$' "$f/CMakeCache.txt" || fail "$f: tests off"
  grep -q '^EMBER_BACKEND_VULKAN:BOOL=ON$' "$f/CMakeCache.txt" || fail "$f: no Vulkan"
done
# The options that decide what is compiled, and how, are the same in both folders.
opts() { grep -E '^(CMAKE_BUILD_TYPE|EMBER_[A-Z_]+):' "$1/CMakeCache.txt" | sort; }
diff <(opts "$tmp/off") <(opts "$tmp/fresh") || fail "configurations differ"

grep -qx 'scripts/build.sh release ember_cli' scripts/main.sh || fail "main.sh: not build.sh release"
grep -qx 'scripts/build.sh release' scripts/test.sh || fail "test.sh: not build.sh release"
grep -qx 'scripts/ctest.sh build' scripts/test.sh || fail "test.sh: Release stage not scripts/ctest.sh"
grep -q '^ASAN_OPTIONS=.* scripts/ctest.sh build-asan$' scripts/test.sh ||
  fail "test.sh: ASan stage not scripts/ctest.sh"
echo "setup scripts: ok"
