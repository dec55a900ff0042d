// Elementwise kernels: copy (any dtype to any dtype), fill, unary, binary, where and random.
// One kernel per (op, dtypes, merged rank): shapes, strides, offsets and scalars go in params, so
// new shapes reuse compiled kernels. Operands are walked with common.h's Iter (dims merged where
// every operand is contiguous), so contiguous tensors run a rank-1 (or rank-0) kernel.
#include <cstring>
#include <functional>

#include "codegen/elementwise_internal.h"
#include "codegen/lower.h"
#include "core/dispatch.h"
#include "ember/error.h"

namespace ember::codegen {

using kir::Expr;
using kir::Type;

uint64_t fill_bits(DType t, const Scalar& value) {
  // the value cast on the host exactly as the ref backend's fill
  uint64_t bits = 0;
  dispatch_dtype(t, [&](auto tag) {
    using D = decltype(tag);
    const D v =
        value.is_float() ? scalar_cast<D>(value.to_double()) : scalar_cast<D>(value.to_int());
    std::memcpy(&bits, &v, sizeof(D));
  });
  return bits;
}

Expr fill_value(DType t, uint32_t w) {
  const Expr lo = kir::param_u32(w);
  switch (t) {
    case DType::f32:
      return kir::param_f32(w);
    case DType::f64:
      return kir::param_f64(w);
    case DType::i64:
      return cast(Type::i64, kir::param_u64(w));
    case DType::u64:
      return kir::param_u64(w);
    case DType::i32:
      return kir::param_i32(w);
    case DType::f16:
      return kir::call(kir::Fn::f32_from_half, {lo});
    case DType::bf16:
      return kir::bitcast(Type::f32, lo << 16);
    case DType::b8:
      return lo != 0;
    default:  // narrow integers: the low bits
      return cast(kir::compute_of(t), lo);
  }
}

uint32_t unary_params(Params& p, DType src, double p0, double p1, double p2, const Caps& caps) {
  const uint32_t pbase = uint32_t(p.words().size());
  if (src == DType::f64 || (!is_floating(src) && caps.f64)) {
    p.f64(p0);
    p.f64(p1);
    p.f64(p2);
  } else {
    p.f32(float(p0));
    p.f32(float(p1));
    p.f32(float(p2));
  }
  return pbase;
}

Expr unary_value(kir::Kernel& k, ir::UnaryOp op, DType src, DType dst, Expr x, uint32_t pbase,
                 const Caps& caps) {
  const DType rt = ir::traits(op).predicate ? DType::b8 : src;
  const Expr y = k.let("y", unary_expr(k, op, src, x, pbase, caps));
  return convert(k, rt, dst, y);
}

Expr binary_value(kir::Kernel& k, ir::BinaryOp op, DType t, DType dst, Expr a, Expr b,
                  const Caps& caps) {
  const DType rt = ir::traits(op).predicate ? DType::b8 : t;
  const Expr r = k.let("y", binary_expr(k, op, t, a, b, caps));
  return convert(k, rt, dst, r);
}

Expr stored_value(kir::Kernel& k, DType t, Expr v) {
  if (t == DType::f16) return kir::cast(Type::f32, kir::cast(Type::f16, v));
  if (t != DType::bf16) return v;
  // ember_bf16_from_float then ember_bf16_to_float (kir_render.cpp's storage rule): round to
  // nearest even, NaN kept quiet
  kir::Function f =
      k.function("ember_round_bf16", Type::f32, {Type::f32}, [&](const std::vector<Expr>& a) {
        const Expr x = kir::bitcast(Type::u32, a[0]);
        const Expr nan = (x & 0x7fffffffu) > 0x7f800000u;
        const Expr hi = select(nan, (x >> 16) | 0x40u, (x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
        k.ret(kir::bitcast(Type::f32, (hi & 0xffffu) << 16));
      });
  return k.call(f, {std::move(v)});
}

// The key part of an iteration: its merged rank and, for rank 1, each operand's access.
std::string rank_tag(const Iter& it) { return "_r" + std::to_string(it.rank()) + it.access(); }

// A kernel over an Iter with one operand per buffer; body(k, buffers, offsets, i) writes
// element i, whose offset in operand v is offsets[v]. A rank-1 iteration reads each operand's
// offset (and stride) once, before the loop, and walks idx offsets: 64-bit where the dialect
// addresses so, which lets CPU OpenCL drivers vectorise.
kir::Kernel iter_kernel(const std::string& name, const std::vector<BufferDecl>& decls,
                        const Iter& it, const Caps& caps, const IterBody& body) {
  kir::Kernel k(name, ew_local_size(caps));
  k.set_precise_locals(true);  // eager and fused element-wise values round alike (kir.h)
  std::vector<kir::Buf> bufs;
  std::vector<std::string> vars;
  for (const BufferDecl& b : decls) {
    bufs.push_back(k.buffer(b.name, b.dtype, b.writable));
    vars.push_back("o_" + b.name);
  }
  const std::string access = it.access();
  if (access.size() != vars.size()) {
    k.grid_loop("i", kir::param_u32(0),
                [&](Expr i) { body(k, bufs, iter_offsets(k, vars, i, it.rank(), 0), i); });
    return k;
  }
  const Expr n = k.let("ember_n", cast(Type::uidx, kir::param_u32(0)));
  std::vector<Expr> base, step;
  for (size_t v = 0; v < vars.size(); ++v) {  // add_iter's words: numel, size, (off, stride)*
    base.push_back(k.let(vars[v] + "_base", cast(Type::idx, kir::param_i32(uint32_t(2 + 2 * v)))));
    step.push_back(access[v] == 's' ? k.let(vars[v] + "_step",
                                            cast(Type::idx, kir::param_i32(uint32_t(3 + 2 * v))))
                                    : Expr());
  }
  k.grid_loop("i", n, [&](Expr i) {
    std::vector<Expr> offs;
    for (size_t v = 0; v < vars.size(); ++v) {
      const Expr ii = cast(Type::idx, i);
      offs.push_back(k.let(vars[v], access[v] == 'c'   ? base[v] + ii
                                    : access[v] == 's' ? base[v] + ii * step[v]
                                                       : base[v]));
    }
    body(k, bufs, offs, i);
  });
  return k;
}

namespace {

Binding bind(const Tensor& t) { return Binding{t, -1}; }

// dst = convert(src) over dst's shape.
Launch copy_launch(const Tensor& src, const Tensor& dst, const Caps& caps, Dialect d) {
  const DType sd = src.dtype(), dd = dst.dtype();
  Iter it = make_iter({dst, src});
  Params p;
  add_iter(p, it, "copy");
  const std::string key = std::string("copy_") + dtype_tag(sd) + "_" + dtype_tag(dd) + rank_tag(it);
  auto k = cached_kernel(key, d, caps, [&] {
    return iter_kernel(
        key, {{"dst", dd, true}, {"src", sd, false}}, it, caps,
        [&](kir::Kernel& k, const std::vector<kir::Buf>& b, const std::vector<Expr>& o, Expr) {
          const Expr v = k.let("v", k.load(b[1], o[1]));
          k.store(b[0], o[0], convert(k, sd, dd, v));
        });
  });
  return launch_1d(k, {bind(dst), bind(src)}, p.take(), it.numel, caps);
}

}  // namespace

Lowering lower_copy(const ir::Copy& op, Dialect d, const Caps& caps) {
  check_dtype("copy", op.src.dtype(), caps);
  check_dtype("copy", op.dst.dtype(), caps);
  Lowering l;
  if (op.dst.numel() == 0) return l;
  const bool overlap = op.src.is_alias_of(op.dst) && !(op.src.offset() == op.dst.offset() &&
                                                       op.src.strides() == op.dst.strides());
  if (!overlap) {
    l.launches.push_back(copy_launch(op.src, op.dst, caps, d));
    return l;
  }
  // x.copy_(x.t()): read everything into scratch first (contiguous in dst's shape)
  const DType sd = op.src.dtype();
  const int64_t n = op.dst.numel();
  l.scratch_bytes.push_back(n * dtype_size(sd));
  Strides contig(op.dst.dim(), 1);
  for (int64_t i = op.dst.dim() - 2; i >= 0; --i) contig[i] = contig[i + 1] * op.dst.shape()[i + 1];
  // pass 1: scratch[k] = src[k-th element of dst's shape]
  {
    Iter it = make_iter({op.src});
    // the kernel's second operand, tmp, is contiguous over the merged shape
    it.offsets.push_back(0);
    std::vector<int64_t> cs(it.sizes.size(), 1);
    for (int64_t i = int64_t(cs.size()) - 2; i >= 0; --i) cs[i] = cs[i + 1] * it.sizes[i + 1];
    it.strides.push_back(cs);
    const std::string key = std::string("copy_gather_") + dtype_tag(sd) + rank_tag(it);
    auto k = cached_kernel(key, d, caps, [&] {
      return iter_kernel(
          key, {{"src", sd, false}, {"tmp", sd, true}}, it, caps,
          [&](kir::Kernel& k, const std::vector<kir::Buf>& b, const std::vector<Expr>& o, Expr i) {
            k.store(b[1], i, k.load(b[0], o[0]));
          });
    });
    Params p2;
    add_iter(p2, it, "copy");
    Launch la = launch_1d(k, {bind(op.src), Binding{Tensor(), 0}}, p2.take(), n, caps);
    l.launches.push_back(std::move(la));
  }
  // pass 2: dst = convert(scratch) with scratch contiguous
  {
    const DType dd = op.dst.dtype();
    Params p;
    const std::string key = std::string("copy_scatter_") + dtype_tag(sd) + "_" + dtype_tag(dd) +
                            "_r" + std::to_string(op.dst.dim());
    p.u32(uint32_t(n));
    p.tensor(op.dst, "copy");
    auto k = cached_kernel(key, d, caps, [&] {
      kir::Kernel k(key, ew_local_size(caps));
      const kir::Buf dst = k.buffer("dst", dd, true), tmp = k.buffer("tmp", sd, false);
      k.grid_loop("i", kir::param_u32(0), [&](Expr i) {
        const Expr od = offset_of(k, "od", i, int(op.dst.dim()), 1);
        const Expr v = k.let("v", k.load(tmp, i));
        k.store(dst, od, convert(k, sd, dd, v));
      });
      return k;
    });
    l.launches.push_back(launch_1d(k, {bind(op.dst), Binding{Tensor(), 0}}, p.take(), n, caps));
  }
  return l;
}

Lowering lower_fill(const ir::Fill& op, Dialect d, const Caps& caps) {
  const DType dd = op.dst.dtype();
  check_dtype("fill", dd, caps);
  Lowering l;
  if (op.dst.numel() == 0) return l;
  Iter it = make_iter({op.dst});
  Params p;
  add_iter(p, it, "fill");
  const uint32_t w = p.u64(fill_bits(dd, op.value));
  const std::string key = std::string("fill_") + dtype_tag(dd) + rank_tag(it);
  auto k = cached_kernel(key, d, caps, [&] {
    return iter_kernel(
        key, {{"dst", dd, true}}, it, caps,
        [&](kir::Kernel& k, const std::vector<kir::Buf>& b, const std::vector<Expr>& o, Expr) {
          k.store(b[0], o[0], fill_value(dd, w));
        });
  });
  l.launches.push_back(launch_1d(k, {bind(op.dst)}, p.take(), it.numel, caps));
  return l;
}

Lowering lower_unary(const ir::Unary& op, Dialect d, const Caps& caps) {
  const DType sd = op.src.dtype(), dd = op.dst.dtype();
  const char* name = ir::name(op.op);  // kernel key; errors use the public name
  const char* tag = ir::user_name(op.op);
  check_dtype(tag, sd, caps);
  check_dtype(tag, dd, caps);
  Lowering l;
  if (op.dst.numel() == 0) return l;
  Iter it = make_iter({op.dst, op.src});
  Params p;
  add_iter(p, it, tag);
  const uint32_t pbase = unary_params(p, sd, op.p0, op.p1, op.p2, caps);
  const std::string key =
      std::string("unary_") + name + "_" + dtype_tag(sd) + "_" + dtype_tag(dd) + rank_tag(it);
  auto k = cached_kernel(key, d, caps, [&] {
    return iter_kernel(
        key, {{"dst", dd, true}, {"src", sd, false}}, it, caps,
        [&](kir::Kernel& k, const std::vector<kir::Buf>& b, const std::vector<Expr>& o, Expr) {
          const Expr x = k.let("x", k.load(b[1], o[1]));
          k.store(b[0], o[0], unary_value(k, op.op, sd, dd, x, pbase, caps));
        });
  });
  l.launches.push_back(launch_1d(k, {bind(op.dst), bind(op.src)}, p.take(), it.numel, caps));
  return l;
}

Lowering lower_binary(const ir::Binary& op, Dialect d, const Caps& caps) {
  const DType t = op.a.dtype(), dd = op.dst.dtype();
  const char* name = ir::name(op.op);  // kernel key; errors use the public name
  const char* tag = ir::user_name(op.op);
  check_dtype(tag, t, caps);
  check_dtype(tag, dd, caps);
  EMBER_CHECK(op.b.dtype() == t, tag, "operands have different dtypes (", dtype_name(t), ", ",
              dtype_name(op.b.dtype()), ")");
  Lowering l;
  if (op.dst.numel() == 0) return l;
  Iter it = make_iter({op.dst, op.a, op.b});
  Params p;
  add_iter(p, it, tag);
  const std::string key =
      std::string("binary_") + name + "_" + dtype_tag(t) + "_" + dtype_tag(dd) + rank_tag(it);
  auto k = cached_kernel(key, d, caps, [&] {
    return iter_kernel(
        key, {{"dst", dd, true}, {"a", t, false}, {"b", t, false}}, it, caps,
        [&](kir::Kernel& k, const std::vector<kir::Buf>& b, const std::vector<Expr>& o, Expr) {
          const Expr x = k.let("a", k.load(b[1], o[1]));
          const Expr y = k.let("b", k.load(b[2], o[2]));
          k.store(b[0], o[0], binary_value(k, op.op, t, dd, x, y, caps));
        });
  });
  l.launches.push_back(
      launch_1d(k, {bind(op.dst), bind(op.a), bind(op.b)}, p.take(), it.numel, caps));
  return l;
}

Lowering lower_where(const ir::Where& op, Dialect d, const Caps& caps) {
  const DType t = op.dst.dtype();
  check_dtype("where", t, caps);
  check_dtype("where", DType::b8, caps);
  Lowering l;
  if (op.dst.numel() == 0) return l;
  Iter it = make_iter({op.dst, op.cond, op.a, op.b});
  Params p;
  add_iter(p, it, "where");
  const std::string key = std::string("where_") + dtype_tag(t) + rank_tag(it);
  auto k = cached_kernel(key, d, caps, [&] {
    return iter_kernel(
        key, {{"dst", t, true}, {"cond", DType::b8, false}, {"a", t, false}, {"b", t, false}}, it,
        caps,
        [&](kir::Kernel& k, const std::vector<kir::Buf>& b, const std::vector<Expr>& o, Expr) {
          k.store(b[0], o[0], select(k.load(b[1], o[1]), k.load(b[2], o[2]), k.load(b[3], o[3])));
        });
  });
  l.launches.push_back(launch_1d(k, {bind(op.dst), bind(op.cond), bind(op.a), bind(op.b)}, p.take(),
                                 it.numel, caps));
  return l;
}

}  // namespace ember::codegen
