// torch.nn.init in place under NoGradGuard, drawing from the device's Philox generator.
#include "ember/nn/init.h"

#include <cmath>
#include <vector>

#include "ember/autograd.h"
#include "ember/ops/elementwise.h"
#include "tensor/internal.h"

namespace ember::nn::init {

namespace {
void check_float(const Tensor& t, const char* op) {
  ember::detail::check_defined(t, op);
  ember::detail::check_floating(t, op);
}

int64_t fan(const Tensor& t, FanMode mode) {
  auto f = calculate_fan_in_and_fan_out(t);
  return mode == FanMode::FanIn ? f.first : f.second;
}

const char* fan_name(FanMode m) { return m == FanMode::FanIn ? "fan_in" : "fan_out"; }
}  // namespace

double calculate_gain(const std::string& nl, double param) {
  static const char* linear_fns[] = {"linear",           "conv1d",           "conv2d",
                                     "conv3d",           "conv_transpose1d", "conv_transpose2d",
                                     "conv_transpose3d", "sigmoid"};
  for (const char* n : linear_fns)
    if (nl == n) return 1.0;
  if (nl == "tanh") return 5.0 / 3.0;
  if (nl == "relu") return std::sqrt(2.0);
  if (nl == "leaky_relu") {
    if (!std::isfinite(param))
      EMBER_FAIL("calculate_gain", "negative_slope ", param, " is not a valid number");
    return std::sqrt(2.0 / (1.0 + param * param));
  }
  if (nl == "selu") return 3.0 / 4.0;
  EMBER_FAIL("calculate_gain", "unsupported nonlinearity '", nl, "'");
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  ember::detail::check_defined(t, "calculate_fan_in_and_fan_out");
  if (t.dim() < 2)
    EMBER_FAIL(
        "calculate_fan_in_and_fan_out",
        "fan in and fan out can not be computed for a tensor with fewer than 2 dimensions, got ",
        shape_str(t.shape()));
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

Tensor uniform_(Tensor t, double a, double b) {
  check_float(t, "uniform_");
  if (!(a <= b)) EMBER_FAIL("uniform_", "expects a <= b, got a=", a, " b=", b);
  NoGradGuard g;
  t.uniform_(a, b);
  return t;
}

Tensor normal_(Tensor t, double mean, double std) {
  check_float(t, "normal_");
  if (!(std >= 0)) EMBER_FAIL("normal_", "expects std >= 0, got ", std);
  NoGradGuard g;
  t.normal_(mean, std);
  return t;
}

Tensor trunc_normal_(Tensor t, double mean, double std, double a, double b) {
  check_float(t, "trunc_normal_");
  if (!(a < b)) EMBER_FAIL("trunc_normal_", "expects a < b, got a=", a, " b=", b);
  if (!(std > 0)) EMBER_FAIL("trunc_normal_", "expects std > 0, got ", std);
  NoGradGuard g;
  auto cdf = [](double x) { return (1.0 + std::erf(x / std::sqrt(2.0))) / 2.0; };
  const double l = cdf((a - mean) / std), u = cdf((b - mean) / std);
  // Uniform in [2l-1, 2u-1], then the inverse CDF of the standard normal via erfinv (torch's
  // method), computed in f64 so that f16/bf16 tensors get correctly rounded values.
  Tensor v = empty(t.shape(), TensorOptions(DType::f64, t.device()));
  v.uniform_(2 * l - 1, 2 * u - 1);
  v = erfinv(v) * (std * std::sqrt(2.0)) + mean;
  t.copy_(clamp(v, a, b));
  return t;
}

Tensor constant_(Tensor t, double val) {
  ember::detail::check_defined(t, "constant_");
  NoGradGuard g;
  t.fill_(val);
  return t;
}
Tensor zeros_(Tensor t) { return constant_(std::move(t), 0.0); }
Tensor ones_(Tensor t) { return constant_(std::move(t), 1.0); }

Tensor eye_(Tensor t) {
  ember::detail::check_defined(t, "eye_");
  if (t.dim() != 2)
    EMBER_FAIL("eye_", "only tensors with 2 dimensions are supported, got ", shape_str(t.shape()));
  NoGradGuard g;
  t.copy_(eye(t.size(0), t.size(1), TensorOptions(t.dtype(), t.device())));
  return t;
}

Tensor xavier_uniform_(Tensor t, double gain) {
  check_float(t, "xavier_uniform_");
  auto f = calculate_fan_in_and_fan_out(t);
  const double std = gain * std::sqrt(2.0 / double(f.first + f.second));
  const double a = std::sqrt(3.0) * std;
  NoGradGuard g;
  t.uniform_(-a, a);
  return t;
}

Tensor xavier_normal_(Tensor t, double gain) {
  check_float(t, "xavier_normal_");
  auto f = calculate_fan_in_and_fan_out(t);
  const double std = gain * std::sqrt(2.0 / double(f.first + f.second));
  NoGradGuard g;
  t.normal_(0.0, std);
  return t;
}

Tensor kaiming_uniform_(Tensor t, double a, FanMode mode, const std::string& nonlinearity) {
  check_float(t, "kaiming_uniform_");
  if (t.numel() == 0) return t;  // torch warns and returns
  const int64_t f = fan(t, mode);
  const double gain = calculate_gain(nonlinearity, a);
  if (f == 0) EMBER_FAIL("kaiming_uniform_", fan_name(mode), " is 0 for ", shape_str(t.shape()));
  const double bound = std::sqrt(3.0) * gain / std::sqrt(double(f));
  NoGradGuard g;
  t.uniform_(-bound, bound);
  return t;
}

Tensor kaiming_normal_(Tensor t, double a, FanMode mode, const std::string& nonlinearity) {
  check_float(t, "kaiming_normal_");
  if (t.numel() == 0) return t;
  const int64_t f = fan(t, mode);
  const double gain = calculate_gain(nonlinearity, a);
  if (f == 0) EMBER_FAIL("kaiming_normal_", fan_name(mode), " is 0 for ", shape_str(t.shape()));
  NoGradGuard g;
  t.normal_(0.0, gain / std::sqrt(double(f)));
  return t;
}

Tensor orthogonal_(Tensor t, double gain) {
  check_float(t, "orthogonal_");
  if (t.dim() < 2)
    EMBER_FAIL("orthogonal_", "only tensors with 2 or more dimensions are supported, got ",
               shape_str(t.shape()));
  if (t.numel() == 0) return t;
  NoGradGuard g;
  const int64_t rows = t.size(0), cols = t.numel() / rows;
  // QR of the tall matrix A [m, n] (m >= n): A = randn, transposed when rows < cols.
  const bool transpose = rows < cols;
  const int64_t m = transpose ? cols : rows, n = transpose ? rows : cols;
  Tensor flat = randn({rows, cols}, TensorOptions(DType::f64, t.device()));
  std::vector<double> a =
      (transpose ? flat.t() : flat).contiguous().to(Device::cpu()).to_vector<double>();
  // Modified Gram-Schmidt on the columns of a (row-major [m, n]); r_jj's sign fixes Q uniquely.
  std::vector<double> q(size_t(m * n));
  for (int64_t j = 0; j < n; ++j) {
    std::vector<double> v(static_cast<size_t>(m));
    for (int64_t i = 0; i < m; ++i) v[size_t(i)] = a[size_t(i * n + j)];
    for (int64_t k = 0; k < j; ++k) {
      double dot = 0;
      for (int64_t i = 0; i < m; ++i) dot += q[size_t(i * n + k)] * v[size_t(i)];
      for (int64_t i = 0; i < m; ++i) v[size_t(i)] -= dot * q[size_t(i * n + k)];
    }
    double norm = 0;
    for (double x : v) norm += x * x;
    norm = std::sqrt(norm);
    // norm (= |r_jj|) is positive with probability one for a Gaussian matrix.
    for (int64_t i = 0; i < m; ++i) q[size_t(i * n + j)] = norm > 0 ? v[size_t(i)] / norm : 0.0;
  }
  Tensor qt = from_vector<double>(q, {m, n}, t.device());
  if (transpose) qt = qt.t();
  t.copy_((qt * gain).reshape(t.shape()));
  return t;
}

}  // namespace ember::nn::init
