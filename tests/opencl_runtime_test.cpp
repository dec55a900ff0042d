// The OpenCL runtime on the shared GPU stream: devices, dtypes, copies, batching, keep-alive,
// the program caches (memory and disk, corrupt entries rebuilt) and its errors. Skipped, saying
// why, where no OpenCL device exists.
#ifdef EMBER_HAVE_OPENCL
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "backends/opencl/opencl_backend.h"
#include "codegen/kernel.h"
#include "ember/ember.h"
#include "test_util.h"

namespace ember {
namespace {

namespace fs = std::filesystem;

#define EMBER_OPENCL_OR_SKIP(dev)                                               \
  Device dev;                                                                   \
  try {                                                                         \
    dev = Device::opencl(0);                                                    \
  } catch (const Error& e) {                                                    \
    GTEST_SKIP() << "no OpenCL device: " << e.what();                           \
  }

// A kernel writing dst[i] = i * k for i < n, rendered for OpenCL.
std::shared_ptr<const codegen::Kernel> iota_kernel(int salt) {
  codegen::KernelDef d;
  d.name = "test_iota_" + std::to_string(salt);
  d.buffers = {{"dst", DType::f32, true}};
  d.local_size = 64;
  d.body = "for (uint i = GLOBAL_ID; i < P_U(0); i += GLOBAL_SIZE) dst[i] = float(i) * P_F(1) + " +
           std::to_string(salt) + ".0;\n";
  codegen::Caps caps;
  return codegen::render(d, codegen::Dialect::opencl, caps);
}

codegen::Lowering iota(const Tensor& dst, float k, int salt) {
  codegen::Lowering l;
  codegen::Launch la;
  la.kernel = iota_kernel(salt);
  la.bindings = {codegen::Binding{dst, -1}};
  float kf = k;
  uint32_t kw;
  std::memcpy(&kw, &kf, 4);
  la.params = {uint32_t(dst.numel()), kw};
  la.groups = 4;
  l.launches.push_back(la);
  return l;
}

TEST(OpenCLRuntime, ListsDevicesAndTheirDtypes) {
  EMBER_OPENCL_OR_SKIP(dev);
  bool listed = false;
  for (const DeviceInfo& i : available_devices())
    if (i.device == dev) {
      listed = true;
      EXPECT_FALSE(i.name.empty());
      EXPECT_NE(i.details.find("OpenCL"), std::string::npos) << i.details;
    }
  EXPECT_TRUE(listed);
  EXPECT_TRUE(supports_dtype(dev, DType::f32));
  EXPECT_TRUE(supports_dtype(dev, DType::bf16));
  EXPECT_TRUE(supports_dtype(dev, DType::i64));
  EXPECT_EQ(Device::parse("opencl:0"), dev);
  EXPECT_EQ(dev.str(), "opencl:0");
}

TEST(OpenCLRuntime, MissingDeviceIndexIsAnError) {
  EMBER_OPENCL_OR_SKIP(dev);
  try {
    Device::opencl(999);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no such device: opencl:999"), std::string::npos)
        << e.what();
  }
}

TEST(OpenCLRuntime, CopiesRoundTripIncludingEmptyAndOffsets) {
  EMBER_OPENCL_OR_SKIP(dev);
  const std::vector<float> v = {1, 2, 3, 4, 5, 6};
  Tensor t = from_vector<float>(v, {6}, Device::cpu()).to(dev);
  EXPECT_EQ(t.to(Device::cpu()).to_vector<float>(), v);
  EXPECT_EQ(t.slice(0, 2, 5).to(Device::cpu()).to_vector<float>(), (std::vector<float>{3, 4, 5}));
  EXPECT_EQ(zeros({0}, {DType::f32, dev}).to(Device::cpu()).numel(), 0);
  Tensor big = arange(0, 1 << 20, 1, {DType::i64, dev});
  EXPECT_EQ(big.sum().item<int64_t>(), int64_t(1 << 20) * ((1 << 20) - 1) / 2);
}

TEST(OpenCLRuntime, BatchesEveryMaxTasksOpsAndKeepsDroppedTensorsAlive) {
  EMBER_OPENCL_OR_SKIP(dev);
  cl::OpenCLBackend& b = cl::backend(dev.index());
  const int64_t saved = b.max_tasks();
  Tensor keep = zeros({256}, {DType::f32, dev});
  b.sync();
  for (int64_t mt : {1, 3, 1000}) {
    std::vector<Tensor> tmps;
    for (int i = 0; i < 11; ++i) tmps.push_back(zeros({256}, {DType::f32, dev}));
    b.sync();
    b.set_max_tasks(mt);
    const int64_t before = b.submissions();
    for (int i = 0; i < 12; ++i) {
      // The destination of every launch but the last is dropped before its batch ran.
      Tensor dst = i == 11 ? keep : std::move(tmps[size_t(i)]);
      b.run(iota(dst, 2.0f, 1));
    }
    EXPECT_EQ(b.submissions() - before, mt == 1000 ? 0 : 12 / mt) << mt;
    const std::vector<float> got = keep.to(Device::cpu()).to_vector<float>();
    EXPECT_EQ(got[0], 1.0f);
    EXPECT_EQ(got[255], 255 * 2.0f + 1);
  }
  b.set_max_tasks(saved);
}

TEST(OpenCLRuntime, ProgramsAreCachedOnDiskAndCorruptEntriesAreRebuilt) {
  EMBER_OPENCL_OR_SKIP(dev);
  test::TempDir dir("opencl_cache");
  setenv("EMBER_KERNEL_CACHE_DIR", dir.path().c_str(), 1);
  cl::OpenCLBackend& b = cl::backend(dev.index());
  const int salt = int(std::rand() % 100000) + 7;  // a source no earlier run cached
  Tensor t = zeros({256}, {DType::f32, dev});
  const int64_t built = b.programs_built(), loaded = b.programs_loaded();
  b.run(iota(t, 1.0f, salt));
  EXPECT_EQ(b.programs_built(), built + 1);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir.path())) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  // The same source under another in-memory key: loaded from disk.
  auto k = std::make_shared<codegen::Kernel>(*iota_kernel(salt));
  k->key += "-copy";
  codegen::Lowering l = iota(t, 1.0f, salt);
  l.launches[0].kernel = k;
  b.run(l);
  EXPECT_EQ(b.programs_loaded(), loaded + 1);
  // A corrupt entry is rejected and rebuilt (and the results stay right).
  {
    std::fstream f(files[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.write("garbage!", 8);
  }
  k = std::make_shared<codegen::Kernel>(*iota_kernel(salt));
  k->key += "-copy2";
  l.launches[0].kernel = k;
  b.run(l);
  EXPECT_EQ(b.programs_built(), built + 2);
  EXPECT_EQ(t.to(Device::cpu()).to_vector<float>()[3], 3.0f + float(salt));
  unsetenv("EMBER_KERNEL_CACHE_DIR");
}

TEST(OpenCLRuntime, AKernelThatDoesNotBuildNamesItselfAndRecordsNothing) {
  EMBER_OPENCL_OR_SKIP(dev);
  cl::OpenCLBackend& b = cl::backend(dev.index());
  auto k = std::make_shared<codegen::Kernel>(*iota_kernel(3));
  k->name = "broken_kernel";
  k->key = "broken-kernel-key";
  k->source = "__kernel void ember_main(__global float* x) { this is not C; }";
  codegen::Lowering l;
  l.launches.push_back({k, {codegen::Binding{zeros({4}, {DType::f32, dev}), -1}}, {4u}, 1});
  try {
    b.run(l);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kernel broken_kernel does not build"), std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(b.sync());
}

TEST(OpenCLRuntime, MemoryStatsAndEmptyCache) {
  EMBER_OPENCL_OR_SKIP(dev);
  const MemoryStats before = memory_stats(dev);
  {
    Tensor t = zeros({1 << 18}, {DType::f32, dev});
    sync(dev);
    EXPECT_GE(memory_stats(dev).allocated, before.allocated + (1 << 20));
  }
  sync(dev);
  EXPECT_EQ(memory_stats(dev).allocated, before.allocated);
  empty_cache(dev);
  EXPECT_LE(memory_stats(dev).reserved, memory_stats(dev).allocated + 0);
}

TEST(OpenCLRuntime, TrainsAnMlpStepLikeTheCpu) {
  EMBER_OPENCL_OR_SKIP(dev);
  manual_seed(3);
  Tensor x = randn({16, 8}), w = randn({8, 4});
  auto loss_of = [&](const Device& d, Tensor& grad) {
    Tensor wd = w.to(d).requires_grad_();
    Tensor l = nn::functional::cross_entropy(matmul(x.to(d), wd),
                                             remainder(arange(0, 16, 1, {DType::i64, d}), Scalar(4)));
    l.backward();
    grad = wd.grad().to(Device::cpu());
    return l.item<float>();
  };
  Tensor g_cpu, g_cl;
  EXPECT_NEAR(loss_of(Device::cpu(), g_cpu), loss_of(dev, g_cl), 1e-5);
  const std::vector<float> a = g_cpu.to_vector<float>(), b = g_cl.to_vector<float>();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5) << i;
}

}  // namespace
}  // namespace ember
#endif
