// The OpenCL runtime (src/backends/opencl): devices, memory, batching, keep-alive, the program
// cache, build errors and CLBlast's matmul. Kernels here are hand-written OpenCL C in the ABI the
// renderer emits (ember_main(buffers..., ember_params, ember_params_off)), so these tests do not
// depend on the renderer. Skipped with the reason when Ember was built without OpenCL or the
// machine has no OpenCL device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "ember/ember.h"

#ifdef EMBER_HAVE_OPENCL
#include <filesystem>

#include "backends/opencl/opencl_backend.h"
#include "test_util.h"
#endif

namespace ember {
namespace {

#ifndef EMBER_HAVE_OPENCL
TEST(OpenCLRuntime, NotBuilt) {
  EXPECT_THROW(Device::opencl(0), Error);
  GTEST_SKIP() << "Ember was built without EMBER_BACKEND_OPENCL";
}
#else

namespace fs = std::filesystem;
using test::EnvGuard;

// dst[off_d + i] = a[off_a + i] * scale + 1 for i < n; params: n, off_a, off_d, scale bits.
std::shared_ptr<codegen::Kernel> axpb_kernel(const std::string& name = "test_axpb",
                                             const std::string& extra = "") {
  auto k = std::make_shared<codegen::Kernel>();
  k->name = name;
  k->dialect = codegen::Dialect::opencl;
  k->buffers = {{"a", DType::f32, false}, {"dst", DType::f32, true}};
  k->local_size = 64;
  k->source =
      "__kernel void ember_main(__global const float* restrict a, __global float* restrict dst,\n"
      "    __global const uint* ember_params, uint ember_params_off) {\n"
      "  __global const uint* p = ember_params + ember_params_off;\n" +
      extra +
      "  for (uint i = get_global_id(0); i < p[0]; i += get_global_size(0))\n"
      "    dst[p[2] + i] = a[p[1] + i] * as_float(p[3]) + 1.0f;\n}\n";
  k->key = name + std::to_string(std::hash<std::string>()(k->source));
  return k;
}

codegen::Launch axpb(const std::shared_ptr<codegen::Kernel>& k, const Tensor& a, const Tensor& dst,
                     float scale) {
  codegen::Launch l;
  l.kernel = k;
  l.bindings = {{a, -1}, {dst, -1}};
  uint32_t bits;
  std::memcpy(&bits, &scale, 4);
  l.params = {uint32_t(dst.numel()), uint32_t(a.offset()), uint32_t(dst.offset()), bits};
  l.groups = 4;
  return l;
}

Tensor on(const std::vector<float>& v, const Device& d) {
  return from_vector<float>(v, {int64_t(v.size())}, d);
}

TEST(OpenCLRuntime, DevicesAreListedWithInfo) {
  EMBER_OPENCL_OR_SKIP(dev);
  const auto all = cl::devices();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all[0], Device::opencl(0));
  EXPECT_EQ(Device::parse("opencl:0"), dev);
  const DeviceInfo i = cl::backend(0).info();
  EXPECT_FALSE(i.name.empty());
  EXPECT_TRUE(i.kind == "Cpu" || i.kind == "DiscreteGpu" || i.kind == "IntegratedGpu") << i.kind;
  EXPECT_NE(i.details.find("OpenCL"), std::string::npos) << i.details;
}

TEST(OpenCLRuntime, BadIndexNamesTheDevice) {
  try {
    Device::opencl(99);
    FAIL() << "opencl:99 resolved";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("opencl:99 names no OpenCL device"), std::string::npos)
        << e.what();
  }
}

TEST(OpenCLRuntime, SupportsDtypesFromExtensions) {
  EMBER_OPENCL_OR_SKIP(dev);
  for (DType t : {DType::f32, DType::i32, DType::u32, DType::b8, DType::i8, DType::u8, DType::i16,
                  DType::u16, DType::bf16, DType::i64, DType::u64})
    EXPECT_TRUE(supports_dtype(dev, t)) << dtype_name(t);
  // f16 / f64 follow cl_khr_fp16 / cl_khr_fp64 (PoCL: fp64, no fp16); info() lists the same.
  const auto dtypes = cl::backend(0).info().dtypes;
  for (DType t : {DType::f16, DType::f64})
    EXPECT_EQ(supports_dtype(dev, t), std::find(dtypes.begin(), dtypes.end(), t) != dtypes.end())
        << dtype_name(t);
  if (cl::backend(0).info().name.find("pthread") != std::string::npos ||
      cl::backend(0).info().name.find("cpu") != std::string::npos) {
    EXPECT_TRUE(supports_dtype(dev, DType::f64));  // PoCL's CPU device
    EXPECT_FALSE(supports_dtype(dev, DType::f16));
  }
}

TEST(OpenCLRuntime, WriteReadRoundTripWithOffsetsAndZeroBytes) {
  EMBER_OPENCL_OR_SKIP(dev);
  Backend& b = cl::backend(0);
  void* buf = b.allocate(64);
  const float in[4] = {1, 2, 3, 4};
  b.write(buf, 16, in, 16);
  float out[4] = {0, 0, 0, 0};
  b.read(buf, 16, out, 16);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], in[i]);
  b.read(buf, 20, out, 4);
  EXPECT_EQ(out[0], 2.0f);
  b.write(buf, 0, in, 0);
  b.read(buf, 0, out, 0);
  b.deallocate(buf, 64);
  void* zero = b.allocate(0);
  EXPECT_NE(zero, nullptr);
  b.deallocate(zero, 0);
  const Tensor t = on({5, 6, 7}, dev);
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{5, 6, 7}));
}

TEST(OpenCLRuntime, BatchesSubmitEveryMaxTasks) {
  EMBER_OPENCL_OR_SKIP(dev);
  auto& b = cl::backend(0);
  b.sync();
  const int64_t old = b.max_tasks();
  b.set_max_tasks(3);
  const Tensor a = on({1, 2, 3, 4}, dev), d = empty({4}, {DType::f32, dev});
  const int64_t before = b.submissions();
  codegen::Lowering l;
  l.launches = {axpb(axpb_kernel(), a, d, 2.0f)};
  for (int i = 0; i < 7; ++i) b.run(l);
  EXPECT_EQ(b.submissions() - before, 2);
  EXPECT_EQ(d.to_vector<float>(), (std::vector<float>{3, 5, 7, 9}));
  EXPECT_EQ(b.submissions() - before, 3);  // the read submitted the 7th
  b.set_max_tasks(old);
}

TEST(OpenCLRuntime, TensorDroppedBeforeItsBatchRanIsKeptAlive) {
  EMBER_OPENCL_OR_SKIP(dev);
  auto& b = cl::backend(0);
  const Tensor d = empty({256}, {DType::f32, dev});
  {
    std::vector<float> v(256);
    for (int i = 0; i < 256; ++i) v[size_t(i)] = float(i);
    Tensor a = on(v, dev);
    codegen::Lowering l;
    l.launches = {axpb(axpb_kernel(), a, d, 3.0f)};
    b.run(l);
  }  // `a` dropped: the batch keeps its storage until it retired
  for (int i = 0; i < 8; ++i) (void)on(std::vector<float>(256, -1.0f), dev);  // reuse pressure
  const auto out = d.to_vector<float>();
  for (int i = 0; i < 256; ++i) ASSERT_EQ(out[size_t(i)], 3.0f * float(i) + 1.0f) << i;
}

TEST(OpenCLRuntime, ParamsOfManyLaunchesInOneBatchStayApart) {
  EMBER_OPENCL_OR_SKIP(dev);
  auto& b = cl::backend(0);
  const Tensor a = on({1, 1, 1, 1}, dev);
  std::vector<Tensor> outs;
  for (int i = 0; i < 10; ++i) {
    outs.push_back(empty({4}, {DType::f32, dev}));
    codegen::Lowering l;
    l.launches = {axpb(axpb_kernel(), a, outs.back(), float(i))};
    b.run(l);
  }
  for (int i = 0; i < 10; ++i) EXPECT_EQ(outs[size_t(i)].to_vector<float>()[3], float(i) + 1.0f);
}

// Builds `k` on a fresh backend of opencl:0, as another process would (empty memory cache).
void build_on_fresh(const codegen::Kernel& k, cl::ProgramStats& st) {
  auto fresh = cl::make_backend(0);
  fresh->compile(k);
  st = fresh->program_stats();
}

TEST(OpenCLRuntime, DiskCacheIsReusedAndCorruptEntriesRebuilt) {
  EMBER_OPENCL_OR_SKIP(dev);
  test::TempDir dir("opencl_cache");
  EnvGuard env("EMBER_KERNEL_CACHE_DIR", dir.path().c_str());
  const auto k = axpb_kernel("test_cached", "  // " + dir.path() + "\n");
  cl::ProgramStats st;
  build_on_fresh(*k, st);
  EXPECT_EQ(st.compiled, 1);
  EXPECT_EQ(st.loaded_from_disk, 0);
  const auto files = test::list_dir(dir.path());
  ASSERT_EQ(files.size(), 1u);
  build_on_fresh(*k, st);  // "another process": the binary from disk
  EXPECT_EQ(st.compiled, 0);
  EXPECT_EQ(st.loaded_from_disk, 1);
  // A corrupted entry is rejected and rebuilt (then valid again).
  const std::string path = dir / files[0];
  std::string bytes = test::read_bytes(path);
  ASSERT_GT(bytes.size(), 40u);
  bytes[bytes.size() / 2] ^= 0x5a;
  test::write_bytes(path, bytes);
  build_on_fresh(*k, st);
  EXPECT_EQ(st.compiled, 1);
  EXPECT_EQ(st.loaded_from_disk, 0);
  test::write_bytes(path, "not a cache file");
  build_on_fresh(*k, st);
  EXPECT_EQ(st.compiled, 1);
  build_on_fresh(*k, st);
  EXPECT_EQ(st.loaded_from_disk, 1);
}

TEST(OpenCLRuntime, KernelWithSyntaxErrorNamesIt) {
  EMBER_OPENCL_OR_SKIP(dev);
  auto k = axpb_kernel("test_broken", "  this is not C;\n");
  const Tensor a = on({1, 2}, dev), d = empty({2}, {DType::f32, dev});
  codegen::Lowering l;
  l.launches = {axpb(k, a, d, 1.0f)};
  try {
    cl::backend(0).run(l);
    FAIL() << "a broken kernel built";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("kernel test_broken does not build"), std::string::npos) << m;
    EXPECT_NE(m.find("CL_BUILD_PROGRAM_FAILURE"), std::string::npos) << m;
  }
  // The device stays usable.
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{1, 2}));
}

Tensor random_on(const Shape& s, const Device& d, uint64_t seed) {
  manual_seed(seed);
  return randn(s).to(d);
}

void expect_matmul_matches_ref(const Device& dev) {
  const Tensor a = random_on({3, 17, 9}, Device::ref(), 1),
               b = random_on({3, 9, 13}, Device::ref(), 2);
  const Tensor want = matmul(a, b);
  const Tensor got = matmul(a.to(dev), b.to(dev)).to(Device::ref());
  test::expect_near(got, test::d(want), 1e-4);
  // A transposed 2-d operand.
  const Tensor c = random_on({11, 7}, Device::ref(), 3), e = random_on({11, 5}, Device::ref(), 4);
  const Tensor want2 = matmul(c.transpose(0, 1), e);
  const Tensor got2 = matmul(c.to(dev).transpose(0, 1), e.to(dev)).to(Device::ref());
  test::expect_near(got2, test::d(want2), 1e-4);
}

TEST(OpenCLRuntime, ClblastMatmulEqualsRef) {
  EMBER_OPENCL_OR_SKIP(dev);
  auto& b = cl::backend(0);
  if (!b.clblast_enabled()) GTEST_SKIP() << "libclblast.so.1 not found (or EMBER_OPENCL_CLBLAST=0)";
  const int64_t before = b.clblast_calls();
  expect_matmul_matches_ref(dev);
  EXPECT_EQ(b.clblast_calls() - before, 2);
}

TEST(OpenCLRuntime, GeneratedMatmulEqualsRef) {
  EMBER_OPENCL_OR_SKIP(dev);
  EnvGuard off("EMBER_OPENCL_CLBLAST", "0");  // read at every matmul
  auto& b = cl::backend(0);
  EXPECT_FALSE(b.clblast_enabled());
  const int64_t before = b.clblast_calls();
  expect_matmul_matches_ref(dev);
  EXPECT_EQ(b.clblast_calls(), before);
}
#endif

}  // namespace
}  // namespace ember
