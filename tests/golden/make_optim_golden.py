#!/usr/bin/python3
"""Generates tests/data/golden/optim.json: optimizer trajectories, learning-rate schedules and
gradient clipping computed by PyTorch 1.13, which tests/optim_test.cpp replays step by step.

Run with Debian's Python (torch 1.13 lives there, not in a pyenv python3 earlier on PATH):
    /usr/bin/python3 tests/golden/make_optim_golden.py

The problem: parameters W [2, 3], b [3] (and c [2], which the loss does not use, so its grad
stays None and every optimizer must skip it), all float64, with
    loss = sum((W * x - y)^2) + sum(sin(b))        (x [3] broadcast over W's rows)
Each optimizer case runs `steps` iterations of zero_grad / backward / step and records W and b
after every step. Options use Ember's field names (betas split into beta1, beta2).
Each scheduler case drives an SGD or Adam optimizer with two groups (lrs 0.1 and 0.05) and
records every group's lr (and momentum or beta1 for OneCycleLR) after construction and after
each step; ReduceLROnPlateau is fed a fixed metric sequence.
"""
import json
import math
import os

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "golden", "optim.json")

W0 = [[0.5, -0.3, 0.8], [-0.6, 0.2, 0.4]]
B0 = [0.1, -0.7, 1.3]
C0 = [0.25, -0.5]
X = [1.0, -2.0, 0.5]
Y = [[0.3, 0.1, -0.4], [0.2, -0.5, 0.6]]
STEPS = 10

OPTIMIZERS = {
    "SGD": torch.optim.SGD,
    "Adam": torch.optim.Adam,
    "AdamW": torch.optim.AdamW,
    "RMSprop": torch.optim.RMSprop,
    "Adagrad": torch.optim.Adagrad,
}


def torch_options(opts):
    """Ember field names -> torch keyword arguments."""
    out = dict(opts)
    if "beta1" in out or "beta2" in out:
        out["betas"] = (out.pop("beta1", 0.9), out.pop("beta2", 0.999))
    for flag in ("nesterov", "amsgrad", "centered", "maximize"):
        if flag in out:
            out[flag] = bool(out[flag])
    return out


def optimizer_case(name, optimizer, defaults, groups=None, steps=STEPS):
    """groups: list of (param names, options) or None for one group of W and b."""
    params = {
        "W": torch.tensor(W0, dtype=torch.float64, requires_grad=True),
        "b": torch.tensor(B0, dtype=torch.float64, requires_grad=True),
        "c": torch.tensor(C0, dtype=torch.float64, requires_grad=True),
    }
    if groups is None:
        groups = [(["W", "b"], {})]
    torch_groups = [dict(params=[params[n] for n in names], **torch_options(o)) for names, o in groups]
    opt = OPTIMIZERS[optimizer](torch_groups, **torch_options(defaults))
    x = torch.tensor(X, dtype=torch.float64)
    y = torch.tensor(Y, dtype=torch.float64)
    traj = {"W": [], "b": [], "c": []}
    for _ in range(steps):
        opt.zero_grad()
        loss = ((params["W"] * x - y) ** 2).sum() + torch.sin(params["b"]).sum()
        loss.backward()
        opt.step()
        for k in traj:
            traj[k].append(params[k].detach().reshape(-1).tolist())
    return {
        "name": name,
        "optimizer": optimizer,
        "defaults": defaults,
        "groups": [{"params": names, "options": o} for names, o in groups],
        "steps": steps,
        "expected": traj,
    }


def optimizer_cases():
    cases = []
    add = lambda *a, **k: cases.append(optimizer_case(*a, **k))
    add("sgd_plain", "SGD", {"lr": 0.05})
    add("sgd_momentum", "SGD", {"lr": 0.05, "momentum": 0.9})
    add("sgd_momentum_dampening_wd", "SGD", {"lr": 0.03, "momentum": 0.8, "dampening": 0.3, "weight_decay": 0.1})
    add("sgd_nesterov", "SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": 1})
    add("sgd_nesterov_wd_maximize", "SGD", {"lr": 0.01, "momentum": 0.5, "nesterov": 1, "weight_decay": 0.05, "maximize": 1})
    add("sgd_two_groups", "SGD", {"lr": 0.05, "momentum": 0.9},
        [(["W"], {}), (["b", "c"], {"lr": 0.2, "nesterov": 1})])
    add("adam_default", "Adam", {"lr": 0.1})
    add("adam_betas_eps", "Adam", {"lr": 0.05, "beta1": 0.8, "beta2": 0.95, "eps": 1e-3})
    add("adam_weight_decay", "Adam", {"lr": 0.05, "weight_decay": 0.1})
    add("adam_amsgrad", "Adam", {"lr": 0.1, "amsgrad": 1})
    add("adam_amsgrad_wd_maximize", "Adam", {"lr": 0.02, "amsgrad": 1, "weight_decay": 0.2, "maximize": 1})
    add("adam_two_groups", "Adam", {"lr": 0.1},
        [(["W", "c"], {"lr": 0.01, "amsgrad": 1}), (["b"], {"beta1": 0.5})])
    add("adamw_default", "AdamW", {"lr": 0.1})
    add("adamw_wd_amsgrad", "AdamW", {"lr": 0.05, "weight_decay": 0.3, "amsgrad": 1})
    add("adamw_maximize", "AdamW", {"lr": 0.05, "maximize": 1, "beta2": 0.9})
    add("adamw_two_groups", "AdamW", {"lr": 0.05}, [(["W"], {"weight_decay": 0.0}), (["b"], {"lr": 0.2})])
    add("rmsprop_default", "RMSprop", {"lr": 0.01})
    add("rmsprop_momentum", "RMSprop", {"lr": 0.01, "momentum": 0.9, "alpha": 0.9})
    add("rmsprop_centered", "RMSprop", {"lr": 0.01, "centered": 1})
    add("rmsprop_centered_momentum_wd", "RMSprop", {"lr": 0.005, "centered": 1, "momentum": 0.7, "weight_decay": 0.1, "eps": 1e-4})
    add("rmsprop_maximize", "RMSprop", {"lr": 0.01, "maximize": 1})
    add("rmsprop_two_groups", "RMSprop", {"lr": 0.01}, [(["W"], {"momentum": 0.5}), (["b"], {"lr": 0.03, "centered": 1})])
    add("adagrad_default", "Adagrad", {"lr": 0.1})
    add("adagrad_lr_decay_wd", "Adagrad", {"lr": 0.1, "lr_decay": 0.05, "weight_decay": 0.1})
    add("adagrad_initial_acc_eps", "Adagrad", {"lr": 0.2, "initial_accumulator_value": 0.5, "eps": 1e-3})
    add("adagrad_maximize", "Adagrad", {"lr": 0.05, "maximize": 1})
    add("adagrad_two_groups", "Adagrad", {"lr": 0.1}, [(["W"], {}), (["b", "c"], {"lr": 0.3, "lr_decay": 0.1})])
    return cases


def make_scheduler(opt, spec):
    S = torch.optim.lr_scheduler
    t = spec["type"]
    if t == "StepLR":
        return S.StepLR(opt, spec["step_size"], spec.get("gamma", 0.1))
    if t == "MultiStepLR":
        return S.MultiStepLR(opt, spec["milestones"], spec.get("gamma", 0.1))
    if t == "ExponentialLR":
        return S.ExponentialLR(opt, spec["gamma"])
    if t == "ConstantLR":
        return S.ConstantLR(opt, spec["factor"], spec["total_iters"])
    if t == "LinearLR":
        return S.LinearLR(opt, spec["start_factor"], spec["end_factor"], spec["total_iters"])
    if t == "CosineAnnealingLR":
        return S.CosineAnnealingLR(opt, spec["T_max"], spec.get("eta_min", 0.0))
    if t == "CosineAnnealingWarmRestarts":
        return S.CosineAnnealingWarmRestarts(opt, spec["T_0"], spec.get("T_mult", 1), spec.get("eta_min", 0.0))
    if t == "OneCycleLR":
        kw = {k: v for k, v in spec.items() if k not in ("type", "max_lr", "total_steps")}
        return S.OneCycleLR(opt, spec["max_lr"], spec["total_steps"], **kw)
    if t == "ReduceLROnPlateau":
        kw = {k: v for k, v in spec.items() if k != "type"}
        return S.ReduceLROnPlateau(opt, **kw)
    if t == "SequentialLR":
        subs = [make_scheduler(opt, s) for s in spec["schedulers"]]
        return S.SequentialLR(opt, subs, spec["milestones"])
    raise ValueError(t)


def scheduler_case(name, spec, optimizer="SGD", defaults=None, steps=30, metrics=None):
    defaults = defaults or {"lr": 0.1}
    a = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    b = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    opt = OPTIMIZERS[optimizer]([{"params": [a]}, {"params": [b], "lr": 0.05}], **torch_options(defaults))
    sched = make_scheduler(opt, spec)
    key = "betas" if optimizer in ("Adam", "AdamW") else "momentum"

    def momenta():
        return [g[key][0] if key == "betas" else g[key] for g in opt.param_groups]

    lrs, moms = [[g["lr"] for g in opt.param_groups]], [momenta()]
    for i in range(steps):
        opt.step()  # no grads: a no-op that keeps torch from warning about the call order
        if metrics is not None:
            sched.step(metrics[i])
        else:
            sched.step()
        lrs.append([g["lr"] for g in opt.param_groups])
        moms.append(momenta())
    case = {"name": name, "optimizer": optimizer, "defaults": defaults, "group_lrs": [0.1, 0.05],
            "scheduler": spec, "steps": steps, "lrs": lrs}
    if spec["type"] == "OneCycleLR":
        case["momentum"] = moms
    if metrics is not None:
        case["metrics"] = metrics
    return case


def scheduler_cases():
    m1 = [1.0, 0.9, 0.95, 0.95, 0.95, 0.8, 0.85, 0.85, 0.85, 0.85, 0.7, 0.7, 0.7, 0.7, 0.7,
          0.69995, 0.7, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
    m2 = [0.1, 0.2, 0.22, 0.21, 0.3, 0.3, 0.34, 0.3, 0.3, 0.3, 0.5, 0.5, 0.5, 0.5, 0.56,
          0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
    return [
        scheduler_case("step", {"type": "StepLR", "step_size": 7, "gamma": 0.5}),
        scheduler_case("multistep", {"type": "MultiStepLR", "milestones": [5, 12, 12, 20], "gamma": 0.3}),
        scheduler_case("exponential", {"type": "ExponentialLR", "gamma": 0.9}),
        scheduler_case("constant", {"type": "ConstantLR", "factor": 0.5, "total_iters": 4}),
        scheduler_case("linear_warmup", {"type": "LinearLR", "start_factor": 0.1, "end_factor": 1.0, "total_iters": 8}),
        scheduler_case("linear_decay", {"type": "LinearLR", "start_factor": 1.0, "end_factor": 0.2, "total_iters": 10}),
        scheduler_case("cosine_past_tmax", {"type": "CosineAnnealingLR", "T_max": 10, "eta_min": 0.001}),
        scheduler_case("cosine_full", {"type": "CosineAnnealingLR", "T_max": 30}),
        scheduler_case("warm_restarts", {"type": "CosineAnnealingWarmRestarts", "T_0": 5, "eta_min": 0.01}),
        scheduler_case("warm_restarts_tmult", {"type": "CosineAnnealingWarmRestarts", "T_0": 3, "T_mult": 2}),
        scheduler_case("onecycle_sgd_cos", {"type": "OneCycleLR", "max_lr": [1.0, 0.5], "total_steps": 30},
                       defaults={"lr": 0.1, "momentum": 0.9}),
        scheduler_case("onecycle_adam_linear_three_phase",
                       {"type": "OneCycleLR", "max_lr": 0.02, "total_steps": 30, "pct_start": 0.25,
                        "anneal_strategy": "linear", "three_phase": True, "div_factor": 10.0,
                        "final_div_factor": 100.0, "base_momentum": 0.8, "max_momentum": 0.9},
                       optimizer="Adam", defaults={"lr": 0.1}),
        scheduler_case("onecycle_no_momentum",
                       {"type": "OneCycleLR", "max_lr": 0.3, "total_steps": 40, "cycle_momentum": False},
                       defaults={"lr": 0.1, "momentum": 0.9}),
        scheduler_case("plateau_min_rel", {"type": "ReduceLROnPlateau", "factor": 0.5, "patience": 2, "cooldown": 1},
                       metrics=m1),
        scheduler_case("plateau_max_abs_min_lr",
                       {"type": "ReduceLROnPlateau", "mode": "max", "threshold_mode": "abs", "threshold": 0.05,
                        "patience": 1, "factor": 0.3, "min_lr": [0.02, 0.001]}, metrics=m2),
        scheduler_case("plateau_eps", {"type": "ReduceLROnPlateau", "factor": 0.9, "patience": 0, "min_lr": 0.04,
                                       "eps": 0.006}, metrics=m1),
        scheduler_case("sequential_warmup_cosine",
                       {"type": "SequentialLR", "milestones": [5],
                        "schedulers": [{"type": "LinearLR", "start_factor": 0.1, "end_factor": 1.0, "total_iters": 5},
                                       {"type": "CosineAnnealingLR", "T_max": 25}]}),
        scheduler_case("sequential_constant_exponential",
                       {"type": "SequentialLR", "milestones": [2],
                        "schedulers": [{"type": "ConstantLR", "factor": 0.1, "total_iters": 2},
                                       {"type": "ExponentialLR", "gamma": 0.9}]}),
        scheduler_case("sequential_three",
                       {"type": "SequentialLR", "milestones": [4, 15],
                        "schedulers": [{"type": "LinearLR", "start_factor": 0.25, "end_factor": 1.0, "total_iters": 4},
                                       {"type": "StepLR", "step_size": 3, "gamma": 0.5},
                                       {"type": "MultiStepLR", "milestones": [2, 6], "gamma": 0.1}]}),
    ]


def clip_cases():
    g1 = [[0.5, -1.5, 2.0], [3.0, -0.25, 1.0]]
    g2 = [-4.0, 0.75]
    cases = []
    for norm_type, max_norm in [(2.0, 1.0), (2.0, 100.0), (1.0, 2.5), (3.0, 1.5), (float("inf"), 1.0), (0.5, 10.0)]:
        a = torch.zeros(2, 3, dtype=torch.float64, requires_grad=True)
        b = torch.zeros(2, dtype=torch.float64, requires_grad=True)
        c = torch.zeros(4, dtype=torch.float64, requires_grad=True)  # no grad: skipped
        a.grad = torch.tensor(g1, dtype=torch.float64)
        b.grad = torch.tensor(g2, dtype=torch.float64)
        total = torch.nn.utils.clip_grad_norm_([a, b, c], max_norm, norm_type)
        cases.append({"norm_type": "inf" if math.isinf(norm_type) else norm_type, "max_norm": max_norm,
                      "total_norm": total.item(), "a": a.grad.reshape(-1).tolist(), "b": b.grad.tolist()})
    return {"grads": {"a": sum(g1, []), "b": g2}, "cases": cases}


def main():
    data = {
        "problem": {"W": sum(W0, []), "b": B0, "c": C0, "x": X, "y": sum(Y, [])},
        "optimizers": optimizer_cases(),
        "schedulers": scheduler_cases(),
        "clip_grad_norm": clip_cases(),
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(data, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {OUT}: {len(data['optimizers'])} optimizer cases, {len(data['schedulers'])} scheduler cases")


if __name__ == "__main__":
    main()
