// Positional encodings: sinusoidal table, learned table, rotary embedding.
#include "ember/nn/modules/encoding.h"

#include <cmath>
#include <vector>

#include "ember/autograd.h"
#include "ember/nn/functional/activation.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/layout.h"
#include "tensor/internal.h"

namespace ember::nn {

namespace {

// The rows [offset, offset + L) of table [max_len, d], shaped to broadcast against x
// ([L, d] for unbatched or batch_first inputs, [L, 1, d] for seq-first batched ones).
Tensor positions_for(const Tensor& x, const Tensor& table, int64_t offset, bool batch_first,
                     const char* op) {
  ember::detail::check_defined(x, op);
  ember::detail::check_floating(x, op);
  const int64_t d = table.size(1), max_len = table.size(0);
  if (x.dim() != 2 && x.dim() != 3)
    EMBER_FAIL(op, "expected a 2-d [L, d_model] or 3-d input, got shape ", shape_str(x.shape()));
  if (x.size(-1) != d)
    EMBER_FAIL(op, "input's last dim ", x.size(-1), " does not match d_model ", d, " (input ",
               shape_str(x.shape()), ")");
  ember::detail::check_same_device(x, table, op);
  const int64_t len = (x.dim() == 3 && batch_first) ? x.size(1) : x.size(0);
  if (offset < 0 || offset + len > max_len)
    EMBER_FAIL(op, "positions [", offset, ", ", offset + len,
               ") are outside [0, max_len = ", max_len, ") (input ", shape_str(x.shape()), ")");
  Tensor rows = table.narrow(0, offset, len);
  return (x.dim() == 3 && !batch_first) ? rows.unsqueeze(1) : rows;
}

}  // namespace

SinusoidalPositionalEncoding::SinusoidalPositionalEncoding(int64_t d_model, int64_t max_len,
                                                           double dropout, bool batch_first)
    : UnaryModule("SinusoidalPositionalEncoding"),
      d_model(d_model),
      max_len(max_len),
      dropout(dropout),
      batch_first(batch_first) {
  const char* op = "SinusoidalPositionalEncoding";
  if (d_model <= 0 || max_len <= 0)
    EMBER_FAIL(op, "d_model and max_len must be positive, got ", d_model, " and ", max_len);
  if (!(dropout >= 0 && dropout <= 1))
    EMBER_FAIL(op, "dropout probability has to be between 0 and 1, but got ", dropout);
  std::vector<float> v(size_t(max_len * d_model));
  for (int64_t pos = 0; pos < max_len; ++pos)
    for (int64_t j = 0; j < d_model; ++j) {
      const double angle = double(pos) / std::pow(10000.0, double(j - j % 2) / double(d_model));
      v[size_t(pos * d_model + j)] = float(j % 2 == 0 ? std::sin(angle) : std::cos(angle));
    }
  pe = register_buffer("pe", from_vector<float>(v, {max_len, d_model}));
}

Tensor SinusoidalPositionalEncoding::forward(const Tensor& x, int64_t offset) {
  Tensor rows = positions_for(x, pe, offset, batch_first, "SinusoidalPositionalEncoding");
  Tensor y = x + ember::detail::cast(rows, x.dtype());
  return functional::dropout(y, dropout, is_training());
}

std::string SinusoidalPositionalEncoding::extra_repr() const {
  std::string s = "d_model=" + std::to_string(d_model) + ", max_len=" + std::to_string(max_len);
  if (dropout != 0) s += ", dropout=" + detail::float_str(dropout);
  if (batch_first) s += ", batch_first=True";
  return s;
}

LearnedPositionalEmbedding::LearnedPositionalEmbedding(int64_t max_len, int64_t d_model,
                                                       bool batch_first)
    : UnaryModule("LearnedPositionalEmbedding"),
      max_len(max_len),
      d_model(d_model),
      batch_first(batch_first) {
  if (d_model <= 0 || max_len <= 0)
    EMBER_FAIL("LearnedPositionalEmbedding", "max_len and d_model must be positive, got ", max_len,
               " and ", d_model);
  weight = register_parameter("weight", empty({max_len, d_model}));
  reset_parameters();
}

void LearnedPositionalEmbedding::reset_parameters() {
  NoGradGuard no_grad;
  weight.normal_(0.0, 1.0);
}

Tensor LearnedPositionalEmbedding::forward(const Tensor& x, int64_t offset) {
  Tensor rows = positions_for(x, weight, offset, batch_first, "LearnedPositionalEmbedding");
  if (x.dtype() != weight.dtype())
    EMBER_FAIL("LearnedPositionalEmbedding", "input dtype ", dtype_name(x.dtype()),
               " does not match weight's ", dtype_name(weight.dtype()), " (use Module::to)");
  return x + rows;
}

std::string LearnedPositionalEmbedding::extra_repr() const {
  std::string s = "max_len=" + std::to_string(max_len) + ", d_model=" + std::to_string(d_model);
  if (batch_first) s += ", batch_first=True";
  return s;
}

RotaryEmbedding::RotaryEmbedding(int64_t dim, double base)
    : Module("RotaryEmbedding"), dim(dim), base(base) {
  if (dim <= 0 || dim % 2 != 0)
    EMBER_FAIL("RotaryEmbedding", "dim must be positive and even, got ", dim);
  if (!(base > 0)) EMBER_FAIL("RotaryEmbedding", "base must be positive, got ", base);
}

Tensor RotaryEmbedding::apply(const Tensor& x, int64_t offset) const {
  const char* op = "RotaryEmbedding";
  ember::detail::check_defined(x, op);
  ember::detail::check_floating(x, op);
  if (x.dim() < 2 || x.size(-1) < dim)
    EMBER_FAIL(op, "expected input [..., L, head_dim] with head_dim >= dim = ", dim, ", got ",
               shape_str(x.shape()));
  if (offset < 0) EMBER_FAIL(op, "offset must be >= 0, got ", offset);
  const int64_t len = x.size(-2), half = dim / 2;
  std::vector<double> c(size_t(len * dim)), s(size_t(len * dim));
  for (int64_t l = 0; l < len; ++l)
    for (int64_t j = 0; j < half; ++j) {
      const double angle = double(offset + l) * std::pow(base, -2.0 * double(j) / double(dim));
      for (int64_t k : {j, j + half}) {
        c[size_t(l * dim + k)] = std::cos(angle);
        s[size_t(l * dim + k)] = std::sin(angle);
      }
    }
  Tensor cos_t = from_vector<double>(c, {len, dim}, x.device()).to(x.dtype());
  Tensor sin_t = from_vector<double>(s, {len, dim}, x.device()).to(x.dtype());
  Tensor xr = x.narrow(-1, 0, dim);
  Tensor rotated = cat({-xr.narrow(-1, half, half), xr.narrow(-1, 0, half)}, -1);
  Tensor out = xr * cos_t + rotated * sin_t;
  if (dim == x.size(-1)) return out;
  return cat({out, x.narrow(-1, dim, x.size(-1) - dim)}, -1);
}

std::string RotaryEmbedding::extra_repr() const {
  return "dim=" + std::to_string(dim) + ", base=" + detail::float_str(base);
}

}  // namespace ember::nn
