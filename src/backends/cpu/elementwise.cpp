// The cpu backend's elementwise kernels: Unary and Binary for f32/f64 (and i64 where cheap) with
// vectorised loops for contiguous and scalar-broadcast (stride-0) operands, Copy and Fill by
// element size, all threaded over the pool. Other ops and dtypes run the reference kernel on
// slices in parallel (elementwise ops are independent per element).
#include <cmath>
#include <cstring>

#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/simd_math.h"
#include "backends/ref/dispatch.h"
#include "backends/ref/kernels.h"

// Kernels below are compiled without -ftrapping-math so that GCC if-converts the selects (NaN
// checks, relu, max) and vectorises the loops; we never read floating-point exception flags, so
// values are unchanged. Likewise without errno from sqrt (never read), so sqrt vectorises.
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math", "no-math-errno")

namespace ember::cpu {

bool has_avx2() {
  static const bool v = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return v;
}

namespace {

using ir::BinaryOp;
using ir::UnaryOp;
using ref::ptr;

// ---- row loops: one body, two clones (baseline x86-64 and AVX2+FMA) ----
#define EMBER_UNARY_ROW_BODY                                  \
  if (sd == 1 && ss == 1) {                                   \
    for (int64_t i = 0; i < n; ++i) d[i] = f(s[i]);           \
  } else {                                                    \
    for (int64_t i = 0; i < n; ++i) d[i * sd] = f(s[i * ss]); \
  }

template <typename F, typename D, typename T>
void unary_row_base(F f, D* d, const T* s, int64_t n, int64_t sd, int64_t ss) {
  EMBER_UNARY_ROW_BODY
}
template <typename F, typename D, typename T>
EMBER_CPU_AVX2 void unary_row_avx2(F f, D* d, const T* s, int64_t n, int64_t sd, int64_t ss) {
  EMBER_UNARY_ROW_BODY
}

#define EMBER_BINARY_ROW_BODY                                            \
  if (sd == 1 && sa == 1 && sb == 1) {                                   \
    for (int64_t i = 0; i < n; ++i) d[i] = f(a[i], b[i]);                \
  } else if (sd == 1 && sa == 1 && sb == 0) {                            \
    const T bv = b[0];                                                   \
    for (int64_t i = 0; i < n; ++i) d[i] = f(a[i], bv);                  \
  } else if (sd == 1 && sa == 0 && sb == 1) {                            \
    const T av = a[0];                                                   \
    for (int64_t i = 0; i < n; ++i) d[i] = f(av, b[i]);                  \
  } else {                                                               \
    for (int64_t i = 0; i < n; ++i) d[i * sd] = f(a[i * sa], b[i * sb]); \
  }

template <typename F, typename D, typename T>
void binary_row_base(F f, D* d, const T* a, const T* b, int64_t n, int64_t sd, int64_t sa,
                     int64_t sb) {
  EMBER_BINARY_ROW_BODY
}
template <typename F, typename D, typename T>
EMBER_CPU_AVX2 void binary_row_avx2(F f, D* d, const T* a, const T* b, int64_t n, int64_t sd,
                                    int64_t sa, int64_t sb) {
  EMBER_BINARY_ROW_BODY
}

// ---- functors (same formulas as the reference kernels) ----
struct Neg {
  template <typename T>
  T operator()(T x) const {
    return -x;
  }
};
struct Abs {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>)
      return std::fabs(x);
    else
      return x < T(0) ? T(-x) : x;
  }
};
struct Square {
  template <typename T>
  T operator()(T x) const {
    return x * x;
  }
};
struct Reciprocal {
  template <typename T>
  T operator()(T x) const {
    return T(1) / x;
  }
};
struct Sqrt {
  template <typename T>
  T operator()(T x) const {
    return std::sqrt(x);
  }
};
struct Rsqrt {
  template <typename T>
  T operator()(T x) const {
    return T(1) / std::sqrt(x);
  }
};
// Selects between values computed unconditionally (no short-circuit), so loops if-convert.
struct Relu {
  template <typename T>
  T operator()(T x) const {
    const bool keep = (x > T(0)) | (x != x);
    return keep ? x : T(0);
  }
};
struct LeakyRelu {
  double slope;
  template <typename T>
  T operator()(T x) const {
    const T y = T(slope) * x;
    return x > T(0) ? x : y;
  }
};
struct ExpF {
  float operator()(float x) const { return exp_f32(x); }
};
struct SigmoidF {
  float operator()(float x) const { return 1.f / (1.f + exp_f32(-x)); }
};
struct SiluF {
  float operator()(float x) const { return x / (1.f + exp_f32(-x)); }
};

struct Add {
  template <typename T>
  T operator()(T a, T b) const {
    return a + b;
  }
};
struct Sub {
  template <typename T>
  T operator()(T a, T b) const {
    return a - b;
  }
};
struct Mul {
  template <typename T>
  T operator()(T a, T b) const {
    return a * b;
  }
};
struct Div {
  template <typename T>
  T operator()(T a, T b) const {
    return a / b;
  }
};
struct Maximum {
  template <typename T>
  T operator()(T a, T b) const {
    const T nan = a + b, m = a > b ? a : b;
    return ((a != a) | (b != b)) ? nan : m;
  }
};
struct Minimum {
  template <typename T>
  T operator()(T a, T b) const {
    const T nan = a + b, m = a < b ? a : b;
    return ((a != a) | (b != b)) ? nan : m;
  }
};
struct Eq {
  template <typename T>
  bool operator()(T a, T b) const {
    return a == b;
  }
};
struct Ne {
  template <typename T>
  bool operator()(T a, T b) const {
    return a != b;
  }
};
struct Lt {
  template <typename T>
  bool operator()(T a, T b) const {
    return a < b;
  }
};
struct Le {
  template <typename T>
  bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct Gt {
  template <typename T>
  bool operator()(T a, T b) const {
    return a > b;
  }
};
struct Ge {
  template <typename T>
  bool operator()(T a, T b) const {
    return a >= b;
  }
};

template <typename T, typename F>
void run_unary(const ir::Unary& op, F f) {
  T* d = ptr<T>(op.dst);
  const T* s = ptr<T>(op.src);
  const bool avx2 = has_avx2();
  parallel_rows<2>(
      op.dst.shape(), {&op.dst.strides(), &op.src.strides()}, kGrainElementwise,
      [&](const std::array<int64_t, 2>& o, int64_t n, const std::array<int64_t, 2>& st) {
        if (avx2)
          unary_row_avx2(f, d + o[0], s + o[1], n, st[0], st[1]);
        else
          unary_row_base(f, d + o[0], s + o[1], n, st[0], st[1]);
      });
}

template <typename T>
bool unary_typed(const ir::Unary& op) {
  switch (op.op) {
    case UnaryOp::neg:
      run_unary<T>(op, Neg{});
      return true;
    case UnaryOp::abs:
      run_unary<T>(op, Abs{});
      return true;
    case UnaryOp::square:
      run_unary<T>(op, Square{});
      return true;
    case UnaryOp::relu:
      run_unary<T>(op, Relu{});
      return true;
    default:
      break;
  }
  if constexpr (std::is_floating_point_v<T>) {
    switch (op.op) {
      case UnaryOp::reciprocal:
        run_unary<T>(op, Reciprocal{});
        return true;
      case UnaryOp::sqrt:
        run_unary<T>(op, Sqrt{});
        return true;
      case UnaryOp::rsqrt:
        run_unary<T>(op, Rsqrt{});
        return true;
      case UnaryOp::leaky_relu:
        run_unary<T>(op, LeakyRelu{op.p0});
        return true;
      default:
        break;
    }
  }
  if constexpr (std::is_same_v<T, float>) {
    switch (op.op) {
      case UnaryOp::exp:
        run_unary<T>(op, ExpF{});
        return true;
      case UnaryOp::sigmoid:
        run_unary<T>(op, SigmoidF{});
        return true;
      case UnaryOp::silu:
        run_unary<T>(op, SiluF{});
        return true;
      default:
        break;
    }
  }
  return false;
}

template <typename T, typename D, typename F>
void run_binary(const ir::Binary& op, F f) {
  D* d = ptr<D>(op.dst);
  const T* a = ptr<T>(op.a);
  const T* b = ptr<T>(op.b);
  const bool avx2 = has_avx2();
  parallel_rows<3>(
      op.dst.shape(), {&op.dst.strides(), &op.a.strides(), &op.b.strides()}, kGrainElementwise,
      [&](const std::array<int64_t, 3>& o, int64_t n, const std::array<int64_t, 3>& st) {
        if (avx2)
          binary_row_avx2(f, d + o[0], a + o[1], b + o[2], n, st[0], st[1], st[2]);
        else
          binary_row_base(f, d + o[0], a + o[1], b + o[2], n, st[0], st[1], st[2]);
      });
}

template <typename T>
bool binary_typed(const ir::Binary& op) {
  switch (op.op) {
    case BinaryOp::add:
      run_binary<T, T>(op, Add{});
      return true;
    case BinaryOp::sub:
      run_binary<T, T>(op, Sub{});
      return true;
    case BinaryOp::mul:
      run_binary<T, T>(op, Mul{});
      return true;
    case BinaryOp::eq:
      run_binary<T, bool>(op, Eq{});
      return true;
    case BinaryOp::ne:
      run_binary<T, bool>(op, Ne{});
      return true;
    case BinaryOp::lt:
      run_binary<T, bool>(op, Lt{});
      return true;
    case BinaryOp::le:
      run_binary<T, bool>(op, Le{});
      return true;
    case BinaryOp::gt:
      run_binary<T, bool>(op, Gt{});
      return true;
    case BinaryOp::ge:
      run_binary<T, bool>(op, Ge{});
      return true;
    default:
      break;
  }
  if constexpr (std::is_floating_point_v<T>) {
    switch (op.op) {
      case BinaryOp::div:
        run_binary<T, T>(op, Div{});
        return true;
      case BinaryOp::maximum:
        run_binary<T, T>(op, Maximum{});
        return true;
      case BinaryOp::minimum:
        run_binary<T, T>(op, Minimum{});
        return true;
      default:
        break;
    }
  }
  return false;
}

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
          unary_row_base([](U x) { return x; }, d + o[0], s + o[1], n, st[0], st[1]);
      });
}

template <typename U>
void fill_bits(const Tensor& dst, U v) {
  U* d = ptr<U>(dst);
  parallel_rows<1>(
      dst.shape(), {&dst.strides()}, kGrainElementwise,
      [&](const std::array<int64_t, 1>& o, int64_t n, const std::array<int64_t, 1>& st) {
        U* p = d + o[0];
        if (st[0] == 1) {
          for (int64_t i = 0; i < n; ++i) p[i] = v;
        } else {
          for (int64_t i = 0; i < n; ++i) p[i * st[0]] = v;
        }
      });
}

}  // namespace

bool unary(const ir::Unary& op) {
  const DType t = op.src.dtype();
  if (op.dst.numel() <= kGrainElementwise) return false;  // the reference loop is as fast
  if (t == op.dst.dtype()) {
    if (t == DType::f32 && unary_typed<float>(op)) return true;
    if (t == DType::f64 && unary_typed<double>(op)) return true;
    if (t == DType::i64 && unary_typed<int64_t>(op)) return true;
  }
  return parallel_slices<2>({op.dst, op.src}, kGrainElementwise,
                            [&](const std::array<Tensor, 2>& v) {
                              ref::unary(ir::Unary{op.op, v[1], v[0], op.p0, op.p1, op.p2});
                            });
}

bool binary(const ir::Binary& op) {
  const DType t = op.a.dtype();
  if (op.dst.numel() <= kGrainElementwise) return false;
  if (t == DType::f32 && binary_typed<float>(op)) return true;
  if (t == DType::f64 && binary_typed<double>(op)) return true;
  if (t == DType::i64 && binary_typed<int64_t>(op)) return true;
  return parallel_slices<3>({op.dst, op.a, op.b}, kGrainElementwise,
                            [&](const std::array<Tensor, 3>& v) {
                              ref::binary(ir::Binary{op.op, v[1], v[2], v[0]});
                            });
}

bool where(const ir::Where& op) {
  if (op.dst.numel() <= kGrainElementwise) return false;
  return parallel_slices<4>({op.dst, op.cond, op.a, op.b}, kGrainElementwise,
                            [&](const std::array<Tensor, 4>& v) {
                              ref::where(ir::Where{v[1], v[2], v[3], v[0]});
                            });
}

bool copy(const ir::Copy& op) {
  const Tensor& s = op.src;
  const Tensor& d = op.dst;
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
  ref::dispatch_dtype(d.dtype(), [&](auto tag) {
    using D = decltype(tag);
    const D v =
        op.value.is_float() ? ref::cast<D>(op.value.to_double()) : ref::cast<D>(op.value.to_int());
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

#pragma GCC pop_options
