// The browser op-table subset: each case computes on ref (the oracle), then on the wasm cpu
// device and on webgpu, each compared with ref within its dtype's tolerance (as tests/op_table.cpp:
// f32 rtol 1e-5 / atol 1e-6, f16 2e-3 / 1e-3, integers and bool exact), times the case's scale.
#include <cmath>
#include <cstdint>

#include "backends/webgpu/webgpu_backend.h"
#include "harness.h"
#include "ir/op_traits.h"

using namespace ember;
namespace F = ember::nn::functional;

namespace webtest {

namespace {

using Outputs = std::vector<Tensor>;
struct OpCase {
  std::string name;
  std::function<Outputs(const Device&)> run;
  double tol_scale = 1;
  bool needs_f16 = false;
  double gpu_scale = 0;  // on webgpu, when not 0 (WGSL's own precision, below)
};

// Deterministic values in [lo, hi) (a 32-bit LCG), on ref.
Tensor values(Shape shape, double lo, double hi, uint32_t seed) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t x = seed * 2654435761u + 12345u;
  for (auto& f : v) {
    x = x * 1664525u + 1013904223u;
    f = float(lo + (hi - lo) * double(x >> 8) / double(1u << 24));
  }
  return from_vector(v, shape, Device::ref());
}
Tensor ints(Shape shape, int lo, int hi, uint32_t seed) {
  return ember::floor(values(shape, lo, hi, seed)).to(DType::i32);
}

void tolerance(DType t, double& rtol, double& atol) {
  rtol = atol = 0;
  if (t == DType::f32) rtol = 1e-5, atol = 1e-6;
  if (t == DType::f16) rtol = 2e-3, atol = 1e-3;
}

// "" when `got` matches `want` (NaN equals NaN, infinities exactly).
std::string compare(const Tensor& want, const Tensor& got, double scale) {
  std::ostringstream os;
  if (want.shape() != got.shape() || want.dtype() != got.dtype()) {
    os << "shape/dtype " << dtype_name(got.dtype()) << " differs from " << dtype_name(want.dtype());
    return os.str();
  }
  double rtol, atol;
  tolerance(want.dtype(), rtol, atol);
  const auto w = want.to(DType::f64).to_vector<double>(),
             g = got.to(DType::f64).to_vector<double>();
  for (size_t i = 0; i < w.size(); ++i) {
    if (std::isnan(w[i]) ? std::isnan(g[i]) : w[i] == g[i]) continue;
    if (!std::isinf(w[i]) && std::fabs(w[i] - g[i]) <= scale * (atol + rtol * std::fabs(w[i])))
      continue;
    os << "element " << i << " of " << w.size() << ": got " << g[i] << ", expected " << w[i];
    return os.str();
  }
  return "";
}

// Domain of a unary op's input.
std::pair<double, double> unary_domain(ir::UnaryOp op) {
  using U = ir::UnaryOp;
  switch (op) {
    case U::log:
    case U::log2:
    case U::log10:
    case U::sqrt:
    case U::rsqrt:
    case U::reciprocal:
      return {0.1, 3};
    case U::log1p:
      return {-0.9, 2};
    case U::asin:
    case U::acos:
    case U::atanh:
    case U::erfinv:
      return {-0.9, 0.9};
    case U::acosh:
      return {1.1, 4};
    default:
      return {-2, 2};
  }
}

bool float_rule(ir::DTypeRule r) {
  return r != ir::DTypeRule::int_only && r != ir::DTypeRule::int_or_bool;
}

// a [4, 5] as a transposed view of [5, 4]; b [1, 5] broadcast to [4, 5].
Tensor viewed(const Tensor& base_t, const Device& d) { return base_t.to(d).transpose(0, 1); }

std::vector<OpCase> op_cases() {
  std::vector<OpCase> cs;
  for (size_t k = 0; k < ir::kUnaryOpCount; ++k) {
    const auto& t = ir::traits(ir::UnaryOp(k));
    if (!float_rule(t.rule)) continue;
    const auto [lo, hi] = unary_domain(t.op);
    const Tensor base = values({5, 4}, lo, hi, uint32_t(k));
    cs.push_back({std::string("unary/") + t.name + "_f32",
                  [&t, base](const Device& d) {
                    Tensor src = viewed(base, d);
                    Tensor dst = empty(
                        src.shape(),
                        TensorOptions().dtype(t.predicate ? DType::b8 : DType::f32).device(d));
                    ir::Unary u{t.op, src, dst};
                    if (t.op == ir::UnaryOp::elu) u.p0 = 1.0;
                    if (t.op == ir::UnaryOp::leaky_relu) u.p0 = 0.01;
                    if (t.op == ir::UnaryOp::softplus) u.p0 = 1.0, u.p1 = 20.0;
                    ember::run(u);
                    return Outputs{dst};
                  },
                  10});
    // WGSL's sin and cos promise an absolute error of 2^-11 on [-pi, pi] (tan inherits it).
    const bool trig =
        t.op == ir::UnaryOp::sin || t.op == ir::UnaryOp::cos || t.op == ir::UnaryOp::tan;
    if (trig) cs.back().gpu_scale = 500;
  }
  auto binary = [&](const ir::BinaryTraits& t, DType dt, Tensor a, Tensor b) {
    cs.push_back({std::string("binary/") + t.name + "_" + dtype_name(dt),
                  [&t, dt, a, b](const Device& d) {
                    Tensor x = viewed(a, d), y = b.to(d).expand({4, 5});
                    Tensor dst = empty(
                        {4, 5}, TensorOptions().dtype(t.predicate ? DType::b8 : dt).device(d));
                    ember::run(ir::Binary{t.op, x, y, dst});
                    return Outputs{dst};
                  },
                  10});
  };
  for (size_t k = 0; k < ir::kBinaryOpCount; ++k) {
    using B = ir::BinaryOp;
    const auto& t = ir::traits(B(k));
    const bool positive = t.op == B::pow || t.op == B::div_floor || t.op == B::remainder ||
                          t.op == B::fmod || t.op == B::div || t.op == B::div_trunc;
    if (float_rule(t.rule))
      binary(t, DType::f32, values({5, 4}, positive ? 0.1 : -2, 3, uint32_t(100 + k)),
             values({1, 5}, positive ? 0.5 : -2, 2, uint32_t(200 + k)));
    const bool int_ok =
        t.rule != ir::DTypeRule::to_float && t.rule != ir::DTypeRule::float_only && t.op != B::pow;
    const bool shift = t.op == B::shift_left || t.op == B::shift_right;
    if (int_ok)
      binary(t, DType::i32, ints({5, 4}, -50, 50, uint32_t(300 + k)),
             positive || shift ? ints({1, 5}, 1, 6, uint32_t(400 + k))
                               : ints({1, 5}, -50, 50, uint32_t(400 + k)));
  }
  // The f32 library (src/codegen/kir_lib_f32.cpp) at special values: NaN, +-inf, +-0, +-1,
  // negative bases with integer exponents, erfinv's ends.
  {
    const float inf = INFINITY, nan = NAN;
    const std::vector<float> s = {nan, inf, -inf, 0.0f, -0.0f, 1,  -1,    0.5f, -0.5f,   2,
                                  -2,  3,   -3,   2.5f, 10,    -7, 1e-3f, 1e5f, 0.9999f, -0.9999f};
    std::vector<float> av, bv;
    for (float x : s)
      for (float y : s) av.push_back(x), bv.push_back(y);
    const Shape sh = {int64_t(av.size())};
    const Tensor a = from_vector(av, sh, Device::ref()), b = from_vector(bv, sh, Device::ref());
    cs.push_back({"special/erf_erfinv_gelu_pow_atan2_hypot_f32",
                  [a, b](const Device& d) {
                    Tensor x = a.to(d), y = b.to(d);
                    return Outputs{erf(x),    erfinv(x),   F::gelu(x),
                                   pow(x, y), atan2(x, y), hypot(x, y)};
                  },
                  10});
  }
  const Tensor A = values({6, 7}, -2, 2, 1), B2 = values({6, 7}, -2, 2, 2);
  cs.push_back({"where_f32", [A, B2](const Device& d) {
                  Tensor a = A.to(d), b = B2.to(d);
                  return Outputs{where(gt(a, b), a, b * 2.0)};
                }});
  cs.push_back({"cast/f32_i32_f32", [](const Device& d) {
                  Tensor x = values({9, 11}, -50, 50, 3).to(d);
                  Tensor i = x.to(DType::i32);
                  return Outputs{i, (i.to(DType::f32) * 0.5).to(DType::f32)};
                }});
  cs.push_back({"cast/f32_i8_u8_b8", [](const Device& d) {
                  Tensor x = values({7, 13}, -100, 100, 4).to(d);
                  return Outputs{x.to(DType::i8), x.abs().to(DType::u8), gt(x, 0.0),
                                 x.to(DType::i8).to(DType::f32)};
                }});
  cs.push_back({"cast/f32_f16_f32",
                [](const Device& d) {
                  Tensor h = values({9, 11}, -8, 8, 5).to(d).to(DType::f16);
                  return Outputs{h, (h * 2.0).to(DType::f32)};
                },
                1, true});
  struct Red {
    const char* name;
    Shape shape;
    std::vector<int64_t> dims;
  };
  for (const Red& r : {Red{"small_dim1", {4, 33, 5}, {1}}, Red{"small_dims02", {6, 7, 9}, {0, 2}},
                       Red{"all", {17, 19}, {0, 1}}, Red{"large_rows", {64, 8192}, {1}},
                       Red{"large_cols", {4096, 96}, {0}}, Red{"large_all", {1 << 20}, {0}}}) {
    const Tensor x = values(r.shape, -1, 1, 7), p = values(r.shape, 0.99, 1.01, 8);
    const double n = double(x.numel());
    const auto dims = r.dims;
    cs.push_back({std::string("reduce/sum_mean_") + r.name,
                  [x, dims](const Device& d) {
                    Tensor t = x.to(d);
                    return Outputs{sum(t, dims), mean(t, dims, true)};
                  },
                  std::sqrt(n)});
    cs.push_back({std::string("reduce/amax_amin_prod_") + r.name,
                  [x, p, dims](const Device& d) {
                    Tensor t = x.to(d);
                    return Outputs{amax(t, dims), amin(t, dims), prod(p.to(d), dims)};
                  },
                  std::sqrt(n)});
  }
  struct Mm {
    const char* name;
    Shape a, b;
  };
  for (const Mm& m : {Mm{"small", {8, 16}, {16, 12}}, Mm{"large", {256, 384}, {384, 320}},
                      Mm{"batched", {4, 64, 48}, {4, 48, 80}}, Mm{"odd", {33, 65}, {65, 17}}}) {
    const Tensor a = values(m.a, -1, 1, 9), b = values(m.b, -1, 1, 10);
    const double k = double(m.a.back());
    cs.push_back({std::string("matmul/") + m.name,
                  [a, b](const Device& d) { return Outputs{matmul(a.to(d), b.to(d))}; },
                  10 * std::sqrt(k)});
  }
  const Tensor img = values({2, 3, 16, 16}, -1, 1, 11), w = values({8, 3, 3, 3}, -0.5, 0.5, 12),
               bias = values({8}, -0.1, 0.1, 13);
  cs.push_back({"nn/conv2d",
                [img, w, bias](const Device& d) {
                  return Outputs{F::conv2d(img.to(d), w.to(d), bias.to(d), {1}, {1})};
                },
                100});
  cs.push_back(
      {"nn/max_pool2d", [img](const Device& d) { return Outputs{F::max_pool2d(img.to(d), {2})}; }});
  cs.push_back({"nn/avg_pool2d",
                [img](const Device& d) { return Outputs{F::avg_pool2d(img.to(d), {3}, {2}, {1})}; },
                10});
  const Tensor logits = values({8, 100}, -5, 5, 14);
  cs.push_back({"nn/softmax_log_softmax",
                [logits](const Device& d) {
                  Tensor x = logits.to(d);
                  return Outputs{F::softmax(x, 1), F::log_softmax(x, 1)};
                },
                100});
  const Tensor ln = values({4, 64}, -3, 3, 15), g = values({64}, 0.5, 1.5, 16),
               beta = values({64}, -0.5, 0.5, 17);
  cs.push_back({"nn/layer_norm",
                [ln, g, beta](const Device& d) {
                  return Outputs{F::layer_norm(ln.to(d), {64}, g.to(d), beta.to(d))};
                },
                100});
  const Tensor cs_in = values({16, 300}, -1, 1, 18);
  cs.push_back(
      {"scan/cumsum", [cs_in](const Device& d) { return Outputs{cumsum(cs_in.to(d), 1)}; }, 100});
  const Tensor fx = values({33, 40}, -1, 1, 19), fy = values({40}, -1, 1, 20);
  cs.push_back({"fused/elementwise_chain",
                [fx, fy](const Device& d) {
                  Tensor x = fx.to(d), y = fy.to(d);
                  Tensor z = (neg(exp(x * 2.0 + 1.0)) + y).abs().sqrt() * y - F::sigmoid(x);
                  return Outputs{z};
                },
                10});
  cs.push_back({"inplace/mul_add_on_a_view", [fx, fy](const Device& d) {
                  Tensor x = fx.to(d).clone();
                  Tensor v = x.narrow(0, 3, 10);
                  v.mul_(2.0).add_(fy.to(d));
                  return Outputs{x};
                }});
  return cs;
}

}  // namespace

std::vector<Case> optable_cases() {
  const bool f16 = webgpu::backend().device_caps().f16;
  std::vector<Case> out;
  for (const OpCase& c : op_cases())
    for (const Device dev : {Device::cpu(), Device::webgpu()}) {
      const std::string name = c.name + " on " + dev.str();
      out.push_back({name, [c, dev, f16]() -> Finish {
                       if (c.needs_f16 && dev == Device::webgpu() && !f16)
                         return [](const std::string&) {
                           return std::string("skipped: no shader-f16");
                         };
                       Outputs want = c.run(Device::ref()), got;
                       std::vector<Tensor> host;
                       got = c.run(dev);
                       for (Tensor& t : got)
                         host.push_back(dev == Device::webgpu() ? webgpu::request_host_copy(t) : t);
                       const double scale =
                           dev == Device::webgpu() && c.gpu_scale > 0 ? c.gpu_scale : c.tol_scale;
                       return [want, host, scale](const std::string& err) {
                         expect(err.empty(), "settle rejected: " + err);
                         for (size_t i = 0; i < want.size(); ++i) {
                           const std::string m = compare(want[i], host[i].to(Device::ref()), scale);
                           expect(m.empty(), "output " + std::to_string(i) + ": " + m);
                         }
                         return std::to_string(want.size()) + " outputs";
                       };
                     }});
    }
  return out;
}

}  // namespace webtest
