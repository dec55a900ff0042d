#!/usr/bin/python3
"""Generates the torch 1.13 answers for Tensor::index / index_put_ (tests/tensor_index_test.cpp):

    /usr/bin/python3 tests/golden/gen_tensor_index.py

writes tests/data/golden/tensor_index.json (inputs, results, gradients) and
tests/golden/tensor_index_cases.inc (each expression spelled in C++, LibTorch style, so the test
compiles the very expressions a user writes). Both are committed; the test never runs Python.

A case is {"name", "kind": "index"|"put", "x", "tensors" (index tensors, C++ c.t(k)), "value"
(put: a tensor or a number), "out" (index: x[...]; put: x after x[...] = value), "view" (index:
torch's result shares x's storage), "filled" (views: x after x[...].fill_(FILL)), "w" (weights
of the loss sum(out * w)), "grad_x", "grad_value" (gradients of that loss; null when x is not
floating)}. Tensors are {"dtype", "shape", "data"} (row-major), as make_golden.py writes them.
"""
import json
import os
import shutil
import subprocess

import torch

torch.manual_seed(0)
HERE = os.path.dirname(os.path.abspath(__file__))
OUT_JSON = os.path.join(HERE, "..", "data", "golden", "tensor_index.json")
OUT_INC = os.path.join(HERE, "tensor_index_cases.inc")
FILL = -7.5

DT = {torch.float32: "float32", torch.float64: "float64", torch.int32: "int32",
      torch.int64: "int64", torch.uint8: "uint8", torch.bool: "bool"}


def enc(t):
    if not isinstance(t, torch.Tensor):
        return {"scalar": t, "kind": "bool" if isinstance(t, bool) else
                "int" if isinstance(t, int) else "float"}
    return {"dtype": DT[t.dtype], "shape": list(t.shape), "data": t.detach().reshape(-1).tolist()}


def rnd(*shape):
    return (torch.randn(shape) * 4).round() / 4  # quarters: exact in f32 and in JSON


class Idx:
    """An index tensor: `py` is what torch gets, `send` what the C++ side gets (torch 1.13 takes
    only i64 index tensors; Ember takes any integer dtype)."""

    def __init__(self, py, send=None):
        self.py, self.send = py, py if send is None else send


class Cpp:
    """An index spelled in C++ otherwise than the automatic spelling ("...", size_t(1), {0, 2})."""

    def __init__(self, py, spelling):
        self.py, self.spelling = py, spelling


def L(*values):  # C++ {0, 2}: an i64 index tensor
    return Cpp(torch.tensor(values, dtype=torch.long), "{" + ", ".join(map(str, values)) + "}")


def opt(v):
    return "None" if v is None else str(v)


def spell(items, tensors):
    parts = []
    for it in items:
        if isinstance(it, Cpp):
            parts.append(it.spelling)
        elif isinstance(it, (Idx, torch.Tensor)):
            tensors.append(it.send if isinstance(it, Idx) else it)
            parts.append(f"c.t({len(tensors) - 1})")
        elif it is None:
            parts.append("None")
        elif it is Ellipsis:
            parts.append("Ellipsis")
        elif isinstance(it, bool):
            parts.append("true" if it else "false")
        elif isinstance(it, int):
            parts.append(str(it))
        elif isinstance(it, slice):
            args = [it.start, it.stop, it.step]
            while args and args[-1] is None:
                args.pop()
            parts.append("Slice(" + ", ".join(opt(a) for a in args) + ")")
        else:
            raise TypeError(it)
    return "{" + ", ".join(parts) + "}"


def py_index(items):
    return tuple(it.py if isinstance(it, (Idx, Cpp)) else it for it in items)


cases, inc = [], []


def shares(a, b):
    return a.storage().data_ptr() == b.storage().data_ptr()


def get(name, x, *items, torch_fn=None):
    """x.index({items}); torch_fn computes torch's answer where torch 1.13 cannot (see header)."""
    tensors = []
    cpp = spell(items, tensors)
    idx = py_index(items)
    fn = torch_fn or (lambda t: t[idx])
    x = x.clone()
    case = {"name": name, "kind": "index", "x": enc(x), "tensors": [enc(t) for t in tensors]}
    out = fn(x)
    case["out"] = enc(out)
    case["view"] = shares(out, x) and torch_fn is None and out.numel() > 0
    if case["view"]:
        xf = x.clone()
        fn(xf).fill_(FILL)
        case["filled"] = enc(xf)
    if x.is_floating_point():
        xg = x.clone().requires_grad_()
        o = fn(xg)
        w = rnd(*o.shape)
        (o * w).sum().backward()
        case["w"] = enc(w)
        case["grad_x"] = enc(xg.grad if xg.grad is not None else torch.zeros_like(x))
    cases.append(case)
    inc.append(f"EMBER_INDEX_CASE({name}, x.index({cpp}))")


def put(name, x, items, value, cpp_value=None, torch_fn=None, cpp=None):
    """y = x.clone(); y.index_put_({items}, value). cpp / torch_fn override the expression."""
    tensors = []
    spelled = spell(items, tensors)
    idx = py_index(items)
    if cpp_value is None:
        cpp_value = "v" if isinstance(value, torch.Tensor) else repr(value).replace("True", "true").replace("False", "false")

    def default(y, v):
        y[idx] = v
    fn = torch_fn or default
    case = {"name": name, "kind": "put", "x": enc(x), "tensors": [enc(t) for t in tensors],
            "value": enc(value)}
    y = x.clone()
    fn(y, value)
    case["out"] = enc(y)
    if x.is_floating_point():
        xg = x.clone().requires_grad_()
        vt = isinstance(value, torch.Tensor) and value.is_floating_point()
        vg = value.clone().requires_grad_() if vt else value
        y = xg.clone()
        fn(y, vg)
        w = rnd(*y.shape)
        (y * w).sum().backward()
        case["w"] = enc(w)
        case["grad_x"] = enc(xg.grad)
        if vt:
            case["grad_value"] = enc(vg.grad)
    cases.append(case)
    expr = cpp or f"y.index_put_({spelled}, {cpp_value})"
    inc.append(f"EMBER_PUT_CASE({name}, {expr})")


x = rnd(4, 5, 6)
x2 = rnd(3, 4)
x1 = rnd(6)
x0 = torch.tensor(2.5)
x4 = rnd(2, 3, 4, 5)
xi = torch.arange(24, dtype=torch.long).reshape(4, 6) - 10
xb = torch.rand(3, 4) > 0.5
i = torch.tensor([2, 0, 3])
j = torch.tensor([4, 1, 0])
i21 = torch.tensor([[1], [3]])
m0 = torch.tensor([True, False, True, True])
m1 = torch.tensor([False, True, True, False, True])
m2 = torch.rand(4, 5) > 0.5
m3 = torch.rand(4, 5, 6) > 0.7
m56 = torch.rand(5, 6) > 0.5

# ---- basic: integers, slices, None, Ellipsis (views) ----
get("int_first", x, 1)
get("int_negative", x, -1)
get("int_two", x, 1, -2)
get("int_all_dims_0d", x, 3, 4, 5)
get("int_size_t", x, Cpp(1, "size_t(1)"), Cpp(-2, "int64_t(-2)"))
get("int_on_0d_tensor_index_is_select", x, torch.tensor(2), slice(None), torch.tensor(-1))
get("slice_all", x, slice(None))
get("slice_start", x, slice(1, None))
get("slice_stop_negative", x, slice(None, -1))
get("slice_step", x, slice(None, None, 2))
get("slice_1_none_2_last_dim", x, slice(None), slice(None), slice(1, None, 2))
get("slice_negative_start", x, slice(-3, None))
get("slice_clamped", x, slice(-100, 100))
get("slice_empty_reversed", x, slice(3, 1))
get("slice_past_end", x, slice(10, None))
get("slice_negative_bounds_step", x, slice(None), slice(-4, -1, 2))
get("slice_step_larger_than_dim", x, slice(None), slice(None), slice(1, None, 7))
get("none_first", x, None)
get("none_middle", x, slice(None), None, 1)
get("none_after_ellipsis", x, Ellipsis, None)
get("none_many", x, None, 0, None, slice(None), None)
get("ellipsis_alone", x, Ellipsis)
get("ellipsis_string", x, Cpp(Ellipsis, '"..."'), 0)
get("ellipsis_first", x, Ellipsis, 0)
get("ellipsis_middle_4d", x4, 0, Ellipsis, 1)
get("ellipsis_last", x, 1, Ellipsis)
get("ellipsis_covers_nothing", x, 0, 1, 2, Ellipsis)
get("ellipsis_slices_4d", x4, slice(None, None, 2), Ellipsis, slice(1, 3), None)
get("none_on_0d", x0, None)
get("ellipsis_on_0d", x0, Ellipsis)
get("int_on_1d", x1, -6)
get("int64_x_basic", xi, 1, slice(None, None, 3))

# ---- bools (advanced: a new dim of size 1 / 0, a copy) ----
get("bool_true", x, True)
get("bool_false", x, False)
get("bool_true_middle", x, slice(None), True)
get("bool_with_int_and_slice", x, 0, True, slice(None, None, 2))
get("bool_0d_tensor", x, torch.tensor(True))
get("bool_on_0d", x0, True)
get("bool_false_on_0d", x0, False)

# ---- integer index tensors ----
get("tensor_1d", x, i)
get("tensor_negative_values", x, torch.tensor([-1, 0, -4]))
get("tensor_2d", x, torch.tensor([[0, 1], [2, 3]]))
get("tensor_middle_dim", x, slice(None), torch.tensor([4, 0]))
get("tensor_last_dim_ellipsis", x, Ellipsis, torch.tensor([[5], [0]]))
get("tensor_duplicates", x, torch.tensor([1, 1, 1]))
get("tensor_braced_list", x, L(0, 2), 1)
get("tensor_int32_indices", x, Idx(i, i.int()))
get("tensor_empty", x, torch.tensor([], dtype=torch.long))
get("tensor_after_empty_slice", x, slice(1, 1), j)
get("tensor_2d_broadcast_2d_x", x2, torch.tensor([[0, 2], [1, 1]]), torch.tensor([[3], [0]]))
get("tensor_on_1d", x1, torch.tensor([[5, 0, 2]]))
get("tensor_int64_x", xi, torch.tensor([3, 0]), slice(1, None))

# ---- several advanced indices: adjacent ones replace their dims, separated ones go first ----
get("adv_adjacent_broadcast", x, slice(None), i21, j)
get("adv_separated_by_slice", x, i, slice(None), j)
get("adv_int_between_is_adjacent", x, i, 0, j)
get("adv_int_slice_tensor", x, 0, slice(None), j)
get("adv_tensor_slice_int", x, i, slice(None), 0)
get("adv_slice_int_tensor", x, slice(None), 0, j)
get("adv_separated_by_none", x, i, None, j)
get("adv_none_then_separated", x, None, i, slice(None), j)
get("adv_separated_by_ellipsis", x, i, Ellipsis, j)
get("adv_three_tensors", x, i21, torch.tensor([0, 2, 4]), torch.tensor([[5, 4, 3]]))
get("adv_tensor_true_adjacent", x, i, True)
get("adv_tensor_slice_true_separated", x, i, slice(None), True)
get("adv_4d_separated", x4, slice(None), torch.tensor([2, 0]), slice(None), torch.tensor([4, 1]))
get("adv_4d_adjacent_last", x4, Ellipsis, torch.tensor([[0], [3]]), torch.tensor([1, 2]))
get("adv_4d_ints_then_adjacent", x4, 0, slice(None), torch.tensor([3, 1]), 1)
get("adv_4d_int_separates_from_slice", x4, torch.tensor([1, 0]), 2, slice(None), torch.tensor([4, 4]))

# ---- masks ----
get("mask_1d", x, m0)
get("mask_2d", x, m2)
get("mask_3d", x, m3)
get("mask_middle_dim", x, slice(None), m1)
get("mask_last_two_dims", x, slice(None), m56)
get("mask_after_ellipsis", x, Ellipsis, torch.tensor([True, False, False, True, True, False]))
get("mask_and_tensor", x, m0, torch.tensor([4, 0, 2]))
get("mask_and_int", x, m0, 1)
get("mask_all_false", x, torch.zeros(4, dtype=torch.bool))
get("mask_uint8", x, torch.tensor([1, 0, 0, 1], dtype=torch.uint8))
get("mask_on_bool_x", xb, xb)
get("mask_on_int64_x", xi, torch.tensor([True, False, True, False]), slice(1, 4))
# torch 1.13 misplaces a basic index after a mask of rank > 1 (and refuses it): NumPy's rule.
get("mask_2d_then_slice_numpy_rule", x, m2, slice(None, 2), torch_fn=lambda t: t[m2][:, :2])

# ---- index_put_ ----
put("put_int_scalar", x, [1], 5.0)
put("put_column_broadcast", x, [slice(None), 0], rnd(6))
put("put_slice_step", x, [Ellipsis, slice(1, None, 2)], rnd(4, 5, 3))
put("put_none", x, [None, 0], rnd(1, 1, 6))
put("put_value_leading_ones_dropped", x, [0, 0], rnd(1, 1, 6))
put("put_int64_value_converted", x, [0], torch.arange(6, dtype=torch.long))
put("put_ellipsis_all", x, [Ellipsis], rnd(5, 1))
put("put_true", x, [True], rnd(6))
put("put_false_no_op", x, [False], rnd(6))
put("put_tensor_rows", x, [i], rnd(3, 5, 6))
put("put_tensor_broadcast_value", x, [i], rnd(5, 1))
put("put_duplicates_last_wins", x, [torch.tensor([1, 3, 1])], rnd(3, 1, 6))
put("put_separated", x, [i, slice(None), j], rnd(3, 5))
put("put_adjacent", x, [slice(None), i21, j], rnd(4, 2, 3))
put("put_int_between", x, [i, 0, j], rnd(3))
put("put_int_slice_tensor", x, [0, slice(None), j], rnd(5, 3))
put("put_mask_2d", x, [m2], rnd(6))
put("put_mask_3d_scalar", x, [m3], 0.0)
put("put_mask_and_int", x, [m0, 1], rnd(1))
put("put_0d_value_tensor", x, [slice(None), i21, j], torch.tensor(3.25))
put("put_empty_index", x, [torch.tensor([], dtype=torch.long)], rnd(6))
put("put_into_view", x, [slice(1, None), torch.tensor([0, 2])], rnd(2, 5, 6),
    torch_fn=lambda y, v: y[1:].__setitem__(torch.tensor([0, 2]), v),
    cpp="y.index({Slice(1, None)}).index_put_({c.t(0)}, v)")
put("put_int64_x_scalar", xi, [torch.tensor([0, 2]), slice(None, 3)], 7)
put("put_int64_x_float_scalar_truncates", xi, [1], 2.75)
put("put_bool_x_mask", xb, [xb.logical_not()], True)
put("put_1d_tensor_2d", x1, [torch.tensor([[0, 5], [2, 2]])], rnd(2, 2))

json.dump(cases, open(OUT_JSON, "w"), separators=(",", ":"))
with open(OUT_INC, "w") as f:
    f.write("// Generated by tests/golden/gen_tensor_index.py (torch " + torch.__version__ +
            "); do not edit. The C++ spelling of each\n// case in tests/data/golden/tensor_index.json,"
            " in the same order: x (index) or y (index_put_) is the\n// case's x, v its value, c.t(k) its"
            " k-th index tensor.\n" + "\n".join(inc) + "\n")
if shutil.which("clang-format"):  # the repository's style (.clang-format at the root)
    subprocess.run(["clang-format", "-i", OUT_INC], check=True)
print(f"{len(cases)} cases ({sum(c['kind'] == 'index' for c in cases)} index, "
      f"{sum(c['kind'] == 'put' for c in cases)} index_put_)")
