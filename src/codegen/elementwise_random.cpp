// Random fills: Philox-4x32-10 keyed by (seed, offset + element index), bit-exact with
// core/philox.h and the ref backend (ref/random.cpp), using only 32-bit integer arithmetic
// (the 32x32->64 products through the library's mul-hi). The value math runs in f64 when the
// device has it (as the ref backend does), else in float.
#include "codegen/elementwise_internal.h"
#include "codegen/lower.h"
#include "ember/error.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"  // GCC bug 105329 on string concatenation
#endif

namespace ember::codegen {

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
  const std::string P0 =
      wide ? "P_D(" + std::to_string(pw) + ")" : "P_F(" + std::to_string(pw) + ")";
  const std::string P1 =
      wide ? "P_D(" + std::to_string(pw + 2) + ")" : "P_F(" + std::to_string(pw + 1) + ")";
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
    KernelDef kd;
    kd.name = key;
    kd.buffers = {{"dst", dd, true}};
    if (has_prob) kd.buffers.push_back({"prob", op.prob.dtype(), false});
    kd.local_size = ew_local_size(caps);
    const std::string V = compute_type(vt);
    std::string b = grid_loop("i", "P_U(0)") + " {\n";
    b += "uint c0 = P_U(4) + i;\n"
         "uint c1 = P_U(5) + (c0 < i ? 1u : 0u);\n"
         "uint r0, r1, r2, r3;\n"
         "ember_philox(c0, c1, P_U(2), P_U(3), r0, r1, r2, r3);\n";
    switch (op.dist) {
      case ir::RandomDist::uniform:
        if (dd == DType::f64)
          b += "f64 u = (f64(r0 >> 11) * 4294967296.0lf + f64((r0 << 21) ^ (r1 >> 11))) * "
               "1.1102230246251565e-16lf;\n";
        else
          b += V + " u = " + V + "(r0 >> 8) * " + lit(vt, 1.0 / 16777216.0) + ";\n";
        b += V + " v = " + P0 + " + (" + P1 + " - " + P0 + ") * u;\n";
        b += "if (v >= " + P1 + " && " + P1 + " > " + P0 + ") v = " + P0 + ";\n";
        break;
      case ir::RandomDist::normal: {
        const std::string u1 =
            "((" + V + "(r0) + " + lit(vt, 1) + ") * " + lit(vt, 1.0 / 4294967296.0) + ")";
        const std::string u2 = "(" + V + "(r1) * " + lit(vt, 1.0 / 4294967296.0) + ")";
        if (wide)
          b += "f64 v = " + P0 + " + " + P1 + " * (sqrt(-2.0lf * ember_log_f64(" + u1 +
               ")) * ember_cos_f64(6.283185307179586lf * " + u2 + "));\n";
        else
          b += "float v = " + P0 + " + " + P1 + " * (sqrt(-2.0 * log(" + u1 +
               ")) * cos(6.283185307179586 * " + u2 + "));\n";
        break;
      }
      case ir::RandomDist::bernoulli: {
        std::string prob = P0;
        if (has_prob) {
          b += offset_code("op", "i", prob_rank, prob_base);
          b += std::string(compute_type(op.prob.dtype())) +
               " pr = " + load(op.prob.dtype(), "prob[op]") + ";\n";
          prob = convert(op.prob.dtype(), vt, "pr");
        }
        b += V + " v = (" + V + "(r0 >> 8) * " + lit(vt, 1.0 / 16777216.0) + " < " + prob + ") ? " +
             lit(vt, 1) + " : " + lit(vt, 0) + ";\n";
        break;
      }
      case ir::RandomDist::randint: {
        const std::string rg = "(u64(P_U(" + std::to_string(rw) + ")) | (u64(P_U(" +
                               std::to_string(rw + 1) + ")) << 32))";
        const std::string lo = "i64(u64(P_U(" + std::to_string(rw + 2) + ")) | (u64(P_U(" +
                               std::to_string(rw + 3) + ")) << 32))";
        b += "u64 rg = " + rg +
             ";\n"
             "u64 bits = (u64(r0) << 32) | u64(r1);\n"
             "i64 v = " +
             lo + " + i64(rg != 0ul ? bits % max(rg, 1ul) : 0ul);\n";
        break;
      }
    }
    const DType from = op.dist == ir::RandomDist::randint ? DType::i64 : vt;
    b += "dst[P_I(1) + int(i)] = " + store(dd, convert(from, dd, "v")) + ";\n}\n";
    kd.body = b;
    return kd;
  });
  std::vector<Binding> bs = {Binding{op.dst, -1}};
  if (has_prob) bs.push_back(Binding{op.prob, -1});
  l.launches.push_back(launch_1d(k, std::move(bs), p.take(), n, caps));
  return l;
}

}  // namespace ember::codegen
