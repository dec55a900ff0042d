#!/usr/bin/env bash
# Issue 19's training-speed targets: the Fashion-MNIST CNN (batch 64 per process, Adam) in
#   1 process x 1 thread, 1 process x 2 threads, and 2 processes x 1 thread (data-parallel, mpi),
# in Ember (`ember train`, the second epoch's training samples/s from summary.json) and in
# PyTorch 1.13 (bench/peers/ddp_torch.py; its DDP on Gloo), one after the other in this run. Prints
# samples/s and the ratios the targets name (2x1 >= 1.8x 1x1 and >= 1.3x 1x2).
#   bench/ddp_train.sh [EMBER] [TRAIN_IMAGES]     EMBER: the ember command (default build/tools/ember)
set -euo pipefail
cd "$(dirname "$0")/.."
ember=${1:-build/tools/ember}
n=${2:-12800}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export OMP_WAIT_POLICY=passive
common=(train fashion-mnist --epochs 2 --limit-train "$n" --limit-test 1000 --batch-size 64)
rate() {  # the last epoch's training samples/s of a run folder
  /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["history"][-1]["samples_per_sec"])' "$1/summary.json"
}
EMBER_NUM_THREADS=1 OMP_NUM_THREADS=1 "$ember" "${common[@]}" --out "$out/e11" >/dev/null
EMBER_NUM_THREADS=2 OMP_NUM_THREADS=2 "$ember" "${common[@]}" --out "$out/e12" >/dev/null
"$ember" "${common[@]}" --nproc 2 --out "$out/e21" >/dev/null  # 1 thread each (2 cores / 2)
e11=$(rate "$out/e11") e12=$(rate "$out/e12") e21=$(rate "$out/e21")
py=/usr/bin/python3
t11=$($py bench/peers/ddp_torch.py --threads 1 | $py -c 'import json,sys; print(json.load(sys.stdin)["samples_per_s"])')
t12=$($py bench/peers/ddp_torch.py --threads 2 | $py -c 'import json,sys; print(json.load(sys.stdin)["samples_per_s"])')
port=$((29600 + RANDOM % 300))
$py bench/peers/ddp_torch.py --world 2 --rank 1 --port $port >/dev/null &
t21=$($py bench/peers/ddp_torch.py --world 2 --rank 0 --port $port | $py -c 'import json,sys; print(json.load(sys.stdin)["samples_per_s"])')
wait
$py - "$e11" "$e12" "$e21" "$t11" "$t12" "$t21" <<'PY'
import sys
e11, e12, e21, t11, t12, t21 = map(float, sys.argv[1:])
print("Fashion-MNIST CNN, batch 64 per process, training samples/s")
print(f"{'':22}{'Ember':>10}{'PyTorch':>10}{'Ember/PyTorch':>15}")
for name, e, t in (("1 process x 1 thread", e11, t11), ("1 process x 2 threads", e12, t12),
                   ("2 processes x 1 thread", e21, t21)):
    print(f"{name:22}{e:10.0f}{t:10.0f}{e / t:15.2f}")
print(f"2x1 / 1x1: Ember {e21 / e11:.2f} (target >= 1.8), PyTorch {t21 / t11:.2f}")
print(f"2x1 / 1x2: Ember {e21 / e12:.2f} (target >= 1.3), PyTorch {t21 / t12:.2f}")
print(f"1x2 / 1x1: Ember {e12 / e11:.2f}, PyTorch {t12 / t11:.2f}")
PY
