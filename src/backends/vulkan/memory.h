// Device memory: a caching allocator of VkDeviceMemory pages, each bound to one VkBuffer.
// SubSlices carves small allocations out of shared pages (bound with a descriptor offset);
// ExclusivePages gives every allocation its own page. Freed memory stays cached until
// empty_cache().
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/vulkan/context.h"
#include "ember/device.h"
#include "ember/vulkan.h"

namespace ember::vk {

struct Page;

/// One allocation: what Storage::data points to for a Vulkan tensor.
struct Block {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;  // within buffer
  VkDeviceSize size = 0;    // rounded
  char* mapped = nullptr;   // host pointer of byte `offset` when host-visible
  Page* page = nullptr;
  // Staged writes recorded into this block and not yet retired; a block freed meanwhile is
  // returned to the allocator when the last one retires (VulkanBackend::deallocate).
  int pending_writes = 0;
  bool free_when_written = false;
};

struct Page {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize size = 0;
  char* mapped = nullptr;
  bool shared = false;                         // sub-allocated (SubSlices)
  std::map<VkDeviceSize, VkDeviceSize> free_;  // offset -> size (shared pages)
  int64_t live = 0;
};

class Allocator {
 public:
  /// `host` = memory the host maps (staging or unified), else device-local memory.
  Allocator(Context& ctx, bool host, const vulkan::MemoryConfiguration& config);
  ~Allocator();
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;
  /// Throws ember::Error for sizes above maxStorageBufferRange and when out of memory.
  Block* allocate(int64_t nbytes);
  void free(Block* b);
  MemoryStats stats() const;
  void empty_cache();
  bool host_visible() const { return mapped_; }
  bool coherent() const { return coherent_; }

 private:
  Page* new_page(VkDeviceSize size, bool shared);
  void destroy(Page* p);
  Context& ctx_;
  vulkan::MemoryConfiguration config_;
  int type_ = -1;
  bool mapped_ = false, coherent_ = false;
  VkDeviceSize align_ = 256;
  std::vector<std::unique_ptr<Page>> pages_;
  std::multimap<VkDeviceSize, Page*> idle_;  // unshared pages not in use, by size
  int64_t allocated_ = 0, reserved_ = 0, peak_ = 0;
  mutable std::mutex mutex_;
};

}  // namespace ember::vk
