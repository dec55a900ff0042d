// The Learner's training loop: epochs, gradient accumulation, schedulers, metrics, progress,
// SIGINT handling and early stopping. Checkpoints, resume and logs are in learner_io.cpp.
#include "ember/train/learner.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "ember/autocast.h"
#include "ember/autograd.h"
#include "ember/dist/dist.h"
#include "ember/nn/functional/loss.h"
#include "ember/nn/utils.h"
#include "ember/ops/elementwise.h"
#include "ember/train/metrics.h"
#include "train/learner_internal.h"

namespace ember::train {

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_sigint(int) { g_interrupted = 1; }

// Installs the flag-only SIGINT handler for fit()'s duration.
class SigintGuard {
 public:
  explicit SigintGuard(bool on) : on_(on) {
    g_interrupted = 0;
    if (!on_) return;
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_);
  }
  ~SigintGuard() {
    if (on_) sigaction(SIGINT, &old_, nullptr);
  }
  SigintGuard(const SigintGuard&) = delete;
  SigintGuard& operator=(const SigintGuard&) = delete;

 private:
  bool on_;
  struct sigaction old_ {};
};

std::string hms(double s) {
  if (!std::isfinite(s) || s < 0) s = 0;
  const int64_t t = int64_t(s + 0.5);
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", (long long)(t / 3600),
                  (long long)(t / 60 % 60), (long long)(t % 60));
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", (long long)(t / 60), (long long)(t % 60));
  return buf;
}

}  // namespace

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::f32:
      return "f32";
    case Precision::bf16:
      return "bf16";
    case Precision::f16:
      return "f16";
  }
  return "?";
}

Precision parse_precision(const std::string& name) {
  for (Precision p : {Precision::f32, Precision::bf16, Precision::f16})
    if (name == precision_name(p)) return p;
  EMBER_FAIL("Learner", "unknown precision '", name, "' (f32, bf16 or f16)");
}

namespace detail {
std::optional<DType> autocast_dtype(Precision p) {
  if (p == Precision::f32) return std::nullopt;
  return p == Precision::bf16 ? DType::bf16 : DType::f16;
}
}  // namespace detail

const char* fit_status_name(FitStatus s) {
  switch (s) {
    case FitStatus::completed:
      return "completed";
    case FitStatus::early_stopped:
      return "early_stopped";
    case FitStatus::interrupted:
      return "interrupted";
  }
  return "?";
}

LossFn cross_entropy_loss() {
  return [](const Tensor& out, const Tensor& target) {
    return nn::functional::cross_entropy(out, target);
  };
}
LossFn mse_loss() {
  return
      [](const Tensor& out, const Tensor& target) { return nn::functional::mse_loss(out, target); };
}

namespace detail {
[[noreturn]] void fail_sampler() {
  EMBER_FAIL("Learner",
             "data-parallel training needs each rank to read its own shard: the loader has a "
             "sampler that is not a data::DistributedSampler (give it none, and the Learner "
             "shards it, or a DistributedSampler)");
}

[[noreturn]] void fail_batch_type(const char* op) {
  EMBER_FAIL(op,
             "the loader's batch type is not the one of the Learner's step function (a Learner "
             "built with a LossFn takes DataLoader<T, data::Example>; one built with StepFn<B> "
             "takes DataLoader<T, B>)");
}
}  // namespace detail

namespace {
// The step of the (UnaryModule, LossFn) constructor: output = model(data), loss(output, target).
// Nothing for an empty loss (the constructor says so).
std::any unary_step(nn::UnaryModule* model, LossFn loss) {
  if (!loss) return {};
  return StepFn<data::Example>([model, loss = std::move(loss)](const data::Example& b) {
    Tensor out = (*model)(b.data);  // with the forward hooks (DistributedDataParallel's)
    Tensor l = loss(out, b.target);
    return StepOutput{std::move(l), std::move(out), b.target,
                      b.data.dim() > 0 ? b.data.size(0) : 1};
  });
}

const char* const kBuiltinMetrics[] = {"loss",      "accuracy", "top_k_accuracy",
                                       "precision", "recall",   "f1"};
}  // namespace

Learner::Learner(std::shared_ptr<nn::UnaryModule> model,
                 std::shared_ptr<optim::Optimizer> optimizer, LossFn loss, LearnerOptions options)
    : Learner(model, std::move(optimizer), unary_step(model.get(), std::move(loss)),
              std::move(options)) {}

Learner::Learner(std::shared_ptr<nn::Module> model, std::shared_ptr<optim::Optimizer> optimizer,
                 std::any step, LearnerOptions options)
    : model_(std::move(model)),
      optimizer_(std::move(optimizer)),
      step_fn_(std::move(step)),
      opts_(std::move(options)),
      scaler_(opts_.precision == Precision::f16 ? DType::f16 : DType::f32, opts_.grad_scaler) {
  constexpr const char* op = "Learner";
  if (!model_) EMBER_FAIL(op, "model is null");
  if (!optimizer_) EMBER_FAIL(op, "optimizer is null");
  if (!step_fn_.has_value()) EMBER_FAIL(op, "loss / step function is empty");
  if (opts_.accumulation_steps < 1)
    EMBER_FAIL(op, "accumulation_steps must be >= 1, got ", opts_.accumulation_steps);
  if (opts_.keep_last < 0) EMBER_FAIL(op, "keep_last must be >= 0, got ", opts_.keep_last);
  if (opts_.top_k < 1) EMBER_FAIL(op, "top_k must be >= 1, got ", opts_.top_k);
  if (opts_.clip_grad_norm < 0)
    EMBER_FAIL(op, "clip_grad_norm must be >= 0, got ", opts_.clip_grad_norm);
  if (opts_.early_stopping && opts_.early_stopping->patience < 0)
    EMBER_FAIL(op, "early_stopping.patience must be >= 0, got ", opts_.early_stopping->patience);
  if (!nlohmann::json::accept(opts_.user_json)) EMBER_FAIL(op, "user_json is not valid JSON");
  if (const std::optional<DType> low = detail::autocast_dtype(opts_.precision))
    if (!supports_dtype(opts_.device, *low))
      EMBER_FAIL(op, "precision ", precision_name(opts_.precision), " runs ops in ",
                 dtype_name(*low), ", which ", opts_.device.str(), " does not have (",
                 *low == DType::f16 ? "bf16" : "f16", " or f32 may work there)");
  best_ = std::numeric_limits<double>::quiet_NaN();
  run_id_ = detail::new_run_id();
  model_->to(opts_.device);
  const bool group = dist::is_initialized();
  if (opts_.strategy == Strategy::ddp && !group)
    EMBER_FAIL(op, "strategy ddp needs a process group: call dist::init_process_group() first");
  if (opts_.strategy == Strategy::ddp ||
      (opts_.strategy == Strategy::automatic && group && dist::world_size() > 1)) {
    ddp_ = std::make_shared<nn::DistributedDataParallel>(model_, opts_.ddp);
    writer_ = dist::rank() == 0;
  }
}

void Learner::distribute(detail::BatchSource& loader, bool pad) {
  if (ddp_) loader.distribute(dist::rank(), dist::world_size(), pad);
}

bool Learner::any_interrupted() const {
  if (!ddp_) return g_interrupted != 0;
  const Tensor flag = from_vector(std::vector<int32_t>{g_interrupted ? 1 : 0}, {1}, Device::cpu());
  dist::all_reduce(flag, dist::ReduceOp::max);
  return flag.item<int32_t>() != 0;
}

std::map<std::string, double> Learner::gather_metrics(MetricAccumulator& acc) {
  const int64_t samples = acc.samples();  // this rank's, which weight its add_metric() values
  if (ddp_) acc.all_reduce();
  std::map<std::string, double> out = acc.compute();
  if (!ddp_) {
    for (const auto& m : metrics_) out[m->name()] = m->compute();
    return out;
  }
  // Per metric: (value x samples, samples) summed over the ranks; a rank without a value (NaN,
  // no batches) adds nothing. NaN when no rank has one.
  std::vector<double> v;
  for (const auto& m : metrics_) {
    const double x = m->compute();
    const bool has = std::isfinite(x) && samples > 0;
    v.push_back(has ? x * double(samples) : 0.0);
    v.push_back(has ? double(samples) : 0.0);
  }
  if (v.empty()) return out;
  const Tensor t = from_vector(v, {int64_t(v.size())}, Device::cpu());
  dist::all_reduce(t, dist::ReduceOp::sum);
  v = t.to_vector<double>();
  for (size_t i = 0; i < metrics_.size(); ++i)
    out[metrics_[i]->name()] =
        v[2 * i + 1] > 0 ? v[2 * i] / v[2 * i + 1] : std::numeric_limits<double>::quiet_NaN();
  return out;
}

void Learner::add_metric(std::shared_ptr<Metric> metric) {
  constexpr const char* op = "Learner::add_metric";
  if (!metric) EMBER_FAIL(op, "metric is null");
  const std::string name = metric->name();
  if (name.empty() || name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                             "0123456789_") != std::string::npos)
    EMBER_FAIL(op, "metric name \"", name, "\" must be letters, digits and '_'");
  for (const char* b : kBuiltinMetrics)
    if (name == b) EMBER_FAIL(op, "metric name \"", name, "\" is a built-in metric's");
  for (const auto& m : metrics_)
    if (m->name() == name) EMBER_FAIL(op, "a metric named \"", name, "\" was already added");
  metrics_.push_back(std::move(metric));
}

void Learner::set_scheduler(std::shared_ptr<optim::LRScheduler> scheduler,
                            SchedulerInterval interval) {
  if (scheduler && &scheduler->optimizer() != optimizer_.get())
    EMBER_FAIL("Learner", "the scheduler drives a different optimizer");
  scheduler_ = std::move(scheduler);
  interval_ = interval;
  if (scheduler_) plateau_.reset();
}

void Learner::set_scheduler(std::shared_ptr<optim::ReduceLROnPlateau> scheduler,
                            std::string metric) {
  plateau_ = std::move(scheduler);
  plateau_metric_ = std::move(metric);
  if (plateau_) scheduler_.reset();
}

namespace {
// The step function's run: under autocast with bf16 / f16 (the forward pass and the loss).
std::optional<StepOutput> run_step(detail::BatchSource& src, const LearnerOptions& o) {
  const std::optional<DType> dtype = detail::autocast_dtype(o.precision);
  if (!dtype) return src.step(o.device);
  autocast guard(o.device.type(), *dtype);
  return src.step(o.device);
}

int64_t samples_of(const StepOutput& s) {
  if (s.batch_size >= 0) return s.batch_size;
  if (s.target.defined() && s.target.dim() > 0) return s.target.size(0);
  if (s.output.defined() && s.output.dim() > 0) return s.output.size(0);
  return 1;
}

// The loss of a step, checked: one element.
const Tensor& step_loss(const StepOutput& s) {
  if (!s.loss.defined()) EMBER_FAIL("Learner", "the step returned no loss (undefined tensor)");
  if (s.loss.numel() != 1)
    EMBER_FAIL("Learner", "the loss must have one element, got shape ", shape_str(s.loss.shape()));
  return s.loss;
}
}  // namespace

void Learner::update_metrics(MetricAccumulator& acc, double loss, const StepOutput& s) {
  NoGradGuard no_grad;
  const Tensor out = s.output.defined() ? s.output.detach() : s.output;
  acc.add(loss, samples_of(s), out, s.target);
  for (const auto& m : metrics_) m->update(out, s.target);
}

std::map<std::string, double> Learner::evaluate_source(detail::BatchSource& loader) {
  const bool was_training = model_->is_training();
  model_->eval();
  NoGradGuard no_grad;
  MetricAccumulator acc(opts_.top_k);
  for (const auto& m : metrics_) m->reset();
  loader.set_epoch(0);  // the same batches every time
  try {
    while (auto s = run_step(loader, opts_)) update_metrics(acc, step_loss(*s).item<double>(), *s);
  } catch (...) {
    model_->train(was_training);
    throw;
  }
  model_->train(was_training);
  return gather_metrics(acc);
}

void Learner::train_epoch(detail::BatchSource& train, Run& run) {
  model_->train();
  run.acc = MetricAccumulator(opts_.top_k);
  for (const auto& m : metrics_) m->reset();
  run.epoch_start = Clock::now();
  run.stream_start = stream_stats(opts_.device);
  run.batches = 0;
  run.skipped_steps = 0;
  run.last_draw = -1;
  const int64_t nb = train.size();
  const int64_t n_acc = opts_.accumulation_steps;
  const int64_t skip = resume_batch_;
  resume_batch_ = 0;
  train.set_epoch(epoch_);
  const std::vector<Tensor> params = model_->parameters();
  for (int64_t b = 0; b < nb; ++b) {
    if (b < skip) {  // consumed before the interruption this run resumes from
      if (!train.skip())
        EMBER_FAIL("Learner", "the train loader ended after ", b, " of ", nb, " batches");
      continue;
    }
    // Micro-batches of one optimizer step; the last group of an epoch may be shorter.
    const int64_t group_start = b / n_acc * n_acc;
    const int64_t group_size = std::min(n_acc, nb - group_start);
    const bool step_due = b == group_start + group_size - 1;
    const std::optional<StepOutput> s = run_step(train, opts_);
    if (!s) EMBER_FAIL("Learner", "the train loader ended after ", b, " of ", nb, " batches");
    const Tensor& loss = step_loss(*s);
    // Outside autocast (as torch's recipe); the scaler multiplies only with f16. With ddp the
    // gradients are averaged over the ranks only in the backward of a step's last micro-batch.
    {
      std::optional<nn::DistributedDataParallel::NoSync> local;
      if (ddp_ && !step_due) local.emplace(*ddp_);
      scaler_.scale(group_size == 1 ? loss : loss / double(group_size)).backward();
    }
    const double loss_value = loss.item<double>();
    ++run.batches;
    update_metrics(run.acc, loss_value, *s);
    if (step_due) {
      if (opts_.clip_grad_norm > 0) {
        scaler_.unscale_(*optimizer_);  // clip the true gradients
        nn::clip_grad_norm_(params, opts_.clip_grad_norm);
      }
      if (!scaler_.step(*optimizer_)) ++run.skipped_steps;
      scaler_.update();
      optimizer_->zero_grad();
      ++step_;
      if (scheduler_ && interval_ == SchedulerInterval::batch) scheduler_->step();
    }
    if (opts_.on_batch_end) opts_.on_batch_end(BatchEvent{epoch_ + 1, b, nb, step_, loss_value});
    if (run.bar) {
      const double el = seconds_since(run.epoch_start);
      if (b == nb - 1 || el - run.last_draw >= 0.1) {
        run.last_draw = el;
        const int64_t done = b + 1 - skip, left = nb - b - 1;
        const double eta = done > 0 ? el / double(done) * double(left) : 0;
        const int width = 30;
        const int fill = int(double(width) * double(b + 1) / double(nb));
        std::string barstr(size_t(fill), '=');
        if (fill < width) barstr += '>' + std::string(size_t(width - fill - 1), ' ');
        const auto m = run.acc.compute();
        char buf[256];
        std::snprintf(buf, sizeof buf, "\repoch %lld/%lld [%s] %lld/%lld loss %.4f",
                      (long long)(epoch_ + 1), (long long)run.total_epochs, barstr.c_str(),
                      (long long)(b + 1), (long long)nb, m.count("loss") ? m.at("loss") : 0.0);
        *run.out << buf;
        if (m.count("accuracy")) {
          std::snprintf(buf, sizeof buf, " acc %.4f", m.at("accuracy"));
          *run.out << buf;
        }
        *run.out << " ETA " << hms(eta) << "   " << std::flush;
      }
    }
    // Ctrl-C: stop once the current optimizer step is complete (not after the last batch:
    // that epoch is finished normally and fit() stops after it).
    if (step_due && b < nb - 1 && any_interrupted()) {
      if (run.bar) *run.out << "\n";
      run.interrupted = true;
      train.set_epoch(epoch_);  // stops the epoch (and its workers)
      const int64_t consumed = b + 1;
      if (!opts_.output_dir.empty()) {
        run.last_checkpoint = detail::checkpoint_dir(opts_) + "/interrupted.safetensors";
        if (writer_) write_checkpoint(run.last_checkpoint, consumed);
      }
      if (run.lines) {
        *run.out << "interrupted at epoch " << epoch_ + 1 << ", batch " << consumed << "/" << nb;
        if (!run.last_checkpoint.empty()) *run.out << "; checkpoint " << run.last_checkpoint;
        *run.out << "\n" << std::flush;
      }
      return;
    }
  }
  if (run.bar) *run.out << "\n" << std::flush;
  train.set_epoch(epoch_ + 1);
}

FitResult Learner::fit_sources(detail::BatchSource& train, detail::BatchSource* valid,
                               int64_t epochs) {
  constexpr const char* op = "Learner::fit";
  if (epochs < 0) EMBER_FAIL(op, "epochs must be >= 0, got ", epochs);
  distribute(train, true);
  if (valid) distribute(*valid, false);
  if (ddp_) {  // every rank must run as many steps: the same dataset, sharded alike
    const Tensor n =
        from_vector(std::vector<int64_t>{train.size(), -train.size()}, {2}, Device::cpu());
    dist::all_reduce(n, dist::ReduceOp::max);
    const std::vector<int64_t> v = n.to_vector<int64_t>();
    if (v[0] != -v[1])
      EMBER_FAIL(op, "the ranks' train loaders have different numbers of batches (", -v[1], " to ",
                 v[0], "; this rank ", train.size(),
                 "): every rank must load the same dataset with the same batch size");
  }
  if (train.size() == 0) EMBER_FAIL(op, "the train loader has no batches");
  if (resume_seed_ && *resume_seed_ != train.seed())
    EMBER_FAIL(op, "the train loader's seed ", train.seed(), " differs from the resumed run's ",
               *resume_seed_);
  if (resume_batch_ > train.size())
    EMBER_FAIL(op, "the resumed run had consumed ", resume_batch_, " batches but the loader has ",
               train.size());
  loader_seed_ = train.seed();
  // Before any training: a bad output folder fails now, and a Ctrl-C in the first epoch has a
  // place for its checkpoint.
  if (!opts_.output_dir.empty() && writer_) detail::ensure_dir(detail::checkpoint_dir(opts_));
  Run run;
  run.out = opts_.out ? opts_.out : &std::cout;
  run.total_epochs = epochs;
  const bool tty = ::isatty(STDOUT_FILENO) && run.out == &std::cout;
  run.bar = opts_.progress == Progress::bar || (opts_.progress == Progress::automatic && tty);
  run.lines = opts_.progress != Progress::none;
  if (!writer_) run.bar = run.lines = false;  // rank 0 speaks for all
  SigintGuard sigint(opts_.handle_sigint);
  optimizer_->zero_grad();
  FitStatus status = FitStatus::completed;
  while (epoch_ < epochs) {
    train_epoch(train, run);
    if (run.interrupted) {
      status = FitStatus::interrupted;
      break;
    }
    const bool stop = end_epoch(valid, run);
    if (stop) {
      status = FitStatus::early_stopped;
      break;
    }
    if (any_interrupted()) {  // arrived during the last batch or validation: the epoch is saved
      status = FitStatus::interrupted;
      if (run.lines) *run.out << "interrupted after epoch " << epoch_ << "\n" << std::flush;
      break;
    }
  }
  FitResult r;
  r.status = status;
  r.epochs_completed = epoch_;
  r.steps = step_;
  r.history = history_;
  r.best_metric = best_;
  r.best_epoch = best_epoch_;
  r.last_checkpoint = run.last_checkpoint;
  // Rank 0's files are complete before any rank goes on (a resume() right after fit() reads them).
  if (ddp_) dist::barrier();
  if (opts_.on_fit_end) opts_.on_fit_end(r);
  return r;
}

}  // namespace ember::train
