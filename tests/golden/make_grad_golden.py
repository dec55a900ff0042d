#!/usr/bin/python3
"""Generates tests/data/golden/grads.json: outputs and input gradients computed by PyTorch's
autograd (f64) for the composite nn ops and the losses, which tests/golden_grad_test.cpp replays
through Ember's autodiff.

Run with Debian's Python (torch 1.13):
    /usr/bin/python3 tests/golden/make_grad_golden.py

A case is {"name", "op", "inputs": [...], "args": {...}, "output", "grad_output", "grads"}:
every tensor is {"dtype", "shape", "data"} (row-major); an input has "grad": true when it
requires grad, and "grads" holds one entry per input (null for inputs without grad). The
gradient is d(sum(output * grad_output))/d(input). "op" names the Ember function; "args" are its
options under torch's names. rms_norm (torch >= 2.4) and scaled_dot_product_attention (torch >=
2.0) are computed here from their formulas.
"""
import json
import math
import os

import torch
import torch.nn.functional as F

torch.manual_seed(1)
torch.set_default_dtype(torch.float64)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "golden")
DT = {torch.float64: "float64", torch.int64: "int64", torch.bool: "bool"}


def enc(x):
    return {"dtype": DT[x.dtype], "shape": list(x.shape), "data": x.detach().reshape(-1).tolist()}


cases = []


def add(name, op, inputs, fn, const=(), **args):
    """inputs: tensors; floating ones not listed in `const` get gradients. fn(*inputs) ->
    output (torch)."""
    wants = [t.is_floating_point() and i not in const for i, t in enumerate(inputs)]
    leaves = [t.clone().requires_grad_(g) for t, g in zip(inputs, wants)]
    out = fn(*leaves)
    go = torch.rand(out.shape) * 2 - 1
    grads = torch.autograd.grad((out * go).sum(), [t for t in leaves if t.requires_grad],
                                allow_unused=True)
    it = iter(grads)
    genc = []
    for t in leaves:
        g = next(it) if t.requires_grad else None
        if t.requires_grad and g is None:
            g = torch.zeros_like(t)
        genc.append(enc(g) if g is not None else None)
    ins = []
    for t, g in zip(inputs, wants):
        e = enc(t)
        e["grad"] = g
        ins.append(e)
    cases.append({"name": name, "op": op, "inputs": ins, "args": args, "output": enc(out),
                  "grad_output": enc(go), "grads": genc})


def r(*shape, lo=-2.0, hi=2.0):
    return torch.rand(*shape) * (hi - lo) + lo


def distinct(*shape):
    n = math.prod(shape)
    return (torch.randperm(n).double() / n * 4 - 2).reshape(shape)


def rms_norm(x, shape, w, eps):
    dims = tuple(range(-len(shape), 0))
    if eps is None:
        eps = torch.finfo(x.dtype).eps
    y = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps)
    return y * w if w is not None else y


def sdpa(q, k, v, mask=None, causal=False, scale=None):
    s = (1 / math.sqrt(q.shape[-1])) if scale is None else scale
    scores = q @ k.transpose(-2, -1) * s
    if causal:
        keep = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    elif mask is not None:
        scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask
    return torch.softmax(scores, -1) @ v


# ---- softmax family and activations
add("softmax dim 1", "softmax", [r(3, 5)], lambda x: F.softmax(x, 1), dim=1)
add("softmax dim 0", "softmax", [r(4, 2, 3)], lambda x: F.softmax(x, 0), dim=0)
add("log_softmax dim -1", "log_softmax", [r(3, 5)], lambda x: F.log_softmax(x, -1), dim=-1)
add("log_softmax dim 1", "log_softmax", [r(2, 4, 3)], lambda x: F.log_softmax(x, 1), dim=1)
add("gelu", "gelu", [r(4, 5, lo=-4, hi=4)], lambda x: F.gelu(x), approximate="none")
add("gelu tanh", "gelu", [r(4, 5, lo=-4, hi=4)], lambda x: F.gelu(x, approximate="tanh"),
    approximate="tanh")

# ---- norms
add("layer_norm [3, 4] affine", "layer_norm", [r(2, 3, 4), r(3, 4), r(3, 4)],
    lambda x, w, b: F.layer_norm(x, [3, 4], w, b, 1e-5), normalized_shape=[3, 4], eps=1e-5)
add("layer_norm [5] no affine", "layer_norm", [r(3, 5)], lambda x: F.layer_norm(x, [5], eps=1e-3),
    normalized_shape=[5], eps=1e-3)
add("group_norm 3 groups", "group_norm", [r(2, 6, 3), r(6), r(6)],
    lambda x, w, b: F.group_norm(x, 3, w, b, 1e-5), num_groups=3, eps=1e-5)
add("group_norm 2 groups 4-d", "group_norm", [r(2, 4, 2, 3)], lambda x: F.group_norm(x, 2),
    num_groups=2, eps=1e-5)
add("batch_norm training", "batch_norm", [r(4, 3, 2), r(3), r(3), r(3), r(3, lo=0.5, hi=1.5)],
    lambda x, w, b, rm, rv: F.batch_norm(x, rm.clone(), rv.clone(), w, b, True,
                                         0.1, 1e-5),
    const=(3, 4), training=True, momentum=0.1, eps=1e-5)
add("batch_norm training 2-d", "batch_norm", [r(5, 4), r(4), r(4), r(4), r(4, lo=0.5, hi=1.5)],
    lambda x, w, b, rm, rv: F.batch_norm(x, rm.clone(), rv.clone(), w, b, True,
                                         0.3, 1e-3),
    const=(3, 4), training=True, momentum=0.3, eps=1e-3)
add("rms_norm weight eps", "rms_norm", [r(2, 3, 4), r(4)],
    lambda x, w: rms_norm(x, [4], w, 1e-5), normalized_shape=[4], eps=1e-5)
add("rms_norm default eps", "rms_norm", [r(3, 2, 3)], lambda x: rms_norm(x, [2, 3], None, None),
    normalized_shape=[2, 3])

# ---- convolution, pooling, resampling
add("conv2d groups dilation", "conv2d", [r(2, 4, 6, 5), r(6, 2, 2, 3), r(6)],
    lambda x, w, b: F.conv2d(x, w, b, stride=1, padding=1, dilation=2, groups=2),
    stride=[1], padding=[1], dilation=[2], groups=2)
add("conv2d stride", "conv2d", [r(1, 3, 7, 6), r(2, 3, 3, 2)],
    lambda x, w: F.conv2d(x, w, None, stride=[2, 1], padding=[0, 1]),
    stride=[2, 1], padding=[0, 1], dilation=[1], groups=1)
add("conv_transpose2d", "conv_transpose2d", [r(2, 4, 3, 4), r(4, 3, 3, 2), r(6)],
    lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1, groups=2),
    stride=[2], padding=[1], output_padding=[1], groups=2, dilation=[1])
add("conv_transpose2d dilation", "conv_transpose2d", [r(1, 2, 3, 3), r(2, 2, 2, 2)],
    lambda x, w: F.conv_transpose2d(x, w, None, stride=1, padding=0, dilation=2),
    stride=[1], padding=[0], output_padding=[0], groups=1, dilation=[2])
add("max_pool2d", "max_pool2d", [distinct(2, 3, 7, 6)],
    lambda x: F.max_pool2d(x, 3, 2, 1), kernel_size=[3], stride=[2], padding=[1], dilation=[1],
    ceil_mode=False)
add("max_pool2d ceil dilation", "max_pool2d", [distinct(1, 2, 8, 7)],
    lambda x: F.max_pool2d(x, 2, 2, 0, 2, ceil_mode=True), kernel_size=[2], stride=[2],
    padding=[0], dilation=[2], ceil_mode=True)
add("avg_pool2d", "avg_pool2d", [r(2, 2, 7, 6)], lambda x: F.avg_pool2d(x, 3, 2, 1),
    kernel_size=[3], stride=[2], padding=[1], ceil_mode=False, count_include_pad=True)
add("avg_pool2d ceil exclude pad", "avg_pool2d", [r(1, 3, 6, 5)],
    lambda x: F.avg_pool2d(x, [3, 2], [2, 2], [1, 1], ceil_mode=True, count_include_pad=False),
    kernel_size=[3, 2], stride=[2, 2], padding=[1, 1], ceil_mode=True, count_include_pad=False)
for mode in ("bilinear", "bicubic"):
    for ac in (False, True):
        add(f"interpolate {mode} up align_corners={ac}", "interpolate", [r(1, 2, 3, 4)],
            lambda x, m=mode, a=ac: F.interpolate(x, size=[5, 7], mode=m, align_corners=a),
            size=[5, 7], mode=mode, align_corners=ac)
        add(f"interpolate {mode} scale align_corners={ac}", "interpolate", [r(2, 1, 5, 4)],
            lambda x, m=mode, a=ac: F.interpolate(x, scale_factor=[0.6, 1.5], mode=m,
                                                  align_corners=a),
            scale_factor=[0.6, 1.5], mode=mode, align_corners=ac)

# ---- attention (by formula)
add("sdpa", "scaled_dot_product_attention", [r(2, 3, 4), r(2, 5, 4), r(2, 5, 3)],
    lambda q, k, v: sdpa(q, k, v))
bmask = torch.tensor([[1, 0, 1, 1, 0], [0, 1, 0, 0, 1], [1, 1, 0, 1, 0]], dtype=torch.bool)
add("sdpa bool mask", "scaled_dot_product_attention", [r(2, 3, 4), r(2, 5, 4), r(2, 5, 3), bmask],
    lambda q, k, v, m: sdpa(q, k, v, m))
add("sdpa float mask scale", "scaled_dot_product_attention",
    [r(1, 2, 3, 4), r(1, 2, 5, 4), r(1, 2, 5, 3), r(3, 5)],
    lambda q, k, v, m: sdpa(q, k, v, m, scale=0.3), scale=0.3)
add("sdpa causal", "scaled_dot_product_attention", [r(2, 4, 3), r(2, 4, 3), r(2, 4, 2)],
    lambda q, k, v: sdpa(q, k, v, causal=True), is_causal=True)

# ---- losses
tgt = torch.tensor([0, 4, 2, 2, 1, 3])
tgt_ign = torch.tensor([1, -100, 3, 1, 0, -100])
tgt_ign7 = torch.tensor([7, 0, 7, 4, 2, 1])
tgt_k = torch.tensor([[0, 2, 1], [3, 3, 0]])
w5 = torch.tensor([0.5, 1.5, 1.0, 2.0, 0.3])
for red in ("none", "sum", "mean"):
    add(f"cross_entropy {red}", "cross_entropy", [r(6, 5), tgt],
        lambda x, t, rd=red: F.cross_entropy(x, t, reduction=rd), reduction=red)
    add(f"cross_entropy weight ignore {red}", "cross_entropy", [r(6, 5), tgt_ign, w5],
        lambda x, t, w, rd=red: F.cross_entropy(x, t, w, reduction=rd),
        reduction=red, const=(2,))
    add(f"cross_entropy ignore 7 smoothing {red}", "cross_entropy", [r(6, 5), tgt_ign7, w5],
        lambda x, t, w, rd=red: F.cross_entropy(x, t, w, ignore_index=7, reduction=rd,
                                                label_smoothing=0.2),
        reduction=red, ignore_index=7, label_smoothing=0.2, const=(2,))
    add(f"cross_entropy K-dim smoothing {red}", "cross_entropy", [r(2, 4, 3), tgt_k],
        lambda x, t, rd=red: F.cross_entropy(x, t, reduction=rd, label_smoothing=0.1),
        reduction=red, label_smoothing=0.1)
    add(f"cross_entropy probabilities {red}", "cross_entropy",
        [r(4, 5), torch.softmax(r(4, 5), 1), w5],
        lambda x, t, w, rd=red: F.cross_entropy(x, t, w, reduction=rd,
                                                label_smoothing=0.15),
        reduction=red, label_smoothing=0.15, const=(2,))
    add(f"nll_loss weight ignore {red}", "nll_loss", [r(6, 5, lo=-3, hi=0), tgt_ign7, w5],
        lambda x, t, w, rd=red: F.nll_loss(x, t, w, ignore_index=7, reduction=rd),
        reduction=red, ignore_index=7, const=(2,))
    add(f"nll_loss K-dim {red}", "nll_loss", [r(2, 4, 3, lo=-3, hi=0), tgt_k],
        lambda x, t, rd=red: F.nll_loss(x, t, reduction=rd), reduction=red)
    add(f"binary_cross_entropy weight {red}", "binary_cross_entropy",
        [r(3, 4, lo=0.05, hi=0.95), r(3, 4, lo=0, hi=1), r(4, lo=0.5, hi=2)],
        lambda x, t, w, rd=red: F.binary_cross_entropy(x, t, w, reduction=rd), reduction=red,
        const=(2,))
    add(f"binary_cross_entropy_with_logits pos_weight {red}", "binary_cross_entropy_with_logits",
        [r(3, 4, lo=-3, hi=3), r(3, 4, lo=0, hi=1), r(3, 1, lo=0.5, hi=2), r(4, lo=0.5, hi=3)],
        lambda x, t, w, pw, rd=red: F.binary_cross_entropy_with_logits(x, t, w, reduction=rd,
                                                                       pos_weight=pw),
        reduction=red, const=(2, 3))
    add(f"huber_loss {red}", "huber_loss", [r(3, 4), r(3, 4)],
        lambda x, t, rd=red: F.huber_loss(x, t, reduction=rd, delta=0.7), reduction=red,
        delta=0.7)
    add(f"smooth_l1_loss {red}", "smooth_l1_loss", [r(3, 4), r(3, 4)],
        lambda x, t, rd=red: F.smooth_l1_loss(x, t, reduction=rd, beta=0.5), reduction=red,
        beta=0.5)
for red in ("none", "sum", "mean", "batchmean"):
    add(f"kl_div {red}", "kl_div", [r(3, 4, lo=-3, hi=0), r(3, 4, lo=0.05, hi=1)],
        lambda x, t, rd=red: F.kl_div(x, t, reduction=rd), reduction=red, log_target=False)
    add(f"kl_div log_target {red}", "kl_div", [r(3, 4, lo=-3, hi=0), r(3, 4, lo=-3, hi=0)],
        lambda x, t, rd=red: F.kl_div(x, t, reduction=rd, log_target=True), reduction=red,
        log_target=True)

with open(os.path.join(OUT, "grads.json"), "w") as f:
    json.dump(cases, f, separators=(",", ":"))
print(f"grads.json: {len(cases)} cases")
