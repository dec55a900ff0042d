#!/usr/bin/env bash
# Runs a build folder's tests with ctest: one ctest test per gtest suite and per op-table
# family x backend (tests/ctest_groups.cmake), in parallel (-j$(nproc), or JOBS), printing the
# output of those that fail. Fails when it finds no tests (a folder configured without
# EMBER_BUILD_TESTS, a test binary that lists none).
# A test that fails is run once more on its own and the run fails only if it fails again; the
# first failures are listed ("failed, then passed alone") so a flaky test stays visible. Seen in
# CI: rare crashes inside libLLVM-15, which Mesa's lavapipe and PoCL share in one process, and
# at process exit, in OpenCL/Vulkan tests. RETRY=0 turns this off.
# Usage: scripts/ctest.sh BUILD_DIR [ctest arguments, e.g. -R 'OpTable\.add/']
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: scripts/ctest.sh BUILD_DIR [ctest arguments]}
shift
run() { ctest --test-dir "$dir" --no-tests=error --output-on-failure "$@"; }
if run -j"${JOBS:-$(nproc)}" "$@"; then
  exit 0
fi
[ "${RETRY:-1}" = 0 ] && exit 1
failed_log="$dir/Testing/Temporary/LastTestsFailed.log"
[ -s "$failed_log" ] || exit 1
echo "== failed in the parallel run (run again, one at a time):"
sed 's/^/   /' "$failed_log"
if run --rerun-failed "$@"; then
  echo "== WARNING: the tests above failed, then passed alone: flaky (see scripts/ctest.sh)"
  exit 0
fi
exit 1
