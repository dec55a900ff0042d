#!/usr/bin/env bash
# ctest web/wgsl: dumps the WGSL kernels (ember_wgsl_dump) and compiles each in Chromium
# (validate_wgsl.mjs). Fails when chromium or node is missing.
set -euo pipefail
dump=$1
here=$(cd "$(dirname "$0")" && pwd)
for tool in chromium node; do
  command -v "$tool" >/dev/null || { echo "web/wgsl: $tool not found (install it)" >&2; exit 1; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$dump" "$out/kernels"
node --experimental-websocket "$here/validate_wgsl.mjs" "$out/kernels"
