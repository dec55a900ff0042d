#!/usr/bin/env bash
# Layering check (docs/ARCHITECTURE.md, "The one loop"): only src/ops and src/tensor issue IR.
# src/nn names no ir:: type, includes nothing from runtime/ or ir/ and calls no backend; the
# backward rules in src/autodiff/rules call ops, never run(); src/onnx maps ONNX nodes onto the
# public ops, no IR or backend, and nn knows nothing of ONNX. Prints the offending lines.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
if grep -rn 'ir::\|"ir/\|runtime/\|execute_fused\|backend_for' src/nn; then
  echo "check-layering: src/nn must build on ops (src/ops/*.h), not on IR or backends" >&2
  status=1
fi
if grep -rn 'ir::\|"ir/\|runtime/\|backends/\|execute_fused\|backend_for' src/onnx; then
  echo "check-layering: src/onnx must build on Ember's public ops, not on IR or backends" >&2
  status=1
fi
if grep -rn '"onnx/\|ember/onnx' src/nn include/ember/nn; then
  echo "check-layering: nn must not know ONNX (src/onnx exports nn modules, not the other way)" >&2
  status=1
fi
if grep -rn '\brun(\|execute_fused\|backend_for' src/autodiff/rules; then
  echo "check-layering: backward rules must call ops (src/ops), not run() or a backend" >&2
  status=1
fi
exit $status
