#!/usr/bin/env bash
# Cross-builds Ember for aarch64 (Debian 12 host, cmake/aarch64-linux-gnu.cmake) and runs the
# portable core and cpu backend tests under qemu-user. Not part of CI: the cross build alone
# takes ~20 minutes with -j2.
# See docs/portability.md.
#
# Usage: scripts/arm64-check.sh [--setup] [--no-build] [--quick]
#   --setup     install the cross toolchain, qemu and the arm64 libraries (root; apt, Debian only)
#   --no-build  run the tests of an existing build-arm64
#   --quick     only the op table (ref and cpu) and the cpu backend tests
# Environment: BUILD_DIR (build-arm64), EMBER_ARM64_SYSROOT (/opt/ember-arm64-sysroot),
#              JOBS (2), GTEST_EXTRA (more gtest flags).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-arm64}
SYSROOT=${EMBER_ARM64_SYSROOT:-/opt/ember-arm64-sysroot}
JOBS=${JOBS:-2}
setup=0 build=1 quick=0
for a in "$@"; do
  case "$a" in
    --setup) setup=1 ;;
    --no-build) build=0 ;;
    --quick) quick=1 ;;
    *) echo "unknown argument: $a" >&2; exit 2 ;;
  esac
done

if [ $setup = 1 ]; then
  echo "== setup: arm64 multiarch, cross g++, qemu, the arm64 libraries (log: /tmp/arm64-apt.log)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  {
    $SUDO dpkg --add-architecture arm64 && $SUDO apt-get update &&
      $SUDO apt-get install -y g++-aarch64-linux-gnu qemu-user-static libdnnl2:arm64 \
        libopenblas0-openmp:arm64 libgtest-dev:arm64 libonnx1:arm64 libprotobuf-dev:arm64 \
        zlib1g-dev:arm64 libpng-dev:arm64 libjpeg62-turbo-dev:arm64 nlohmann-json3-dev \
        libcli11-dev protobuf-compiler
  } >>/tmp/arm64-apt.log 2>&1 || { echo "apt failed: see /tmp/arm64-apt.log"; exit 1; }
  # Not co-installable with their amd64 versions: unpacked into the sysroot instead.
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download libdnnl-dev:arm64 libonnx-dev:arm64 libonnxifi:arm64) \
    >>/tmp/arm64-apt.log 2>&1 || { echo "apt-get download failed"; exit 1; }
  $SUDO mkdir -p "$SYSROOT"
  for d in "$tmp"/*.deb; do $SUDO dpkg-deb -x "$d" "$SYSROOT"; done
  rm -rf "$tmp"
  # The -dev files reference the runtime libraries (libdnnl.so.2.6, ...) next to themselves;
  # those are installed (multiarch) under /usr/lib/aarch64-linux-gnu: linked from the sysroot.
  for f in $(dpkg -L libdnnl2:arm64 libonnx1:arm64 | grep -E '^/usr/lib/aarch64-linux-gnu/[^/]+$'); do
    $SUDO ln -sfn "$f" "$SYSROOT$f"
  done
fi

QEMU=$(command -v qemu-aarch64-static || command -v qemu-aarch64) ||
  { echo "no qemu-aarch64: run with --setup"; exit 1; }
export OMP_WAIT_POLICY=passive
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}

if [ $build = 1 ]; then
  echo "== configure $BUILD_DIR (aarch64, Release, cpu backend, no Vulkan/CUDA/bench)"
  t0=$(date +%s)
  cmake -S . -B "$BUILD_DIR" -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/aarch64-linux-gnu.cmake" \
    -DEMBER_ARM64_SYSROOT="$SYSROOT" -DCMAKE_BUILD_TYPE=Release -DEMBER_BACKEND_VULKAN=OFF \
    -DEMBER_BUILD_BENCH=OFF -DEMBER_BUILD_EXAMPLES=OFF >/dev/null ||
    { echo "FAIL: configure"; exit 1; }
  echo "== build ember_tests -j$JOBS"
  if ! make -C "$BUILD_DIR" -j"$JOBS" ember_tests >"$BUILD_DIR/arm64-build.log" 2>&1; then
    grep -E "error:|Error [0-9]" "$BUILD_DIR/arm64-build.log" | head -20
    echo "FAIL: build (log: $BUILD_DIR/arm64-build.log)"
    exit 1
  fi
  grep -E "warning:" "$BUILD_DIR/arm64-build.log" | sort -u | head -20
  echo "   built in $(($(date +%s) - t0)) s"
fi
bin="$BUILD_DIR/tests/ember_tests"
[ -x "$bin" ] || { echo "FAIL: no $bin"; exit 1; }
file "$bin" | grep -q "ARM aarch64" || { echo "FAIL: $bin is not an aarch64 binary"; exit 1; }

# Each group: a name and a gtest filter. Left out: Vulkan* (not built) and CliTest* (runs the
# arm64 `ember` binary as a child process, which needs binfmt_misc: not available in containers).
groups=(
  "op table (ref and cpu, 4 layouts)|OpTable*"
  "cpu backend (tests/cpu_*_test.cpp)|Cpu*"
)
if [ $quick = 0 ]; then
  groups+=("portable core (all else)|-OpTable*:Cpu*:Vulkan*:CliTest*")
fi
fail=0 summary=()
for g in "${groups[@]}"; do
  name=${g%%|*} filter=${g#*|}
  echo "== $name: $QEMU $bin --gtest_filter='$filter'"
  log="$BUILD_DIR/arm64-$(echo "$name" | tr -c 'a-z0-9' '_').log"
  t0=$(date +%s)
  # shellcheck disable=SC2086
  "$QEMU" "$bin" --gtest_filter="$filter" --gtest_brief=1 ${GTEST_EXTRA:-} >"$log" 2>&1
  rc=$?
  secs=$(($(date +%s) - t0))
  passed=$(grep -oE '\[  PASSED  \] [0-9]+' "$log" | grep -oE '[0-9]+$' || echo 0)
  # --gtest_brief prints one "[  FAILED  ] Suite.Test (N ms)" line per failed test.
  failed=$(grep -cE '^\[  FAILED  \] [A-Za-z0-9_/]+\.[A-Za-z0-9_/]+' "$log")
  skipped=$(grep -oE '\[  SKIPPED \] [0-9]+ test' "$log" | grep -oE '[0-9]+' || echo 0)
  if [ $rc = 0 ]; then res=PASS; else res=FAIL; fail=1; grep -E '^\[  FAILED  \]' "$log" | head -20; fi
  summary+=("$res  $name: ${passed:-0} passed, ${failed:-0} failed, ${skipped:-0} skipped, ${secs} s (log: $log)")
done
echo "== summary (aarch64 under $(basename "$QEMU"))"
printf '%s\n' "${summary[@]}"
if [ $fail = 0 ]; then echo "arm64 check: PASS"; else echo "arm64 check: FAIL"; fi
exit $fail
