// Normalization layers as composites of public tensor ops (mean, rsqrt...), layer_norm and
// rms_norm after the fused norms of src/ops/fast.h where the backend takes them. f16/bf16 inputs
// are normalized in f32 and rounded back once.
#include "ember/nn/functional/norm.h"

#include <limits>

#include "nn/functional/common.h"
#include "ops/fast.h"
#include "tensor/autocast.h"
#include "tensor/suggest_format.h"

namespace ember::nn::functional {

using ember::detail::cast;
using ember::detail::describe;

namespace {

// Checks an optional per-channel parameter holds `c` elements; returns it upcast and shaped
// [1, C, 1, ...] for an input of rank `rank` (undefined stays undefined).
Tensor channel_param(const Tensor& p, const Tensor& input, int64_t c, int64_t rank,
                     const char* what, const char* op) {
  if (!p.defined()) return p;
  ember::detail::check_same_device(input, p, op);
  if (p.dim() != 1 || p.numel() != c)
    EMBER_FAIL(op, what, " should be a [", c, "] tensor for input ", shape_str(input.shape()),
               ", got ", shape_str(p.shape()));
  Shape s(size_t(rank), 1);
  s[1] = c;
  return detail::upcast(p).reshape(s);
}

// The trailing dims of `input` that normalized_shape names, after checking they match.
std::vector<int64_t> trailing_dims(const Tensor& input, const Shape& normalized_shape,
                                   const char* op) {
  const int64_t k = int64_t(normalized_shape.size());
  if (k == 0) EMBER_FAIL(op, "expected normalized_shape to be at least 1-dimensional");
  bool ok = input.dim() >= k;
  for (int64_t i = 0; ok && i < k; ++i)
    ok = input.size(input.dim() - k + i) == normalized_shape[size_t(i)];
  if (!ok)
    EMBER_FAIL(op, "given normalized_shape=", shape_str(normalized_shape),
               ", expected input with shape [*, ", shape_str(normalized_shape).substr(1),
               ", but got input of shape ", shape_str(input.shape()));
  std::vector<int64_t> dims;
  for (int64_t i = input.dim() - k; i < input.dim(); ++i) dims.push_back(i);
  return dims;
}

void check_affine(const Tensor& p, const Tensor& input, const Shape& normalized_shape,
                  const char* what, const char* op) {
  if (!p.defined()) return;
  ember::detail::check_same_device(input, p, op);
  if (p.shape() != normalized_shape)
    EMBER_FAIL(op, what, " should have shape ", shape_str(normalized_shape), ", got ",
               shape_str(p.shape()));
}

Tensor affine(Tensor y, const Tensor& weight, const Tensor& bias) {
  if (weight.defined()) y = y * detail::upcast(weight);
  if (bias.defined()) y = y + detail::upcast(bias);
  return y;
}

// In place: stat = (1 - momentum) * stat + momentum * value (value reshaped to stat's shape).
void update_running(const Tensor& stat, const Tensor& value, double momentum) {
  if (!stat.defined()) return;
  Tensor s = stat;  // shares storage: the caller's tensor is updated
  Tensor upd = detail::upcast(stat) * (1 - momentum) + value.reshape(stat.shape()) * momentum;
  s.copy_(upd);
}

}  // namespace

Tensor layer_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  if (ember::detail::amp::Scope s{ember::detail::amp::Policy::f32_gpu, input})
    return layer_norm(s(input), normalized_shape, s(weight), s(bias), eps);
  detail::check_float_input(input, "layer_norm");
  const auto dims = trailing_dims(input, normalized_shape, "layer_norm");
  check_affine(weight, input, normalized_shape, "weight", "layer_norm");
  check_affine(bias, input, normalized_shape, "bias", "layer_norm");
  Tensor x = detail::upcast(input);
  // The fused norm (src/ops/fast.h) takes the affine parameters in x's (compute) dtype.
  const Tensor w = weight.defined() ? detail::upcast(weight) : weight;
  const Tensor b = bias.defined() ? detail::upcast(bias) : bias;
  if (Tensor y = ops::fast::layer_norm(x, w, b, normalized_shape, eps); y.defined())
    return cast(y, input.dtype());
  Tensor d = x - mean(x, dims, true);
  Tensor y = d * rsqrt(mean(d * d, dims, true) + eps);
  return cast(affine(y, weight, bias), input.dtype());
}

Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                  double eps) {
  if (ember::detail::amp::Scope s{ember::detail::amp::Policy::f32_gpu, input})
    return group_norm(s(input), num_groups, s(weight), s(bias), eps);
  detail::check_float_input(input, "group_norm");
  if (input.dim() < 2)
    EMBER_FAIL("group_norm", "expected input of shape [N, C, *], got ", shape_str(input.shape()));
  const int64_t n = input.size(0), c = input.size(1);
  if (num_groups <= 0 || c % num_groups != 0)
    EMBER_FAIL("group_norm", "expected number of channels in input to be divisible by num_groups, ",
               "but got input of shape ", shape_str(input.shape()), " and num_groups=", num_groups);
  Tensor w = channel_param(weight, input, c, input.dim(), "weight", "group_norm");
  Tensor b = channel_param(bias, input, c, input.dim(), "bias", "group_norm");
  if (input.numel() == 0) return cast(affine(detail::upcast(input), w, b), input.dtype());
  Tensor x = detail::upcast(input).reshape({n, num_groups, -1});
  Tensor d = x - mean(x, {2}, true);
  Tensor y = (d * rsqrt(mean(d * d, {2}, true) + eps)).reshape(input.shape());
  // As torch, a channels-last input gives a channels-last result.
  return cast(affine(y, w, b), input.dtype()).contiguous(ember::detail::suggest_format(input));
}

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps) {
  const char* op = "batch_norm";
  detail::check_float_input(input, op);
  if (input.dim() < 2)
    EMBER_FAIL(op, "expected input of shape [N, C, *], got ", shape_str(input.shape()));
  const int64_t c = input.size(1), rank = input.dim();
  Tensor w = channel_param(weight, input, c, rank, "weight", op);
  Tensor b = channel_param(bias, input, c, rank, "bias", op);
  Tensor rm = channel_param(running_mean, input, c, rank, "running_mean", op);
  Tensor rv = channel_param(running_var, input, c, rank, "running_var", op);
  Tensor x = detail::upcast(input);
  Tensor mu, var;
  if (training) {
    const int64_t per_channel = c ? input.numel() / c : 0;
    if (per_channel == 1)
      EMBER_FAIL(op, "expected more than 1 value per channel when training, got input of shape ",
                 shape_str(input.shape()));
    std::vector<int64_t> dims{0};
    for (int64_t i = 2; i < rank; ++i) dims.push_back(i);
    mu = mean(x, dims, true);
    Tensor d = x - mu;
    var = mean(d * d, dims, true);
    if (per_channel > 1) {
      update_running(running_mean, mu, momentum);
      update_running(running_var, var * (double(per_channel) / double(per_channel - 1)), momentum);
    }
  } else {
    if (!rm.defined() || !rv.defined())
      EMBER_FAIL(op, "running_mean and running_var must be given when training is false");
    mu = rm;
    var = rv;
  }
  // As torch's cpu kernel: per-channel scale and shift first, so the activation is read twice
  // (x * scale, + shift) instead of four times; y = x * scale + (b - mu * scale).
  Tensor scale = rsqrt(detail::upcast(var) + eps);
  if (w.defined()) scale = scale * detail::upcast(w);
  Tensor shift = -(detail::upcast(mu) * scale);
  if (b.defined()) shift = shift + detail::upcast(b);
  return cast(x * scale + shift, input.dtype());
}

Tensor instance_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                     const Tensor& weight, const Tensor& bias, bool use_input_stats,
                     double momentum, double eps) {
  const char* op = "instance_norm";
  detail::check_float_input(input, op);
  if (input.dim() < 2)
    EMBER_FAIL(op, "expected input of shape [N, C, *], got ", shape_str(input.shape()));
  const int64_t c = input.size(1), rank = input.dim();
  Tensor w = channel_param(weight, input, c, rank, "weight", op);
  Tensor b = channel_param(bias, input, c, rank, "bias", op);
  Tensor rm = channel_param(running_mean, input, c, rank, "running_mean", op);
  Tensor rv = channel_param(running_var, input, c, rank, "running_var", op);
  Tensor x = detail::upcast(input);
  Tensor mu, var;
  if (use_input_stats) {
    int64_t spatial = 1;
    for (int64_t i = 2; i < rank; ++i) spatial *= input.size(i);
    if (spatial == 1)
      EMBER_FAIL(op, "expected more than 1 spatial element when training, got input of shape ",
                 shape_str(input.shape()));
    std::vector<int64_t> dims;
    for (int64_t i = 2; i < rank; ++i) dims.push_back(i);
    mu = mean(x, dims, true);
    Tensor d = x - mu;
    var = mean(d * d, dims, true);
    // Running stats take the batch mean of the per-instance statistics, as torch.
    if (spatial > 1 && input.size(0) > 0) {
      update_running(running_mean, mean(mu, {0}), momentum);
      update_running(running_var, mean(var, {0}) * (double(spatial) / double(spatial - 1)),
                     momentum);
    }
  } else {
    if (!rm.defined() || !rv.defined())
      EMBER_FAIL(op, "running_mean and running_var must be given when use_input_stats is false");
    mu = rm;
    var = rv;
  }
  // As torch's cpu kernel: per-channel scale and shift first, so the activation is read twice
  // (x * scale, + shift) instead of four times; y = x * scale + (b - mu * scale).
  Tensor scale = rsqrt(detail::upcast(var) + eps);
  if (w.defined()) scale = scale * detail::upcast(w);
  Tensor shift = -(detail::upcast(mu) * scale);
  if (b.defined()) shift = shift + detail::upcast(b);
  return cast(x * scale + shift, input.dtype());
}

Tensor rms_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight,
                std::optional<double> eps) {
  detail::check_float_input(input, "rms_norm");
  const auto dims = trailing_dims(input, normalized_shape, "rms_norm");
  check_affine(weight, input, normalized_shape, "weight", "rms_norm");
  // torch's default: epsilon of the type it computes in (float for f16/bf16).
  const double e =
      eps ? *eps
          : (input.dtype() == DType::f64 ? std::numeric_limits<double>::epsilon()
                                         : double(std::numeric_limits<float>::epsilon()));
  Tensor x = detail::upcast(input);
  DType out = input.dtype();
  const Tensor w = weight.defined() ? detail::upcast(weight) : weight;
  if (Tensor y = ops::fast::rms_norm(x, w, normalized_shape, e); y.defined())
    return cast(y, weight.defined() ? ember::detail::result_type(input, weight) : out);
  Tensor y = x * rsqrt(mean(x * x, dims, true) + e);
  if (weight.defined()) {
    out = ember::detail::result_type(input, weight);
    y = y * detail::upcast(weight);
  }
  return cast(y, out);
}

Tensor normalize(const Tensor& input, double p, int64_t dim, double eps) {
  detail::check_float_input(input, "normalize");
  const int64_t d = wrap_dim(dim, input.dim(), "normalize");
  Tensor x = detail::upcast(input);
  if (x.dim() == 0) x = x.reshape({1});
  Tensor n = clamp_min(norm(x, p, {d}, true), eps);
  return cast(x / n, input.dtype()).reshape(input.shape());
}

}  // namespace ember::nn::functional
