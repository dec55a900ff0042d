#!/usr/bin/python3
"""Generates tests/data/golden/grad_scaler.json: step / skip / grow / backoff sequences of
torch 1.13's GradScaler, which tests/grad_scaler_test.cpp replays.

Run with Debian's Python (torch 1.13 lives there):
    /usr/bin/python3 tests/golden/make_grad_scaler_golden.py

torch.cuda.amp.GradScaler (torch/cuda/amp/grad_scaler.py) is CUDA-only in 1.13: its two kernels
have no CPU implementation ("Could not run 'aten::_amp_update_scale_' with arguments from the
'CPU' backend"), and its constructor disables itself without CUDA. So this script runs the real
GradScaler class (its unscale_ / step / update bookkeeping, _MultiDeviceReplicator, the f64
reciprocal of the scale, state_dict) on CPU tensors with:
  - amp_definitely_not_available() patched to False (else __init__ sets _enabled = False), and
    _MultiDeviceReplicator.__init__ without its `is_cuda` assertion (same two assignments);
  - torch._amp_foreach_non_finite_check_and_unscale_ and torch._amp_update_scale_ replaced by
    the Python below, line for line the CUDA kernels of aten/src/ATen/native/cuda/AmpKernels.cu
    (1.13):
      non-finite check and unscale, per element: found_inf = 1 if !isfinite(v);
          v = inv_scale == 1 ? v : v * inv_scale                          (f32 arithmetic)
      update rule (amp_update_scale_cuda_kernel):
          if found_inf: scale = scale * backoff_factor; tracker = 0
          else: successful = tracker + 1
                if successful == growth_interval:
                    new_scale = float(scale * growth_factor)
                    if isfinite(new_scale): scale = new_scale   # never grow to inf
                    tracker = 0
                else: tracker = successful
      (scale is an f32 tensor and the factors doubles: products in f64, stored in f32);
  - scale(loss) done as GradScaler.scale does it for one tensor, loss * self._scale, without its
    `outputs.is_cuda` assertion.

Problem: w [3] and b [2] float32 leaves (and u [2], which gets no grad), SGD lr 0.25, and per
iteration loss = sum(w * cw) + sum(b * cb) with given coefficients, so each grad is the scaled
coefficient: a coefficient of 1e38 overflows once scaled (an inf step), "nan" gives NaN.
After each iteration the case records scale, growth tracker, whether the optimizer stepped,
and w, b.
"""
import json
import math
import os

import numpy as np
import torch
import torch.cuda.amp.grad_scaler as gs

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "golden",
                   "grad_scaler.json")

gs.amp_definitely_not_available = lambda: False


def replicator_init(self, master_tensor):  # _MultiDeviceReplicator.__init__ less its assertion
    self.master = master_tensor
    self._per_device_tensors = {}


gs._MultiDeviceReplicator.__init__ = replicator_init


def non_finite_check_and_unscale_(grads, found_inf, inv_scale):
    for g in grads:
        if not bool(torch.isfinite(g).all()):
            found_inf.fill_(1.0)
        if float(inv_scale) != 1.0:
            g.mul_(inv_scale)  # both f32


def update_scale_(scale, tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    s = float(scale)
    if float(found_inf) != 0:
        scale.fill_(float(np.float32(s * backoff_factor)))
        tracker.fill_(0)
    else:
        successful = int(tracker) + 1
        if successful == growth_interval:
            with np.errstate(over="ignore"):
                new_scale = np.float32(s * growth_factor)
            if math.isfinite(new_scale):
                scale.fill_(float(new_scale))
            tracker.fill_(0)
        else:
            tracker.fill_(successful)
    return scale


torch._amp_foreach_non_finite_check_and_unscale_ = non_finite_check_and_unscale_
torch._amp_update_scale_ = update_scale_

W0 = [0.5, -0.25, 1.0]
B0 = [0.125, -2.0]
U0 = [3.0, 4.0]
BIG = 1e38  # finite in f32; times any scale >= 4 it overflows


def num(v):
    return float(v)  # "nan" / "inf" strings too (JSON has no non-finite numbers)


def js(v):
    """v with non-finite floats as the strings "inf", "-inf", "nan"."""
    if isinstance(v, list):
        return [js(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return v


def run(case):
    w = torch.tensor(W0, dtype=torch.float32, requires_grad=True)
    b = torch.tensor(B0, dtype=torch.float32, requires_grad=True)
    u = torch.tensor(U0, dtype=torch.float32, requires_grad=True)
    opt = torch.optim.SGD([{"params": [w, u]}, {"params": [b]}], lr=0.25)
    o = case["options"]
    scaler = gs.GradScaler(init_scale=o["init_scale"], growth_factor=o["growth_factor"],
                           backoff_factor=o["backoff_factor"],
                           growth_interval=o["growth_interval"])
    assert scaler.is_enabled()
    out = []
    for it in case["iterations"]:
        cw = torch.tensor([num(v) for v in it["cw"]], dtype=torch.float32)
        cb = torch.tensor([num(v) for v in it["cb"]], dtype=torch.float32)
        opt.zero_grad()
        loss = (w * cw).sum() + (b * cb).sum()
        if scaler._scale is None:
            scaler._lazy_init_scale_growth_tracker(loss.device)
        (loss * scaler._scale).backward()  # GradScaler.scale(loss) for one tensor
        if it.get("unscale_first"):
            scaler.unscale_(opt)
            grads = {"gw": js(w.grad.tolist()), "gb": js(b.grad.tolist())}
        state = scaler._per_optimizer_states[id(opt)]
        scaler.step(opt)
        stepped = not sum(v.item() for v in state["found_inf_per_device"].values())
        if "new_scale" in it:
            scaler.update(float(it["new_scale"]))
        else:
            scaler.update()
        rec = {"scale": scaler.get_scale(), "tracker": scaler._get_growth_tracker(),
               "stepped": stepped, "w": w.tolist(), "b": b.tolist()}
        if it.get("unscale_first"):
            rec.update(grads)
        out.append(rec)
    state = scaler.state_dict()
    return {"steps": out, "state_dict": {k: float(v) for k, v in state.items()}}


def plain(n, cw=(1.0, -2.0, 0.5), cb=(0.25, 3.0)):
    return [{"cw": list(cw), "cb": list(cb)} for _ in range(n)]


def with_inf(n, bad, nan=()):
    its = plain(n)
    for i in bad:
        its[i]["cw"] = [1.0, BIG, 0.5]
    for i in nan:
        its[i]["cb"] = [0.25, "nan"]
    return its


CASES = [
    # torch's defaults but a short interval: growth after 3 clean steps, backoff on infs.
    {"name": "grow_and_backoff",
     "options": {"init_scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                 "growth_interval": 3},
     "iterations": with_inf(14, bad=[4, 5], nan=[10])},
    # Factors that are not powers of two: the scale is rounded to f32 after every product.
    {"name": "odd_factors",
     "options": {"init_scale": 1000.0, "growth_factor": 1.7, "backoff_factor": 0.3,
                 "growth_interval": 2},
     "iterations": with_inf(12, bad=[3, 8])},
    # Growth that would overflow f32 is dropped (the scale stays), the tracker still resets.
    {"name": "no_growth_past_f32_max",
     "options": {"init_scale": 2.0 ** 126, "growth_factor": 2.0, "backoff_factor": 0.5,
                 "growth_interval": 1},
     "iterations": plain(4, cw=(0.5, -0.25, 0.125), cb=(0.0625, 0.5))},
    # unscale_ before step (as before gradient clipping), and update(new_scale) mid-run.
    {"name": "unscale_first_and_new_scale",
     "options": {"init_scale": 8.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                 "growth_interval": 2},
     "iterations": [dict(it, unscale_first=True) for it in with_inf(6, bad=[2])]},
]
CASES[3]["iterations"][4]["new_scale"] = 3.0


def main():
    out = {"problem": {"w": W0, "b": B0, "u": U0, "lr": 0.25}, "cases": []}
    for c in CASES:
        r = run(c)
        out["cases"].append(dict(c, **r))
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1, allow_nan=False)
        f.write("\n")


if __name__ == "__main__":
    main()
