// State shared by the Learner's loop (learner.cpp) and its epoch end / I/O (learner_io.cpp).
#pragma once
#include <chrono>
#include <optional>
#include <ostream>
#include <string>

#include "ember/train/learner.h"
#include "ember/train/metrics.h"

namespace ember::train {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// State of one fit() call.
struct Learner::Run {
  std::ostream* out = nullptr;
  bool bar = false, lines = false;
  int64_t total_epochs = 0;
  std::string last_checkpoint;
  MetricAccumulator acc{5};
  Clock::time_point epoch_start;
  StreamStats stream_start;   // the device's stream counters when the epoch started
  int64_t batches = 0;        // batches trained this epoch
  int64_t skipped_steps = 0;  // optimizer steps the GradScaler skipped this epoch
  double last_draw = -1;
  bool interrupted = false;
};

namespace detail {
/// output_dir/checkpoints ("" without an output dir).
std::string checkpoint_dir(const LearnerOptions& o);
/// Creates dir and its parents; throws "[Learner] cannot create directory D (reason)".
void ensure_dir(const std::string& dir);
/// 16 random hex digits naming one run in its checkpoints (not drawn from Ember's generators,
/// so a run's random numbers do not depend on it).
std::string new_run_id();
/// The dtype autocast runs in for `p`; nullopt for f32 (no autocast scope).
std::optional<DType> autocast_dtype(Precision p);
}  // namespace detail

}  // namespace ember::train
