// Reference kernels for the indexing primitives: gather, scatter (with reductions), index_select,
// index_add and nonzero. Indices are i64 and already range-checked by the frontend; writes happen
// in row-major order of the index, so duplicate indices give deterministic results.
#include <cmath>
#include <limits>
#include <unordered_map>

#include "backends/ref/dispatch.h"
#include "backends/ref/kernels.h"

namespace ember::ref {

namespace {

// `t`'s strides with the stride of `dim` set to 0: the offset of every coordinate but `dim`.
Strides without_dim(const Tensor& t, int64_t dim) {
  Strides s = t.strides();
  s[size_t(dim)] = 0;
  return s;
}

// Strides that walk a 1-d `index` along `dim` of a `rank`-d iteration (0 elsewhere).
Strides along_dim(const Tensor& index, int64_t dim, int64_t rank) {
  Strides s(size_t(rank), 0);
  s[size_t(dim)] = index.dim() == 0 ? 0 : index.stride(0);
  return s;
}

template <typename T>
bool is_nan(T v) {
  if constexpr (is_half_v<T>)
    return std::isnan(float(v));
  else if constexpr (std::is_floating_point_v<T>)
    return std::isnan(v);
  else
    return false;
}

template <typename T>
T identity(ir::ScatterReduce r) {
  using C = compute_t<T>;
  switch (r) {
    case ir::ScatterReduce::prod:
      return scalar_cast<T>(C(1));
    case ir::ScatterReduce::amax:
      if constexpr (is_float_v<T>)
        return scalar_cast<T>(-std::numeric_limits<float>::infinity());
      else
        return std::numeric_limits<T>::lowest();
    case ir::ScatterReduce::amin:
      if constexpr (is_float_v<T>)
        return scalar_cast<T>(std::numeric_limits<float>::infinity());
      else
        return std::numeric_limits<T>::max();
    default:
      return scalar_cast<T>(C(0));
  }
}

template <typename T>
T combine(ir::ScatterReduce r, T a, T b) {
  using C = compute_t<T>;
  const C x = C(a), y = C(b);
  switch (r) {
    case ir::ScatterReduce::none:
      return b;
    case ir::ScatterReduce::sum:
    case ir::ScatterReduce::mean:
      return scalar_cast<T>(x + y);
    case ir::ScatterReduce::prod:
      return scalar_cast<T>(x * y);
    case ir::ScatterReduce::amax:
      if (is_nan(a) || is_nan(b)) return is_nan(a) ? a : b;
      return y > x ? b : a;
    case ir::ScatterReduce::amin:
      if (is_nan(a) || is_nan(b)) return is_nan(a) ? a : b;
      return y < x ? b : a;
  }
  return b;
}

template <typename T>
T divide(T sum, int64_t count) {
  if constexpr (is_float_v<T>) {
    return scalar_cast<T>(compute_t<T>(sum) / compute_t<T>(count));
  } else if constexpr (std::is_same_v<T, bool>) {
    return sum;
  } else if constexpr (std::is_unsigned_v<T>) {
    return T(uint64_t(sum) / uint64_t(count));
  } else {
    // Floor division, as torch's integer scatter_reduce mean.
    const int64_t s = int64_t(sum), q = s / count;
    return T((s % count != 0 && s < 0) ? q - 1 : q);
  }
}

}  // namespace

void gather(const ir::Gather& op) {
  const Tensor& d = op.dst;
  const Strides ss = without_dim(op.src, op.dim);
  const int64_t sdim = op.src.stride(op.dim);
  const int64_t* ip = ptr<int64_t>(op.index);
  dispatch_dtype(d.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* sp = ptr<T>(op.src);
    T* dp = ptr<T>(d);
    strided_loop<3>(
        d.shape(), {&d.strides(), &op.index.strides(), &ss},
        [&](const std::array<int64_t, 3>& o) { dp[o[0]] = sp[o[2] + ip[o[1]] * sdim]; });
  });
}

void scatter(const ir::Scatter& op) {
  const Tensor& d = op.dst;
  const Tensor& ix = op.index;
  const Strides ds = without_dim(d, op.dim);
  const int64_t ddim = d.stride(op.dim);
  const int64_t* ip = ptr<int64_t>(ix);
  const auto r = op.reduce;
  dispatch_dtype(d.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* sp = ptr<T>(op.src);
    T* dp = ptr<T>(d);
    auto each = [&](auto&& f) {
      strided_loop<3>(
          ix.shape(), {&ix.strides(), &op.src.strides(), &ds},
          [&](const std::array<int64_t, 3>& o) { f(o[2] + ip[o[0]] * ddim, sp[o[1]]); });
    };
    if (r == ir::ScatterReduce::none) {
      each([&](int64_t t, T v) { dp[t] = v; });
      return;
    }
    if (!op.include_self) each([&](int64_t t, T) { dp[t] = identity<T>(r); });
    std::unordered_map<int64_t, int64_t> counts;
    each([&](int64_t t, T v) {
      dp[t] = combine(r, dp[t], v);
      if (r == ir::ScatterReduce::mean) ++counts[t];
    });
    for (const auto& [t, n] : counts) dp[t] = divide(dp[t], n + (op.include_self ? 1 : 0));
  });
}

void index_select(const ir::IndexSelect& op) {
  const Tensor& d = op.dst;
  const Strides ss = without_dim(op.src, op.dim);
  const Strides is = along_dim(op.index, op.dim, d.dim());
  const int64_t sdim = op.src.stride(op.dim);
  const int64_t* ip = ptr<int64_t>(op.index);
  dispatch_dtype(d.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* sp = ptr<T>(op.src);
    T* dp = ptr<T>(d);
    strided_loop<3>(d.shape(), {&d.strides(), &is, &ss}, [&](const std::array<int64_t, 3>& o) {
      dp[o[0]] = sp[o[2] + ip[o[1]] * sdim];
    });
  });
}

void index_add(const ir::IndexAdd& op) {
  const Tensor& d = op.dst;
  const Tensor& s = op.src;
  const Strides ds = without_dim(d, op.dim);
  const Strides is = along_dim(op.index, op.dim, s.dim());
  const int64_t ddim = d.stride(op.dim);
  const int64_t* ip = ptr<int64_t>(op.index);
  dispatch_dtype(d.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const C alpha = op.alpha.is_float() ? scalar_cast<C>(op.alpha.to_double())
                                        : scalar_cast<C>(op.alpha.to_int());
    const T* sp = ptr<T>(s);
    T* dp = ptr<T>(d);
    strided_loop<3>(s.shape(), {&ds, &is, &s.strides()}, [&](const std::array<int64_t, 3>& o) {
      T& t = dp[o[0] + ip[o[1]] * ddim];
      t = scalar_cast<T>(C(t) + alpha * C(sp[o[2]]));
    });
  });
}

void nonzero(const ir::Nonzero& op) {
  const Tensor& s = op.src;
  const int64_t rank = s.dim(), n = s.numel(), rows = op.dst.dim() > 0 ? op.dst.size(0) : 0;
  const Strides& st = s.strides();
  int64_t* out = ptr<int64_t>(op.dst);
  const int64_t r0 = op.dst.dim() > 1 ? op.dst.stride(0) : 0;
  const int64_t r1 = op.dst.dim() > 1 ? op.dst.stride(1) : 0;
  dispatch_dtype(s.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* sp = ptr<T>(s);
    std::vector<int64_t> coord(size_t(rank), 0);
    int64_t row = 0, off = 0;
    for (int64_t i = 0; i < n && row < rows; ++i) {
      if (scalar_cast<bool>(sp[off])) {
        for (int64_t k = 0; k < rank; ++k) out[row * r0 + k * r1] = coord[size_t(k)];
        ++row;
      }
      // Advance the row-major coordinate and the element offset.
      for (int64_t k = rank - 1; k >= 0; --k) {
        const size_t ku = size_t(k);
        off += st[ku];
        if (++coord[ku] < s.shape()[ku]) break;
        off -= st[ku] * coord[ku];
        coord[ku] = 0;
      }
    }
  });
}

}  // namespace ember::ref
