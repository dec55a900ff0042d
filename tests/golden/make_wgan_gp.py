#!/usr/bin/python3
"""Generates tests/data/golden/wgan_gp.json: one WGAN-GP critic step (Gulrajani et al. 2017)
computed by PyTorch's autograd (f64), which tests/higher_order_golden_test.cpp replays through
Ember's create_graph.

Run with Debian's Python (torch 1.13):
    /usr/bin/python3 tests/golden/make_wgan_gp.py

The critic is conv2d(1 -> 3, 3x3, padding 1) -> leaky_relu(0.2) -> flatten -> linear(75 -> 1).
With interp = alpha * real + (1 - alpha) * fake and g = d critic(interp).sum() / d interp
(create_graph=True), penalty = lambda * mean((||g||_2 - 1)^2) over the per-sample norms, and
loss = mean(critic(fake)) - mean(critic(real)) + penalty. The file holds the fixed weights and
batches (every tensor {"shape", "data"}, row-major), the loss, the penalty, the input gradient g
and d loss / d parameter for each parameter.
"""
import json
import os

import torch
import torch.nn.functional as F

torch.manual_seed(3)
torch.set_default_dtype(torch.float64)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "golden")


def enc(x):
    return {"shape": list(x.shape), "data": x.detach().reshape(-1).tolist()}


def critic(x, w1, b1, w2, b2):
    h = F.leaky_relu(F.conv2d(x, w1, b1, padding=1), 0.2)
    return F.linear(h.flatten(1), w2, b2)


B, LAMBDA = 4, 10.0
params = {
    "w1": torch.randn(3, 1, 3, 3) * 0.5,
    "b1": torch.randn(3) * 0.1,
    "w2": torch.randn(1, 75) * 0.2,
    "b2": torch.randn(1) * 0.1,
}
real = torch.randn(B, 1, 5, 5)
fake = torch.randn(B, 1, 5, 5) * 0.7 + 0.3
alpha = torch.rand(B, 1, 1, 1)

p = {k: v.clone().requires_grad_() for k, v in params.items()}
args = (p["w1"], p["b1"], p["w2"], p["b2"])
interp = (alpha * real + (1 - alpha) * fake).requires_grad_()
g = torch.autograd.grad(critic(interp, *args).sum(), interp, create_graph=True)[0]
penalty = LAMBDA * ((g.reshape(B, -1).norm(2, dim=1) - 1) ** 2).mean()
loss = critic(fake, *args).mean() - critic(real, *args).mean() + penalty
loss.backward()

out = {
    "lambda": LAMBDA,
    "params": {k: enc(v) for k, v in params.items()},
    "real": enc(real),
    "fake": enc(fake),
    "alpha": enc(alpha),
    "input_grad": enc(g),
    "penalty": penalty.item(),
    "loss": loss.item(),
    "grads": {k: enc(v.grad) for k, v in p.items()},
}
os.makedirs(OUT, exist_ok=True)
with open(os.path.join(OUT, "wgan_gp.json"), "w") as f:
    json.dump(out, f)
print("wrote wgan_gp.json: loss", loss.item(), "penalty", penalty.item())
