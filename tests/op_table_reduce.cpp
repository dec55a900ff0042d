// Op-table cases for reductions, scans, sorting and topk.
#include <cmath>

#include "op_table.h"

namespace ember::testing {
namespace {

using Outs = std::vector<Tensor>;
using Fn = std::function<Outs(const Tensor&)>;

// One single-input case over `shape` with values uniform in [lo, hi).
void reg(const std::string& name, std::vector<DType> dtypes, Shape shape, Fn fn, double lo = -2,
         double hi = 2, double tol = 1.0) {
  register_case(OpCase{
      name,
      std::move(dtypes),
      [shape, lo, hi](DType dt, uint64_t seed) { return Inputs{uniform(shape, dt, seed, lo, hi)}; },
      [fn](const Inputs& in) { return fn(in[0]); },
      {},
      tol});
}

// Floats with about a fifth of the values NaN.
void reg_nan(const std::string& name, Shape shape, Fn fn) {
  register_case(OpCase{name,
                       float_dtypes(),
                       [shape](DType dt, uint64_t seed) {
                         Tensor x = uniform(shape, dt, seed);
                         Tensor m = lt(uniform(shape, DType::f32, seed + 7, 0, 1), 0.2);
                         return Inputs{where(m, NAN, x)};
                       },
                       [fn](const Inputs& in) { return fn(in[0]); },
                       {},
                       1.0});
}

template <typename F>
Fn one(F f) {
  return [f](const Tensor& x) { return Outs{f(x)}; };
}
template <typename F>
Fn two(F f) {
  return [f](const Tensor& x) {
    auto [a, b] = f(x);
    return Outs{a, b};
  };
}

const Shape kS3{3, 4, 5};
const Shape kS2{6, 7};
const Shape kEmpty{2, 0, 3};

const int kReductions = [] {
  const auto alld = all_dtypes();
  const auto num = numeric_dtypes();
  const auto flt = float_dtypes();
  for (const Shape& s : {kS3, kS2, Shape{9}}) {
    const std::string tag = "/" + shape_str(s);
    reg("sum/all" + tag, alld, s, one([](const Tensor& x) { return sum(x); }), -2, 2, 4);
    reg("sum/last" + tag, alld, s, one([](const Tensor& x) { return sum(x, {-1}); }), -2, 2, 4);
    reg("sum/first_keep" + tag, alld, s, one([](const Tensor& x) { return sum(x, {0}, true); }), -2,
        2, 4);
    reg("prod/last" + tag, alld, s, one([](const Tensor& x) { return prod(x, {-1}); }), -2, 2, 4);
    reg("mean/all" + tag, flt, s, one([](const Tensor& x) { return mean(x); }), -2, 2, 4);
    reg("max/all" + tag, alld, s, one([](const Tensor& x) { return max(x); }));
    reg("min/all" + tag, alld, s, one([](const Tensor& x) { return min(x); }));
    reg("max/dim0" + tag, alld, s, two([](const Tensor& x) { return max(x, 0); }));
    reg("min/dim-1_keep" + tag, alld, s, two([](const Tensor& x) { return min(x, -1, true); }));
    reg("argmax/flat" + tag, num, s, one([](const Tensor& x) { return argmax(x); }));
    reg("argmin/flat" + tag, num, s, one([](const Tensor& x) { return argmin(x); }));
    reg("argmax/last" + tag, num, s, one([](const Tensor& x) { return argmax(x, -1); }));
    reg("argmin/first_keep" + tag, num, s, one([](const Tensor& x) { return argmin(x, 0, true); }));
    reg("any/all" + tag, alld, s, one([](const Tensor& x) { return ember::any(x); }), -1, 2);
    reg("all/last" + tag, alld, s, one([](const Tensor& x) { return ember::all(x, {-1}); }), -1, 2);
    reg("count_nonzero/all" + tag, alld, s, one([](const Tensor& x) { return count_nonzero(x); }));
    reg("var/all" + tag, flt, s, one([](const Tensor& x) { return var(x); }), -2, 2, 4);
    reg("std/last_c0" + tag, flt, s, one([](const Tensor& x) { return ember::std(x, {-1}, 0); }),
        -2, 2, 4);
    reg("logsumexp/last" + tag, flt, s, one([](const Tensor& x) { return logsumexp(x, {-1}); }));
    reg("norm/2" + tag, flt, s, one([](const Tensor& x) { return norm(x); }), -2, 2, 4);
    reg("norm/inf_last" + tag, flt, s,
        one([](const Tensor& x) { return norm(x, INFINITY, {-1}); }));
  }
  // Several dims, keepdim variants (3-d).
  reg("sum/02_keep", alld, kS3, one([](const Tensor& x) {
        return sum(x, {0, 2}, true);
      }),
      -2, 2, 4);
  reg("sum/-1-2", alld, kS3, one([](const Tensor& x) { return sum(x, {-1, -2}); }), -2, 2, 4);
  reg("prod/02", alld, kS3, one([](const Tensor& x) { return prod(x, {2, 0}); }), 0.5, 1.5, 4);
  reg("prod/all", alld, Shape{3, 4}, one([](const Tensor& x) { return prod(x); }), 0.5, 1.5, 4);
  reg("mean/12_keep", flt, kS3, one([](const Tensor& x) { return mean(x, {1, 2}, true); }));
  reg("mean/0", flt, kS3, one([](const Tensor& x) { return mean(x, {0}); }));
  reg("amax/02_keep", alld, kS3, one([](const Tensor& x) { return amax(x, {0, 2}, true); }));
  reg("amax/all", alld, kS3, one([](const Tensor& x) { return amax(x); }));
  reg("amin/1", alld, kS3, one([](const Tensor& x) { return amin(x, {1}); }));
  reg("amin/-1-3", alld, kS3, one([](const Tensor& x) { return amin(x, {-1, -3}); }));
  reg("max/dim1_keep", alld, kS3, two([](const Tensor& x) { return max(x, 1, true); }));
  reg("argmax/1_keep", num, kS3, one([](const Tensor& x) { return argmax(x, 1, true); }));
  reg("any/02_keep", alld, kS3, one([](const Tensor& x) {
        return ember::any(x, {0, 2}, true);
      }),
      -1, 2);
  reg("all/01", alld, kS3, one([](const Tensor& x) { return ember::all(x, {0, 1}); }), -1, 2);
  reg("var/02_c0_keep", flt, kS3, one([](const Tensor& x) { return var(x, {0, 2}, 0, true); }));
  reg("var/1_c2", flt, kS3, one([](const Tensor& x) { return var(x, {1}, 2); }));
  reg("std/all", flt, kS3, one([](const Tensor& x) { return ember::std(x); }));
  reg("var_mean/-1_keep", flt, kS3,
      two([](const Tensor& x) { return var_mean(x, {-1}, 1, true); }));
  reg("var_mean/01", flt, kS3, two([](const Tensor& x) { return var_mean(x, {0, 1}); }));
  reg("logsumexp/02_keep", flt, kS3, one([](const Tensor& x) {
        return logsumexp(x, {0, 2}, true);
      }));
  reg("logsumexp/int_promotes", {DType::i32, DType::i64, DType::u8, DType::b8}, kS3,
      one([](const Tensor& x) { return logsumexp(x, {1}); }), -3, 3);
  reg("norm/1_12", flt, kS3, one([](const Tensor& x) { return norm(x, 1.0, {1, 2}); }));
  reg("norm/3_keep", flt, kS3, one([](const Tensor& x) { return norm(x, 3.0, {0}, true); }));
  reg("norm/0.5", flt, kS3, one([](const Tensor& x) { return norm(x, 0.5, {-1}); }), -2, 2, 4);
  reg("norm/0", flt, kS3, one([](const Tensor& x) { return norm(x, 0.0, {1}); }));
  reg("norm/-inf_02", flt, kS3, one([](const Tensor& x) { return norm(x, -INFINITY, {0, 2}); }));
  reg("norm/fro", flt, kS3, one([](const Tensor& x) { return norm(x, "fro", {0, 1}); }));
  reg("count_nonzero/02", alld, kS3, one([](const Tensor& x) {
        return count_nonzero(x, {0, 2});
      }),
      -1, 2);
  // Empty tensors: identities where the op has one.
  reg("sum/empty_dim", alld, kEmpty, one([](const Tensor& x) { return sum(x, {1}); }));
  reg("sum/empty_all", alld, kEmpty, one([](const Tensor& x) { return sum(x); }));
  reg("prod/empty_dim", alld, kEmpty, one([](const Tensor& x) { return prod(x, {1}, true); }));
  reg("any/empty", alld, kEmpty, one([](const Tensor& x) { return ember::any(x, {1}); }));
  reg("all/empty", alld, kEmpty, one([](const Tensor& x) { return ember::all(x, {1}); }));
  reg("mean/empty", flt, kEmpty, one([](const Tensor& x) { return mean(x, {1}); }));
  reg("max/empty_other_dim", alld, kEmpty, two([](const Tensor& x) { return max(x, 2); }));
  reg("logsumexp/empty", flt, kEmpty, one([](const Tensor& x) { return logsumexp(x, {1}); }));
  // 0-d.
  reg("sum/0d", alld, Shape{}, one([](const Tensor& x) { return sum(x, {0}); }));
  reg("max/0d", alld, Shape{}, two([](const Tensor& x) { return max(x, -1, true); }));
  // NaN propagation.
  reg_nan("max/nan", kS2, two([](const Tensor& x) { return max(x, 1); }));
  reg_nan("amin/nan", kS2, one([](const Tensor& x) { return amin(x, {0}); }));
  reg_nan("argmax/nan", kS2, one([](const Tensor& x) { return argmax(x, 0); }));
  reg_nan("sum/nan", kS2, one([](const Tensor& x) { return sum(x, {1}); }));
  return 0;
}();

const int kScansSorts = [] {
  const auto alld = all_dtypes();
  const auto num = numeric_dtypes();
  for (const Shape& s : {kS3, kS2, Shape{9}}) {
    const std::string tag = "/" + shape_str(s);
    reg("cumsum/0" + tag, alld, s, one([](const Tensor& x) { return cumsum(x, 0); }), -2, 2, 4);
    reg("cumsum/-1" + tag, alld, s, one([](const Tensor& x) { return cumsum(x, -1); }), -2, 2, 4);
    reg("cumprod/-1" + tag, alld, s, one([](const Tensor& x) { return cumprod(x, -1); }), 0.5, 1.5,
        4);
    reg("cummax/-1" + tag, alld, s, two([](const Tensor& x) { return cummax(x, -1); }), -3, 3);
    reg("cummin/0" + tag, alld, s, two([](const Tensor& x) { return cummin(x, 0); }), -3, 3);
    reg("sort/-1" + tag, alld, s, two([](const Tensor& x) { return sort(x); }), -3, 3);
    reg("sort/0_desc" + tag, alld, s, two([](const Tensor& x) { return sort(x, 0, true); }), -3, 3);
    reg("argsort/-1_desc" + tag, alld, s, one([](const Tensor& x) { return argsort(x, -1, true); }),
        -3, 3);
    reg("topk/2" + tag, num, s, two([](const Tensor& x) { return topk(x, 2); }), -3, 3);
    reg("topk/3_smallest_dim0" + tag, num, s,
        two([](const Tensor& x) { return topk(x, 3, 0, false); }), -3, 3);
  }
  reg("cumsum/1", alld, kS3, one([](const Tensor& x) { return cumsum(x, 1); }), -2, 2, 4);
  reg("cumprod/1", alld, kS3, one([](const Tensor& x) { return cumprod(x, 1); }), -2, 2, 4);
  reg("cummax/1", alld, kS3, two([](const Tensor& x) { return cummax(x, 1); }), -3, 3);
  reg("sort/1", alld, kS3, two([](const Tensor& x) { return sort(x, 1); }), -3, 3);
  reg("topk/k_eq_size", num, kS3, two([](const Tensor& x) { return topk(x, 4, 1); }), -3, 3);
  reg("topk/k0", num, kS3, two([](const Tensor& x) { return topk(x, 0, 1); }), -3, 3);
  reg("cumsum/empty", alld, kEmpty, one([](const Tensor& x) { return cumsum(x, 1); }));
  reg("sort/empty", alld, kEmpty, two([](const Tensor& x) { return sort(x, 1); }));
  reg("cumsum/0d", alld, Shape{}, one([](const Tensor& x) { return cumsum(x, 0); }));
  reg("sort/0d", alld, Shape{}, two([](const Tensor& x) { return sort(x); }));
  reg_nan("sort/nan", kS2, two([](const Tensor& x) { return sort(x, 1); }));
  reg_nan("sort/nan_desc", kS2, two([](const Tensor& x) { return sort(x, 0, true); }));
  reg_nan("cummax/nan", kS2, two([](const Tensor& x) { return cummax(x, 1); }));
  reg_nan("cummin/nan", kS2, two([](const Tensor& x) { return cummin(x, 0); }));
  reg_nan("topk/nan", kS2, two([](const Tensor& x) { return topk(x, 3, 1); }));
  return 0;
}();

}  // namespace
}  // namespace ember::testing
