// Learning-rate schedulers (torch.optim.lr_scheduler, PyTorch 1.13 chainable forms).
#include "ember/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ember/checked.h"

namespace ember::optim {

namespace {

constexpr double kPi = 3.14159265358979323846;

Tensor f64_vec(const std::vector<double>& v) { return from_vector<double>(v, {int64_t(v.size())}); }
Tensor i64_scalar(int64_t v) { return scalar_tensor(v, DType::i64); }
Tensor f64_scalar(double v) { return scalar_tensor(v, DType::f64); }

const Tensor& need(const nn::StateDict& d, const std::string& key, const char* op) {
  if (!d.contains(key)) EMBER_FAIL(op, "state dict has no \"", key, "\"");
  return d.at(key);
}

// A counter (last_epoch, step_count...) in [lo, 2^53]; NaN or 2^63 - 1 read as int64 was
// undefined behaviour.
int64_t read_count(const nn::StateDict& d, const std::string& key, const char* op, int64_t lo = 0) {
  return checked_int64(FileField{op, "", key}, need(d, key, op), lo, kMaxFileCount);
}

// Per-group lrs: finite and >= 0.
std::vector<double> read_vec(const nn::StateDict& d, const std::string& key, size_t n,
                             const char* op) {
  const Tensor& t = need(d, key, op);
  if (t.numel() != int64_t(n))
    EMBER_FAIL(op, "\"", key, "\" has ", t.numel(), " values, the optimizer has ", n, " groups");
  std::vector<double> v = t.to_vector<double>();
  for (size_t i = 0; i < v.size(); ++i)
    checked_double(FileField{op, "", key + "[" + std::to_string(i) + "]"}, v[i], 0.0);
  return v;
}

// The per-group values of an option given once or once per group.
std::vector<double> per_group(const std::vector<double>& v, size_t groups, const char* what,
                              const char* op) {
  if (v.size() == 1) return std::vector<double>(groups, v[0]);
  if (v.size() != groups)
    EMBER_FAIL(op, "expected ", groups, " values for ", what, ", got ", v.size());
  return v;
}

}  // namespace

// ---- LRScheduler ----

LRScheduler::LRScheduler(std::shared_ptr<Optimizer> optimizer, std::string name)
    : optimizer_(std::move(optimizer)), name_(std::move(name)) {
  if (!optimizer_) EMBER_FAIL(name_.c_str(), "the optimizer is null");
  for (auto& g : optimizer_->param_groups()) {
    if (!g.initial_lr) g.initial_lr = g.lr();
    base_lrs_.push_back(*g.initial_lr);
  }
}

void LRScheduler::initial_step() {
  step_count_ = 0;
  step();
}

std::vector<double> LRScheduler::group_lrs() const {
  std::vector<double> out;
  for (const auto& g : optimizer_->param_groups()) out.push_back(g.lr());
  return out;
}

void LRScheduler::apply(const std::vector<double>& lrs) {
  auto& groups = optimizer_->param_groups();
  for (size_t i = 0; i < groups.size() && i < lrs.size(); ++i) groups[i].set_lr(lrs[i]);
  last_lr_ = group_lrs();
}

void LRScheduler::step() {
  ++step_count_;
  ++last_epoch_;
  apply(get_lr());
}

void LRScheduler::step_to(double epoch) {
  ++step_count_;
  last_epoch_ = int64_t(epoch);
  auto closed = closed_form_lr();
  apply(closed ? *closed : get_lr());
}

nn::StateDict LRScheduler::state_dict() const {
  nn::StateDict d;
  d.set("last_epoch", i64_scalar(last_epoch_));
  d.set("step_count", i64_scalar(step_count_));
  d.set("base_lrs", f64_vec(base_lrs_));
  d.set("last_lr", f64_vec(last_lr_));
  return d;
}

void LRScheduler::load_state_dict(const nn::StateDict& d) {
  const size_t n = optimizer_->param_groups().size();
  auto base = read_vec(d, "base_lrs", n, name());
  auto last = read_vec(d, "last_lr", n, name());
  const int64_t epoch = read_count(d, "last_epoch", name(), -1);
  const int64_t count = read_count(d, "step_count", name());
  base_lrs_ = std::move(base);
  last_lr_ = std::move(last);
  last_epoch_ = epoch;
  step_count_ = count;
}

// ---- StepLR ----

StepLR::StepLR(std::shared_ptr<Optimizer> optimizer, int64_t step_size, double gamma)
    : LRScheduler(std::move(optimizer), "StepLR"), step_size_(step_size), gamma_(gamma) {
  EMBER_CHECK(step_size > 0, "StepLR", "step_size must be positive, got ", step_size);
  initial_step();
}

std::vector<double> StepLR::get_lr() {
  auto lrs = group_lrs();
  if (last_epoch_ == 0 || last_epoch_ % step_size_ != 0) return lrs;
  for (auto& lr : lrs) lr *= gamma_;
  return lrs;
}

std::optional<std::vector<double>> StepLR::closed_form_lr() {
  std::vector<double> out;
  for (double b : base_lrs_) out.push_back(b * std::pow(gamma_, double(last_epoch_ / step_size_)));
  return out;
}

// ---- MultiStepLR ----

MultiStepLR::MultiStepLR(std::shared_ptr<Optimizer> optimizer, std::vector<int64_t> milestones,
                         double gamma)
    : LRScheduler(std::move(optimizer), "MultiStepLR"),
      milestones_(std::move(milestones)),
      gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());
  initial_step();
}

std::vector<double> MultiStepLR::get_lr() {
  auto lrs = group_lrs();
  const auto k = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
  if (k == 0) return lrs;
  for (auto& lr : lrs) lr *= std::pow(gamma_, double(k));
  return lrs;
}

std::optional<std::vector<double>> MultiStepLR::closed_form_lr() {
  const auto k =
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  std::vector<double> out;
  for (double b : base_lrs_) out.push_back(b * std::pow(gamma_, double(k)));
  return out;
}

// ---- ConstantLR ----

ConstantLR::ConstantLR(std::shared_ptr<Optimizer> optimizer, double factor, int64_t total_iters)
    : LRScheduler(std::move(optimizer), "ConstantLR"), factor_(factor), total_iters_(total_iters) {
  EMBER_CHECK(factor >= 0 && factor <= 1, "ConstantLR",
              "Constant multiplicative factor expected to be between 0 and 1, got ", factor);
  initial_step();
}

std::vector<double> ConstantLR::get_lr() {
  auto lrs = group_lrs();
  if (last_epoch_ == 0) {
    for (auto& lr : lrs) lr *= factor_;
  } else if (last_epoch_ == total_iters_) {
    for (auto& lr : lrs) lr *= 1.0 / factor_;
  }
  return lrs;
}

std::optional<std::vector<double>> ConstantLR::closed_form_lr() {
  std::vector<double> out;
  const double reached = last_epoch_ >= total_iters_ ? 1.0 : 0.0;
  for (double b : base_lrs_) out.push_back(b * (factor_ + reached * (1 - factor_)));
  return out;
}

// ---- LinearLR ----

LinearLR::LinearLR(std::shared_ptr<Optimizer> optimizer, double start_factor, double end_factor,
                   int64_t total_iters)
    : LRScheduler(std::move(optimizer), "LinearLR"),
      start_factor_(start_factor),
      end_factor_(end_factor),
      total_iters_(total_iters) {
  EMBER_CHECK(start_factor > 0 && start_factor <= 1, "LinearLR",
              "Starting multiplicative factor expected to be in (0, 1], got ", start_factor);
  EMBER_CHECK(end_factor >= 0 && end_factor <= 1, "LinearLR",
              "Ending multiplicative factor expected to be between 0 and 1, got ", end_factor);
  EMBER_CHECK(total_iters > 0, "LinearLR", "total_iters must be positive, got ", total_iters);
  initial_step();
}

std::vector<double> LinearLR::get_lr() {
  auto lrs = group_lrs();
  if (last_epoch_ == 0) {
    for (auto& lr : lrs) lr *= start_factor_;
    return lrs;
  }
  if (last_epoch_ > total_iters_) return lrs;
  const double d = end_factor_ - start_factor_;
  const double mult =
      1.0 + d / (double(total_iters_) * start_factor_ + double(last_epoch_ - 1) * d);
  for (auto& lr : lrs) lr *= mult;
  return lrs;
}

std::optional<std::vector<double>> LinearLR::closed_form_lr() {
  std::vector<double> out;
  const double t = double(std::min(total_iters_, last_epoch_));
  for (double b : base_lrs_)
    out.push_back(b * (start_factor_ + (end_factor_ - start_factor_) * t / double(total_iters_)));
  return out;
}

// ---- ExponentialLR ----

ExponentialLR::ExponentialLR(std::shared_ptr<Optimizer> optimizer, double gamma)
    : LRScheduler(std::move(optimizer), "ExponentialLR"), gamma_(gamma) {
  initial_step();
}

std::vector<double> ExponentialLR::get_lr() {
  auto lrs = group_lrs();
  if (last_epoch_ == 0) return lrs;
  for (auto& lr : lrs) lr *= gamma_;
  return lrs;
}

std::optional<std::vector<double>> ExponentialLR::closed_form_lr() {
  std::vector<double> out;
  for (double b : base_lrs_) out.push_back(b * std::pow(gamma_, double(last_epoch_)));
  return out;
}

// ---- CosineAnnealingLR ----

CosineAnnealingLR::CosineAnnealingLR(std::shared_ptr<Optimizer> optimizer, int64_t T_max,
                                     double eta_min)
    : LRScheduler(std::move(optimizer), "CosineAnnealingLR"), T_max_(T_max), eta_min_(eta_min) {
  EMBER_CHECK(T_max > 0, "CosineAnnealingLR", "T_max must be positive, got ", T_max);
  initial_step();
}

std::vector<double> CosineAnnealingLR::get_lr() {
  auto lrs = group_lrs();
  const double T = double(T_max_), e = double(last_epoch_);
  if (last_epoch_ == 0) return lrs;
  if (step_count_ == 1 && last_epoch_ > 0) {
    for (size_t i = 0; i < lrs.size(); ++i)
      lrs[i] = eta_min_ + (base_lrs_[i] - eta_min_) * (1 + std::cos(e * kPi / T)) / 2;
  } else if ((last_epoch_ - 1 - T_max_) % (2 * T_max_) == 0) {
    for (size_t i = 0; i < lrs.size(); ++i)
      lrs[i] = lrs[i] + (base_lrs_[i] - eta_min_) * (1 - std::cos(kPi / T)) / 2;
  } else {
    for (auto& lr : lrs)
      lr = (1 + std::cos(kPi * e / T)) / (1 + std::cos(kPi * (e - 1) / T)) * (lr - eta_min_) +
           eta_min_;
  }
  return lrs;
}

std::optional<std::vector<double>> CosineAnnealingLR::closed_form_lr() {
  std::vector<double> out;
  for (double b : base_lrs_)
    out.push_back(eta_min_ +
                  (b - eta_min_) * (1 + std::cos(kPi * double(last_epoch_) / double(T_max_))) / 2);
  return out;
}

// ---- CosineAnnealingWarmRestarts ----

CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(std::shared_ptr<Optimizer> optimizer,
                                                         int64_t T_0, int64_t T_mult,
                                                         double eta_min)
    : LRScheduler(std::move(optimizer), "CosineAnnealingWarmRestarts"),
      T_0_(T_0),
      T_i_(T_0),
      T_mult_(T_mult),
      eta_min_(eta_min),
      T_cur_(-1) {
  EMBER_CHECK(T_0 > 0, name(), "Expected positive integer T_0, but got ", T_0);
  EMBER_CHECK(T_mult >= 1, name(), "Expected integer T_mult >= 1, but got ", T_mult);
  initial_step();
}

std::vector<double> CosineAnnealingWarmRestarts::get_lr() {
  std::vector<double> out;
  for (double b : base_lrs_)
    out.push_back(eta_min_ + (b - eta_min_) * (1 + std::cos(kPi * T_cur_ / double(T_i_))) / 2);
  return out;
}

void CosineAnnealingWarmRestarts::step() {
  if (last_epoch_ < 0) {
    step_to(0);
    return;
  }
  last_epoch_ += 1;
  T_cur_ += 1;
  if (T_cur_ >= double(T_i_)) {
    T_cur_ -= double(T_i_);
    T_i_ *= T_mult_;
  }
  apply(get_lr());
}

void CosineAnnealingWarmRestarts::step_to(double epoch) {
  EMBER_CHECK(epoch >= 0, name(), "Expected non-negative epoch, but got ", epoch);
  if (epoch >= double(T_0_)) {
    if (T_mult_ == 1) {
      T_cur_ = std::fmod(epoch, double(T_0_));
    } else {
      const double m = double(T_mult_);
      const auto n = int64_t(std::log(epoch / double(T_0_) * (m - 1) + 1) / std::log(m));
      T_cur_ = epoch - double(T_0_) * (std::pow(m, double(n)) - 1) / (m - 1);
      T_i_ = T_0_ * int64_t(std::pow(m, double(n)));
    }
  } else {
    T_i_ = T_0_;
    T_cur_ = epoch;
  }
  last_epoch_ = int64_t(std::floor(epoch));
  apply(get_lr());
}

nn::StateDict CosineAnnealingWarmRestarts::state_dict() const {
  auto d = LRScheduler::state_dict();
  d.set("T_cur", f64_scalar(T_cur_));
  d.set("T_i", i64_scalar(T_i_));
  return d;
}

void CosineAnnealingWarmRestarts::load_state_dict(const nn::StateDict& d) {
  const double t_cur = checked_double(FileField{name(), "", "T_cur"}, need(d, "T_cur", name()), -1);
  const int64_t t_i = read_count(d, "T_i", name(), 1);  // the cosine divides by it
  LRScheduler::load_state_dict(d);
  T_cur_ = t_cur;
  T_i_ = t_i;
}

// ---- OneCycleLR ----

OneCycleLR::OneCycleLR(std::shared_ptr<Optimizer> optimizer, const OneCycleLROptions& o)
    : LRScheduler(std::move(optimizer), "OneCycleLR"), opts_(o) {
  const char* op = name();
  EMBER_CHECK(o.total_steps_ > 0, op, "Expected positive integer total_steps, but got ",
              o.total_steps_);
  EMBER_CHECK(o.pct_start() >= 0 && o.pct_start() <= 1, op,
              "Expected float between 0 and 1 pct_start, but got ", o.pct_start());
  EMBER_CHECK(o.anneal_strategy() == "cos" || o.anneal_strategy() == "linear", op,
              "anneal_strategy must be one of 'cos' or 'linear', instead got ",
              o.anneal_strategy());
  const double total = double(o.total_steps_), pct = o.pct_start();
  if (o.three_phase()) {
    phases_ = {
        {pct * total - 1, 0, 1, 0, 1}, {2 * pct * total - 2, 1, 0, 1, 0}, {total - 1, 0, 2, 0, 0}};
  } else {
    phases_ = {{pct * total - 1, 0, 1, 0, 1}, {total - 1, 1, 2, 1, 0}};
  }
  auto& groups = optimizer_->param_groups();
  max_lrs_ = per_group(o.max_lr_, groups.size(), "max_lr", op);
  if (o.cycle_momentum()) {
    const char* field = groups[0].options->momentum_field();
    EMBER_CHECK(field != nullptr, op, "optimizer ", optimizer_->name(),
                " must support momentum with `cycle_momentum` option enabled");
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    groups[i].initial_lr = max_lrs_[i] / o.div_factor();
    min_lrs_.push_back(*groups[i].initial_lr / o.final_div_factor());
    base_lrs_[i] = *groups[i].initial_lr;
    if (o.cycle_momentum())
      groups[i].options->set(groups[i].options->momentum_field(), o.max_momentum());
  }
  initial_step();
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (opts_.anneal_strategy() == "cos")
    return end + (start - end) / 2.0 * (std::cos(kPi * pct) + 1);
  return (end - start) * pct + start;
}

std::vector<double> OneCycleLR::get_lr() {
  const double step_num = double(last_epoch_);
  if (last_epoch_ > opts_.total_steps_)
    EMBER_FAIL(name(), "Tried to step ", last_epoch_ + 1,
               " times. The specified number of total steps is ", opts_.total_steps_);
  auto& groups = optimizer_->param_groups();
  std::vector<double> lrs;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    auto& g = groups[gi];
    const double lr_at[3] = {*g.initial_lr, max_lrs_[gi], min_lrs_[gi]};
    const double m_at[2] = {opts_.max_momentum(), opts_.base_momentum()};
    double start_step = 0, lr = 0, m = 0;
    for (size_t i = 0; i < phases_.size(); ++i) {
      const Phase& ph = phases_[i];
      if (step_num <= ph.end_step || i + 1 == phases_.size()) {
        if (ph.end_step == start_step)
          EMBER_FAIL(name(), "phase ", i, " is empty (total_steps ", opts_.total_steps_,
                     ", pct_start ", opts_.pct_start(), ")");
        const double pct = (step_num - start_step) / (ph.end_step - start_step);
        lr = anneal(lr_at[ph.start_lr], lr_at[ph.end_lr], pct);
        m = anneal(m_at[ph.start_m], m_at[ph.end_m], pct);
        break;
      }
      start_step = ph.end_step;
    }
    lrs.push_back(lr);
    if (opts_.cycle_momentum()) g.options->set(g.options->momentum_field(), m);
  }
  return lrs;
}

// ---- ReduceLROnPlateau ----

ReduceLROnPlateau::ReduceLROnPlateau(std::shared_ptr<Optimizer> optimizer,
                                     ReduceLROnPlateauOptions o)
    : optimizer_(std::move(optimizer)), opts_(std::move(o)) {
  const char* op = "ReduceLROnPlateau";
  if (!optimizer_) EMBER_FAIL(op, "the optimizer is null");
  EMBER_CHECK(opts_.factor() < 1.0, op, "Factor should be < 1.0, got ", opts_.factor());
  EMBER_CHECK(opts_.mode() == "min" || opts_.mode() == "max", op, "mode ", opts_.mode(),
              " is unknown!");
  EMBER_CHECK(opts_.threshold_mode() == "rel" || opts_.threshold_mode() == "abs", op,
              "threshold mode ", opts_.threshold_mode(), " is unknown!");
  min_lrs_ = per_group(opts_.min_lr(), optimizer_->param_groups().size(), "min_lr", op);
  best_ = opts_.mode() == "min" ? std::numeric_limits<double>::infinity()
                                : -std::numeric_limits<double>::infinity();
  for (const auto& g : optimizer_->param_groups()) last_lr_.push_back(g.lr());
}

bool ReduceLROnPlateau::is_better(double a, double best) const {
  const double th = opts_.threshold();
  if (opts_.mode() == "min")
    return opts_.threshold_mode() == "rel" ? a < best * (1 - th) : a < best - th;
  return opts_.threshold_mode() == "rel" ? a > best * (th + 1) : a > best + th;
}

void ReduceLROnPlateau::step(double metric) {
  last_epoch_ += 1;
  if (is_better(metric, best_)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    num_bad_epochs_ += 1;
  }
  if (cooldown_counter_ > 0) {
    cooldown_counter_ -= 1;
    num_bad_epochs_ = 0;  // bad epochs in cooldown do not count
  }
  auto& groups = optimizer_->param_groups();
  if (num_bad_epochs_ > opts_.patience()) {
    for (size_t i = 0; i < groups.size(); ++i) {
      const double old_lr = groups[i].lr();
      const double new_lr = std::max(old_lr * opts_.factor(), min_lrs_[i]);
      if (old_lr - new_lr > opts_.eps()) groups[i].set_lr(new_lr);
    }
    cooldown_counter_ = opts_.cooldown();
    num_bad_epochs_ = 0;
  }
  last_lr_.clear();
  for (const auto& g : groups) last_lr_.push_back(g.lr());
}

nn::StateDict ReduceLROnPlateau::state_dict() const {
  nn::StateDict d;
  d.set("best", f64_scalar(best_));
  d.set("num_bad_epochs", i64_scalar(num_bad_epochs_));
  d.set("cooldown_counter", i64_scalar(cooldown_counter_));
  d.set("last_epoch", i64_scalar(last_epoch_));
  d.set("last_lr", f64_vec(last_lr_));
  return d;
}

void ReduceLROnPlateau::load_state_dict(const nn::StateDict& d) {
  const char* op = "ReduceLROnPlateau";
  // best starts at +-inf (mode_worse); only NaN is refused.
  const double best = [&] {
    const FileField f{op, "", "best"};
    const Tensor& t = need(d, "best", op);
    if (t.defined() && t.numel() == 1 && std::isinf(t.item<double>())) return t.item<double>();
    return checked_double(f, t);
  }();
  const int64_t bad = read_count(d, "num_bad_epochs", op);
  const int64_t cool = read_count(d, "cooldown_counter", op);
  const int64_t epoch = read_count(d, "last_epoch", op);
  std::vector<double> last = read_vec(d, "last_lr", optimizer_->param_groups().size(), op);
  last_lr_ = std::move(last);
  best_ = best;
  num_bad_epochs_ = bad;
  cooldown_counter_ = cool;
  last_epoch_ = epoch;
}

// ---- SequentialLR ----

SequentialLR::SequentialLR(std::shared_ptr<Optimizer> optimizer,
                           std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones)
    : LRScheduler(std::move(optimizer), "SequentialLR"),
      schedulers_(std::move(schedulers)),
      milestones_(std::move(milestones)) {
  const char* op = name();
  EMBER_CHECK(!schedulers_.empty(), op, "expects at least one scheduler");
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    EMBER_CHECK(schedulers_[i] != nullptr, op, "scheduler ", i, " is null");
    EMBER_CHECK(
        schedulers_[i]->optimizer_ == optimizer_, op,
        "Sequential Schedulers expects all schedulers to belong to the same optimizer, but got "
        "scheduler at index ",
        i, " to be different than the optimizer passed in");
  }
  EMBER_CHECK(milestones_.size() + 1 == schedulers_.size(), op,
              "Sequential Schedulers expects number of schedulers provided to be one more than the "
              "number of milestone points, but got number of schedulers ",
              schedulers_.size(), " and the number of milestones to be equal to ",
              milestones_.size());
  last_epoch_ = 0;
  for (auto& g : optimizer_->param_groups()) g.set_lr(*g.initial_lr);
  for (auto& s : schedulers_) s->last_epoch_ -= 1;
  schedulers_[0]->initial_step();
  last_lr_ = schedulers_[0]->get_last_lr();
}

void SequentialLR::step() {
  last_epoch_ += 1;
  const size_t idx = size_t(std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) -
                            milestones_.begin());
  auto& s = schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == last_epoch_) {
    s->step_to(0);
  } else {
    s->step();
  }
  last_lr_ = s->get_last_lr();
}

nn::StateDict SequentialLR::state_dict() const {
  auto d = LRScheduler::state_dict();
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    const nn::StateDict sub = schedulers_[i]->state_dict();
    for (const auto& [k, v] : sub.items()) d.set("schedulers." + std::to_string(i) + "." + k, v);
  }
  return d;
}

void SequentialLR::load_state_dict(const nn::StateDict& d) {
  std::vector<nn::StateDict> subs(schedulers_.size());
  nn::StateDict own;
  for (const auto& [k, v] : d.items()) {
    if (k.rfind("schedulers.", 0) == 0) {
      const auto dot = k.find('.', 11);
      const std::string idx = dot == std::string::npos ? "" : k.substr(11, dot - 11);
      size_t i = 0;
      bool ok = !idx.empty() && idx.size() < 6 && std::all_of(idx.begin(), idx.end(), ::isdigit);
      if (ok) i = size_t(std::stoul(idx));
      if (!ok || i >= schedulers_.size()) EMBER_FAIL(name(), "unexpected key \"", k, "\"");
      subs[i].set(k.substr(dot + 1), v);
    } else {
      own.set(k, v);
    }
  }
  // A bad entry of a later scheduler leaves nothing changed: the loaded ones are put back.
  std::vector<nn::StateDict> before;
  for (const auto& s : schedulers_) before.push_back(s->state_dict());
  const nn::StateDict own_before = LRScheduler::state_dict();
  try {
    LRScheduler::load_state_dict(own);
    for (size_t i = 0; i < schedulers_.size(); ++i) schedulers_[i]->load_state_dict(subs[i]);
  } catch (...) {
    LRScheduler::load_state_dict(own_before);
    for (size_t i = 0; i < schedulers_.size(); ++i) schedulers_[i]->load_state_dict(before[i]);
    throw;
  }
}

}  // namespace ember::optim
