#!/usr/bin/env python3
"""The peer of bench/ddp_train.sh: PyTorch 1.13 training the same Fashion-MNIST CNN
(conv32-conv64-maxpool-fc128-fc10, Adam lr 1e-3, batch 64 per process) on the CPU, in one process
or as DistributedDataParallel ranks over Gloo. Prints one JSON line with samples/s (all ranks'
samples over the wall time of the timed steps).

  ddp_torch.py --threads T --steps N                        one process
  ddp_torch.py --world W --rank R --port P --threads 1 ...  one rank (bench/ddp_train.sh starts W)
"""
import argparse
import gzip
import json
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def images(path, n):
    with gzip.open(path, "rb") as f:
        data = np.frombuffer(f.read(), np.uint8, offset=16)
    return torch.from_numpy(data[: n * 784].reshape(n, 1, 28, 28).astype(np.float32) / 255.0)


def labels(path, n):
    with gzip.open(path, "rb") as f:
        return torch.from_numpy(np.frombuffer(f.read(), np.uint8, offset=8)[:n].astype(np.int64))


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--world", type=int, default=1)
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--port", type=int, default=29511)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = Cnn()
    if a.world > 1:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(a.port))
        dist.init_process_group("gloo", rank=a.rank, world_size=a.world)
        model = nn.parallel.DistributedDataParallel(model)
    n = a.batch * a.world * 20
    x = images(os.path.join(a.data, "train-images-idx3-ubyte.gz"), n)
    y = labels(os.path.join(a.data, "train-labels-idx1-ubyte.gz"), n)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    batches = n // a.batch

    def step(i):
        b = (i * a.world + a.rank) % batches
        xb, yb = x[b * a.batch:(b + 1) * a.batch], y[b * a.batch:(b + 1) * a.batch]
        opt.zero_grad()
        F.cross_entropy(model(xb), yb).backward()
        opt.step()

    for i in range(a.warmup):
        step(i)
    if a.world > 1:
        dist.barrier()
    t0 = time.perf_counter()
    for i in range(a.steps):
        step(a.warmup + i)
    if a.world > 1:
        dist.barrier()
    secs = time.perf_counter() - t0
    if a.rank == 0:
        print(json.dumps({"peer": "pytorch", "torch": torch.__version__, "world": a.world,
                          "threads": a.threads,
                          "samples_per_s": a.world * a.batch * a.steps / secs}))
    if a.world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
