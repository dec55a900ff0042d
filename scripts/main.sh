#!/usr/bin/env bash
# Set-up command 1: install what is missing, build, run the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --main
BUILD_DIR=build scripts/build.sh -DEMBER_BUILD_TESTS=OFF
./build/tools/ember devices
./build/examples/quickstart/quickstart
