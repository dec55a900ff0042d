#include "backends/vulkan/vulkan_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "backends/vulkan/instance.h"
#include "backends/vulkan/profile.h"
#include "core/env.h"
#include "ember/error.h"

namespace ember::vk {

namespace {
constexpr uint32_t kSetsPerPool = 256;

// kDefaultMaxTasks when unset; a bad value warns, naming that default (core/env.h). (The default
// was 0, outside the allowed range: the warning said "using 0" while 16 was used.)
int64_t env_max_tasks() { return env_int("EMBER_VULKAN_MAX_TASKS", kDefaultMaxTasks, 1, 1000000); }
}  // namespace

// What a batch holds on Vulkan: its command buffer, fence and descriptor pools (the last one is
// being filled). Destroyed with the backend's batches, after the queue is idle.
struct VulkanBackend::VkBatch : BatchState {
  const Context* ctx = nullptr;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  std::vector<VkDescriptorPool> pools;
  std::vector<Block*> written;  // destinations of staged writes (Block::pending_writes)
  ~VkBatch() override {
    for (VkDescriptorPool p : pools) ctx->fn().vkDestroyDescriptorPool(ctx->device(), p, nullptr);
    if (fence) ctx->fn().vkDestroyFence(ctx->device(), fence, nullptr);
  }
};

VulkanBackend::VulkanBackend(int64_t index, std::unique_ptr<Context> ctx, std::string kind)
    : KernelBackend(env_max_tasks()), index_(index), ctx_(std::move(ctx)), kind_(std::move(kind)) {}

VulkanBackend::~VulkanBackend() {
  drop_stream();
  try {
    release();
  } catch (...) {
  }
  destroy_batches();  // before ctx_ goes: their fences and pools belong to its device
}

void VulkanBackend::release() {
  flush_stream();  // before the lock: the stream's lock comes first
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (!dead_ && !idle()) sync_device();
  if (device_mem_ && device_mem_->stats().allocated > 0)
    EMBER_FAIL("vulkan", "cannot release ", device().str(), ": Vulkan tensors are still alive (",
               device_mem_->stats().allocated, " bytes)");
  const auto& fn = ctx_->fn();
  VkDevice d = ctx_->device();
  if (!dead_) fn.vkQueueWaitIdle(ctx_->queue());
  destroy_batches();
  for (VkDescriptorPool p : free_pools_) fn.vkDestroyDescriptorPool(d, p, nullptr);
  free_pools_.clear();
  if (cmd_pool_) fn.vkDestroyCommandPool(d, cmd_pool_, nullptr);
  cmd_pool_ = VK_NULL_HANDLE;
  pipelines_.reset();
  staging_.reset();
  device_mem_.reset();
  mark_unused();
}

void VulkanBackend::quiesce() noexcept {
  try {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    if (dead_ || !used()) return;
    // Unsubmitted work cannot be observed any more: drop it rather than compile its shaders now.
    drop_open_and_wait();
    ctx_->fn().vkQueueWaitIdle(ctx_->queue());
  } catch (...) {
  }
}

void VulkanBackend::configure(const vulkan::RuntimeOptions& o) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (used())
    EMBER_FAIL("init_setup", device().str(),
               " has already been used (allocated or ran an op); call init_setup before the "
               "first tensor on it");
  EMBER_CHECK(o.max_tasks >= 0, "init_setup", "max_tasks must be >= 0, got ", o.max_tasks);
  EMBER_CHECK(o.memory.page_size > 0 && o.memory.max_slice_size > 0 &&
                  o.memory.max_slice_size <= o.memory.page_size,
              "init_setup", "memory sizes must satisfy 0 < max_slice_size <= page_size (got ",
              o.memory.max_slice_size, " and ", o.memory.page_size, ")");
  options_ = o;
  set_max_tasks_unlocked(o.max_tasks > 0 ? o.max_tasks : env_max_tasks());
}

void VulkanBackend::check_alive() const {
  if (dead_)
    EMBER_FAIL("vulkan", device().str(), " (", ctx_->props().deviceName,
               ") was lost (VK_ERROR_DEVICE_LOST) and can no longer be used; its tensors are "
               "gone");
}

void VulkanBackend::lost(const char* call, VkResult r) {
  if (r == VK_ERROR_DEVICE_LOST) dead_ = true;
  fail(call, r);
}

// Creates the allocators, pipeline cache and command pool on first use (after init_setup).
void VulkanBackend::start_runtime() {
  const bool unified = ctx_->props().deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ||
                       ctx_->props().deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
  device_mem_ = std::make_unique<Allocator>(*ctx_, unified, options_.memory);
  if (!device_mem_->host_visible() || !device_mem_->coherent()) {
    vulkan::MemoryConfiguration staging;
    staging.page_size = 16 << 20;
    staging.max_slice_size = 4 << 20;
    staging_ = std::make_unique<Allocator>(*ctx_, true, staging);
  }
  pipelines_ = std::make_unique<PipelineCache>(*ctx_);
  auto ci = make<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  ci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  ci.queueFamilyIndex = ctx_->queue_family();
  EMBER_VK_CHECK(ctx_->fn().vkCreateCommandPool(ctx_->device(), &ci, nullptr, &cmd_pool_));
}

void* VulkanBackend::allocate(int64_t nbytes) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  start_use();
  return device_mem_->allocate(nbytes);
}

void VulkanBackend::deallocate(void* ptr, int64_t) {
  // Storages are released from retire() too, under this (recursive) lock.
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  auto* blk = static_cast<Block*>(ptr);
  if (!device_mem_ || !blk) return;
  // A staged write into the block is still pending: freed now, the block could be handed out
  // as staging or params memory, which the host fills before that copy runs.
  if (blk->pending_writes > 0) {
    blk->free_when_written = true;
    return;
  }
  device_mem_->free(blk);
}

runtime::KernelBackend::Buffer VulkanBackend::alloc_scratch(int64_t nbytes) {
  return device_mem_->allocate(nbytes);
}

void VulkanBackend::free_scratch(Buffer b) { device_mem_->free(static_cast<Block*>(b)); }

runtime::KernelBackend::ArenaBlock VulkanBackend::alloc_arena(int64_t nbytes) {
  Block* b = host_allocator().allocate(nbytes);
  return {b, reinterpret_cast<uint8_t*>(b->mapped), int64_t(b->size)};
}

void VulkanBackend::free_arena(const ArenaBlock& b) {
  host_allocator().free(static_cast<Block*>(b.handle));
}

int64_t VulkanBackend::arena_alignment() const {
  const auto& lim = ctx_->props().limits;
  return int64_t(
      std::max(lim.minStorageBufferOffsetAlignment, lim.minUniformBufferOffsetAlignment));
}

void VulkanBackend::free_host_block(Buffer b) { host_allocator().free(static_cast<Block*>(b)); }

const void* VulkanBackend::compile(const codegen::Kernel& k) { return &pipelines_->get(k); }

void VulkanBackend::check_launch(const codegen::Launch& l) const {
  EMBER_CHECK(l.groups <= ctx_->props().limits.maxComputeWorkGroupCount[0], "vulkan", "kernel ",
              l.kernel->name, " launches ", l.groups, " workgroups; the device allows ",
              ctx_->props().limits.maxComputeWorkGroupCount[0]);
}

VulkanBackend::VkBatch& VulkanBackend::state(Batch& b) { return static_cast<VkBatch&>(*b.state); }

void VulkanBackend::open_batch(Batch& b) {
  const auto& fn = ctx_->fn();
  if (!b.state) {
    auto s = std::make_unique<VkBatch>();
    s->ctx = ctx_.get();
    auto ai = make<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    ai.commandPool = cmd_pool_;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    EMBER_VK_CHECK(fn.vkAllocateCommandBuffers(ctx_->device(), &ai, &s->cmd));
    auto fi = make<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
    EMBER_VK_CHECK(fn.vkCreateFence(ctx_->device(), &fi, nullptr, &s->fence));
    b.state = std::move(s);
  }
  auto bi = make<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  EMBER_VK_CHECK(fn.vkBeginCommandBuffer(state(b).cmd, &bi));
}

// Every command sees the writes of the ones before it (ops run in issue order).
void VulkanBackend::barrier(VkCommandBuffer cmd) {
  auto mb = make<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                     VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  const auto stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  ctx_->fn().vkCmdPipelineBarrier(cmd, stages, stages, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

void VulkanBackend::submit_batch(Batch& b) {
  const auto& fn = ctx_->fn();
  VkBatch& s = state(b);
  // Make the batch's writes visible to host reads after the fence.
  auto mb = make<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  fn.vkCmdPipelineBarrier(s.cmd,
                          VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                          VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
  EMBER_VK_CHECK(fn.vkEndCommandBuffer(s.cmd));
  auto si = make<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
  si.commandBufferCount = 1;
  si.pCommandBuffers = &s.cmd;
  VkResult r;
  {
    std::lock_guard<std::mutex> qlock(ctx_->queue_mutex());
    r = fn.vkQueueSubmit(ctx_->queue(), 1, &si, s.fence);
  }
  if (r < 0) lost("vkQueueSubmit", r);  // the stream drops the batch (reset_batch)
}

bool VulkanBackend::batch_done(Batch& b, bool wait) {
  const auto& fn = ctx_->fn();
  VkBatch& s = state(b);
  const VkResult r = wait ? fn.vkWaitForFences(ctx_->device(), 1, &s.fence, VK_TRUE, UINT64_MAX)
                          : fn.vkGetFenceStatus(ctx_->device(), s.fence);
  if (r == VK_NOT_READY || r == VK_TIMEOUT) return false;
  if (r < 0) lost(wait ? "vkWaitForFences" : "vkGetFenceStatus", r);
  EMBER_VK_CHECK(fn.vkResetFences(ctx_->device(), 1, &s.fence));
  return true;
}

void VulkanBackend::reset_batch(Batch& b) {
  if (!b.state) return;
  const auto& fn = ctx_->fn();
  VkBatch& s = state(b);
  fn.vkResetCommandBuffer(s.cmd, 0);
  for (Block* blk : s.written)
    if (--blk->pending_writes == 0 && blk->free_when_written) device_mem_->free(blk);
  s.written.clear();
  for (VkDescriptorPool p : s.pools) {
    fn.vkResetDescriptorPool(ctx_->device(), p, 0);
    free_pools_.push_back(p);
  }
  s.pools.clear();
}

void VulkanBackend::discard_batch(Batch& b) {
  if (b.state) ctx_->fn().vkEndCommandBuffer(state(b).cmd);
}

void VulkanBackend::after_retire() { quiesce_at_exit(); }

void VulkanBackend::check_device_errors() {
  const std::string e = Instance::take_validation_errors();
  if (!e.empty()) EMBER_FAIL("vulkan", "validation error on ", device().str(), ":\n", e);
}

bool VulkanBackend::profiling() const { return profile::level() > 0; }

void VulkanBackend::profile_op(const ir::Op& op, const codegen::Lowering& l, double lower_s,
                               double run_s) {
  profile::add("(lower: host codegen)", lower_s);
  profile::add(profile::row(ir::name(op), l), run_s);
  profile::set_cache(index_, pipelines_->stats());
}

void VulkanBackend::write_bytes(void* dst, int64_t dst_offset, const void* src, int64_t nbytes) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  start_use();
  if (profile::level() > 0) {
    sync_device();
    const auto t0 = profile::Clock::now();
    write_now(dst, dst_offset, src, nbytes);
    sync_device();
    return profile::add("(write: host -> device)", profile::since(t0));
  }
  write_now(dst, dst_offset, src, nbytes);
}

void VulkanBackend::write_now(void* dst, int64_t dst_offset, const void* src, int64_t nbytes) {
  auto* blk = static_cast<Block*>(dst);
  EMBER_CHECK(dst_offset >= 0 && nbytes >= 0 && VkDeviceSize(dst_offset + nbytes) <= blk->size,
              "vulkan", "write of ", nbytes, " bytes at ", dst_offset, " exceeds the buffer");
  if (nbytes == 0) return;
  retire(false);
  if (blk->mapped && device_mem_->coherent() && idle()) {
    std::memcpy(blk->mapped + dst_offset, src, size_t(nbytes));
    return;
  }
  // Work is pending on the device: the write is ordered after it through a staged copy.
  Block* staging = host_allocator().allocate(nbytes);
  std::memcpy(staging->mapped, src, size_t(nbytes));
  Batch& b = batch();
  b.host_blocks.push_back(staging);
  VkBufferCopy c{staging->offset, blk->offset + VkDeviceSize(dst_offset), VkDeviceSize(nbytes)};
  ctx_->fn().vkCmdCopyBuffer(state(b).cmd, staging->buffer, blk->buffer, 1, &c);
  blk->pending_writes++;
  state(b).written.push_back(blk);
  barrier(state(b).cmd);
  count_op();
}

void VulkanBackend::read_bytes(const void* src, int64_t src_offset, void* dst, int64_t nbytes) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  start_use();
  if (profile::level() > 0) {
    sync_device();
    const auto t0 = profile::Clock::now();
    read_now(src, src_offset, dst, nbytes);
    return profile::add("(read: device -> host)", profile::since(t0));
  }
  read_now(src, src_offset, dst, nbytes);
}

void VulkanBackend::read_now(const void* src, int64_t src_offset, void* dst, int64_t nbytes) {
  const auto* blk = static_cast<const Block*>(src);
  EMBER_CHECK(src_offset >= 0 && nbytes >= 0 && VkDeviceSize(src_offset + nbytes) <= blk->size,
              "vulkan", "read of ", nbytes, " bytes at ", src_offset, " exceeds the buffer");
  if (blk->mapped && device_mem_->coherent()) {
    sync_device();
    std::memcpy(dst, blk->mapped + src_offset, size_t(nbytes));
    return;
  }
  if (nbytes == 0) return sync_device();
  Block* staging = host_allocator().allocate(nbytes);
  VkBufferCopy c{blk->offset + VkDeviceSize(src_offset), staging->offset, VkDeviceSize(nbytes)};
  try {
    ctx_->fn().vkCmdCopyBuffer(state(batch()).cmd, blk->buffer, staging->buffer, 1, &c);
    sync_device();
  } catch (...) {
    host_allocator().free(staging);
    throw;
  }
  std::memcpy(dst, staging->mapped, size_t(nbytes));
  host_allocator().free(staging);
}

VkDescriptorSet VulkanBackend::descriptor_set(VkBatch& b, VkDescriptorSetLayout layout) {
  const auto& fn = ctx_->fn();
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!b.pools.empty()) {
      auto ai = make<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
      ai.descriptorPool = b.pools.back();
      ai.descriptorSetCount = 1;
      ai.pSetLayouts = &layout;
      VkDescriptorSet set;
      const VkResult r = fn.vkAllocateDescriptorSets(ctx_->device(), &ai, &set);
      if (r == VK_SUCCESS) return set;
      if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL)
        lost("vkAllocateDescriptorSets", r);
    }
    VkDescriptorPool pool;
    if (!free_pools_.empty()) {
      pool = free_pools_.back();
      free_pools_.pop_back();
    } else {
      const VkDescriptorPoolSize sizes[2] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool * 8},
                                             {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, kSetsPerPool}};
      auto ci = make<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
      ci.maxSets = kSetsPerPool;
      ci.poolSizeCount = 2;
      ci.pPoolSizes = sizes;
      EMBER_VK_CHECK(fn.vkCreateDescriptorPool(ctx_->device(), &ci, nullptr, &pool));
    }
    b.pools.push_back(pool);
  }
  EMBER_FAIL("vulkan", "cannot allocate a descriptor set (a kernel with too many buffers?)");
}

// One launch: its buffers and its params block (bound as a uniform buffer of
// codegen::kParamsBytes, the size the kernels declare) in a fresh descriptor set.
void VulkanBackend::record(Batch& b, const LaunchArgs& a) {
  const auto& fn = ctx_->fn();
  VkBatch& s = state(b);
  const Pipeline& p = *static_cast<const Pipeline*>(a.program);
  const VkDescriptorSet set = descriptor_set(s, p.set_layout);
  VkDescriptorBufferInfo infos[kMaxBindings];
  VkWriteDescriptorSet writes[kMaxBindings];
  EMBER_CHECK(p.bindings <= kMaxBindings, "vulkan", "kernel ", a.kernel->name, " has ", p.bindings,
              " bindings; at most ", kMaxBindings, " are supported");
  for (size_t k = 0; k < a.buffers.size(); ++k) {
    const Block* blk = static_cast<const Block*>(a.buffers[k]);
    infos[k] = {blk->buffer, blk->offset, blk->size};
  }
  const Block* pblk = static_cast<const Block*>(a.params.handle);
  infos[p.bindings - 1] = {pblk->buffer, pblk->offset + VkDeviceSize(a.params_offset),
                           codegen::kParamsBytes};
  for (uint32_t k = 0; k < p.bindings; ++k) {
    writes[k] = make<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
    writes[k].dstSet = set;
    writes[k].dstBinding = k;
    writes[k].descriptorCount = 1;
    writes[k].descriptorType =
        k + 1 == p.bindings ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[k].pBufferInfo = &infos[k];
  }
  fn.vkUpdateDescriptorSets(ctx_->device(), p.bindings, writes, 0, nullptr);
  fn.vkCmdBindPipeline(s.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
  fn.vkCmdBindDescriptorSets(s.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0,
                             nullptr);
  fn.vkCmdDispatch(s.cmd, a.groups, 1, 1);
  barrier(s.cmd);
}

bool VulkanBackend::supports_dtype(DType t) const {
  const codegen::Caps& c = ctx_->caps();
  switch (t) {
    case DType::f32:
    case DType::i32:
    case DType::u32:
    case DType::b8:
      return true;
    case DType::f16:
      return c.f16;
    case DType::bf16:
      return ctx_->features().storage16;
    case DType::f64:
      return c.f64;
    case DType::i64:
    case DType::u64:
      return c.i64;
    case DType::i8:
    case DType::u8:
      return c.i8;
    case DType::i16:
    case DType::u16:
      return c.i16;
  }
  return false;
}

DeviceInfo VulkanBackend::info() const {
  DeviceInfo d;
  d.device = device();
  d.name = ctx_->props().deviceName;
  d.kind = kind_;
  for (DType t : kAllDTypes)
    if (supports_dtype(t)) d.dtypes.push_back(t);
  const uint32_t api = ctx_->props().apiVersion;
  VkDeviceSize heap = 0;
  for (uint32_t i = 0; i < ctx_->memory().memoryHeapCount; ++i)
    if (ctx_->memory().memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      heap = std::max(heap, ctx_->memory().memoryHeaps[i].size);
  std::ostringstream os;
  os << "Vulkan " << VK_API_VERSION_MAJOR(api) << "." << VK_API_VERSION_MINOR(api) << "."
     << VK_API_VERSION_PATCH(api) << ", " << (heap >> 20) << " MiB, max buffer "
     << (ctx_->props().limits.maxStorageBufferRange >> 20) << " MiB, subgroup "
     << ctx_->caps().subgroup_size << ", max_tasks " << max_tasks()
     << (ctx_->owned() ? "" : ", shared (init_device)");
  d.details = os.str();
  return d;
}

MemoryStats VulkanBackend::memory_stats() const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  return device_mem_ ? device_mem_->stats() : MemoryStats{};
}

void VulkanBackend::empty_cache() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (!used()) return;
  sync_device();  // pages of retired batches' scratch become free first
  device_mem_->empty_cache();
  if (staging_) staging_->empty_cache();
}

}  // namespace ember::vk
