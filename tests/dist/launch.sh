#!/usr/bin/env bash
# A torchrun-style launcher for the gloo tests: starts N copies of COMMAND on this machine with
# RANK, WORLD_SIZE, MASTER_ADDR=127.0.0.1 and a free MASTER_PORT, prefixes their output with
# their rank, and fails as soon as one fails (stopping the others):
#   launch.sh [--expect-exit RANK:STATUS] N COMMAND [ARGS...]
# --expect-exit (fault tests): that rank must end with that status (137: SIGKILL) and the others
# with 0; it may be repeated.
set -euo pipefail
declare -A expect=()
while [ "${1:-}" = --expect-exit ]; do
  expect[${2%%:*}]=${2#*:}
  shift 2
done
if [ $# -lt 2 ]; then
  echo "usage: launch.sh [--expect-exit RANK:STATUS] N COMMAND [ARGS...]" >&2
  exit 2
fi
n=$1
shift

# A port nobody listens on (ss is iproute2's); rank 0 says clearly if it was taken meanwhile.
for _ in $(seq 100); do
  port=$((20000 + RANDOM % 30000))
  if ! command -v ss >/dev/null || [ -z "$(ss -Htln "sport = :$port")" ]; then break; fi
done

declare -A rank_of=()
for ((r = 0; r < n; r++)); do
  RANK=$r WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$@" \
    > >(sed -u "s/^/[rank $r] /") 2>&1 &
  rank_of[$!]=$r
done

failed=0
while [ ${#rank_of[@]} -gt 0 ]; do
  status=0
  wait -n -p pid "${!rank_of[@]}" || status=$?
  r=${rank_of[$pid]}
  unset "rank_of[$pid]"
  want=${expect[$r]:-0}
  if [ "$status" != "$want" ]; then
    echo "launch.sh: rank $r exited with status $status (expected $want)" >&2
    failed=1
    break
  fi
done
if [ "$failed" = 1 ]; then
  for pid in "${!rank_of[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait || true
  exit 1
fi
echo "launch.sh: $n ranks finished as expected"
