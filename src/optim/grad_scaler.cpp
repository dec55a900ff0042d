// GradScaler: dynamic loss scaling (torch/cuda/amp/grad_scaler.py of PyTorch 1.13, whose
// update rule is the kernel _amp_update_scale_ in aten/src/ATen/native/cuda/AmpKernels.cu).
#include "ember/optim/grad_scaler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ember/autograd.h"
#include "ember/checked.h"
#include "ember/error.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/reduce.h"
#include "ember/optim/optimizer.h"

namespace ember::optim {

namespace {

constexpr double kMaxScale = double(std::numeric_limits<float>::max());
// The smallest scale: f32's smallest normal number, whose reciprocal is still finite (a scale
// that backs off to 0, or to a subnormal, would make unscale_ turn zero gradients into NaN).
constexpr double kMinScale = double(std::numeric_limits<float>::min());
constexpr int64_t kMaxInterval = std::numeric_limits<int32_t>::max();  // torch's int tracker

void validate(const GradScalerOptions& o) {
  constexpr const char* op = "GradScaler";
  if (!(std::isfinite(o.init_scale()) && o.init_scale() >= kMinScale &&
        o.init_scale() <= kMaxScale))
    EMBER_FAIL(op, "init_scale must be finite, between f32's smallest normal number (", kMinScale,
               ") and its max, got ", o.init_scale());
  if (!(std::isfinite(o.growth_factor()) && o.growth_factor() > 1))
    EMBER_FAIL(op, "growth_factor must be finite and > 1, got ", o.growth_factor());
  if (!(o.backoff_factor() > 0 && o.backoff_factor() < 1))
    EMBER_FAIL(op, "backoff_factor must be in (0, 1), got ", o.backoff_factor());
  if (o.growth_interval() < 1 || o.growth_interval() > kMaxInterval)
    EMBER_FAIL(op, "growth_interval must be in [1, ", kMaxInterval, "], got ", o.growth_interval());
}

// A 0-d f64 tensor (from_vector: a Scalar would also convert v, up to f32's max, to int64).
Tensor scalar_f64(double v) { return from_vector(std::vector<double>{v}, Shape{}, Device::cpu()); }

}  // namespace

GradScaler::GradScaler(GradScalerOptions o)
    : enabled_(o.enabled()),
      scale_(float(o.init_scale())),
      growth_factor_(o.growth_factor()),
      backoff_factor_(o.backoff_factor()),
      growth_interval_(o.growth_interval()) {
  validate(o);
}

GradScaler::GradScaler(DType dtype, GradScalerOptions o)
    : GradScaler(o.enabled(o.enabled() && dtype == DType::f16)) {}

Tensor GradScaler::scale(const Tensor& loss) const {
  if (!enabled_) return loss;
  if (!loss.defined()) EMBER_FAIL("GradScaler::scale", "the loss is undefined");
  const Tensor l = loss.dtype() == DType::f64 ? loss : loss.to(DType::f32);
  return l * double(scale_);
}

void GradScaler::unscale_(Optimizer& optimizer) {
  constexpr const char* op = "GradScaler::unscale_";
  if (!enabled_) return;
  PerOptimizer& st = per_optimizer_[&optimizer];
  if (st.stage == Stage::unscaled)
    EMBER_FAIL(op, "unscale_() has already been called on this optimizer since the last update()");
  if (st.stage == Stage::stepped) EMBER_FAIL(op, "unscale_() is being called after step()");
  // As torch: the reciprocal in f64, rounded to f32, multiplies every gradient.
  const double inv_scale = double(float(1.0 / double(scale_)));
  std::vector<Tensor> grads;
  for (const ParamGroup& g : optimizer.param_groups())
    for (const Tensor& p : g.params) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      if (grad.dtype() == DType::f16)  // checked before any gradient changes
        EMBER_FAIL(op,
                   "attempting to unscale f16 gradients (keep the parameters in f32 and "
                   "train f16 under ember::autocast)");
      grads.push_back(std::move(grad));
    }
  NoGradGuard no_grad;
  // One bool per device, or-ed lazily; read once per device below.
  std::vector<std::pair<std::string, Tensor>> flags;
  for (Tensor& grad : grads) {
    Tensor bad = any(logical_not(isfinite(grad)));
    const std::string dev = grad.device().str();
    auto it = flags.begin();
    while (it != flags.end() && it->first != dev) ++it;
    if (it == flags.end())
      flags.emplace_back(dev, bad);
    else
      it->second = logical_or(it->second, bad);
    grad.mul_(inv_scale);
  }
  bool found = false;
  for (const auto& [dev, flag] : flags) found = flag.item<bool>() || found;
  st.found_inf = found;
  st.checked = !grads.empty();
  st.stage = Stage::unscaled;
}

bool GradScaler::step(Optimizer& optimizer) {
  if (!enabled_) {
    optimizer.step();
    return true;
  }
  PerOptimizer& st = per_optimizer_[&optimizer];
  if (st.stage == Stage::stepped)
    EMBER_FAIL("GradScaler::step", "step() has already been called since the last update()");
  if (st.stage == Stage::ready) unscale_(optimizer);
  if (!st.checked)
    EMBER_FAIL("GradScaler::step",
               "no inf checks were recorded for this optimizer: none of its parameters has a "
               "gradient (call backward() on scale(loss) first)");
  st.stage = Stage::stepped;
  if (st.found_inf) return false;
  optimizer.step();
  return true;
}

void GradScaler::update() {
  if (!enabled_) return;
  bool found_inf = false, any_checked = false;
  for (const auto& [opt, st] : per_optimizer_)
    if (st.stage != Stage::ready) {
      any_checked = true;
      found_inf = found_inf || st.found_inf;
    }
  if (!any_checked)
    EMBER_FAIL("GradScaler::update",
               "no inf checks were recorded prior to update() (call "
               "step() or unscale_() first)");
  // _amp_update_scale_: products in f64 (its factors are doubles), stored in f32.
  if (found_inf) {
    scale_ = float(std::max(double(scale_) * backoff_factor_, kMinScale));
    tracker_ = 0;
  } else if (tracker_ + 1 == growth_interval_) {
    const float grown = float(double(scale_) * growth_factor_);
    if (std::isfinite(grown)) scale_ = grown;  // never past f32's range to inf
    tracker_ = 0;
  } else {
    ++tracker_;
  }
  per_optimizer_.clear();
}

void GradScaler::update(double new_scale) {
  if (!enabled_) return;
  if (!(std::isfinite(new_scale) && new_scale > 0 && new_scale <= kMaxScale))
    EMBER_FAIL("GradScaler::update", "new_scale must be finite, > 0 and at most f32's max, got ",
               new_scale);
  scale_ = float(new_scale);
  per_optimizer_.clear();
}

nn::StateDict GradScaler::state_dict() const {
  nn::StateDict d;
  if (!enabled_) return d;
  d.set("scale", scalar_f64(double(scale_)));
  d.set("growth_factor", scalar_f64(growth_factor_));
  d.set("backoff_factor", scalar_f64(backoff_factor_));
  d.set("growth_interval", scalar_f64(double(growth_interval_)));
  d.set("_growth_tracker", scalar_f64(double(tracker_)));
  return d;
}

void GradScaler::load_state_dict(const nn::StateDict& dict) {
  constexpr const char* op = "GradScaler.load_state_dict";
  if (!enabled_) return;
  if (dict.empty())
    EMBER_FAIL(op,
               "the state dict is empty, possibly because it was saved from a disabled "
               "GradScaler");
  static const char* const kKeys[] = {"scale", "growth_factor", "backoff_factor", "growth_interval",
                                      "_growth_tracker"};
  for (const auto& [key, value] : dict.items()) {
    bool known = false;
    for (const char* k : kKeys) known = known || key == k;
    if (!known) EMBER_FAIL(op, "unknown key '", key, "'");
  }
  for (const char* k : kKeys)
    if (!dict.contains(k)) EMBER_FAIL(op, "missing key '", k, "'");
  auto field = [&](const char* k) { return FileField{op, "", k}; };
  constexpr double kTiny = std::numeric_limits<double>::denorm_min();
  const double scale = checked_double(field("scale"), dict.at("scale"), kTiny, kMaxScale);
  const double growth =
      checked_double(field("growth_factor"), dict.at("growth_factor"), std::nextafter(1.0, 2.0));
  const double backoff = checked_double(field("backoff_factor"), dict.at("backoff_factor"), kTiny,
                                        std::nextafter(1.0, 0.0));
  const int64_t interval =
      checked_int64(field("growth_interval"), dict.at("growth_interval"), 1, kMaxInterval);
  const int64_t tracker =
      checked_int64(field("_growth_tracker"), dict.at("_growth_tracker"), 0, interval - 1);
  if (!(scale >= kMinScale))
    EMBER_FAIL(op, "field 'scale' = ", scale, " is below f32's smallest normal number");
  scale_ = float(scale);
  growth_factor_ = growth;
  backoff_factor_ = backoff;
  growth_interval_ = interval;
  tracker_ = tracker;
}

}  // namespace ember::optim
