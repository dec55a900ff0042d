#!/usr/bin/python3
"""Generates tests/data/golden/*.json: inputs, options and outputs computed by PyTorch, which
tests/golden_test.cpp replays on Ember's reference backend (Device::ref()).

Run with Debian's Python (torch 1.13 lives there, not in a pyenv python3 earlier on PATH):
    /usr/bin/python3 tests/golden/make_golden.py

A case is {"name", "op", "inputs": [...], "args": {...}, "outputs": [...]}: every input or
output is a tensor {"dtype", "shape", "data"} (row-major; NaN/inf as the strings "nan", "inf",
"-inf") or a Python number {"scalar": v, "kind": "int"|"float"|"bool"}. "op" names the Ember
function the C++ side calls; "args" are its options under torch's names. The type promotion
table (promotion.json) holds only dtypes: {"op", "kind", "a", "b", "result"}.
"""
import json
import math
import os

import torch
import torch.nn.functional as F

torch.manual_seed(0)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "golden")

DT = {torch.float32: "float32", torch.float64: "float64", torch.float16: "float16",
      torch.bfloat16: "bfloat16", torch.int8: "int8", torch.int16: "int16", torch.int32: "int32",
      torch.int64: "int64", torch.uint8: "uint8", torch.bool: "bool"}


def num(v):
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
    return v


def enc(x):
    if isinstance(x, torch.Tensor):
        data = x.detach().reshape(-1)
        if x.dtype in (torch.float16, torch.bfloat16):
            data = data.double()
        return {"dtype": DT[x.dtype], "shape": list(x.shape), "data": [num(v) for v in data.tolist()]}
    if isinstance(x, bool):
        return {"scalar": x, "kind": "bool"}
    if isinstance(x, int):
        return {"scalar": x, "kind": "int"}
    return {"scalar": num(float(x)), "kind": "float"}


class Cases:
    def __init__(self):
        self.cases = []

    def add(self, name, op, inputs, outputs, **args):
        if not isinstance(outputs, (list, tuple)):
            outputs = [outputs]
        self.cases.append({"name": name, "op": op, "inputs": [enc(i) for i in inputs],
                           "args": args, "outputs": [enc(o) for o in outputs]})

    def write(self, fname):
        with open(os.path.join(OUT, fname), "w") as f:
            json.dump(self.cases, f, separators=(",", ":"))
        print(f"{fname}: {len(self.cases)} cases")
        return len(self.cases)


def r(*shape, dtype=torch.float32, lo=-2.0, hi=2.0):
    return (torch.rand(*shape, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


# ---------------------------------------------------------------- type promotion
def promotion():
    dts = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
           torch.float16, torch.bfloat16, torch.float32, torch.float64]
    scalars = [True, 2, 2.5]
    out = []
    for op, fn in (("add", torch.add), ("mul", torch.mul), ("div", torch.div),
                   ("maximum", torch.maximum), ("where", None)):
        for a in dts:
            for b in dts:
                ta = torch.ones(2, dtype=a)
                for kind, tb in (("tensor-tensor", torch.ones(2, dtype=b)),
                                 ("tensor-0d", torch.ones((), dtype=b)),
                                 ("0d-tensor", None)):
                    if kind == "0d-tensor":
                        x, y = torch.ones((), dtype=a), torch.ones(2, dtype=b)
                    else:
                        x, y = ta, tb
                    try:
                        if op == "where":
                            res = torch.where(torch.tensor([True, False]), x, y)
                        elif op == "add" and a == torch.bool and b == torch.bool:
                            res = fn(x, y)
                        else:
                            res = fn(x, y)
                    except RuntimeError:
                        continue
                    out.append({"op": op, "kind": kind, "a": DT[a], "b": DT[b], "result": DT[res.dtype]})
            if op in ("add", "mul", "div"):
                for s in scalars:
                    ta = torch.ones(2, dtype=a)
                    try:
                        res = fn(ta, s)
                    except RuntimeError:
                        continue
                    kind = "bool" if isinstance(s, bool) else "int" if isinstance(s, int) else "float"
                    out.append({"op": op, "kind": "tensor-scalar", "a": DT[a], "b": kind,
                                "result": DT[res.dtype]})
    with open(os.path.join(OUT, "promotion.json"), "w") as f:
        json.dump(out, f, separators=(",", ":"))
    print(f"promotion.json: {len(out)} entries")
    return len(out)


# ---------------------------------------------------------------- element-wise
def elementwise():
    c = Cases()
    af = torch.tensor([-7.0, -7.0, 7.0, 7.0, -6.5, 6.5, 0.0, -0.0, 5.0, -5.0, 1e-3])
    bf = torch.tensor([2.0, -2.0, 2.0, -2.0, 2.0, -2.5, 3.0, 3.0, 0.0, 0.0, -1e-3])
    ai = torch.tensor([-7, -7, 7, 7, -6, 6, 0, 5, -1, 1], dtype=torch.int64)
    bi = torch.tensor([2, -2, 2, -2, 4, -4, 3, 5, 3, -3], dtype=torch.int64)
    for dt in (torch.float32, torch.float64):
        a, b = af.to(dt), bf.to(dt)
        for mode in ("", "trunc", "floor"):
            c.add(f"div_{mode or 'true'}_{DT[dt]}", "div", [a, b],
                  torch.div(a, b, rounding_mode=mode or None), rounding_mode=mode)
        c.add(f"remainder_{DT[dt]}", "remainder", [a, b], torch.remainder(a, b))
        c.add(f"fmod_{DT[dt]}", "fmod", [a, b], torch.fmod(a, b))
        c.add(f"floor_divide_{DT[dt]}", "floor_divide", [a, b], torch.floor_divide(a, b))
        c.add(f"remainder_scalar_{DT[dt]}", "remainder", [a, -1.5], torch.remainder(a, -1.5))
        c.add(f"fmod_scalar_{DT[dt]}", "fmod", [a, -1.5], torch.fmod(a, -1.5))
    for dt in (torch.int64, torch.int32, torch.int8):
        a, b = ai.to(dt), bi.to(dt)
        for mode in ("", "trunc", "floor"):
            c.add(f"div_{mode or 'true'}_{DT[dt]}", "div", [a, b],
                  torch.div(a, b, rounding_mode=mode or None), rounding_mode=mode)
        c.add(f"remainder_{DT[dt]}", "remainder", [a, b], torch.remainder(a, b))
        c.add(f"fmod_{DT[dt]}", "fmod", [a, b], torch.fmod(a, b))
        c.add(f"floor_divide_{DT[dt]}", "floor_divide", [a, b], torch.floor_divide(a, b))
    c.add("remainder_int_by_float_scalar", "remainder", [ai, 2.5], torch.remainder(ai, 2.5))
    c.add("div_int_by_int_scalar", "div", [ai, 4], torch.div(ai, 4), rounding_mode="")
    c.add("div_floor_int_scalar", "div", [ai, -4], torch.div(ai, -4, rounding_mode="floor"),
          rounding_mode="floor")
    halves = torch.tensor([-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 4.5, 0.49999997, -0.49999997, 2.51])
    for dt in (torch.float32, torch.float64):
        c.add(f"round_half_even_{DT[dt]}", "round", [halves.to(dt)], torch.round(halves.to(dt)))
    c.add("round_int", "round", [ai], torch.round(ai))
    # pow edge cases
    base = torch.tensor([0.0, 0.0, -0.0, 2.0, -2.0, -8.0, float("inf"), float("-inf"), float("nan"), 1.0, -1.0, 0.5])
    expo = torch.tensor([0.0, -1.0, -1.0, 0.5, 3.0, 1.0 / 3, -1.0, 3.0, 0.0, float("nan"), float("inf"), float("-inf")])
    for dt in (torch.float32, torch.float64):
        c.add(f"pow_edges_{DT[dt]}", "pow", [base.to(dt), expo.to(dt)], torch.pow(base.to(dt), expo.to(dt)))
    ib = torch.tensor([0, 1, 2, -2, 3, -3, 10, 7], dtype=torch.int64)
    ie = torch.tensor([0, 5, 10, 3, 4, 3, 2, 0], dtype=torch.int64)
    c.add("pow_int_int", "pow", [ib, ie], torch.pow(ib, ie))
    c.add("pow_int_float_scalar", "pow", [ib, 0.5], torch.pow(ib, 0.5))
    c.add("pow_int_int_scalar", "pow", [ib, 2], torch.pow(ib, 2))
    c.add("pow_float_scalar_neg", "pow", [base, -2], torch.pow(base, -2))
    c.add("pow_scalar_base", "pow", [2, ie], torch.pow(2, ie))
    c.add("pow_float_scalar_base", "pow", [0.5, base], torch.pow(0.5, base))
    c.add("pow_int8_wraps", "pow", [torch.tensor([2, 3, -2], dtype=torch.int8), torch.tensor([7, 5, 7], dtype=torch.int8)],
          torch.pow(torch.tensor([2, 3, -2], dtype=torch.int8), torch.tensor([7, 5, 7], dtype=torch.int8)))
    nanv = torch.tensor([1.0, float("nan"), -1.0, 2.0, float("nan")])
    nanw = torch.tensor([float("nan"), 0.0, -2.0, 2.0, float("nan")])
    c.add("maximum_nan", "maximum", [nanv, nanw], torch.maximum(nanv, nanw))
    c.add("minimum_nan", "minimum", [nanv, nanw], torch.minimum(nanv, nanw))
    za = torch.tensor([0.0, -0.0, 1.0, -1.0, 0.0, 3.0])
    zb = torch.tensor([-1.0, 1.0, 0.0, -0.0, -0.0, -4.0])
    c.add("atan2_signed_zero", "atan2", [za, zb], torch.atan2(za, zb))
    c.add("copysign", "copysign", [za, zb], torch.copysign(za, zb))
    c.add("hypot", "hypot", [za, zb], torch.hypot(za, zb))
    c.add("sign_nan", "sign", [nanv], torch.sign(nanv))
    sh = torch.tensor([-16, -1, 7, 1, 255], dtype=torch.int64)
    shn = torch.tensor([2, 1, 1, 62, 4], dtype=torch.int64)
    c.add("right_shift_signed", "bitwise_right_shift", [sh, shn], torch.bitwise_right_shift(sh, shn))
    c.add("left_shift", "bitwise_left_shift", [sh, shn], torch.bitwise_left_shift(sh, shn))
    u = torch.tensor([200, 3, 255], dtype=torch.uint8)
    c.add("uint8_sub_wraps", "sub", [u, torch.tensor([201, 4, 0], dtype=torch.uint8)],
          u - torch.tensor([201, 4, 0], dtype=torch.uint8))
    c.add("uint8_int8_add", "add", [u, torch.tensor([-1, 100, 1], dtype=torch.int8)],
          u + torch.tensor([-1, 100, 1], dtype=torch.int8))
    c.add("int_tensor_true_div_0d_float", "div", [ai, torch.tensor(2.0, dtype=torch.float64)],
          torch.div(ai, torch.tensor(2.0, dtype=torch.float64)), rounding_mode="")
    c.add("clamp_lo_gt_hi", "clamp", [af, 1.0, -1.0], torch.clamp(af, 1.0, -1.0))
    c.add("clamp_int_float_bounds", "clamp", [ai, -2.5, 3.5], torch.clamp(ai, -2.5, 3.5))
    x = r(7, dtype=torch.float64, lo=-0.99, hi=0.99)
    c.add("erfinv_f64", "erfinv", [x], torch.erfinv(x))
    c.add("frac_neg", "frac", [af], torch.frac(af))
    c.add("lerp", "lerp", [af, bf, 0.3], torch.lerp(af, bf, 0.3))
    c.add("nan_to_num", "nan_to_num", [torch.tensor([float("nan"), float("inf"), float("-inf"), 1.0])],
          torch.nan_to_num(torch.tensor([float("nan"), float("inf"), float("-inf"), 1.0])))
    return c.write("elementwise.json")


# ---------------------------------------------------------------- reductions, scans, sort
def reduce():
    c = Cases()
    x = r(3, 4, 5)
    xd = r(3, 4, 5, dtype=torch.float64)
    for corr in (0, 1, 2):
        c.add(f"var_correction{corr}", "var", [x], torch.var(x, dim=(0, 2), correction=corr),
              dims=[0, 2], correction=corr, keepdim=False)
        c.add(f"std_correction{corr}_keepdim", "std", [xd], torch.std(xd, dim=1, correction=corr, keepdim=True),
              dims=[1], correction=corr, keepdim=True)
    c.add("var_all_f64", "var", [xd], torch.var(xd), dims=[], correction=1, keepdim=False)
    c.add("var_single_element_nan", "var", [torch.tensor([[1.5], [2.0]])],
          torch.var(torch.tensor([[1.5], [2.0]]), dim=1), dims=[1], correction=1, keepdim=False)
    for p in (1.0, 2.0, 3.0, 0.5, float("inf"), float("-inf"), 0.0):
        c.add(f"norm_p{p}", "norm", [x], torch.linalg.vector_norm(x, ord=p, dim=(1, 2)),
              p=num(p), dims=[1, 2], keepdim=False)
    c.add("norm_fro_all", "norm", [xd], torch.norm(xd), p=2.0, dims=[], keepdim=False)
    big = torch.tensor([[1000.0, 1000.0, -5.0], [float("-inf"), float("-inf"), float("-inf")], [float("-inf"), 0.0, 1.0]])
    c.add("logsumexp_stable", "logsumexp", [big], torch.logsumexp(big, dim=1), dims=[1], keepdim=False)
    c.add("logsumexp_keepdim", "logsumexp", [x], torch.logsumexp(x, dim=(0, 1), keepdim=True),
          dims=[0, 1], keepdim=True)
    ties = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [-1.0, -5.0, -5.0, 4.0]])
    c.add("argmax_ties", "argmax", [ties], torch.argmax(ties, dim=1), dim=1, keepdim=False)
    c.add("argmin_ties", "argmin", [ties], torch.argmin(ties, dim=1), dim=1, keepdim=False)
    c.add("argmax_ties_dim0_keepdim", "argmax", [ties], torch.argmax(ties, dim=0, keepdim=True), dim=0, keepdim=True)
    c.add("argmax_flat", "argmax", [ties], torch.argmax(ties))
    c.add("max_dim_ties", "max_dim", [ties], list(torch.max(ties, dim=1)), dim=1, keepdim=False)
    c.add("min_dim_ties", "min_dim", [ties], list(torch.min(ties, dim=1)), dim=1, keepdim=False)
    nanr = torch.tensor([[1.0, float("nan"), 3.0], [0.0, 1.0, 2.0]])
    c.add("max_nan", "max", [nanr], torch.max(nanr))
    c.add("argmax_nan", "argmax", [nanr], torch.argmax(nanr, dim=1), dim=1, keepdim=False)
    c.add("amax_nan", "amax", [nanr], torch.amax(nanr, dim=1), dims=[1], keepdim=False)
    cm = torch.tensor([[1.0, 3.0, 2.0, 3.0, 5.0, 5.0, 0.0], [0.0, 0.0, -1.0, -1.0, 2.0, -3.0, -3.0]])
    c.add("cummax_ties", "cummax", [cm], list(torch.cummax(cm, dim=1)), dim=1)
    c.add("cummin_ties", "cummin", [cm], list(torch.cummin(cm, dim=1)), dim=1)
    ci = torch.tensor([[1, -2, 3], [4, 5, -6]], dtype=torch.int32)
    c.add("cumsum_int32_to_int64", "cumsum", [ci], torch.cumsum(ci, dim=1), dim=1)
    c.add("cumprod_int32", "cumprod", [ci], torch.cumprod(ci, dim=0), dim=0)
    c.add("cumsum_f64", "cumsum", [xd], torch.cumsum(xd, dim=2), dim=2)
    c.add("sum_int8_to_int64", "sum", [torch.tensor([100, 100, 100], dtype=torch.int8)],
          torch.sum(torch.tensor([100, 100, 100], dtype=torch.int8)), dims=[], keepdim=False)
    c.add("sum_bool", "sum", [torch.tensor([True, False, True])], torch.sum(torch.tensor([True, False, True])),
          dims=[], keepdim=False)
    c.add("sum_uint8", "sum", [torch.tensor([200, 100], dtype=torch.uint8)],
          torch.sum(torch.tensor([200, 100], dtype=torch.uint8)), dims=[], keepdim=False)
    c.add("prod_int", "prod", [ci], torch.prod(ci, dim=1), dims=[1], keepdim=False)
    c.add("mean_dims", "mean", [x], torch.mean(x, dim=(0, 2), keepdim=True), dims=[0, 2], keepdim=True)
    c.add("mean_empty_nan", "mean", [torch.zeros(0, 3)], torch.mean(torch.zeros(0, 3), dim=0), dims=[0], keepdim=False)
    c.add("sum_empty", "sum", [torch.zeros(0, 3)], torch.sum(torch.zeros(0, 3), dim=0), dims=[0], keepdim=False)
    c.add("prod_empty", "prod", [torch.zeros(2, 0)], torch.prod(torch.zeros(2, 0), dim=1), dims=[1], keepdim=False)
    c.add("any_all", "all", [torch.tensor([[1, 0], [2, 3]])], torch.all(torch.tensor([[1, 0], [2, 3]]), dim=1),
          dims=[1], keepdim=False)
    c.add("count_nonzero", "count_nonzero", [ties], torch.count_nonzero(ties, dim=0), dims=[0])
    s = torch.tensor([[3.0, 1.0, float("nan"), 2.0, 1.0, -float("inf"), 3.0], [0.0, -0.0, 5.0, 5.0, 1.0, 2.0, 0.0]])
    for desc in (False, True):
        c.add(f"sort_stable_nan_desc{int(desc)}", "sort", [s], list(torch.sort(s, dim=1, descending=desc, stable=True)),
              dim=1, descending=desc)
    si = torch.tensor([[5, 1, 5, 2, 1, 5], [0, 0, 0, -1, 7, 7]], dtype=torch.int32)
    c.add("sort_int_desc_ties", "sort", [si], list(torch.sort(si, dim=1, descending=True, stable=True)),
          dim=1, descending=True)
    c.add("argsort_dim0", "argsort", [x], torch.argsort(x, dim=0, stable=True) if hasattr(torch.argsort, "__call__") else None,
          dim=0, descending=False)
    tk = torch.tensor([[1.0, 9.0, 3.0, 7.0, 5.0], [2.0, 2.0, 8.0, 1.0, 8.0]])
    c.add("topk_largest", "topk", [tk], list(torch.topk(tk, 3, dim=1)), k=3, dim=1, largest=True)
    c.add("topk_smallest", "topk", [tk], list(torch.topk(tk, 2, dim=1, largest=False)), k=2, dim=1, largest=False)
    c.add("topk_dim0", "topk", [x], list(torch.topk(x, 2, dim=0)), k=2, dim=0, largest=True)
    return c.write("reduce.json")


# ---------------------------------------------------------------- creation and layout
def layout():
    c = Cases()
    for (a, b, n) in ((0.0, 1.0, 7), (-1.0, 1.0, 5), (2.0, -3.0, 4), (0.0, 1.0, 1), (1.0, 1e-7, 11)):
        c.add(f"linspace_{a}_{b}_{n}", "linspace", [], torch.linspace(a, b, n), start=a, end=b, steps=n)
    c.add("linspace_f64", "linspace", [], torch.linspace(0.1, 0.9, 9, dtype=torch.float64), start=0.1, end=0.9,
          steps=9, dtype="float64")
    for (a, b, s) in ((0.0, 1.0, 0.1), (1.0, 2.5, 0.5), (-1.0, 1.0, 0.3), (0.0, 0.9, 0.3), (5.0, 0.0, -0.7)):
        c.add(f"arange_{a}_{b}_{s}", "arange", [], torch.arange(a, b, s), start=a, end=b, step=s)
    c.add("arange_int", "arange", [], torch.arange(-3, 10, 4), start=-3, end=10, step=4)
    c.add("arange_f64", "arange", [], torch.arange(0, 1, 0.1, dtype=torch.float64), start=0.0, end=1.0, step=0.1,
          dtype="float64")
    x = r(1, 2, 4, 5)
    for mode in ("constant", "reflect", "replicate", "circular"):
        c.add(f"pad_{mode}", "pad", [x], F.pad(x, (2, 1, 1, 3), mode=mode, value=0.5 if mode == "constant" else 0.0),
              pad=[2, 1, 1, 3], mode=mode, value=0.5 if mode == "constant" else 0.0)
    c.add("pad_constant_negative", "pad", [x], F.pad(x, (-1, 2, 0, -1)), pad=[-1, 2, 0, -1], mode="constant", value=0.0)
    x3 = r(2, 3, 6)
    c.add("pad_reflect_1d", "pad", [x3], F.pad(x3, (5, 3), mode="reflect"), pad=[5, 3], mode="reflect", value=0.0)
    c.add("pad_circular_1d", "pad", [x3], F.pad(x3, (4, 0), mode="circular"), pad=[4, 0], mode="circular", value=0.0)
    c.add("roll", "roll", [x3], torch.roll(x3, shifts=(-1, 8), dims=(1, 2)), shifts=[-1, 8], dims=[1, 2])
    c.add("roll_flat", "roll", [x3], torch.roll(x3, shifts=5), shifts=[5], dims=[])
    m = r(4, 5)
    c.add("triu_k1", "triu", [m], torch.triu(m, 1), diagonal=1)
    c.add("tril_kneg2", "tril", [m], torch.tril(m, -2), diagonal=-2)
    return c.write("layout.json")


# ---------------------------------------------------------------- nn: conv, pool, interpolate
def nn_conv():
    c = Cases()
    x = r(2, 4, 7, 6)
    for (st, pd, dl, g) in ((1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 1), (2, (1, 0), (1, 2), 2), (3, 1, 1, 4)):
        w = r(6 if g != 4 else 4, 4 // g, 3, 2)
        b = r(w.shape[0])
        stl, pdl, dll = [st] if isinstance(st, int) else list(st), [pd] if isinstance(pd, int) else list(pd), \
            [dl] if isinstance(dl, int) else list(dl)
        c.add(f"conv2d_s{st}_p{pd}_d{dl}_g{g}", "conv2d", [x, w, b], F.conv2d(x, w, b, st, pd, dl, g),
              stride=stl, padding=pdl, dilation=dll, groups=g)
    x1 = r(2, 3, 9, dtype=torch.float64)
    w1 = r(4, 3, 3, dtype=torch.float64)
    c.add("conv1d_same_dilation2_f64", "conv1d", [x1, w1], F.conv1d(x1, w1, None, 1, "same", 2),
          stride=[1], padding="same", dilation=[2], groups=1)
    x3 = r(1, 2, 4, 5, 3)
    w3 = r(3, 2, 2, 3, 2)
    c.add("conv3d_stride_pad", "conv3d", [x3, w3], F.conv3d(x3, w3, None, (1, 2, 1), (1, 0, 1)),
          stride=[1, 2, 1], padding=[1, 0, 1], dilation=[1], groups=1)
    xt = r(2, 4, 4, 3)
    for (st, pd, op, dl, g) in ((1, 0, 0, 1, 1), (2, 1, 1, 1, 1), (3, 1, 2, 1, 2), (2, 0, 1, 2, 1), (2, (1, 0), (0, 1), 1, 4)):
        w = r(4, 6 // (2 if g == 2 else 1) if g != 4 else 1, 3, 3)
        b = r(w.shape[1] * g)
        lst = lambda v: [v] if isinstance(v, int) else list(v)
        c.add(f"conv_transpose2d_s{st}_p{pd}_op{op}_d{dl}_g{g}", "conv_transpose2d", [xt, w, b],
              F.conv_transpose2d(xt, w, b, st, pd, op, g, dl),
              stride=lst(st), padding=lst(pd), output_padding=lst(op), dilation=lst(dl), groups=g)
    xt1 = r(1, 2, 5)
    wt1 = r(2, 3, 4)
    c.add("conv_transpose1d_s3_op1", "conv_transpose1d", [xt1, wt1], F.conv_transpose1d(xt1, wt1, None, 3, 1, 1),
          stride=[3], padding=[1], output_padding=[1], dilation=[1], groups=1)

    # pools
    xp = r(1, 2, 7, 8)
    for (k, st, pd, dl, ceil) in ((2, None, 0, 1, False), (3, 2, 1, 1, True), (3, 2, 0, 2, True), ((2, 3), (3, 2), (1, 1), 1, True)):
        lst = lambda v: [] if v is None else ([v] if isinstance(v, int) else list(v))
        vals, idx = F.max_pool2d(xp, k, st, pd, dl, ceil_mode=ceil, return_indices=True)
        c.add(f"max_pool2d_k{k}_s{st}_p{pd}_d{dl}_ceil{int(ceil)}", "max_pool2d_with_indices", [xp], [vals, idx],
              kernel_size=lst(k), stride=lst(st), padding=lst(pd), dilation=lst(dl), ceil_mode=ceil)
    for (k, st, pd, ceil, cip, div) in ((3, 2, 1, True, True, None), (3, 2, 1, True, False, None),
                                        (2, 3, 1, True, True, None), ((3, 2), 2, (1, 1), False, True, None),
                                        (3, 2, 1, False, True, 5), (4, 3, 2, True, False, None)):
        lst = lambda v: [v] if isinstance(v, int) else list(v)
        args = dict(kernel_size=lst(k), stride=lst(st), padding=lst(pd), ceil_mode=ceil, count_include_pad=cip)
        if div is not None:
            args["divisor_override"] = div
        c.add(f"avg_pool2d_k{k}_s{st}_p{pd}_ceil{int(ceil)}_cip{int(cip)}_div{div}", "avg_pool2d", [xp],
              F.avg_pool2d(xp, k, st, pd, ceil, cip, div), **args)
    x1p = r(2, 3, 10)
    c.add("max_pool1d_ceil", "max_pool1d", [x1p], F.max_pool1d(x1p, 3, 2, 1, ceil_mode=True),
          kernel_size=[3], stride=[2], padding=[1], dilation=[1], ceil_mode=True)
    c.add("avg_pool1d_ceil_nopad", "avg_pool1d", [x1p], F.avg_pool1d(x1p, 4, 3, 2, True, False),
          kernel_size=[4], stride=[3], padding=[2], ceil_mode=True, count_include_pad=False)
    c.add("adaptive_avg_pool2d", "adaptive_avg_pool2d", [xp], F.adaptive_avg_pool2d(xp, (3, 5)), output_size=[3, 5])
    c.add("adaptive_max_pool2d", "adaptive_max_pool2d_with_indices", [xp],
          list(F.adaptive_max_pool2d(xp, (4, 3), return_indices=True)), output_size=[4, 3])

    # interpolate
    xi = r(1, 2, 4, 5)
    xl = r(1, 2, 6)
    for mode in ("nearest", "bilinear", "bicubic"):
        for ac in ((None,) if mode == "nearest" else (False, True)):
            for size, sf in (((7, 3), None), (None, (1.7, 2.5)), (None, (0.5, 0.6))):
                kw = {} if ac is None else {"align_corners": ac}
                y = F.interpolate(xi, size=size, scale_factor=sf, mode=mode, **kw)
                args = {"mode": mode, "size": list(size) if size else [], "scale_factor": list(sf) if sf else []}
                if ac is not None:
                    args["align_corners"] = ac
                c.add(f"interpolate_{mode}_ac{ac}_size{size}_sf{sf}", "interpolate", [xi], y, **args)
    y = F.interpolate(xi, scale_factor=(1.7, 2.5), mode="bilinear", recompute_scale_factor=True)
    c.add("interpolate_bilinear_recompute_scale", "interpolate", [xi], y, mode="bilinear", size=[],
          scale_factor=[1.7, 2.5], recompute_scale_factor=True)
    c.add("interpolate_linear_sf", "interpolate", [xl], F.interpolate(xl, scale_factor=1.5, mode="linear"),
          mode="linear", size=[], scale_factor=[1.5])
    c.add("interpolate_nearest_exact", "interpolate", [xi], F.interpolate(xi, size=(3, 8), mode="nearest-exact"),
          mode="nearest-exact", size=[3, 8], scale_factor=[])
    c.add("interpolate_area", "interpolate", [xi], F.interpolate(xi, size=(3, 3), mode="area"),
          mode="area", size=[3, 3], scale_factor=[])
    return c.write("nn_conv_pool.json")


# ---------------------------------------------------------------- nn: activations, norms, losses, attention
def nn_misc():
    c = Cases()
    x = r(2, 3, 4, lo=-4, hi=4)
    for dim in (0, 1, -1):
        c.add(f"softmax_dim{dim}", "softmax", [x], F.softmax(x, dim), dim=dim)
        c.add(f"log_softmax_dim{dim}", "log_softmax", [x], F.log_softmax(x, dim), dim=dim)
    inf = torch.tensor([[float("-inf"), 0.0, 1.0], [1000.0, 1000.0, -1000.0]])
    c.add("softmax_inf_large", "softmax", [inf], F.softmax(inf, 1), dim=1)
    c.add("log_softmax_inf_large", "log_softmax", [inf], F.log_softmax(inf, 1), dim=1)
    c.add("gelu_tanh", "gelu", [x], F.gelu(x, approximate="tanh"), approximate="tanh")
    c.add("gelu_none", "gelu", [x], F.gelu(x), approximate="none")
    c.add("softplus_beta_threshold", "softplus", [x], F.softplus(x, beta=2.0, threshold=3.0), beta=2.0, threshold=3.0)
    c.add("elu_alpha", "elu", [x], F.elu(x, 0.7), alpha=0.7)
    c.add("selu", "selu", [x], F.selu(x))
    c.add("celu", "celu", [x], F.celu(x, 1.5), alpha=1.5)
    c.add("mish", "mish", [x], F.mish(x))
    c.add("hardswish", "hardswish", [x], F.hardswish(x))
    c.add("hardsigmoid", "hardsigmoid", [x], F.hardsigmoid(x))
    c.add("logsigmoid", "log_sigmoid", [x], F.logsigmoid(x))
    c.add("glu", "glu", [x], F.glu(x, 1 if x.shape[1] % 2 == 0 else -1), dim=-1)

    xn = r(2, 6, 3, 2)
    w, b = r(3, 2), r(3, 2)
    c.add("layer_norm_affine", "layer_norm", [xn, w, b], F.layer_norm(xn, (3, 2), w, b, 1e-5),
          normalized_shape=[3, 2], eps=1e-5)
    c.add("layer_norm_plain_eps", "layer_norm", [xn], F.layer_norm(xn, (2,), eps=0.1), normalized_shape=[2], eps=0.1)
    gw, gb = r(6), r(6)
    c.add("group_norm_3groups", "group_norm", [xn, gw, gb], F.group_norm(xn, 3, gw, gb), num_groups=3, eps=1e-5)
    c.add("group_norm_1group", "group_norm", [xn], F.group_norm(xn, 1, eps=1e-3), num_groups=1, eps=1e-3)
    rm, rv = r(6), r(6, lo=0.5, hi=2.0)
    c.add("batch_norm_eval", "batch_norm", [xn, rm, rv, gw, gb], F.batch_norm(xn, rm, rv, gw, gb, False, 0.1, 1e-5),
          training=False, momentum=0.1, eps=1e-5)
    c.add("batch_norm_train", "batch_norm", [xn, rm.clone(), rv.clone(), gw, gb],
          F.batch_norm(xn, rm.clone(), rv.clone(), gw, gb, True, 0.1, 1e-5), training=True, momentum=0.1, eps=1e-5)
    c.add("instance_norm", "instance_norm", [xn], F.instance_norm(xn, eps=1e-5), eps=1e-5)

    logits = r(5, 4, lo=-3, hi=3)
    tgt = torch.tensor([0, 3, 1, 3, 2])
    tgt_ign = torch.tensor([0, -100, 1, 3, 2])
    tgt_ign7 = torch.tensor([0, 7, 7, 3, 2])
    cw = torch.tensor([0.5, 2.0, 1.0, 1.5])
    for red in ("mean", "sum", "none"):
        c.add(f"cross_entropy_{red}", "cross_entropy", [logits, tgt], F.cross_entropy(logits, tgt, reduction=red),
              reduction=red)
        c.add(f"cross_entropy_weight_ignore_smooth_{red}", "cross_entropy", [logits, tgt_ign7, cw],
              F.cross_entropy(logits, tgt_ign7, cw, ignore_index=7, reduction=red, label_smoothing=0.2),
              reduction=red, ignore_index=7, label_smoothing=0.2)
        c.add(f"nll_loss_weight_ignore_{red}", "nll_loss", [F.log_softmax(logits, 1), tgt_ign, cw],
              F.nll_loss(F.log_softmax(logits, 1), tgt_ign, cw, reduction=red), reduction=red, ignore_index=-100)
    c.add("cross_entropy_smooth_noweight", "cross_entropy", [logits, tgt_ign],
          F.cross_entropy(logits, tgt_ign, label_smoothing=0.3), reduction="mean", ignore_index=-100, label_smoothing=0.3)
    probs = F.softmax(r(5, 4), 1)
    c.add("cross_entropy_probs_weight_smooth", "cross_entropy", [logits, probs, cw],
          F.cross_entropy(logits, probs, cw, label_smoothing=0.1), reduction="mean", label_smoothing=0.1)
    c.add("cross_entropy_probs_sum", "cross_entropy", [logits, probs], F.cross_entropy(logits, probs, reduction="sum"),
          reduction="sum")
    l4 = r(2, 3, 2, 2)
    t4 = torch.tensor([[[0, 2], [1, 1]], [[2, 0], [0, -100]]])
    c.add("cross_entropy_4d", "cross_entropy", [l4, t4], F.cross_entropy(l4, t4), reduction="mean")
    p = torch.rand(6, dtype=torch.float64) * 0.98 + 0.01
    y = torch.tensor([0.0, 1.0, 1.0, 0.0, 0.3, 1.0], dtype=torch.float64)
    bw = torch.rand(6, dtype=torch.float64)
    for red in ("mean", "sum", "none"):
        c.add(f"bce_{red}", "binary_cross_entropy", [p, y, bw], F.binary_cross_entropy(p, y, bw, reduction=red),
              reduction=red)
    z = r(3, 4, lo=-30, hi=30)
    yz = torch.rand(3, 4)
    pw = torch.tensor([1.0, 2.0, 0.5, 3.0])
    for red in ("mean", "sum", "none"):
        c.add(f"bce_with_logits_pos_weight_{red}", "binary_cross_entropy_with_logits", [z, yz, pw],
              F.binary_cross_entropy_with_logits(z, yz, reduction=red, pos_weight=pw), reduction=red)
    a, t = r(4, 5, lo=-3, hi=3), r(4, 5, lo=-3, hi=3)
    for red in ("mean", "sum", "none"):
        c.add(f"huber_{red}", "huber_loss", [a, t], F.huber_loss(a, t, reduction=red, delta=1.5), reduction=red, delta=1.5)
        c.add(f"smooth_l1_{red}", "smooth_l1_loss", [a, t], F.smooth_l1_loss(a, t, reduction=red, beta=0.5),
              reduction=red, beta=0.5)
    c.add("smooth_l1_beta0", "smooth_l1_loss", [a, t], F.smooth_l1_loss(a, t, beta=0.0), reduction="mean", beta=0.0)
    c.add("mse_sum", "mse_loss", [a, t], F.mse_loss(a, t, reduction="sum"), reduction="sum")
    c.add("l1_mean", "l1_loss", [a, t], F.l1_loss(a, t), reduction="mean")
    lp = F.log_softmax(r(3, 5), 1)
    tq = F.softmax(r(3, 5), 1)
    tq[0, 1] = 0.0
    for red in ("batchmean", "sum", "mean", "none"):
        c.add(f"kl_div_{red}", "kl_div", [lp, tq], F.kl_div(lp, tq, reduction=red), reduction=red, log_target=False)
    c.add("kl_div_log_target", "kl_div", [lp, tq.clamp_min(1e-6).log()],
          F.kl_div(lp, tq.clamp_min(1e-6).log(), reduction="batchmean", log_target=True),
          reduction="batchmean", log_target=True)

    # scaled dot-product attention (torch 1.13 has no public sdpa: its definition, with torch ops)
    def sdpa(q, k, v, mask=None, causal=False, scale=None):
        s = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
        att = q @ k.transpose(-2, -1) * s
        if causal:
            cm = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
            att = att.masked_fill(~cm, float("-inf"))
        if mask is not None:
            att = att.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else att + mask
        return torch.softmax(att, -1) @ v
    q, k, v = r(2, 2, 3, 4), r(2, 2, 5, 4), r(2, 2, 5, 6)
    c.add("sdpa_plain", "sdpa", [q, k, v], sdpa(q, k, v))
    bm = torch.rand(3, 5) > 0.3
    bm[:, 0] = True
    c.add("sdpa_bool_mask", "sdpa", [q, k, v, bm], sdpa(q, k, v, bm))
    fm = r(2, 1, 3, 5)
    c.add("sdpa_float_mask_scale", "sdpa", [q, k, v, fm], sdpa(q, k, v, fm, scale=0.3), scale=0.3)
    qc = r(1, 2, 4, 4)
    c.add("sdpa_causal", "sdpa", [qc, qc, qc], sdpa(qc, qc, qc, causal=True), is_causal=True)
    return c.write("nn_misc.json")


# ---------------------------------------------------------------- special values
SPECIAL = [-0.0, 0.0, float("-inf"), float("inf"), float("nan"), -0.3, 0.3, -0.5, 0.5, -1.5, -2.5,
           2.5, -1e-30, -1.0, 1.0, -3.0]
PAIRS = [-0.0, 0.0, float("-inf"), float("inf"), float("nan"), -0.3, 0.3, -2.0, 2.0, -2.5, 1.0, -1.0]


def special():
    """Signed zeros, infinities and NaN through element-wise ops: golden_test.cpp compares these
    bit for bit (the sign of zero, the infinity, NaN where NaN). Left out where torch 1.13 itself
    is not consistent: gelu(-0) (-0 on its scalar loop, +0 on its vectorised one), a tie between
    -0 and +0 in minimum/maximum (a on the scalar loop, b on the vectorised one), and softshrink
    (1.13 gives +0 for NaN; Ember keeps NaN, as later torch)."""
    c = Cases()
    unary = {"neg": torch.neg, "abs": torch.abs, "sign": torch.sign, "exp": torch.exp,
             "expm1": torch.expm1, "log": torch.log, "log1p": torch.log1p, "sqrt": torch.sqrt,
             "rsqrt": torch.rsqrt, "square": torch.square, "reciprocal": torch.reciprocal,
             "sin": torch.sin, "cos": torch.cos, "tan": torch.tan, "asin": torch.asin,
             "atan": torch.atan, "sinh": torch.sinh, "tanh": torch.tanh, "asinh": torch.asinh,
             "atanh": torch.atanh, "erf": torch.erf, "erfinv": torch.erfinv, "floor": torch.floor,
             "ceil": torch.ceil, "round": torch.round, "trunc": torch.trunc, "frac": torch.frac,
             "nan_to_num": torch.nan_to_num, "relu": F.relu, "relu6": F.relu6,
             "hardtanh": F.hardtanh, "leaky_relu": F.leaky_relu, "elu": F.elu, "selu": F.selu,
             "celu": F.celu, "silu": F.silu, "mish": F.mish, "softplus": F.softplus,
             "hardsigmoid": F.hardsigmoid, "hardswish": F.hardswish, "sigmoid": torch.sigmoid,
             "log_sigmoid": F.logsigmoid, "softsign": F.softsign, "tanhshrink": F.tanhshrink,
             "hardshrink": F.hardshrink}
    for dt in (torch.float32, torch.float64):
        x = torch.tensor(SPECIAL, dtype=dt)
        for name, f in unary.items():
            c.add(f"{name}_{DT[dt]}", "special_unary", [x], f(x), fn=name)
        p = torch.tensor(PAIRS, dtype=dt)
        a, b = p.reshape(-1, 1).expand(len(PAIRS), len(PAIRS)).reshape(-1), p.repeat(len(PAIRS))
        binary = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
                  "div_floor": lambda u, v: torch.div(u, v, rounding_mode="floor"),
                  "div_trunc": lambda u, v: torch.div(u, v, rounding_mode="trunc"),
                  "remainder": torch.remainder, "fmod": torch.fmod, "pow": torch.pow,
                  "atan2": torch.atan2, "hypot": torch.hypot, "copysign": torch.copysign,
                  "minimum": torch.minimum, "maximum": torch.maximum}
        tie = (a == 0) & (b == 0) & (torch.signbit(a) != torch.signbit(b))
        for name, f in binary.items():
            u, v = (a[~tie], b[~tie]) if name in ("minimum", "maximum") else (a, b)
            c.add(f"{name}_{DT[dt]}", "special_binary", [u, v], f(u, v), fn=name)
        z = torch.tensor([-0.0, -0.0, -0.0], dtype=dt)
        for name, f in {"sum": torch.sum, "prod": torch.prod, "mean": torch.mean}.items():
            c.add(f"{name}_negative_zeros_{DT[dt]}", "special_unary", [z], f(z), fn=name)
        c.add(f"cumsum_negative_zeros_{DT[dt]}", "special_unary", [z], torch.cumsum(z, 0),
              fn="cumsum")
        c.add(f"cumprod_negative_zeros_{DT[dt]}", "special_unary", [z], torch.cumprod(z, 0),
              fn="cumprod")
    return c.write("special.json")


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    total = promotion()
    for fn in (elementwise, reduce, layout, nn_conv, nn_misc, special):
        total += fn()
    print(f"total: {total}")
