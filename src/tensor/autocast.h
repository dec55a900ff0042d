// Autocast's per-op policies for the frontends (ember/autocast.h has the lists). Internal.
// A listed op calls one of these at entry; when autocast is on for its device it gets its inputs
// cast and runs its body under Suspend, so the ops it is built from are not cast again.
#pragma once
#include <initializer_list>

#include "ember/autocast.h"
#include "ember/tensor.h"

namespace ember::detail::amp {

/// Autocast off on this thread while alive (listed ops' bodies, backward passes).
class Suspend {
 public:
  Suspend();
  ~Suspend();
  Suspend(const Suspend&) = delete;
  Suspend& operator=(const Suspend&) = delete;
};

/// An op's autocast list (ember/autocast.h):
///  - lower: its float inputs (not f64) go to the low dtype on every device type;
///  - f32: its f16/bf16 inputs go to f32 on every device type;
///  - f32_gpu: f32 on GPU device types, untouched on host ones (torch's CUDA-only f32 list);
///  - lower_gpu_f32_host: the low dtype on GPU device types, f32 on host ones (conv_transpose:
///    torch's CUDA list lowers it, its CPU list runs it in f32);
///  - lower_gpu: the low dtype on GPU device types, untouched on host ones (prelu).
enum class Policy : uint8_t { lower, f32, f32_gpu, lower_gpu_f32_host, lower_gpu };

/// At a listed op's entry: `if (amp::Scope s{amp::Policy::f32, x}) return op(s(x));`.
/// True when autocast applies to the op now; then autocast is suspended for the scope and s(t)
/// casts one input (undefined, non-float and f64 tensors, and tensors already of the target
/// dtype, come back as they are). The cast is an ordinary Tensor::to, recorded by autodiff.
class Scope {
 public:
  /// The device of `t`; off when t is undefined (the op's own check reports it).
  Scope(Policy p, const Tensor& t);
  /// A low-precision op's inputs: the first defined one's device; off when any input is f64
  /// (the op then runs as outside autocast, in f64, instead of rounding the others to 16 bits).
  Scope(Policy p, std::initializer_list<const Tensor*> inputs);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  explicit operator bool() const { return on_; }
  Tensor operator()(const Tensor& t) const;

 private:
  void init(Policy p, const Device& d);
  bool on_ = false;
  bool lower_ = false;  // to the low dtype (else to f32)
  DType low_ = DType::bf16;
};

}  // namespace ember::detail::amp
