#!/usr/bin/env bash
# Set-up command 1: install what is missing, build the ember command, then the main job: train the
# Fashion-MNIST CNN (3 epochs, Adam, batch 64, cpu backend) and print its summary.
# Extra arguments go to `ember train` (e.g. --epochs 1, --device ref, --workers 1).
set -euo pipefail
cd "$(dirname "$0")/.."
# OpenMP threads (oneDNN, OpenBLAS, the cpu pool) sleep between parallel regions instead of
# spinning: measured 2x faster than the default policy when other work shares the cores (spinning
# threads take the cores the working ones need). A value the user set is kept.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
scripts/install-deps.sh --main
# The test command's Release folder and configuration (tests included), building only the
# ember command: scripts/test.sh then compiles only what is left (the tests).
scripts/build.sh release ember_cli
./build/tools/ember devices
./build/tools/ember train fashion-mnist --model cnn --out runs/fashion-mnist-cnn "$@"
echo "---- runs/fashion-mnist-cnn/summary.json ----"
cat runs/fashion-mnist-cnn/summary.json
