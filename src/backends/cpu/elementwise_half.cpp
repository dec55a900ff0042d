// f16/bf16 Unary and Binary on the cpu backend: blocks of the operands are widened to f32 (F16C
// for f16), run through the f32 kernels of elementwise.cpp and rounded back once, as the
// reference computes halves (float arithmetic, one rounding). Bit-identical to ref for the
// correctly rounded ops (neg, abs, square, relu, reciprocal, sqrt, add, sub, mul, div, maximum,
// minimum, comparisons); exp, sigmoid and silu use the cpu's f32 exp (within 2 ulp of std::exp
// in f32), so an f16/bf16 result can differ from ref by one unit in its last place.
#include <algorithm>

#include "backends/cpu/convert.h"
#include "backends/cpu/parallel.h"
#include "backends/ref/dispatch.h"
#include "ir/op_traits.h"

namespace ember::cpu {

namespace {

constexpr int64_t kBlock = 512;

// Widens m elements of s (stride ss, dtype t) into f; a stride-0 operand widens one element and
// returns stride 0 for it, else 1.
int64_t load_block(float* f, const uint16_t* s, int64_t m, int64_t ss, DType t) {
  if (ss == 0) {
    half_to_f32(t, f, s, 1);
    return 0;
  }
  if (ss == 1) {
    half_to_f32(t, f, s, m);
    return 1;
  }
  alignas(32) uint16_t h[kBlock];
  for (int64_t i = 0; i < m; ++i) h[i] = s[i * ss];
  half_to_f32(t, f, h, m);
  return 1;
}

void store_block(uint16_t* d, const float* f, int64_t m, int64_t sd, DType t) {
  if (sd == 1) {
    f32_to_half(t, d, f, m);
    return;
  }
  alignas(32) uint16_t h[kBlock];
  f32_to_half(t, h, f, m);
  for (int64_t i = 0; i < m; ++i) d[i * sd] = h[i];
}

}  // namespace

bool unary_half(const ir::Unary& op) {
  const DType t = op.src.dtype();
  if ((t != DType::f16 && t != DType::bf16) || op.dst.dtype() != t) return false;
  if (!unary_f32_supported(op.op)) return false;
  uint16_t* d = ref::ptr<uint16_t>(op.dst);
  const uint16_t* s = ref::ptr<uint16_t>(op.src);
  parallel_rows<2>(
      op.dst.shape(), {&op.dst.strides(), &op.src.strides()}, kGrainElementwise,
      [&](const std::array<int64_t, 2>& o, int64_t n, const std::array<int64_t, 2>& st) {
        alignas(32) float f[kBlock];
        for (int64_t b = 0; b < n; b += kBlock) {
          const int64_t m = std::min(kBlock, n - b);
          const int64_t fs = load_block(f, s + o[1] + b * st[1], m, st[1], t);
          if (fs == 0) std::fill(f + 1, f + m, f[0]);
          unary_f32_run(op.op, op.p0, f, f, m);
          store_block(d + o[0] + b * st[0], f, m, st[0], t);
        }
      });
  return true;
}

bool binary_half(const ir::Binary& op) {
  const DType t = op.a.dtype();
  if ((t != DType::f16 && t != DType::bf16) || op.b.dtype() != t) return false;
  if (!binary_f32_supported(op.op)) return false;
  const bool cmp = ir::traits(op.op).predicate;
  if (op.dst.dtype() != (cmp ? DType::b8 : t)) return false;
  void* d = op.dst.impl()->storage->data();
  const int64_t doff = op.dst.offset();
  const uint16_t* a = ref::ptr<uint16_t>(op.a);
  const uint16_t* b = ref::ptr<uint16_t>(op.b);
  parallel_rows<3>(
      op.dst.shape(), {&op.dst.strides(), &op.a.strides(), &op.b.strides()}, kGrainElementwise,
      [&](const std::array<int64_t, 3>& o, int64_t n, const std::array<int64_t, 3>& st) {
        alignas(32) float fa[kBlock], fb[kBlock], fd[kBlock];
        alignas(32) bool bd[kBlock];
        for (int64_t k = 0; k < n; k += kBlock) {
          const int64_t m = std::min(kBlock, n - k);
          const int64_t sa = load_block(fa, a + o[1] + k * st[1], m, st[1], t);
          const int64_t sb = load_block(fb, b + o[2] + k * st[2], m, st[2], t);
          const int64_t di = doff + o[0] + k * st[0];
          if (cmp) {
            bool* dp = static_cast<bool*>(d) + di;
            if (st[0] == 1) {
              binary_f32_run(op.op, dp, fa, fb, m, sa, sb);
            } else {
              binary_f32_run(op.op, bd, fa, fb, m, sa, sb);
              for (int64_t i = 0; i < m; ++i) dp[i * st[0]] = bd[i];
            }
          } else {
            binary_f32_run(op.op, fd, fa, fb, m, sa, sb);
            store_block(static_cast<uint16_t*>(d) + di, fd, m, st[0], t);
          }
        }
      });
  return true;
}

}  // namespace ember::cpu
