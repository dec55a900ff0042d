// The OpenCL C dialect of the kernel generator (src/codegen/kir_render.cpp), without a
// device: every family's kernels for every dtype an OpenCL 1.2 device with cl_khr_fp64 and
// without cl_khr_fp16 supports are rendered and compiled by clang as OpenCL C 1.2 (skipped when
// clang-15 is absent); the rewriting rules and the kernel ABI are checked on small kernels.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

#include "codegen/common.h"
#include "codegen/kernel.h"
#include "codegen/kir.h"
#include "ember/ember.h"
#include "ir/op_traits.h"

namespace ember {
namespace {

using codegen::Caps;
using codegen::Dialect;

Caps opencl_caps() {
  Caps c;
  c.f64 = c.i64 = c.i8 = c.i16 = true;
  c.f16 = false;
  c.max_workgroup_size = 1024;
  c.max_shared_bytes = 32768;
  return c;
}

Tensor t(const Shape& s, DType dt = DType::f32) { return empty(s, {dt, Device::ref()}); }

std::vector<DType> opencl_dtypes() {
  std::vector<DType> v;
  for (DType d : kAllDTypes)
    if (d != DType::f16) v.push_back(d);
  return v;
}

// Views of rank 0..4: contiguous, transposed, broadcast (stride 0) and sliced.
std::vector<Tensor> views(DType dt) {
  std::vector<Tensor> v = {t({}, dt), t({7}, dt), t({4, 3}, dt).t(),
                           t({3, 4, 5}, dt).permute({2, 0, 1}),
                           t({2, 3, 4, 5}, dt).transpose(1, 3)};
  v.push_back(t({5}, dt).expand({3, 5}));
  v.push_back(t({6, 8}, dt).slice(1, 1, 7, 2));
  return v;
}

void elementwise_ops(DType dt, std::vector<ir::Op>& ops) {
  for (const Tensor& src : views(dt)) {
    ops.push_back(ir::Copy{src, t(src.shape(), dt)});
    for (DType to : opencl_dtypes()) ops.push_back(ir::Copy{src, t(src.shape(), to)});
  }
  ops.push_back(ir::Fill{t({3, 4}, dt), Scalar(1.5)});
  for (size_t op = 0; op < ir::kUnaryOpCount; ++op) {
    const auto u = ir::UnaryOp(op);
    const bool pred = ir::traits(u).predicate;
    ops.push_back(ir::Unary{u, t({3, 4}, dt).t(), pred ? t({4, 3}, DType::b8) : t({4, 3}, dt), 0.5,
                            2.0, 1.0});
  }
  for (size_t op = 0; op < ir::kBinaryOpCount; ++op) {
    const auto b = ir::BinaryOp(op);
    const Tensor out = ir::traits(b).predicate ? t({3, 4}, DType::b8) : t({3, 4}, dt);
    ops.push_back(ir::Binary{b, t({3, 4}, dt), t({4}, dt).expand({3, 4}), out});
    ops.push_back(ir::Binary{b, t({2, 3, 4, 5}, dt).transpose(0, 2), t({4, 3, 2, 5}, dt),
                             t({4, 3, 2, 5}, out.dtype())});
  }
  ops.push_back(
      ir::Where{t({3, 4}, DType::b8), t({3, 4}, dt), t({4}, dt).expand({3, 4}), t({3, 4}, dt)});
  for (int dist = 0; dist < 4; ++dist)
    ops.push_back(ir::Random{ir::RandomDist(dist), t({3, 4}, dt), 0, 5, 42, 7});
  ops.push_back(ir::Random{ir::RandomDist::bernoulli, t({3, 4}), 0, 1, 1, 0, t({3, 4}, dt)});
}

void reduce_ops(DType dt, std::vector<ir::Op>& ops) {
  using ir::ReduceOp;
  using ir::ScanOp;
  const Tensor xp = t({3, 4, 5}, dt).permute({2, 0, 1});
  const Tensor big = t({2, 3000}, dt), longer = t({2, 5000}, dt);
  const DType acc = is_floating(dt) ? dt : DType::i64;
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::any, ReduceOp::all, ReduceOp::max,
                      ReduceOp::min}) {
    const bool logical = op == ReduceOp::any || op == ReduceOp::all;
    const bool extreme = op == ReduceOp::max || op == ReduceOp::min;
    const DType out = logical ? DType::b8 : extreme ? dt : acc;
    ops.push_back(ir::Reduce{op, xp, {0, 2}, t({1, 3, 1}, out), {}});
    ops.push_back(ir::Reduce{op, big, {1}, t({2, 1}, out), {}});
    ops.push_back(ir::Reduce{op, t({300}, dt), {0}, t({1}, out), {}});
    ops.push_back(ir::Reduce{op, t({2, 3, 4, 5}, dt), {0, 1, 2, 3}, t({1, 1, 1, 1}, out), {}});
    if (extreme) {
      ops.push_back(ir::Reduce{op, xp, {1}, t({5, 1, 4}, dt), t({5, 1, 4}, DType::i64)});
      ops.push_back(ir::Reduce{op, big, {1}, t({2, 1}, dt), t({2, 1}, DType::i64)});
    }
  }
  for (ScanOp op : {ScanOp::cumsum, ScanOp::cumprod, ScanOp::cummax, ScanOp::cummin}) {
    const bool extreme = op == ScanOp::cummax || op == ScanOp::cummin;
    ops.push_back(ir::Scan{op, xp, 1, t({5, 3, 4}, extreme ? dt : acc),
                           extreme ? t({5, 3, 4}, DType::i64) : Tensor()});
    ops.push_back(ir::Scan{op, longer, 1, t({2, 5000}, extreme ? dt : acc),
                           extreme ? t({2, 5000}, DType::i64) : Tensor()});
  }
  ops.push_back(ir::Scan{ScanOp::cumsum, t({3, 70000}, dt), 1, t({3, 70000}, acc), Tensor()});
  for (bool desc : {false, true}) {
    ops.push_back(ir::Sort{xp, 2, desc, t({5, 3, 4}, dt), t({5, 3, 4}, DType::i64)});
    ops.push_back(ir::Sort{longer, 1, desc, t({2, 5000}, dt), t({2, 5000}, DType::i64)});
    ops.push_back(ir::Sort{t({17000}, dt), 0, desc, t({17000}, dt), t({17000}, DType::i64)});
  }
  ops.push_back(ir::Nonzero{xp, t({7, 3}, DType::i64)});
}

void spatial_ops(DType dt, std::vector<ir::Op>& ops) {
  ops.push_back(ir::Gather{t({4, 5}, dt), 0, t({3, 5}, DType::i64), t({3, 5}, dt)});
  ops.push_back(ir::Gather{t({2, 4, 3}, dt), 1, t({2, 6, 2}, DType::i64), t({2, 6, 2}, dt)});
  ops.push_back(ir::IndexSelect{t({3, 5}, dt), 1, t({7}, DType::i64), t({3, 7}, dt)});
  ops.push_back(ir::IndexSelect{t({3, 5}, dt).t(), 0, t({7}, DType::i32), t({7, 3}, dt)});
  for (int r = 0; r < 6; ++r)
    for (bool self : {true, false}) {
      if (r == int(ir::ScatterReduce::mean) && dt == DType::b8) continue;
      ops.push_back(ir::Scatter{t({4, 5}, dt), 0, t({6, 5}, DType::i64), t({6, 5}, dt),
                                ir::ScatterReduce(r), self});
    }
  ops.push_back(ir::IndexAdd{t({4, 3}, dt), 0, t({6}, DType::i64), t({6, 3}, dt), Scalar(2)});
  if (dt != DType::b8) {
    ops.push_back(ir::Matmul{t({2, 3, 4}, dt), t({2, 4, 5}, dt), t({2, 3, 5}, dt)});
    ops.push_back(ir::Matmul{t({1, 64, 40}, dt), t({1, 40, 48}, dt), t({1, 64, 48}, dt)});
    ops.push_back(ir::Matmul{t({1, 40, 64}, dt).transpose(1, 2), t({1, 48, 40}, dt).transpose(1, 2),
                             t({1, 64, 48}, dt)});
    ops.push_back(
        ir::Matmul{t({3, 70, 33}, dt), t({1, 33, 65}, dt).expand({3, 33, 65}), t({3, 70, 65}, dt)});
  }
  for (int nd = 1; nd <= 3; ++nd) {
    Shape img{2, 3}, out{2, 3};
    std::vector<int64_t> k, s, p, dil;
    for (int q = 0; q < nd; ++q) {
      img.push_back(5);
      out.push_back(3);
      k.push_back(2);
      s.push_back(2);
      p.push_back(1);
      dil.push_back(1);
    }
    const int64_t l = nd == 1 ? 3 : nd == 2 ? 9 : 27, kp = nd == 1 ? 2 : nd == 2 ? 4 : 8;
    ops.push_back(ir::Im2col{t(img, dt), t({2, 3 * kp, l}, dt), k, s, p, dil, Scalar(1.5)});
    ops.push_back(ir::Col2im{t({2, 3 * kp, l}, dt), t(img, dt), k, s, p, dil});
    ops.push_back(ir::AdaptivePool{true, t(img, dt), t(out, dt), t(out, DType::i64)});
    ops.push_back(ir::AdaptivePool{true, t(img, dt), t(out, dt), Tensor()});
    ops.push_back(ir::AdaptivePool{false, t(img, dt), t(out, dt), Tensor()});
    for (auto m : {ir::InterpMode::nearest, ir::InterpMode::nearest_exact, ir::InterpMode::linear,
                   ir::InterpMode::cubic}) {
      const bool weighted = m == ir::InterpMode::linear || m == ir::InterpMode::cubic;
      if (weighted && !is_floating(dt)) continue;
      if (m == ir::InterpMode::cubic && nd == 3) continue;
      for (bool align : {false, true}) {
        if (!weighted && align) continue;
        ops.push_back(ir::Interpolate{m, align, {}, t(img, dt), t(out, dt)});
      }
    }
  }
}

// Every distinct OpenCL kernel of the broad op set (lowerings a dtype cannot take are skipped:
// the GLSL tests check which those are).
std::map<std::string, std::string> all_opencl_kernels(size_t& lowered, std::string& errors) {
  const Caps caps = opencl_caps();
  std::map<std::string, std::string> ks;
  for (DType dt : opencl_dtypes()) {
    std::vector<ir::Op> ops;
    elementwise_ops(dt, ops);
    reduce_ops(dt, ops);
    spatial_ops(dt, ops);
    // Caps::cpu picks other matmul tiles and im2col/col2im index math: both variants
    const size_t n_cpu = ops.size();
    spatial_ops(dt, ops);
    for (size_t i = 0; i < ops.size(); ++i) {
      const ir::Op& op = ops[i];
      Caps c = caps;
      c.cpu = i >= n_cpu;
      try {
        const codegen::Lowering l = codegen::lower(op, Dialect::opencl, c);
        ++lowered;
        for (const auto& la : l.launches) {
          EXPECT_EQ(la.kernel->dialect, Dialect::opencl);
          ks[la.kernel->name + "_" + la.kernel->key] = la.kernel->source;
        }
      } catch (const Error& e) {
        // an op that refuses the dtype in GLSL too is not the dialect's concern
        try {
          codegen::lower(op, Dialect::glsl, c);
          errors += std::string(ir::name(op)) + " " + dtype_name(dt) + ": " + e.what() + "\n";
        } catch (const Error&) {
        }
      }
    }
  }
  return ks;
}

const char* kClang = "/usr/bin/clang-15";

// Compiles every source as OpenCL C 1.2 (two processes at a time); "" or the first failures.
std::string compile_all(const std::map<std::string, std::string>& sources) {
  char tmpl[] = "/tmp/ember_opencl_XXXXXX";
  const char* dir = mkdtemp(tmpl);
  if (!dir) return "cannot create a temp dir";
  const std::string d = dir;
  // clang takes ~0.1 s a kernel: every 4th by default, all with EMBER_VALIDATE_ALL_KERNELS=1
  // (all passed when this test was written)
  const bool all = std::getenv("EMBER_VALIDATE_ALL_KERNELS") != nullptr;
  size_t index = 0, written = 0;
  for (const auto& [name, src] : sources) {
    if (!all && index++ % 4 != 0) continue;
    std::ofstream(d + "/" + name + ".cl") << src;
    ++written;
  }
  const std::string cmd =
      "cd " + d + " && ls *.cl | xargs -P 2 -n 32 sh -c 'for f; do " + kClang +
      " -x cl -cl-std=CL1.2 -Xclang -finclude-default-header -Werror=implicit-function-declaration"
      " -Werror -Wno-unused-value -fsyntax-only $f > $f.log 2>&1 || echo $f >> failed.txt; done' _";
  std::system(cmd.c_str());
  std::string failures;
  std::ifstream failed(d + "/failed.txt");
  std::string file;
  int n = 0;
  while (std::getline(failed, file)) {
    if (++n > 4) continue;
    std::ifstream log(d + "/" + file + ".log");
    std::ifstream src(d + "/" + file);
    failures +=
        file + ":\n" +
        std::string((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>())
            .substr(0, 3000) +
        std::string((std::istreambuf_iterator<char>(src)), std::istreambuf_iterator<char>()) + "\n";
  }
  if (n) failures += std::to_string(n) + " of " + std::to_string(written) + " failed\n";
  if (!std::getenv("EMBER_KEEP_OPENCL_KERNELS")) std::system(("rm -rf " + d).c_str());
  return failures;
}

TEST(CodegenOpenclTest, EveryKernelCompilesAsOpenclC12) {
  size_t lowered = 0;
  std::string errors;
  const auto ks = all_opencl_kernels(lowered, errors);
  EXPECT_EQ(errors, "") << "ops that lower for GLSL but not for OpenCL";
  EXPECT_GT(ks.size(), 1000u);
  if (std::system((std::string(kClang) + " --version > /dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP() << "clang-15 not installed: rendered " << ks.size()
                 << " OpenCL kernels, compilation skipped";
  EXPECT_EQ(compile_all(ks), "");
}

// A kernel using shared memory, a barrier, a helper function, an f64 param and bool storage.
codegen::kir::Kernel small_kernel() {
  using namespace codegen::kir;
  Kernel k("probe", 64);
  const Buf src = k.buffer("src", DType::f32, false), dst = k.buffer("dst", DType::f64, true);
  const Buf flag = k.buffer("flag", DType::b8, true);
  const Shared tile = k.shared("tile", Type::f32, 64);
  // Reserved names: "half" is OpenCL C's type, "min" a built-in, "out" a GLSL keyword.
  const Function twice = k.function("min", Type::f64, {Type::f64},
                                    [&](const std::vector<Expr>& a) { k.ret(a[0] * 2); });
  const Expr half = k.let("half", k.load(src, global_id()) * 0.5);
  k.let("out", call(Fn::min, {half, lit(Type::f32, 1)}));
  k.let("ember_params", lit(Type::u32, 3));
  k.store(tile, local_id(), half);
  k.barrier();
  k.store(dst, lit(Type::u32, 0),
          k.call(twice, {param_f64(0)}) +
              cast(Type::f64, cast(Type::i32, k.load(tile, lit(Type::u32, 0)))));
  k.store(flag, lit(Type::u32, 0), call(Fn::isnan, {half}));
  return k;
}

TEST(CodegenOpenclTest, KernelAbiCastsLiteralsHelpersAndShared) {
  const Caps caps = opencl_caps();
  const auto k = codegen::kir::render(small_kernel(), Dialect::opencl, caps);
  const std::string& s = k->source;
  EXPECT_NE(s.find("#pragma OPENCL EXTENSION cl_khr_fp64 : enable"), std::string::npos);
  EXPECT_NE(s.find("__kernel __attribute__((reqd_work_group_size(64, 1, 1)))\nvoid ember_main("
                   "__global const float* restrict src, __global double* restrict dst, __global "
                   "uchar* restrict flag, __global const uint* ember_params, uint "
                   "ember_params_off)"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("__local float tile[64];"), std::string::npos) << s;
  EXPECT_NE(s.find("double min_2(double a0)"), std::string::npos) << s;
  EXPECT_NE(s.find("float half_2 = (src[((uint)get_global_id(0))] * 5.000000000e-01f);"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("float out_2 = min(half_2, 1.000000000e+00f);"), std::string::npos) << s;
  EXPECT_NE(s.find("uint ember_params_2 = 3u;"), std::string::npos) << s;
  EXPECT_NE(s.find("barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"), std::string::npos) << s;
  EXPECT_EQ(k->build_options, "-cl-std=CL1.2");
  EXPECT_EQ(k->buffers.size(), 3u);
  // The GLSL rendering of the same kernel: no OpenCL C in it.
  const auto g = codegen::kir::render(small_kernel(), Dialect::glsl, caps);
  EXPECT_EQ(g->source.find("__kernel"), std::string::npos);
  EXPECT_NE(g->source.find("shared float tile[64];"), std::string::npos) << g->source;
  EXPECT_EQ(g->build_options, "");
  if (std::system((std::string(kClang) + " --version > /dev/null 2>&1").c_str()) == 0)
    EXPECT_EQ(compile_all({{"probe", s}}), "");
  if (std::system("glslangValidator --version > /dev/null 2>&1") == 0) {
    char tmpl[] = "/tmp/ember_probe_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    const std::string path = std::string(tmpl) + "/probe.comp";
    std::ofstream(path) << g->source;
    const std::string cmd =
        "glslangValidator -V --target-env vulkan1.1 -o /dev/null " + path + " > /dev/null 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << g->source;
    std::system(("rm -rf " + std::string(tmpl)).c_str());
  }
}

TEST(CodegenOpenclTest, Float16IsRefusedWithoutTheCap) {
  EXPECT_THROW(codegen::lower(ir::Unary{ir::UnaryOp::exp, t({2}, DType::f16), t({2}, DType::f16)},
                              Dialect::opencl, opencl_caps()),
               Error);
}

}  // namespace
}  // namespace ember
