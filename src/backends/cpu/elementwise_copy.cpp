// The cpu backend's Copy and Fill: same-dtype copies move element bits with vector loops (casts go
// to convert.cpp), fills by element size; threaded over the pool.
#include <cstring>

#include "backends/cpu/convert.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "backends/ref/dispatch.h"
#include "backends/ref/kernels.h"

namespace ember::cpu {

namespace {

using ref::ptr;

// Copies one contiguous run. glibc's memcpy (rep movsb for large sizes) was measured ~10x slower
// than a vector loop on this machine when source and destination are misaligned relative to
// each other (4 KiB rows at a 12-byte shift: roll, cat and pad write such slices), so those go
// through a 32-byte loop (kept a loop: no memcpy pattern replacement).
__attribute__((optimize("no-tree-loop-distribute-patterns"))) void copy_run(void* dst,
                                                                            const void* src,
                                                                            size_t bytes) {
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  if (bytes < 256 ||
      ((reinterpret_cast<uintptr_t>(d) - reinterpret_cast<uintptr_t>(s)) & 31) == 0) {
    std::memcpy(d, s, bytes);
    return;
  }
  using V = unsigned char __attribute__((vector_size(32), aligned(1)));
  size_t i = 0;
  for (; i + 128 <= bytes; i += 128) {
    const V a = *reinterpret_cast<const V*>(s + i), b = *reinterpret_cast<const V*>(s + i + 32),
            c = *reinterpret_cast<const V*>(s + i + 64),
            e = *reinterpret_cast<const V*>(s + i + 96);
    *reinterpret_cast<V*>(d + i) = a;
    *reinterpret_cast<V*>(d + i + 32) = b;
    *reinterpret_cast<V*>(d + i + 64) = c;
    *reinterpret_cast<V*>(d + i + 96) = e;
  }
  for (; i + 32 <= bytes; i += 32)
    *reinterpret_cast<V*>(d + i) = *reinterpret_cast<const V*>(s + i);
  for (; i < bytes; ++i) d[i] = s[i];
}

template <typename U>
void strided_copy(U* d, const U* s, int64_t n, int64_t sd, int64_t ss) {
  for (int64_t i = 0; i < n; ++i) d[i * sd] = s[i * ss];
}

// Element-size copies and fills: the bits are moved, so any dtype of that size works.
template <typename U>
void copy_bits(const ir::Copy& op) {
  U* d = ptr<U>(op.dst);
  const U* s = ptr<U>(op.src);
  parallel_rows<2>(
      op.dst.shape(), {&op.dst.strides(), &op.src.strides()}, kGrainElementwise,
      [&](const std::array<int64_t, 2>& o, int64_t n, const std::array<int64_t, 2>& st) {
        if (st[0] == 1 && st[1] == 1)
          copy_run(d + o[0], s + o[1], size_t(n) * sizeof(U));
        else
          strided_copy(d + o[0], s + o[1], n, st[0], st[1]);
      });
}

template <typename U>
void fill_bits(const Tensor& dst, U v) {
  U* d = ptr<U>(dst);
  const bool zero = v == U(0);
  parallel_rows<1>(
      dst.shape(), {&dst.strides()}, kGrainElementwise,
      [&](const std::array<int64_t, 1>& o, int64_t n, const std::array<int64_t, 1>& st) {
        U* p = d + o[0];
        if (st[0] == 1 && zero) {
          std::memset(p, 0, size_t(n) * sizeof(U));  // glibc's memset beats the loop here
        } else if (st[0] == 1) {
          for (int64_t i = 0; i < n; ++i) p[i] = v;
        } else {
          for (int64_t i = 0; i < n; ++i) p[i * st[0]] = v;
        }
      });
}

}  // namespace

bool copy(const ir::Copy& op) {
  const Tensor& s = op.src;
  const Tensor& d = op.dst;
  // Casts: vector loops at every size (convert.cpp).
  if (s.dtype() != d.dtype() && cast_copy(op)) return true;
  if (d.numel() <= kGrainElementwise) return false;
  // Overlapping source and destination: the reference copies through a temporary.
  if (s.is_alias_of(d) && !(s.offset() == d.offset() && s.strides() == d.strides())) return false;
  if (s.dtype() == d.dtype()) {
    switch (dtype_size(d.dtype())) {
      case 1:
        copy_bits<uint8_t>(op);
        return true;
      case 2:
        copy_bits<uint16_t>(op);
        return true;
      case 4:
        copy_bits<uint32_t>(op);
        return true;
      case 8:
        copy_bits<uint64_t>(op);
        return true;
      default:
        return false;
    }
  }
  return parallel_slices<2>({d, s}, kGrainElementwise, [&](const std::array<Tensor, 2>& v) {
    ref::copy(ir::Copy{v[1], v[0]});
  });
}

bool fill(const ir::Fill& op) {
  const Tensor& d = op.dst;
  if (d.numel() <= kGrainElementwise) return false;
  bool done = false;
  dispatch_dtype(d.dtype(), [&](auto tag) {
    using D = decltype(tag);
    const D v = op.value.is_float() ? scalar_cast<D>(op.value.to_double())
                                    : scalar_cast<D>(op.value.to_int());
    auto go = [&](auto bits_tag) {
      using U = decltype(bits_tag);
      U u;
      std::memcpy(&u, &v, sizeof u);
      fill_bits<U>(d, u);
      done = true;
    };
    if constexpr (sizeof(D) == 1)
      go(uint8_t{});
    else if constexpr (sizeof(D) == 2)
      go(uint16_t{});
    else if constexpr (sizeof(D) == 4)
      go(uint32_t{});
    else if constexpr (sizeof(D) == 8)
      go(uint64_t{});
  });
  return done;
}

}  // namespace ember::cpu
