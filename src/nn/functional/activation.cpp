// Activations and softmax: element-wise ones are the activation primitives (src/ops/activation.h),
// the rest are composites of public tensor ops (so autodiff and every backend get them for free);
// softmax and log_softmax first try the fused softmax (src/ops/fast.h).
#include "ember/nn/functional/activation.h"

#include <cmath>
#include <limits>

#include "nn/functional/common.h"
#include "ops/activation.h"
#include "ops/fast.h"
#include "tensor/autocast.h"

namespace ember::nn::functional {

using ember::detail::describe;

namespace {

// Math activations promote integer/bool input to f32.
Tensor to_float(const Tensor& x, const char* op) {
  ember::detail::check_defined(x, op);
  return is_floating(x.dtype()) ? x : x.to(kDefaultFloat);
}

// Shared front of softmax/log_softmax/softmin: validated, cast, upcast input and wrapped dim.
// 0-d input is treated as [1].
Tensor softmax_input(const Tensor& input, int64_t& dim, std::optional<DType> dtype,
                     const char* op) {
  ember::detail::check_defined(input, op);
  Tensor x = dtype ? ember::detail::cast(input, *dtype) : input;
  if (!is_floating(x.dtype()))
    EMBER_FAIL(op, "expects a floating-point tensor (or a floating dtype argument), got ",
               describe(input));
  dim = wrap_dim(dim, x.dim(), op);
  if (x.dim() == 0) x = x.reshape({1});
  return detail::upcast(x);
}

}  // namespace

Tensor softmax(const Tensor& input, int64_t dim, std::optional<DType> dtype) {
  if (!dtype)
    if (ember::detail::amp::Scope s{ember::detail::amp::Policy::f32_gpu, input})
      return softmax(s(input), dim, dtype);
  Tensor x = softmax_input(input, dim, dtype, "softmax");
  const DType out = dtype ? *dtype : input.dtype();
  if (x.numel() == 0) return zeros(input.shape(), {out, input.device()});
  if (Tensor y = ops::fast::softmax(x, dim, false); y.defined())
    return ember::detail::cast(y, out).reshape(input.shape());
  Tensor e = exp(x - amax(x, {dim}, true));
  return ember::detail::cast(e / sum(e, {dim}, true), out).reshape(input.shape());
}

Tensor log_softmax(const Tensor& input, int64_t dim, std::optional<DType> dtype) {
  if (!dtype)
    if (ember::detail::amp::Scope s{ember::detail::amp::Policy::f32_gpu, input})
      return log_softmax(s(input), dim, dtype);
  Tensor x = softmax_input(input, dim, dtype, "log_softmax");
  const DType out = dtype ? *dtype : input.dtype();
  if (x.numel() == 0) return zeros(input.shape(), {out, input.device()});
  if (Tensor y = ops::fast::softmax(x, dim, true); y.defined())
    return ember::detail::cast(y, out).reshape(input.shape());
  Tensor shifted = x - amax(x, {dim}, true);
  Tensor r = shifted - log(sum(exp(shifted), {dim}, true));
  return ember::detail::cast(r, out).reshape(input.shape());
}

Tensor softmin(const Tensor& input, int64_t dim, std::optional<DType> dtype) {
  ember::detail::check_defined(input, "softmin");
  Tensor x = dtype ? ember::detail::cast(input, *dtype) : input;
  if (!is_floating(x.dtype()))
    EMBER_FAIL("softmin", "expects a floating-point tensor (or a floating dtype argument), got ",
               describe(input));
  return softmax(-x, dim);
}

Tensor relu(const Tensor& input) { return ops::relu(input); }

Tensor hardtanh(const Tensor& input, double min_val, double max_val) {
  ember::detail::check_defined(input, "hardtanh");
  if (min_val > max_val)
    EMBER_FAIL("hardtanh", "min_val (", min_val, ") cannot be greater than max_val (", max_val,
               ")");
  if (is_bool(input.dtype())) EMBER_FAIL("hardtanh", "is not supported for bool tensors");
  if (is_integral(input.dtype()))  // keep integer dtypes: integer bounds
    return clamp(input, Scalar(int64_t(std::ceil(min_val))), Scalar(int64_t(std::floor(max_val))));
  return clamp(input, Scalar(min_val), Scalar(max_val));
}

Tensor relu6(const Tensor& input) { return hardtanh(input, 0.0, 6.0); }

Tensor leaky_relu(const Tensor& input, double negative_slope) {
  return ops::leaky_relu(input, negative_slope);
}

Tensor elu(const Tensor& input, double alpha) { return ops::elu(input, alpha); }

Tensor selu(const Tensor& input) { return ops::selu(input); }

Tensor celu(const Tensor& input, double alpha) {
  Tensor x = to_float(input, "celu");
  if (alpha == 0) EMBER_FAIL("celu", "alpha cannot be 0 (it divides x)");
  // -0 gives +0, as torch (which computes exp(x / alpha) - 1 there) and elu
  return where(gt(x, 0), x, where(eq(x, 0), zeros_like(x), expm1(x / alpha) * alpha));
}

Tensor gelu(const Tensor& input, const std::string& approximate) {
  if (approximate == "none") return ops::gelu(input);
  if (approximate == "tanh") return ops::gelu_tanh(input);
  EMBER_FAIL("gelu", "approximate must be \"none\" or \"tanh\", got \"", approximate, "\"");
}

Tensor silu(const Tensor& input) { return ops::silu(input); }
Tensor mish(const Tensor& input) { return ops::mish(input); }

Tensor softplus(const Tensor& input, double beta, double threshold) {
  if (ember::detail::amp::Scope s{ember::detail::amp::Policy::f32_gpu, input})
    return softplus(s(input), beta, threshold);
  return ops::softplus(input, beta, threshold);
}

Tensor hardsigmoid(const Tensor& input) { return ops::hardsigmoid(input); }
Tensor hardswish(const Tensor& input) { return ops::hardswish(input); }
Tensor sigmoid(const Tensor& input) { return ops::sigmoid(input); }
Tensor log_sigmoid(const Tensor& input) { return ops::log_sigmoid(input); }
Tensor logsigmoid(const Tensor& input) { return log_sigmoid(input); }
Tensor tanh(const Tensor& input) { return ember::tanh(input); }

Tensor softsign(const Tensor& input) {
  Tensor x = to_float(input, "softsign");
  return x / (abs(x) + 1);
}

Tensor tanhshrink(const Tensor& input) {
  Tensor x = to_float(input, "tanhshrink");
  return x - ember::tanh(x);
}

Tensor hardshrink(const Tensor& input, double lambd) {
  Tensor x = to_float(input, "hardshrink");
  // NaN is kept (it is not inside [-lambd, lambd]), as torch.
  return where(logical_and(ge(x, -lambd), le(x, lambd)), zeros_like(x), x);
}

Tensor softshrink(const Tensor& input, double lambd) {
  Tensor x = to_float(input, "softshrink");
  if (!(lambd >= 0))
    EMBER_FAIL("softshrink", "lambda must be greater or equal to 0, but found to be ", lambd);
  return where(gt(x, lambd), x - lambd, where(lt(x, -lambd), x + lambd, x * 0));
}

Tensor threshold(const Tensor& input, double threshold, double value) {
  ember::detail::check_defined(input, "threshold");
  if (is_bool(input.dtype())) EMBER_FAIL("threshold", "is not supported for bool tensors");
  Tensor v = ember::detail::scalar_to_tensor(value, input.dtype(), input.device());
  return where(gt(input, threshold), input, v);
}

Tensor glu(const Tensor& input, int64_t dim) {
  ember::detail::check_defined(input, "glu");
  if (input.dim() == 0) EMBER_FAIL("glu", "does not support 0-d tensors");
  const int64_t d = wrap_dim(dim, input.dim(), "glu");
  const int64_t n = input.size(d);
  if (n % 2 != 0)
    EMBER_FAIL("glu", "halving dimension must be even, but dimension ", d, " of ",
               shape_str(input.shape()), " is size ", n);
  Tensor x = to_float(input, "glu");
  return x.narrow(d, 0, n / 2) * sigmoid(x.narrow(d, n / 2, n / 2));
}

Tensor prelu(const Tensor& input, const Tensor& weight) {
  if (ember::detail::amp::Scope s{ember::detail::amp::Policy::lower_gpu, {&input, &weight}})
    return prelu(s(input), s(weight));
  ember::detail::check_defined(input, "prelu");
  ember::detail::check_defined(weight, "prelu");
  ember::detail::check_same_device(input, weight, "prelu");
  if (input.dim() == 0) EMBER_FAIL("prelu", "does not support 0-d input");
  const int64_t channels = input.dim() >= 2 ? input.size(1) : 1;
  const int64_t n = weight.numel();
  if (n != 1 && n != channels)
    EMBER_FAIL("prelu", "mismatch of parameter numbers and input channel size: weight has ", n,
               " elements, input ", shape_str(input.shape()), " has ", channels, " channels");
  Tensor x = to_float(input, "prelu");
  Tensor w = weight.reshape({n});
  if (n != 1) {
    Shape s(size_t(x.dim()), 1);
    s[1] = n;
    w = w.reshape(s);
  }
  return where(gt(x, 0), x, w * x);
}

// ---- dropout ----

namespace {

void check_p(double p, const char* op) {
  if (!(p >= 0 && p <= 1))
    EMBER_FAIL(op, "dropout probability has to be between 0 and 1, but got ", p);
}

// Multiplies input by a Bernoulli(1 - p) mask of `mask_shape` (broadcast) scaled by 1 / (1 - p).
Tensor apply_dropout(const Tensor& input, double p, const Shape& mask_shape) {
  if (p == 1) return input * ember::detail::scalar_to_tensor(0, input.dtype(), input.device());
  Tensor noise = bernoulli(mask_shape, 1 - p, {input.dtype(), input.device()});
  return input * (noise / (1 - p));
}

Tensor feature_dropout(const Tensor& input, double p, bool training, const char* op,
                       int64_t batched_rank, bool allow_unbatched) {
  detail::check_float_input(input, op);
  check_p(p, op);
  const int64_t r = input.dim();
  const bool unbatched = allow_unbatched && r == batched_rank - 1;
  if (r != batched_rank && !unbatched)
    EMBER_FAIL(op, "expected ", batched_rank, "-d input", allow_unbatched ? " (or unbatched " : "",
               allow_unbatched ? std::to_string(batched_rank - 1) + "-d)" : std::string(), ", got ",
               shape_str(input.shape()));
  if (!training || p == 0 || input.numel() == 0) return input;
  Shape mask(size_t(r), 1);
  const int64_t channel_dims = unbatched ? 1 : 2;
  for (int64_t i = 0; i < channel_dims; ++i) mask[size_t(i)] = input.size(i);
  return apply_dropout(input, p, mask);
}

}  // namespace

Tensor dropout(const Tensor& input, double p, bool training) {
  detail::check_float_input(input, "dropout");
  check_p(p, "dropout");
  if (!training || p == 0 || input.numel() == 0) return input;
  return apply_dropout(input, p, input.shape());
}

Tensor dropout1d(const Tensor& input, double p, bool training) {
  return feature_dropout(input, p, training, "dropout1d", 3, true);
}

Tensor dropout2d(const Tensor& input, double p, bool training) {
  // torch reads a 3-d input as [N, C, L] (batched), not as unbatched [C, H, W].
  if (input.defined() && input.dim() == 3)
    return feature_dropout(input, p, training, "dropout2d", 3, false);
  return feature_dropout(input, p, training, "dropout2d", 4, false);
}

Tensor dropout3d(const Tensor& input, double p, bool training) {
  return feature_dropout(input, p, training, "dropout3d", 5, true);
}

}  // namespace ember::nn::functional
