// Automatic mixed precision (as torch.autocast): inside an `autocast` scope, float ops run in a
// low-precision dtype (bf16 or f16) where that is safe and in f32 where it is not. Off by
// default; thread-local; per device type; nestable (a scope restores what it found).
//
// Which op runs in which dtype follows torch 1.13's autocast lists for the same kind of device
// (the full lists: docs/mixed_precision.md):
//  - host devices (cpu, ref) take torch's CPU lists:
//      low precision: matmul, mm, bmm, baddbmm, addmm, linear, conv1d/2d/3d (and the matmuls of
//        scaled_dot_product_attention, multi-head attention and the recurrent cells);
//      f32: losses (cross_entropy, nll_loss, mse_loss, l1_loss, smooth_l1_loss, huber_loss,
//        kl_div, binary_cross_entropy(_with_logits)), conv_transpose*, prod;
//      other ops keep their inputs' dtype; they compute in f32 registers anyway (softmax,
//      log_softmax, sums and means accumulate in f32; norms take their statistics in f32).
//  - GPU devices (vulkan, opencl, cuda) take torch's CUDA lists: the low-precision list above
//    plus conv_transpose* and prelu; f32 also for softmax, log_softmax, layer_norm, group_norm,
//    exp, log, log1p, pow, rsqrt, reciprocal, sum, prod, cumsum, logsumexp, norms, softplus
//    and cosine_similarity.
//  - An op with mixed float inputs (cat, stack, add...) promotes them (bf16 + f32 -> f32).
// Only floating-point tensors are cast; integer and bool inputs pass through, and f64 inputs
// are never lowered (as torch). Casts are recorded by autodiff, so gradients come back in each
// parameter's own dtype (f32 master weights get f32 gradients). Backward passes run with
// autocast off, whatever scope the call to backward() is in. Casts keep memory formats
// (channels-last stays channels-last).
#pragma once
#include "ember/device.h"
#include "ember/dtype.h"

namespace ember {

/// Whether autocast is on for `type` on this thread.
bool is_autocast_enabled(DeviceType type);
/// The low-precision dtype autocast uses for `type` (default bf16 for host devices, f16 for GPU
/// devices, as torch).
DType get_autocast_dtype(DeviceType type);
/// Turns autocast on/off for `type` on this thread. set_autocast_dtype throws ember::Error
/// "[autocast] ..." unless dtype is f16 or bf16.
void set_autocast_enabled(DeviceType type, bool enabled);
void set_autocast_dtype(DeviceType type, DType dtype);

/// An autocast scope (torch.autocast). `autocast guard(DType::bf16);` enables it for every device
/// type; `autocast guard(DeviceType::vulkan, DType::f16);` for one; enabled = false turns it off
/// for the scope (as torch.autocast(enabled=False)). The destructor restores the previous state.
/// Throws ember::Error "[autocast] dtype must be f16 or bf16, got float32" (no state changed).
class autocast {
 public:
  explicit autocast(DType dtype, bool enabled = true);
  autocast(DeviceType type, DType dtype, bool enabled = true);
  ~autocast();
  autocast(const autocast&) = delete;
  autocast& operator=(const autocast&) = delete;

 private:
  struct State {
    bool enabled;
    DType dtype;
  };
  State prev_[int(DeviceType::webgpu) + 1];  // one per DeviceType
};

}  // namespace ember
