// ONNX neural-network ops (convolution, pooling, normalization, dropout, losses) mapped
// onto ember/nn/functional/*.h.
#include <cmath>

#include "onnx/ops.h"

namespace ember::onnx::detail {
namespace F = ember::nn::functional;
namespace {

struct Window {
  std::vector<int64_t> k, s, d, begin, end;
};

// Kernel, strides, dilations and the (possibly asymmetric) pads of a conv/pool node.
Window window(const Node& n, const Tensor& x, std::vector<int64_t> kernel) {
  const size_t sd = size_t(x.dim() - 2);
  Window w;
  w.k = kernel;
  w.s = n.ints("strides", std::vector<int64_t>(sd, 1));
  w.d = n.ints("dilations", std::vector<int64_t>(sd, 1));
  auto pads = n.ints("pads", std::vector<int64_t>(2 * sd, 0));
  w.begin.assign(pads.begin(), pads.begin() + int64_t(sd));
  w.end.assign(pads.begin() + int64_t(sd), pads.end());
  const std::string ap = n.s("auto_pad", "NOTSET");
  if (ap == "VALID") {
    w.begin.assign(sd, 0);
    w.end.assign(sd, 0);
  } else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    for (size_t i = 0; i < sd; ++i) {
      const int64_t in = x.size(int64_t(i) + 2), out = (in + w.s[i] - 1) / w.s[i];
      const int64_t total =
          std::max<int64_t>(0, (out - 1) * w.s[i] + (w.k[i] - 1) * w.d[i] + 1 - in);
      const int64_t small = total / 2;
      w.begin[i] = ap == "SAME_UPPER" ? small : total - small;
      w.end[i] = total - w.begin[i];
    }
  }
  return w;
}

bool symmetric(const Window& w, bool limit_half_kernel) {
  for (size_t i = 0; i < w.k.size(); ++i)
    if (w.begin[i] != w.end[i] || (limit_half_kernel && w.begin[i] > w.k[i] / 2)) return false;
  return true;
}

// Explicit padding of the spatial dims (ONNX order) with `value`.
Tensor pad_spatial(const Tensor& x, const Window& w, double value) {
  std::vector<int64_t> p;
  for (size_t i = w.k.size(); i-- > 0;) {
    p.push_back(w.begin[i]);
    p.push_back(w.end[i]);
  }
  return pad(x, p, "constant", value);
}

std::string auto_pad_check(const Node& n) {
  const std::string ap = n.s("auto_pad", "NOTSET");
  if (ap != "NOTSET" && ap != "VALID" && ap != "SAME_UPPER" && ap != "SAME_LOWER")
    return "auto_pad " + ap;
  return "";
}

Tensor conv_nd(const Tensor& x, const Tensor& w, const Tensor& b, const std::vector<int64_t>& s,
               const std::vector<int64_t>& p, const std::vector<int64_t>& d, int64_t g) {
  switch (x.dim()) {
    case 3:
      return F::conv1d(x, w, b, s, p, d, g);
    case 4:
      // On the cpu, images go channels-last at the first convolution and stay so (convolutions,
      // pooling and element-wise ops keep the layout): oneDNN's convolutions read NHWC as it is,
      // where NCHW costs a reorder in and out of its blocked layout at every one.
      if (x.device().type() == DeviceType::cpu)
        return F::conv2d(x.contiguous(MemoryFormat::channels_last), w, b, s, p, d, g);
      return F::conv2d(x, w, b, s, p, d, g);
    default:
      return F::conv3d(x, w, b, s, p, d, g);
  }
}

Tensor conv_t_nd(const Tensor& x, const Tensor& w, const Tensor& b, const std::vector<int64_t>& s,
                 const std::vector<int64_t>& p, const std::vector<int64_t>& op, int64_t g,
                 const std::vector<int64_t>& d) {
  switch (x.dim()) {
    case 3:
      return F::conv_transpose1d(x, w, b, s, p, op, g, d);
    case 4:
      return F::conv_transpose2d(x, w, b, s, p, op, g, d);
    default:
      return F::conv_transpose3d(x, w, b, s, p, op, g, d);
  }
}

Tensors conv(const Node& n, const Tensors& in) {
  const Tensor& x = in[0];
  std::vector<int64_t> k(in[1].shape().begin() + 2, in[1].shape().end());
  Window w = window(n, x, k);
  Tensor b = in.size() > 2 ? in[2] : Tensor();
  if (symmetric(w, false)) return {conv_nd(x, in[1], b, w.s, w.begin, w.d, n.i("group", 1))};
  return {conv_nd(pad_spatial(x, w, 0.0), in[1], b, w.s, std::vector<int64_t>(k.size(), 0), w.d,
                  n.i("group", 1))};
}

Tensors conv_transpose(const Node& n, const Tensors& in) {
  const Tensor& x = in[0];
  const size_t sd = size_t(x.dim() - 2);
  std::vector<int64_t> k(in[1].shape().begin() + 2, in[1].shape().end());
  Window w = window(n, x, k);
  auto op = n.ints("output_padding", std::vector<int64_t>(sd, 0));
  const std::string ap = n.s("auto_pad", "NOTSET");
  if (n.has("output_shape") || ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    std::vector<int64_t> shape = n.ints("output_shape");
    if (shape.size() > sd) shape.erase(shape.begin(), shape.end() - int64_t(sd));
    for (size_t i = 0; i < sd; ++i) {
      const int64_t in_i = x.size(int64_t(i) + 2);
      const int64_t out = shape.empty() ? in_i * w.s[i] : shape[i];
      int64_t total = w.s[i] * (in_i - 1) + op[i] + (k[i] - 1) * w.d[i] + 1 - out;
      if (total < 0) {  // a larger output: the extra goes to the end, as output_padding
        op[i] -= total;
        total = 0;
      }
      w.begin[i] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.end[i] = total - w.begin[i];
    }
  }
  // torch pads symmetrically: pad by min(begin, end), then crop what remains of `begin`.
  std::vector<int64_t> p(sd), op2(sd);
  for (size_t i = 0; i < sd; ++i) {
    p[i] = std::min(w.begin[i], w.end[i]);
    op2[i] = std::max<int64_t>(0, op[i] + p[i] - w.end[i]);
  }
  Tensor b = in.size() > 2 ? in[2] : Tensor();
  Tensor y = conv_t_nd(x, in[1], b, w.s, p, op2, n.i("group", 1), w.d);
  for (size_t i = 0; i < sd; ++i) {
    const int64_t out = w.s[i] * (x.size(int64_t(i) + 2) - 1) + op[i] + (k[i] - 1) * w.d[i] + 1 -
                        w.begin[i] - w.end[i];
    y = y.narrow(int64_t(i) + 2, w.begin[i] - p[i], out);
  }
  return {y};
}

Tensors max_pool(const Node& n, const Tensors& in) {
  const Tensor& x = in[0];
  Window w = window(n, x, n.ints("kernel_shape"));
  const bool ceil = n.i("ceil_mode", 0) != 0;
  const bool sym = symmetric(w, true);
  Tensor xin = sym ? x : pad_spatial(x, w, -INFINITY);
  auto p = sym ? w.begin : std::vector<int64_t>(w.k.size(), 0);
  if (n.proto.output_size() < 2) {  // no indices: the backend's pooling kernel
    switch (x.dim()) {
      case 3:
        return {F::max_pool1d(xin, w.k, w.s, p, w.d, ceil)};
      case 4:
        return {F::max_pool2d(xin, w.k, w.s, p, w.d, ceil)};
      default:
        return {F::max_pool3d(xin, w.k, w.s, p, w.d, ceil)};
    }
  }
  std::tuple<Tensor, Tensor> r;
  switch (x.dim()) {
    case 3:
      r = F::max_pool1d_with_indices(xin, w.k, w.s, p, w.d, ceil);
      break;
    case 4:
      r = F::max_pool2d_with_indices(xin, w.k, w.s, p, w.d, ceil);
      break;
    default:
      r = F::max_pool3d_with_indices(xin, w.k, w.s, p, w.d, ceil);
      break;
  }
  auto [y, idx] = r;
  if (!sym) {
    // The indices count the padded plane: back to x's (a padding cell, which wins only when
    // every value of its window is -inf, maps to the nearest cell of x).
    Tensor rem = idx, flat = zeros_like(idx);
    int64_t mult = 1;
    for (size_t i = w.k.size(); i-- > 0;) {
      const int64_t padded = xin.size(int64_t(2 + i)), size = x.size(int64_t(2 + i));
      const Tensor at = clamp(sub(remainder(rem, Scalar(padded)), Scalar(w.begin[i])), Scalar(0),
                              Scalar(size - 1));
      rem = div(rem, Scalar(padded), "floor");
      flat = add(flat, mul(at, Scalar(mult)));
      mult *= size;
    }
    idx = flat;
  }
  // storage_order 1: ONNX counts a 2-d plane column-major, (h, w) -> w * H + h.
  if (n.i("storage_order", 0) && x.dim() == 4)
    idx = add(mul(remainder(idx, Scalar(x.size(3))), Scalar(x.size(2))),
              div(idx, Scalar(x.size(3)), "floor"));
  // torch's indices are flat within each (n, c) plane; ONNX's over the whole tensor.
  int64_t plane = 1;
  for (int64_t dd = 2; dd < x.dim(); ++dd) plane *= x.size(dd);
  Tensor base =
      mul(arange(Scalar(0), Scalar(x.size(0) * x.size(1)), Scalar(1), {DType::i64, x.device()}),
          Scalar(plane));
  Shape bs = {x.size(0), x.size(1)};
  bs.resize(size_t(x.dim()), 1);
  return {y, add(idx, base.reshape(bs))};
}

Tensor avg_pool_nd(const Tensor& x, const Window& w, const std::vector<int64_t>& p, bool ceil,
                   bool cip) {
  switch (x.dim()) {
    case 3:
      return F::avg_pool1d(x, w.k, w.s, p, ceil, cip);
    case 4:
      return F::avg_pool2d(x, w.k, w.s, p, ceil, cip);
    default:
      return F::avg_pool3d(x, w.k, w.s, p, ceil, cip);
  }
}

Tensors avg_pool(const Node& n, const Tensors& in) {
  const Tensor& x = in[0];
  Window w = window(n, x, n.ints("kernel_shape"));
  const bool ceil = n.i("ceil_mode", 0) != 0, cip = n.i("count_include_pad", 0) != 0;
  if (symmetric(w, true)) return {avg_pool_nd(x, w, w.begin, ceil, cip)};
  const std::vector<int64_t> zero(w.k.size(), 0);
  Tensor sum_avg = avg_pool_nd(pad_spatial(x, w, 0.0), w, zero, ceil, true);
  if (cip) return {sum_avg};
  // Average over the real elements only: the same pool of a mask of ones (zero padding).
  Tensor count = avg_pool_nd(pad_spatial(ones_like(x), w, 0.0), w, zero, ceil, true);
  return {div(sum_avg, count)};
}

// BatchNormalization-14/15 with training_mode: Y from the batch statistics (population
// variance), running_mean/var = input_mean/var * momentum + batch mean/var * (1 - momentum).
Tensors bn_training(const Node& n, const Tensors& in) {
  const Tensor& x = in[0];
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  const double m = n.f("momentum", 0.9);
  auto running = [&](const Tensor& given, const Tensor& batch) {
    return add(mul(given, Scalar(m)), mul(batch, Scalar(1 - m))).to(given.dtype());
  };
  return {F::batch_norm(x, Tensor(), Tensor(), in[1], in[2], true, 0.1, n.f("epsilon", 1e-5)),
          running(in[3], mean(x, dims)), running(in[4], var(x, dims, 0))};
}

std::vector<int64_t> spatial_dims(const Tensor& x) {
  std::vector<int64_t> d;
  for (int64_t i = 2; i < x.dim(); ++i) d.push_back(i);
  return d;
}

}  // namespace

void register_nn_ops(std::map<std::string, OpImpl>& r) {
  r["Dropout"] = {[](const Node& n) -> std::string {
                    if (n.proto.input_size() > 2 && !n.proto.input(2).empty())
                      return "training_mode input (random mask; ratio known at run time)";
                    if (n.opset < 7 && n.i("is_test", 0) == 0) return "training (random mask)";
                    return n.only_attrs({"ratio", "seed", "is_test"});
                  },
                  [](const Node&, const Tensors& in) {
                    // Inference: the identity, and an all-true mask.
                    Tensor y = F::dropout(in[0], 0.5, false);
                    return Tensors{y, ones(in[0].shape(), {DType::b8, in[0].device()})};
                  }};
  auto conv_check = [](const Node& n) -> std::string {
    return auto_pad_check(n) + n.only_attrs({"auto_pad", "dilations", "group", "kernel_shape",
                                             "pads", "strides", "output_padding", "output_shape"});
  };
  r["Conv"] = {conv_check, conv};
  r["ConvTranspose"] = {conv_check, conv_transpose};
  r["MaxPool"] = {[](const Node& n) -> std::string {
                    if (n.i("storage_order", 0) && n.proto.output_size() > 1 &&
                        n.ints("kernel_shape").size() > 2)
                      return "storage_order=1 (column-major indices) in 3-d";
                    if (n.proto.output_size() > 1 && n.s("auto_pad", "NOTSET") != "NOTSET")
                      return "indices with auto_pad (explicit asymmetric padding moves them)";
                    return auto_pad_check(n) +
                           n.only_attrs({"auto_pad", "ceil_mode", "dilations", "kernel_shape",
                                         "pads", "strides", "storage_order"});
                  },
                  max_pool};
  r["AveragePool"] = {[](const Node& n) -> std::string {
                        if (n.has("dilations")) return "dilations (torch avg_pool has none)";
                        return auto_pad_check(n) +
                               n.only_attrs({"auto_pad", "ceil_mode", "count_include_pad",
                                             "kernel_shape", "pads", "strides"});
                      },
                      avg_pool};
  r["GlobalAveragePool"] = {[](const Node& n) { return n.only_attrs({}); },
                            [](const Node&, const Tensors& in) {
                              return Tensors{mean(in[0], spatial_dims(in[0]), true)};
                            }};
  r["GlobalMaxPool"] = {[](const Node& n) { return n.only_attrs({}); },
                        [](const Node&, const Tensors& in) {
                          return Tensors{amax(in[0], spatial_dims(in[0]), true)};
                        }};

  r["BatchNormalization"] = {[](const Node& n) -> std::string {
                               if (n.proto.output_size() > 1 && !n.i("training_mode", 0))
                                 return "running statistics outputs";
                               // Opsets 1-6: is_test (default 0, training); before 9: spatial
                               // (0: statistics per activation, not per channel).
                               if (n.opset < 7 && n.i("is_test", 0) == 0)
                                 return "is_test 0 (training mode)";
                               if (n.i("spatial", 1) == 0) return "spatial 0";
                               return n.only_attrs({"epsilon", "momentum", "training_mode",
                                                    "is_test", "spatial", "consumed_inputs"});
                             },
                             [](const Node& n, const Tensors& in) {
                               if (n.i("training_mode", 0)) return bn_training(n, in);
                               return Tensors{F::batch_norm(in[0], in[3], in[4], in[1], in[2],
                                                            false, 0.1, n.f("epsilon", 1e-5))};
                             }};
  r["InstanceNormalization"] = {
      attrs({"epsilon"}), [](const Node& n, const Tensors& in) {
        return Tensors{F::instance_norm(in[0], Tensor(), Tensor(), in[1], in[2], true, 0.1,
                                        n.f("epsilon", 1e-5))};
      }};
  r["LayerNormalization"] = {attrs({"axis", "epsilon", "stash_type"}),
                             [](const Node& n, const Tensors& in) {
                               const Tensor& x = in[0];
                               const int64_t axis = wrap(n.i("axis", -1), x.dim());
                               const double eps = n.f("epsilon", 1e-5);
                               Shape ns(x.shape().begin() + axis, x.shape().end());
                               Tensor b = in.size() > 2 ? in[2] : Tensor();
                               Tensors out{F::layer_norm(x, ns, in[1], b, eps)};
                               if (n.proto.output_size() > 1) {
                                 std::vector<int64_t> dims;
                                 for (int64_t d = axis; d < x.dim(); ++d) dims.push_back(d);
                                 out.push_back(mean(x, dims, true));
                                 out.push_back(rsqrt(add(var(x, dims, 0, true), Scalar(eps))));
                               }
                               return out;
                             }};
  r["MeanVarianceNormalization"] = {
      attrs({"axes"}), [](const Node& n, const Tensors& in) {
        auto axes = n.ints("axes", {0, 2, 3});
        Tensor m = mean(in[0], axes, true);
        Tensor v = var(in[0], axes, 0, true);
        return Tensors{div(sub(in[0], m), sqrt(add(v, Scalar(1e-9))))};
      }};
  r["LpNormalization"] = {
      attrs({"axis", "p"}), [](const Node& n, const Tensors& in) {
        const int64_t axis = wrap(n.i("axis", -1), in[0].dim());
        return Tensors{div(in[0], norm(in[0], double(n.i("p", 2)), {axis}, true))};
      }};
  // ONNX's labels are i32 or i64; torch's (and Ember's) class indices are i64.
  r["NegativeLogLikelihoodLoss"] = {
      attrs({"ignore_index", "reduction"}), [](const Node& n, const Tensors& in) {
        Tensor w = in.size() > 2 ? in[2] : Tensor();
        return Tensors{F::nll_loss(in[0], in[1].to(DType::i64), w, n.i("ignore_index", -100),
                                   n.s("reduction", "mean"))};
      }};
  r["SoftmaxCrossEntropyLoss"] = {
      attrs({"ignore_index", "reduction"}), [](const Node& n, const Tensors& in) {
        Tensor w = in.size() > 2 ? in[2] : Tensor();
        Tensors out{F::cross_entropy(in[0], in[1].to(DType::i64), w, n.i("ignore_index", -100),
                                     n.s("reduction", "mean"))};
        if (n.proto.output_size() > 1) out.push_back(F::log_softmax(in[0], 1));
        return out;
      }};
}

}  // namespace ember::onnx::detail
