#!/usr/bin/env bash
# Runs a 2-rank gloo job with its ranks in two network namespaces joined by a veth pair, so the
# rendezvous and the collectives cross a real network stack as between two machines:
#   netns_test.sh BYTES COMMAND [ARGS...]
# COMMAND runs as rank 0 in one namespace and rank 1 in the other (RANK, WORLD_SIZE, MASTER_ADDR =
# rank 0's veth address, MASTER_PORT); both must succeed, and each veth must have sent and
# received at least BYTES (the collectives' payload). Needs root and iproute2's `ip netns`.
# Addresses are 10.231.N.1/24 and .2/24 inside the two private namespaces only.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: netns_test.sh BYTES COMMAND [ARGS...]" >&2
  exit 2
fi
min_bytes=$1
shift
if [ "$(id -u)" != 0 ]; then
  echo "netns_test.sh: FAILED: needs root to create network namespaces (ip netns add);" \
       "CI runs this test as root" >&2
  exit 1
fi
if ! command -v ip >/dev/null || ! ip netns list >/dev/null 2>&1; then
  echo "netns_test.sh: FAILED: 'ip netns' is unavailable (install Debian's iproute2)" >&2
  exit 1
fi

id=$$
ns0=ember_r0_$id
ns1=ember_r1_$id
veth0=emb0_$id  # interface names hold at most 15 characters
veth1=emb1_$id
net=10.231.$((id % 250 + 1))
cleanup() {
  ip netns del "$ns0" 2>/dev/null || true  # deleting a namespace deletes its veth end
  ip netns del "$ns1" 2>/dev/null || true
  ip link del "$veth0" 2>/dev/null || true
}
trap cleanup EXIT INT TERM

ip netns add "$ns0"
ip netns add "$ns1"
ip link add "$veth0" type veth peer name "$veth1"
ip link set "$veth0" netns "$ns0"
ip link set "$veth1" netns "$ns1"
ip -n "$ns0" addr add "$net.1/24" dev "$veth0"
ip -n "$ns1" addr add "$net.2/24" dev "$veth1"
for ns in "$ns0" "$ns1"; do ip -n "$ns" link set lo up; done
ip -n "$ns0" link set "$veth0" up
ip -n "$ns1" link set "$veth1" up

# Byte counters of a namespace's veth end (`ip netns exec` mounts that namespace's /sys).
counter() { ip netns exec "$1" cat "/sys/class/net/$2/statistics/$3"; }
tx0=$(counter "$ns0" "$veth0" tx_bytes)
rx0=$(counter "$ns0" "$veth0" rx_bytes)

run_rank() {
  ip netns exec "$1" env RANK="$2" WORLD_SIZE=2 MASTER_ADDR="$net.1" MASTER_PORT=29500 \
    LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 "${@:3}"
}
run_rank "$ns0" 0 "$@" > >(sed 's/^/[rank 0] /') 2>&1 &
pid0=$!
run_rank "$ns1" 1 "$@" > >(sed 's/^/[rank 1] /') 2>&1 &
pid1=$!
rc=0
wait "$pid0" || rc=$?
wait "$pid1" || rc=$?
if [ "$rc" != 0 ]; then
  echo "netns_test.sh: FAILED: a rank exited with status $rc" >&2
  exit 1
fi

sent=$(($(counter "$ns0" "$veth0" tx_bytes) - tx0))
received=$(($(counter "$ns0" "$veth0" rx_bytes) - rx0))
echo "netns_test.sh: rank 0's veth $veth0 ($net.1) sent $sent and received $received bytes" \
     "(expected >= $min_bytes each way)"
if [ "$sent" -lt "$min_bytes" ] || [ "$received" -lt "$min_bytes" ]; then
  echo "netns_test.sh: FAILED: the traffic did not cross the veth pair" >&2
  exit 1
fi
echo "netns_test.sh: PASSED"
