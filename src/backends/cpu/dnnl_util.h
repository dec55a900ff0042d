// What the cpu backend's oneDNN primitives (conv.cpp, pool.cpp) share: the engine, scratch
// buffers from the caching allocator, and f32 memory descriptors of strided tensors. Internal.
#pragma once
#include <dnnl.hpp>

#include <cstdint>

#include "backends/cpu/allocator.h"
#include "ember/tensor.h"

namespace ember::cpu::dnnl_util {

/// The one cpu engine every primitive is created and run on.
inline dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

/// A buffer from the caching allocator for one call (one of oneDNN's own layouts, a workspace).
struct Scratch {
  void* p = nullptr;
  int64_t n = 0;
  explicit Scratch(int64_t bytes)
      : p(bytes ? host_allocator().allocate(bytes) : nullptr), n(bytes) {}
  ~Scratch() {
    if (p) host_allocator().deallocate(p, n);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

inline dnnl::memory::dims dims_of(const Tensor& t) {
  return dnnl::memory::dims(t.shape().begin(), t.shape().end());
}
/// The tensor's own strided layout, f32.
inline dnnl::memory::desc strided_desc(const Tensor& t) {
  return dnnl::memory::desc(dims_of(t), dnnl::memory::data_type::f32,
                            dnnl::memory::dims(t.strides().begin(), t.strides().end()));
}

}  // namespace ember::cpu::dnnl_util
