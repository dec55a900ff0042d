#include "backends/vulkan/vulkan_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "backends/vulkan/instance.h"
#include "backends/vulkan/profile.h"
#include "ember/error.h"

namespace ember::vk {

namespace {
constexpr VkDeviceSize kArenaBytes = 64 << 10;
constexpr uint32_t kSetsPerPool = 256;

int64_t env_max_tasks() {
  const char* e = std::getenv("EMBER_VULKAN_MAX_TASKS");
  if (!e || !*e) return 0;
  char* end = nullptr;
  const long long v = std::strtoll(e, &end, 10);
  if (*end != '\0' || v < 1 || v > 1000000)
    EMBER_FAIL("vulkan", "EMBER_VULKAN_MAX_TASKS must be an integer in [1, 1000000], got '", e,
               "'");
  return v;
}
}  // namespace

VulkanBackend::VulkanBackend(int64_t index, std::unique_ptr<Context> ctx, std::string kind)
    : index_(index), ctx_(std::move(ctx)), kind_(std::move(kind)) {
  const int64_t env = env_max_tasks();
  max_tasks_ = env > 0 ? env : kDefaultMaxTasks;
}

VulkanBackend::~VulkanBackend() {
  try {
    release();
  } catch (...) {
  }
}

void VulkanBackend::release() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (!dead_ && (current_ || !in_flight_.empty())) sync();
  if (device_mem_ && device_mem_->stats().allocated > 0)
    EMBER_FAIL("vulkan", "cannot release ", device().str(), ": Vulkan tensors are still alive (",
               device_mem_->stats().allocated, " bytes)");
  const auto& fn = ctx_->fn();
  VkDevice d = ctx_->device();
  if (!dead_) fn.vkQueueWaitIdle(ctx_->queue());
  for (auto& b : free_batches_) {
    for (VkDescriptorPool p : b->pools) fn.vkDestroyDescriptorPool(d, p, nullptr);
    fn.vkDestroyFence(d, b->fence, nullptr);
  }
  free_batches_.clear();
  for (VkDescriptorPool p : free_pools_) fn.vkDestroyDescriptorPool(d, p, nullptr);
  free_pools_.clear();
  if (cmd_pool_) fn.vkDestroyCommandPool(d, cmd_pool_, nullptr);
  cmd_pool_ = VK_NULL_HANDLE;
  pipelines_.reset();
  staging_.reset();
  device_mem_.reset();
  used_ = false;
}

void VulkanBackend::quiesce() noexcept {
  try {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    if (dead_ || !used_) return;
    // Unsubmitted work cannot be observed any more: drop it rather than compile its shaders now.
    if (current_) {
      ctx_->fn().vkEndCommandBuffer(current_->cmd);
      ctx_->fn().vkResetCommandBuffer(current_->cmd, 0);
      release_batch(*current_);
      free_batches_.push_back(std::move(current_));
    }
    retire(true);
    ctx_->fn().vkQueueWaitIdle(ctx_->queue());
  } catch (...) {
  }
}

void VulkanBackend::configure(const vulkan::RuntimeOptions& o) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (used_)
    EMBER_FAIL("init_setup", device().str(),
               " has already been used (allocated or ran an op); call init_setup before the "
               "first tensor on it");
  EMBER_CHECK(o.max_tasks >= 0, "init_setup", "max_tasks must be >= 0, got ", o.max_tasks);
  EMBER_CHECK(o.memory.page_size > 0 && o.memory.max_slice_size > 0 &&
                  o.memory.max_slice_size <= o.memory.page_size,
              "init_setup", "memory sizes must satisfy 0 < max_slice_size <= page_size (got ",
              o.memory.max_slice_size, " and ", o.memory.page_size, ")");
  options_ = o;
  const int64_t env = env_max_tasks();
  max_tasks_ = o.max_tasks > 0 ? o.max_tasks : env > 0 ? env : kDefaultMaxTasks;
}

void VulkanBackend::set_max_tasks(int64_t n) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  EMBER_CHECK(n >= 1, "vulkan", "max_tasks must be >= 1, got ", n);
  if (used_) submit();
  max_tasks_ = n;
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
void VulkanBackend::start_use() {
  check_alive();
  if (used_) return;
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
  used_ = true;
}

void* VulkanBackend::allocate(int64_t nbytes) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  start_use();
  return device_mem_->allocate(nbytes);
}

void VulkanBackend::deallocate(void* ptr, int64_t) {
  // No backend lock: storages are released from retire() too. The allocator locks itself.
  if (device_mem_) device_mem_->free(static_cast<Block*>(ptr));
}

void VulkanBackend::begin() {
  if (current_) return;
  const auto& fn = ctx_->fn();
  if (!free_batches_.empty()) {
    current_ = std::move(free_batches_.front());
    free_batches_.pop_front();
  } else {
    current_ = std::make_unique<Batch>();
    auto ai = make<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    ai.commandPool = cmd_pool_;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    EMBER_VK_CHECK(fn.vkAllocateCommandBuffers(ctx_->device(), &ai, &current_->cmd));
    auto fi = make<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
    EMBER_VK_CHECK(fn.vkCreateFence(ctx_->device(), &fi, nullptr, &current_->fence));
  }
  auto bi = make<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  EMBER_VK_CHECK(fn.vkBeginCommandBuffer(current_->cmd, &bi));
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

void VulkanBackend::submit() {
  if (!current_) return;
  const auto& fn = ctx_->fn();
  // Make the batch's writes visible to host reads after the fence.
  auto mb = make<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  fn.vkCmdPipelineBarrier(current_->cmd,
                          VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                          VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
  EMBER_VK_CHECK(fn.vkEndCommandBuffer(current_->cmd));
  auto si = make<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
  si.commandBufferCount = 1;
  si.pCommandBuffers = &current_->cmd;
  std::unique_ptr<Batch> b = std::move(current_);
  VkResult r;
  {
    std::lock_guard<std::mutex> qlock(ctx_->queue_mutex());
    r = fn.vkQueueSubmit(ctx_->queue(), 1, &si, b->fence);
  }
  if (r < 0) {
    // The batch never ran: drop its resources so the device stays usable (or is marked dead).
    fn.vkResetCommandBuffer(b->cmd, 0);
    release_batch(*b);
    free_batches_.push_back(std::move(b));
    lost("vkQueueSubmit", r);
  }
  submissions_++;
  in_flight_.push_back(std::move(b));
  retire(false);
}

void VulkanBackend::release_batch(Batch& b) {
  const auto& fn = ctx_->fn();
  for (VkDescriptorPool p : b.pools) {
    fn.vkResetDescriptorPool(ctx_->device(), p, 0);
    free_pools_.push_back(p);
  }
  b.pools.clear();
  for (Block* blk : b.device_blocks) device_mem_->free(blk);
  for (Block* blk : b.host_blocks) host_allocator().free(blk);
  b.device_blocks.clear();
  b.host_blocks.clear();
  b.arena = -1;
  b.arena_used = 0;
  b.ops = 0;
  // Last: dropping tensors may free their storage (deallocate).
  std::vector<Tensor> keep;
  keep.swap(b.keep);
  keep.clear();
}

void VulkanBackend::retire(bool wait_all) {
  const auto& fn = ctx_->fn();
  while (!in_flight_.empty()) {
    Batch& b = *in_flight_.front();
    VkResult r = wait_all ? fn.vkWaitForFences(ctx_->device(), 1, &b.fence, VK_TRUE, UINT64_MAX)
                          : fn.vkGetFenceStatus(ctx_->device(), b.fence);
    if (r == VK_NOT_READY || r == VK_TIMEOUT) return;
    if (r < 0) lost(wait_all ? "vkWaitForFences" : "vkGetFenceStatus", r);
    EMBER_VK_CHECK(fn.vkResetFences(ctx_->device(), 1, &b.fence));
    EMBER_VK_CHECK(fn.vkResetCommandBuffer(b.cmd, 0));
    std::unique_ptr<Batch> done = std::move(in_flight_.front());
    in_flight_.pop_front();
    release_batch(*done);
    free_batches_.push_back(std::move(done));
    quiesce_at_exit();
  }
}

void VulkanBackend::check_validation() {
  const std::string e = Instance::take_validation_errors();
  if (!e.empty()) EMBER_FAIL("vulkan", "validation error on ", device().str(), ":\n", e);
}

void VulkanBackend::sync() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  check_alive();
  if (!used_) return;
  submit();
  retire(true);
  check_validation();
}

void VulkanBackend::write(void* dst, int64_t dst_offset, const void* src, int64_t nbytes) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  start_use();
  if (profile::level() > 0) {
    sync();
    const auto t0 = profile::Clock::now();
    write_now(dst, dst_offset, src, nbytes);
    sync();
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
  if (blk->mapped && device_mem_->coherent() && !current_ && in_flight_.empty()) {
    std::memcpy(blk->mapped + dst_offset, src, size_t(nbytes));
    return;
  }
  // Work is pending on the device: the write is ordered after it through a staged copy.
  Block* staging = host_allocator().allocate(nbytes);
  std::memcpy(staging->mapped, src, size_t(nbytes));
  begin();
  current_->host_blocks.push_back(staging);
  VkBufferCopy c{staging->offset, blk->offset + VkDeviceSize(dst_offset), VkDeviceSize(nbytes)};
  ctx_->fn().vkCmdCopyBuffer(current_->cmd, staging->buffer, blk->buffer, 1, &c);
  barrier(current_->cmd);
  if (++current_->ops >= max_tasks_) submit();
}

void VulkanBackend::read(const void* src, int64_t src_offset, void* dst, int64_t nbytes) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  start_use();
  if (profile::level() > 0) {
    sync();
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
    sync();
    std::memcpy(dst, blk->mapped + src_offset, size_t(nbytes));
    return;
  }
  if (nbytes == 0) return sync();
  Block* staging = host_allocator().allocate(nbytes);
  begin();
  VkBufferCopy c{blk->offset + VkDeviceSize(src_offset), staging->offset, VkDeviceSize(nbytes)};
  ctx_->fn().vkCmdCopyBuffer(current_->cmd, blk->buffer, staging->buffer, 1, &c);
  try {
    sync();
  } catch (...) {
    host_allocator().free(staging);
    throw;
  }
  std::memcpy(dst, staging->mapped, size_t(nbytes));
  host_allocator().free(staging);
}

VkDescriptorSet VulkanBackend::descriptor_set(VkDescriptorSetLayout layout) {
  const auto& fn = ctx_->fn();
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!current_->pools.empty()) {
      auto ai = make<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
      ai.descriptorPool = current_->pools.back();
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
    current_->pools.push_back(pool);
  }
  EMBER_FAIL("vulkan", "cannot allocate a descriptor set (a kernel with too many buffers?)");
}

// The params block of one launch in the batch's arena. It is bound as a uniform buffer of
// codegen::kParamsBytes (the size the kernels declare), so that many bytes follow every block.
std::pair<Block*, VkDeviceSize> VulkanBackend::params(const std::vector<uint32_t>& words) {
  const auto& lim = ctx_->props().limits;
  const VkDeviceSize align = std::max<VkDeviceSize>(
      std::max(lim.minStorageBufferOffsetAlignment, lim.minUniformBufferOffsetAlignment), 16);
  const VkDeviceSize n = std::max<VkDeviceSize>(words.size(), 1) * 4;
  EMBER_CHECK(n <= codegen::kParamsBytes, "vulkan", "a kernel's params take ", n,
              " bytes; at most ", codegen::kParamsBytes, " are supported");
  Batch& b = *current_;
  if (b.arena < 0 || b.arena_used + codegen::kParamsBytes > b.host_blocks[size_t(b.arena)]->size) {
    b.host_blocks.push_back(host_allocator().allocate(int64_t(kArenaBytes)));
    b.arena = int(b.host_blocks.size()) - 1;
    b.arena_used = 0;
  }
  Block* blk = b.host_blocks[size_t(b.arena)];
  const VkDeviceSize at = b.arena_used;
  if (words.empty())
    std::memset(blk->mapped + at, 0, 4);
  else
    std::memcpy(blk->mapped + at, words.data(), words.size() * 4);
  b.arena_used = (at + n + align - 1) / align * align;
  return {blk, at};
}

void VulkanBackend::run(const codegen::Lowering& l) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  start_use();
  const auto& fn = ctx_->fn();
  // Compile first, so a kernel that does not build leaves nothing recorded.
  std::vector<const Pipeline*> pipes;
  for (const auto& launch : l.launches) {
    EMBER_CHECK(launch.kernel, "vulkan", "a launch without a kernel");
    EMBER_CHECK(launch.bindings.size() == launch.kernel->buffers.size(), "vulkan", "kernel ",
                launch.kernel->name, " has ", launch.kernel->buffers.size(), " buffers but ",
                launch.bindings.size(), " bindings");
    EMBER_CHECK(launch.groups <= ctx_->props().limits.maxComputeWorkGroupCount[0], "vulkan",
                "kernel ", launch.kernel->name, " launches ", launch.groups,
                " workgroups; the device allows ",
                ctx_->props().limits.maxComputeWorkGroupCount[0]);
    for (const auto& b : launch.bindings) {
      if (b.scratch >= 0) {
        EMBER_CHECK(size_t(b.scratch) < l.scratch_bytes.size(), "vulkan", "kernel ",
                    launch.kernel->name, " binds scratch ", b.scratch, " of ",
                    l.scratch_bytes.size());
      } else {
        EMBER_CHECK(b.tensor.defined() && b.tensor.device() == device(), "vulkan", "kernel ",
                    launch.kernel->name, " binds a tensor that is not on ", device().str());
      }
    }
    pipes.push_back(&pipelines_->get(*launch.kernel));
  }
  begin();
  Batch& batch = *current_;
  std::vector<Block*> scratch;
  for (int64_t bytes : l.scratch_bytes) {
    scratch.push_back(device_mem_->allocate(bytes));
    batch.device_blocks.push_back(scratch.back());
  }
  std::vector<VkDescriptorBufferInfo> infos;
  std::vector<VkWriteDescriptorSet> writes;
  for (size_t i = 0; i < l.launches.size(); ++i) {
    const codegen::Launch& launch = l.launches[i];
    const Pipeline& p = *pipes[i];
    if (launch.groups == 0) continue;
    const VkDescriptorSet set = descriptor_set(p.set_layout);
    infos.assign(p.bindings, {});
    for (size_t k = 0; k < launch.bindings.size(); ++k) {
      const codegen::Binding& b = launch.bindings[k];
      const Block* blk = b.scratch >= 0 ? scratch[size_t(b.scratch)]
                                        : static_cast<const Block*>(b.tensor.impl()->storage->data);
      infos[k] = {blk->buffer, blk->offset, blk->size};
      if (b.scratch < 0) batch.keep.push_back(b.tensor);
    }
    const auto [pblk, poff] = params(launch.params);
    infos.back() = {pblk->buffer, pblk->offset + poff, codegen::kParamsBytes};
    writes.assign(p.bindings, make<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET));
    for (uint32_t k = 0; k < p.bindings; ++k) {
      writes[k].dstSet = set;
      writes[k].dstBinding = k;
      writes[k].descriptorCount = 1;
      writes[k].descriptorType = k + 1 == p.bindings ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER
                                                     : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[k].pBufferInfo = &infos[k];
    }
    fn.vkUpdateDescriptorSets(ctx_->device(), p.bindings, writes.data(), 0, nullptr);
    fn.vkCmdBindPipeline(batch.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
    fn.vkCmdBindDescriptorSets(batch.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0,
                               nullptr);
    fn.vkCmdDispatch(batch.cmd, launch.groups, 1, 1);
    barrier(batch.cmd);
  }
  if (++batch.ops >= max_tasks_) submit();
}

void VulkanBackend::execute(const ir::Op& op) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  check_alive();
  if (profile::level() == 0) return run(codegen::lower(op, codegen::Dialect::glsl, ctx_->caps()));
  // EMBER_VULKAN_PROFILE: lowering and each op timed alone (profile.h).
  if (used_) sync();
  auto t0 = profile::Clock::now();
  const codegen::Lowering l = codegen::lower(op, codegen::Dialect::glsl, ctx_->caps());
  profile::add("(lower: host codegen)", profile::since(t0));
  t0 = profile::Clock::now();
  run(l);
  sync();
  profile::add(profile::row(ir::name(op), l), profile::since(t0));
  profile::set_cache(index_, pipelines_->stats());
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
     << ctx_->caps().subgroup_size << ", max_tasks " << max_tasks_
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
  if (!used_) return;
  sync();  // pages of retired batches' scratch become free first
  device_mem_->empty_cache();
  if (staging_) staging_->empty_cache();
}

}  // namespace ember::vk
