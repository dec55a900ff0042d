#include "backends/vulkan/memory.h"

#include <algorithm>
#include <bit>

#include "ember/error.h"

namespace ember::vk {

namespace {
VkDeviceSize round_up(VkDeviceSize n, VkDeviceSize a) { return (n + a - 1) / a * a; }
// Size classes of unshared pages: 1/4 power-of-two steps, so a cached page fits later requests
// of similar size and wastes at most 25%.
VkDeviceSize size_class(VkDeviceSize n, VkDeviceSize align) {
  n = round_up(std::max<VkDeviceSize>(n, 1), align);
  const VkDeviceSize p = std::bit_floor(n);
  const VkDeviceSize step = std::max<VkDeviceSize>(p / 4, align);
  return round_up(n, step);
}
}  // namespace

Allocator::Allocator(Context& ctx, bool host, const vulkan::MemoryConfiguration& config)
    : ctx_(ctx), config_(config) {
  // Probe the memory types a storage buffer may use.
  auto bi = make<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
  bi.size = 1024;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT |
             VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  VkBuffer probe;
  EMBER_VK_CHECK(ctx.fn().vkCreateBuffer(ctx.device(), &bi, nullptr, &probe));
  VkMemoryRequirements req;
  ctx.fn().vkGetBufferMemoryRequirements(ctx.device(), probe, &req);
  ctx.fn().vkDestroyBuffer(ctx.device(), probe, nullptr);
  const auto hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  if (host)
    type_ = ctx.memory_type(req.memoryTypeBits, hv, VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
  else
    type_ = ctx.memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  if (type_ < 0) type_ = ctx.memory_type(req.memoryTypeBits, host ? hv : 0);
  if (type_ < 0) EMBER_FAIL("vulkan", "no memory type for storage buffers");
  const auto flags = ctx.memory().memoryTypes[type_].propertyFlags;
  mapped_ = flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
  coherent_ = flags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  align_ = std::max<VkDeviceSize>({ctx.props().limits.minStorageBufferOffsetAlignment,
                                   ctx.props().limits.nonCoherentAtomSize, req.alignment, 64});
}

Allocator::~Allocator() {
  for (auto& p : pages_) destroy(p.get());
}

void Allocator::destroy(Page* p) {
  const auto& fn = ctx_.fn();
  if (p->mapped) fn.vkUnmapMemory(ctx_.device(), p->memory);
  fn.vkDestroyBuffer(ctx_.device(), p->buffer, nullptr);
  fn.vkFreeMemory(ctx_.device(), p->memory, nullptr);
}

Page* Allocator::new_page(VkDeviceSize size, bool shared) {
  const auto& fn = ctx_.fn();
  auto page = std::make_unique<Page>();
  page->size = size;
  page->shared = shared;
  auto bi = make<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
  bi.size = size;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT |
             VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  EMBER_VK_CHECK(fn.vkCreateBuffer(ctx_.device(), &bi, nullptr, &page->buffer));
  VkMemoryRequirements req;
  fn.vkGetBufferMemoryRequirements(ctx_.device(), page->buffer, &req);
  auto ai = make<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = uint32_t(type_);
  VkResult r = fn.vkAllocateMemory(ctx_.device(), &ai, nullptr, &page->memory);
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) {
    // Give the cached pages back and try once more.
    for (auto it = idle_.begin(); it != idle_.end();) {
      Page* p = it->second;
      it = idle_.erase(it);
      reserved_ -= int64_t(p->size);
      destroy(p);
      pages_.erase(
          std::find_if(pages_.begin(), pages_.end(), [p](const auto& u) { return u.get() == p; }));
    }
    r = fn.vkAllocateMemory(ctx_.device(), &ai, nullptr, &page->memory);
  }
  if (r < 0) {
    fn.vkDestroyBuffer(ctx_.device(), page->buffer, nullptr);
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
      EMBER_FAIL("vulkan", "out of memory allocating ", size, " bytes on ", ctx_.props().deviceName,
                 " (", result_name(r), "; ", allocated_, " bytes in use by tensors)");
    fail("vkAllocateMemory", r);
  }
  EMBER_VK_CHECK(fn.vkBindBufferMemory(ctx_.device(), page->buffer, page->memory, 0));
  if (mapped_) {
    void* p = nullptr;
    EMBER_VK_CHECK(fn.vkMapMemory(ctx_.device(), page->memory, 0, VK_WHOLE_SIZE, 0, &p));
    page->mapped = static_cast<char*>(p);
  }
  if (shared) page->free_[0] = size;
  reserved_ += int64_t(size);
  pages_.push_back(std::move(page));
  return pages_.back().get();
}

Block* Allocator::allocate(int64_t nbytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  const VkDeviceSize max_range = ctx_.props().limits.maxStorageBufferRange;
  if (nbytes < 0 || VkDeviceSize(nbytes) > max_range)
    EMBER_FAIL("vulkan", "cannot allocate ", nbytes, " bytes on ", ctx_.props().deviceName,
               ": one buffer is limited to maxStorageBufferRange = ", max_range, " bytes");
  const bool sub = config_.kind == vulkan::MemoryConfiguration::Kind::SubSlices &&
                   nbytes <= config_.max_slice_size;
  auto block = std::make_unique<Block>();
  if (sub) {
    const VkDeviceSize n = round_up(std::max<int64_t>(nbytes, 1), align_);
    for (auto& up : pages_) {
      Page* p = up.get();
      if (!p->shared) continue;
      for (auto it = p->free_.begin(); it != p->free_.end(); ++it) {
        if (it->second < n) continue;
        const VkDeviceSize off = it->first, left = it->second - n;
        p->free_.erase(it);
        if (left) p->free_[off + n] = left;
        block->page = p;
        block->offset = off;
        block->size = n;
        break;
      }
      if (block->page) break;
    }
    if (!block->page) {
      const VkDeviceSize ps = std::max<VkDeviceSize>(
          std::min<VkDeviceSize>(round_up(config_.page_size, align_), max_range), n);
      Page* p = new_page(ps, true);
      p->free_.clear();
      if (ps > n) p->free_[n] = ps - n;
      block->page = p;
      block->offset = 0;
      block->size = n;
    }
  } else {
    const VkDeviceSize n = std::min(size_class(VkDeviceSize(nbytes), align_), max_range);
    auto it = idle_.lower_bound(n);
    if (it != idle_.end() && it->first <= n + n / 4) {
      block->page = it->second;
      idle_.erase(it);
    } else {
      block->page = new_page(n, false);
    }
    block->offset = 0;
    block->size = block->page->size;
  }
  Page* p = block->page;
  p->live++;
  block->buffer = p->buffer;
  block->mapped = p->mapped ? p->mapped + block->offset : nullptr;
  allocated_ += int64_t(block->size);
  peak_ = std::max(peak_, allocated_);
  return block.release();
}

void Allocator::free(Block* b) {
  if (!b) return;
  std::lock_guard<std::mutex> lock(mutex_);
  Page* p = b->page;
  allocated_ -= int64_t(b->size);
  p->live--;
  if (p->shared) {
    // Return the range and merge it with its neighbours.
    auto it = p->free_.emplace(b->offset, b->size).first;
    auto next = std::next(it);
    if (next != p->free_.end() && it->first + it->second == next->first) {
      it->second += next->second;
      p->free_.erase(next);
    }
    if (it != p->free_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        p->free_.erase(it);
      }
    }
  } else {
    idle_.emplace(p->size, p);
  }
  delete b;
}

MemoryStats Allocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {allocated_, reserved_, peak_};
}

void Allocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  idle_.clear();
  for (auto it = pages_.begin(); it != pages_.end();) {
    Page* p = it->get();
    if (p->live == 0) {
      reserved_ -= int64_t(p->size);
      destroy(p);
      it = pages_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace ember::vk
