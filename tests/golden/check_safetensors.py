#!/usr/bin/python3
"""Safetensors golden for tests/record_test.cpp, written WITHOUT Ember and without the
`safetensors` package (not in Debian 12): the format is produced here with json + struct, and the
tensor bytes come from PyTorch 1.13 tensors, so the file is what torch's own bytes look like.

    /usr/bin/python3 tests/golden/check_safetensors.py            # writes the golden file
    /usr/bin/python3 tests/golden/check_safetensors.py FILE...    # checks files Ember wrote

Writes tests/data/golden/safetensors_torch.safetensors laid out as the Python safetensors library
(0.3) lays out a file: 8-byte little-endian header length, compact JSON header with
"__metadata__" first and tensors ordered by dtype (the library's Dtype enum, widest first) then
name, header padded with spaces to a multiple of 8, tensor bytes back to back.
RecordTest (SafetensorsTest.ReadsTorchGolden / WritesTorchGoldenBytes) loads it and checks the
values below, and checks that Ember serialises the same tensors to the same bytes.

Check mode parses each FILE with json + struct only, rebuilds each tensor with torch.frombuffer
(raw struct unpacking for the unsigned types torch 1.13 lacks) and compares it to EXPECTED.
"""
import json
import os
import struct
import sys

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "golden",
                   "safetensors_torch.safetensors")

# name: (safetensors dtype, shape, values row-major)
EXPECTED = {
    "a.f32": ("F32", [2, 3], [-1.0, -0.5, 0.0, 0.5, 1.0, 1.5]),
    "b.f64": ("F64", [3], [1.0 / 3.0, -2.5, 1e300]),
    "c.f16": ("F16", [2, 2], [0.5, -1.25, 65504.0, 2.0 ** -14]),
    "d.bf16": ("BF16", [3], [1.0, -3.5, 0.0078125]),
    "e.i8": ("I8", [4], [-128, -1, 0, 127]),
    "f.i16": ("I16", [3], [-32768, 300, 32767]),
    "g.i32": ("I32", [3], [-2147483648, 7, 2147483647]),
    "h.i64": ("I64", [3], [-9223372036854775808, 42, 9223372036854775807]),
    "i.u8": ("U8", [3], [0, 200, 255]),
    "j.u16": ("U16", [2], [1, 65535]),
    "k.u32": ("U32", [2], [3, 4294967295]),
    "l.u64": ("U64", [2], [5, 18446744073709551615]),
    "m.bool": ("BOOL", [3], [True, False, True]),
    "n.empty": ("F32", [0, 3], []),
    "o.scalar": ("I64", [], [7]),
}
METADATA = {"format": "pt", "source": "tests/golden/check_safetensors.py"}

# The safetensors Dtype enum order (writer sorts by it, descending, then by name).
RANK = ["BOOL", "U8", "I8", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "F64", "I64", "U64"]
TORCH = {"F32": torch.float32, "F64": torch.float64, "F16": torch.float16,
         "BF16": torch.bfloat16, "I8": torch.int8, "I16": torch.int16, "I32": torch.int32,
         "I64": torch.int64, "U8": torch.uint8, "BOOL": torch.bool}
STRUCT = {"U16": "H", "U32": "I", "U64": "Q"}  # no torch dtype in 1.13
SIZE = {"F32": 4, "F64": 8, "F16": 2, "BF16": 2, "I8": 1, "I16": 2, "I32": 4, "I64": 8, "U8": 1,
        "U16": 2, "U32": 4, "U64": 8, "BOOL": 1}


def tensor_bytes(dtype, shape, values):
    if dtype in STRUCT:
        return struct.pack("<%d%s" % (len(values), STRUCT[dtype]), *values)
    t = torch.tensor(values, dtype=TORCH[dtype]).reshape(shape)
    if dtype == "BF16":  # numpy has no bfloat16: take the bits
        t = t.view(torch.int16)
    return t.contiguous().numpy().astype(t.numpy().dtype.newbyteorder("<")).tobytes()


def write(path):
    names = sorted(EXPECTED, key=lambda n: (-RANK.index(EXPECTED[n][0]), n))
    header = {"__metadata__": METADATA}
    data = b""
    for n in names:
        dtype, shape, values = EXPECTED[n]
        b = tensor_bytes(dtype, shape, values)
        header[n] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)
    print("wrote %s (%d bytes, %d tensors)" % (path, 8 + len(text) + len(data), len(names)))


def check(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    meta = header.pop("__metadata__", {})
    assert set(header) == set(EXPECTED), (sorted(header), sorted(EXPECTED))
    for name, (dtype, shape, values) in EXPECTED.items():
        e = header[name]
        assert e["dtype"] == dtype and e["shape"] == shape, (name, e)
        b, end = e["data_offsets"]
        chunk = data[b:end]
        assert len(chunk) == SIZE[dtype] * len(values), name
        if dtype in STRUCT:
            got = list(struct.unpack("<%d%s" % (len(values), STRUCT[dtype]), chunk))
            assert got == values, (name, got)
            continue
        if dtype == "BF16":
            t = torch.frombuffer(bytearray(chunk), dtype=torch.int16).view(torch.bfloat16) \
                if chunk else torch.empty(0, dtype=torch.bfloat16)
        else:
            t = torch.frombuffer(bytearray(chunk), dtype=TORCH[dtype]) if chunk else \
                torch.empty(0, dtype=TORCH[dtype])
        t = t.reshape(shape)
        want = torch.tensor(values, dtype=TORCH[dtype]).reshape(shape)
        assert torch.equal(t, want), (name, t, want)
    print("%s: OK (%d tensors, metadata %s)" % (path, len(EXPECTED), json.dumps(meta, sort_keys=True)))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        for p in sys.argv[1:]:
            check(p)
    else:
        write(OUT)
        check(OUT)
