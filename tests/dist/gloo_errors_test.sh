#!/usr/bin/env bash
# The gloo engine's errors at init name what is wrong: each case starts ember_dist_probe with a
# broken torchrun-style environment and expects its message.
#   gloo_errors_test.sh PROBE
set -uo pipefail
probe=$1
port=$((20000 + RANDOM % 30000))
failures=0

# expect TEXT VAR=VALUE... : runs the probe with those variables (EMBER_DIST_TIMEOUT=2 unless
# given) and checks that it fails with TEXT in its output.
expect() {
  local want=$1
  shift
  local out
  out=$(env EMBER_DIST_TIMEOUT=2 "$@" "$probe" allreduce 1 2>&1)
  local rc=$?
  if [ "$rc" = 0 ] || [[ "$out" != *"$want"* ]]; then
    echo "FAILED: $* -> status $rc, wanted '$want' in:"
    echo "$out"
    failures=$((failures + 1))
  else
    echo "ok: $*"
    echo "    $out"
  fi
}

local_rank() { echo RANK=$1 WORLD_SIZE=$2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port; }

expect "needs MASTER_ADDR" RANK=0 WORLD_SIZE=2 MASTER_PORT=$port
expect "needs RANK" WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port
expect "RANK='x' is not an integer" RANK=x WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port
expect "RANK=2 is outside [0, WORLD_SIZE=2)" $(local_rank 2 2)
expect "MASTER_PORT=70000 is outside" RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=70000
expect "LOCAL_RANK=1 is outside" $(local_rank 0 1) LOCAL_RANK=1 LOCAL_WORLD_SIZE=1
expect "does not resolve" RANK=1 WORLD_SIZE=2 MASTER_ADDR=no.such.host.invalid MASTER_PORT=$port
# 192.0.2.1 (TEST-NET-1) is nobody's address: rank 0 cannot serve there (nothing is sent).
expect "is not an address of rank 0's machine" RANK=0 WORLD_SIZE=2 MASTER_ADDR=192.0.2.1 \
  MASTER_PORT=$port
expect "rank 1 could not reach the rendezvous" $(local_rank 1 2)
expect "ranks 1, 2 never arrived" $(local_rank 0 3)

# Rank 0 of a 2-rank job holds the port and waits (up to 20 s) while the cases below run.
env EMBER_DIST_TIMEOUT=20 $(local_rank 0 2) "$probe" allreduce 1 >/dev/null 2>&1 &
holder=$!
for _ in $(seq 200); do  # until it listens (ss is iproute2's)
  [ -n "$(ss -Htln "sport = :$port")" ] && break
  sleep 0.1
done
expect "the port is in use" $(local_rank 0 2)
expect "rank 1 has WORLD_SIZE=3 but rank 0 has WORLD_SIZE=2" $(local_rank 1 3)
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null

if [ "$failures" != 0 ]; then
  echo "gloo_errors_test.sh: $failures case(s) FAILED"
  exit 1
fi
echo "gloo_errors_test.sh: PASSED"
