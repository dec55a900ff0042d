// nn::DistributedDataParallel: data-parallel training over a dist::ProcessGroup (as
// torch.nn.parallel.DistributedDataParallel). Each rank runs the same model on its own shard of
// the data (data::DistributedSampler); the gradients are averaged over the ranks during
// backward, so every rank takes the same optimizer step and the parameters stay identical.
//
//   dist::init_process_group();
//   auto model = std::make_shared<Net>();
//   auto ddp = std::make_shared<nn::DistributedDataParallel>(model);
//   for (batch : loader) {            // loader with a DistributedSampler
//     Tensor loss = loss_fn((*ddp)(batch.data), batch.target);   // or model->forward(...)
//     loss.backward();                 // returns with the averaged gradients in .grad
//     opt.step(); opt.zero_grad();
//   }
//
// What it does (as torch's):
//  - At construction: checks that every rank has the same parameters and buffers (names,
//    shapes, dtypes; a mismatch throws on every rank naming the first difference), then copies
//    rank 0's parameters and buffers to all ranks.
//  - Gradients are packed into buckets (about bucket_cap_mb each, parameters in reverse order,
//    as backward produces them); a bucket's all-reduce starts as soon as its last gradient is
//    accumulated, while backward goes on computing the next ones; backward() returns once all
//    have finished and the averaged gradients are copied back into .grad.
//  - no_sync(): inside its scope gradients only accumulate locally (gradient accumulation);
//    the first backward after it averages the accumulated sums.
//  - Buffers (batch norm running statistics) are copied from rank 0 before every forward in
//    training mode (broadcast_buffers; torch's default), so all ranks evaluate alike.
//  - A parameter that gets no gradient in a backward: an error naming it, unless
//    find_unused_parameters (then it counts as a zero gradient).
// The hooks act on the wrapped module's parameters, so calling model->forward directly works
// too (buffers are then broadcast only through operator() / the forward pre-hook).
#pragma once
#include <memory>
#include <string>

#include "ember/dist/dist.h"
#include "ember/nn/module.h"

namespace ember::nn {

struct DistributedDataParallelOptions {
  /// Target bucket size in MiB (torch's bucket_cap_mb); the first bucket is at most 1 MiB, so
  /// the first all-reduce starts early (as torch).
  double bucket_cap_mb = 25;
  bool broadcast_buffers = true;
  bool find_unused_parameters = false;
  /// Null: dist::default_group().
  dist::ProcessGroup* process_group = nullptr;
};

class DistributedDataParallel : public UnaryModule {
 public:
  /// Throws ember::Error("[DistributedDataParallel] ...") for a null module, a module without
  /// trainable parameters, bucket_cap_mb <= 0, no process group, or parameters that differ
  /// across ranks; and the collectives' errors.
  explicit DistributedDataParallel(std::shared_ptr<Module> module,
                                   DistributedDataParallelOptions options = {});
  ~DistributedDataParallel() override;

  /// module's forward (it must be a UnaryModule; otherwise call module() yourself).
  Tensor forward(const Tensor& x) override;
  Module& module() { return *module_; }
  std::shared_ptr<Module> module_ptr() const { return module_; }

  /// Gradient accumulation without communication for the guard's lifetime (torch's no_sync()).
  class NoSync {
   public:
    explicit NoSync(DistributedDataParallel& ddp);
    ~NoSync();
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    DistributedDataParallel& ddp_;
    bool prev_;
  };
  NoSync no_sync() { return NoSync(*this); }
  /// Whether gradients are all-reduced in backward (false inside no_sync()).
  bool require_backward_grad_sync() const;

  /// Copies rank 0's buffers to every rank (what forward does in training mode).
  void broadcast_buffers();
  /// The number of buckets and their sizes in bytes (for tests and tuning).
  std::vector<int64_t> bucket_bytes() const;

  struct Impl;

 private:
  std::shared_ptr<Module> module_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ember::nn
