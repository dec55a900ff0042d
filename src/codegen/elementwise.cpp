// Elementwise kernels: copy (any dtype to any dtype), fill, unary, binary, where and random.
// One kernel per (op, dtypes, merged rank): shapes, strides, offsets and scalars go in params, so
// new shapes reuse compiled kernels. Operands are walked with common.h's Iter (dims merged where
// every operand is contiguous), so contiguous tensors run a rank-1 (or rank-0) kernel.
#include <cstring>

#include "codegen/elementwise_internal.h"
#include "codegen/lower.h"
#include "core/dispatch.h"
#include "ember/error.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"  // GCC bug 105329 on string concatenation
#endif

namespace ember::codegen {

namespace {

// The key part of an iteration: its merged rank and, for rank 1, each operand's access.
std::string rank_tag(const Iter& it) { return "_r" + std::to_string(it.rank()) + it.access(); }

// A kernel over an Iter with one operand per buffer, named o_<buffer> in `body`. A rank-1
// iteration reads each operand's offset (and stride) once, before the loop, and walks idx
// offsets: 64-bit where the dialect addresses so, which lets CPU OpenCL drivers vectorise.
KernelDef iter_kernel(const std::string& name, std::vector<BufferDecl> bufs, const Iter& it,
                      const std::string& body, const Caps& caps) {
  KernelDef k;
  k.name = name;
  k.buffers = std::move(bufs);
  k.local_size = ew_local_size(caps);
  std::vector<std::string> vars;
  for (const BufferDecl& b : k.buffers) vars.push_back("o_" + b.name);
  const std::string access = it.access();
  if (access.size() != vars.size()) {
    k.body = grid_loop("i", "P_U(0)") + " {\n" + iter_code(vars, "i", it.rank(), 0) + body + "}\n";
    return k;
  }
  std::string head = "const uidx_t ember_n = uidx_t(P_U(0));\n", offsets;
  for (size_t v = 0; v < vars.size(); ++v) {
    const std::string w =
        std::to_string(2 + 2 * v);  // add_iter's words: numel, size, (off, stride)*
    head += "const idx_t " + vars[v] + "_base = idx_t(P_I(" + w + "));\n";
    if (access[v] == 's')
      head += "const idx_t " + vars[v] + "_step = idx_t(P_I(" + std::to_string(3 + 2 * v) + "));\n";
    offsets += "idx_t " + vars[v] + " = " + vars[v] + "_base" +
               (access[v] == 'c'   ? " + idx_t(i)"
                : access[v] == 's' ? " + idx_t(i) * " + vars[v] + "_step"
                                   : std::string()) +
               ";\n";
  }
  k.body = head + "for (uidx_t i = GLOBAL_ID_IDX; i < ember_n; i += GLOBAL_SIZE_IDX) {\n" +
           offsets + body + "}\n";
  return k;
}

Binding bind(const Tensor& t) { return Binding{t, -1}; }

// dst = convert(src) over dst's shape; src_scratch >= 0 reads scratch buffer instead of src.
Launch copy_launch(const Tensor& src, const Tensor& dst, const Caps& caps, Dialect d) {
  const DType sd = src.dtype(), dd = dst.dtype();
  Iter it = make_iter({dst, src});
  Params p;
  add_iter(p, it, "copy");
  const std::string key = std::string("copy_") + dtype_tag(sd) + "_" + dtype_tag(dd) + rank_tag(it);
  auto k = cached_kernel(key, d, caps, [&] {
    const std::string body =
        sd == dd ? "dst[o_dst] = src[o_src];\n"
                 : std::string(compute_type(sd)) + " v = " + load(sd, "src[o_src]") + ";\n" +
                       "dst[o_dst] = " + store(dd, convert(sd, dd, "v")) + ";\n";
    return iter_kernel(key, {{"dst", dd, true}, {"src", sd, false}}, it, body, caps);
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
      return iter_kernel(key, {{"src", sd, false}, {"tmp", sd, true}}, it, "tmp[i] = src[o_src];\n",
                         caps);
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
      KernelDef kd;
      kd.name = key;
      kd.buffers = {{"dst", dd, true}, {"tmp", sd, false}};
      kd.local_size = ew_local_size(caps);
      const std::string body =
          sd == dd ? "dst[od] = tmp[i];\n"
                   : std::string(compute_type(sd)) + " v = " + load(sd, "tmp[i]") + ";\n" +
                         "dst[od] = " + store(dd, convert(sd, dd, "v")) + ";\n";
      kd.body = grid_loop("i", "P_U(0)") + " {\n" + offset_code("od", "i", int(op.dst.dim()), 1) +
                body + "}\n";
      return kd;
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
  // the value cast on the host exactly as the ref backend's fill, passed as raw bits
  uint64_t bits = 0;
  dispatch_dtype(dd, [&](auto tag) {
    using D = decltype(tag);
    const D v = op.value.is_float() ? scalar_cast<D>(op.value.to_double())
                                    : scalar_cast<D>(op.value.to_int());
    std::memcpy(&bits, &v, sizeof(D));
  });
  const uint32_t w = p.u64(bits);
  const std::string lo = "P_U(" + std::to_string(w) + ")",
                    hi = "P_U(" + std::to_string(w + 1) + ")";
  std::string val;
  switch (dd) {
    case DType::f32:
      val = "uintBitsToFloat(" + lo + ")";
      break;
    case DType::f64:
      val = "P_D(" + std::to_string(w) + ")";
      break;
    case DType::i64:
      val = "i64(u64(" + lo + ") | (u64(" + hi + ") << 32))";
      break;
    case DType::u64:
      val = "(u64(" + lo + ") | (u64(" + hi + ") << 32))";
      break;
    case DType::i32:
      val = "int(" + lo + ")";
      break;
    case DType::u32:
      val = lo;
      break;
    case DType::f16:
      val = "f16(unpackHalf2x16(" + lo + ").x)";
      break;
    default:  // bf16 bits, narrow integers and bool bytes: the low bits
      val = std::string(storage_type(dd)) + "(" + lo + ")";
      break;
  }
  const std::string key = std::string("fill_") + dtype_tag(dd) + rank_tag(it);
  auto k = cached_kernel(key, d, caps, [&] {
    return iter_kernel(key, {{"dst", dd, true}}, it, "dst[o_dst] = " + val + ";\n", caps);
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
  const bool wide = sd == DType::f64 || (!is_floating(sd) && caps.f64);
  uint32_t pbase = uint32_t(p.words().size());
  if (wide) {
    p.f64(op.p0);
    p.f64(op.p1);
    p.f64(op.p2);
  } else {
    p.f32(float(op.p0));
    p.f32(float(op.p1));
    p.f32(float(op.p2));
  }
  const std::string key =
      std::string("unary_") + name + "_" + dtype_tag(sd) + "_" + dtype_tag(dd) + rank_tag(it);
  auto k = cached_kernel(key, d, caps, [&] {
    const std::string e = unary_expr(op.op, sd, "x", pbase, caps);
    const DType rt = ir::traits(op.op).predicate ? DType::b8 : sd;
    const std::string body = std::string(compute_type(sd)) + " x = " + load(sd, "src[o_src]") +
                             ";\n" + compute_type(rt) + " y = " + e + ";\n" +
                             "dst[o_dst] = " + store(dd, convert(rt, dd, "y")) + ";\n";
    return iter_kernel(key, {{"dst", dd, true}, {"src", sd, false}}, it, body, caps);
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
    const DType rt = ir::traits(op.op).predicate ? DType::b8 : t;
    const std::string T = compute_type(t);
    const std::string body = T + " a = " + load(t, "a[o_a]") + ";\n" + T +
                             " b = " + load(t, "b[o_b]") + ";\n" + compute_type(rt) +
                             " y = " + binary_expr(op.op, t, "a", "b", caps) + ";\n" +
                             "dst[o_dst] = " + store(dd, convert(rt, dd, "y")) + ";\n";
    return iter_kernel(key, {{"dst", dd, true}, {"a", t, false}, {"b", t, false}}, it, body, caps);
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
        "dst[o_dst] = " + load(DType::b8, "cond[o_cond]") + " ? a[o_a] : b[o_b];\n", caps);
  });
  l.launches.push_back(launch_1d(k, {bind(op.dst), bind(op.cond), bind(op.a), bind(op.b)}, p.take(),
                                 it.numel, caps));
  return l;
}

}  // namespace ember::codegen
