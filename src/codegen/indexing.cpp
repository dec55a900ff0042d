// Generated kernels for the indexing primitives: gather, scatter (every reduction), index_select
// and index_add. Kernels are keyed by (op, dtype, rank, variant); shapes, strides and offsets
// travel in the params block. Scatter and index_add are race-free without atomics: one thread
// owns one line of dst along the scattered dim and applies its source positions in the ref's
// (row-major) order, so results are deterministic and equal the ref's, rounding included.
#include "codegen/family.h"
#include "codegen/lower.h"
#include "ember/error.h"

namespace ember::codegen {

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
    KernelDef k;
    k.name = key;
    k.buffers = {
        {"src", dst.dtype(), false}, {"index", DType::i64, false}, {"dst", dst.dtype(), true}};
    k.body = "for (uint i = GLOBAL_ID; i < " + pu(kN) + "; i += GLOBAL_SIZE) {\n" +
             decompose("i", rank, kSizes, {od, oi, os}) + "  dst[od] = src[os + int(index[oi]) * " +
             pi(kDim) + "];\n}\n";
    return k;
  });
  Lowering l;
  l.launches.push_back(launch_1d(kernel, {{src}, {index}, {dst}}, p.take(), n, caps));
  return l;
}

// The identity of a scatter reduction in the compute type of `t` (for include_self = false).
std::string identity(ir::ScatterReduce r, DType t) {
  const bool flt = is_float_dtype(t);
  switch (r) {
    case ir::ScatterReduce::prod:
      return ccast(t, "1");
    case ir::ScatterReduce::amax:
      return flt ? ccast(t, "-(1.0 / 0.0)") : lowest_literal(t);
    case ir::ScatterReduce::amin:
      return flt ? ccast(t, "(1.0 / 0.0)") : highest_literal(t);
    default:
      return ccast(t, "0");
  }
}

// Helper functions of the scatter kernel: combine(a, b) and divide(sum, count) in compute type C.
std::string scatter_functions(ir::ScatterReduce r, DType t) {
  const std::string c = ctype(t);
  const bool flt = is_float_dtype(t);
  std::string f = c + " combine(" + c + " a, " + c + " b) {\n";
  switch (r) {
    case ir::ScatterReduce::none:
      f += "  return b;\n";
      break;
    case ir::ScatterReduce::sum:
    case ir::ScatterReduce::mean:
      f += "  return a + b;\n";
      break;
    case ir::ScatterReduce::prod:
      f += "  return a * b;\n";
      break;
    case ir::ScatterReduce::amax:
    case ir::ScatterReduce::amin:
      if (flt) f += "  if (isnan(a) || isnan(b)) return isnan(a) ? a : b;\n";
      f +=
          std::string("  return b ") + (r == ir::ScatterReduce::amax ? ">" : "<") + " a ? b : a;\n";
      break;
  }
  f += "}\n";
  if (r == ir::ScatterReduce::mean) {
    f += c + " divide(" + c + " s, int n) {\n";
    if (flt)
      f += "  return s / " + c + "(n);\n";
    else if (is_unsigned_dtype(t))
      f += "  return s / " + c + "(n);\n";
    else  // floor division, as torch's integer scatter_reduce mean
      f += "  " + c + " q = s / " + c + "(n);\n  return (q * " + c + "(n) != s && s < " + c +
           "(0)) ? q - " + c + "(1) : q;\n";
    f += "}\n";
  }
  return f;
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
    KernelDef k;
    k.name = key;
    k.buffers = {{"dst", t, true}, {"index", DType::i64, false}, {"src", t, false}};
    if (r != ir::ScatterReduce::none) k.functions = scatter_functions(r, t);
    const std::string L = pu(kLine);
    // target(j): dst position of line entry j; value(j): src element j.
    const std::string tgt = "od + int(index[oi + int(j) * " + pi(kIs) + "]) * " + pi(kDs);
    const std::string val = "src[os + int(j) * " + pi(kSs) + "]";
    std::string b = "for (uint i = GLOBAL_ID; i < " + pu(kN) + "; i += GLOBAL_SIZE) {\n" +
                    decompose("i", rank, kSizes, {oi, os, od});
    if (r == ir::ScatterReduce::none) {
      b += "  for (uint j = 0u; j < " + L + "; ++j) dst[" + tgt + "] = " + val + ";\n";
    } else {
      if (!self)
        b += "  for (uint j = 0u; j < " + L + "; ++j) dst[" + tgt + "] = " + st(t, identity(r, t)) +
             ";\n";
      b += "  for (uint j = 0u; j < " + L + "; ++j) {\n    int t = " + tgt +
           ";\n    dst[t] = " + st(t, "combine(" + ld(t, "dst[t]") + ", " + ld(t, val) + ")") +
           ";\n  }\n";
      if (r == ir::ScatterReduce::mean) {
        // Each distinct target once (at its first occurrence): divide by its count.
        b += "  for (uint j = 0u; j < " + L + "; ++j) {\n" + "    i64 x = index[oi + int(j) * " +
             pi(kIs) + "];\n" + "    bool first = true;\n" +
             "    for (uint q = 0u; q < j && first; ++q) first = index[oi + int(q) * " + pi(kIs) +
             "] != x;\n" + "    if (!first) continue;\n" + "    int c = " + (self ? "1" : "0") +
             ";\n" + "    for (uint q = j; q < " + L + "; ++q) if (index[oi + int(q) * " + pi(kIs) +
             "] == x) ++c;\n" + "    int t = od + int(x) * " + pi(kDs) + ";\n" +
             "    dst[t] = " + st(t, "divide(" + ld(t, "dst[t]") + ", c)") + ";\n  }\n";
      }
    }
    k.body = b + "}\n";
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
    KernelDef k;
    k.name = key;
    k.buffers = {{"dst", t, true}, {"index", DType::i64, false}, {"src", t, false}};
    const std::string c = ctype(t);
    k.body = c + " alpha = " + scalar_param(t, kAlpha) + ";\n" + "for (uint i = GLOBAL_ID; i < " +
             pu(kN) + "; i += GLOBAL_SIZE) {\n" + decompose("i", rank, kSizes, {os, od}) +
             "  for (uint j = 0u; j < " + pu(kLine) + "; ++j) {\n" + "    int t = od + int(index[" +
             pi(kIo) + " + int(j) * " + pi(kIs) + "]) * " + pi(kDs) + ";\n" + "    dst[t] = " +
             st(t, ld(t, "dst[t]") + " + alpha * " + ld(t, "src[os + int(j) * " + pi(kSs) + "]")) +
             ";\n  }\n}\n";
    return k;
  });
  Lowering l;
  l.launches.push_back(launch_1d(kernel, {{dst}, {op.index}, {src}}, p.take(), n, caps));
  return l;
}

}  // namespace ember::codegen
