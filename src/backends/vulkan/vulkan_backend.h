// The Vulkan backend: executes codegen::lower()'s launches. Ops are recorded into a command
// buffer and submitted every max_tasks ops or at a read/sync; the tensors, scratch buffers and
// params of a submitted batch are kept alive until its fence signals.
#pragma once
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/vulkan/context.h"
#include "backends/vulkan/memory.h"
#include "backends/vulkan/pipeline_cache.h"
#include "ember/vulkan.h"
#include "runtime/backend.h"

namespace ember::vk {

class VulkanBackend : public Backend {
 public:
  VulkanBackend(int64_t index, std::unique_ptr<Context> ctx, std::string kind);
  ~VulkanBackend() override;

  std::string name() const override { return "vulkan"; }
  Device device() const override { return Device(DeviceType::vulkan, index_); }
  void* allocate(int64_t nbytes) override;
  void deallocate(void* ptr, int64_t nbytes) override;
  void write(void* dst, int64_t dst_offset, const void* src, int64_t nbytes) override;
  void read(const void* src, int64_t src_offset, void* dst, int64_t nbytes) override;
  void execute(const ir::Op& op) override;
  void sync() override;
  bool supports_dtype(DType t) const override;
  DeviceInfo info() const override;
  MemoryStats memory_stats() const override;
  void empty_cache() override;

  /// Records the launches of a lowering (execute() = lower() + this; tests call it directly).
  void run(const codegen::Lowering& l);
  /// Sets the options; throws ember::Error once the device has allocated or run anything.
  void configure(const vulkan::RuntimeOptions& options);
  int64_t max_tasks() const { return max_tasks_; }
  /// Changes max_tasks at any time (tests; init_setup is the public way).
  void set_max_tasks(int64_t n);
  bool used() const { return used_; }
  Context& context() { return *ctx_; }
  PipelineCache& pipelines() { return *pipelines_; }
  /// Submitted command buffers so far (tests check batching with it).
  int64_t submissions() const { return submissions_; }
  /// Waits for the device and destroys every Vulkan object Ember made on it (init_device's
  /// devices, before the application destroys its VkDevice). Throws when tensors are alive.
  void release();
  // At exit: drops unsubmitted work, waits for submitted work and an idle queue; never throws.
  void quiesce() noexcept;

 private:
  struct Batch {
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    std::vector<VkDescriptorPool> pools;  // the last one is being filled
    std::vector<Tensor> keep;             // tensors bound by recorded ops
    std::vector<Block*> device_blocks;    // scratch buffers
    std::vector<Block*> host_blocks;      // params arenas and staging buffers
    VkDeviceSize arena_used = 0;          // in host_blocks[arena]
    int arena = -1;
    int64_t ops = 0;
  };
  void check_alive() const;
  void write_now(void* dst, int64_t dst_offset, const void* src, int64_t nbytes);
  void read_now(const void* src, int64_t src_offset, void* dst, int64_t nbytes);
  void start_use();
  void begin();
  void submit();
  void retire(bool wait_all);
  void release_batch(Batch& b);
  void barrier(VkCommandBuffer cmd);
  void check_validation();
  VkDescriptorSet descriptor_set(VkDescriptorSetLayout layout);
  std::pair<Block*, VkDeviceSize> params(const std::vector<uint32_t>& words);
  Allocator& host_allocator() { return staging_ ? *staging_ : *device_mem_; }
  [[noreturn]] void lost(const char* call, VkResult r);

  int64_t index_;
  std::unique_ptr<Context> ctx_;
  std::string kind_;
  vulkan::RuntimeOptions options_;
  int64_t max_tasks_ = 1;
  bool used_ = false;
  bool dead_ = false;
  std::unique_ptr<Allocator> device_mem_, staging_;
  std::unique_ptr<PipelineCache> pipelines_;
  VkCommandPool cmd_pool_ = VK_NULL_HANDLE;
  std::unique_ptr<Batch> current_;
  std::deque<std::unique_ptr<Batch>> in_flight_, free_batches_;
  std::vector<VkDescriptorPool> free_pools_;
  int64_t submissions_ = 0;
  mutable std::recursive_mutex mutex_;
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
