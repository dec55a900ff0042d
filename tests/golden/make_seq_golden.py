#!/usr/bin/python3
"""Generates tests/data/golden/seq.json: sequence modules (MultiheadAttention, Transformer
encoder/decoder layers and stacks, LSTM, GRU, rotary embeddings) computed by PyTorch 1.13, which
tests/seq_modules_test.cpp replays through Ember's modules.

Run with Debian's Python (torch 1.13 lives there, not in a pyenv python3 earlier on PATH):
    /usr/bin/python3 tests/golden/make_seq_golden.py

Each module case is {"name", "type", "config", "state_dict", "inputs", "outputs", "num_params",
"num_tensors"}. Modules are built in float64 with a fixed seed, then every parameter gets extra
noise (so zero biases, unit norm weights and torch's identical deep-copied transformer layers
become distinct values the test can tell apart), and run in eval mode with grad enabled (which
keeps torch 1.13 on its reference path, not the fused/nested-tensor fast path). The C++ side
builds the module from "config", loads "state_dict" with load_state_dict (so every key name and
shape must match torch's) and compares the outputs. Tensors are {"shape", "data"} (row-major);
bool masks are {"shape", "data", "dtype": "bool"}; an absent input is null.
"""
import json
import math
import os

import torch
import torch.nn as nn

torch.manual_seed(0)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "golden", "seq.json")
DT = torch.float64


def enc(t):
    if t is None:
        return None
    t = t.detach()
    out = {"shape": list(t.shape), "data": t.reshape(-1).tolist()}
    if t.dtype == torch.bool:
        out["dtype"] = "bool"
        out["data"] = [int(v) for v in out["data"]]
    return out


def perturb(m):
    with torch.no_grad():
        for p in m.parameters():
            p.add_(torch.randn_like(p) * 0.1)


def module_case(name, typ, config, m, inputs, outputs):
    return {
        "name": name,
        "type": typ,
        "config": config,
        "state_dict": {k: enc(v) for k, v in m.state_dict().items()},
        "inputs": {k: enc(v) for k, v in inputs.items()},
        "outputs": {k: enc(v) for k, v in outputs.items()},
        "num_params": sum(p.numel() for p in m.parameters()),
        "num_tensors": len(list(m.parameters())),
    }


def rnd(*shape):
    return torch.randn(*shape, dtype=DT)


def causal_bool(n):
    return torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)  # true = masked (torch MHA)


cases = []

# ---- MultiheadAttention ----
def mha(name, cfg, q, k, v, kpm=None, attn_mask=None, need_weights=True, average=True):
    m = nn.MultiheadAttention(cfg["embed_dim"], cfg["num_heads"], dropout=cfg.get("dropout", 0.0),
                              bias=cfg.get("bias", True), kdim=cfg.get("kdim"),
                              vdim=cfg.get("vdim"), batch_first=cfg.get("batch_first", False),
                              dtype=DT)
    perturb(m)
    m.eval()
    out, w = m(q, k, v, key_padding_mask=kpm, need_weights=need_weights, attn_mask=attn_mask,
               average_attn_weights=average)
    cfg = dict(cfg, need_weights=need_weights, average_attn_weights=average)
    cases.append(module_case(name, "MultiheadAttention", cfg, m,
                             {"query": q, "key": k, "value": v, "key_padding_mask": kpm,
                              "attn_mask": attn_mask},
                             {"output": out, "weights": w}))


kpm = torch.tensor([[False, False, True, False], [False, False, False, True]])
mha("mha_cross_float_mask_kpm", {"embed_dim": 8, "num_heads": 2}, rnd(3, 2, 8), rnd(4, 2, 8),
    rnd(4, 2, 8), kpm=kpm, attn_mask=rnd(3, 4))
x = rnd(2, 4, 8)
mha("mha_self_causal_per_head", {"embed_dim": 8, "num_heads": 4, "batch_first": True}, x, x, x,
    attn_mask=causal_bool(4), average=False)
mha("mha_kdim_vdim_nobias_3d_mask",
    {"embed_dim": 6, "num_heads": 3, "kdim": 5, "vdim": 7, "bias": False},
    rnd(3, 2, 6), rnd(4, 2, 5), rnd(4, 2, 7), attn_mask=rnd(6, 3, 4))
mha("mha_unbatched_kpm", {"embed_dim": 4, "num_heads": 2}, rnd(3, 4), rnd(5, 4), rnd(5, 4),
    kpm=torch.tensor([False, True, False, False, True]))
x = rnd(2, 3, 8)
mha("mha_no_weights_bool_kpm_and_mask", {"embed_dim": 8, "num_heads": 2, "batch_first": True},
    x, x, x, kpm=torch.tensor([[False, False, True], [False, False, False]]),
    attn_mask=causal_bool(3), need_weights=False)


# ---- Transformer ----
def layer_kwargs(cfg):
    return dict(d_model=cfg["d_model"], nhead=cfg["nhead"],
                dim_feedforward=cfg["dim_feedforward"], dropout=cfg["dropout"],
                activation=cfg["activation"], layer_norm_eps=cfg["layer_norm_eps"],
                batch_first=cfg["batch_first"], norm_first=cfg["norm_first"], dtype=DT)


def enc_layer_cfg(activation, batch_first, norm_first):
    return {"d_model": 8, "nhead": 2, "dim_feedforward": 16, "dropout": 0.1,
            "activation": activation, "layer_norm_eps": 1e-5, "batch_first": batch_first,
            "norm_first": norm_first}


def encoder(name, cfg, num_layers=0, final_norm=False, src_mask=None, kpm=None, L=4, N=2):
    layer = nn.TransformerEncoderLayer(**layer_kwargs(cfg))
    if num_layers:
        norm = nn.LayerNorm(cfg["d_model"], eps=cfg["layer_norm_eps"], dtype=DT) if final_norm else None
        m = nn.TransformerEncoder(layer, num_layers, norm=norm)
        typ = "TransformerEncoder"
        cfg = dict(cfg, num_layers=num_layers, final_norm=final_norm)
    else:
        m, typ = layer, "TransformerEncoderLayer"
    perturb(m)
    m.eval()
    src = rnd(N, L, cfg["d_model"]) if cfg["batch_first"] else rnd(L, N, cfg["d_model"])
    out = m(src, mask=src_mask, src_key_padding_mask=kpm) if num_layers else \
        m(src, src_mask=src_mask, src_key_padding_mask=kpm)
    cases.append(module_case(name, typ, cfg, m,
                             {"src": src, "src_mask": src_mask, "src_key_padding_mask": kpm},
                             {"output": out}))


kpm4 = torch.tensor([[False, False, False, True], [False, True, False, False]])
encoder("encoder_layer_relu_post_norm", enc_layer_cfg("relu", True, False),
        src_mask=causal_bool(4), kpm=kpm4)
encoder("encoder_layer_gelu_norm_first", enc_layer_cfg("gelu", False, True), src_mask=rnd(4, 4))
encoder("encoder_2_layers_final_norm", enc_layer_cfg("relu", True, False), num_layers=2,
        final_norm=True, kpm=kpm4)
encoder("encoder_2_layers_gelu_norm_first", enc_layer_cfg("gelu", False, True), num_layers=2,
        src_mask=causal_bool(4))


def decoder(name, cfg, num_layers=0, final_norm=False, tgt_mask=None, memory_mask=None,
            tgt_kpm=None, memory_kpm=None, T=3, S=4, N=2):
    layer = nn.TransformerDecoderLayer(**layer_kwargs(cfg))
    if num_layers:
        norm = nn.LayerNorm(cfg["d_model"], eps=cfg["layer_norm_eps"], dtype=DT) if final_norm else None
        m = nn.TransformerDecoder(layer, num_layers, norm=norm)
        typ = "TransformerDecoder"
        cfg = dict(cfg, num_layers=num_layers, final_norm=final_norm)
    else:
        m, typ = layer, "TransformerDecoderLayer"
    perturb(m)
    m.eval()
    d = cfg["d_model"]
    tgt = rnd(N, T, d) if cfg["batch_first"] else rnd(T, N, d)
    memory = rnd(N, S, d) if cfg["batch_first"] else rnd(S, N, d)
    out = m(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_kpm, memory_key_padding_mask=memory_kpm)
    cases.append(module_case(name, typ, cfg, m,
                             {"tgt": tgt, "memory": memory, "tgt_mask": tgt_mask,
                              "memory_mask": memory_mask, "tgt_key_padding_mask": tgt_kpm,
                              "memory_key_padding_mask": memory_kpm},
                             {"output": out}))


decoder("decoder_layer_relu_post_norm", enc_layer_cfg("relu", False, False), tgt_mask=causal_bool(3),
        memory_kpm=kpm4)
decoder("decoder_layer_gelu_norm_first", enc_layer_cfg("gelu", True, True), memory_mask=rnd(3, 4),
        tgt_kpm=torch.tensor([[False, False, True], [False, False, False]]))
decoder("decoder_2_layers_final_norm", enc_layer_cfg("relu", True, False), num_layers=2,
        final_norm=True, tgt_mask=causal_bool(3), memory_kpm=kpm4)


# ---- LSTM / GRU ----
def rnn(name, typ, cfg, x, h0=None, c0=None):
    cls = nn.LSTM if typ == "LSTM" else nn.GRU
    m = cls(cfg["input_size"], cfg["hidden_size"], num_layers=cfg["num_layers"], bias=cfg["bias"],
            batch_first=cfg["batch_first"], dropout=cfg["dropout"],
            bidirectional=cfg["bidirectional"], dtype=DT)
    perturb(m)
    m.eval()
    if typ == "LSTM":
        out, (hn, cn) = m(x, None if h0 is None else (h0, c0))
        outputs = {"output": out, "h_n": hn, "c_n": cn}
    else:
        out, hn = m(x, h0)
        outputs = {"output": out, "h_n": hn}
    cases.append(module_case(name, typ, cfg, m, {"input": x, "h0": h0, "c0": c0}, outputs))


def rnn_cfg(I, H, layers, bias, batch_first, bidirectional, dropout=0.0):
    return {"input_size": I, "hidden_size": H, "num_layers": layers, "bias": bias,
            "batch_first": batch_first, "dropout": dropout, "bidirectional": bidirectional}


# 2 layers, bidirectional, batch_first, initial states [D * layers, N, H]; input [N=2, L=5, I=3].
rnn("lstm_2_layers_bidir_batch_first_init", "LSTM", rnn_cfg(3, 4, 2, True, True, True, 0.3),
    rnd(2, 5, 3), rnd(4, 2, 4), rnd(4, 2, 4))
rnn("lstm_1_layer_no_bias_seq_first", "LSTM", rnn_cfg(3, 5, 1, False, False, False), rnd(4, 2, 3))
rnn("lstm_unbatched_bidir", "LSTM", rnn_cfg(2, 3, 1, True, False, True), rnd(4, 2), rnd(2, 3),
    rnd(2, 3))
rnn("lstm_3_layers_seq_first_init", "LSTM", rnn_cfg(4, 3, 3, True, False, False), rnd(3, 2, 4),
    rnd(3, 2, 3), rnd(3, 2, 3))
rnn("gru_2_layers_bidir_batch_first_init", "GRU", rnn_cfg(3, 4, 2, True, True, True, 0.3),
    rnd(2, 5, 3), rnd(4, 2, 4))
rnn("gru_1_layer_seq_first", "GRU", rnn_cfg(3, 5, 1, True, False, False), rnd(4, 2, 3))
rnn("gru_unbatched_no_bias_bidir", "GRU", rnn_cfg(2, 3, 2, False, False, True), rnd(4, 2),
    rnd(4, 3))


# ---- Rotary embeddings (GPT-NeoX / LLaMA rotate-half, written out as in GPT-NeoX) ----
def rope_reference(x, rotary_dim, offset, base=10000.0):
    L = x.shape[-2]
    inv_freq = 1.0 / (base ** (torch.arange(0, rotary_dim, 2, dtype=DT) / rotary_dim))
    t = torch.arange(offset, offset + L, dtype=DT)
    freqs = torch.einsum("i,j->ij", t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    xr, xp = x[..., :rotary_dim], x[..., rotary_dim:]
    x1, x2 = xr[..., : rotary_dim // 2], xr[..., rotary_dim // 2:]
    rot = torch.cat((-x2, x1), dim=-1)
    return torch.cat((xr * cos + rot * sin, xp), dim=-1)


def rope(name, dim, head_dim, offset, base=10000.0):
    q, k = rnd(2, 2, 5, head_dim), rnd(2, 2, 5, head_dim)
    cases.append({"name": name, "type": "RotaryEmbedding",
                  "config": {"dim": dim, "base": base, "offset": offset},
                  "state_dict": {}, "num_params": 0, "num_tensors": 0,
                  "inputs": {"q": enc(q), "k": enc(k)},
                  "outputs": {"q": enc(rope_reference(q, dim, offset, base)),
                              "k": enc(rope_reference(k, dim, offset, base))}})


rope("rope_full_offset_3", 8, 8, 3)
rope("rope_partial_4_of_8", 4, 8, 0)
rope("rope_base_500", 6, 6, 1, base=500.0)

with open(OUT, "w") as f:
    json.dump({"torch_version": torch.__version__, "cases": cases}, f, separators=(",", ":"))
print(f"wrote {len(cases)} cases to {os.path.normpath(OUT)}")
