# PyTorch's gloo all_reduce, the peer of bench/bench_allreduce.cpp: the same sizes, warm-up,
# barrier before each timed call and median. Started by bench/bench_allreduce.sh as WORLD_SIZE
# processes with RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT set.
#   python3 allreduce_torch.py [MB] [ITERS] [WARMUP]
import sys
import time

import torch
import torch.distributed as dist

mb = float(sys.argv[1]) if len(sys.argv) > 1 else 40
iters = int(sys.argv[2]) if len(sys.argv) > 2 else 20
warmup = int(sys.argv[3]) if len(sys.argv) > 3 else 5
dist.init_process_group("gloo")
n = int(mb * 1e6 / 4)
x = torch.ones(n, dtype=torch.float32)
secs = []
for i in range(warmup + iters):
    x.fill_(1.0 / dist.get_world_size())
    dist.barrier()
    t0 = time.perf_counter()
    dist.all_reduce(x)
    t1 = time.perf_counter()
    if i >= warmup:
        secs.append(t1 - t0)
assert x.min().item() == 1.0 and x.max().item() == 1.0, "wrong all_reduce result"
# The upper median, as bench_util.h's.
med = sorted(secs)[len(secs) // 2]
if dist.get_rank() == 0:
    print("torch %s gloo all_reduce %.1f MB f32, %d ranks: median %.2f ms, %.2f GB/s"
          % (torch.__version__, n * 4 / 1e6, dist.get_world_size(), med * 1e3, n * 4 / med / 1e9))
dist.destroy_process_group()
