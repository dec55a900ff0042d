#!/usr/bin/env bash
# GPU check (under 5 minutes on a machine with a GPU): build with Vulkan, list the devices, run
# the Vulkan runtime tests and the op table on the default Vulkan device, then the
# elementwise/matmul benchmark, and print a short table.
# Usage: bench/gpu_check.sh [DEVICE]   (default: vulkan = DefaultDevice, a GPU when present)
set -uo pipefail
cd "$(dirname "$0")/.."
DEV=${1:-vulkan}
BUILD_DIR=${BUILD_DIR:-build-gpu}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} OMP_WAIT_POLICY=passive
t0=$(date +%s)
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DEMBER_BACKEND_VULKAN=ON \
  -DEMBER_BUILD_EXAMPLES=OFF >/dev/null || exit 1
cmake --build "$BUILD_DIR" -j"$(nproc)" --target ember ember_tests ember_cli >/dev/null || exit 1
c++ -O2 -std=c++20 bench/gpu_bench.cpp -Iinclude -L"$BUILD_DIR" -lember \
  -Wl,-rpath,"$PWD/$BUILD_DIR" -o "$BUILD_DIR/gpu_bench" || exit 1
t_build=$(( $(date +%s) - t0 ))
"$BUILD_DIR"/tools/ember devices

# The op table runs on every listed adapter: hide lavapipe next to an NVIDIA GPU (its ICD only).
for icd in /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json; do
  [ -f "$icd" ] && [ -z "${VK_ICD_FILENAMES:-}" ] && export VK_ICD_FILENAMES=$icd
done
log=$(mktemp)
t1=$(date +%s)
timeout 200 "$BUILD_DIR"/tests/ember_tests --gtest_filter='VulkanRuntime.*:OpTable.*/vulkan' >"$log" 2>&1
rc=$?
t_tests=$(( $(date +%s) - t1 ))
runtime=$(grep -cE '^\[       OK \] VulkanRuntime' "$log")
skipped=$(grep -cE '^\[  SKIPPED \] VulkanRuntime' "$log")
failed=$(grep -cE '^\[  FAILED  \] VulkanRuntime' "$log")
optable=$(grep -E '^op table:' "$log" | head -1)
vk_fail=$(grep -cE 'vulkan:[0-9]+, ' "$log")
bench=$(timeout 90 "$BUILD_DIR"/gpu_bench "$DEV" 2>&1)
for mt in 1 4 16 64; do
  bench+=$'\n'$(EMBER_VULKAN_MAX_TASKS=$mt timeout 30 "$BUILD_DIR"/gpu_bench "$DEV" --chain 2>&1)
done

echo
echo "== GPU check ($(date -u +%Y-%m-%dT%H:%MZ))"
printf '%-28s %s\n' "build" "${t_build}s (${extra[*]:-Vulkan only})"
printf '%-28s %s\n' "runtime tests" "$runtime passed, $skipped skipped, $failed failed"
printf '%-28s %s\n' "op table" "${optable:-did not finish} ($vk_fail Vulkan failure lines)"
printf '%-28s %s\n' "tests wall time" "${t_tests}s (exit $rc)"
echo "$bench"
[ "$rc" -eq 0 ] || { echo "failures (first 30):"; grep -E 'Failure|vulkan:[0-9]+, ' "$log" | head -30; }
rm -f "$log"
