// Random fills: Philox-4x32-10 keyed by (seed, offset + element index), bit-exact with
// core/philox.h and the ref backend (ref/random.cpp), using only 32-bit integer arithmetic
// (the 32x32->64 products through the library's mul-hi). The value math runs in f64 when the
// device has it (as the ref backend does), else in float.
#include "codegen/elementwise_internal.h"
#include "codegen/lower.h"
#include "ember/error.h"

#include "codegen/kir_lib.h"

namespace ember::codegen {

using kir::Expr;
using kir::Type;

Lowering lower_random(const ir::Random& op, Dialect d, const Caps& caps) {
  const DType dd = op.dst.dtype();
  const char* name = "random";
  check_dtype(name, dd, caps);
  Lowering l;
  const int64_t n = op.dst.numel();
  if (n == 0) return l;
  EMBER_CHECK(op.dst.is_contiguous(), name, "destination must be contiguous");
  const bool has_prob = op.dist == ir::RandomDist::bernoulli && op.prob.defined();
  if (has_prob) check_dtype(name, op.prob.dtype(), caps);
  if (op.dist == ir::RandomDist::randint)
    EMBER_CHECK(caps.i64, name, "randint needs 64-bit integers (shaderInt64) on this device");
  const bool wide = caps.f64;
  const DType vt = wide ? DType::f64 : DType::f32;
  Params p;
  p.u32(uint32_t(n));
  p.i32(op.dst.offset(), name);  // 1
  p.u64(op.seed);                // 2, 3
  p.u64(op.offset);              // 4, 5
  uint32_t pw = uint32_t(p.words().size());
  if (wide) {
    p.f64(op.p0);
    p.f64(op.p1);
  } else {
    p.f32(float(op.p0));
    p.f32(float(op.p1));
  }
  const Expr P0 = wide ? kir::param_f64(pw) : kir::param_f32(pw);
  const Expr P1 = wide ? kir::param_f64(pw + 2) : kir::param_f32(pw + 1);
  uint32_t rw = 0;
  if (op.dist == ir::RandomDist::randint) {
    const uint64_t range = uint64_t(int64_t(op.p1) - int64_t(op.p0));
    rw = p.u64(range);
    p.u64(uint64_t(int64_t(op.p0)));
  }
  uint32_t prob_base = 0;
  const int prob_rank = has_prob ? int(op.prob.dim()) : 0;
  if (has_prob) prob_base = p.tensor(op.prob, name);
  static const char* kDist[] = {"uniform", "normal", "bernoulli", "randint"};
  const std::string key =
      std::string("random_") + kDist[int(op.dist)] + "_" + dtype_tag(dd) +
      (has_prob ? std::string("_p") + dtype_tag(op.prob.dtype()) + std::to_string(prob_rank)
                : std::string()) +
      (wide ? "_w" : "");
  auto k = cached_kernel(key, d, caps, [&] {
    kir::Kernel k(key, ew_local_size(caps));
    const kir::Buf dst = k.buffer("dst", dd, true);
    const kir::Buf prob_buf = has_prob ? k.buffer("prob", op.prob.dtype(), false) : kir::Buf{};
    const Type V = kir::compute_of(vt);
    auto L = [&](double v) { return kir::lit(V, v); };
    k.grid_loop("i", kir::param_u32(0), [&](Expr i) {
      const Expr c0 = k.let("ctr0", kir::param_u32(4) + i);
      const Expr c1 = k.let("ctr1", kir::param_u32(5) + select(c0 < i, kir::lit(Type::u32, 1),
                                                               kir::lit(Type::u32, 0)));
      const std::vector<Expr> r = kir::philox(k, {c0, c1, kir::param_u32(2), kir::param_u32(3)});
      const Expr r0 = r[0], r1 = r[1];
      Expr v;
      switch (op.dist) {
        case ir::RandomDist::uniform: {
          Expr u;
          if (dd == DType::f64)
            u = k.let("u", (cast(Type::f64, r0 >> 11) * 4294967296.0 +
                            cast(Type::f64, (r0 << 21) ^ (r1 >> 11))) *
                               1.1102230246251565e-16);
          else
            u = k.let("u", cast(V, r0 >> 8) * L(1.0 / 16777216.0));
          v = k.let("v", P0 + (P1 - P0) * u);
          k.if_(v >= P1 && P1 > P0, [&] { k.assign(v, P0); });
          break;
        }
        case ir::RandomDist::normal: {
          const Expr u1 = (cast(V, r0) + L(1)) * L(1.0 / 4294967296.0);
          const Expr u2 = cast(V, r1) * L(1.0 / 4294967296.0);
          if (wide)
            v = k.let(
                "v",
                P0 + P1 * (kir::call(kir::Fn::sqrt,
                                     {L(-2) * kir::library_call(k, "ember_log_f64", {u1})}) *
                           kir::library_call(k, "ember_cos_f64", {L(6.283185307179586) * u2})));
          else
            v = k.let("v",
                      P0 + P1 * (kir::call(kir::Fn::sqrt, {L(-2) * kir::call(kir::Fn::log, {u1})}) *
                                 kir::call(kir::Fn::cos, {L(6.283185307179586) * u2})));
          break;
        }
        case ir::RandomDist::bernoulli: {
          Expr prob = P0;
          if (has_prob) {
            const Expr po = offset_of(k, "op", i, prob_rank, prob_base);
            const Expr pr = k.let("pr", k.load(prob_buf, po));
            prob = convert(k, op.prob.dtype(), vt, pr);
          }
          v = k.let("v", select(cast(V, r0 >> 8) * L(1.0 / 16777216.0) < prob, L(1), L(0)));
          break;
        }
        case ir::RandomDist::randint: {
          const Expr rg = k.let("rg", kir::param_u64(rw));
          const Expr bits = k.let("bits", (cast(Type::u64, r0) << 32) | cast(Type::u64, r1));
          const Expr one = kir::lit(Type::u64, 1), zero = kir::lit(Type::u64, 0);
          v = k.let("v",
                    cast(Type::i64, kir::param_u64(rw + 2)) +
                        cast(Type::i64,
                             select(rg != 0, bits % kir::call(kir::Fn::max, {rg, one}), zero)));
          break;
        }
      }
      const DType from = op.dist == ir::RandomDist::randint ? DType::i64 : vt;
      k.store(dst, kir::param_i32(1) + cast(Type::i32, i), convert(k, from, dd, v));
    });
    return k;
  });
  std::vector<Binding> bs = {Binding{op.dst, -1}};
  if (has_prob) bs.push_back(Binding{op.prob, -1});
  l.launches.push_back(launch_1d(k, std::move(bs), p.take(), n, caps));
  return l;
}

}  // namespace ember::codegen
