// The Vulkan backend: the runtime of the shared GPU stream (runtime/kernel_backend.h) on Vulkan.
// A batch is a command buffer with a fence and descriptor pools; launches are recorded into it
// and the stream submits it every max_tasks ops or at a read/sync.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/vulkan/context.h"
#include "backends/vulkan/memory.h"
#include "backends/vulkan/pipeline_cache.h"
#include "ember/vulkan.h"
#include "runtime/kernel_backend.h"

namespace ember::vk {

class VulkanBackend : public runtime::KernelBackend {
 public:
  VulkanBackend(int64_t index, std::unique_ptr<Context> ctx, std::string kind);
  ~VulkanBackend() override;

  std::string name() const override { return "vulkan"; }
  Device device() const override { return Device(DeviceType::vulkan, index_); }
  void* allocate(int64_t nbytes) override;
  void deallocate(void* ptr, int64_t nbytes) override;
  void write_bytes(void* dst, int64_t dst_offset, const void* src, int64_t nbytes) override;
  void read_bytes(const void* src, int64_t src_offset, void* dst, int64_t nbytes) override;
  bool supports_dtype(DType t) const override;
  DeviceInfo info() const override;
  MemoryStats memory_stats() const override;
  void empty_cache() override;

  /// Sets the options; throws ember::Error once the device has allocated or run anything.
  void configure(const vulkan::RuntimeOptions& options);
  Context& context() { return *ctx_; }
  PipelineCache& pipelines() { return *pipelines_; }
  /// Waits for the device and destroys every Vulkan object Ember made on it (init_device's
  /// devices, before the application destroys its VkDevice). Throws when tensors are alive.
  void release();
  // At exit: drops unsubmitted work, waits for submitted work and an idle queue; never throws.
  void quiesce() noexcept;

 protected:
  // The runtime (runtime/kernel_backend.h): Vulkan objects behind the shared stream.
  codegen::Dialect dialect() const override { return codegen::Dialect::glsl; }
  const codegen::Caps& caps() const override { return ctx_->caps(); }
  void start_runtime() override;
  void check_alive() const override;
  Buffer alloc_scratch(int64_t nbytes) override;
  void free_scratch(Buffer b) override;
  ArenaBlock alloc_arena(int64_t nbytes) override;
  void free_arena(const ArenaBlock& b) override;
  int64_t arena_alignment() const override;
  void free_host_block(Buffer b) override;
  const void* compile(const codegen::Kernel& k) override;
  void check_launch(const codegen::Launch& l) const override;
  void open_batch(Batch& b) override;
  void record(Batch& b, const LaunchArgs& a) override;
  void submit_batch(Batch& b) override;
  bool batch_done(Batch& b, bool wait) override;
  void reset_batch(Batch& b) override;
  void discard_batch(Batch& b) override;
  void check_device_errors() override;
  bool profiling() const override;
  void profile_op(const ir::Op& op, const codegen::Lowering& l, double lower_s,
                  double run_s) override;
  void after_retire() override;

 private:
  struct VkBatch;
  static VkBatch& state(Batch& b);
  void write_now(void* dst, int64_t dst_offset, const void* src, int64_t nbytes);
  void read_now(const void* src, int64_t src_offset, void* dst, int64_t nbytes);
  void barrier(VkCommandBuffer cmd);
  VkDescriptorSet descriptor_set(VkBatch& b, VkDescriptorSetLayout layout);
  Allocator& host_allocator() const { return staging_ ? *staging_ : *device_mem_; }
  [[noreturn]] void lost(const char* call, VkResult r);

  int64_t index_;
  std::unique_ptr<Context> ctx_;
  std::string kind_;
  vulkan::RuntimeOptions options_;
  bool dead_ = false;
  std::unique_ptr<Allocator> device_mem_, staging_;
  std::unique_ptr<PipelineCache> pipelines_;
  VkCommandPool cmd_pool_ = VK_NULL_HANDLE;
  std::vector<VkDescriptorPool> free_pools_;
};

/// The registry of Vulkan devices: Ember's adapters (indices 0..n-1 in enumeration order) and
/// the application's devices (init_device, after them).
Device resolve(const DeviceKind& kind);
VulkanBackend& backend(int64_t index);

// Registers (once) the exit handler that quiesces every device. Called after a batch has run, so
// that the driver's lazily made statics (lavapipe's LLVM JIT, created by its first shader
// compile) are destroyed after it: lavapipe's queue thread crashed (1 exit in ~15) compiling or
// freeing a shader while those statics were being destroyed.
void quiesce_at_exit();
/// Every usable adapter (empty when there is no loader or no device).
std::vector<Device> devices();
/// The default max_tasks (measured on lavapipe; docs/vulkan.md).
constexpr int64_t kDefaultMaxTasks = 16;

}  // namespace ember::vk
