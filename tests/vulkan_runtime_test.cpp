// The Vulkan runtime (src/backends/vulkan): device selection, memory, batching, the kernel cache,
// interop and errors. Kernels here are hand-written GLSL, so these tests do not depend on the
// kernel generator. Skipped with the reason when Ember was built without Vulkan or the machine
// has no Vulkan device. The Khronos validation layer is on (EMBER_VULKAN_VALIDATION=1 unless set).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "ember/ember.h"

#ifdef EMBER_HAVE_VULKAN
#include <filesystem>
#include <fstream>

#include "backends/vulkan/instance.h"
#include "backends/vulkan/vulkan_backend.h"
#include "ember/vulkan.h"
#include "test_util.h"
#endif

namespace ember {
namespace {

// Before any test creates the instance: every Vulkan test in this binary (the op table too) runs
// under the validation layer, and a validation error fails the op that caused it.
const int kValidationOn = setenv("EMBER_VULKAN_VALIDATION", "1", 0);

#ifndef EMBER_HAVE_VULKAN
TEST(VulkanRuntime, NotBuilt) {
  (void)kValidationOn;
  EXPECT_THROW(Device::vulkan(), Error);
  GTEST_SKIP() << "Ember was built without EMBER_BACKEND_VULKAN";
}
#else

namespace fs = std::filesystem;
using test::EnvGuard;

// The first usable adapter, or the reason there is none.

std::shared_ptr<codegen::Kernel> glsl_kernel(const std::string& name, const std::string& body,
                                             std::vector<codegen::BufferDecl> buffers) {
  auto k = std::make_shared<codegen::Kernel>();
  k->name = name;
  k->dialect = codegen::Dialect::glsl;
  k->buffers = std::move(buffers);
  k->local_size = 64;
  std::string s = "#version 450\nlayout(local_size_x = 64) in;\n";
  for (size_t i = 0; i < k->buffers.size(); ++i)
    s += "layout(std430, set = 0, binding = " + std::to_string(i) + ") buffer B" +
         std::to_string(i) + " { float " + k->buffers[i].name + "[]; };\n";
  // The params block is a uniform buffer of codegen::kParamsBytes (kernel.h); the body reads
  // its first 16 words as params[].
  s += "layout(std140, set = 0, binding = " + std::to_string(k->buffers.size()) +
       ") uniform P { uvec4 params_v[" + std::to_string(codegen::kParamsBytes / 16) + "]; };\n";
  s += "void main() {\nuint params[16];\n"
       "for (int i = 0; i < 16; ++i) params[i] = params_v[i >> 2][i & 3];\n" +
       body + "\n}\n";
  k->source = s;
  k->key = std::to_string(std::hash<std::string>()(s));
  return k;
}

// dst[off_d + i] = a[off_a + i] * scale + 1 for i < n; params: n, off_a, off_d, scale bits.
std::shared_ptr<codegen::Kernel> axpb_kernel() {
  static auto k =
      glsl_kernel("test_axpb",
                  "uint n = params[0];\n"
                  "for (uint i = gl_GlobalInvocationID.x; i < n; i += 64u * "
                  "gl_NumWorkGroups.x)\n"
                  "  dst[params[2] + i] = a[params[1] + i] * uintBitsToFloat(params[3]) "
                  "+ 1.0;",
                  {{"a", DType::f32, false}, {"dst", DType::f32, true}});
  return k;
}

codegen::Launch axpb(const Tensor& a, const Tensor& dst, float scale) {
  codegen::Launch l;
  l.kernel = axpb_kernel();
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

TEST(VulkanRuntime, DefaultDeviceFollowsKindOrder) {
  EMBER_VULKAN_OR_SKIP(dev);
  const std::vector<std::string> order = {"DiscreteGpu", "IntegratedGpu", "VirtualGpu", "Cpu"};
  std::vector<std::string> kinds;
  for (const Device& d : vk::devices()) kinds.push_back(vk::backend(d.index()).info().kind);
  std::string best;
  for (const auto& k : order)
    if (best.empty() && std::find(kinds.begin(), kinds.end(), k) != kinds.end()) best = k;
  EXPECT_EQ(vk::backend(dev.index()).info().kind, best);
  EXPECT_EQ(Device::vulkan(DeviceKind::DefaultDevice()), dev);
  EXPECT_EQ(dev.type(), DeviceType::vulkan);
  EXPECT_EQ(dev.str(), "vulkan:" + std::to_string(dev.index()));
  EXPECT_EQ(Device::parse(dev.str()), dev);
  EXPECT_EQ(Device::parse("vulkan"), dev);
  // The index past the last adapter of a kind is an error that lists the adapters.
  try {
    Device::vulkan(DeviceKind::DiscreteGpu(64));
    FAIL() << "DiscreteGpu(64) resolved";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no Vulkan adapter DiscreteGpu(64)"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(Device::vulkan(DeviceKind::Existing(12345)), Error);
  EXPECT_THROW(Device::parse("vulkan:999"), Error);
  EXPECT_THROW(Device::parse("vulkan:Gpu(0)"), Error);
  // available_devices() lists every adapter after cpu and ref.
  int64_t listed = 0;
  for (const auto& info : available_devices())
    if (info.device.type() == DeviceType::vulkan) {
      ++listed;
      EXPECT_FALSE(info.name.empty());
      EXPECT_NE(std::find(info.dtypes.begin(), info.dtypes.end(), DType::f32), info.dtypes.end());
    }
  EXPECT_EQ(listed, int64_t(vk::devices().size()));
}

TEST(VulkanRuntime, EnvDefaultDeviceUsesDeviceKindSpelling) {
  EMBER_VULKAN_OR_SKIP(dev);
  const std::string kind = vk::backend(dev.index()).info().kind;
  {
    EnvGuard g("EMBER_VULKAN_DEFAULT_DEVICE", kind == "Cpu" ? "Cpu" : (kind + "(0)").c_str());
    EXPECT_EQ(Device::vulkan(), dev);
  }
  {
    EnvGuard g("EMBER_VULKAN_DEFAULT_DEVICE", "VirtualGpu(9)");
    EXPECT_THROW(Device::vulkan(), Error);
  }
  {
    EnvGuard g("EMBER_VULKAN_DEFAULT_DEVICE", "Bogus(1)");
    try {
      Device::vulkan();
      FAIL() << "Bogus(1) parsed";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("unknown device kind"), std::string::npos);
    }
  }
  EXPECT_EQ(Device::vulkan(), dev);
}

TEST(VulkanRuntime, WriteReadRoundTripsEveryDType) {
  EMBER_VULKAN_OR_SKIP(dev);
  for (DType t : kAllDTypes) {
    if (!supports_dtype(dev, t)) continue;
    Tensor host = remainder(arange(0, 1000, 1, {DType::f64, Device::ref()}), 7).to(t);
    Tensor v = host.to(dev);
    EXPECT_EQ(v.device(), dev);
    EXPECT_EQ(v.to(Device::ref()).to_vector<double>(), host.to_vector<double>()) << dtype_name(t);
  }
  // Raw reads and writes at byte offsets.
  vk::VulkanBackend& b = vk::backend(dev.index());
  void* buf = b.allocate(4096);
  std::vector<uint8_t> in(4096), out(100);
  for (size_t i = 0; i < in.size(); ++i) in[i] = uint8_t(i * 7);
  b.write(buf, 0, in.data(), 4096);
  b.write(buf, 17, in.data() + 1000, 50);
  b.read(buf, 10, out.data(), 100);
  for (size_t i = 0; i < 100; ++i) {
    const size_t at = 10 + i;
    EXPECT_EQ(out[i], at >= 17 && at < 67 ? in[1000 + at - 17] : in[at]) << at;
  }
  EXPECT_THROW(b.read(buf, 4000, out.data(), 100), Error);
  b.deallocate(buf, 4096);
}

TEST(VulkanRuntime, RawKernelSeesOffsetsAndParams) {
  EMBER_VULKAN_OR_SKIP(dev);
  vk::VulkanBackend& b = vk::backend(dev.index());
  Tensor a = on({1, 2, 3, 4, 5, 6, 7, 8}, dev);
  Tensor d = on(std::vector<float>(8, -1), dev);
  codegen::Lowering l;
  l.launches.push_back(axpb(a.narrow(0, 2, 5), d.narrow(0, 1, 5), 2.0f));
  b.run(l);
  EXPECT_EQ(d.to_vector<float>(), (std::vector<float>{-1, 7, 9, 11, 13, 15, -1, -1}));
}

TEST(VulkanRuntime, ScratchBuffersCarryDataBetweenLaunches) {
  EMBER_VULKAN_OR_SKIP(dev);
  vk::VulkanBackend& b = vk::backend(dev.index());
  Tensor a = on({1, 2, 3, 4}, dev);
  Tensor d = on({0, 0, 0, 0}, dev);
  auto k = glsl_kernel(
      "test_copy",
      "for (uint i = gl_GlobalInvocationID.x; i < params[0]; i += 64u) dst[i] = src[i] * 10.0;",
      {{"src", DType::f32, false}, {"dst", DType::f32, true}});
  codegen::Lowering l;
  l.scratch_bytes = {16};
  l.launches.push_back({k, {{a, -1}, {Tensor(), 0}}, {4}, 1});
  l.launches.push_back({k, {{Tensor(), 0}, {d, -1}}, {4}, 1});
  b.run(l);
  EXPECT_EQ(d.to_vector<float>(), (std::vector<float>{100, 200, 300, 400}));
}

TEST(VulkanRuntime, MaxTasksBatchingGivesTheSameResults) {
  EMBER_VULKAN_OR_SKIP(dev);
  vk::VulkanBackend& b = vk::backend(dev.index());
  const int64_t saved = b.max_tasks();
  std::vector<std::vector<float> > results;
  for (int64_t mt : {1, 3, 1000}) {
    b.sync();
    b.set_max_tasks(mt);
    const int64_t before = b.submissions();
    Tensor x = on({0.5f, 1, 2, -3}, dev);
    Tensor y = on({0, 0, 0, 0}, dev);
    for (int i = 0; i < 12; ++i) {
      codegen::Lowering l;
      l.launches.push_back(i % 2 ? axpb(y, x, 0.5f) : axpb(x, y, 3.0f));
      b.run(l);
    }
    // Ops are submitted every max_tasks (x is written by op 12, so nothing is left over for 1/3).
    EXPECT_EQ(b.submissions() - before, mt == 1000 ? 0 : 12 / mt) << mt;
    results.push_back(x.to_vector<float>());
  }
  b.set_max_tasks(saved);
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[0], results[2]);
  // x -> 3x + 1 -> 1.5x + 1.5, six times, from 0.5.
  double v = 0.5;
  for (int i = 0; i < 6; ++i) v = (3 * v + 1) * 0.5 + 1;
  EXPECT_FLOAT_EQ(results[0][0], float(v));
}

TEST(VulkanRuntime, KernelCacheInMemoryAndOnDiskRebuildsCorruptEntries) {
  EMBER_VULKAN_OR_SKIP(dev);
  vk::VulkanBackend& b = vk::backend(dev.index());
  b.sync();
  const fs::path dir = fs::temp_directory_path() / ("ember-kcache-" + std::to_string(getpid()));
  const fs::path dump = dir / "dump";
  fs::remove_all(dir);
  EnvGuard g1("EMBER_KERNEL_CACHE_DIR", (dir / "k").c_str());
  EnvGuard g2("EMBER_DEBUG_KERNELS", dump.c_str());
  auto k = glsl_kernel("test_cache", "dst[0] = src[0] + 41.0;",
                       {{"src", DType::f32, false}, {"dst", DType::f32, true}});
  {
    vk::PipelineCache c(b.context());
    c.get(*k);
    c.get(*k);
    EXPECT_EQ(c.stats().compiled, 1);
    EXPECT_EQ(c.stats().memory_hits, 1);
    EXPECT_EQ(c.stats().loaded_from_disk, 0);
  }
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(dir / "k")) entries.push_back(e.path());
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].extension(), ".spv");
  {
    vk::PipelineCache c(b.context());
    c.get(*k);
    EXPECT_EQ(c.stats().compiled, 0);
    EXPECT_EQ(c.stats().loaded_from_disk, 1);
  }
  // Corrupt: flip a byte of the SPIR-V, then truncate; each time the entry is rebuilt.
  for (int mode = 0; mode < 2; ++mode) {
    if (mode == 0) {
      std::fstream f(entries[0], std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(60);
      f.put('\x5a');
    } else {
      fs::resize_file(entries[0], 20);
    }
    vk::PipelineCache c(b.context());
    c.get(*k);
    EXPECT_EQ(c.stats().compiled, 1) << mode;
    EXPECT_EQ(c.stats().loaded_from_disk, 0) << mode;
    vk::PipelineCache again(b.context());
    again.get(*k);
    EXPECT_EQ(again.stats().loaded_from_disk, 1) << mode;
  }
  // EMBER_DEBUG_KERNELS dumped the source.
  int dumped = 0;
  for (const auto& e : fs::directory_iterator(dump)) {
    std::ifstream in(e.path());
    std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(s, k->source);
    ++dumped;
  }
  EXPECT_EQ(dumped, 1);
  fs::remove_all(dir);
}

TEST(VulkanRuntime, CompileErrorCarriesTheLog) {
  EMBER_VULKAN_OR_SKIP(dev);
  vk::VulkanBackend& b = vk::backend(dev.index());
  EnvGuard g("EMBER_KERNEL_CACHE_DIR", "off");
  auto k = glsl_kernel("test_broken", "dst[0] = undefined_name;", {{"dst", DType::f32, true}});
  vk::PipelineCache c(b.context());
  try {
    c.get(*k);
    FAIL() << "compiled";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("test_broken"), std::string::npos) << m;
    EXPECT_NE(m.find("undefined_name"), std::string::npos) << m;
  }
}

TEST(VulkanRuntime, OversizedAllocationIsAnError) {
  EMBER_VULKAN_OR_SKIP(dev);
  vk::VulkanBackend& b = vk::backend(dev.index());
  const int64_t limit = b.context().props().limits.maxStorageBufferRange;
  try {
    b.allocate(limit + 1);
    FAIL() << "allocated past maxStorageBufferRange";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("maxStorageBufferRange"), std::string::npos);
  }
  EXPECT_THROW(empty({limit / 4 + 1}, {DType::f32, dev}), Error);
  // The device stays usable.
  EXPECT_EQ(on({1, 2}, dev).to_vector<float>(), (std::vector<float>{1, 2}));
}

TEST(VulkanRuntime, MemoryStatsAndEmptyCache) {
  EMBER_VULKAN_OR_SKIP(dev);
  sync(dev);
  const MemoryStats s0 = memory_stats(dev);
  {
    Tensor big = on(std::vector<float>(1 << 20, 1.0f), dev);
    Tensor small = on(std::vector<float>(100, 2.0f), dev);
    const MemoryStats s1 = memory_stats(dev);
    EXPECT_GE(s1.allocated - s0.allocated, int64_t(4 << 20) + 400);
    EXPECT_GE(s1.reserved, s1.allocated);
    EXPECT_GE(s1.peak, s1.allocated);
  }
  const MemoryStats s2 = memory_stats(dev);
  EXPECT_EQ(s2.allocated, s0.allocated);
  EXPECT_GE(s2.reserved, s0.reserved);
  empty_cache(dev);
  const MemoryStats s3 = memory_stats(dev);
  EXPECT_EQ(s3.allocated, s0.allocated);
  EXPECT_LE(s3.reserved, s2.reserved);
  EXPECT_EQ(on({3, 4}, dev).to_vector<float>(), (std::vector<float>{3, 4}));
}

TEST(VulkanRuntime, ValidationErrorFailsTheNextSync) {
  EMBER_VULKAN_OR_SKIP(dev);
  if (!vk::Instance::get().validation())
    GTEST_SKIP() << "validation layer not loaded (EMBER_VULKAN_VALIDATION=0 or not installed)";
  vk::VulkanBackend& b = vk::backend(dev.index());
  on({1}, dev);  // the device is in use
  vk::Context& ctx = b.context();
  auto bi = vk::make<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
  bi.size = 0;  // invalid: VUID-VkBufferCreateInfo-size-00912
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  VkBuffer buf = VK_NULL_HANDLE;
  ctx.fn().vkCreateBuffer(ctx.device(), &bi, nullptr, &buf);
  if (buf) ctx.fn().vkDestroyBuffer(ctx.device(), buf, nullptr);
  try {
    sync(dev);
    FAIL() << "no validation error reported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("size"), std::string::npos) << e.what();
  }
  sync(dev);  // reported once
}

// An application's own VkInstance/VkDevice, shared with Ember through init_device.
struct AppDevice {
  VkInstance instance = VK_NULL_HANDLE;
  vk::InstanceFns ifn;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t family = 0;
  PFN_vkDestroyDevice destroy_device = nullptr;
  AppDevice() {
    const auto& g = vk::loader();
    auto app = vk::make<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
    app.apiVersion = VK_API_VERSION_1_1;
    auto ci = vk::make<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
    ci.pApplicationInfo = &app;
    EMBER_VK_CHECK(g.vkCreateInstance(&ci, nullptr, &instance));
    ifn.load(instance);
    uint32_t n = 1;
    ifn.vkEnumeratePhysicalDevices(instance, &n, &physical);
    uint32_t qn = 0;
    ifn.vkGetPhysicalDeviceQueueFamilyProperties(physical, &qn, nullptr);
    std::vector<VkQueueFamilyProperties> qs(qn);
    ifn.vkGetPhysicalDeviceQueueFamilyProperties(physical, &qn, qs.data());
    for (uint32_t i = qn; i-- > 0;)
      if (qs[i].queueFlags & VK_QUEUE_COMPUTE_BIT) family = i;
    const float prio = 1;
    auto qi = vk::make<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
    qi.queueFamilyIndex = family;
    qi.queueCount = 1;
    qi.pQueuePriorities = &prio;
    auto di = vk::make<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
    di.queueCreateInfoCount = 1;
    di.pQueueCreateInfos = &qi;
    EMBER_VK_CHECK(ifn.vkCreateDevice(physical, &di, nullptr, &device));
    auto get_queue =
        reinterpret_cast<PFN_vkGetDeviceQueue>(ifn.vkGetDeviceProcAddr(device, "vkGetDeviceQueue"));
    destroy_device =
        reinterpret_cast<PFN_vkDestroyDevice>(ifn.vkGetDeviceProcAddr(device, "vkDestroyDevice"));
    get_queue(device, family, 0, &queue);
  }
  ~AppDevice() {
    destroy_device(device, nullptr);
    ifn.vkDestroyInstance(instance, nullptr);
  }
};

TEST(VulkanRuntime, InitDeviceSharesTheApplicationsDevice) {
  EMBER_VULKAN_OR_SKIP(dev);
  AppDevice app;
  const Device shared = vulkan::init_device(app.instance, app.physical, app.device, app.queue,
                                            app.family);  // no optional features enabled
  EXPECT_EQ(shared.type(), DeviceType::vulkan);
  EXPECT_NE(shared, dev);
  EXPECT_EQ(Device::vulkan(DeviceKind::Existing(shared.index())), shared);
  EXPECT_EQ(vk::backend(shared.index()).info().kind, "Existing");
  // Without shaderFloat64 enabled f64 is a clear error, not a wrong answer.
  EXPECT_FALSE(supports_dtype(shared, DType::f64));
  EXPECT_TRUE(supports_dtype(shared, DType::f32));
  try {
    zeros({2}, {DType::f64, shared});
    FAIL() << "f64 tensor on a device without shaderFloat64";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not supported"), std::string::npos) << e.what();
  }
  vulkan::RuntimeOptions o;
  o.max_tasks = 2;
  o.memory.kind = vulkan::MemoryConfiguration::Kind::ExclusivePages;
  EXPECT_THROW(vulkan::init_setup(shared, {-1, {}}), Error);
  vulkan::init_setup(shared, o);
  EXPECT_EQ(vulkan::max_tasks(shared), 2);
  {
    Tensor a = on({1, 2, 3}, shared);
    Tensor d = on({0, 0, 0}, shared);
    codegen::Lowering l;
    l.launches.push_back(axpb(a, d, -1.0f));
    vk::backend(shared.index()).run(l);
    EXPECT_EQ(d.to_vector<float>(), (std::vector<float>{0, -1, -2}));
    // Used now: init_setup is an error, and releasing with live tensors too.
    EXPECT_THROW(vulkan::init_setup(shared, o), Error);
    EXPECT_THROW(vulkan::release_device(shared), Error);
  }
  vulkan::release_device(shared);
  EXPECT_THROW(Device::vulkan(DeviceKind::Existing(shared.index())), Error);
}

TEST(VulkanRuntime, InitSetupAfterUseIsAnError) {
  EMBER_VULKAN_OR_SKIP(dev);
  on({1}, dev);
  try {
    vulkan::init_setup(dev, {});
    FAIL() << "init_setup after use";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already been used"), std::string::npos);
  }
  EXPECT_THROW(vulkan::init_setup(Device::cpu(), {}), Error);
}

#endif  // EMBER_HAVE_VULKAN

}  // namespace
}  // namespace ember
