// What the cpu backend's oneDNN primitives (conv.cpp, pool.cpp, gemm.cpp) share: the engine,
// scratch buffers from the caching allocator, oneDNN's data types and memory descriptors of
// strided tensors, and which low-precision kernels the CPU runs natively. Internal.
#pragma once
#include <dnnl.hpp>

#include <cstdint>
#include <cstring>

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

/// oneDNN's data type for f32, bf16 and f16 (the dtypes the cpu's oneDNN paths take).
inline dnnl::memory::data_type dnnl_type(DType t) {
  return t == DType::bf16  ? dnnl::memory::data_type::bf16
         : t == DType::f16 ? dnnl::memory::data_type::f16
                           : dnnl::memory::data_type::f32;
}

/// Element 0 of a host tensor view, untyped (what a dnnl::memory wraps).
inline void* data_of(const Tensor& t) {
  return static_cast<char*>(t.impl()->storage->data()) + t.impl()->offset * t.element_size();
}

/// Whether the CPU multiplies bf16 in hardware as oneDNN sees it (AVX512_BF16 or AMX; the ISA
/// masks nest, so avx512_core_bf16's bits are set for both). f16 has no such ISA in oneDNN 2.6.
inline bool hardware_bf16() {
  static const bool v = [] {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
    return (isa & bf16) == bf16;
  }();
  return v;
}

/// Whether oneDNN chose a kernel worth running for a low-precision primitive: not one of its
/// reference (scalar loop) implementations.
inline bool fast_impl(const char* impl) {
  return impl && std::strncmp(impl, "ref", 3) != 0 && !std::strstr(impl, ":ref");
}

/// For a low-precision (not f32) primitive: throws dnnl::error(unimplemented) when oneDNN offers
/// only a reference implementation, so the caller's cache records it as declined and the f32 (or
/// composite) way runs. f32 primitives are always kept.
inline void require_fast(const char* impl, dnnl::memory::data_type dt) {
  if (dt != dnnl::memory::data_type::f32 && !fast_impl(impl))
    throw dnnl::error(dnnl_unimplemented, "reference low-precision primitive");
}

inline dnnl::memory::dims dims_of(const Tensor& t) {
  return dnnl::memory::dims(t.shape().begin(), t.shape().end());
}
/// The tensor's own strided layout, in its dtype (f32, bf16 or f16).
inline dnnl::memory::desc strided_desc(const Tensor& t) {
  return dnnl::memory::desc(dims_of(t), dnnl_type(t.dtype()),
                            dnnl::memory::dims(t.strides().begin(), t.strides().end()));
}

}  // namespace ember::cpu::dnnl_util
