#!/usr/bin/env bash
# ctest dist/cli: `ember train` as a data-parallel job, the way a user runs it.
#   1. mpirun -np 2 ember train ...: rank 0 alone prints and writes; summary says 2 processes.
#   2. ember train --nproc 2 --interrupt-after N: every rank stops after the same step (exit
#      130), rank 0 writes interrupted.safetensors; --nproc 2 --resume completes the run.
#   3. --nproc 3 --resume of a run trained by 2 (the checkpoint is the model's, not the ranks').
#   4. A rank killed mid-epoch (SIGKILL): the job ends promptly with a non-zero status, and the
#      checkpoints on disk still load (`ember eval`).
#   5. An error on one rank ends the job at once (not after the others' timeout).
# Usage: cli_ddp_test.sh EMBER MPIEXEC
set -uo pipefail
ember=$1 mpiexec=$2
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive
small=(train fashion-mnist --limit-train 768 --limit-test 256 --batch-size 32)
summary() { /usr/bin/python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }

echo "== 1. mpirun -np 2 ember train"
"$mpiexec" -np 2 --oversubscribe "$ember" "${small[@]}" --epochs 1 --out "$d/a" >"$d/a.log" 2>&1 ||
  { cat "$d/a.log"; fail "mpirun -np 2 ember train failed"; }
[ "$(grep -c '^training cnn' "$d/a.log")" = 1 ] || { cat "$d/a.log"; fail "expected one 'training' line (rank 0's)"; }
grep -q '2 processes (mpi' "$d/a.log" || { cat "$d/a.log"; fail "the banner does not name 2 mpi processes"; }
[ "$(summary "$d/a/summary.json" 's["processes"]')" = 2 ] || fail "summary.json: processes != 2"
[ -f "$d/a/checkpoints/epoch-0001.safetensors" ] || fail "no epoch checkpoint"
[ -f "$d/a/model.safetensors" ] || fail "no model file"

echo "== 2. --nproc 2 --interrupt-after 5, then --resume"
"$ember" "${small[@]}" --epochs 2 --nproc 2 --interrupt-after 5 --out "$d/b" >"$d/b.log" 2>&1
rc=$?
[ $rc -ne 0 ] || { cat "$d/b.log"; fail "an interrupted run exited 0"; }
[ -f "$d/b/checkpoints/interrupted.safetensors" ] || { cat "$d/b.log"; fail "no interrupted checkpoint"; }
grep -q 'interrupted at epoch 1, batch 5/' "$d/b.log" || { cat "$d/b.log"; fail "no 'interrupted at epoch 1, batch 5' line"; }
"$ember" "${small[@]}" --epochs 2 --nproc 2 --resume --out "$d/b" >"$d/b2.log" 2>&1 ||
  { cat "$d/b2.log"; fail "--nproc 2 --resume failed"; }
[ "$(summary "$d/b/summary.json" 's["status"]')" = completed ] || fail "the resumed run did not complete"
[ "$(summary "$d/b/summary.json" 's["epochs"]')" = 2 ] || fail "the resumed run did not reach 2 epochs"

echo "== 3. --nproc 3 --resume of a run trained by 2 processes"
"$ember" "${small[@]}" --epochs 3 --nproc 3 --resume --out "$d/b" >"$d/b3.log" 2>&1 ||
  { cat "$d/b3.log"; fail "--nproc 3 --resume failed"; }
[ "$(summary "$d/b/summary.json" 's["processes"]')" = 3 ] || fail "summary.json: processes != 3"
[ "$(summary "$d/b/summary.json" 's["epochs"]')" = 3 ] || fail "the 3-process run did not reach 3 epochs"

echo "== 4. a rank killed mid-epoch"
EMBER_DIST_TIMEOUT=20 "$ember" train fashion-mnist --limit-train 8192 --limit-test 256 --epochs 50 \
  --batch-size 16 --nproc 2 --out "$d/c" >"$d/c.log" 2>&1 &
job=$!
# Wait for the first epoch checkpoint, then kill rank 1 (the process whose environment says so).
for _ in $(seq 900); do
  [ -f "$d/c/checkpoints/epoch-0001.safetensors" ] && break
  sleep 0.2
done
[ -f "$d/c/checkpoints/epoch-0001.safetensors" ] || { kill -9 $job; cat "$d/c.log"; fail "no first checkpoint"; }
victim=""
for p in $(pgrep -f -- "--out $d/c"); do
  tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && victim=$p
done
[ -n "$victim" ] || { kill -9 $job; fail "rank 1 not found"; }
start=$(date +%s)
kill -9 "$victim"
wait $job
rc=$?
took=$(($(date +%s) - start))
[ $rc -ne 0 ] || fail "the job exited 0 after a rank was killed"
[ $took -le 60 ] || fail "the job took ${took}s to end after a rank was killed"
for ck in "$d"/c/checkpoints/*.safetensors; do
  "$ember" eval --checkpoint "$ck" >/dev/null 2>&1 || fail "$ck does not load after the kill"
done
echo "== 5. an error on one rank (an output folder it cannot create) ends the job at once"
start=$(date +%s)
EMBER_DIST_TIMEOUT=60 timeout 120 "$ember" "${small[@]}" --epochs 1 --nproc 2 --out /dev/null/x \
  >"$d/e.log" 2>&1
rc5=$?
took5=$(($(date +%s) - start))
[ $rc5 -ne 0 ] && [ $rc5 -ne 124 ] || { cat "$d/e.log"; fail "the failing job exited $rc5"; }
[ $took5 -le 30 ] || { cat "$d/e.log"; fail "the job took ${took5}s: the other rank waited for its timeout"; }
grep -q 'cannot create directory /dev/null/x' "$d/e.log" || { cat "$d/e.log"; fail "the error is not shown"; }

echo "dist/cli: all passed (the job ended ${took}s after the kill, status $rc; ${took5}s after an error)"
