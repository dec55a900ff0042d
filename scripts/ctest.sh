#!/usr/bin/env bash
# Runs a build folder's tests with ctest: one ctest test per gtest suite and per op-table
# family x backend (tests/ctest_groups.cmake), in parallel (-j$(nproc), or JOBS), printing the
# output of those that fail. Fails when it finds no tests (a folder configured without
# EMBER_BUILD_TESTS, a test binary that lists none).
# Usage: scripts/ctest.sh BUILD_DIR [ctest arguments, e.g. -R 'OpTable\.add/']
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: scripts/ctest.sh BUILD_DIR [ctest arguments]}
shift
ctest --test-dir "$dir" --no-tests=error --output-on-failure -j"${JOBS:-$(nproc)}" "$@"
