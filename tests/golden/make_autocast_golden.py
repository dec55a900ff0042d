#!/usr/bin/python3
"""Generates tests/data/golden/autocast.json: what torch 1.13's CPU autocast (bfloat16) does to
each op, which tests/autocast_test.cpp replays on Ember's host devices.

Run with Debian's Python (torch 1.13):  /usr/bin/python3 tests/golden/make_autocast_golden.py

Each case names an op, its inputs (values and dtypes) and what torch returned under
torch.autocast("cpu", dtype=torch.bfloat16): the result's dtype and values. Inputs are small
exact binary fractions so that bf16 rounding of the inputs is the same in both frameworks.
"gpu_lists" is NOT run here (torch 1.13 has no CUDA on this machine): it transcribes the CUDA
autocast lists of torch 1.13's documentation (docs/source/amp.rst, "CUDA Ops that can autocast
to float16 / float32") for the ops Ember has, which Ember applies on its GPU devices.
"""
import json
import os

import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "golden",
                   "autocast.json")

DT = {"f32": torch.float32, "bf16": torch.bfloat16, "f64": torch.float64, "i64": torch.int64}
NAME = {v: k for k, v in DT.items()}


def make(shape, dtype, seed):
    n = 1
    for s in shape:
        n *= s
    # Multiples of 1/16 in [-2, 2): exact in bf16 (at most 6 significant bits).
    vals = [((i * 37 + seed * 11) % 64 - 32) / 16.0 for i in range(n)]
    return torch.tensor(vals, dtype=torch.float64).reshape(shape).to(DT[dtype])


def positive(shape, dtype, seed):
    return make(shape, dtype, seed).abs() / 4 + 0.0625


def probs(shape, dtype, seed):
    return torch.sigmoid(make(shape, "f64", seed)).to(DT[dtype])


def classes(n, c, seed):
    return torch.tensor([(i * 3 + seed) % c for i in range(n)], dtype=torch.int64)


# name -> (inputs [(kind, shape, dtype, seed)], fn)
CASES = []


def case(name, inputs, fn):
    CASES.append((name, inputs, fn))


X = ("x", [4, 8])
for a, b in [("f32", "f32"), ("bf16", "f32"), ("f64", "f64")]:
    case(f"matmul/{a}_{b}", [("n", [4, 8], a, 1), ("n", [8, 6], b, 2)], lambda x, w: torch.matmul(x, w))
case("mm/f32", [("n", [4, 8], "f32", 1), ("n", [8, 6], "f32", 2)], torch.mm)
case("bmm/f32", [("n", [2, 4, 8], "f32", 1), ("n", [2, 8, 3], "f32", 2)], torch.bmm)
case("baddbmm/f32", [("n", [2, 4, 3], "f32", 3), ("n", [2, 4, 8], "f32", 1), ("n", [2, 8, 3], "f32", 2)],
     lambda i, a, b: torch.baddbmm(i, a, b, beta=0.5, alpha=2.0))
case("addmm/f32", [("n", [4, 6], "f32", 3), ("n", [4, 8], "f32", 1), ("n", [8, 6], "f32", 2)],
     lambda i, a, b: torch.addmm(i, a, b, beta=0.5, alpha=2.0))
case("linear/f32", [("n", [3, 8], "f32", 1), ("n", [5, 8], "f32", 2), ("n", [5], "f32", 3)], F.linear)
case("linear/bf16_weight_f32", [("n", [3, 8], "bf16", 1), ("n", [5, 8], "f32", 2), ("n", [5], "f32", 3)],
     F.linear)
case("conv1d/f32", [("n", [2, 3, 8], "f32", 1), ("n", [4, 3, 3], "f32", 2), ("n", [4], "f32", 3)],
     lambda x, w, b: F.conv1d(x, w, b, padding=1))
case("conv2d/f32", [("n", [2, 3, 6, 6], "f32", 1), ("n", [4, 3, 3, 3], "f32", 2), ("n", [4], "f32", 3)],
     lambda x, w, b: F.conv2d(x, w, b, stride=1, padding=1))
case("conv3d/f32", [("n", [1, 2, 4, 4, 4], "f32", 1), ("n", [3, 2, 2, 2, 2], "f32", 2)],
     lambda x, w: F.conv3d(x, w))
case("conv_transpose2d/bf16", [("n", [1, 3, 4, 4], "bf16", 1), ("n", [3, 2, 3, 3], "bf16", 2)],
     lambda x, w: F.conv_transpose2d(x, w))
case("prelu/bf16", [("n", [2, 3, 4], "bf16", 1), ("n", [3], "bf16", 2)], F.prelu)
for loss in ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"]:
    case(f"{loss}/bf16", [("n", [4, 5], "bf16", 1), ("n", [4, 5], "bf16", 2)], getattr(F, loss))
case("cross_entropy/bf16", [("n", [4, 5], "bf16", 1), ("c", [4, 5], "i64", 2)], F.cross_entropy)
case("nll_loss/bf16", [("n", [4, 5], "bf16", 1), ("c", [4, 5], "i64", 2)], F.nll_loss)
case("binary_cross_entropy/bf16", [("p", [4, 5], "bf16", 1), ("p", [4, 5], "bf16", 2)],
     F.binary_cross_entropy)
case("binary_cross_entropy_with_logits/bf16", [("n", [4, 5], "bf16", 1), ("p", [4, 5], "bf16", 2)],
     F.binary_cross_entropy_with_logits)
case("kl_div/bf16", [("n", [4, 5], "bf16", 1), ("p", [4, 5], "bf16", 2)],
     lambda a, b: F.kl_div(a, b, reduction="batchmean"))
case("prod/bf16", [("p", [2, 3], "bf16", 1)], lambda x: torch.prod(x))
# Not on torch's CPU lists: they keep their input's dtype.
for dt in ["bf16", "f32"]:
    case(f"softmax/{dt}", [("n", [3, 5], dt, 1)], lambda x: F.softmax(x, dim=1))
    case(f"log_softmax/{dt}", [("n", [3, 5], dt, 1)], lambda x: F.log_softmax(x, dim=1))
case("layer_norm/bf16", [("n", [3, 8], "bf16", 1)], lambda x: F.layer_norm(x, (8,)))
case("group_norm/bf16", [("n", [2, 4, 3], "bf16", 1)], lambda x: F.group_norm(x, 2))
case("exp/bf16", [("n", [3, 4], "bf16", 1)], torch.exp)
case("log/bf16", [("p", [3, 4], "bf16", 1)], torch.log)
case("pow/bf16", [("n", [3, 4], "bf16", 1)], lambda x: torch.pow(x, 3.0))
case("sum/bf16", [("n", [3, 4], "bf16", 1)], lambda x: torch.sum(x))
case("mean/bf16", [("n", [3, 4], "bf16", 1)], lambda x: torch.mean(x))
case("cumsum/bf16", [("n", [3, 4], "bf16", 1)], lambda x: torch.cumsum(x, 1))
case("relu/bf16", [("n", [3, 4], "bf16", 1)], F.relu)
case("gelu/bf16", [("n", [3, 4], "bf16", 1)], F.gelu)
for fn in ["expm1", "log2", "log10", "log1p", "rsqrt", "reciprocal", "acos", "asin", "cosh", "sinh",
           "tan", "erfinv"]:
    case(f"{fn}/bf16", [("p", [3, 4], "bf16", 1)], getattr(torch, fn))
case("softplus/bf16", [("n", [3, 4], "bf16", 1)], F.softplus)
case("cumprod/bf16", [("p", [3, 4], "bf16", 1)], lambda x: torch.cumprod(x, 1))
case("logsumexp/bf16", [("n", [3, 4], "bf16", 1)], lambda x: torch.logsumexp(x, 1))
case("norm/bf16", [("n", [3, 4], "bf16", 1)], lambda x: torch.norm(x))
case("conv_transpose1d/bf16", [("n", [1, 3, 4], "bf16", 1), ("n", [3, 2, 3], "bf16", 2)],
     lambda x, w: F.conv_transpose1d(x, w))
case("conv_transpose3d/bf16", [("n", [1, 2, 3, 3, 3], "bf16", 1), ("n", [2, 2, 2, 2, 2], "bf16", 2)],
     lambda x, w: F.conv_transpose3d(x, w))
# Mixed inputs promote.
case("add/bf16_f32", [("n", [3, 4], "bf16", 1), ("n", [3, 4], "f32", 2)], torch.add)
case("mul/bf16_f32", [("n", [3, 4], "bf16", 1), ("n", [3, 4], "f32", 2)], torch.mul)
case("cat/bf16_f32", [("n", [2, 4], "bf16", 1), ("n", [3, 4], "f32", 2)], lambda a, b: torch.cat([a, b]))
case("stack/bf16_f32", [("n", [2, 4], "bf16", 1), ("n", [2, 4], "f32", 2)],
     lambda a, b: torch.stack([a, b]))


def build(kind, shape, dtype, seed):
    if kind == "n":
        return make(shape, dtype, seed)
    if kind == "p":
        return probs(shape, dtype, seed)
    if kind == "c":
        return classes(shape[0], shape[1], seed)
    raise ValueError(kind)


def flat(t):
    return [float(v) for v in t.detach().to(torch.float64).reshape(-1).tolist()]


# torch 1.13's CPU bf16 GEMM and convolution for small sizes sum in bf16 (matmul of these
# inputs, whose exact sums are representable, comes out several ulps off). Ember sums in f32 and
# rounds once, so for the low-precision ops "values" is that: the op in f64 on the bf16-rounded
# inputs, rounded to bf16 once; torch's own result is kept as "torch_values".
LOWER = {"matmul", "mm", "bmm", "baddbmm", "addmm", "linear", "conv1d", "conv2d", "conv3d"}


def exact(fn, ts):
    with torch.no_grad():
        return fn(*[t.to(torch.bfloat16).double() if t.is_floating_point() else t for t in ts])


out = {"torch": torch.__version__, "autocast_dtype": "bf16", "cases": []}
for name, inputs, fn in CASES:
    ts = [build(*i) for i in inputs]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = fn(*ts)
    out["cases"].append({
        "name": name,
        "inputs": [{"kind": k, "shape": s, "dtype": d, "seed": sd, "values": flat(t)}
                   for (k, s, d, sd), t in zip(inputs, ts)],
        "dtype": NAME[y.dtype],
        "shape": list(y.shape),
        "values": flat(exact(fn, ts).to(y.dtype) if name.split("/")[0] in LOWER and
                       y.dtype == torch.bfloat16 else y),
        "torch_values": flat(y),
    })

# Gradients come back in the parameter's dtype: an f32 Linear under autocast.
torch.manual_seed(0)
lin = torch.nn.Linear(8, 5)
x = make([3, 8], "f32", 1)
with torch.autocast("cpu", dtype=torch.bfloat16):
    y = lin(x)
y.float().sum().backward()
out["linear_grad"] = {"forward_dtype": NAME[y.dtype], "weight_grad_dtype": NAME[lin.weight.grad.dtype],
                      "bias_grad_dtype": NAME[lin.bias.grad.dtype]}

out["gpu_lists"] = {
    "lower": ["matmul", "mm", "bmm", "baddbmm", "addmm", "linear", "conv1d", "conv2d", "conv3d",
              "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "prelu"],
    "f32": ["exp", "expm1", "log", "log2", "log10", "log1p", "rsqrt", "reciprocal", "acos",
            "asin", "cosh", "sinh", "tan", "erfinv", "pow", "softplus", "layer_norm",
            "group_norm", "softmax", "log_softmax", "sum", "prod", "cumsum", "cumprod",
            "logsumexp", "norm", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
            "cross_entropy", "nll_loss", "kl_div", "binary_cross_entropy_with_logits"],
}

with open(OUT, "w") as f:
    json.dump(out, f, indent=1)
print("wrote", OUT, len(out["cases"]), "cases")
