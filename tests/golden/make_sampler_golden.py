#!/usr/bin/python3
"""Generates tests/data/golden/sampler.json: the index lists of torch 1.13's
torch.utils.data.DistributedSampler without shuffling, which tests/sampler_test.cpp compares
with ember::data::DistributedSampler (shuffled orders differ by design: Ember permutes with
its own Philox stream, torch with its CPU generator; the padding and striding are the same).

Run with Debian's Python (torch 1.13 lives there):
    /usr/bin/python3 tests/golden/make_sampler_golden.py
"""
import json
import os

from torch.utils.data import DistributedSampler

cases = []
for n in [0, 1, 2, 3, 5, 10, 11, 17]:
    for replicas in [1, 2, 3, 4, 5]:
        for drop_last in [False, True]:
            ranks = []
            for rank in range(replicas):
                s = DistributedSampler(range(n), num_replicas=replicas, rank=rank, shuffle=False,
                                       drop_last=drop_last)
                ranks.append(list(iter(s)))
                assert len(s) == len(ranks[-1])
            cases.append({"n": n, "num_replicas": replicas, "drop_last": drop_last,
                          "indices": ranks})

out = os.path.join(os.path.dirname(__file__), "..", "data", "golden", "sampler.json")
with open(out, "w") as f:
    json.dump({"torch": __import__("torch").__version__, "cases": cases}, f, separators=(",", ":"))
    f.write("\n")
print(f"wrote {len(cases)} cases to {os.path.normpath(out)}")
