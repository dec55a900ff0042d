#!/usr/bin/python3
"""Exports real models to ONNX with fixed random weights, plus an input and torch's output, for
tests/onnx_real_models_test.cpp and bench/onnx_vs_ort.sh.

Usage: /usr/bin/python3 scripts/onnx_models.py OUT_DIR [NAME ...]
Writes OUT_DIR/NAME/{model.onnx, input_N.npy (one per graph input, in order), output_0.npy},
then OUT_DIR/COMPLETE.
Needs Debian's python3-torch and python3-torchvision (torch 1.13, torchvision 0.14).
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torchvision


class Encoder(nn.Module):
    """A small BERT-style encoder: token + position embeddings, 2 post-norm layers of 4-head
    self-attention with a padding mask (a -inf bias where mask == 0) and a GELU FFN, then the
    first token's features through a classifier."""

    def __init__(self, vocab=1000, d=128, heads=4, ffn=512, layers=2, seq=32, classes=3):
        super().__init__()
        self.heads = heads
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(1, seq, d) * 0.02)
        self.layers = nn.ModuleList()
        for _ in range(layers):
            self.layers.append(nn.ModuleDict({
                'qkv': nn.Linear(d, 3 * d), 'out': nn.Linear(d, d), 'ln1': nn.LayerNorm(d),
                'ff1': nn.Linear(d, ffn), 'ff2': nn.Linear(ffn, d), 'ln2': nn.LayerNorm(d)}))
        self.head = nn.Linear(d, classes)

    def forward(self, ids, mask):
        b, s = ids.shape
        x = self.tok(ids) + self.pos[:, :s]
        bias = (1.0 - mask[:, None, None, :].float()) * -10000.0
        for l in self.layers:
            q, k, v = l['qkv'](x).chunk(3, dim=-1)
            hd = q.shape[-1] // self.heads
            split = lambda t: t.reshape(b, s, self.heads, hd).transpose(1, 2)
            q, k, v = split(q), split(k), split(v)
            att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(hd) + bias, dim=-1)
            y = (att @ v).transpose(1, 2).reshape(b, s, -1)
            x = l['ln1'](x + l['out'](y))
            x = l['ln2'](x + l['ff2'](nn.functional.gelu(l['ff1'](x))))
        return self.head(x[:, 0])


class LstmClassifier(nn.Module):
    def __init__(self, vocab=500, d=64, hidden=96, classes=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.lstm = nn.LSTM(d, hidden, num_layers=1, batch_first=True)
        self.fc = nn.Linear(hidden, classes)

    def forward(self, ids):
        y, _ = self.lstm(self.emb(ids))
        return self.fc(y[:, -1])


def image(batch=1, size=224):
    return (torch.randn(batch, 3, size, size),)


def tokens():
    ids = torch.randint(0, 1000, (2, 32))
    mask = torch.ones(2, 32, dtype=torch.int64)
    mask[1, 20:] = 0  # the second sequence is padded
    return ids, mask


MODELS = {
    'resnet18': (lambda: torchvision.models.resnet18(), image, 13),
    'resnet50': (lambda: torchvision.models.resnet50(), image, 13),
    'mobilenet_v2': (lambda: torchvision.models.mobilenet_v2(), image, 13),
    'squeezenet': (lambda: torchvision.models.squeezenet1_1(), image, 13),
    'efficientnet_b0': (lambda: torchvision.models.efficientnet_b0(), image, 13),
    'bert_encoder': (Encoder, tokens, 14),
    'lstm_classifier': (LstmClassifier, lambda: (torch.randint(0, 500, (3, 12)),), 13),
}


def export(name, out_dir):
    make, inputs, opset = MODELS[name]
    torch.manual_seed(0)
    model = make().eval()
    with torch.no_grad():
        # Non-trivial batch_norm statistics, as a trained model has.
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
        xs = inputs()
        y = model(*xs)
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    names = ['input_%d' % i for i in range(len(xs))]
    torch.onnx.export(model, xs, os.path.join(d, 'model.onnx'), input_names=names,
                      output_names=['output_0'], opset_version=opset,
                      dynamic_axes={n: {0: 'batch'} for n in names + ['output_0']})
    for n, x in zip(names, xs):
        np.save(os.path.join(d, n + '.npy'), x.numpy())
    np.save(os.path.join(d, 'output_0.npy'), y.numpy())
    print('exported', name, 'to', d)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    names = sys.argv[2:] or list(MODELS)
    for n in names:
        if n not in MODELS:
            sys.exit('unknown model %s (known: %s)' % (n, ', '.join(MODELS)))
        export(n, sys.argv[1])
    with open(os.path.join(sys.argv[1], 'COMPLETE'), 'w') as f:  # every model written
        f.write(' '.join(names) + '\n')


if __name__ == '__main__':
    main()
