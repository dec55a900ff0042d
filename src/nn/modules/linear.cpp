#include "ember/nn/modules/linear.h"

#include <cmath>

#include "ember/nn/init.h"
#include "ember/ops/linalg.h"
#include "tensor/internal.h"

namespace ember::nn {

Linear::Linear(const LinearOptions& o) : UnaryModule("Linear"), options(o) {
  if (o.in_features() < 0 || o.out_features() < 0)
    EMBER_FAIL("Linear", "in_features and out_features must be >= 0, got ", o.in_features(),
               " and ", o.out_features());
  weight = register_parameter("weight", empty({o.out_features(), o.in_features()}));
  if (o.bias()) bias = register_parameter("bias", empty({o.out_features()}));
  reset_parameters();
}

void Linear::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = options.in_features();
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Linear::forward(const Tensor& x) { return linear(x, weight, bias); }

std::string Linear::extra_repr() const {
  return "in_features=" + std::to_string(options.in_features()) +
         ", out_features=" + std::to_string(options.out_features()) +
         ", bias=" + detail::bool_str(bias.defined());
}

Bilinear::Bilinear(const BilinearOptions& o) : Module("Bilinear"), options(o) {
  if (o.in1_features() < 0 || o.in2_features() < 0 || o.out_features() < 0)
    EMBER_FAIL("Bilinear", "feature sizes must be >= 0");
  weight =
      register_parameter("weight", empty({o.out_features(), o.in1_features(), o.in2_features()}));
  if (o.bias()) bias = register_parameter("bias", empty({o.out_features()}));
  reset_parameters();
}

void Bilinear::reset_parameters() {
  const int64_t in1 = options.in1_features();
  const double bound = in1 > 0 ? 1.0 / std::sqrt(double(in1)) : 0.0;
  init::uniform_(weight, -bound, bound);
  if (bias.defined()) init::uniform_(bias, -bound, bound);
}

Tensor Bilinear::forward(const Tensor& x1, const Tensor& x2) {
  ember::detail::check_defined(x1, "bilinear");
  ember::detail::check_defined(x2, "bilinear");
  const int64_t in1 = options.in1_features(), in2 = options.in2_features(),
                out = options.out_features();
  Shape lead1(x1.shape()), lead2(x2.shape());
  if (x1.dim() < 1 || x2.dim() < 1 || x1.size(-1) != in1 || x2.size(-1) != in2)
    EMBER_FAIL("bilinear", "expected input1 [*, ", in1, "] and input2 [*, ", in2, "], got ",
               shape_str(x1.shape()), " and ", shape_str(x2.shape()));
  lead1.pop_back();
  lead2.pop_back();
  if (lead1 != lead2)
    EMBER_FAIL("bilinear", "input1 and input2 must have the same leading dims, got ",
               shape_str(x1.shape()), " and ", shape_str(x2.shape()));
  // t[b, o, j] = sum_i x1[b, i] W[o, i, j]; y[b, o] = sum_j t[b, o, j] x2[b, j].
  Tensor a = x1.reshape({-1, in1});
  Tensor b = x2.reshape({-1, in2});
  Tensor w = weight.permute({1, 0, 2}).reshape({in1, out * in2});
  Tensor t = matmul(a, w).reshape({-1, out, in2});
  Tensor y = (t * b.unsqueeze(1)).sum({-1});
  if (bias.defined()) y = y + bias;
  Shape res = lead1;
  res.push_back(out);
  return y.reshape(res);
}

std::string Bilinear::extra_repr() const {
  return "in1_features=" + std::to_string(options.in1_features()) +
         ", in2_features=" + std::to_string(options.in2_features()) +
         ", out_features=" + std::to_string(options.out_features()) +
         ", bias=" + detail::bool_str(bias.defined());
}

std::string Flatten::extra_repr() const {
  return "start_dim=" + std::to_string(start_dim) + ", end_dim=" + std::to_string(end_dim);
}

Tensor Unflatten::forward(const Tensor& x) {
  ember::detail::check_defined(x, "unflatten");
  const int64_t nd = x.dim();
  if (dim < -nd || dim >= nd)
    EMBER_FAIL("unflatten", "dim ", dim, " is out of range for ", shape_str(x.shape()));
  const int64_t d = dim < 0 ? dim + nd : dim;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < unflattened_size.size(); ++i) {
    if (unflattened_size[i] == -1 && infer < 0) {
      infer = int64_t(i);
    } else if (unflattened_size[i] < 0) {
      EMBER_FAIL("unflatten", "invalid unflattened_size ", detail::tuple_str(unflattened_size));
    } else {
      known *= unflattened_size[i];
    }
  }
  std::vector<int64_t> sizes = unflattened_size;
  if (infer >= 0 && known > 0 && x.size(d) % known == 0) sizes[size_t(infer)] = x.size(d) / known;
  int64_t prod = 1;
  for (int64_t s : sizes) prod *= s;
  if (unflattened_size.empty() || prod != x.size(d) || (infer >= 0 && sizes[size_t(infer)] < 0))
    EMBER_FAIL("unflatten", "unflattened_size ", detail::tuple_str(unflattened_size),
               " does not multiply to the size ", x.size(d), " of dim ", dim, " of ",
               shape_str(x.shape()));
  Shape s;
  for (int64_t i = 0; i < d; ++i) s.push_back(x.size(i));
  for (int64_t v : sizes) s.push_back(v);
  for (int64_t i = d + 1; i < nd; ++i) s.push_back(x.size(i));
  return x.reshape(s);
}

std::string Unflatten::extra_repr() const {
  return "dim=" + std::to_string(dim) + ", unflattened_size=" + detail::tuple_str(unflattened_size);
}

}  // namespace ember::nn
