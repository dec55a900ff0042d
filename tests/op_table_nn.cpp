// Op-table cases for nn::functional: activations, softmax, dropout, norms, losses, attention,
// embedding. Float dtypes f32 f64 f16 bf16; class indices are i64.
#include <cmath>

#include "op_table.h"

namespace ember::testing {
namespace {

namespace F = ember::nn::functional;
using Outs = std::vector<Tensor>;
using InFn = std::function<Inputs(DType, uint64_t)>;

void reg(const std::string& name, InFn in, std::function<Outs(const Inputs&)> fn, double tol = 1.0,
         std::vector<bool> vary = {}) {
  register_case(OpCase{name, float_dtypes(), std::move(in), std::move(fn), std::move(vary), tol});
}

// One float input of `shape` with values in [lo, hi).
InFn x_of(Shape shape, double lo = -3, double hi = 3) {
  return
      [shape, lo, hi](DType dt, uint64_t seed) { return Inputs{uniform(shape, dt, seed, lo, hi)}; };
}

void unary(const std::string& name, std::function<Tensor(const Tensor&)> f, double lo = -3,
           double hi = 3) {
  reg(name, x_of({4, 6}, lo, hi), [f](const Inputs& in) { return Outs{f(in[0])}; });
}

const int kActivations = [] {
  unary("nn.softmax/dim1", [](const Tensor& x) { return F::softmax(x, 1); });
  unary("nn.softmax/dim0", [](const Tensor& x) { return F::softmax(x, 0); });
  unary("nn.log_softmax", [](const Tensor& x) { return F::log_softmax(x, -1); });
  unary("nn.softmin", [](const Tensor& x) { return F::softmin(x, 1); });
  unary("nn.relu", [](const Tensor& x) { return F::relu(x); });
  unary("nn.relu6", [](const Tensor& x) { return F::relu6(x * 3); });
  unary("nn.hardtanh", [](const Tensor& x) { return F::hardtanh(x, -0.5, 2); });
  unary("nn.leaky_relu", [](const Tensor& x) { return F::leaky_relu(x, 0.1); });
  unary("nn.elu", [](const Tensor& x) { return F::elu(x, 1.5); });
  unary("nn.selu", [](const Tensor& x) { return F::selu(x); });
  unary("nn.celu", [](const Tensor& x) { return F::celu(x, 0.7); });
  unary("nn.gelu", [](const Tensor& x) { return F::gelu(x); });
  unary("nn.gelu/tanh", [](const Tensor& x) { return F::gelu(x, "tanh"); });
  unary("nn.silu", [](const Tensor& x) { return F::silu(x); });
  unary("nn.mish", [](const Tensor& x) { return F::mish(x); });
  unary("nn.softplus", [](const Tensor& x) { return F::softplus(x); });
  unary("nn.softplus/beta2_threshold1", [](const Tensor& x) { return F::softplus(x, 2, 1); });
  unary("nn.hardsigmoid", [](const Tensor& x) { return F::hardsigmoid(x * 2); });
  unary("nn.hardswish", [](const Tensor& x) { return F::hardswish(x * 2); });
  unary("nn.sigmoid", [](const Tensor& x) { return F::sigmoid(x); });
  unary("nn.log_sigmoid", [](const Tensor& x) { return F::log_sigmoid(x); });
  unary("nn.tanh", [](const Tensor& x) { return F::tanh(x); });
  unary("nn.softsign", [](const Tensor& x) { return F::softsign(x); });
  unary("nn.tanhshrink", [](const Tensor& x) { return F::tanhshrink(x); });
  unary("nn.hardshrink", [](const Tensor& x) { return F::hardshrink(x, 0.7); });
  unary("nn.softshrink", [](const Tensor& x) { return F::softshrink(x, 0.7); });
  unary("nn.threshold", [](const Tensor& x) { return F::threshold(x, 0.25, -2); });
  unary("nn.glu", [](const Tensor& x) { return F::glu(x, 1); });
  reg(
      "nn.prelu",
      [](DType dt, uint64_t s) {
        return Inputs{uniform({2, 3, 4}, dt, s), uniform({3}, dt, s + 1, 0, 1)};
      },
      [](const Inputs& in) { return Outs{F::prelu(in[0], in[1])}; });
  reg("nn.dropout", x_of({8, 16}), [](const Inputs& in) {
    manual_seed(11);
    return Outs{F::dropout(in[0], 0.3)};
  });
  reg("nn.dropout2d", x_of({2, 6, 3, 3}), [](const Inputs& in) {
    manual_seed(12);
    return Outs{F::dropout2d(in[0], 0.5)};
  });
  return 0;
}();

const int kNorms = [] {
  reg(
      "nn.layer_norm",
      [](DType dt, uint64_t s) {
        return Inputs{uniform({3, 4, 5}, dt, s), uniform({5}, dt, s + 1), uniform({5}, dt, s + 2)};
      },
      [](const Inputs& in) { return Outs{F::layer_norm(in[0], {5}, in[1], in[2])}; }, 2);
  reg(
      "nn.layer_norm/two_dims_no_affine", x_of({3, 4, 5}),
      [](const Inputs& in) {
        return Outs{F::layer_norm(in[0], {4, 5})};
      },
      2);
  reg(
      "nn.group_norm",
      [](DType dt, uint64_t s) {
        return Inputs{uniform({2, 6, 5}, dt, s), uniform({6}, dt, s + 1), uniform({6}, dt, s + 2)};
      },
      [](const Inputs& in) { return Outs{F::group_norm(in[0], 3, in[1], in[2])}; }, 2);
  auto bn_inputs = [](DType dt, uint64_t s) {
    return Inputs{uniform({4, 3, 5}, dt, s), uniform({3}, dt, s + 1),
                  uniform({3}, dt, s + 2, 0.5, 2), uniform({3}, dt, s + 3),
                  uniform({3}, dt, s + 4)};
  };
  reg(
      "nn.batch_norm/train", bn_inputs,
      [](const Inputs& in) {
        Tensor rm = in[1].clone(), rv = in[2].clone();  // updated in place: return them too
        Tensor y = F::batch_norm(in[0], rm, rv, in[3], in[4], true, 0.2, 1e-5);
        return Outs{y, rm, rv};
      },
      2);
  reg(
      "nn.batch_norm/eval", bn_inputs,
      [](const Inputs& in) {
        return Outs{F::batch_norm(in[0], in[1], in[2], in[3], in[4], false)};
      },
      2);
  reg(
      "nn.instance_norm", bn_inputs,
      [](const Inputs& in) {
        Tensor rm = in[1].clone(), rv = in[2].clone();
        Tensor y = F::instance_norm(in[0], rm, rv, in[3], in[4]);
        return Outs{y, rm, rv};
      },
      2);
  reg(
      "nn.rms_norm",
      [](DType dt, uint64_t s) {
        return Inputs{uniform({3, 8}, dt, s), uniform({8}, dt, s + 1)};
      },
      [](const Inputs& in) { return Outs{F::rms_norm(in[0], {8}, in[1])}; }, 2);
  reg(
      "nn.normalize", x_of({3, 5}),
      [](const Inputs& in) { return Outs{F::normalize(in[0], 2, 1)}; }, 2);
  return 0;
}();

// Logits [N, C] (or [N, C, d]) and i64 targets in [-1, C): -1 is used as ignore_index.
InFn ce_inputs(Shape shape) {
  return [shape](DType dt, uint64_t s) {
    Shape ts = shape;
    const int64_t c = shape[1];
    ts.erase(ts.begin() + 1);
    return Inputs{uniform(shape, dt, s), integers(ts, DType::i64, s + 1, -1, c),
                  uniform({c}, dt, s + 2, 0.2, 2)};
  };
}

const int kLosses = [] {
  reg(
      "nn.cross_entropy", ce_inputs({6, 5}),
      [](const Inputs& in) { return Outs{F::cross_entropy(in[0], abs(in[1]))}; }, 2);
  reg(
      "nn.cross_entropy/weight_ignore_smoothing", ce_inputs({6, 5}),
      [](const Inputs& in) {
        return Outs{F::cross_entropy(in[0], in[1], in[2], -1, "mean", 0.1),
                    F::cross_entropy(in[0], in[1], in[2], -1, "none", 0.2),
                    F::cross_entropy(in[0], in[1], Tensor(), -1, "sum", 0.1)};
      },
      2);
  reg(
      "nn.cross_entropy/spatial", ce_inputs({2, 4, 3}),
      [](const Inputs& in) {
        return Outs{F::cross_entropy(in[0], in[1], in[2], -1, "none"),
                    F::cross_entropy(in[0], in[1], in[2], -1)};
      },
      2);
  reg(
      "nn.cross_entropy/probabilities",
      [](DType dt, uint64_t s) {
        return Inputs{uniform({4, 5}, dt, s), uniform({4, 5}, dt, s + 1, 0, 1),
                      uniform({5}, dt, s + 2, 0.2, 2)};
      },
      [](const Inputs& in) {
        return Outs{F::cross_entropy(in[0], in[1], in[2], -100, "mean", 0.1),
                    F::cross_entropy(in[0], in[1], Tensor(), -100, "none")};
      },
      2);
  reg(
      "nn.nll_loss", ce_inputs({6, 5}),
      [](const Inputs& in) {
        return Outs{F::nll_loss(in[0], in[1], in[2], -1),
                    F::nll_loss(in[0], in[1], in[2], -1, "none"),
                    F::nll_loss(in[0], abs(in[1]), Tensor(), -100, "sum")};
      },
      2);
  auto pair = [](DType dt, uint64_t s) {
    return Inputs{uniform({4, 5}, dt, s), uniform({4, 5}, dt, s + 1)};
  };
  reg(
      "nn.mse_loss", pair,
      [](const Inputs& in) {
        return Outs{F::mse_loss(in[0], in[1]), F::mse_loss(in[0], in[1], "none")};
      },
      2);
  reg(
      "nn.l1_loss", pair,
      [](const Inputs& in) {
        return Outs{F::l1_loss(in[0], in[1], "sum"), F::l1_loss(in[0], in[1], "none")};
      },
      2);
  reg(
      "nn.huber_loss", pair,
      [](const Inputs& in) {
        return Outs{F::huber_loss(in[0], in[1], "none", 0.8), F::huber_loss(in[0], in[1])};
      },
      2);
  reg(
      "nn.smooth_l1_loss", pair,
      [](const Inputs& in) {
        return Outs{F::smooth_l1_loss(in[0], in[1], "none", 0.6), F::smooth_l1_loss(in[0], in[1])};
      },
      2);
  reg(
      "nn.binary_cross_entropy",
      [](DType dt, uint64_t s) {
        return Inputs{uniform({4, 5}, dt, s, 0.02, 0.98), uniform({4, 5}, dt, s + 1, 0, 1),
                      uniform({5}, dt, s + 2, 0.2, 2)};
      },
      [](const Inputs& in) {
        return Outs{F::binary_cross_entropy(in[0], in[1], in[2]),
                    F::binary_cross_entropy(in[0], in[1], Tensor(), "none")};
      },
      2);
  reg(
      "nn.binary_cross_entropy_with_logits",
      [](DType dt, uint64_t s) {
        return Inputs{uniform({4, 5}, dt, s, -4, 4), uniform({4, 5}, dt, s + 1, 0, 1),
                      uniform({5}, dt, s + 2, 0.2, 2), uniform({5}, dt, s + 3, 0.5, 3)};
      },
      [](const Inputs& in) {
        return Outs{F::binary_cross_entropy_with_logits(in[0], in[1], in[2], "mean", in[3]),
                    F::binary_cross_entropy_with_logits(in[0], in[1], Tensor(), "none")};
      },
      2);
  reg(
      "nn.kl_div",
      [](DType dt, uint64_t s) {
        return Inputs{uniform({4, 5}, dt, s, -3, 0), uniform({4, 5}, dt, s + 1, 0, 1)};
      },
      [](const Inputs& in) {
        return Outs{F::kl_div(in[0], in[1], "batchmean"), F::kl_div(in[0], in[1], "none"),
                    F::kl_div(in[0], in[0], "mean", true)};
      },
      2);
  return 0;
}();

InFn qkv(Shape q, Shape k, Shape v) {
  return [q, k, v](DType dt, uint64_t s) {
    return Inputs{uniform(q, dt, s), uniform(k, dt, s + 1), uniform(v, dt, s + 2)};
  };
}

const int kAttention = [] {
  reg(
      "nn.scaled_dot_product_attention", qkv({2, 4, 8}, {2, 6, 8}, {2, 6, 3}),
      [](const Inputs& in) { return Outs{F::scaled_dot_product_attention(in[0], in[1], in[2])}; },
      4);
  reg(
      "nn.scaled_dot_product_attention/causal_scale", qkv({2, 5, 4}, {2, 5, 4}, {2, 5, 4}),
      [](const Inputs& in) {
        return Outs{F::scaled_dot_product_attention(in[0], in[1], in[2], Tensor(), 0, true, 0.3)};
      },
      4);
  reg(
      "nn.scaled_dot_product_attention/masks",
      [](DType dt, uint64_t s) {
        return Inputs{uniform({3, 4}, dt, s), uniform({5, 4}, dt, s + 1),
                      uniform({5, 2}, dt, s + 2), uniform({3, 5}, dt, s + 3)};
      },
      [](const Inputs& in) {
        Tensor bool_mask = gt(in[3], -1.0);
        return Outs{F::scaled_dot_product_attention(in[0], in[1], in[2], in[3]),
                    F::scaled_dot_product_attention(in[0], in[1], in[2], bool_mask)};
      },
      4);
  reg(
      "nn.embedding",
      [](DType dt, uint64_t s) {
        return Inputs{uniform({7, 3}, dt, s), integers({2, 5}, DType::i64, s + 1, 0, 7)};
      },
      [](const Inputs& in) { return Outs{F::embedding(in[1], in[0], 2)}; });
  return 0;
}();

// Pooling without indices (the cases the cpu backend runs through oneDNN, and those it declines
// to the composite): ceil_mode, padding, dilation, stride != kernel, count_include_pad both ways.
const int kPooling = [] {
  auto pool = [](const std::string& name, Shape shape, std::function<Tensor(const Tensor&)> f) {
    reg("nn." + name, x_of(std::move(shape)), [f](const Inputs& in) { return Outs{f(in[0])}; });
  };
  pool("max_pool1d/k3_s2_p1_dil2_ceil", {2, 3, 12},
       [](const Tensor& x) { return F::max_pool1d(x, {3}, {2}, {1}, {2}, true); });
  pool("max_pool2d/stem_k3_s2_p1", {2, 4, 12, 11},
       [](const Tensor& x) { return F::max_pool2d(x, {3}, {2}, {1}); });
  pool("max_pool2d/k3x2_s1x2_p1_dil2x1_ceil", {1, 3, 9, 10}, [](const Tensor& x) {
    return F::max_pool2d(x, {3, 2}, {1, 2}, {1}, {2, 1}, true);
  });
  pool("max_pool2d/padding_only_window", {1, 2, 2, 5}, [](const Tensor& x) {
    return F::max_pool2d(x, {2, 1}, {1}, {1, 0}, {3, 1});
  });
  pool("max_pool3d/k3_s2_p1_ceil", {1, 2, 6, 5, 7},
       [](const Tensor& x) { return F::max_pool3d(x, {3}, {2}, {1}, {1}, true); });
  pool("avg_pool1d/k4_s3_p2", {2, 3, 11},
       [](const Tensor& x) { return F::avg_pool1d(x, {4}, {3}, {2}); });
  pool("avg_pool2d/k3_s2_p1_incl", {2, 3, 9, 8},
       [](const Tensor& x) { return F::avg_pool2d(x, {3}, {2}, {1}); });
  pool("avg_pool2d/k3_s2_p1_excl", {2, 3, 9, 8},
       [](const Tensor& x) { return F::avg_pool2d(x, {3}, {2}, {1}, false, false); });
  pool("avg_pool2d/k3_s2_p1_ceil_incl_clipped", {1, 3, 8, 8},
       [](const Tensor& x) { return F::avg_pool2d(x, {3}, {2}, {1}, true, true); });
  pool("avg_pool2d/k3_s2_p1_ceil_excl", {1, 3, 8, 8},
       [](const Tensor& x) { return F::avg_pool2d(x, {3}, {2}, {1}, true, false); });
  pool("avg_pool2d/k2x3_s3x1_p1_divisor", {1, 2, 8, 7}, [](const Tensor& x) {
    return F::avg_pool2d(x, {2, 3}, {3, 1}, {1}, false, true, 4);
  });
  pool("avg_pool3d/k3_s2_p1_incl", {1, 2, 5, 7, 6},
       [](const Tensor& x) { return F::avg_pool3d(x, {3}, {2}, {1}); });
  pool("avg_pool3d/k2_s1_p1_ceil_excl", {1, 2, 4, 5, 3},
       [](const Tensor& x) { return F::avg_pool3d(x, {2}, {1}, {1}, true, false); });
  return 0;
}();

}  // namespace
}  // namespace ember::testing
