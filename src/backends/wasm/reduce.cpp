// f32 sum / max / min (no indices) over trailing dims that are one contiguous run of src (a
// softmax's or a loss's last dim; a whole contiguous tensor), one output per run. Sums add in
// f64, as the reference does, over two f64x2 accumulators (another order than the reference's
// sequential one: the f32 results agree except where the f64 sum rounds differently). max/min
// give the reference's bits: the first NaN's payload aside, NaN propagates, and where the
// extreme is a zero the first zero in order (its sign) is the result.
#include <cmath>

#include "backends/ref/dispatch.h"
#include "backends/wasm/kernels.h"
#include "backends/wasm/rows.h"

#ifdef __wasm_simd128__
#include <wasm_simd128.h>
#endif

namespace ember::wasm {

#ifdef __wasm_simd128__

namespace {

double sum_run(const float* x, int64_t n) {
  v128_t s0 = wasm_f64x2_splat(0.0), s1 = s0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const v128_t v = wasm_v128_load(x + i);
    s0 = wasm_f64x2_add(s0, wasm_f64x2_promote_low_f32x4(v));
    s1 = wasm_f64x2_add(s1, wasm_f64x2_promote_low_f32x4(wasm_i32x4_shuffle(v, v, 2, 3, 0, 1)));
  }
  const v128_t s = wasm_f64x2_add(s0, s1);
  double r = wasm_f64x2_extract_lane(s, 0) + wasm_f64x2_extract_lane(s, 1);
  for (; i < n; ++i) r += double(x[i]);
  return r;
}

// The extreme of x[0, n) (n >= 1) as the reference's first-wins scan gives it.
template <bool Max>
float extreme_run(const float* x, int64_t n) {
  int64_t i = 0;
  float best;
  if (n >= 4) {
    v128_t b = wasm_v128_load(x), nan = wasm_f32x4_ne(b, b);
    for (i = 4; i + 4 <= n; i += 4) {
      const v128_t v = wasm_v128_load(x + i);
      nan = wasm_v128_or(nan, wasm_f32x4_ne(v, v));
      b = wasm_v128_bitselect(v, b, Max ? wasm_f32x4_gt(v, b) : wasm_f32x4_lt(v, b));
    }
    if (wasm_v128_any_true(nan)) {
      for (int64_t k = 0; k < n; ++k)
        if (std::isnan(x[k])) return x[k];
    }
    best = wasm_f32x4_extract_lane(b, 0);
    for (int l = 1; l < 4; ++l) {
      const float v = l == 1   ? wasm_f32x4_extract_lane(b, 1)
                      : l == 2 ? wasm_f32x4_extract_lane(b, 2)
                               : wasm_f32x4_extract_lane(b, 3);
      if (Max ? v > best : v < best) best = v;
    }
  } else {
    best = x[0];
    if (std::isnan(best)) return best;
    i = 1;
  }
  for (; i < n; ++i) {
    if (std::isnan(x[i])) return x[i];
    if (Max ? x[i] > best : x[i] < best) best = x[i];
  }
  // Equal extremes differ only in the sign of zero: the reference keeps the first one.
  if (best == 0.f)
    for (int64_t k = 0; k < n; ++k)
      if (x[k] == 0.f) return x[k];
  return best;
}

}  // namespace

bool reduce(const ir::Reduce& op) {
  const Tensor &src = op.src, &dst = op.dst;
  const ir::ReduceOp rop = op.op;
  if (src.dtype() != DType::f32 || dst.dtype() != DType::f32 || op.indices.defined() ||
      op.dims.empty() || dst.is_alias_of(src) ||
      !(rop == ir::ReduceOp::sum || rop == ir::ReduceOp::max || rop == ir::ReduceOp::min))
    return false;
  // The reduced dims: the trailing ones, one unit-stride run.
  const int64_t rank = src.dim();
  int64_t run = 1;
  for (size_t i = 0; i < op.dims.size(); ++i) {
    const int64_t d = op.dims[op.dims.size() - 1 - i];
    if (d != rank - 1 - int64_t(i)) return false;
    if (src.size(d) != 1 && src.stride(d) != run) return false;
    run *= src.size(d);
  }
  if (src.numel() == 0 || run == 0) return false;  // empty: the reference's identities
  const float* sp = ref::ptr<float>(src);
  float* dp = ref::ptr<float>(dst);
  const auto m = merge_rows<2>(dst.shape(), {&dst.strides(), &src.strides()});
  parallel_rows<2>(
      m, std::max<int64_t>(1, kGrainElementwise / run),
      [&](const std::array<int64_t, 2>& o, int64_t n, const std::array<int64_t, 2>& st) {
        for (int64_t i = 0; i < n; ++i) {
          const float* x = sp + o[1] + i * st[1];
          float& y = dp[o[0] + i * st[0]];
          if (rop == ir::ReduceOp::sum)
            y = float(sum_run(x, run));
          else if (rop == ir::ReduceOp::max)
            y = extreme_run<true>(x, run);
          else
            y = extreme_run<false>(x, run);
        }
      });
  return true;
}

#else

bool reduce(const ir::Reduce&) { return false; }

#endif

}  // namespace ember::wasm
