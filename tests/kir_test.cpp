// kir, the typed kernel language: type checks while building, the storage rule, literals, helper
// functions and the two dialects' renderings (GLSL validated by glslangValidator when installed).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>

#include "codegen/common.h"
#include "codegen/kir.h"
#include "codegen/kir_lib.h"
#include "ember/error.h"

namespace ember {
namespace {

using codegen::Caps;
using codegen::Dialect;
using namespace codegen::kir;

Caps all_caps() {
  Caps c;
  c.f16 = c.f64 = c.i64 = c.i8 = c.i16 = true;
  return c;
}

std::string message(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// dst[i] = bf16 src[i] * 2 + f16 h[i], over a grid-stride loop, with a helper function.
Kernel sample() {
  Kernel k("sample_kernel", 64);
  const Buf dst = k.buffer("dst", DType::f16, true);
  const Buf src = k.buffer("src", DType::bf16, false);
  const Buf h = k.buffer("h", DType::b8, false);
  const Function twice = k.function("twice", Type::f32, {Type::f32},
                                    [&](const std::vector<Expr>& a) { k.ret(a[0] * 2); });
  k.grid_loop("i", param_u32(0), [&](Expr i) {
    const Expr x = k.let("x", k.call(twice, {k.load(src, i)}));
    k.if_(
        k.load(h, i), [&] { k.store(dst, i, x + lit(Type::f32, INFINITY)); },
        [&] { k.store(dst, i, x); });
  });
  return k;
}

TEST(KirTest, OperatorsCheckTypes) {
  Kernel k("typed", 64);
  const Buf b = k.buffer("b", DType::f32, true);
  const Expr f = lit(Type::f32, 1), i = lit(Type::i32, 1);
  EXPECT_NE(message([&] { (void)(f + i); }).find("operator + on f32 and i32"), std::string::npos);
  EXPECT_NE(message([&] { (void)(lit_bool(true) + lit_bool(false)); }).find("bool"),
            std::string::npos);
  EXPECT_NE(message([&] { (void)(f % f); }).find("%"), std::string::npos);
  EXPECT_NE(message([&] { k.store(b, i, i); }).find("store of i32 to float32 buffer b"),
            std::string::npos);
  EXPECT_NE(message([&] { (void)select(f, f, f); }).find("condition"), std::string::npos);
  EXPECT_NE(message([&] { (void)call(Fn::exp, {i}); }).find("non-float"), std::string::npos);
  EXPECT_NE(message([&] { (void)bitcast(Type::u64, f); }).find("bitcast from f32 to u64"),
            std::string::npos);
  // a number beside an expression takes its type
  EXPECT_EQ((f + 2).type(), Type::f32);
  // a local never takes a buffer's name (C's scope would make `float b = b[i]` read itself)
  const Expr v = k.let("b", lit(Type::f32, 0));
  EXPECT_NE(k.vars()[size_t(v.node().id)].name, "b");
  EXPECT_EQ((i < 2).type(), Type::boolean);
  EXPECT_EQ(call(Fn::isnan, {f}).type(), Type::boolean);
}

TEST(KirTest, HelperFunctionsCannotTouchKernelState) {
  Kernel k("helper_state", 64);
  const Buf b = k.buffer("b", DType::f32, false);
  const std::string m = message([&] {
    k.function("bad", Type::f32, {Type::i32},
               [&](const std::vector<Expr>& a) { k.ret(k.load(b, a[0])); });
  });
  EXPECT_NE(m.find("helper_state"), std::string::npos) << m;
  EXPECT_NE(m.find("helper function loads buffer b"), std::string::npos) << m;
  // defined once by name
  auto one = [&](const std::vector<Expr>& a) { k.ret(a[0] + 1); };
  const Function f1 = k.function("inc", Type::f32, {Type::f32}, one);
  const Function f2 = k.function("inc", Type::f32, {Type::f32}, one);
  EXPECT_EQ(f1.id, f2.id);
  EXPECT_EQ(k.functions().size(), 1u);
  EXPECT_NE(message([&] { (void)k.call(f1, {lit(Type::i32, 1)}); }).find("argument 0 is i32"),
            std::string::npos);
}

TEST(KirTest, StorageRuleWidensAndNarrows) {
  const auto glsl = render(sample(), Dialect::glsl, all_caps());
  const auto cl = render(sample(), Dialect::opencl, all_caps());
  for (const auto* s : {&glsl->source, &cl->source}) {
    EXPECT_NE(s->find("ember_bf16_to_float(src[i])"), std::string::npos) << *s;
    EXPECT_NE(s->find("ember_bf16_from_float"), std::string::npos) << *s;  // prelude, bf16 buffer
    EXPECT_NE(s->find("twice("), std::string::npos) << *s;
  }
  EXPECT_NE(glsl->source.find("dst[i] = float16_t("), std::string::npos) << glsl->source;
  EXPECT_NE(glsl->source.find("(h[i] != uint8_t(0))"), std::string::npos) << glsl->source;
  EXPECT_NE(glsl->source.find("uintBitsToFloat(2139095040u)"), std::string::npos);  // +inf
  EXPECT_NE(cl->source.find("dst[i] = ((half)("), std::string::npos) << cl->source;
  EXPECT_NE(cl->source.find("as_float(2139095040u)"), std::string::npos);
  EXPECT_NE(cl->source.find("void ember_main(__global half* restrict dst, __global const ushort* "
                            "restrict src, __global const uchar* restrict h, __global const uint* "
                            "ember_params, uint ember_params_off)"),
            std::string::npos)
      << cl->source;
  EXPECT_EQ(glsl->buffers.size(), 3u);
  EXPECT_EQ(glsl->local_size, 64u);
  EXPECT_NE(glsl->key, cl->key);
}

TEST(KirTest, LiteralsAtTheirLimits) {
  Kernel k("limits", 64);
  const Buf a = k.buffer("a", DType::i64, true), b = k.buffer("b", DType::i32, true),
            c = k.buffer("c", DType::f64, true);
  k.store(a, lit(Type::u32, 0), lit_int(Type::i64, std::numeric_limits<int64_t>::min()));
  k.store(b, lit(Type::u32, 0), lit_int(Type::i32, std::numeric_limits<int32_t>::min()));
  k.store(c, lit(Type::u32, 0), lit(Type::f64, -INFINITY));
  const std::string g = render(k, Dialect::glsl, all_caps())->source;
  EXPECT_NE(g.find("(-9223372036854775807l - 1l)"), std::string::npos) << g;
  EXPECT_NE(g.find("(-2147483647 - 1)"), std::string::npos) << g;
  EXPECT_NE(g.find("packDouble2x32(uvec2(0u, 4293918720u))"), std::string::npos) << g;
  const std::string o = render(k, Dialect::opencl, all_caps())->source;
  EXPECT_NE(o.find("(-9223372036854775807L - 1L)"), std::string::npos) << o;
  EXPECT_NE(o.find("#pragma OPENCL EXTENSION cl_khr_fp64 : enable"), std::string::npos) << o;
}

TEST(KirTest, MissingFeatureNamesTheKernel) {
  Caps c;  // no f16/f64/i64/i8/i16
  const std::string m = message([&] { render(sample(), Dialect::glsl, c); });
  EXPECT_NE(m.find("sample_kernel"), std::string::npos) << m;
  EXPECT_NE(m.find("which this device lacks"), std::string::npos) << m;
  Kernel k("plain", 64);
  const Buf b = k.buffer("b", DType::f32, true);
  k.grid_loop("i", param_u32(0), [&](Expr i) { k.store(b, i, k.load(b, i) + 1); });
  EXPECT_NO_THROW(render(k, Dialect::glsl, c));
  Caps small;
  small.max_workgroup_size = 32;
  EXPECT_NE(message([&] { render(k, Dialect::opencl, small); }).find("local size 64"),
            std::string::npos);
}

TEST(KirTest, GlslDoublesOnlyThroughTheLibrary) {
  Kernel k("f64_exp", 64);
  const Buf b = k.buffer("b", DType::f64, true);
  k.store(b, lit(Type::u32, 0), call(Fn::exp, {k.load(b, lit(Type::u32, 0))}));
  EXPECT_NE(message([&] { render(k, Dialect::glsl, all_caps()); }).find("f64 library"),
            std::string::npos);
  EXPECT_NO_THROW(render(k, Dialect::opencl, all_caps()));  // OpenCL C has double exp
}

TEST(KirTest, RenderedGlslIsValid) {
  if (std::system("glslangValidator --version > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "glslangValidator not installed";
  Kernel k("control", 64);
  const Buf b = k.buffer("b", DType::u64, true);
  const Shared s = k.shared("tile", Type::f32x4, 16);
  k.store(
      s, local_id() % 16,
      vec4(lit(Type::f32, 1), lit(Type::f32, 2), lit(Type::f32, 3), cast(Type::f32, local_id())));
  k.barrier();
  const Expr acc = k.let("acc", lit(Type::u64, 0));
  k.for_(
      "j", lit(Type::i32, 8), [](Expr j) { return j > 0; }, [](Expr j) { return j >> 1; },
      [&](Expr j) {
        k.if_(j == 2, [&] { k.continue_(); });
        k.assign(acc, acc + cast(Type::u64, k.load(s, j)[3]) + param_u64(2));
      });
  k.while_(acc > 100, [&] {
    k.assign(acc, acc / 2);
    k.break_();
  });
  const Expr h = call(Fn::mul_hi, {global_id(), lit_uint(Type::u32, 0x9E3779B9u)});
  const Expr f =
      call(Fn::frexp_mant, {param_f32(0)}) + cast(Type::f32, call(Fn::frexp_exp, {param_f64(4)}));
  k.store(b, global_id_idx(),
          acc + cast(Type::u64, h) + cast(Type::u64, f) +
              bitcast(Type::u64, call(Fn::f64_from_words, {param_u32(1), h})));
  const std::string src = render(k, Dialect::glsl, all_caps())->source;
  const std::string path =
      ::testing::TempDir() + "/ember_kir_" + std::to_string(::getpid()) + ".comp";
  std::ofstream(path) << src;
  const std::string cmd =
      "glslangValidator -V --target-env vulkan1.1 -o /dev/null " + path + " > /dev/null 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << src;
  std::remove(path.c_str());
}

// common.h's kir helpers: the ref cast semantics and strided offsets.
TEST(KirTest, ConvertAndOffsets) {
  Kernel k("convert", 64);
  const Buf a = k.buffer("a", DType::f32, false), b = k.buffer("b", DType::i8, true);
  const Buf c = k.buffer("c", DType::b8, true);
  k.grid_loop("i", param_u32(0), [&](Expr i) {
    const Expr o = codegen::offset_of(k, "o", i, 2, 1);
    const Expr x = k.let("x", k.load(a, o));
    k.store(b, i, codegen::convert(k, DType::f32, DType::i8, x));
    k.store(c, i, codegen::convert(k, DType::f32, DType::b8, x));
  });
  EXPECT_TRUE(k.has_function("ember_sat_i8_f32"));
  const std::string g = render(k, Dialect::glsl, all_caps())->source;
  EXPECT_NE(g.find("int ember_sat_i8_f32(float a0)"), std::string::npos) << g;
  EXPECT_NE(g.find("isnan(a0)"), std::string::npos) << g;
  EXPECT_NE(g.find("(o_r % ember_params[0][3])"), std::string::npos) << g;  // size of dim 1
  EXPECT_EQ(codegen::convert(k, DType::i32, DType::i32, lit(Type::i32, 3)).node().kind,
            Node::literal);  // no-op
  EXPECT_EQ(codegen::convert(k, DType::b8, DType::f32, lit_bool(true)).type(), Type::f32);
}

// Every library function, called in one kernel: defined once each (with what it calls, before
// it), valid GLSL, and unknown names or wrong arguments rejected.
TEST(KirTest, LibraryFunctionsRenderValidGlsl) {
  const char* f64_unary[] = {"exp",  "exp2", "expm1", "log",   "log2",  "log10", "log1p",
                             "sin",  "cos",  "tan",   "atan",  "asin",  "acos",  "sinh",
                             "cosh", "tanh", "asinh", "acosh", "atanh", "erf",   "erfinv"};
  const char* binary[] = {"pow", "atan2", "hypot", "fmod", "floordiv", "remainder", "copysign"};
  Kernel k("library", 64);
  const Buf d = k.buffer("d", DType::f64, true), f = k.buffer("f", DType::f32, true);
  const Buf iv = k.buffer("iv", DType::i64, true);
  const Expr x = k.let("x", k.load(d, lit(Type::u32, 0)));
  const Expr y = k.let("y", k.load(f, lit(Type::u32, 0)));
  Expr acc = k.let("acc", lit(Type::f64, 0));
  for (const char* n : f64_unary)
    k.assign(acc, acc + library_call(k, std::string("ember_") + n + "_f64", {x}));
  for (const char* n : binary)
    k.assign(acc, acc + library_call(k, std::string("ember_") + n + "_f64", {x, x}));
  Expr accf = k.let("accf", y);
  for (const char* n : {"expm1", "log1p"})
    k.assign(accf, accf + library_call(k, std::string("ember_") + n + "_f32", {y}));
  for (const char* n : {"fmod", "floordiv", "remainder", "copysign"})
    k.assign(accf, accf + library_call(k, std::string("ember_") + n + "_f32", {y, y}));
  const Expr i = k.load(iv, lit(Type::u32, 0));
  k.store(iv, lit(Type::u32, 1), library_call(k, "ember_ipow_i64", {i, i}));
  k.store(d, lit(Type::u32, 1), acc);
  k.store(f, lit(Type::u32, 1), accf);
  const size_t n = k.functions().size();
  EXPECT_GE(n, 40u);
  (void)library_call(k, "ember_exp_f64", {x});  // already defined: nothing added
  EXPECT_EQ(k.functions().size(), n);
  EXPECT_NE(message([&] { library_call(k, "ember_nope_f64", {x}); }).find("ember_nope_f64"),
            std::string::npos);
  EXPECT_FALSE(message([&] { library_call(k, "ember_exp_f64", {y}); }).empty());
  const std::string cl = render(k, Dialect::opencl, all_caps())->source;
  EXPECT_NE(cl.find("double ember_exp_f64(double a0)"), std::string::npos) << cl;
  if (std::system("glslangValidator --version > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "glslangValidator not installed";
  const std::string src = render(k, Dialect::glsl, all_caps())->source;
  const std::string path =
      ::testing::TempDir() + "/ember_kirlib_" + std::to_string(::getpid()) + ".comp";
  std::ofstream(path) << src;
  const std::string cmd =
      "glslangValidator -V --target-env vulkan1.1 -o /dev/null " + path + " > /dev/null 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << src;
  std::remove(path.c_str());
}

}  // namespace
}  // namespace ember
