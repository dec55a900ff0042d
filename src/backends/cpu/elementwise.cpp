// The cpu backend's elementwise kernels: Unary and Binary for f32/f64 (and integers where cheap)
// with vectorised loops for contiguous and scalar-broadcast (stride-0) operands, threaded over
// the pool (Copy and Fill: elementwise_copy.cpp; casts: convert.cpp; f16/bf16:
// elementwise_half.cpp). Other ops and dtypes run the reference kernel on
// slices in parallel (elementwise ops are independent per element).
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/cpu/convert.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/simd_math.h"
#include "backends/ref/dispatch.h"
#include "backends/ref/kernels.h"

// Built without -ftrapping-math and errno and with -ffp-contract=off (CMakeLists.txt): see there.
// The functors' apply() and simd_math.h's lane templates return AVX vectors from functions
// without an AVX target, always inlined into the AVX clones, so the ABI note does not apply. GCC
// reports it at the end of the file: ignored to the end.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace ember::cpu {

bool has_avx2() {
#if defined(__x86_64__)
  static const bool v = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return v;
#else
  return false;
#endif
}

bool has_avx512() {
#if defined(__x86_64__)
  static const bool v = has_avx2() && __builtin_cpu_supports("avx512f");
  return v;
#else
  return false;
#endif
}

CpuIsa cpu_isa() {
  return has_avx512() ? CpuIsa::avx512 : has_avx2() ? CpuIsa::avx2 : CpuIsa::baseline;
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
// Functors with an explicit 8-lane form (kHasVec, vec(__m256) in the AVX2 clone) use it on
// contiguous runs, the tail through masked loads/stores so every element sees the same arithmetic.
template <typename F, typename = void>
struct has_vec : std::false_type {};
template <typename F>
struct has_vec<F, std::void_t<decltype(F::kHasVec)>> : std::true_type {};

// Functors with a lane-generic form (kHasLanes, apply(V) for V = float, F8, F16: the same bits
// on each) also have a 16-lane AVX-512 clone; their scalar operator() is apply(float).
template <typename F, typename = void>
struct has_lanes : std::false_type {};
template <typename F>
struct has_lanes<F, std::void_t<decltype(F::kHasLanes)>> : std::true_type {};

template <typename F, typename D, typename T>
EMBER_CPU_AVX2 void unary_row_avx2(F f, D* d, const T* s, int64_t n, int64_t sd, int64_t ss) {
#if defined(__x86_64__)
  if constexpr (has_lanes<F>::value && std::is_same_v<T, float> && std::is_same_v<D, float>) {
    if (sd == 1 && ss == 1) {
      int64_t i = 0;
      for (; i + 16 <= n; i += 16) {
        const F8 x0 = _mm256_loadu_ps(s + i), x1 = _mm256_loadu_ps(s + i + 8);
        _mm256_storeu_ps(d + i, f.apply(x0));
        _mm256_storeu_ps(d + i + 8, f.apply(x1));
      }
      for (; i < n; i += 8) {
        const int left = int(n - i < 8 ? n - i : 8);
        const __m256i m =
            _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        const F8 x = _mm256_maskload_ps(s + i, m);
        _mm256_maskstore_ps(d + i, m, f.apply(x));
      }
      return;
    }
  }
  if constexpr (has_vec<F>::value && std::is_same_v<T, float> && std::is_same_v<D, float>) {
    if (sd == 1 && ss == 1) {
      int64_t i = 0;
      for (; i + 16 <= n; i += 16) {
        const __m256 x0 = _mm256_loadu_ps(s + i), x1 = _mm256_loadu_ps(s + i + 8);
        _mm256_storeu_ps(d + i, f.vec(x0));
        _mm256_storeu_ps(d + i + 8, f.vec(x1));
      }
      for (; i < n; i += 8) {
        const int left = int(n - i < 8 ? n - i : 8);
        const __m256i m =
            _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        _mm256_maskstore_ps(d + i, m, f.vec(_mm256_maskload_ps(s + i, m)));
      }
      return;
    }
  }
#endif
  EMBER_UNARY_ROW_BODY
}

// The AVX-512 clone, for functors with apply() only (others run the AVX2 clone).
template <typename F, typename D, typename T>
EMBER_CPU_AVX512 void unary_row_avx512(F f, D* d, const T* s, int64_t n, int64_t sd, int64_t ss) {
#if defined(__x86_64__)
  if constexpr (std::is_same_v<T, float> && std::is_same_v<D, float>) {
    if (sd == 1 && ss == 1) {
      int64_t i = 0;
      for (; i + 32 <= n; i += 32) {
        const F16 x0 = _mm512_loadu_ps(s + i), x1 = _mm512_loadu_ps(s + i + 16);
        _mm512_storeu_ps(d + i, f.apply(x0));
        _mm512_storeu_ps(d + i + 16, f.apply(x1));
      }
      for (; i < n; i += 16) {
        const int left = int(n - i < 16 ? n - i : 16);
        const __mmask16 m = __mmask16((1u << left) - 1u);
        const F16 x = _mm512_maskz_loadu_ps(m, s + i);
        _mm512_mask_storeu_ps(d + i, m, f.apply(x));
      }
      return;
    }
  }
#endif
  EMBER_UNARY_ROW_BODY
}

// One row on the clone `isa` (at most the CPU's): AVX-512 only for functors with apply().
template <typename F, typename D, typename T>
void unary_row_on(CpuIsa isa, F f, D* d, const T* s, int64_t n, int64_t sd, int64_t ss) {
  if constexpr (has_lanes<F>::value) {
    if (isa == CpuIsa::avx512) return unary_row_avx512(f, d, s, n, sd, ss);
  }
  if (isa != CpuIsa::baseline)
    unary_row_avx2(f, d, s, n, sd, ss);
  else
    unary_row_base(f, d, s, n, sd, ss);
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
// Integers wrap around through the reference's helpers (ref::wrap_*, dispatch.h): the same
// results, without signed overflow.
struct Neg {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>)
      return -x;
    else
      return wrap_sub(T(0), x);
  }
};
struct Abs {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>)
      return std::fabs(x);
    else
      return x < T(0) ? Neg{}(x) : x;
  }
};
struct Square {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>)
      return x * x;
    else
      return wrap_mul(x, x);
  }
};
struct BitwiseNot {
  template <typename T>
  T operator()(T x) const {
    return T(~x);
  }
};
struct Reciprocal {
  template <typename T>
  T operator()(T x) const {
    return T(1) / x;
  }
};
// Rounding as ref (round: half to even, the default rounding mode's nearbyint).
struct Floor {
  template <typename T>
  T operator()(T x) const {
    return std::floor(x);
  }
};
struct Ceil {
  template <typename T>
  T operator()(T x) const {
    return std::ceil(x);
  }
};
struct Trunc {
  template <typename T>
  T operator()(T x) const {
    return std::trunc(x);
  }
};
struct Round {
  template <typename T>
  T operator()(T x) const {
    return std::nearbyint(x);
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
// relu as torch's clamp_min(x, 0): NaN and -0 pass through.
struct Relu {
  template <typename T>
  T operator()(T x) const {
    return x < T(0) ? T(0) : x;
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
// Predicates (bool results), as the reference's on the value widened to double.
struct IsNan {
  template <typename T>
  bool operator()(T x) const {
    return x != x;
  }
};
struct IsInf {
  template <typename T>
  bool operator()(T x) const {
    return std::fabs(x) == std::numeric_limits<T>::infinity();
  }
};
struct IsFinite {
  template <typename T>
  bool operator()(T x) const {
    return std::fabs(x) < std::numeric_limits<T>::infinity();
  }
};
struct LogicalNot {
  template <typename T>
  bool operator()(T x) const {
    return x == T(0);
  }
};

struct ExpF {
  float operator()(float x) const { return exp_f32(x); }
#if defined(__x86_64__)
  static constexpr bool kHasVec = true;
  EMBER_CPU_AVX2 __m256 vec(__m256 x) const { return exp256(x); }
#endif
};
struct SigmoidF {
  float operator()(float x) const { return 1.f / (1.f + exp_f32(-x)); }
#if defined(__x86_64__)
  static constexpr bool kHasVec = true;
  EMBER_CPU_AVX2 __m256 vec(__m256 x) const {
    const __m256 one = _mm256_set1_ps(1.f);
    const __m256 e = exp256(_mm256_xor_ps(x, _mm256_set1_ps(-0.f)));
    return _mm256_div_ps(one, _mm256_add_ps(one, e));
  }
#endif
};
struct SiluF {
  float operator()(float x) const { return x / (1.f + exp_f32(-x)); }
#if defined(__x86_64__)
  static constexpr bool kHasVec = true;
  EMBER_CPU_AVX2 __m256 vec(__m256 x) const {
    const __m256 e = exp256(_mm256_xor_ps(x, _mm256_set1_ps(-0.f)));
    return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.f), e));
  }
#endif
};

// tanh, erf, log, log1p, gelu and gelu_tanh on f32: simd_math.h's lane templates (within 1-3 ulp
// of the correctly rounded value; the reference runs std:: math under EMBER_CPU_KERNELS=ref).
struct TanhF {
  static constexpr bool kHasLanes = true;
  float operator()(float x) const { return lanes::tanh(x); }
  template <class V>
  __attribute__((always_inline)) V apply(const V& x) const {
    return lanes::tanh(x);
  }
};
struct ErfF {
  static constexpr bool kHasLanes = true;
  float operator()(float x) const { return lanes::erf(x); }
  template <class V>
  __attribute__((always_inline)) V apply(const V& x) const {
    return lanes::erf(x);
  }
};
struct LogF {
  static constexpr bool kHasLanes = true;
  float operator()(float x) const { return lanes::log(x); }
  template <class V>
  __attribute__((always_inline)) V apply(const V& x) const {
    return lanes::log(x);
  }
};
struct Log1pF {
  static constexpr bool kHasLanes = true;
  float operator()(float x) const { return lanes::log1p(x); }
  template <class V>
  __attribute__((always_inline)) V apply(const V& x) const {
    return lanes::log1p(x);
  }
};
struct GeluF {
  static constexpr bool kHasLanes = true;
  float operator()(float x) const { return lanes::gelu(x); }
  template <class V>
  __attribute__((always_inline)) V apply(const V& x) const {
    return lanes::gelu(x);
  }
};
struct GeluTanhF {
  static constexpr bool kHasLanes = true;
  float operator()(float x) const { return lanes::gelu_tanh(x); }
  template <class V>
  __attribute__((always_inline)) V apply(const V& x) const {
    return lanes::gelu_tanh(x);
  }
};

struct Add {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>)
      return a + b;
    else
      return wrap_add(a, b);
  }
};
struct Sub {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>)
      return a - b;
    else
      return wrap_sub(a, b);
  }
};
struct Mul {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>)
      return a * b;
    else
      return wrap_mul(a, b);
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
    if constexpr (std::is_floating_point_v<T>) {
      const T nan = a + b, m = a < b ? b : a;  // a tie (-0, +0) gives a, as ref
      return ((a != a) | (b != b)) ? nan : m;
    } else {
      return a > b ? a : b;
    }
  }
};
struct Minimum {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      const T nan = a + b, m = b < a ? b : a;
      return ((a != a) | (b != b)) ? nan : m;
    } else {
      return a < b ? a : b;
    }
  }
};
// i32 floor/trunc division and Python remainder through double: the double quotient of two i32
// is never rounded across an integer (its ulp is below 1/|b|), so floor/trunc of it is exact.
// q = 2^31 (INT_MIN / -1) wraps to INT_MIN as the reference's 0 - a; b = 0 is checked per row
// before (kChecksZero) and computes a harmless 0 here.
inline int32_t wrap_i32(double q) { return q >= 2147483648.0 ? INT32_MIN : int32_t(q); }
inline double quotient_i32(int32_t a, int32_t b) { return double(a) / (b == 0 ? 1.0 : double(b)); }
struct FloorDivI32 {
  static constexpr bool kChecksZero = true;
  int32_t operator()(int32_t a, int32_t b) const {
    return wrap_i32(std::floor(quotient_i32(a, b)));
  }
};
struct TruncDivI32 {
  static constexpr bool kChecksZero = true;
  int32_t operator()(int32_t a, int32_t b) const {
    return wrap_i32(std::trunc(quotient_i32(a, b)));
  }
};
struct RemainderI32 {
  static constexpr bool kChecksZero = true;
  int32_t operator()(int32_t a, int32_t b) const {
    const uint32_t q = uint32_t(wrap_i32(std::floor(quotient_i32(a, b))));
    return int32_t(uint32_t(a) - q * uint32_t(b));
  }
};
template <typename F, typename = void>
struct checks_zero : std::false_type {};
template <typename F>
struct checks_zero<F, std::void_t<decltype(F::kChecksZero)>> : std::true_type {};

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
// Logical ops: nonzero (NaN included) is true, as ref.
struct LogicalAnd {
  template <typename T>
  bool operator()(T a, T b) const {
    return (a != T(0)) & (b != T(0));
  }
};
struct LogicalOr {
  template <typename T>
  bool operator()(T a, T b) const {
    return (a != T(0)) | (b != T(0));
  }
};
struct LogicalXor {
  template <typename T>
  bool operator()(T a, T b) const {
    return (a != T(0)) != (b != T(0));
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

template <typename T, typename D = T, typename F>
void run_unary(const ir::Unary& op, F f) {
  D* d = ptr<D>(op.dst);
  const T* s = ptr<T>(op.src);
  const CpuIsa isa = cpu_isa();
  parallel_rows<2>(
      op.dst.shape(), {&op.dst.strides(), &op.src.strides()}, kGrainElementwise,
      [&](const std::array<int64_t, 2>& o, int64_t n, const std::array<int64_t, 2>& st) {
        unary_row_on(isa, f, d + o[0], s + o[1], n, st[0], st[1]);
      });
}

template <typename T>
bool predicate_typed(const ir::Unary& op) {
  switch (op.op) {
    case UnaryOp::isnan:
      run_unary<T, bool>(op, IsNan{});
      return true;
    case UnaryOp::isinf:
      run_unary<T, bool>(op, IsInf{});
      return true;
    case UnaryOp::isfinite:
      run_unary<T, bool>(op, IsFinite{});
      return true;
    case UnaryOp::logical_not:
      run_unary<T, bool>(op, LogicalNot{});
      return true;
    default:
      return false;
  }
}

// Calls g(functor) with the functor of `op` for element type T; false: no fast functor.
template <typename T, typename G>
bool with_unary_functor(UnaryOp op, double p0, G&& g) {
  switch (op) {
    case UnaryOp::neg:
      g(Neg{});
      return true;
    case UnaryOp::abs:
      g(Abs{});
      return true;
    case UnaryOp::square:
      g(Square{});
      return true;
    case UnaryOp::relu:
      g(Relu{});
      return true;
    default:
      break;
  }
  if constexpr (std::is_integral_v<T>) {
    if (op == UnaryOp::bitwise_not) {
      g(BitwiseNot{});
      return true;
    }
  }
  if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case UnaryOp::reciprocal:
        g(Reciprocal{});
        return true;
      case UnaryOp::sqrt:
        g(Sqrt{});
        return true;
      case UnaryOp::floor:
        g(Floor{});
        return true;
      case UnaryOp::ceil:
        g(Ceil{});
        return true;
      case UnaryOp::trunc:
        g(Trunc{});
        return true;
      case UnaryOp::round:
        g(Round{});
        return true;
      case UnaryOp::rsqrt:
        g(Rsqrt{});
        return true;
      case UnaryOp::leaky_relu:
        g(LeakyRelu{p0});
        return true;
      default:
        break;
    }
  }
  if constexpr (std::is_same_v<T, float>) {
    switch (op) {
      case UnaryOp::exp:
        g(ExpF{});
        return true;
      case UnaryOp::sigmoid:
        g(SigmoidF{});
        return true;
      case UnaryOp::silu:
        g(SiluF{});
        return true;
      case UnaryOp::tanh:
        g(TanhF{});
        return true;
      case UnaryOp::erf:
        g(ErfF{});
        return true;
      case UnaryOp::log:
        g(LogF{});
        return true;
      case UnaryOp::log1p:
        g(Log1pF{});
        return true;
      case UnaryOp::gelu:
        g(GeluF{});
        return true;
      case UnaryOp::gelu_tanh:
        g(GeluTanhF{});
        return true;
      default:
        break;
    }
  }
  return false;
}

template <typename T>
bool unary_typed(const ir::Unary& op) {
  return with_unary_functor<T>(op.op, op.p0, [&](auto f) { run_unary<T>(op, f); });
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
        if constexpr (checks_zero<F>::value) {
          bool zero = false;
          for (int64_t i = 0; i < n; ++i) zero |= b[o[2] + i * st[2]] == T(0);
          if (zero)
            throw ir::IntegerDivisionByZero(std::string("[") + ir::user_name(op.op) +
                                            "] integer division by zero");
        }
        if (avx2)
          binary_row_avx2(f, d + o[0], a + o[1], b + o[2], n, st[0], st[1], st[2]);
        else
          binary_row_base(f, d + o[0], a + o[1], b + o[2], n, st[0], st[1], st[2]);
      });
}

// Calls g(functor, is_compare) with the functor of `op` for element type T; false: none.
template <typename T, typename G>
bool with_binary_functor(BinaryOp op, G&& g) {
  switch (op) {
    case BinaryOp::add:
      g(Add{}, std::false_type{});
      return true;
    case BinaryOp::sub:
      g(Sub{}, std::false_type{});
      return true;
    case BinaryOp::mul:
      g(Mul{}, std::false_type{});
      return true;
    case BinaryOp::eq:
      g(Eq{}, std::true_type{});
      return true;
    case BinaryOp::ne:
      g(Ne{}, std::true_type{});
      return true;
    case BinaryOp::lt:
      g(Lt{}, std::true_type{});
      return true;
    case BinaryOp::le:
      g(Le{}, std::true_type{});
      return true;
    case BinaryOp::gt:
      g(Gt{}, std::true_type{});
      return true;
    case BinaryOp::ge:
      g(Ge{}, std::true_type{});
      return true;
    case BinaryOp::logical_and:
      g(LogicalAnd{}, std::true_type{});
      return true;
    case BinaryOp::logical_or:
      g(LogicalOr{}, std::true_type{});
      return true;
    case BinaryOp::logical_xor:
      g(LogicalXor{}, std::true_type{});
      return true;
    case BinaryOp::maximum:
      g(Maximum{}, std::false_type{});
      return true;
    case BinaryOp::minimum:
      g(Minimum{}, std::false_type{});
      return true;
    default:
      break;
  }
  if constexpr (std::is_same_v<T, int32_t>) {
    switch (op) {
      case BinaryOp::div_floor:
        g(FloorDivI32{}, std::false_type{});
        return true;
      case BinaryOp::div_trunc:
        g(TruncDivI32{}, std::false_type{});
        return true;
      case BinaryOp::remainder:
        g(RemainderI32{}, std::false_type{});
        return true;
      default:
        break;
    }
  }
  if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case BinaryOp::div:
        g(Div{}, std::false_type{});
        return true;
      default:
        break;
    }
  }
  return false;
}

// Calls g(functor) with the functor of a comparison or logical `op` on bool; false: none.
template <typename G>
bool with_bool_functor(BinaryOp op, G&& g) {
  switch (op) {
    case BinaryOp::eq:
      return g(Eq{}), true;
    case BinaryOp::ne:
      return g(Ne{}), true;
    case BinaryOp::lt:
      return g(Lt{}), true;
    case BinaryOp::le:
      return g(Le{}), true;
    case BinaryOp::gt:
      return g(Gt{}), true;
    case BinaryOp::ge:
      return g(Ge{}), true;
    case BinaryOp::logical_and:
      return g(LogicalAnd{}), true;
    case BinaryOp::logical_or:
      return g(LogicalOr{}), true;
    case BinaryOp::logical_xor:
      return g(LogicalXor{}), true;
    default:
      return false;
  }
}

template <typename T>
bool binary_typed(const ir::Binary& op) {
  return with_binary_functor<T>(op.op, [&](auto f, auto cmp) {
    if constexpr (decltype(cmp)::value)
      run_binary<T, bool>(op, f);
    else
      run_binary<T, T>(op, f);
  });
}

}  // namespace

bool unary_f32_supported(UnaryOp op) {
  return with_unary_functor<float>(op, 0.0, [](auto) {});
}

void unary_f32_run_on(CpuIsa isa, UnaryOp op, double p0, float* d, const float* s, int64_t n) {
  with_unary_functor<float>(op, p0, [&](auto f) { unary_row_on(isa, f, d, s, n, 1, 1); });
}

void unary_f32_run(UnaryOp op, double p0, float* d, const float* s, int64_t n) {
  unary_f32_run_on(cpu_isa(), op, p0, d, s, n);
}

bool binary_f32_supported(BinaryOp op) {
  return with_binary_functor<float>(op, [](auto, auto) {});
}

void binary_f32_run(BinaryOp op, void* d, const float* a, const float* b, int64_t n, int64_t sa,
                    int64_t sb) {
  const bool avx2 = has_avx2();
  with_binary_functor<float>(op, [&](auto f, auto cmp) {
    using D = std::conditional_t<decltype(cmp)::value, bool, float>;
    D* dp = static_cast<D*>(d);
    if (avx2)
      binary_row_avx2(f, dp, a, b, n, 1, sa, sb);
    else
      binary_row_base(f, dp, a, b, n, 1, sa, sb);
  });
}

namespace {
// The row kernels of unary_row / binary_row for one compute type T.
template <typename T>
bool unary_row_typed(UnaryOp op, double p0, bool pred, void* d, const void* s, int64_t n,
                     bool vec) {
  const T* sp = static_cast<const T*>(s);
  const CpuIsa isa = vec ? cpu_isa() : CpuIsa::baseline;
  auto go = [&](auto f, auto* dp) { unary_row_on(isa, f, dp, sp, n, 1, 1); };
  if (pred) {
    if constexpr (std::is_floating_point_v<T>) {
      bool* dp = static_cast<bool*>(d);
      switch (op) {
        case UnaryOp::isnan:
          return go(IsNan{}, dp), true;
        case UnaryOp::isinf:
          return go(IsInf{}, dp), true;
        case UnaryOp::isfinite:
          return go(IsFinite{}, dp), true;
        case UnaryOp::logical_not:
          return go(LogicalNot{}, dp), true;
        default:
          return false;
      }
    }
    return false;
  }
  if constexpr (std::is_same_v<T, bool>) {
    return false;
  } else {
    return with_unary_functor<T>(op, p0, [&](auto f) { go(f, static_cast<T*>(d)); });
  }
}

template <typename T>
bool binary_row_typed(BinaryOp op, void* d, const void* a, const void* b, int64_t n, int64_t sa,
                      int64_t sb) {
  const T* ap = static_cast<const T*>(a);
  const T* bp = static_cast<const T*>(b);
  const bool avx2 = has_avx2();
  auto go = [&](auto f, auto* dp) {
    if (avx2)
      binary_row_avx2(f, dp, ap, bp, n, 1, sa, sb);
    else
      binary_row_base(f, dp, ap, bp, n, 1, sa, sb);
  };
  if constexpr (std::is_same_v<T, bool>) {
    return with_bool_functor(op, [&](auto f) { go(f, static_cast<bool*>(d)); });
  } else {
    return with_binary_functor<T>(op, [&](auto f, auto cmp) {
      if constexpr (checks_zero<decltype(f)>::value) {
        return;  // integer division is never fused (it throws on zero)
      } else if constexpr (decltype(cmp)::value) {
        go(f, static_cast<bool*>(d));
      } else {
        go(f, static_cast<T*>(d));
      }
    });
  }
}
}  // namespace

bool unary_row(UnaryOp op, double p0, DType t, bool pred, void* d, const void* s, int64_t n,
               bool vec) {
  bool done = false;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!is_half_v<T>) done = unary_row_typed<T>(op, p0, pred, d, s, n, vec);
  });
  return done;
}

bool binary_row(BinaryOp op, DType t, void* d, const void* a, const void* b, int64_t n, int64_t sa,
                int64_t sb) {
  if (op == BinaryOp::div_floor || op == BinaryOp::div_trunc || op == BinaryOp::remainder)
    if (t == DType::i32) return false;
  bool done = false;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!is_half_v<T>) done = binary_row_typed<T>(op, d, a, b, n, sa, sb);
  });
  return done;
}

bool unary(const ir::Unary& op) {
  const DType t = op.src.dtype();
  if (op.dst.dtype() == DType::b8) {
    if (t == DType::f32 && predicate_typed<float>(op)) return true;
    if (t == DType::f64 && predicate_typed<double>(op)) return true;
  }
  if (t == op.dst.dtype()) {
    if (t == DType::f32 && unary_typed<float>(op)) return true;
    if (t == DType::f64 && unary_typed<double>(op)) return true;
    switch (t) {
      case DType::i8:
        if (unary_typed<int8_t>(op)) return true;
        break;
      case DType::i16:
        if (unary_typed<int16_t>(op)) return true;
        break;
      case DType::i32:
        if (unary_typed<int32_t>(op)) return true;
        break;
      case DType::i64:
        if (unary_typed<int64_t>(op)) return true;
        break;
      case DType::u8:
        if (unary_typed<uint8_t>(op)) return true;
        break;
      default:
        break;
    }
    if ((t == DType::f16 || t == DType::bf16) && unary_half(op)) return true;
  }
  return parallel_slices<2>({op.dst, op.src}, kGrainElementwise,
                            [&](const std::array<Tensor, 2>& v) {
                              ref::unary(ir::Unary{op.op, v[1], v[0], op.p0, op.p1, op.p2});
                            });
}

bool binary(const ir::Binary& op) {
  const DType t = op.a.dtype();
  if (t == DType::f32 && binary_typed<float>(op)) return true;
  if (t == DType::f64 && binary_typed<double>(op)) return true;
  if (t == DType::i64 && binary_typed<int64_t>(op)) return true;
  if (t == DType::i32 && binary_typed<int32_t>(op)) return true;
  // bool: comparisons and logical ops (their functors return bool).
  if (t == DType::b8 && with_bool_functor(op.op, [&](auto f) { run_binary<bool, bool>(op, f); }))
    return true;
  if ((t == DType::f16 || t == DType::bf16) && binary_half(op)) return true;
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

}  // namespace ember::cpu
