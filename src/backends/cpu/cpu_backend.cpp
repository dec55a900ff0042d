#include "backends/cpu/cpu_backend.h"

#include <cstdlib>
#include <string>
#include <thread>

#include "backends/cpu/allocator.h"
#include "backends/cpu/autotune_util.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/thread_pool.h"
#include "core/env.h"

namespace ember::cpu {

DeviceInfo CpuBackend::info() const {
  DeviceInfo d = RefBackend::info();
  d.device = device();
  d.name = "cpu (host)";
  d.details = std::to_string(num_threads()) + " threads (" +
              std::to_string(std::thread::hardware_concurrency()) + " hardware)" +
              (has_avx2() ? ", AVX2" : "") + "; every dtype";
  return d;
}

std::string CpuBackend::autotune_identity() const { return cpu_identity(); }

namespace {
// EMBER_CPU_KERNELS=ref: the backend as it was before its own kernels (reference kernels, the
// library GEMM of gemm.h, no caching allocator), for A/B measurements. Read once.
bool own_kernels() {
  static const bool v = env_choice("EMBER_CPU_KERNELS", {"own", "ref"}, "own") == "own";
  return v;
}
}  // namespace

void* CpuBackend::allocate(int64_t nbytes) {
  return own_kernels() ? host_allocator().allocate(nbytes) : RefBackend::allocate(nbytes);
}
void CpuBackend::deallocate(void* ptr, int64_t nbytes) {
  if (own_kernels())
    host_allocator().deallocate(ptr, nbytes);
  else
    RefBackend::deallocate(ptr, nbytes);
}
MemoryStats CpuBackend::memory_stats() const { return host_allocator().stats(); }
void CpuBackend::empty_cache() { host_allocator().empty_cache(); }

namespace {
// Which ops have a cpu kernel; each returns false to fall back to the reference.
struct Fast {
  bool operator()(const ir::Copy& o) const { return copy(o); }
  bool operator()(const ir::Fill& o) const { return fill(o); }
  bool operator()(const ir::Unary& o) const { return unary(o); }
  bool operator()(const ir::Binary& o) const { return binary(o); }
  bool operator()(const ir::Where& o) const { return where(o); }
  bool operator()(const ir::Reduce& o) const { return reduce(o) || sliced(o); }
  bool operator()(const ir::Scan& o) const { return scan(o) || sliced(o); }
  bool operator()(const ir::Sort& o) const { return sliced(o); }
  bool operator()(const ir::Gather& o) const { return sliced(o); }
  bool operator()(const ir::Scatter& o) const { return sliced(o); }
  bool operator()(const ir::IndexSelect& o) const { return sliced(o); }
  bool operator()(const ir::IndexAdd& o) const { return sliced(o); }
  bool operator()(const ir::Nonzero& o) const { return sliced(o); }
  bool operator()(const ir::AdaptivePool& o) const { return sliced(o); }
  bool operator()(const ir::Interpolate& o) const { return sliced(o); }
  bool operator()(const ir::Matmul& o) const { return sgemm_matmul(o); }
  bool operator()(const ir::Im2col& o) const { return im2col(o); }
  bool operator()(const ir::Col2im& o) const { return col2im(o); }
  template <typename Op>
  bool operator()(const Op&) const {
    return false;
  }
};
}  // namespace

void CpuBackend::run_op(const ir::Op& op) {
  if (!own_kernels()) {
    if (const auto* mm = std::get_if<ir::Matmul>(&op))
      if (sgemm_matmul(*mm)) return;
    RefBackend::run_op(op);
    return;
  }
  if (!std::visit(Fast{}, op)) RefBackend::run_op(op);
}

bool CpuBackend::run_fused(const ir::Fused& op) { return own_kernels() && fused(op); }

bool CpuBackend::anchorable(const ir::Op& op) const {
  const auto* mm = std::get_if<ir::Matmul>(&op);
  return own_kernels() && mm && mm->dst.dtype() == DType::f32 && mm->a.dtype() == DType::f32 &&
         mm->b.dtype() == DType::f32 && mm->dst.numel() > 0 && mm->a.size(2) > 0;
}

bool CpuBackend::conv_anchorable(const ir::Conv& op) const {
  return own_kernels() && conv_dnnl_anchorable(op);
}

bool CpuBackend::execute_conv_anchored(const ir::Conv& anchor, const ir::FusedGraph& epilogue,
                                       int32_t anchor_input) {
  return conv_dnnl_epilogue(anchor, epilogue, anchor_input);
}

bool CpuBackend::execute_anchored(const ir::Op& anchor, const ir::FusedGraph& epilogue,
                                  int32_t anchor_input) {
  const auto* mm = std::get_if<ir::Matmul>(&anchor);
  return mm && matmul_epilogue(*mm, epilogue, anchor_input);
}

}  // namespace ember::cpu
