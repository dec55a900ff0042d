// Element-wise kernels: f32 binary arithmetic (add sub mul div maximum minimum) and a few f32
// unary ops (neg abs square sqrt relu), SIMD128 on unit-stride runs (an operand broadcast
// along the run reads one value; other runs are gathered into blocks first); copies between
// tensors of one dtype and fills, any dtype. Each result is what the reference kernel's source
// computes, bit for bit: the same single f32 operation per element.
#include <algorithm>
#include <cstring>

#include "backends/ref/dispatch.h"
#include "backends/wasm/kernels.h"
#include "backends/wasm/rows.h"

#ifdef __wasm_simd128__
#include <wasm_simd128.h>
#endif

namespace ember::wasm {

namespace {

using ir::BinaryOp;
using ir::UnaryOp;

// An output overlapping an input with another layout: the reference kernel handles it.
bool overlaps(const Tensor& dst, const Tensor& src) {
  return dst.is_alias_of(src) && !(dst.offset() == src.offset() && dst.strides() == src.strides());
}

constexpr int64_t kBlock = 64;  // elements gathered from strided runs at a time

bool all_f32(std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    if (t->dtype() != DType::f32) return false;
  return true;
}

#ifdef __wasm_simd128__
template <BinaryOp Op>
inline v128_t simd_binary(v128_t a, v128_t b) {
  if constexpr (Op == BinaryOp::add) return wasm_f32x4_add(a, b);
  if constexpr (Op == BinaryOp::sub) return wasm_f32x4_sub(a, b);
  if constexpr (Op == BinaryOp::mul) return wasm_f32x4_mul(a, b);
  if constexpr (Op == BinaryOp::div) return wasm_f32x4_div(a, b);
  if constexpr (Op == BinaryOp::minimum || Op == BinaryOp::maximum) {
    // A tie keeps a; a NaN operand gives a + b (a NaN), as the reference.
    const v128_t pick = Op == BinaryOp::minimum ? wasm_v128_bitselect(b, a, wasm_f32x4_lt(b, a))
                                                : wasm_v128_bitselect(b, a, wasm_f32x4_lt(a, b));
    const v128_t nan = wasm_v128_or(wasm_f32x4_ne(a, a), wasm_f32x4_ne(b, b));
    return wasm_v128_bitselect(wasm_f32x4_add(a, b), pick, nan);
  }
}

// d[i] = op(a[i * sa], b[i * sb]) for sa, sb in {0, 1}.
template <BinaryOp Op>
void binary_run(float* d, const float* a, const float* b, int64_t n, int64_t sa, int64_t sb) {
  int64_t i = 0;
  const v128_t as = wasm_f32x4_splat(a[0]), bs = wasm_f32x4_splat(b[0]);
  for (; i + 4 <= n; i += 4) {
    const v128_t av = sa ? wasm_v128_load(a + i) : as;
    const v128_t bv = sb ? wasm_v128_load(b + i) : bs;
    wasm_v128_store(d + i, simd_binary<Op>(av, bv));
  }
  if (i == n) return;
  // The tail through the same vector code (LLVM would turn a scalar `x < 0 ? 0 : x` into
  // f32.max, which drops the sign of -0).
  float ta[4] = {}, tb[4] = {}, td[4];
  for (int64_t k = 0; k < n - i; ++k) {
    ta[k] = a[(i + k) * sa];
    tb[k] = b[(i + k) * sb];
  }
  wasm_v128_store(td, simd_binary<Op>(wasm_v128_load(ta), wasm_v128_load(tb)));
  for (int64_t k = 0; k < n - i; ++k) d[i + k] = td[k];
}

template <UnaryOp Op>
inline v128_t simd_unary(v128_t x) {
  if constexpr (Op == UnaryOp::neg) return wasm_f32x4_neg(x);
  if constexpr (Op == UnaryOp::abs) return wasm_f32x4_abs(x);
  if constexpr (Op == UnaryOp::square) return wasm_f32x4_mul(x, x);
  if constexpr (Op == UnaryOp::sqrt) return wasm_f32x4_sqrt(x);
  // relu: torch's clamp_min(x, 0), x < 0 ? 0 : x: NaN and -0 pass through.
  if constexpr (Op == UnaryOp::relu)
    return wasm_v128_bitselect(wasm_f32x4_splat(0.f), x, wasm_f32x4_lt(x, wasm_f32x4_splat(0.f)));
}

template <UnaryOp Op>
void unary_run(float* d, const float* s, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) wasm_v128_store(d + i, simd_unary<Op>(wasm_v128_load(s + i)));
  if (i == n) return;
  float ts[4] = {}, td[4];
  for (int64_t k = 0; k < n - i; ++k) ts[k] = s[i + k];
  wasm_v128_store(td, simd_unary<Op>(wasm_v128_load(ts)));
  for (int64_t k = 0; k < n - i; ++k) d[i + k] = td[k];
}
#endif

template <typename F>
bool with_binary_op(BinaryOp op, F&& f) {
#ifdef __wasm_simd128__
  switch (op) {
    case BinaryOp::add:
      return f(binary_run<BinaryOp::add>);
    case BinaryOp::sub:
      return f(binary_run<BinaryOp::sub>);
    case BinaryOp::mul:
      return f(binary_run<BinaryOp::mul>);
    case BinaryOp::div:
      return f(binary_run<BinaryOp::div>);
    case BinaryOp::minimum:
      return f(binary_run<BinaryOp::minimum>);
    case BinaryOp::maximum:
      return f(binary_run<BinaryOp::maximum>);
    default:
      return false;
  }
#else
  (void)op;
  (void)f;
  return false;
#endif
}

template <typename F>
bool with_unary_op(UnaryOp op, F&& f) {
#ifdef __wasm_simd128__
  switch (op) {
    case UnaryOp::neg:
      return f(unary_run<UnaryOp::neg>);
    case UnaryOp::abs:
      return f(unary_run<UnaryOp::abs>);
    case UnaryOp::square:
      return f(unary_run<UnaryOp::square>);
    case UnaryOp::sqrt:
      return f(unary_run<UnaryOp::sqrt>);
    case UnaryOp::relu:
      return f(unary_run<UnaryOp::relu>);
    default:
      return false;
  }
#else
  (void)op;
  (void)f;
  return false;
#endif
}

// Copies n elements of T between strided runs.
template <typename T>
void copy_run(T* d, const T* s, int64_t n, int64_t sd, int64_t ss) {
  if (sd == 1 && ss == 1) {
    std::memcpy(d, s, size_t(n) * sizeof(T));
  } else if (ss == 0) {
    const T v = s[0];
    for (int64_t i = 0; i < n; ++i) d[i * sd] = v;
  } else {
    for (int64_t i = 0; i < n; ++i) d[i * sd] = s[i * ss];
  }
}

template <typename T>
void copy_typed(const ir::Copy& op) {
  const T* sp = static_cast<const T*>(op.src.impl()->storage->data()) + op.src.offset();
  T* dp = static_cast<T*>(op.dst.impl()->storage->data()) + op.dst.offset();
  const auto m = merge_rows<2>(op.dst.shape(), {&op.dst.strides(), &op.src.strides()});
  parallel_rows<2>(
      m, kGrainElementwise,
      [&](const std::array<int64_t, 2>& o, int64_t n, const std::array<int64_t, 2>& st) {
        copy_run(dp + o[0], sp + o[1], n, st[0], st[1]);
      });
}

}  // namespace

bool binary(const ir::Binary& op) {
  if (!all_f32({&op.a, &op.b, &op.dst}) || overlaps(op.dst, op.a) || overlaps(op.dst, op.b))
    return false;
  const float* ap = ref::ptr<float>(op.a);
  const float* bp = ref::ptr<float>(op.b);
  float* dp = ref::ptr<float>(op.dst);
  return with_binary_op(op.op, [&](auto run) {
    const auto m =
        merge_rows<3>(op.dst.shape(), {&op.dst.strides(), &op.a.strides(), &op.b.strides()});
    parallel_rows<3>(
        m, kGrainElementwise,
        [&](const std::array<int64_t, 3>& o, int64_t n, const std::array<int64_t, 3>& st) {
          if (st[0] == 1 && (st[1] == 0 || st[1] == 1) && (st[2] == 0 || st[2] == 1)) {
            run(dp + o[0], ap + o[1], bp + o[2], n, st[1], st[2]);
            return;
          }
          // Other strides: blocks gathered, computed by the same vector code, scattered.
          float ta[kBlock], tb[kBlock], td[kBlock];
          for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
            const int64_t c = std::min(kBlock, n - i0);
            for (int64_t k = 0; k < c; ++k) {
              ta[k] = ap[o[1] + (i0 + k) * st[1]];
              tb[k] = bp[o[2] + (i0 + k) * st[2]];
            }
            run(td, ta, tb, c, 1, 1);
            for (int64_t k = 0; k < c; ++k) dp[o[0] + (i0 + k) * st[0]] = td[k];
          }
        });
    return true;
  });
}

bool unary(const ir::Unary& op) {
  if (!all_f32({&op.src, &op.dst}) || overlaps(op.dst, op.src)) return false;
  const float* sp = ref::ptr<float>(op.src);
  float* dp = ref::ptr<float>(op.dst);
  return with_unary_op(op.op, [&](auto run) {
    const auto m = merge_rows<2>(op.dst.shape(), {&op.dst.strides(), &op.src.strides()});
    parallel_rows<2>(
        m, kGrainElementwise,
        [&](const std::array<int64_t, 2>& o, int64_t n, const std::array<int64_t, 2>& st) {
          if (st[0] == 1 && st[1] == 1) {
            run(dp + o[0], sp + o[1], n);
            return;
          }
          float ts[kBlock], td[kBlock];
          for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
            const int64_t c = std::min(kBlock, n - i0);
            for (int64_t k = 0; k < c; ++k) ts[k] = sp[o[1] + (i0 + k) * st[1]];
            run(td, ts, c);
            for (int64_t k = 0; k < c; ++k) dp[o[0] + (i0 + k) * st[0]] = td[k];
          }
        });
    return true;
  });
}

bool copy(const ir::Copy& op) {
  if (op.src.dtype() != op.dst.dtype() || op.src.is_alias_of(op.dst) ||
      op.src.device() != op.dst.device())
    return false;
  switch (dtype_size(op.dst.dtype())) {
    case 1:
      copy_typed<uint8_t>(op);
      return true;
    case 2:
      copy_typed<uint16_t>(op);
      return true;
    case 4:
      copy_typed<uint32_t>(op);
      return true;
    case 8:
      copy_typed<uint64_t>(op);
      return true;
    default:
      return false;
  }
}

bool fill(const ir::Fill& op) {
  const Tensor& d = op.dst;
  dispatch_dtype(d.dtype(), [&](auto dt) {
    using D = decltype(dt);
    const D v = op.value.is_float() ? scalar_cast<D>(op.value.to_double())
                                    : scalar_cast<D>(op.value.to_int());
    D* dp = ref::ptr<D>(d);
    const auto m = merge_rows<1>(d.shape(), {&d.strides()});
    parallel_rows<1>(
        m, kGrainElementwise,
        [&](const std::array<int64_t, 1>& o, int64_t n, const std::array<int64_t, 1>& st) {
          for (int64_t i = 0; i < n; ++i) dp[o[0] + i * st[0]] = v;
        });
  });
  return true;
}

}  // namespace ember::wasm
