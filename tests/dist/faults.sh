#!/usr/bin/env bash
# dist/mpi_faults: a rank that hangs or dies must not leave the job hanging.
#   faults.sh MPIEXEC PROBE
# hang: the other rank throws the timeout error after EMBER_DIST_TIMEOUT=3 s, and the job ends
#       non-zero (the failed rank's MPI_Abort at exit ends the sleeping one);
# die:  mpirun ends the job non-zero;
# ok:   the probe itself passes when every rank takes part;
# mismatch: tensors of different sizes are an error on every rank (not memory corruption);
# error: a rank that fails on its own and exits ends the job at once.
# Each run is bounded by `timeout 120`; a run must end well within 60 s.
set -uo pipefail
mpiexec=$1
probe=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail=0

run() {  # MODE [TIMEOUT] -> sets rc, secs; output in $out
  local start=$SECONDS
  EMBER_DIST_TIMEOUT=${2:-3} timeout 120 "$mpiexec" --allow-run-as-root --oversubscribe -np 2 \
    "$probe" "$1" >"$out" 2>&1
  rc=$?
  secs=$((SECONDS - start))
  echo "== $1: exit $rc after ${secs} s"
}

check() {  # CONDITION MESSAGE
  if ! eval "$1"; then
    echo "FAIL: $2"
    sed 's/^/  | /' "$out"
    fail=1
  fi
}

run ok
check '[ "$rc" = 0 ]' "ok: every rank took part, yet the job failed"
check 'grep -q "rank 0: ok, sum 2000" "$out"' "ok: rank 0 did not print the sum"

run hang
check '[ "$rc" != 0 ] && [ "$rc" != 124 ]' "hang: the job must end non-zero on its own (124: killed by timeout)"
check '[ "$secs" -lt 60 ]' "hang: the job took ${secs} s"
check 'grep -q "rank 0: \[dist::all_reduce\] timed out after 3 s waiting for the other ranks" "$out"' \
  "hang: rank 0 did not report the timeout"

run die
check '[ "$rc" != 0 ] && [ "$rc" != 124 ]' "die: the job must end non-zero on its own (124: killed by timeout)"
check '[ "$secs" -lt 60 ]' "die: the job took ${secs} s"

run mismatch
check '[ "$rc" != 0 ] && [ "$rc" != 124 ]' "mismatch: the job must end non-zero on its own"
check 'grep -q "rank 0: \[dist::all_reduce\] the ranks passed tensors of different sizes (4 to 4000000 elements; this rank 4)" "$out"' \
  "mismatch: rank 0 did not name the different sizes"
check '! grep -q "unnoticed" "$out"' "mismatch: a rank went on with mismatched tensors"

# A rank that fails outside any collective (as `ember` on an error) ends the job at once, not
# after the others' timeout (60 s here).
run error 60
check '[ "$rc" != 0 ] && [ "$rc" != 124 ]' "error: the job must end non-zero on its own"
check '[ "$secs" -lt 30 ]' "error: the job took ${secs} s (the others waited for their timeout)"

exit $fail
