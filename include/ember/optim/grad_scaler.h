// ember::optim::GradScaler: dynamic loss scaling for f16 mixed-precision training, as
// torch.cuda.amp.GradScaler (PyTorch 1.13 semantics: the same update rule, states and errors).
//
//   optim::GradScaler scaler(DType::f16);  // training dtype; bf16 / f32: a disabled scaler
//   for (...) {
//     Tensor loss;
//     { ember::autocast ac(device.type(), DType::f16); loss = loss_fn(model->forward(x), y); }
//     scaler.scale(loss).backward();
//     scaler.unscale_(opt);                      // optional: before clipping real gradients
//     nn::clip_grad_norm_(model->parameters(), 1.0);
//     scaler.step(opt);                          // skipped when a gradient is inf / NaN
//     scaler.update();
//     opt.zero_grad();
//   }
//
// f16's range ends at 65504 and its smallest normal is 6.1e-5: small gradients flush to zero
// unless the loss is scaled up before backward() and the gradients scaled down before the
// step. bf16 has f32's range and needs no scaling: a scaler constructed for bf16 (or f32) is
// disabled, and a disabled scaler is a no-op (scale() returns the loss as is, step() calls
// optimizer.step(), unscale_() and update() do nothing, get_scale() is 1, state_dict() is
// empty), so one training loop serves every precision.
//
// The scale is kept as an f32 number, as torch's: growth stops short of f32's overflow.
#pragma once
#include <cstdint>
#include <map>

#include "ember/dtype.h"
#include "ember/nn/module.h"
#include "ember/tensor.h"

namespace ember::optim {

class Optimizer;

/// GradScaler's options, torch's names and defaults. GradScaler's constructor validates them.
class GradScalerOptions {
 public:
  /// The first scale (finite, > 0). Default 2^16.
  GradScalerOptions& init_scale(double v) { return set(init_scale_, v); }
  /// Multiplies the scale after growth_interval steps in a row without inf / NaN (> 1).
  GradScalerOptions& growth_factor(double v) { return set(growth_factor_, v); }
  /// Multiplies the scale after a step with inf / NaN gradients (in (0, 1)).
  GradScalerOptions& backoff_factor(double v) { return set(backoff_factor_, v); }
  /// Steps without inf / NaN before the scale grows (>= 1).
  GradScalerOptions& growth_interval(int64_t v) {
    growth_interval_ = v;
    return *this;
  }
  /// false: the scaler is a no-op (see the top of the file).
  GradScalerOptions& enabled(bool v) {
    enabled_ = v;
    return *this;
  }
  double init_scale() const { return init_scale_; }
  double growth_factor() const { return growth_factor_; }
  double backoff_factor() const { return backoff_factor_; }
  int64_t growth_interval() const { return growth_interval_; }
  bool enabled() const { return enabled_; }

 private:
  GradScalerOptions& set(double& field, double v) {
    field = v;
    return *this;
  }
  double init_scale_ = 65536.0;
  double growth_factor_ = 2.0;
  double backoff_factor_ = 0.5;
  int64_t growth_interval_ = 2000;
  bool enabled_ = true;
};

class GradScaler {
 public:
  /// Throws ember::Error("[GradScaler] <option> must be ..., got v") naming the option: init_scale
  /// not finite, below f32's smallest normal number or beyond its max, growth_factor <= 1,
  /// backoff_factor outside
  /// (0, 1), growth_interval < 1 or above 2^31 - 1 (checked whether enabled or not).
  explicit GradScaler(GradScalerOptions options = {});
  /// A scaler for training in `dtype` (the autocast dtype): enabled only for f16 (and only when
  /// options.enabled()); bf16 and f32 need no loss scaling, so their scaler is a no-op.
  explicit GradScaler(DType dtype, GradScalerOptions options = {});

  bool is_enabled() const { return enabled_; }

  /// loss * scale, in f32 (an f16 / bf16 loss is cast to f32 first, as torch's multiply by its
  /// f32 scale tensor promotes; f64 stays f64); any shape, any device; the result records
  /// autograd history. Disabled: `loss` itself.
  Tensor scale(const Tensor& loss) const;
  /// Divides the gradients of `optimizer`'s parameters by the scale in place (multiplies by
  /// f32(1 / scale), as torch) and records whether any held inf or NaN (checked before the
  /// division; one reduction per gradient and one read per device). Parameters without a grad
  /// are skipped; grads may live on any device. Throws ember::Error("[GradScaler::unscale_]
  /// ...") when called twice for this optimizer before update(), after step(), or for an f16
  /// gradient (keep f32 master parameters). Disabled: does nothing.
  void unscale_(Optimizer& optimizer);
  /// unscale_(optimizer) unless it was called since the last update(), then optimizer.step()
  /// unless a gradient held inf / NaN. Returns whether optimizer.step() ran. Throws
  /// ember::Error("[GradScaler::step] ...") when called twice before update(), and when none of
  /// the optimizer's parameters has a gradient (as torch's "No inf checks were recorded").
  /// Disabled: calls optimizer.step() and returns true.
  bool step(Optimizer& optimizer);
  /// Ends the iteration: after inf / NaN in any optimizer's gradients since the last update(),
  /// scale *= backoff_factor (never below f32's smallest normal number, whose reciprocal is
  /// finite: torch's can reach 0) and the growth tracker resets; otherwise the tracker counts one
  /// more, and on reaching growth_interval scale *= growth_factor (unless that overflows f32)
  /// and the tracker resets. Throws ember::Error("[GradScaler::update] ...") when no optimizer
  /// was unscaled since the last update(). Disabled: does nothing.
  void update();
  /// Ends the iteration with the scale set to `new_scale` (the tracker is kept, as torch).
  /// Throws ember::Error for a new_scale that is not finite and > 0. Disabled: does nothing.
  void update(double new_scale);

  /// The current scale (1 when disabled).
  double get_scale() const { return enabled_ ? double(scale_) : 1.0; }
  double get_growth_factor() const { return growth_factor_; }
  double get_backoff_factor() const { return backoff_factor_; }
  int64_t get_growth_interval() const { return growth_interval_; }
  /// Steps without inf / NaN since the scale last changed (0 when disabled).
  int64_t get_growth_tracker() const { return enabled_ ? tracker_ : 0; }

  /// "scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker" (torch's
  /// keys), each a 0-d f64 tensor on the cpu; empty when disabled (as torch).
  nn::StateDict state_dict() const;
  /// Restores what state_dict() saved. Every value is checked (ember/checked.h) before any is
  /// applied: scale finite in (0, f32 max], growth_factor > 1, backoff_factor in (0, 1),
  /// growth_interval an integer in [1, 2^31 - 1], _growth_tracker an integer in
  /// [0, growth_interval). Throws ember::Error("[GradScaler.load_state_dict] ...") naming the
  /// key for a value out of range, a missing or unknown key, or an empty dict (saved by a
  /// disabled scaler), changing nothing. Disabled: does nothing (as torch).
  void load_state_dict(const nn::StateDict& dict);

 private:
  enum class Stage { ready, unscaled, stepped };
  struct PerOptimizer {
    Stage stage = Stage::ready;
    bool found_inf = false;
    bool checked = false;  // unscale_ saw at least one gradient
  };
  bool enabled_;
  float scale_;
  double growth_factor_;
  double backoff_factor_;
  int64_t growth_interval_;
  int64_t tracker_ = 0;
  std::map<const Optimizer*, PerOptimizer> per_optimizer_;
};

}  // namespace ember::optim
