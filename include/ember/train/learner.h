// ember::train::Learner: the training loop (as fastai's Learner / PyTorch Lightning's Trainer):
// fit over epochs with metrics, a progress bar, logs, checkpoints, resume, early stopping,
// gradient accumulation, Ctrl-C handling and an HTML report.
//
//   auto model = std::make_shared<MyNet>();
//   auto opt = std::make_shared<optim::Adam>(model->parameters(), optim::AdamOptions(1e-3));
//   train::LearnerOptions o;  o.output_dir = "runs/mnist";  o.device = Device::cpu();
//   train::Learner learner(model, opt, train::cross_entropy_loss(), o);
//   train::FitResult r = learner.fit(train_loader, &valid_loader, 10);
//   // later, after an interruption:  learner.resume("runs/mnist"); learner.fit(..., 10);
//
// Any model and batch (several inputs or outputs; the batch type is the DataLoader's): give a
// step function, as a LightningModule's training_step, that runs the model on a batch and
// returns its loss and what the metrics see. It serves training and evaluation alike.
//
//   struct Pair {  // a batch type; to() lets the DataLoader and the Learner move it
//     Tensor image, mask, label;
//     Pair to(const Device& d) const { return {image.to(d), mask.to(d), label.to(d)}; }
//   };
//   data::DataLoader<Item, Pair> loader(dataset, options, batcher);
//   train::Learner learner(model, opt, train::StepFn<Pair>([model](const Pair& b) {
//     auto [logits, aux] = model->forward(b.image, b.mask);
//     Tensor loss = nn::functional::cross_entropy(logits, b.label) + aux.mean() * 0.1;
//     return train::StepOutput{loss, logits, b.label};
//   }), o);
//   learner.add_metric(train::mean_metric("mae", [](const Tensor& out, const Tensor& t) { ... }));
//   learner.fit(loader, &valid_loader, 10);
//
// Epochs count from 1 everywhere (console, metrics.csv / json, report, EpochSummary::epoch,
// BatchEvent::epoch, FitResult::best_epoch, checkpoint names and their "best_epoch"); a best
// epoch of 0 means none yet.
//
// Output dir (when set): checkpoints/epoch-<NNNN>.safetensors (the last keep_last),
// checkpoints/best.safetensors, checkpoints/interrupted.safetensors (after Ctrl-C),
// metrics.csv and metrics.json (one row / object per epoch), report.html (inline SVG curves).
// Every file is written atomically.
//
// Deleting old epoch checkpoints: the Learner only ever deletes a file of its own output dir's
// checkpoints folder named epoch-<NNNN>.safetensors that it wrote itself or whose checkpoint
// records this run's id and that epoch. A checkpoint lists its kept files as bare names (no
// paths); resume() drops any other entry with a warning on stderr, so a copied run folder, or a
// checkpoint whose list was edited, never makes a run delete a file elsewhere.
//
// Metric names: "train_loss", "train_accuracy", "train_top_k_accuracy", "train_precision",
// "train_recall", "train_f1", "train_<name>" of each add_metric() metric, the same with
// "valid_", "lr" (group 0's lr at the end of the epoch), "samples_per_sec" (training samples /
// wall seconds), "epoch" (from 1); with Precision::f16 also "grad_scale" (the GradScaler's scale
// at the end of the epoch) and "skipped_steps" (optimizer steps the scaler skipped for inf / NaN
// gradients in the epoch, counted from the resume point after a mid-epoch resume).
//
// Data-parallel training (LearnerOptions::strategy, docs/distributed.md): with ddp every rank of
// the default dist process group runs fit() with the same model, optimizer, options and loaders
// (each reads the whole dataset's description; the Learner shards it):
//  - the model is wrapped in nn::DistributedDataParallel (rank 0's parameters copied to all;
//    gradients averaged over the ranks during backward; an accumulation group's micro-batches
//    but the last run under no_sync), so every rank takes the same optimizer steps;
//  - a train loader without a sampler gets a data::DistributedSampler with the loader's shuffle
//    and seed (padded: every rank runs the same number of batches; batch_size is per rank, so
//    a step sees world_size x batch_size samples), and its shuffle is turned off; a validation
//    loader without one gets an exact shard (pad = false). A loader with another kind of
//    sampler is an error;
//  - the built-in metrics are computed over all ranks' samples (MetricAccumulator::all_reduce);
//    add_metric() metrics are averaged over the ranks weighted by their samples (exact for
//    per-sample means); samples_per_sec counts every rank's samples;
//  - Ctrl-C on any rank stops all of them after the same step (the ranks agree at each step);
//  - only rank 0 prints, writes checkpoints, logs and the report; every rank can resume() from
//    them (output_dir must be the same folder for all ranks: a shared one between machines).
//
// Mixed precision (LearnerOptions::precision, docs/mixed_precision.md): with bf16 or f16 each
// step function (the forward pass and the loss) runs under ember::autocast(device type, dtype),
// in training and evaluation; backward() runs outside it. Parameters, gradients and optimizer
// state stay in the model's dtype (f32 master weights). f16 scales the loss with an
// optim::GradScaler (scale, backward, unscale before clipping, step unless a gradient is inf /
// NaN, update); bf16 has f32's range and runs without one. A skipped step still counts as a
// step (BatchEvent::step, FitResult::steps, batch-interval schedulers), as Lightning counts it.
#pragma once
#include <any>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/data/dataloader.h"
#include "ember/data/sampler.h"
#include "ember/nn/module.h"
#include "ember/nn/parallel/distributed.h"
#include "ember/optim/grad_scaler.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/optimizer.h"
#include "ember/tensor.h"

namespace ember::train {

class MetricAccumulator;
using Loader = data::DataLoader<data::Example, data::Example>;
/// Returns the mean loss of a batch as a 0-d floating tensor: loss(output, target).
using LossFn = std::function<Tensor(const Tensor& output, const Tensor& target)>;

/// cross_entropy(output [B, C] logits, target [B] class indices), mean reduction
/// (torch.nn.functional.cross_entropy).
LossFn cross_entropy_loss();
/// mse_loss(output, target), mean reduction (torch.nn.functional.mse_loss).
LossFn mse_loss();

/// What a step function returns for one batch (as a LightningModule's training_step).
struct StepOutput {
  /// The batch's mean loss, one element; fit() calls backward() on it.
  Tensor loss;
  /// What the metrics see as the prediction and the target (either may be undefined). The
  /// built-in classification metrics need output [B, C] scores and target [B] integers.
  Tensor output;
  Tensor target;
  /// Samples in the batch, which weight the epoch means; -1: target's dim 0 when target is
  /// defined with dim > 0, else output's, else 1.
  int64_t batch_size = -1;
};
/// Runs the model on one batch: the batch comes moved to LearnerOptions::device when its type
/// has a data::BatchToDevice (Tensor, Example, vectors / pairs / tuples / maps of them, types
/// with a member to(const Device&)); otherwise the step moves it. Gradients and the train /
/// eval mode are the Learner's business.
template <typename B>
using StepFn = std::function<StepOutput(const B& batch)>;

/// A user-defined metric (as torchmetrics.Metric). The Learner calls reset() before each
/// training epoch and each evaluation, update() after every batch with the step's output
/// (detached, without gradients) and target, and compute() at the end; the value appears as
/// "train_<name>" and "valid_<name>" in the history, console, metrics.csv / json and report.
/// One instance serves training and validation in turn (not concurrently).
class Metric {
 public:
  virtual ~Metric() = default;
  /// Letters, digits and '_'; not a built-in name (loss, accuracy, top_k_accuracy, precision,
  /// recall, f1).
  virtual std::string name() const = 0;
  virtual void reset() = 0;
  virtual void update(const Tensor& output, const Tensor& target) = 0;
  /// The value over the batches since reset(); NaN when there were none.
  virtual double compute() const = 0;
};

/// A metric that is a per-batch mean, averaged over the epoch weighted by each batch's sample
/// count (target's dim 0, or output's when target is undefined or 0-d; 1 for 0-d tensors), so
/// batches of different sizes give the mean over all samples, not the mean of batch means
/// (as torchmetrics.MeanMetric with weight = batch size).
class MeanMetric : public Metric {
 public:
  using Fn = std::function<double(const Tensor& output, const Tensor& target)>;
  /// Throws ember::Error("[MeanMetric] ...") for an empty fn.
  MeanMetric(std::string name, Fn batch_mean);
  std::string name() const override { return name_; }
  void reset() override;
  void update(const Tensor& output, const Tensor& target) override;
  double compute() const override;

 private:
  std::string name_;
  Fn fn_;
  double sum_ = 0;
  int64_t count_ = 0;
};
/// std::make_shared<MeanMetric>(name, batch_mean).
std::shared_ptr<Metric> mean_metric(std::string name, MeanMetric::Fn batch_mean);

/// Whether a larger or smaller value of a metric is better.
enum class Mode { min, max };

/// When an LRScheduler steps: after each optimizer step or after each epoch.
enum class SchedulerInterval { batch, epoch };

/// Stops when `metric` has not improved by more than min_delta for `patience` epochs
/// (as Lightning's EarlyStopping / Keras'). Improvement: value < best - min_delta (min) or
/// value > best + min_delta (max).
struct EarlyStopping {
  std::string metric = "valid_loss";
  int64_t patience = 3;
  double min_delta = 0.0;
  Mode mode = Mode::min;
};

/// What a batch callback is told (after the batch's backward and, when due, optimizer step).
struct BatchEvent {
  int64_t epoch = 0;    ///< from 1
  int64_t batch = 0;    ///< 0-based index in the epoch
  int64_t batches = 0;  ///< batches in the epoch
  int64_t step = 0;     ///< optimizer steps so far
  double loss = 0;      ///< this batch's loss
};

enum class Progress { automatic, bar, lines, none };

/// The precision of the training step (as Lightning's Trainer(precision=...) / Burn's
/// MixedPrecision; not the "precision" classification metric): f32 runs ops in the model's
/// dtype; bf16 and f16 run the forward pass and the loss under ember::autocast in that dtype
/// with f32 master weights, f16 with loss scaling (optim::GradScaler).
enum class Precision { f32, bf16, f16 };
/// "f32", "bf16", "f16".
const char* precision_name(Precision p);
/// The Precision named "f32", "bf16" or "f16". Throws ember::Error("[Learner] unknown precision
/// 'x' (f32, bf16 or f16)") otherwise.
Precision parse_precision(const std::string& name);
/// The precision of the checkpoint Learner::resume(dir) would load (dir: a run folder or a
/// checkpoint file); f32 for checkpoints written before precision was recorded. For a program
/// that keeps a run's precision on resume. Throws as resume() when there is no checkpoint or its
/// learner state is unreadable.
Precision checkpoint_precision(const std::string& dir);

/// How fit() uses several processes (as Lightning's Trainer(strategy=...) / Burn's DDP
/// strategy; see "Data-parallel training" at the top).
enum class Strategy { automatic, single, ddp };

struct EpochSummary;
struct FitResult;

struct LearnerOptions {
  /// Model and batches are moved here.
  Device device = Device::default_device();
  /// Where checkpoints, logs and the report go; empty writes no files.
  std::string output_dir;
  /// Micro-batches per optimizer step; each micro-batch's loss is divided by this, so N
  /// micro-batches of size b step like one batch of N*b (for mean losses). The last group of
  /// an epoch may be shorter; it is scaled by its own size so it stays an unbiased mean.
  int64_t accumulation_steps = 1;
  /// Clips the global gradient norm before each step when > 0 (nn::clip_grad_norm_; with f16,
  /// of the unscaled gradients).
  double clip_grad_norm = 0;
  /// The training step's precision (see "Mixed precision" at the top). A run keeps it: resume()
  /// refuses a checkpoint of another precision.
  Precision precision = Precision::f32;
  /// Data-parallel training: automatic is ddp when dist::is_initialized() and
  /// dist::world_size() > 1, single otherwise. ddp without a process group is an error.
  Strategy strategy = Strategy::automatic;
  /// The DistributedDataParallel options with ddp (bucket size, find_unused_parameters...).
  nn::DistributedDataParallelOptions ddp;
  /// The loss scaler's options with Precision::f16 (ignored otherwise; enabled(false) trains
  /// f16 without loss scaling). The constructor validates them whatever the precision.
  optim::GradScalerOptions grad_scaler;
  /// k of the top-k accuracy.
  int64_t top_k = 5;
  /// Epoch checkpoints kept (older ones are deleted); 0 keeps none (best still written).
  int64_t keep_last = 2;
  /// The metric that decides checkpoints/best.safetensors (skipped when it is absent).
  std::string monitor = "valid_loss";
  Mode monitor_mode = Mode::min;
  std::optional<EarlyStopping> early_stopping;
  /// automatic: a live bar when stdout is a terminal (isatty), per-epoch lines otherwise.
  Progress progress = Progress::automatic;
  /// Where lines and the bar go (default std::cout).
  std::ostream* out = nullptr;
  /// Installs a SIGINT handler during fit() that only sets a flag (restored afterwards).
  bool handle_sigint = true;
  /// Called after every training batch (may call std::raise(SIGINT) to test interruption).
  std::function<void(const BatchEvent&)> on_batch_end;
  /// Called after each completed epoch, once its metrics, checkpoints and logs are written
  /// (as Lightning's on_train_epoch_end / a Keras callback's on_epoch_end).
  std::function<void(const EpochSummary&)> on_epoch_end;
  /// Called when fit() returns (completed, early stopped or interrupted; not when it throws).
  std::function<void(const FitResult&)> on_fit_end;
  /// Kept verbatim in checkpoints ("user" metadata); must be valid JSON.
  std::string user_json = "{}";
  /// The run's settings at the top of report.html, in order, as name / value ({"model", "cnn"},
  /// {"batch size", "64"}, ...). The Learner adds "device" (options.device), "precision" (f32:
  /// the dtype of the model's first floating parameter, "float32"; bf16 / f16: "mixed bfloat16
  /// (float32 weights)", "mixed float16 (float32 weights)") and "Ember" (the version) unless
  /// named here.
  std::vector<std::pair<std::string, std::string>> report_settings;
};

/// One epoch's metrics (see the metric names above) and its wall time.
struct EpochSummary {
  int64_t epoch = 0;  ///< from 1
  std::map<std::string, double> metrics;
  double seconds = 0;
};

enum class FitStatus { completed, early_stopped, interrupted };
const char* fit_status_name(FitStatus s);  // "completed", "early_stopped", "interrupted"

struct FitResult {
  FitStatus status = FitStatus::completed;
  int64_t epochs_completed = 0;       ///< total, including epochs before a resume
  int64_t steps = 0;                  ///< optimizer steps, total
  std::vector<EpochSummary> history;  ///< every completed epoch (restored by resume)
  double best_metric = 0;             ///< NaN when the monitor metric was never seen
  int64_t best_epoch = 0;             ///< the epoch (from 1) of best_metric; 0: none
  std::string last_checkpoint;        ///< the checkpoint written last ("" without output_dir)
};

namespace detail {
/// Throws "[Learner] data-parallel training needs ... DistributedSampler".
[[noreturn]] void fail_sampler();

/// A loader with the step function of its batch type, its types erased (the Learner's loop
/// lives in src/train and sees only this).
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  virtual int64_t size() const = 0;
  virtual uint64_t seed() const = 0;
  virtual void set_epoch(int64_t epoch) = 0;
  /// Reads the next batch and drops it; false at the end of the epoch.
  virtual bool skip() = 0;
  /// Gives the loader a data::DistributedSampler for `rank` of `world` (see "Data-parallel
  /// training") unless it has one; throws for another kind of sampler.
  virtual void distribute(int64_t rank, int64_t world, bool pad) = 0;
  /// Reads the next batch, moves it to `device` (when the batch type can move) and runs the
  /// step on it; nullopt at the end of the epoch.
  virtual std::optional<StepOutput> step(const Device& device) = 0;
};

template <typename T, typename B>
class LoaderSource final : public BatchSource {
 public:
  LoaderSource(data::DataLoader<T, B>& loader, const StepFn<B>& step)
      : loader_(loader), step_(step) {}
  int64_t size() const override { return loader_.size(); }
  uint64_t seed() const override { return loader_.options().seed; }
  void set_epoch(int64_t epoch) override { loader_.set_epoch(epoch); }
  bool skip() override { return loader_.next().has_value(); }
  void distribute(int64_t rank, int64_t world, bool pad) override {
    const data::DataLoaderOptions& o = loader_.options();
    if (o.sampler) {
      if (!dynamic_cast<const data::DistributedSampler*>(o.sampler.get())) fail_sampler();
      return;
    }
    data::DistributedSamplerOptions so;
    so.num_replicas = world;
    so.rank = rank;
    so.shuffle = o.shuffle;
    so.seed = o.seed;
    so.pad = pad;
    loader_.set_sampler(std::make_shared<data::DistributedSampler>(so));
  }
  std::optional<StepOutput> step(const Device& device) override {
    std::optional<B> b = loader_.next();
    if (!b) return std::nullopt;
    if constexpr (data::batch_movable_v<B>) *b = data::batch_to_device(*b, device);
    return step_(*b);
  }

 private:
  data::DataLoader<T, B>& loader_;
  const StepFn<B>& step_;
};

/// Throws "[op] the loader's batch type is not the one of the Learner's step function".
[[noreturn]] void fail_batch_type(const char* op);

}  // namespace detail

class Learner {
 public:
  /// A one-input model trained on Example batches: output = model(batch.data), loss(output,
  /// batch.target). Moves the model to options.device. The optimizer must hold the model's
  /// parameters. Throws ember::Error("[Learner] ...") for a null model / optimizer / loss or
  /// bad options (accumulation_steps < 1, keep_last < 0, top_k < 1, invalid user_json), and
  /// ember::Error("[GradScaler] ...") for invalid grad_scaler options (whatever the precision).
  Learner(std::shared_ptr<nn::UnaryModule> model, std::shared_ptr<optim::Optimizer> optimizer,
          LossFn loss, LearnerOptions options = {});
  /// Any model and batch type B: `step` runs the model on a batch (see StepFn). fit() and
  /// evaluate() then take DataLoader<T, B> for any T (another B throws ember::Error). Throws
  /// as the constructor above, and for an empty step.
  template <typename B>
  Learner(std::shared_ptr<nn::Module> model, std::shared_ptr<optim::Optimizer> optimizer,
          StepFn<B> step, LearnerOptions options = {})
      : Learner(std::move(model), std::move(optimizer),
                step ? std::any(std::move(step)) : std::any(), std::move(options)) {}

  /// Adds a metric computed on training and validation batches (see Metric). Throws
  /// ember::Error("[Learner::add_metric] ...") for null, a bad or built-in name, or a name
  /// already added.
  void add_metric(std::shared_ptr<Metric> metric);

  /// An epoch- or batch-driven scheduler (it must drive this learner's optimizer).
  void set_scheduler(std::shared_ptr<optim::LRScheduler> scheduler,
                     SchedulerInterval interval = SchedulerInterval::epoch);
  /// ReduceLROnPlateau, stepped after each epoch with `metric` (default valid_loss).
  void set_scheduler(std::shared_ptr<optim::ReduceLROnPlateau> scheduler,
                     std::string metric = "valid_loss");

  /// Trains until `epochs` epochs are completed in total (counting those before a resume),
  /// evaluating on `valid` (may be null) after each epoch. Returns early with status
  /// early_stopped or interrupted (after SIGINT: the current batch and its accumulation group
  /// finish, checkpoints/interrupted.safetensors is written, the epoch's partial metrics are
  /// not logged). Calls options.on_fit_end with the result before returning. Throws
  /// ember::Error for an empty train loader or a batch type other than the step function's,
  /// and rethrows failures of the model, loss, loader or callbacks.
  template <typename T, typename B>
  FitResult fit(data::DataLoader<T, B>& train, std::type_identity_t<data::DataLoader<T, B>>* valid,
                int64_t epochs) {
    const StepFn<B>& step = step_fn<B>("Learner::fit");
    detail::LoaderSource<T, B> tr(train, step);
    std::optional<detail::LoaderSource<T, B>> va;
    if (valid) va.emplace(*valid, step);
    return fit_sources(tr, va ? &*va : nullptr, epochs);
  }

  /// Restores model, optimizer, scheduler, GradScaler (f16), RNG states, counters, history, best
  /// metric and early-stopping state from the newest checkpoint in `dir`/checkpoints (interrupted
  /// or epoch-NNNN, by optimizer step), or from `dir` itself when it is a checkpoint file. The next
  /// fit() continues where that run stopped (mid-epoch after an interruption, skipping the batches
  /// already consumed) with results identical to an uninterrupted run. Throws
  /// ember::Error("[Learner::resume] ...") when there is no checkpoint, it does not match (a
  /// checkpoint trained in another precision: the error names both), or a
  /// value in it is out of range (ember/checked.h; the error names the file and the field:
  /// the GradScaler's state as GradScaler::load_state_dict checks it,
  /// negative counters, a history that is not one entry per completed epoch, a best epoch
  /// after the last one...). Entries of the checkpoint's list of kept epoch checkpoints that
  /// are not bare names epoch-<NNNN>.safetensors (N at most the epochs completed) are dropped
  /// with a warning on stderr and never deleted; the others are resolved against this
  /// learner's own output_dir (see "Deleting old epoch checkpoints" above).
  void resume(const std::string& dir);
  /// Replaces the value of report setting `name` (LearnerOptions::report_settings) or appends
  /// it: for what is known only after resume(), such as the learning rate a checkpoint restored.
  void set_report_setting(const std::string& name, const std::string& value);
  /// The user_json stored in the checkpoint resume() loaded ("" before a resume), so a program
  /// can check that it continues the same kind of run.
  const std::string& resumed_user_json() const& { return resumed_user_json_; }
  std::string resumed_user_json() && { return resumed_user_json_; }  // a copy on a temporary

  /// Mean loss and metrics over a loader, in eval mode without gradients ("loss", "accuracy"...
  /// and the add_metric() names, without a prefix). Restores the training mode afterwards.
  /// With ddp the loader is sharded (see "Data-parallel training") and every rank must call it.
  template <typename T, typename B>
  std::map<std::string, double> evaluate(data::DataLoader<T, B>& loader) {
    detail::LoaderSource<T, B> src(loader, step_fn<B>("Learner::evaluate"));
    distribute(src, false);
    return evaluate_source(src);
  }

  /// Writes the checkpoint of the current state to `path` (atomic).
  void save_checkpoint(const std::string& path) const;

  nn::Module& model() { return *model_; }
  optim::Optimizer& optimizer() { return *optimizer_; }
  const LearnerOptions& options() const { return opts_; }
  const std::vector<EpochSummary>& history() const& { return history_; }
  std::vector<EpochSummary> history() && { return history_; }  // a copy on a temporary
  /// The loss scaler (disabled unless options().precision is f16).
  const optim::GradScaler& grad_scaler() const { return scaler_; }
  /// The DistributedDataParallel wrapping model() with the ddp strategy; null otherwise.
  nn::DistributedDataParallel* ddp() const { return ddp_.get(); }
  /// Whether this process prints and writes files: rank 0 with ddp, always otherwise.
  bool is_writer() const { return writer_; }
  int64_t epochs_completed() const { return epoch_; }
  int64_t steps() const { return step_; }

 private:
  struct Run;
  /// `step` holds a StepFn<B>, or nothing when the user's was empty.
  Learner(std::shared_ptr<nn::Module> model, std::shared_ptr<optim::Optimizer> optimizer,
          std::any step, LearnerOptions options);
  template <typename B>
  const StepFn<B>& step_fn(const char* op) const {
    if (const auto* f = std::any_cast<StepFn<B>>(&step_fn_)) return *f;
    detail::fail_batch_type(op);
  }
  FitResult fit_sources(detail::BatchSource& train, detail::BatchSource* valid, int64_t epochs);
  std::map<std::string, double> evaluate_source(detail::BatchSource& loader);
  /// With ddp: loader.distribute(rank, world, pad).
  void distribute(detail::BatchSource& loader, bool pad);
  /// acc's metrics and the add_metric() ones; with ddp over every rank's samples.
  std::map<std::string, double> gather_metrics(MetricAccumulator& acc);
  /// With ddp: whether any rank saw Ctrl-C (a collective); g_interrupted otherwise.
  bool any_interrupted() const;
  void train_epoch(detail::BatchSource& train, Run& run);
  /// Adds one step's loss, output and target to `acc` and to the add_metric() metrics.
  void update_metrics(MetricAccumulator& acc, double loss, const StepOutput& s);
  /// Metrics, schedulers, best / early stopping, checkpoints and logs; true to stop early.
  bool end_epoch(detail::BatchSource* valid, Run& run);
  /// Writes a checkpoint of the current state, `batch` batches into epoch epochs_completed().
  void write_checkpoint(const std::string& path, int64_t batch) const;
  void write_logs() const;

  std::shared_ptr<nn::Module> model_;
  std::shared_ptr<optim::Optimizer> optimizer_;
  std::any step_fn_;  // the StepFn<B> of the batch type B
  std::vector<std::shared_ptr<Metric>> metrics_;
  LearnerOptions opts_;
  std::shared_ptr<optim::LRScheduler> scheduler_;
  SchedulerInterval interval_ = SchedulerInterval::epoch;
  std::shared_ptr<optim::ReduceLROnPlateau> plateau_;
  std::string plateau_metric_;
  optim::GradScaler scaler_;
  std::shared_ptr<nn::DistributedDataParallel> ddp_;  // with the ddp strategy
  bool writer_ = true;                                // prints and writes files

  int64_t epoch_ = 0;         // epochs completed
  int64_t step_ = 0;          // optimizer steps
  int64_t resume_batch_ = 0;  // batches of epoch_ to skip (after an interrupted checkpoint)
  std::optional<uint64_t> resume_seed_;
  std::string resumed_user_json_;
  uint64_t loader_seed_ = 0;  // the train loader's seed (saved in checkpoints)
  double best_ = 0;
  int64_t best_epoch_ = 0;  // from 1; 0: none
  double es_best_ = 0;
  int64_t es_bad_epochs_ = 0;
  bool es_has_best_ = false;
  std::vector<EpochSummary> history_;
  std::vector<std::string> kept_;     // epoch checkpoint names (no paths) on disk, oldest first
  std::vector<std::string> written_;  // the checkpoint names this object wrote
  std::string run_id_;                // recorded in every checkpoint; taken over by resume()
  /// Deletes output_dir/checkpoints/<name> when this run wrote it (see the top of the file).
  void remove_old_checkpoint(const std::string& name);
};

}  // namespace ember::train
