#!/usr/bin/env python3
"""Step time of data-parallel training versus world size: a bucket-level simulation of
DistributedDataParallel's overlap (docs/distributed.md, "Scaling on paper").

Each rank runs forward (t_fwd) and backward (t_bwd) on its own batch. Backward produces the
gradients from the last layer to the first, each layer taking its share of t_bwd; a bucket's
all-reduce may start once its gradients exist and the previous bucket's all-reduce is done (one communication stream, as
Ember's process group and NCCL's default stream). A ring all-reduce of s bytes over N ranks takes
2(N-1) * alpha + 2(N-1)/N * s / beta. The step ends when backward and the last all-reduce are done,
then the optimizer runs (t_opt). Throughput is N x batch / step time.

  python3 bench/ddp_model.py                 # the two workloads below, the tables of the doc
  python3 bench/ddp_model.py --json          # the same as JSON
"""
import argparse
import json


def ring_allreduce_s(nbytes, n, alpha, beta):
    if n == 1:
        return 0.0
    return 2 * (n - 1) * alpha + 2 * (n - 1) / n * nbytes / beta


def buckets(layers, cap):
    """DistributedDataParallel's buckets over the layers in backward order: parameters join the
    open bucket until it reaches its cap (1 MiB for the first, as torch and Ember); each bucket is
    (bytes, index of the layer whose gradient completes it)."""
    out, size, limit = [], 0, 1 << 20
    for i, (nbytes, _) in enumerate(layers):
        size += nbytes
        if size >= limit:
            out.append((size, i))
            size, limit = 0, cap
    if size:
        out.append((size, len(layers) - 1))
    return out


def simulate(w, n, link):
    """One step's time (s) and the communication not hidden behind backward (s)."""
    layers = w["layers"]  # (gradient bytes, share of backward time), last layer first
    total = sum(f for _, f in layers)
    done, t = [], w["t_fwd"]
    for _, f in layers:  # when each layer's gradient exists
        t += w["t_bwd"] * f / total
        done.append(t)
    bwd_end = t
    comm_free = 0.0
    for nbytes, last in buckets(layers, w["bucket_bytes"]):
        start = max(done[last], comm_free)  # one communication stream, buckets in order
        beta = link["beta"] if n <= link.get("node", n) else link["beta_between"]
        comm_free = start + ring_allreduce_s(nbytes, n, link["alpha"], beta)
    exposed = max(0.0, comm_free - bwd_end)
    return max(bwd_end, comm_free) + w["t_opt"], exposed


# The GPT-2-small-sized transformer: 12 blocks of 7.1 M parameters, then the tied token embedding
# (38.6 M) whose gradient completes last; backward time per block equal, the embedding's small.
_T_STEP = 6 * 124e6 * 8 * 1024 / (0.4 * 989e12)
WORKLOADS = {
    # Fashion-MNIST CNN (conv32-conv64-pool-fc128-fc10, 1.2 M parameters), batch 64 per rank, one
    # thread of this machine's CPU per rank: a step takes 36.6 ms (1,750 samples/s measured by
    # bench/ddp_train.sh; BENCHMARKS.md, "Issue 19"), split 1:2 between forward and backward.
    # Backward order: fc2, fc1, conv2, conv1 (bytes, share of backward time).
    "cnn": {"batch": 64, "bucket_bytes": 25 << 20,
            "layers": [(4 * 1290, 0.01), (4 * 1_179_776, 0.09), (4 * 18_496, 0.55),
                       (4 * 320, 0.35)],
            "t_fwd": 0.0118, "t_bwd": 0.0236, "t_opt": 0.0012},
    # 124 M parameters, batch 8 x 1024 tokens per rank on one H100 at 40% of its dense bf16 peak
    # (6 x params x tokens FLOPs; 1/3 forward, 2/3 backward), f32 gradients.
    "transformer": {"batch": 8, "bucket_bytes": 25 << 20,
                    "layers": [(4 * 7_100_000, 1.0)] * 12 + [(4 * 38_600_000, 0.2)],
                    "t_fwd": _T_STEP / 3, "t_bwd": _T_STEP * 2 / 3, "t_opt": 0.002},
    # The same with 8 micro-batches per optimizer step (no_sync for the first 7): one all-reduce
    # per 8 forward/backward passes; it overlaps only the last backward.
    "transformer, 8 micro-batches a step": {
        "batch": 64, "bucket_bytes": 25 << 20,
        "layers": [(4 * 7_100_000, 1.0)] * 12 + [(4 * 38_600_000, 0.2)],
        "t_fwd": 8 * _T_STEP / 3 + 7 * _T_STEP * 2 / 3, "t_bwd": _T_STEP * 2 / 3, "t_opt": 0.002},
}

LINKS = {
    # alpha: per-message latency (s); beta: bytes/s per rank in a ring (beta_between past `node`
    # ranks).
    # Measured here: 40 MB in 4.6 ms between 2 processes (bench/bench_allreduce.sh).
    "shm (one machine, MPI)": {"alpha": 5e-6, "beta": 8e9},
    "10 GbE TCP (Gloo / MPI)": {"alpha": 50e-6, "beta": 1.1e9},
    "100 Gb InfiniBand (MPI)": {"alpha": 5e-6, "beta": 11e9},
    # 8 GPUs a node on NVLink 4; past 8 the ring crosses nodes at 8 x 400 Gb/s per node.
    "NCCL: NVLink 4 in a node of 8 GPUs, 8 x 400 Gb/s between nodes":
        {"alpha": 10e-6, "beta": 150e9, "node": 8, "beta_between": 50e9},
}


def table(name, w, link_name, link, worlds):
    base, _ = simulate(w, 1, link)
    rows = []
    for n in worlds:
        step, exposed = simulate(w, n, link)
        rows.append({"world": n, "step_ms": step * 1e3, "exposed_comm_ms": exposed * 1e3,
                     "samples_per_s": n * w["batch"] / step, "efficiency": base / step})
    return {"workload": name, "link": link_name, "rows": rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    worlds = [1, 2, 4, 8, 16, 32, 64]
    out = []
    for name, w in WORKLOADS.items():
        for link_name, link in LINKS.items():
            if name != "cnn" and link_name.startswith("shm"):
                continue
            if name == "cnn" and link_name.startswith("NCCL"):
                continue
            out.append(table(name, w, link_name, link, worlds))
    if args.json:
        print(json.dumps(out, indent=1))
        return
    for t in out:
        print(f"\n{t['workload']} over {t['link']}")
        print("| ranks | step ms | exposed comm ms | samples/s | scaling efficiency |")
        print("|---:|---:|---:|---:|---:|")
        for r in t["rows"]:
            print(f"| {r['world']} | {r['step_ms']:.1f} | {r['exposed_comm_ms']:.1f} | "
                  f"{r['samples_per_s']:.0f} | {r['efficiency']:.2f} |")


if __name__ == "__main__":
    main()
