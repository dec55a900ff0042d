// The built-in exporters of save(): one function per nn module type writing the ONNX nodes
// (opset 17) of its eval-mode forward. Where ONNX has no operator, the reference formula is
// written with its ops (GELU, SiLU, Mish, GroupNorm, RMSNorm).
#include <cmath>
#include <limits>

#include "ember/nn/modules/activation.h"
#include "ember/nn/modules/container.h"
#include "ember/nn/modules/conv.h"
#include "ember/nn/modules/dropout.h"
#include "ember/nn/modules/embedding.h"
#include "ember/nn/modules/linear.h"
#include "ember/nn/modules/normalization.h"
#include "ember/nn/modules/pooling.h"
#include "onnx/export.h"

namespace ember::onnx::detail {

namespace {

using Ints = std::vector<int64_t>;
using Strs = std::vector<std::string>;

template <typename M>
M& as(nn::Module& m) {
  auto* p = dynamic_cast<M*>(&m);
  EMBER_CHECK(p != nullptr, "onnx::save", "module of type ", m.type_name(),
              " is not the class its exporter expects");
  return *p;
}

// A 0-d constant of the example's dtype.
std::string scalar(ExportGraph& g, const std::string& like, double v, const std::string& name) {
  const Tensor& x = g.example(like);
  return g.constant(scalar_tensor(v, TensorOptions(x.dtype(), Device::ref())), name);
}

std::string ints_const(ExportGraph& g, const Ints& v, const std::string& name) {
  return g.constant(from_vector(v, {int64_t(v.size())}, Device::ref()), name);
}

Ints concat(Ints a, const Ints& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

int64_t rank_of(ExportGraph& g, const std::string& x) { return g.example(x).dim(); }

int64_t wrap_dim(int64_t d, int64_t rank) {
  const int64_t w = d < 0 ? d + rank : d;
  EMBER_CHECK(w >= 0 && w < std::max<int64_t>(rank, 1), "onnx::save", "dim ", d,
              " out of range for rank ", rank);
  return w;
}

// A Reshape to `target` (0 copies the input's dim, -1 is inferred).
std::string reshape(ExportGraph& g, const std::string& x, const Ints& target) {
  return g.node("Reshape", {x, ints_const(g, target, "shape")});
}

// ---- layers ----

std::string linear(nn::Module& m, ExportGraph& g, const std::string& x) {
  auto& l = as<nn::Linear>(m);
  if (rank_of(g, x) == 2) {
    Strs in = {x, g.constant(l.weight, "weight")};
    if (l.bias.defined()) in.push_back(g.constant(l.bias, "bias"));
    return g.node("Gemm", in, {{"transB", int64_t(1)}});
  }
  std::string y = g.node("MatMul", {x, g.constant(l.weight.t().contiguous(), "weight_t")});
  if (l.bias.defined()) y = g.node("Add", {y, g.constant(l.bias, "bias")});
  return y;
}

template <size_t D>
std::string conv(nn::Module& m, ExportGraph& g, const std::string& x0) {
  auto& c = as<nn::ConvNd<D>>(m);
  const auto& o = c.options;
  const Ints k = o.kernel_size().vec(), dil = o.dilation().vec();
  Ints begin = o.padding().vec(), end = begin;
  if (o.padding_str() == "same")
    for (size_t d = 0; d < D; ++d) {
      const int64_t total = dil[d] * (k[d] - 1);
      begin[d] = total / 2;
      end[d] = total - begin[d];
    }
  std::string x = x0;
  const std::string& mode = o.padding_mode();
  if (mode != "zeros" && (!std::all_of(begin.begin(), begin.end(), [](int64_t v) {
        return v == 0;
      }) || !std::all_of(end.begin(), end.end(), [](int64_t v) { return v == 0; }))) {
    EMBER_CHECK(mode == "reflect" || mode == "replicate", "onnx::save", "padding_mode '", mode,
                "' has no ONNX Pad mode in opset 17 (reflect and replicate do)");
    // Pad's pads: every dim's begins, then every dim's ends (batch and channels 0).
    const Ints pads = concat(concat({0, 0}, begin), concat({0, 0}, end));
    x = g.node("Pad", {x, ints_const(g, pads, "pads")},
               {{"mode", std::string(mode == "reflect" ? "reflect" : "edge")}});
    begin.assign(D, 0);
    end.assign(D, 0);
  }
  Strs in = {x, g.constant(c.weight, "weight")};
  if (c.bias.defined()) in.push_back(g.constant(c.bias, "bias"));
  return g.node("Conv", in,
                {{"kernel_shape", k},
                 {"strides", o.stride().vec()},
                 {"dilations", dil},
                 {"pads", concat(begin, end)},
                 {"group", o.groups()}});
}

template <size_t D>
std::string conv_transpose(nn::Module& m, ExportGraph& g, const std::string& x) {
  auto& c = as<nn::ConvTransposeNd<D>>(m);
  const auto& o = c.options;
  const Ints p = o.padding().vec();
  Strs in = {x, g.constant(c.weight, "weight")};
  if (c.bias.defined()) in.push_back(g.constant(c.bias, "bias"));
  return g.node("ConvTranspose", in,
                {{"kernel_shape", o.kernel_size().vec()},
                 {"strides", o.stride().vec()},
                 {"dilations", o.dilation().vec()},
                 {"pads", concat(p, p)},
                 {"output_padding", o.output_padding().vec()},
                 {"group", o.groups()}});
}

std::string batch_norm(nn::Module& m, ExportGraph& g, const std::string& x) {
  auto& b = as<nn::BatchNormBase>(m);
  EMBER_CHECK(b.running_mean.defined() && b.running_var.defined(), "onnx::save",
              "a BatchNorm without running statistics (track_running_stats=false) normalizes "
              "with each batch's statistics, which ONNX's BatchNormalization cannot");
  const int64_t c = b.options.num_features();
  const Tensor& ex = g.example(x);
  const std::string scale = b.weight.defined() ? g.constant(b.weight, "weight")
                                               : g.constant(ones({c}, ex.dtype()), "weight");
  const std::string bias =
      b.bias.defined() ? g.constant(b.bias, "bias") : g.constant(zeros({c}, ex.dtype()), "bias");
  return g.node("BatchNormalization",
                {x, scale, bias, g.constant(b.running_mean, "running_mean"),
                 g.constant(b.running_var, "running_var")},
                {{"epsilon", b.options.eps()}});
}

std::string instance_norm(nn::Module& m, ExportGraph& g, const std::string& x) {
  auto& n = as<nn::InstanceNorm2d>(m);
  EMBER_CHECK(!n.options.track_running_stats(), "onnx::save",
              "InstanceNorm2d with track_running_stats uses its running statistics in eval "
              "mode, which ONNX's InstanceNormalization cannot");
  EMBER_CHECK(rank_of(g, x) == 4, "onnx::save", "InstanceNorm2d exports for [N, C, H, W] only");
  const int64_t c = n.options.num_features();
  const DType dt = g.example(x).dtype();
  const std::string s =
      n.weight.defined() ? g.constant(n.weight, "weight") : g.constant(ones({c}, dt), "weight");
  const std::string b =
      n.bias.defined() ? g.constant(n.bias, "bias") : g.constant(zeros({c}, dt), "bias");
  return g.node("InstanceNormalization", {x, s, b}, {{"epsilon", n.options.eps()}});
}

std::string layer_norm(nn::Module& m, ExportGraph& g, const std::string& x) {
  auto& n = as<nn::LayerNorm>(m);
  const Shape& ns = n.options.normalized_shape();
  const DType dt = g.example(x).dtype();
  Strs in = {
      x, n.weight.defined() ? g.constant(n.weight, "weight") : g.constant(ones(ns, dt), "weight")};
  if (n.bias.defined()) in.push_back(g.constant(n.bias, "bias"));
  return g.node("LayerNormalization", in,
                {{"axis", -int64_t(ns.size())}, {"epsilon", n.options.eps()}});
}

// (x - mean) / sqrt(var + eps) per group of channels, then the per-channel affine (Wu & He,
// "Group Normalization", 2018): InstanceNormalization over [N, G, C/G * spatial].
std::string group_norm(nn::Module& m, ExportGraph& g, const std::string& x) {
  auto& n = as<nn::GroupNorm>(m);
  const Tensor& ex = g.example(x);
  const int64_t groups = n.options.num_groups();
  Ints back = {0};
  for (int64_t d = 1; d < ex.dim(); ++d) back.push_back(ex.size(d));
  std::string y = reshape(g, x, {0, groups, -1});
  y = g.node("InstanceNormalization",
             {y, g.constant(ones({groups}, ex.dtype()), "group_scale"),
              g.constant(zeros({groups}, ex.dtype()), "group_bias")},
             {{"epsilon", n.options.eps()}});
  y = reshape(g, y, back);
  Shape per_channel = {n.options.num_channels()};
  for (int64_t d = 2; d < ex.dim(); ++d) per_channel.push_back(1);
  if (n.weight.defined())
    y = g.node("Mul", {y, g.constant(n.weight.reshape(per_channel), "weight")});
  if (n.bias.defined()) y = g.node("Add", {y, g.constant(n.bias.reshape(per_channel), "bias")});
  return y;
}

// x / sqrt(mean(x^2 over the normalized dims) + eps) * weight (Zhang & Sennrich, 2019).
std::string rms_norm(nn::Module& m, ExportGraph& g, const std::string& x) {
  auto& n = as<nn::RMSNorm>(m);
  const Tensor& ex = g.example(x);
  const int64_t k = int64_t(n.options.normalized_shape().size());
  Ints axes;
  for (int64_t d = ex.dim() - k; d < ex.dim(); ++d) axes.push_back(d);
  const double eps =
      n.options.eps().has_value()
          ? *n.options.eps()
          : (ex.dtype() == DType::f64 ? std::numeric_limits<double>::epsilon()
                                      : double(std::numeric_limits<float>::epsilon()));
  std::string ms =
      g.node("ReduceMean", {g.node("Mul", {x, x})}, {{"axes", axes}, {"keepdims", int64_t(1)}});
  std::string y =
      g.node("Div", {x, g.node("Sqrt", {g.node("Add", {ms, scalar(g, x, eps, "eps")})})});
  if (n.weight.defined()) y = g.node("Mul", {y, g.constant(n.weight, "weight")});
  return y;
}

std::string flatten(nn::Module& m, ExportGraph& g, const std::string& x) {
  auto& f = as<nn::Flatten>(m);
  const Tensor& ex = g.example(x);
  const int64_t r = ex.dim(), s = wrap_dim(f.start_dim, r), e = wrap_dim(f.end_dim, r);
  if (r == 0) return reshape(g, x, {1});
  Ints target(size_t(s), 0);
  target.push_back(-1);
  for (int64_t d = e + 1; d < r; ++d) target.push_back(ex.size(d));
  return reshape(g, x, target);
}

std::string unflatten(nn::Module& m, ExportGraph& g, const std::string& x) {
  auto& u = as<nn::Unflatten>(m);
  const Tensor& ex = g.example(x);
  const int64_t d = wrap_dim(u.dim, ex.dim());
  Ints target(size_t(d), 0);
  target = concat(target, u.unflattened_size);
  for (int64_t k = d + 1; k < ex.dim(); ++k) target.push_back(ex.size(k));
  return reshape(g, x, target);
}

std::string embedding(nn::Module& m, ExportGraph& g, const std::string& x) {
  auto& e = as<nn::Embedding>(m);
  EMBER_CHECK(!e.options.max_norm().has_value(), "onnx::save",
              "Embedding with max_norm renormalizes its weight while it runs; ONNX cannot");
  return g.node("Gather", {g.constant(e.weight, "weight"), x});
}

// ---- pooling ----

template <size_t D>
std::string max_pool(nn::Module& m, ExportGraph& g, const std::string& x) {
  auto& p = as<nn::MaxPoolNd<D>>(m);
  const auto& o = p.options;
  const Ints pad = o.padding().vec();
  return g.node("MaxPool", {x},
                {{"kernel_shape", o.kernel_size().vec()},
                 {"strides", o.stride().vec()},
                 {"pads", concat(pad, pad)},
                 {"dilations", o.dilation().vec()},
                 {"ceil_mode", int64_t(o.ceil_mode())}});
}

template <size_t D>
std::string avg_pool(nn::Module& m, ExportGraph& g, const std::string& x) {
  auto& p = as<nn::AvgPoolNd<D>>(m);
  const auto& o = p.options;
  EMBER_CHECK(!o.divisor_override().has_value(), "onnx::save",
              "AvgPool with divisor_override has no ONNX AveragePool attribute");
  const Ints pad = o.padding().vec();
  return g.node("AveragePool", {x},
                {{"kernel_shape", o.kernel_size().vec()},
                 {"strides", o.stride().vec()},
                 {"pads", concat(pad, pad)},
                 {"ceil_mode", int64_t(o.ceil_mode())},
                 {"count_include_pad", int64_t(o.count_include_pad())}});
}

// Adaptive pooling: global when every output size is 1, else a fixed window when each output
// size divides the input's (then adaptive pooling's windows are exactly that).
std::string adaptive_pool(ExportGraph& g, const std::string& x, const Ints& out, bool max) {
  const Tensor& ex = g.example(x);
  const int64_t d = int64_t(out.size());
  EMBER_CHECK(ex.dim() == d + 2, "onnx::save", "adaptive pooling over ", d,
              " dims exports for batched [N, C, ...] inputs of rank ", d + 2, ", got rank ",
              ex.dim());
  bool global = true;
  Ints k;
  for (int64_t i = 0; i < d; ++i) {
    const int64_t in = ex.size(ex.dim() - d + i);
    global = global && out[size_t(i)] == 1;
    EMBER_CHECK(out[size_t(i)] > 0 && in % out[size_t(i)] == 0, "onnx::save",
                "adaptive pooling from ", in, " to ", out[size_t(i)],
                ": the sizes must divide (ONNX has fixed windows only)");
    k.push_back(in / out[size_t(i)]);
  }
  if (global) return g.node(max ? "GlobalMaxPool" : "GlobalAveragePool", {x});
  return g.node(max ? "MaxPool" : "AveragePool", {x}, {{"kernel_shape", k}, {"strides", k}});
}

// ---- activations ----

std::string clip(ExportGraph& g, const std::string& x, double lo, double hi) {
  return g.node("Clip", {x, scalar(g, x, lo, "min"), scalar(g, x, hi, "max")});
}

// x where x > threshold, else `other`.
std::string where_above(ExportGraph& g, const std::string& x, const std::string& cond_in,
                        double threshold, const std::string& other) {
  const std::string cond = g.node("Greater", {cond_in, scalar(g, x, threshold, "threshold")});
  return g.node("Where", {cond, x, other});
}

// GELU(x) = x * Phi(x) (Hendrycks & Gimpel, 2016): 0.5 x (1 + erf(x / sqrt 2)), or the tanh
// approximation 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
std::string gelu(nn::Module& m, ExportGraph& g, const std::string& x) {
  auto& a = as<nn::GELU>(m);
  std::string inner;
  if (a.approximate == "tanh") {
    const std::string x3 = g.node("Mul", {g.node("Mul", {x, x}), x});
    const std::string s = g.node("Add", {x, g.node("Mul", {x3, scalar(g, x, 0.044715, "c")})});
    inner = g.node("Tanh", {g.node("Mul", {s, scalar(g, x, std::sqrt(2.0 / M_PI), "k")})});
  } else {
    inner = g.node("Erf", {g.node("Div", {x, scalar(g, x, std::sqrt(2.0), "sqrt2")})});
  }
  const std::string one_plus = g.node("Add", {inner, scalar(g, x, 1.0, "one")});
  return g.node("Mul", {g.node("Mul", {x, one_plus}), scalar(g, x, 0.5, "half")});
}

// softplus(x) = log(1 + exp(beta x)) / beta, and x where beta x > threshold (as torch).
std::string softplus(nn::Module& m, ExportGraph& g, const std::string& x) {
  auto& a = as<nn::Softplus>(m);
  std::string bx = x;
  if (a.beta != 1.0) bx = g.node("Mul", {x, scalar(g, x, a.beta, "beta")});
  std::string sp = g.node("Softplus", {bx});
  if (a.beta != 1.0) sp = g.node("Div", {sp, scalar(g, x, a.beta, "beta")});
  return where_above(g, x, bx, a.threshold, sp);
}

std::string prelu(nn::Module& m, ExportGraph& g, const std::string& x) {
  auto& a = as<nn::PReLU>(m);
  const int64_t r = rank_of(g, x);
  Shape s = {a.weight.numel()};
  if (a.weight.numel() > 1)
    for (int64_t d = 2; d < r; ++d) s.push_back(1);  // per channel (dim 1)
  return g.node("PRelu", {x, g.constant(a.weight.reshape(s), "weight")});
}

std::string glu(nn::Module& m, ExportGraph& g, const std::string& x) {
  auto& a = as<nn::GLU>(m);
  const int64_t d = wrap_dim(a.dim, rank_of(g, x));
  const Strs halves = g.add("Split", {x}, {{"axis", d}}, 2);
  return g.node("Mul", {halves[0], g.node("Sigmoid", {halves[1]})});
}

Exporter op(const char* type, std::vector<Attribute> attrs = {}) {
  return [type = std::string(type), attrs](nn::Module&, ExportGraph& g, const std::string& x) {
    return g.node(type, {x}, attrs);
  };
}

template <typename M>
Exporter softmax_like(const char* type, bool negate) {
  return [type = std::string(type), negate](nn::Module& m, ExportGraph& g, const std::string& x) {
    const int64_t d = wrap_dim(as<M>(m).dim, rank_of(g, x));
    return g.node(type, {negate ? g.node("Neg", {x}) : x}, {{"axis", d}});
  };
}

Exporter pass_through() {
  return [](nn::Module&, ExportGraph&, const std::string& x) { return x; };
}

}  // namespace

std::string export_sequential(nn::Module& m, ExportGraph& g, const std::string& input) {
  std::string x = input;
  for (const auto& [name, child] : m.named_children()) x = g.module(*child, name, x);
  return x;
}

void register_builtin_exporters(std::map<std::string, Exporter>& r) {
  r["Sequential"] = export_sequential;
  r["Identity"] = pass_through();
  for (const char* d : {"Dropout", "Dropout1d", "Dropout2d", "Dropout3d"})
    r[d] = pass_through();  // eval mode
  r["Linear"] = linear;
  r["Flatten"] = flatten;
  r["Unflatten"] = unflatten;
  r["Embedding"] = embedding;
  r["Conv1d"] = conv<1>;
  r["Conv2d"] = conv<2>;
  r["Conv3d"] = conv<3>;
  r["ConvTranspose1d"] = conv_transpose<1>;
  r["ConvTranspose2d"] = conv_transpose<2>;
  r["ConvTranspose3d"] = conv_transpose<3>;
  for (const char* d : {"BatchNorm1d", "BatchNorm2d"}) r[d] = batch_norm;
  r["InstanceNorm2d"] = instance_norm;
  r["LayerNorm"] = layer_norm;
  r["GroupNorm"] = group_norm;
  r["RMSNorm"] = rms_norm;
  r["MaxPool1d"] = max_pool<1>;
  r["MaxPool2d"] = max_pool<2>;
  r["MaxPool3d"] = max_pool<3>;
  r["AvgPool1d"] = avg_pool<1>;
  r["AvgPool2d"] = avg_pool<2>;
  r["AvgPool3d"] = avg_pool<3>;
  r["AdaptiveAvgPool1d"] = [](nn::Module& m, ExportGraph& g, const std::string& x) {
    return adaptive_pool(g, x, as<nn::AdaptiveAvgPoolNd<1>>(m).output_size.vec(), false);
  };
  r["AdaptiveAvgPool2d"] = [](nn::Module& m, ExportGraph& g, const std::string& x) {
    return adaptive_pool(g, x, as<nn::AdaptiveAvgPoolNd<2>>(m).output_size.vec(), false);
  };
  r["AdaptiveMaxPool2d"] = [](nn::Module& m, ExportGraph& g, const std::string& x) {
    return adaptive_pool(g, x, as<nn::AdaptiveMaxPool2d>(m).output_size.vec(), true);
  };

  r["ReLU"] = op("Relu");
  r["Sigmoid"] = op("Sigmoid");
  r["Tanh"] = op("Tanh");
  r["Softsign"] = op("Softsign");
  r["Hardswish"] = op("HardSwish");
  r["Hardsigmoid"] = op("HardSigmoid", {{"alpha", 1.0 / 6.0}, {"beta", 0.5}});
  // torch's SELU constants (Klambauer et al., 2017).
  r["SELU"] = op("Selu", {{"alpha", 1.6732632423543772848170429916717},
                          {"gamma", 1.0507009873554804934193349852946}});
  r["ReLU6"] = [](nn::Module&, ExportGraph& g, const std::string& x) { return clip(g, x, 0, 6); };
  r["Hardtanh"] = [](nn::Module& m, ExportGraph& g, const std::string& x) {
    auto& a = as<nn::Hardtanh>(m);
    return clip(g, x, a.min_val, a.max_val);
  };
  r["LeakyReLU"] = [](nn::Module& m, ExportGraph& g, const std::string& x) {
    return g.node("LeakyRelu", {x}, {{"alpha", as<nn::LeakyReLU>(m).negative_slope}});
  };
  r["ELU"] = [](nn::Module& m, ExportGraph& g, const std::string& x) {
    return g.node("Elu", {x}, {{"alpha", as<nn::ELU>(m).alpha}});
  };
  r["CELU"] = [](nn::Module& m, ExportGraph& g, const std::string& x) {
    return g.node("Celu", {x}, {{"alpha", as<nn::CELU>(m).alpha}});
  };
  r["GELU"] = gelu;
  r["SiLU"] = [](nn::Module&, ExportGraph& g, const std::string& x) {
    return g.node("Mul", {x, g.node("Sigmoid", {x})});
  };
  r["Mish"] = [](nn::Module&, ExportGraph& g, const std::string& x) {
    return g.node("Mul", {x, g.node("Tanh", {g.node("Softplus", {x})})});
  };
  r["LogSigmoid"] = [](nn::Module&, ExportGraph& g, const std::string& x) {
    return g.node("Neg", {g.node("Softplus", {g.node("Neg", {x})})});
  };
  r["Tanhshrink"] = [](nn::Module&, ExportGraph& g, const std::string& x) {
    return g.node("Sub", {x, g.node("Tanh", {x})});
  };
  r["Hardshrink"] = [](nn::Module& m, ExportGraph& g, const std::string& x) {
    return g.node("Shrink", {x}, {{"lambd", as<nn::Hardshrink>(m).lambd}, {"bias", 0.0}});
  };
  r["Softshrink"] = [](nn::Module& m, ExportGraph& g, const std::string& x) {
    const double l = as<nn::Softshrink>(m).lambd;
    return g.node("Shrink", {x}, {{"lambd", l}, {"bias", l}});
  };
  r["Threshold"] = [](nn::Module& m, ExportGraph& g, const std::string& x) {
    auto& a = as<nn::Threshold>(m);
    return where_above(g, x, x, a.threshold, scalar(g, x, a.value, "value"));
  };
  r["Softplus"] = softplus;
  r["PReLU"] = prelu;
  r["GLU"] = glu;
  r["Softmax"] = softmax_like<nn::Softmax>("Softmax", false);
  r["LogSoftmax"] = softmax_like<nn::LogSoftmax>("LogSoftmax", false);
  r["Softmin"] = softmax_like<nn::Softmin>("Softmax", true);
}

}  // namespace ember::onnx::detail
