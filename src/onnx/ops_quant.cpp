// ONNX ops: linear quantization (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear), the
// integer / quantized products (MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv), Einsum
// and Det. (CastLike is ops_shape.cpp's, beside Cast.)
// Integer products are exact: matrix products accumulate in int32 (ONNX lets only the 32-bit
// accumulator wrap), convolutions (float only in Ember) in f64, or f32 on a device without f64
// (exact while the sums stay below 2^24).
#include <algorithm>
#include <cctype>
#include <cmath>

#include "onnx/ops.h"
#include "onnx/proto.h"

namespace ember::onnx::detail {
namespace {

using P = ::onnx::TensorProto;

// The float type integer sums are exact in on `d`.
DType exact_float(const Device& d) {
  return supports_dtype(d, DType::f64) ? DType::f64 : DType::f32;
}

// Saturation bounds of a quantized type (ONNX: uint8 [0, 255], int8 [-128, 127], 16-bit alike).
std::pair<double, double> saturation(DType t) {
  switch (t) {
    case DType::u8:
      return {0, 255};
    case DType::i8:
      return {-128, 127};
    case DType::u16:
      return {0, 65535};
    case DType::i16:
      return {-32768, 32767};
    default:
      return {-2147483648.0, 2147483647.0};  // int32 (QLinear outputs are 8-bit in practice)
  }
}

// "" when ONNX type `t` (0 = unknown) is a quantized type Ember has: 8 and 16-bit integers.
std::string quantized_type(int32_t t, const char* what) {
  if (t == 0 || t == P::UINT8 || t == P::INT8 || t == P::UINT16 || t == P::INT16) return "";
  return std::string(what) + " type " + onnx_type_name(t);
}

// A scale or zero point laid out to broadcast against x (ONNX 13+): a scalar or one-element
// tensor is per tensor; a 1-d tensor is per axis (its length x.size(axis)); with block_size
// (opset 21) a tensor of x's rank whose entries each cover block_size elements along axis.
Tensor per_axis(const Tensor& p, const Tensor& x, int64_t axis, int64_t block) {
  if (p.numel() == 1) return p.reshape({});
  if (block > 0) {
    Tensor idx = div(arange(x.size(axis), {DType::i64, p.device()}), Scalar(block), "floor");
    return index_select(p, axis, idx);
  }
  if (p.dim() != 1) return p;
  Shape s(size_t(x.dim()), 1);
  s[size_t(axis)] = p.size(0);
  return p.reshape(s);
}

// round half to even, + zero point, saturate, cast (the tail of every quantizing op).
Tensor saturate(const Tensor& v, const Tensor& zp, DType out) {
  Tensor q = round(v);
  if (zp.defined()) q = add(q, zp.to(q.dtype()));
  auto [lo, hi] = saturation(out);
  return clamp(q, Scalar(lo), Scalar(hi)).to(out);
}

Tensor input(const Tensors& in, size_t k) { return k < in.size() ? in[k] : Tensor(); }

// ---- QuantizeLinear / DequantizeLinear ----
std::string quantize_check(const Node& n) {
  std::string why = n.only_attrs({"axis", "saturate", "block_size", "output_dtype"}) +
                    quantized_type(n.input_type(2), "zero point");
  if (n.has("output_dtype") && n.i("output_dtype", 0) != 0)
    why += quantized_type(int32_t(n.i("output_dtype", 0)), "output_dtype");
  return why;
}

// y = saturate(round(x / y_scale) + y_zero_point), y of the zero point's type (uint8 without one,
// or output_dtype from opset 21).
Tensors quantize_linear(const Node& n, const Tensors& in) {
  const Tensor& x = in[0];
  const int64_t axis = wrap(n.i("axis", 1), x.dim()), block = n.i("block_size", 0);
  Tensor scale = per_axis(in[1], x, axis, block);
  Tensor zp = input(in, 2);
  DType out = DType::u8;
  if (zp.defined())
    out = zp.dtype();
  else if (n.i("output_dtype", 0) != 0)
    dtype_from_onnx(int32_t(n.i("output_dtype", 0)), out);
  if (zp.defined()) zp = per_axis(zp, x, axis, block);
  // The scale's type sets the precision of x / y_scale (ONNX 19+; f32 before).
  return {saturate(div(x.to(scale.dtype()), scale), zp, out)};
}

Tensors dequantize_linear(const Node& n, const Tensors& in) {
  const Tensor& x = in[0];
  const int64_t axis = wrap(n.i("axis", 1), x.dim()), block = n.i("block_size", 0);
  Tensor scale = per_axis(in[1], x, axis, block);
  // y = (x - x_zero_point) * x_scale, in f32 (exact differences of 8/16-bit values); the
  // result has the scale's type (ONNX 19+) or output_dtype (21+).
  Tensor y = x.to(DType::f32);
  if (in.size() > 2 && in[2].defined()) y = sub(y, per_axis(in[2], x, axis, block).to(DType::f32));
  y = mul(y, scale.to(DType::f32));
  DType out = scale.dtype();
  if (n.i("output_dtype", 0) != 0) dtype_from_onnx(int32_t(n.i("output_dtype", 0)), out);
  return {y.to(out)};
}

// ---- DynamicQuantizeLinear: uint8 with scale and zero point from x's range (incl. 0) ----
Tensors dynamic_quantize_linear(const Node&, const Tensors& in) {
  const Tensor x = in[0].to(DType::f32);
  Tensor lo = clamp_max(amin(x), Scalar(0.0)), hi = clamp_min(amax(x), Scalar(0.0));
  Tensor scale = div(sub(hi, lo), Scalar(255.0));
  Tensor zp = saturate(neg(div(lo, scale)), Tensor(), DType::u8);
  return {saturate(div(x, scale), zp, DType::u8), scale, zp};
}

// ---- integer products ----
// a - a_zero_point for MatMulInteger / QLinearMatMul: a 1-d zero point of a matrix is per row
// (length M) for a and per column (length N) for b; N-d ones broadcast as they are.
Tensor shifted(const Tensor& a, const Tensor& zp, bool rows, DType t) {
  Tensor v = a.to(t);
  if (!zp.defined()) return v;
  Tensor z = zp.to(t);
  if (rows && z.dim() == 1 && a.dim() >= 2) z = z.reshape({z.size(0), 1});
  return sub(v, z);
}

// conv(x - x_zero_point, w - w_zero_point) + bias in exact floats, with the attributes of the
// registry's Conv (auto_pad, pads, strides, dilations, group); padding adds zeros after the
// shift (ONNX ConvInteger). w's zero point may be per output channel.
Tensor integer_conv(const Node& n, const Tensor& x, const Tensor& xzp, const Tensor& w,
                    const Tensor& wzp, const Tensor& bias) {
  const DType t = exact_float(x.device());
  Tensor xs = x.to(t), ws = w.to(t);
  if (xzp.defined()) xs = sub(xs, xzp.to(t).reshape({}));
  if (wzp.defined()) {
    Tensor z = wzp.to(t);
    if (z.numel() == 1) {
      z = z.reshape({});
    } else {
      Shape s(size_t(w.dim()), 1);
      s[0] = z.numel();
      z = z.reshape(s);
    }
    ws = sub(ws, z);
  }
  Tensors args{xs, ws};
  if (bias.defined()) args.push_back(bias.to(t));
  return op_registry().at("Conv").run(n, args)[0];
}

std::string conv_check(const Node& n) {
  std::string why =
      n.only_attrs({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
  return why.empty() ? op_registry().at("Conv").check(n) : why;
}

// x_scale * w_scale / y_scale (in f32, as ONNX's float scales) shaped to scale an output whose
// channel dim is `channel` (per output channel when w's scale is 1-d).
Tensor requant_scale(const Tensor& a_scale, const Tensor& b_scale, const Tensor& y_scale,
                     int64_t rank, int64_t channel) {
  Tensor b = b_scale.to(DType::f32);
  if (b.numel() == 1) {
    b = b.reshape({});
  } else if (b.dim() == 1 && channel >= 0) {
    Shape s(size_t(rank), 1);
    s[size_t(channel)] = b.numel();
    b = b.reshape(s);
  }
  Tensor a = a_scale.to(DType::f32);
  if (a.numel() == 1) a = a.reshape({});
  return div(mul(a, b), y_scale.to(DType::f32).reshape({}));
}

// The QLinear ops make the output's scale and zero point (in the accumulator's type t) before
// they issue the product, so that the stream runs those small ops before it and its epilogue.
Tensors qlinear_matmul(const Node&, const Tensors& in) {
  // y = saturate(round((a - a_zp) @ (b - b_zp) * a_scale * b_scale / y_scale) + y_zp)
  const DType t = exact_float(in[0].device());
  Tensor a_scale = in[1].to(DType::f32);
  if (a_scale.dim() == 1 && a_scale.numel() > 1 && in[0].dim() >= 2)
    a_scale = a_scale.reshape({a_scale.size(0), 1});
  const Tensor scale = requant_scale(a_scale, in[4], in[6], 0, -1).to(t);
  const Tensor zp = input(in, 7), zp_t = zp.defined() ? zp.to(t) : Tensor();
  Tensor acc =
      matmul(shifted(in[0], in[2], true, DType::i32), shifted(in[3], in[5], false, DType::i32));
  return {saturate(mul(acc.to(t), scale), zp_t, zp.defined() ? zp.dtype() : in[0].dtype())};
}

Tensors qlinear_conv(const Node& n, const Tensors& in) {
  const Tensor& x = in[0];
  const DType t = exact_float(x.device());
  const Tensor scale = requant_scale(in[1], in[4], in[6], x.dim(), 1).to(t);
  const Tensor zp = input(in, 7), zp_t = zp.defined() ? zp.to(t) : Tensor();
  Tensor acc = integer_conv(n, x, in[2], in[3], in[5], input(in, 8));
  return {saturate(mul(acc, scale), zp_t, zp.defined() ? zp.dtype() : x.dtype())};
}

// ---- Einsum (numpy.einsum: "->" output or the implicit one, "..." broadcast dims) ----
// Labels: a letter is its character code; the j-th of the widest "..." dims is kEllipsis + j,
// an operand's "..." covering the last of them (numpy aligns them on the right).
constexpr int kEllipsis = 1000;

struct Equation {
  std::vector<std::string> terms;  // one per input, whitespace removed
  std::string output;
  bool explicit_output = false;
};

// "" when `term` is letters with at most one "...".
std::string term_problem(const std::string& term) {
  const size_t dots = term.find("...");
  for (size_t k = 0; k < term.size(); ++k) {
    if (dots != std::string::npos && k >= dots && k < dots + 3) continue;
    if (!std::isalpha(static_cast<unsigned char>(term[k])))
      return "equation term '" + term + "' (letters and one \"...\" only)";
  }
  return "";
}

std::string parse_equation(const std::string& text, Equation& e) {
  std::string s;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) s += c;
  const size_t arrow = s.find("->");
  e.explicit_output = arrow != std::string::npos;
  const std::string lhs = s.substr(0, arrow);
  if (e.explicit_output) e.output = s.substr(arrow + 2);
  for (size_t at = 0;;) {
    const size_t comma = lhs.find(',', at);
    e.terms.push_back(lhs.substr(at, comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  std::string why;
  for (const auto& t : e.terms) why += term_problem(t);
  if (e.explicit_output) why += term_problem(e.output);
  return why;
}

bool has_ellipsis(const std::string& term) { return term.find("...") != std::string::npos; }
int64_t letter_count(const std::string& term) {
  return int64_t(term.size()) - (has_ellipsis(term) ? 3 : 0);
}

// The labels of `term` where its "..." stands for `dims` dims of the `widest`.
std::vector<int> term_labels(const std::string& term, int64_t dims, int64_t widest) {
  std::vector<int> l;
  for (size_t k = 0; k < term.size(); ++k) {
    if (term.compare(k, 3, "...") == 0) {
      for (int64_t j = widest - dims; j < widest; ++j) l.push_back(kEllipsis + int(j));
      k += 2;
    } else {
      l.push_back(term[k]);
    }
  }
  return l;
}

std::string einsum_check(const Node& n) {
  Equation e;
  std::string why = n.only_attrs({"equation"}) + parse_equation(n.s("equation", ""), e);
  if (!why.empty()) return why;
  if (int(e.terms.size()) != n.proto.input_size())
    return std::to_string(e.terms.size()) + " equation terms for " +
           std::to_string(n.proto.input_size()) + " inputs";
  std::string all;
  bool ellipsis = false;
  for (const auto& t : e.terms) {
    all += t;
    ellipsis = ellipsis || has_ellipsis(t);
  }
  for (size_t k = 0; k < e.output.size(); ++k) {
    const char c = e.output[k];
    if (c == '.') continue;
    if (all.find(c) == std::string::npos) return std::string("output label ") + c + " in no input";
    if (e.output.find(c, k + 1) != std::string::npos)
      return std::string("output label ") + c + " twice";
  }
  if (has_ellipsis(e.output) && !ellipsis) return "output \"...\" with none in the inputs";
  return "";
}

struct Operand {
  Tensor t;
  std::vector<int> labels;
  bool has(int l) const { return std::find(labels.begin(), labels.end(), l) != labels.end(); }
  int64_t size(int l) const {
    return t.size(int64_t(std::find(labels.begin(), labels.end(), l) - labels.begin()));
  }
};

// Sums the dims whose label `keep` rejects.
Operand sum_out(Operand o, const std::function<bool(int)>& keep) {
  std::vector<int64_t> dims;
  std::vector<int> rest;
  for (size_t i = 0; i < o.labels.size(); ++i) {
    if (keep(o.labels[i]))
      rest.push_back(o.labels[i]);
    else
      dims.push_back(int64_t(i));
  }
  if (!dims.empty()) o = {sum(o.t, dims), rest};
  return o;
}

// A repeated label takes the diagonal (its dims become one, last).
Operand diagonals(Operand o) {
  for (size_t i = 0; i < o.labels.size(); ++i)
    for (size_t j = i + 1; j < o.labels.size(); ++j)
      if (o.labels[i] == o.labels[j]) {
        const int l = o.labels[i];
        o.t = o.t.diagonal(0, int64_t(i), int64_t(j));
        o.labels.erase(o.labels.begin() + int64_t(j));
        o.labels.erase(o.labels.begin() + int64_t(i));
        o.labels.push_back(l);
        return diagonals(o);
      }
  return o;
}

// a and b as one batched matmul: [batch, a-only, summed] x [batch, summed, b-only], where the
// shared labels in `keep` are batch dims and the others are summed; size-1 dims broadcast.
Operand contract(Operand a, Operand b, const std::vector<int>& keep) {
  auto kept = [&](int l) { return std::find(keep.begin(), keep.end(), l) != keep.end(); };
  a = sum_out(a, [&](int l) { return kept(l) || b.has(l); });
  b = sum_out(b, [&](int l) { return kept(l) || a.has(l); });
  std::vector<int> batch, left, inner, right;
  for (int l : a.labels) (b.has(l) ? (kept(l) ? batch : inner) : left).push_back(l);
  for (int l : b.labels)
    if (!a.has(l)) right.push_back(l);
  auto size = [&](int l) { return std::max(a.has(l) ? a.size(l) : 1, b.has(l) ? b.size(l) : 1); };
  auto arrange = [&](const Operand& o, const std::vector<std::vector<int>>& groups) {
    std::vector<int64_t> perm;
    Shape full, grouped;
    for (const auto& g : groups) {
      int64_t n = 1;
      for (int l : g) {
        perm.push_back(int64_t(std::find(o.labels.begin(), o.labels.end(), l) - o.labels.begin()));
        full.push_back(size(l));
        n *= size(l);
      }
      grouped.push_back(n);
    }
    return o.t.permute(perm).expand(full).reshape(grouped);
  };
  Tensor y = matmul(arrange(a, {batch, left, inner}), arrange(b, {batch, inner, right}));
  Operand out;
  Shape s;
  for (const auto* g : {&batch, &left, &right})
    for (int l : *g) {
      out.labels.push_back(l);
      s.push_back(size(l));
    }
  out.t = y.reshape(s);
  return out;
}

Tensors einsum(const Node& n, const Tensors& in) {
  Equation e;
  parse_equation(n.s("equation", ""), e);
  int64_t widest = 0;
  for (size_t k = 0; k < in.size(); ++k)
    if (has_ellipsis(e.terms[k])) widest = std::max(widest, in[k].dim() - letter_count(e.terms[k]));
  std::vector<Operand> ops;
  for (size_t k = 0; k < in.size(); ++k) {
    const std::string& term = e.terms[k];
    const int64_t dims = in[k].dim() - letter_count(term);
    EMBER_CHECK(dims == 0 || (dims > 0 && has_ellipsis(term)), "onnx.Einsum", "term '", term,
                "' does not match input ", k, " of shape ", shape_str(in[k].shape()));
    ops.push_back(diagonals({in[k], term_labels(term, dims, widest)}));
  }
  // The implicit output: the "..." dims, then the letters used once, in alphabetical order.
  std::vector<int> out;
  if (e.explicit_output) {
    out = term_labels(e.output, widest, widest);
  } else {
    for (int64_t j = 0; j < widest; ++j) out.push_back(kEllipsis + int(j));
    std::string all;
    for (const auto& t : e.terms) all += t;
    std::string once;
    for (char c : all)
      if (c != '.' && std::count(all.begin(), all.end(), c) == 1) once += c;
    std::sort(once.begin(), once.end());
    for (char c : once) out.push_back(c);
  }
  // Left to right, keeping the labels of the output and of the operands still to come.
  auto needed_after = [&](size_t k) {
    std::vector<int> keep = out;
    for (size_t j = k + 1; j < ops.size(); ++j)
      keep.insert(keep.end(), ops[j].labels.begin(), ops[j].labels.end());
    return keep;
  };
  Operand acc = ops[0];
  for (size_t k = 1; k < ops.size(); ++k) acc = contract(acc, ops[k], needed_after(k));
  acc = sum_out(acc, [&](int l) { return std::find(out.begin(), out.end(), l) != out.end(); });
  std::vector<int64_t> perm;
  for (int l : out)
    perm.push_back(
        int64_t(std::find(acc.labels.begin(), acc.labels.end(), l) - acc.labels.begin()));
  Tensor y = acc.t.permute(perm);
  return {y.dtype() == in[0].dtype() ? y : y.to(in[0].dtype())};  // integer sums widen
}

// ---- Det: LU with partial pivoting per matrix, in double on the host ----
Tensors det(const Node&, const Tensors& in) {
  const Tensor& x = in[0];
  EMBER_CHECK(x.dim() >= 2 && x.size(-2) == x.size(-1), "onnx.Det", "expected [*, M, M], got ",
              shape_str(x.shape()));
  const int64_t n = x.size(-1);
  std::vector<double> v = to_doubles(x);
  Shape s(x.shape().begin(), x.shape().end() - 2);
  int64_t count = 1;
  for (int64_t d : s) count *= d;
  std::vector<double> out(size_t(count), 1.0);
  for (int64_t b = 0; b < count; ++b) {
    double* a = v.data() + b * n * n;
    double d = 1.0;
    for (int64_t c = 0; c < n && d != 0.0; ++c) {
      int64_t p = c;
      for (int64_t r = c + 1; r < n; ++r)
        if (std::fabs(a[r * n + c]) > std::fabs(a[p * n + c])) p = r;
      if (p != c) {
        for (int64_t k = 0; k < n; ++k) std::swap(a[p * n + k], a[c * n + k]);
        d = -d;
      }
      const double pivot = a[c * n + c];
      d *= pivot;
      if (pivot == 0.0) break;
      for (int64_t r = c + 1; r < n; ++r) {
        const double f = a[r * n + c] / pivot;
        for (int64_t k = c + 1; k < n; ++k) a[r * n + k] -= f * a[c * n + k];
      }
    }
    out[size_t(b)] = d;
  }
  return {from_vector<double>(out, s, Device::ref()).to(x.dtype()).to(x.device())};
}

}  // namespace

void register_quant_ops(std::map<std::string, OpImpl>& r) {
  r["QuantizeLinear"] = {quantize_check, quantize_linear};
  r["DequantizeLinear"] = {[](const Node& n) {
                             return n.only_attrs({"axis", "block_size", "output_dtype"}) +
                                    quantized_type(
                                        n.input_type(0) == P::INT32 ? 0 : n.input_type(0), "input");
                           },
                           dequantize_linear};
  r["DynamicQuantizeLinear"] = {ok, dynamic_quantize_linear};
  r["MatMulInteger"] = {ok, [](const Node&, const Tensors& in) {
                          // int32 accumulation: ONNX's result type, wrapping as ONNX allows.
                          return Tensors{matmul(shifted(in[0], input(in, 2), true, DType::i32),
                                                shifted(in[1], input(in, 3), false, DType::i32))};
                        }};
  r["ConvInteger"] = {conv_check, [](const Node& n, const Tensors& in) {
                        Tensor y = integer_conv(n, in[0], input(in, 2), in[1], input(in, 3), {});
                        return Tensors{y.to(DType::i32)};
                      }};
  r["QLinearMatMul"] = {ok, qlinear_matmul};
  r["QLinearConv"] = {conv_check, qlinear_conv};
  r["Einsum"] = {einsum_check, einsum};
  r["Det"] = {ok, det};
}

}  // namespace ember::onnx::detail
