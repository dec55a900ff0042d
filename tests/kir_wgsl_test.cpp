// kir's WGSL dialect (src/codegen/kir_render_wgsl.cpp) without a browser: the ABI (bindings,
// params, entry point), the packed 8/16-bit storage rule, the rewrites WGSL needs (select,
// shift counts, non-finite constants) and the rejection of 64-bit types under WebGPU's caps.
// Chromium compiles every kernel of a broad op set in ctest web/wgsl.
#include <gtest/gtest.h>

#include <cmath>

#include "codegen/kernel.h"
#include "codegen/kir.h"
#include "ember/ember.h"

namespace ember {
namespace {

using codegen::Caps;
using codegen::Dialect;
using namespace codegen::kir;

Caps webgpu_caps() {
  Caps c;
  c.f16 = c.i8 = c.i16 = true;
  c.i64 = c.f64 = false;
  return c;
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(KirWgslTest, RendersTheAbiAndPackedStorage) {
  Kernel k("wgsl_sample", 64);
  const Buf dst = k.buffer("dst", DType::b8, true);
  const Buf src = k.buffer("src", DType::f32, false);
  const Buf q = k.buffer("q", DType::i8, false);
  k.grid_loop("i", param_u32(0), [&](Expr i) {
    const Expr x = k.let("x", k.load(src, i) * param_f32(1));
    const Expr s = k.let("s", k.load(q, i) << lit(Type::i32, 2));
    k.store(dst, i,
            select(call(Fn::isnan, {x}), lit_bool(true), x > lit(Type::f32, INFINITY)) ||
                s > lit(Type::i32, 0));
  });
  const auto out = render(k, Dialect::wgsl, webgpu_caps());
  const std::string& w = out->source;
  EXPECT_EQ(out->dialect, Dialect::wgsl);
  EXPECT_TRUE(out->build_options.empty());
  EXPECT_TRUE(has(w, "@group(0) @binding(0) var<storage, read_write> dst: array<atomic<u32>>;"))
      << w;
  // read-only buffers are declared writable too (the runtime may alias bindings)
  EXPECT_TRUE(has(w, "@group(0) @binding(1) var<storage, read_write> src: array<f32>;")) << w;
  EXPECT_TRUE(has(w, "@group(0) @binding(3) var<uniform> ember_params: array<vec4<u32>, 1024>;"))
      << w;
  EXPECT_TRUE(has(w, "@compute @workgroup_size(64)\nfn main(")) << w;
  EXPECT_TRUE(has(w, "@builtin(global_invocation_id)")) << w;
  EXPECT_TRUE(has(w, "bitcast<f32>(ember_params[0][1])")) << w;
  // a packed byte store clears and sets its bits atomically; a load extracts and sign-extends
  EXPECT_TRUE(has(w, "atomicAnd(&dst[ember_w_i >> 2u], ~(0xffu << s));")) << w;
  EXPECT_TRUE(has(w, "atomicOr(&dst[ember_w_i >> 2u], (ember_w_v & 0xffu) << s);")) << w;
  EXPECT_TRUE(has(w, "ember_w_st0(u32(i), select(0u, 1u, ")) << w;
  EXPECT_TRUE(has(w, "((bitcast<i32>(ember_w_ld2(u32(i))) << 24u) >> 24u)")) << w;
  // shift counts are u32; select is select(false_value, true_value, cond); no NaN constants
  EXPECT_TRUE(has(w, "<< u32(2i))")) << w;
  EXPECT_TRUE(has(w, "select(")) << w;
  EXPECT_TRUE(has(w, "ember_w_f32(2139095040u)")) << w;
  EXPECT_TRUE(has(w, "& 0x7fffffffu) > 0x7f800000u)")) << w;
  for (const char* bad : {"double", "?", "int64", "float", "uint", "enable f16"})
    EXPECT_FALSE(has(w, bad)) << bad << " in\n" << w;
}

TEST(KirWgslTest, HalfAndBf16Storage) {
  Kernel k("wgsl_half", 64);
  const Buf h = k.buffer("h", DType::f16, true);
  const Buf b = k.buffer("b", DType::bf16, true);
  const Function twice =
      k.function("twice", Type::f32, {Type::f32}, [&](const std::vector<Expr>& a) {
        k.assign(a[0], a[0] * 2);
        k.ret(a[0]);
      });
  k.grid_loop("i", param_u32(0), [&](Expr i) {
    k.store(h, i, k.call(twice, {k.load(b, i)}));
    k.store(b, i, k.load(h, i));
  });
  const std::string w = render(k, Dialect::wgsl, webgpu_caps())->source;
  EXPECT_EQ(w.rfind("enable f16;\n", 0), 0u) << w;
  EXPECT_TRUE(has(w, "var<storage, read_write> h: array<f16>;")) << w;
  EXPECT_TRUE(has(w, "var<storage, read_write> b: array<atomic<u32>>;")) << w;
  EXPECT_TRUE(has(w, "fn ember_w_bf16(f: f32) -> u32")) << w;
  EXPECT_TRUE(has(w, "(ember_w_i & 1u) * 16u")) << w;
  // an assigned parameter is copied into a local (WGSL parameters are immutable)
  EXPECT_TRUE(has(w, "fn twice(ember_w_p")) << w;
  EXPECT_TRUE(has(w, "  var a0: f32 = ember_w_p")) << w;
  Caps no_f16 = webgpu_caps();
  no_f16.f16 = false;
  EXPECT_THROW(render(k, Dialect::wgsl, no_f16), Error);
}

TEST(KirWgslTest, SixtyFourBitKernelsAreRejectedUnderWebGpuCaps) {
  Kernel k("wgsl_i64", 64);
  const Buf dst = k.buffer("dst", DType::i64, true);
  k.grid_loop("i", param_u32(0), [&](Expr i) { k.store(dst, i, lit_int(Type::i64, 1) << 40); });
  try {
    render(k, Dialect::wgsl, webgpu_caps());
    FAIL() << "an i64 kernel rendered under WebGPU caps";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "[wgsl_i64] needs 64-bit integers")) << e.what();
  }
  // as an op: a sum of int32 accumulates in int64
  const Tensor x = empty({4, 5}, {DType::i32, Device::ref()});
  const Tensor y = empty({4, 1}, {DType::i64, Device::ref()});
  try {
    codegen::lower(ir::Reduce{ir::ReduceOp::sum, x, {1}, y, {}}, Dialect::wgsl, webgpu_caps());
    FAIL() << "an int64 reduction lowered under WebGPU caps";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "Int64")) << e.what();
  }
}

}  // namespace
}  // namespace ember
