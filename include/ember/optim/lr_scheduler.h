// Learning-rate schedulers acting on an Optimizer's group lrs, as torch.optim.lr_scheduler
// (PyTorch 1.13, the chainable step() forms). Ownership: a scheduler takes its optimizer as a
// std::shared_ptr and keeps it alive, so it can never step a destroyed optimizer (every
// constructor throws ember::Error "[<Scheduler>] the optimizer is null" for a null pointer).
// Constructing one performs torch's initial step (epoch 0).
//
//   auto opt = std::make_shared<optim::SGD>(params, optim::SGDOptions(0.1).momentum(0.9));
//   optim::CosineAnnealingLR sched(opt, /*T_max=*/100);
//   for (...) { ...; opt->step(); sched.step(); }
//
// Differences from torch: schedulers always start fresh (no last_epoch argument; resume with
// load_state_dict), and their state_dict holds the counters and lrs, not the constructor's
// hyper-parameters (those come from the constructor, as in LibTorch).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/nn/module.h"
#include "ember/optim/optimizer.h"

namespace ember::optim {

class SequentialLR;

/// Base of the epoch-driven schedulers (torch's _LRScheduler).
class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  /// Advances one epoch (or iteration) and writes the new lrs into the optimizer's groups.
  virtual void step();
  /// The lrs the last step() set, one per group.
  const std::vector<double>& get_last_lr() const& { return last_lr_; }
  std::vector<double> get_last_lr() && { return last_lr_; }  // a copy on a temporary
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const& { return base_lrs_; }
  std::vector<double> base_lrs() && { return base_lrs_; }  // a copy on a temporary
  /// The optimizer this scheduler drives (kept alive by the scheduler).
  Optimizer& optimizer() const { return *optimizer_; }
  const std::shared_ptr<Optimizer>& optimizer_ptr() const { return optimizer_; }

  /// Flat state: "last_epoch", "step_count" (0-d i64), "base_lrs", "last_lr" ([groups] f64),
  /// plus scheduler-specific entries.
  virtual nn::StateDict state_dict() const;
  /// Throws ember::Error for a missing key, a group count that differs from the optimizer's, or
  /// a value out of range (ember/checked.h; the error names the key): last_epoch not an integer
  /// in [-1, 2^53], step_count not one in [0, 2^53], an lr that is not finite or is < 0 (and,
  /// per scheduler, T_i < 1, T_cur not finite, a negative ReduceLROnPlateau counter or a NaN
  /// best). Nothing changes when it throws.
  virtual void load_state_dict(const nn::StateDict& dict);

 protected:
  /// Sets each group's initial_lr (when unset) to its lr and reads base_lrs from them.
  LRScheduler(std::shared_ptr<Optimizer> optimizer, std::string name);
  /// torch's _initial_step: resets the step count and steps once. Derived constructors call it
  /// last (get_lr is virtual).
  void initial_step();
  /// The chainable lrs for last_epoch_ (torch's get_lr).
  virtual std::vector<double> get_lr() = 0;
  /// The closed-form lrs for last_epoch_, when the scheduler has one.
  virtual std::optional<std::vector<double>> closed_form_lr() { return std::nullopt; }
  /// torch's deprecated step(epoch): jumps to `epoch` using the closed form when there is one.
  virtual void step_to(double epoch);
  std::vector<double> group_lrs() const;
  void apply(const std::vector<double>& lrs);
  const char* name() const { return name_.c_str(); }

  std::shared_ptr<Optimizer> optimizer_;
  std::string name_;
  std::vector<double> base_lrs_;
  int64_t last_epoch_ = -1;
  int64_t step_count_ = 0;
  std::vector<double> last_lr_;

  friend class SequentialLR;
};

/// lr *= gamma every step_size epochs (torch.optim.lr_scheduler.StepLR).
/// Throws for step_size <= 0.
class StepLR : public LRScheduler {
 public:
  StepLR(std::shared_ptr<Optimizer> optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;

 private:
  int64_t step_size_;
  double gamma_;
};

/// lr *= gamma at each milestone epoch; a milestone listed k times multiplies by gamma^k
/// (torch.optim.lr_scheduler.MultiStepLR).
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(std::shared_ptr<Optimizer> optimizer, std::vector<int64_t> milestones,
              double gamma = 0.1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;

 private:
  std::vector<int64_t> milestones_;  // sorted, duplicates kept
  double gamma_;
};

/// lr = base_lr * factor until total_iters, then base_lr (torch.optim.lr_scheduler.ConstantLR).
/// Throws for factor outside [0, 1].
class ConstantLR : public LRScheduler {
 public:
  ConstantLR(std::shared_ptr<Optimizer> optimizer, double factor = 1.0 / 3,
             int64_t total_iters = 5);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;

 private:
  double factor_;
  int64_t total_iters_;
};

/// Linear warmup / decay of the multiplicative factor from start_factor to end_factor over
/// total_iters epochs (torch.optim.lr_scheduler.LinearLR). Throws for factors outside [0, 1]
/// (start_factor must be > 0) or total_iters <= 0.
class LinearLR : public LRScheduler {
 public:
  LinearLR(std::shared_ptr<Optimizer> optimizer, double start_factor = 1.0 / 3,
           double end_factor = 1.0, int64_t total_iters = 5);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;

 private:
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

/// lr *= gamma every epoch (torch.optim.lr_scheduler.ExponentialLR).
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(std::shared_ptr<Optimizer> optimizer, double gamma);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;

 private:
  double gamma_;
};

/// Cosine annealing from base_lr to eta_min over T_max epochs, then back up (SGDR without
/// restarts; torch.optim.lr_scheduler.CosineAnnealingLR, its recursive step-by-step form).
/// Source: Loshchilov & Hutter, "SGDR" (2016). Throws for T_max <= 0.
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(std::shared_ptr<Optimizer> optimizer, int64_t T_max, double eta_min = 0.0);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;

 private:
  int64_t T_max_;
  double eta_min_;
};

/// Cosine annealing restarted every T_i epochs, T_i = T_0 * T_mult^i
/// (torch.optim.lr_scheduler.CosineAnnealingWarmRestarts). Throws for T_0 <= 0 or T_mult < 1.
class CosineAnnealingWarmRestarts : public LRScheduler {
 public:
  CosineAnnealingWarmRestarts(std::shared_ptr<Optimizer> optimizer, int64_t T_0, int64_t T_mult = 1,
                              double eta_min = 0.0);
  void step() override;
  /// Jumps to a (fractional) epoch, as torch's step(epoch) (e.g. epoch + i / iters per batch).
  /// Throws for a negative epoch.
  void step(double epoch) { step_to(epoch); }
  double T_cur() const { return T_cur_; }
  int64_t T_i() const { return T_i_; }
  nn::StateDict state_dict() const override;  // adds "T_cur" (f64), "T_i" (i64)
  void load_state_dict(const nn::StateDict& dict) override;

 protected:
  std::vector<double> get_lr() override;
  void step_to(double epoch) override;

 private:
  int64_t T_0_, T_i_, T_mult_;
  double eta_min_;
  double T_cur_;
};

/// Options of OneCycleLR (torch defaults). max_lr: one value, or one per group.
struct OneCycleLROptions {
  OneCycleLROptions(double max_lr, int64_t total_steps)
      : max_lr_({max_lr}), total_steps_(total_steps) {}
  OneCycleLROptions(std::vector<double> max_lr, int64_t total_steps)
      : max_lr_(std::move(max_lr)), total_steps_(total_steps) {}
#define EMBER_SCHED_ARG(T, name) \
  OneCycleLROptions& name(T v) { \
    name##_ = std::move(v);      \
    return *this;                \
  }                              \
  const T& name() const { return name##_; }
  EMBER_SCHED_ARG(double, pct_start)
  EMBER_SCHED_ARG(std::string, anneal_strategy)  // "cos" or "linear"
  EMBER_SCHED_ARG(bool, cycle_momentum)
  EMBER_SCHED_ARG(double, base_momentum)
  EMBER_SCHED_ARG(double, max_momentum)
  EMBER_SCHED_ARG(double, div_factor)
  EMBER_SCHED_ARG(double, final_div_factor)
  EMBER_SCHED_ARG(bool, three_phase)
#undef EMBER_SCHED_ARG
  std::vector<double> max_lr_;
  int64_t total_steps_;
  double pct_start_ = 0.3;
  std::string anneal_strategy_ = "cos";
  bool cycle_momentum_ = true;
  double base_momentum_ = 0.85;
  double max_momentum_ = 0.95;
  double div_factor_ = 25.0;
  double final_div_factor_ = 1e4;
  bool three_phase_ = false;
};

/// The 1cycle policy (torch.optim.lr_scheduler.OneCycleLR; Smith & Topin, "Super-Convergence",
/// 2017): lr rises from max_lr / div_factor to max_lr over pct_start of total_steps, then falls
/// to initial_lr / final_div_factor (three_phase: back to initial_lr first). With
/// cycle_momentum, the optimizer's momentum (SGD, RMSprop) or beta1 (Adam, AdamW) moves
/// inversely between max_momentum and base_momentum. Step once per batch; stepping past
/// total_steps throws. Throws for total_steps <= 0, pct_start outside [0, 1], an unknown
/// anneal_strategy, a max_lr count that is neither 1 nor the group count, or cycle_momentum on
/// an optimizer without momentum.
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(std::shared_ptr<Optimizer> optimizer, const OneCycleLROptions& options);

 protected:
  std::vector<double> get_lr() override;

 private:
  struct Phase {
    double end_step;
    int start_lr, end_lr, start_m, end_m;  // 0 initial, 1 max, 2 min / 0 max_m, 1 base_m
  };
  double anneal(double start, double end, double pct) const;
  OneCycleLROptions opts_;
  std::vector<Phase> phases_;
  std::vector<double> max_lrs_, min_lrs_;
};

/// Options of ReduceLROnPlateau (torch defaults). min_lr: one value, or one per group.
struct ReduceLROnPlateauOptions {
#define EMBER_SCHED_ARG(T, name)        \
  ReduceLROnPlateauOptions& name(T v) { \
    name##_ = std::move(v);             \
    return *this;                       \
  }                                     \
  const T& name() const { return name##_; }
  EMBER_SCHED_ARG(std::string, mode)  // "min" or "max"
  EMBER_SCHED_ARG(double, factor)
  EMBER_SCHED_ARG(int64_t, patience)
  EMBER_SCHED_ARG(double, threshold)
  EMBER_SCHED_ARG(std::string, threshold_mode)  // "rel" or "abs"
  EMBER_SCHED_ARG(int64_t, cooldown)
  EMBER_SCHED_ARG(std::vector<double>, min_lr)
  EMBER_SCHED_ARG(double, eps)
#undef EMBER_SCHED_ARG
  ReduceLROnPlateauOptions& min_lr(double v) { return min_lr(std::vector<double>{v}); }
  std::string mode_ = "min";
  double factor_ = 0.1;
  int64_t patience_ = 10;
  double threshold_ = 1e-4;
  std::string threshold_mode_ = "rel";
  int64_t cooldown_ = 0;
  std::vector<double> min_lr_ = {0.0};
  double eps_ = 1e-8;
};

/// Multiplies the lrs by factor when a metric has stopped improving for more than patience
/// epochs (torch.optim.lr_scheduler.ReduceLROnPlateau). Throws for factor >= 1, an unknown mode
/// or threshold_mode, or a min_lr count that is neither 1 nor the group count.
class ReduceLROnPlateau {
 public:
  ReduceLROnPlateau(std::shared_ptr<Optimizer> optimizer, ReduceLROnPlateauOptions options = {});
  /// Feeds one epoch's metric (e.g. the validation loss).
  void step(double metric);
  /// The group lrs after the last step (the current ones before any step).
  const std::vector<double>& get_last_lr() const& { return last_lr_; }
  std::vector<double> get_last_lr() && { return last_lr_; }  // a copy on a temporary
  int64_t last_epoch() const { return last_epoch_; }
  double best() const { return best_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  bool in_cooldown() const { return cooldown_counter_ > 0; }
  /// "best" (f64), "num_bad_epochs", "cooldown_counter", "last_epoch" (i64), "last_lr".
  nn::StateDict state_dict() const;
  /// Throws ember::Error (changing nothing) for a missing key or a value out of range: best
  /// NaN (infinities are its start values), a counter not an integer in [0, 2^53], an lr that
  /// is not finite or is < 0.
  void load_state_dict(const nn::StateDict& dict);

 private:
  bool is_better(double a, double best) const;
  std::shared_ptr<Optimizer> optimizer_;
  ReduceLROnPlateauOptions opts_;
  std::vector<double> min_lrs_;
  double best_;
  int64_t num_bad_epochs_ = 0;
  int64_t cooldown_counter_ = 0;
  int64_t last_epoch_ = 0;
  std::vector<double> last_lr_;
};

/// Runs schedulers one after another, switching at the milestones
/// (torch.optim.lr_scheduler.SequentialLR): at milestone i, scheduler i+1 restarts at epoch 0.
/// Throws when the schedulers do not all drive `optimizer` or when
/// milestones.size() != schedulers.size() - 1.
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(std::shared_ptr<Optimizer> optimizer,
               std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones);
  void step() override;
  /// Its own counters plus "schedulers.<i>.<key>" for each scheduler.
  nn::StateDict state_dict() const override;
  void load_state_dict(const nn::StateDict& dict) override;

 protected:
  std::vector<double> get_lr() override { return last_lr_; }

 private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

}  // namespace ember::optim
