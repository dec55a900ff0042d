// Generated kernels for the indexing primitives: gather, scatter (every reduction), index_select
// and index_add. Kernels are keyed by (op, dtype, rank, variant); shapes, strides and offsets
// travel in the params block. Scatter and index_add are race-free without atomics: one thread
// owns one line of dst along the scattered dim and applies its source positions in the ref's
// (row-major) order, so results are deterministic and equal the ref's, rounding included.
#include <limits>

#include "codegen/family.h"
#include "codegen/lower.h"
#include "ember/error.h"

namespace ember::codegen {

using kir::Expr;
using kir::Type;

namespace {

// `t`'s strides with the stride of `dim` set to 0.
std::vector<int64_t> without_dim(const Tensor& t, int64_t dim) {
  std::vector<int64_t> s(t.strides().begin(), t.strides().end());
  s[size_t(dim)] = 0;
  return s;
}

std::vector<int64_t> strides_of(const Tensor& t) {
  return std::vector<int64_t>(t.strides().begin(), t.strides().end());
}

// Local size of the indexing kernels.
constexpr uint32_t kLocal = 256;

Expr u32(int64_t v) { return kir::lit_int(Type::u32, v); }

// dst[i] = src[src_off(i) + index[index_off(i)] * sdim] over dst's shape: gather, and
// index_select with the index walked along `dim` only.
Lowering gather_like(const char* op, const Tensor& src, int64_t dim, const Tensor& index,
                     const Tensor& dst, const std::vector<int64_t>& index_strides, Dialect d,
                     const Caps& caps) {
  check_dtype(op, dst.dtype(), caps);
  require_index(op, caps);
  check_fits(op, {src, index, dst});
  const int64_t n = dst.numel();
  if (n == 0) return {};
  const int rank = int(dst.dim());
  ParamBuilder p(op);
  const size_t kN = p.u(n), kDim = p.i(src.dim() == 0 ? 0 : src.stride(dim));
  const size_t kSizes = p.ints(std::vector<int64_t>(dst.shape().begin(), dst.shape().end()));
  const Operand od{"od", p.i(dst.offset()), p.ints(strides_of(dst))};
  const Operand oi{"oi", p.i(index.offset()), p.ints(index_strides)};
  const Operand os{
      "os", p.i(src.offset()),
      p.ints(src.dim() == 0 ? std::vector<int64_t>(size_t(rank), 0) : without_dim(src, dim))};
  const std::string key =
      std::string(op) + "_" + dtype_tag(dst.dtype()) + "_r" + std::to_string(rank);
  auto kernel = cached_kernel(key, d, caps, [&] {
    kir::Kernel k(key, kLocal);
    const kir::Buf sb = k.buffer("src", dst.dtype(), false);
    const kir::Buf ib = k.buffer("index", DType::i64, false);
    const kir::Buf db = k.buffer("dst", dst.dtype(), true);
    k.grid_loop("i", param_u(kN), [&](Expr i) {
      const std::vector<Expr> o = decompose(k, i, rank, kSizes, {od, oi, os});
      k.store(db, o[0], k.load(sb, o[2] + cast(Type::i32, k.load(ib, o[1])) * param_i(kDim)));
    });
    return k;
  });
  Lowering l;
  l.launches.push_back(launch_1d(kernel, {{src}, {index}, {dst}}, p.take(), n, caps));
  return l;
}

// The identity of a scatter reduction in ctype_of(t) (for include_self = false).
Expr identity(ir::ScatterReduce r, DType t) {
  const bool flt = is_float_dtype(t);
  const Type c = ctype_of(t);
  const double inf = std::numeric_limits<double>::infinity();
  switch (r) {
    case ir::ScatterReduce::prod:
      return kir::lit(c, 1);
    case ir::ScatterReduce::amax:
      return flt ? kir::lit(c, -inf) : lowest_value(t);
    case ir::ScatterReduce::amin:
      return flt ? kir::lit(c, inf) : highest_value(t);
    default:
      return kir::lit(c, 0);
  }
}

// Helper function combine(a, b) of the scatter kernel in ctype_of(t).
kir::Function combine_function(kir::Kernel& k, ir::ScatterReduce r, DType t) {
  const Type c = ctype_of(t);
  const bool flt = is_float_dtype(t);
  return k.function("combine", c, {c, c}, [&](const std::vector<Expr>& x) {
    const Expr a = x[0], b = x[1];
    switch (r) {
      case ir::ScatterReduce::none:
        k.ret(b);
        break;
      case ir::ScatterReduce::sum:
      case ir::ScatterReduce::mean:
        k.ret(a + b);
        break;
      case ir::ScatterReduce::prod:
        k.ret(a * b);
        break;
      case ir::ScatterReduce::amax:
      case ir::ScatterReduce::amin: {
        const Expr pick = select(r == ir::ScatterReduce::amax ? b > a : b < a, b, a);
        if (!flt) {
          k.ret(pick);
          break;
        }
        const Expr na = kir::call(kir::Fn::isnan, {a}), nb = kir::call(kir::Fn::isnan, {b});
        k.ret(select(na || nb, select(na, a, b), pick));
        break;
      }
    }
  });
}

// Helper function divide(sum, count) of the scatter mean in ctype_of(t); count is i32.
kir::Function divide_function(kir::Kernel& k, DType t) {
  const Type c = ctype_of(t);
  return k.function("divide", c, {c, Type::i32}, [&](const std::vector<Expr>& x) {
    const Expr s = x[0], n = cast(c, x[1]);
    if (is_float_dtype(t) || is_unsigned_dtype(t)) {
      k.ret(s / n);
      return;
    }
    // floor division, as torch's integer scatter_reduce mean
    const Expr q = k.let("q", s / n);
    k.ret(select(q * n != s && s < 0, q - 1, q));
  });
}

}  // namespace

Lowering lower_gather(const ir::Gather& op, Dialect d, const Caps& caps) {
  return gather_like("gather", op.src, op.dim, op.index, op.dst, strides_of(op.index), d, caps);
}

Lowering lower_index_select(const ir::IndexSelect& op, Dialect d, const Caps& caps) {
  std::vector<int64_t> is(size_t(op.dst.dim()), 0);
  if (op.dst.dim() > 0) is[size_t(op.dim)] = op.index.dim() == 0 ? 0 : op.index.stride(0);
  return gather_like("index_select", op.src, op.dim, op.index, op.dst, is, d, caps);
}

Lowering lower_scatter(const ir::Scatter& op, Dialect d, const Caps& caps) {
  const Tensor& dst = op.dst;
  const Tensor& ix = op.index;
  const DType t = dst.dtype();
  check_dtype("scatter", t, caps);
  require_index("scatter", caps);
  check_fits("scatter", {dst, ix, op.src});
  if (op.reduce == ir::ScatterReduce::mean && t == DType::b8)
    EMBER_FAIL("scatter", "reduce 'mean' is not defined for bool");
  const int rank = int(ix.dim());
  const int64_t dim = rank == 0 ? 0 : op.dim;
  const int64_t line = rank == 0 ? 1 : ix.size(dim);
  if (ix.numel() == 0) return {};
  // One thread per position of index's shape outside `dim`: it owns dst's line there.
  std::vector<int64_t> sizes(ix.shape().begin(), ix.shape().end());
  if (rank > 0) sizes[size_t(dim)] = 1;
  const int64_t n = ix.numel() / line;
  ParamBuilder p("scatter");
  const size_t kN = p.u(n), kLine = p.u(line);
  const size_t kIs = p.i(rank == 0 ? 0 : ix.stride(dim));
  const size_t kSs = p.i(rank == 0 ? 0 : op.src.stride(dim));
  const size_t kDs = p.i(dst.dim() == 0 ? 0 : dst.stride(dim));
  const size_t kSizes = p.ints(sizes);
  const Operand oi{"oi", p.i(ix.offset()), p.ints(strides_of(ix))};
  const Operand os{"os", p.i(op.src.offset()),
                   p.ints(rank == 0 ? std::vector<int64_t>{} : strides_of(op.src))};
  const Operand od{"od", p.i(dst.offset()),
                   p.ints(rank == 0 ? std::vector<int64_t>{} : without_dim(dst, dim))};
  const auto r = op.reduce;
  const bool self = op.include_self || r == ir::ScatterReduce::none;
  const char* rname[] = {"none", "sum", "prod", "mean", "amax", "amin"};
  const std::string key = std::string("scatter_") + rname[int(r)] + (self ? "" : "_noself") + "_" +
                          dtype_tag(t) + "_r" + std::to_string(rank);
  auto kernel = cached_kernel(key, d, caps, [&] {
    kir::Kernel k(key, kLocal);
    const kir::Buf db = k.buffer("dst", t, true);
    const kir::Buf ib = k.buffer("index", DType::i64, false);
    const kir::Buf sb = k.buffer("src", t, false);
    kir::Function combine, divide;
    if (r != ir::ScatterReduce::none) combine = combine_function(k, r, t);
    if (r == ir::ScatterReduce::mean) divide = divide_function(k, t);
    const Expr L = param_u(kLine);
    k.grid_loop("i", param_u(kN), [&](Expr i) {
      const std::vector<Expr> o = decompose(k, i, rank, kSizes, {oi, os, od});
      // index_at(j): index entry j of the line; target(j): its dst position; value(j): src
      // element j.
      auto index_at = [&](Expr j) { return k.load(ib, o[0] + cast(Type::i32, j) * param_i(kIs)); };
      auto target = [&](Expr j) { return o[2] + cast(Type::i32, index_at(j)) * param_i(kDs); };
      auto value = [&](Expr j) { return o[1] + cast(Type::i32, j) * param_i(kSs); };
      if (r == ir::ScatterReduce::none) {
        k.for_range("j", u32(0), L, u32(1),
                    [&](Expr j) { k.store(db, target(j), k.load(sb, value(j))); });
        return;
      }
      if (!self)
        k.for_range("j", u32(0), L, u32(1), [&](Expr j) { st(k, db, target(j), identity(r, t)); });
      k.for_range("j", u32(0), L, u32(1), [&](Expr j) {
        const Expr tg = k.let("t", target(j));
        st(k, db, tg, k.call(combine, {ld(k, db, tg), ld(k, sb, value(j))}));
      });
      if (r != ir::ScatterReduce::mean) return;
      // Each distinct target once (at its first occurrence): divide by its count.
      k.for_range("j", u32(0), L, u32(1), [&](Expr j) {
        const Expr x = k.let("x", index_at(j));
        const Expr first = k.let("first", kir::lit_bool(true));
        k.for_(
            "q", u32(0), [&](Expr q) { return q < j && first; }, [&](Expr q) { return q + 1; },
            [&](Expr q) { k.assign(first, index_at(q) != x); });
        k.if_(!first, [&] { k.continue_(); });
        const Expr c = k.let("c", kir::lit_int(Type::i32, self ? 1 : 0));
        k.for_range("q", j, L, u32(1),
                    [&](Expr q) { k.if_(index_at(q) == x, [&] { k.assign(c, c + 1); }); });
        const Expr tg = k.let("t", o[2] + cast(Type::i32, x) * param_i(kDs));
        st(k, db, tg, k.call(divide, {ld(k, db, tg), c}));
      });
    });
    return k;
  });
  Lowering l;
  l.launches.push_back(launch_1d(kernel, {{dst}, {ix}, {op.src}}, p.take(), n, caps));
  return l;
}

Lowering lower_index_add(const ir::IndexAdd& op, Dialect d, const Caps& caps) {
  const Tensor& dst = op.dst;
  const Tensor& src = op.src;
  const DType t = dst.dtype();
  check_dtype("index_add", t, caps);
  require_index("index_add", caps);
  check_fits("index_add", {dst, op.index, src});
  const int rank = int(src.dim());
  const int64_t dim = rank == 0 ? 0 : op.dim;
  const int64_t line = rank == 0 ? 1 : src.size(dim);
  if (src.numel() == 0) return {};
  // One thread per position of src's shape outside `dim`: it owns dst's line there and adds
  // the source slices in index order, as the ref.
  std::vector<int64_t> sizes(src.shape().begin(), src.shape().end());
  if (rank > 0) sizes[size_t(dim)] = 1;
  const int64_t n = src.numel() / line;
  ParamBuilder p("index_add");
  const size_t kN = p.u(n), kLine = p.u(line);
  const size_t kIs = p.i(op.index.dim() == 0 ? 0 : op.index.stride(0));
  const size_t kSs = p.i(rank == 0 ? 0 : src.stride(dim));
  const size_t kDs = p.i(dst.dim() == 0 ? 0 : dst.stride(dim));
  const size_t kIo = p.i(op.index.offset());
  const size_t kAlpha = p.scalar(t, op.alpha);
  const size_t kSizes = p.ints(sizes);
  const Operand os{"os", p.i(src.offset()), p.ints(strides_of(src))};
  const Operand od{"od", p.i(dst.offset()),
                   p.ints(rank == 0 ? std::vector<int64_t>{} : without_dim(dst, dim))};
  const std::string key = std::string("index_add_") + dtype_tag(t) + "_r" + std::to_string(rank);
  auto kernel = cached_kernel(key, d, caps, [&] {
    kir::Kernel k(key, kLocal);
    const kir::Buf db = k.buffer("dst", t, true);
    const kir::Buf ib = k.buffer("index", DType::i64, false);
    const kir::Buf sb = k.buffer("src", t, false);
    const Expr alpha = k.let("alpha", scalar_param(t, kAlpha));
    k.grid_loop("i", param_u(kN), [&](Expr i) {
      const std::vector<Expr> o = decompose(k, i, rank, kSizes, {os, od});
      k.for_range("j", u32(0), param_u(kLine), u32(1), [&](Expr j) {
        const Expr tg = k.let(
            "t",
            o[1] + cast(Type::i32, k.load(ib, param_i(kIo) + cast(Type::i32, j) * param_i(kIs))) *
                       param_i(kDs));
        st(k, db, tg, ld(k, db, tg) + alpha * ld(k, sb, o[0] + cast(Type::i32, j) * param_i(kSs)));
      });
    });
    return k;
  });
  Lowering l;
  l.launches.push_back(launch_1d(kernel, {{dst}, {op.index}, {src}}, p.take(), n, caps));
  return l;
}

}  // namespace ember::codegen
