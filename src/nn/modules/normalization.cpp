#include "ember/nn/modules/normalization.h"

#include "ember/autograd.h"
#include "ember/nn/functional/norm.h"
#include "ember/nn/init.h"
#include "tensor/internal.h"

namespace ember::nn {

namespace fn = ember::nn::functional;

namespace {
std::string norm_repr(int64_t c, double eps, const std::string& momentum, bool affine, bool track) {
  return std::to_string(c) + ", eps=" + detail::float_str(eps) + ", momentum=" + momentum +
         ", affine=" + detail::bool_str(affine) +
         ", track_running_stats=" + detail::bool_str(track);
}

void check_features(const char* name, int64_t n) {
  if (n < 0) EMBER_FAIL(name, "num_features must be >= 0, got ", n);
}

void check_rank(const std::string& name, const Tensor& x, int64_t lo, int64_t hi) {
  ember::detail::check_defined(x, name.c_str());
  if (x.dim() < lo || x.dim() > hi) {
    std::string want = lo == hi ? std::to_string(lo) + "D"
                                : std::to_string(lo) + "D or " + std::to_string(hi) + "D";
    EMBER_FAIL(name.c_str(), "expected ", want, " input (got ", x.dim(), "D input ",
               shape_str(x.shape()), ")");
  }
}

std::string shape_tuple(const Shape& s) {
  return detail::tuple_str(std::vector<int64_t>(s.begin(), s.end()));
}
}  // namespace

BatchNormBase::BatchNormBase(const std::string& name, const BatchNormOptions& o)
    : UnaryModule(name), options(o) {
  check_features(name.c_str(), o.num_features());
  const int64_t c = o.num_features();
  if (o.affine()) {
    weight = register_parameter("weight", ones({c}));
    bias = register_parameter("bias", zeros({c}));
  }
  if (o.track_running_stats()) {
    running_mean = register_statistic("running_mean", zeros({c}));
    running_var = register_statistic("running_var", ones({c}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, DType::i64));
  } else {
    register_statistic("running_mean", Tensor());
    register_statistic("running_var", Tensor());
    register_buffer("num_batches_tracked", Tensor());
  }
}

void BatchNormBase::reset_running_stats() {
  if (!options.track_running_stats()) return;
  init::zeros_(running_mean);
  init::ones_(running_var);
  init::zeros_(num_batches_tracked);
}

void BatchNormBase::reset_parameters() {
  reset_running_stats();
  if (options.affine()) {
    init::ones_(weight);
    init::zeros_(bias);
  }
}

Tensor BatchNormBase::forward(const Tensor& x) {
  check_input(x);
  double factor = options.momentum().value_or(0.0);
  if (is_training() && options.track_running_stats()) {
    NoGradGuard g;
    num_batches_tracked.add_(1);
    if (!options.momentum()) factor = 1.0 / double(num_batches_tracked.item<int64_t>());
  }
  const bool use_batch = is_training() || !options.track_running_stats();
  // Running stats are updated only when training and tracked; in eval they normalize.
  const bool pass_stats = !is_training() || options.track_running_stats();
  return fn::batch_norm(x, pass_stats ? running_mean : Tensor(),
                        pass_stats ? running_var : Tensor(), weight, bias, use_batch, factor,
                        options.eps());
}

std::string BatchNormBase::extra_repr() const {
  const auto& o = options;
  return norm_repr(o.num_features(), o.eps(),
                   o.momentum() ? detail::float_str(*o.momentum()) : "None", o.affine(),
                   o.track_running_stats());
}

void BatchNorm1d::check_input(const Tensor& x) const { check_rank(type_name(), x, 2, 3); }
void BatchNorm2d::check_input(const Tensor& x) const { check_rank(type_name(), x, 4, 4); }

InstanceNorm2d::InstanceNorm2d(const InstanceNormOptions& o)
    : UnaryModule("InstanceNorm2d"), options(o) {
  check_features("InstanceNorm2d", o.num_features());
  const int64_t c = o.num_features();
  if (o.affine()) {
    weight = register_parameter("weight", ones({c}));
    bias = register_parameter("bias", zeros({c}));
  }
  if (o.track_running_stats()) {
    running_mean = register_statistic("running_mean", zeros({c}));
    running_var = register_statistic("running_var", ones({c}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, DType::i64));
  }
}

Tensor InstanceNorm2d::forward(const Tensor& x) {
  check_rank(type_name(), x, 3, 4);
  const int64_t c = x.size(-3);
  if (c != options.num_features() && options.affine())
    EMBER_FAIL("InstanceNorm2d", "expected input's size at dim -3 to match num_features (",
               options.num_features(), "), but got input ", shape_str(x.shape()));
  const bool unbatched = x.dim() == 3;
  Tensor in = unbatched ? x.unsqueeze(0) : x;
  Tensor y = fn::instance_norm(in, running_mean, running_var, weight, bias,
                               is_training() || !options.track_running_stats(), options.momentum(),
                               options.eps());
  return unbatched ? y.squeeze(0) : y;
}

std::string InstanceNorm2d::extra_repr() const {
  const auto& o = options;
  return norm_repr(o.num_features(), o.eps(), detail::float_str(o.momentum()), o.affine(),
                   o.track_running_stats());
}

LayerNorm::LayerNorm(const LayerNormOptions& o) : UnaryModule("LayerNorm"), options(o) {
  for (int64_t s : o.normalized_shape())
    if (s < 0)
      EMBER_FAIL("LayerNorm", "invalid normalized_shape ", shape_str(o.normalized_shape()));
  if (o.elementwise_affine()) {
    weight = register_parameter("weight", ones(o.normalized_shape()));
    bias = register_parameter("bias", zeros(o.normalized_shape()));
  }
}

Tensor LayerNorm::forward(const Tensor& x) {
  return fn::layer_norm(x, options.normalized_shape(), weight, bias, options.eps());
}

std::string LayerNorm::extra_repr() const {
  return shape_tuple(options.normalized_shape()) + ", eps=" + detail::float_str(options.eps()) +
         ", elementwise_affine=" + detail::bool_str(options.elementwise_affine());
}

GroupNorm::GroupNorm(const GroupNormOptions& o) : UnaryModule("GroupNorm"), options(o) {
  if (o.num_groups() < 1) EMBER_FAIL("GroupNorm", "num_groups must be >= 1, got ", o.num_groups());
  if (o.num_channels() < 0 || o.num_channels() % o.num_groups() != 0)
    EMBER_FAIL("GroupNorm", "num_channels must be divisible by num_groups (num_channels ",
               o.num_channels(), ", num_groups ", o.num_groups(), ")");
  if (o.affine()) {
    weight = register_parameter("weight", ones({o.num_channels()}));
    bias = register_parameter("bias", zeros({o.num_channels()}));
  }
}

Tensor GroupNorm::forward(const Tensor& x) {
  return fn::group_norm(x, options.num_groups(), weight, bias, options.eps());
}

std::string GroupNorm::extra_repr() const {
  return std::to_string(options.num_groups()) + ", " + std::to_string(options.num_channels()) +
         ", eps=" + detail::float_str(options.eps()) +
         ", affine=" + detail::bool_str(options.affine());
}

RMSNorm::RMSNorm(const RMSNormOptions& o) : UnaryModule("RMSNorm"), options(o) {
  for (int64_t s : o.normalized_shape())
    if (s < 0) EMBER_FAIL("RMSNorm", "invalid normalized_shape ", shape_str(o.normalized_shape()));
  if (o.elementwise_affine()) weight = register_parameter("weight", ones(o.normalized_shape()));
}

Tensor RMSNorm::forward(const Tensor& x) {
  return fn::rms_norm(x, options.normalized_shape(), weight, options.eps());
}

std::string RMSNorm::extra_repr() const {
  return shape_tuple(options.normalized_shape()) +
         ", eps=" + (options.eps() ? detail::float_str(*options.eps()) : std::string("None")) +
         ", elementwise_affine=" + detail::bool_str(options.elementwise_affine());
}

}  // namespace ember::nn
