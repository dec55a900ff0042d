// Training checkpoints: model, optimizer, scheduler, counters and random state in ONE
// safetensors file, so a resumed run is bit-identical to an uninterrupted one.
//
//   record::TrainingState st;  st.epoch = 3;  st.step = 1200;
//   st.rng = record::capture_random_states({Device::cpu()});
//   record::save_checkpoint("ckpt.safetensors", {model.get(), &opt, &sched}, st);
//   ...
//   record::TrainingState back = record::load_checkpoint("ckpt.safetensors",
//                                                        {model.get(), &opt, &sched});
//
// File layout: tensors "model.<name>" (model state_dict), "optimizer.<key>" (the optimizer's
// flat state_dict), "scheduler.<key>" (an LRScheduler's or ReduceLROnPlateau's state_dict);
// metadata "format" = "ember.checkpoint.v1", "epoch", "step", "batch", "best_metric",
// "best_metric_name", "best_epoch", "loader_epoch", "loader_seed", "rng.<device>" =
// "<seed>,<offset>" (decimal), "user" (JSON text) and any `extra` entries. The model part
// alone loads in Python as a normal safetensors file (strip the "model." prefix).
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "ember/nn/module.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/optimizer.h"
#include "ember/record/safetensors.h"
#include "ember/tensor.h"

namespace ember::record {

/// What a checkpoint holds besides tensors.
struct TrainingState {
  int64_t epoch = 0;  ///< epochs completed
  int64_t step = 0;   ///< optimizer steps taken
  int64_t batch = 0;  ///< batches of epoch `epoch` already consumed (0 at an epoch boundary)
  double best_metric = std::numeric_limits<double>::quiet_NaN();  ///< NaN: none yet
  std::string best_metric_name;
  int64_t best_epoch = -1;
  int64_t loader_epoch = 0;  ///< the DataLoader epoch to read next
  uint64_t loader_seed = 0;  ///< the DataLoader's shuffle seed (checked on resume)
  /// Philox generator states by device string ("cpu", "ref", "cuda:0"); see random_state().
  std::vector<std::pair<std::string, RandomState>> rng;
  std::string user_json = "{}";  ///< free JSON text kept verbatim
  Metadata extra;                ///< other string entries (must not clash with the keys above)
};

/// Pointers to what a checkpoint saves / restores. Null members are skipped (a checkpoint
/// without an optimizer still loads a model). At most one of scheduler / plateau.
struct CheckpointTargets {
  nn::Module* model = nullptr;
  optim::Optimizer* optimizer = nullptr;
  optim::LRScheduler* scheduler = nullptr;
  optim::ReduceLROnPlateau* plateau = nullptr;
};

/// The generator states of `devices` (default: every host device, cpu and ref).
std::vector<std::pair<std::string, RandomState>> capture_random_states(
    const std::vector<Device>& devices = {Device::cpu(), Device::ref()});
/// Sets each named device's generator (Device::parse of the name). Throws for a bad name.
void restore_random_states(const std::vector<std::pair<std::string, RandomState>>& states);

/// Writes model / optimizer / scheduler state and `state` to `path` atomically. Throws
/// ember::Error("[save_checkpoint] <path>: ...") when the model is null, a counter of `state`
/// is out of the range read_checkpoint accepts, or the file cannot be written.
void save_checkpoint(const std::string& path, const CheckpointTargets& from,
                     const TrainingState& state);

/// The raw parts of a checkpoint file, without applying them.
struct CheckpointFile {
  nn::StateDict model, optimizer, scheduler;  ///< prefixes stripped
  TrainingState state;
};
/// Reads and validates a checkpoint (load_safetensors plus the metadata: "format" must be
/// ember.checkpoint.v1; epoch, step, batch and loader_epoch integers in [0, 2^53], best_epoch
/// in [-1, 2^53], best_metric finite or "nan", loader_seed and the rng seeds / offsets unsigned
/// 64-bit integers; see ember/checked.h). Tensors are created on the cpu device. Throws
/// ember::Error("[load_checkpoint] <path>: ...") naming the field that is out of range.
CheckpointFile read_checkpoint(const std::string& path);
/// Restores everything into `into` (model strict, then optimizer, then scheduler; a part
/// present in `into` but absent from the file is an error) and, when restore_rng, the saved
/// generator states. Returns the saved TrainingState. Throws ember::Error("[load_checkpoint]
/// <path>: ...") naming the part and the field that failed, leaving every target as it was.
TrainingState load_checkpoint(const std::string& path, const CheckpointTargets& into,
                              bool restore_rng = true);

}  // namespace ember::record
