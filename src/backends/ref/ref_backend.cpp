#include "backends/ref/ref_backend.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "backends/ref/kernels.h"

namespace ember::ref {

void* RefBackend::allocate(int64_t nbytes) {
  // 64-byte alignment for SIMD; at least one byte so empty tensors still own a pointer. A size
  // past the address space (4 GiB in WebAssembly) is refused before it wraps around size_t.
  if (uint64_t(nbytes) > uint64_t(SIZE_MAX) - 63)
    EMBER_FAIL("allocate", "out of host memory allocating ", nbytes,
               " bytes: more than this build's address space (", uint64_t(SIZE_MAX),
               " bytes); use a smaller batch");
  size_t n = size_t((nbytes + 63) / 64 * 64);
  if (n == 0) n = 64;
  void* p = std::aligned_alloc(64, n);
  if (!p) EMBER_FAIL("allocate", "out of host memory allocating ", nbytes, " bytes");
  return p;
}

void RefBackend::deallocate(void* ptr, int64_t) { std::free(ptr); }

void RefBackend::write_bytes(void* dst, int64_t dst_offset, const void* src, int64_t nbytes) {
  if (nbytes > 0) std::memcpy(static_cast<char*>(dst) + dst_offset, src, size_t(nbytes));
}

void RefBackend::read_bytes(const void* src, int64_t src_offset, void* dst, int64_t nbytes) {
  if (nbytes > 0) std::memcpy(dst, static_cast<const char*>(src) + src_offset, size_t(nbytes));
}

namespace {
struct Exec {
  void operator()(const ir::Copy& o) const { copy(o); }
  void operator()(const ir::Fill& o) const { fill(o); }
  void operator()(const ir::Unary& o) const { unary(o); }
  void operator()(const ir::Binary& o) const { binary(o); }
  void operator()(const ir::Where& o) const { where(o); }
  void operator()(const ir::Reduce& o) const { reduce(o); }
  void operator()(const ir::Scan& o) const { scan(o); }
  void operator()(const ir::Sort& o) const { sort(o); }
  void operator()(const ir::Gather& o) const { gather(o); }
  void operator()(const ir::Scatter& o) const { scatter(o); }
  void operator()(const ir::IndexSelect& o) const { index_select(o); }
  void operator()(const ir::IndexAdd& o) const { index_add(o); }
  void operator()(const ir::Nonzero& o) const { nonzero(o); }
  void operator()(const ir::Matmul& o) const { matmul(o); }
  void operator()(const ir::Im2col& o) const { im2col(o); }
  void operator()(const ir::Col2im& o) const { col2im(o); }
  void operator()(const ir::AdaptivePool& o) const { adaptive_pool(o); }
  void operator()(const ir::Interpolate& o) const { interpolate(o); }
  void operator()(const ir::Random& o) const { random(o); }
};
}  // namespace

void RefBackend::run_op(const ir::Op& op) { std::visit(Exec{}, op); }

DeviceInfo RefBackend::info() const {
  DeviceInfo d;
  d.device = device();
  d.name = "reference (portable loops, the oracle)";
  d.kind = "Cpu";
  d.dtypes.assign(kAllDTypes, kAllDTypes + kNumDTypes);
  d.details = "single-threaded; every dtype";
  return d;
}

}  // namespace ember::ref
