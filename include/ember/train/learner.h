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
// "train_recall", "train_f1", the same with "valid_", "lr" (group 0's lr at the end of the
// epoch), "samples_per_sec" (training samples / wall seconds), "epoch".
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "ember/data/dataloader.h"
#include "ember/nn/module.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/optimizer.h"
#include "ember/tensor.h"

namespace ember::train {

using Loader = data::DataLoader<data::Example, data::Example>;
/// Returns the mean loss of a batch as a 0-d floating tensor: loss(output, target).
using LossFn = std::function<Tensor(const Tensor& output, const Tensor& target)>;

/// cross_entropy(output [B, C] logits, target [B] class indices), mean reduction
/// (torch.nn.functional.cross_entropy).
LossFn cross_entropy_loss();
/// mse_loss(output, target), mean reduction (torch.nn.functional.mse_loss).
LossFn mse_loss();

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
  int64_t epoch = 0;    ///< 0-based
  int64_t batch = 0;    ///< 0-based index in the epoch
  int64_t batches = 0;  ///< batches in the epoch
  int64_t step = 0;     ///< optimizer steps so far
  double loss = 0;      ///< this batch's loss
};

enum class Progress { automatic, bar, lines, none };

struct LearnerOptions {
  /// Model and batches are moved here.
  Device device = Device::default_device();
  /// Where checkpoints, logs and the report go; empty writes no files.
  std::string output_dir;
  /// Micro-batches per optimizer step; each micro-batch's loss is divided by this, so N
  /// micro-batches of size b step like one batch of N*b (for mean losses). The last group of
  /// an epoch may be shorter; it is scaled by its own size so it stays an unbiased mean.
  int64_t accumulation_steps = 1;
  /// Clips the global gradient norm before each step when > 0 (optim::clip_grad_norm_).
  double clip_grad_norm = 0;
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
  /// Kept verbatim in checkpoints ("user" metadata); must be valid JSON.
  std::string user_json = "{}";
  /// The run's settings at the top of report.html, in order, as name / value ({"model", "cnn"},
  /// {"batch size", "64"}, ...). The Learner adds "device" (options.device), "precision" (the
  /// dtype of the model's first floating parameter) and "Ember" (the version) unless named here.
  std::vector<std::pair<std::string, std::string>> report_settings;
};

/// One epoch's metrics (see the metric names above) and its wall time.
struct EpochSummary {
  int64_t epoch = 0;  ///< 0-based
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
  int64_t best_epoch = -1;
  std::string last_checkpoint;  ///< the checkpoint written last ("" without output_dir)
};

class Learner {
 public:
  /// Moves the model to options.device. The optimizer must hold the model's parameters.
  /// Throws ember::Error("[Learner] ...") for a null model / optimizer / loss or bad options
  /// (accumulation_steps < 1, keep_last < 0, top_k < 1, invalid user_json).
  Learner(std::shared_ptr<nn::UnaryModule> model, std::shared_ptr<optim::Optimizer> optimizer,
          LossFn loss, LearnerOptions options = {});

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
  /// not logged). Throws ember::Error for an empty train loader, and rethrows failures of the
  /// model, loss or loader.
  FitResult fit(Loader& train, Loader* valid, int64_t epochs);

  /// Restores model, optimizer, scheduler, RNG states, counters, history, best metric and
  /// early-stopping state from the newest checkpoint in `dir`/checkpoints (interrupted or
  /// epoch-NNNN, by optimizer step), or from `dir` itself when it is a checkpoint file. The
  /// next fit() continues where that run stopped (mid-epoch after an interruption, skipping
  /// the batches already consumed) with results identical to an uninterrupted run. Throws
  /// ember::Error("[Learner::resume] ...") when there is no checkpoint, it does not match, or a
  /// value in it is out of range (ember/checked.h; the error names the file and the field:
  /// negative counters, a history that is not one entry per completed epoch, a best epoch
  /// after the last one...). Entries of the checkpoint's list of kept epoch checkpoints that
  /// are not bare names epoch-<NNNN>.safetensors (N at most the epochs completed) are dropped
  /// with a warning on stderr and never deleted; the others are resolved against this
  /// learner's own output_dir (see "Deleting old epoch checkpoints" above).
  void resume(const std::string& dir);
  /// The user_json stored in the checkpoint resume() loaded ("" before a resume), so a program
  /// can check that it continues the same kind of run.
  const std::string& resumed_user_json() const { return resumed_user_json_; }

  /// Mean loss and metrics over a loader, in eval mode without gradients ("loss", "accuracy"...
  /// without a prefix). Restores the training mode afterwards.
  std::map<std::string, double> evaluate(Loader& loader);

  /// Writes the checkpoint of the current state to `path` (atomic).
  void save_checkpoint(const std::string& path) const;

  nn::UnaryModule& model() { return *model_; }
  optim::Optimizer& optimizer() { return *optimizer_; }
  const LearnerOptions& options() const { return opts_; }
  const std::vector<EpochSummary>& history() const { return history_; }
  int64_t epochs_completed() const { return epoch_; }
  int64_t steps() const { return step_; }

 private:
  struct Run;
  void train_epoch(Loader& train, Run& run);
  /// Metrics, schedulers, best / early stopping, checkpoints and logs; true to stop early.
  bool end_epoch(Loader* valid, Run& run);
  /// Writes a checkpoint of the current state, `batch` batches into epoch epochs_completed().
  void write_checkpoint(const std::string& path, int64_t batch) const;
  void write_logs() const;

  std::shared_ptr<nn::UnaryModule> model_;
  std::shared_ptr<optim::Optimizer> optimizer_;
  LossFn loss_;
  LearnerOptions opts_;
  std::shared_ptr<optim::LRScheduler> scheduler_;
  SchedulerInterval interval_ = SchedulerInterval::epoch;
  std::shared_ptr<optim::ReduceLROnPlateau> plateau_;
  std::string plateau_metric_;

  int64_t epoch_ = 0;         // epochs completed
  int64_t step_ = 0;          // optimizer steps
  int64_t resume_batch_ = 0;  // batches of epoch_ to skip (after an interrupted checkpoint)
  std::optional<uint64_t> resume_seed_;
  std::string resumed_user_json_;
  uint64_t loader_seed_ = 0;  // the train loader's seed (saved in checkpoints)
  double best_ = 0;
  int64_t best_epoch_ = -1;
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
