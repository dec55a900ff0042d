// Compute pipelines for rendered kernels: GLSL -> SPIR-V by shaderc, cached in memory by
// Kernel::key and on disk by (source hash, driver, device), so a second run skips shaderc.
// Disk cache: env EMBER_KERNEL_CACHE_DIR (default ~/.cache/ember/kernels; "" or "off" disables
// it); entries are written atomically and a corrupt entry is ignored and rebuilt.
// EMBER_DEBUG_KERNELS=DIR writes every generated source to DIR.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/vulkan/context.h"
#include "codegen/kernel.h"

namespace ember::vk {

struct Pipeline {
  VkShaderModule module = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  uint32_t bindings = 0;  // kernel buffers + the params block
};

struct CacheStats {
  int64_t compiled = 0, loaded_from_disk = 0, memory_hits = 0;
};

class PipelineCache {
 public:
  explicit PipelineCache(Context& ctx);
  ~PipelineCache();
  PipelineCache(const PipelineCache&) = delete;
  PipelineCache& operator=(const PipelineCache&) = delete;
  /// The pipeline of `k`, built on first use. Throws ember::Error with shaderc's log.
  const Pipeline& get(const codegen::Kernel& k);
  const CacheStats& stats() const { return stats_; }
  /// The on-disk cache directory ("" when disabled).
  const std::string& dir() const { return dir_; }
  /// Drops the in-memory pipelines (tests use it to exercise the disk cache).
  void clear_memory();

 private:
  std::vector<uint32_t> spirv(const codegen::Kernel& k);
  Context& ctx_;
  std::unordered_map<std::string, std::unique_ptr<Pipeline>> map_;
  std::string dir_, debug_dir_;
  VkPipelineCache vk_cache_ = VK_NULL_HANDLE;
  CacheStats stats_;
  void* compiler_ = nullptr;  // shaderc_compiler_t
};

/// Compiles GLSL compute source to SPIR-V (Vulkan 1.1). Throws ember::Error with the log.
std::vector<uint32_t> compile_glsl(void* compiler, const std::string& name,
                                   const std::string& source);
/// 64-bit FNV-1a.
uint64_t fnv1a(const void* data, size_t n, uint64_t h = 0xcbf29ce484222325ull);

}  // namespace ember::vk
