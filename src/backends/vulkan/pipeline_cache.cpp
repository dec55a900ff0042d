#include "backends/vulkan/pipeline_cache.h"

#include <shaderc/shaderc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/atomic_file.h"
#include "core/env.h"
#include "ember/error.h"

namespace ember::vk {

namespace fs = std::filesystem;

uint64_t fnv1a(const void* data, size_t n, uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

namespace {
constexpr char kMagic[8] = {'E', 'M', 'B', 'S', 'P', 'V', '1', '\0'};
struct Header {
  char magic[8];
  uint64_t source_hash, source_bytes, words, checksum;
};

std::string hex(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

std::string cache_dir_from_env() { return env_cache_dir("EMBER_KERNEL_CACHE_DIR", "kernels"); }

// Reads a cache entry; empty when missing or corrupt (the caller rebuilds it).
std::vector<uint32_t> read_entry(const fs::path& path, uint64_t source_hash, uint64_t bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  Header h{};
  if (!in.read(reinterpret_cast<char*>(&h), sizeof h)) return {};
  if (std::memcmp(h.magic, kMagic, 8) != 0 || h.source_hash != source_hash ||
      h.source_bytes != bytes || h.words == 0 || h.words > (64u << 20))
    return {};
  std::vector<uint32_t> words(h.words);
  if (!in.read(reinterpret_cast<char*>(words.data()), std::streamsize(h.words * 4))) return {};
  if (in.peek() != std::char_traits<char>::eof()) return {};
  if (words[0] != 0x07230203u || fnv1a(words.data(), words.size() * 4) != h.checksum) return {};
  return words;
}

// Atomic: a reader sees the old entry, no entry, or the whole new one.
void write_entry(const fs::path& path, uint64_t source_hash, uint64_t bytes,
                 const std::vector<uint32_t>& words) {
  Header h{};
  std::memcpy(h.magic, kMagic, 8);
  h.source_hash = source_hash;
  h.source_bytes = bytes;
  h.words = words.size();
  h.checksum = fnv1a(words.data(), words.size() * 4);
  std::string out(reinterpret_cast<const char*>(&h), sizeof h);
  out.append(reinterpret_cast<const char*>(words.data()), words.size() * 4);
  // An unwritable cache is not an error, it only costs compile time; said once (it was silent).
  std::string why;
  if (!try_write_file_atomic(path.string(), out.data(), out.size(), &why))
    warn_cache_unwritable("EMBER_KERNEL_CACHE_DIR", "vulkan", path.string(), why,
                          "kernels are compiled again in every process");
}

std::string numbered(const std::string& src) {
  std::istringstream in(src);
  std::ostringstream out;
  std::string line;
  for (int i = 1; std::getline(in, line); ++i) out << i << ": " << line << "\n";
  std::string s = out.str();
  if (s.size() > 6000) s = s.substr(0, 6000) + "...\n";
  return s;
}
}  // namespace

std::vector<uint32_t> compile_glsl(void* compiler, const std::string& name,
                                   const std::string& source) {
  auto* c = static_cast<shaderc_compiler_t>(compiler);
  shaderc_compile_options_t o = shaderc_compile_options_initialize();
  shaderc_compile_options_set_target_env(o, shaderc_target_env_vulkan,
                                         shaderc_env_version_vulkan_1_1);
  // The driver's compiler optimises; spirv-opt here would only add compile time.
  shaderc_compile_options_set_optimization_level(o, shaderc_optimization_level_zero);
  shaderc_compilation_result_t r = shaderc_compile_into_spv(
      c, source.data(), source.size(), shaderc_compute_shader, (name + ".comp").c_str(), "main", o);
  shaderc_compile_options_release(o);
  const auto status = shaderc_result_get_compilation_status(r);
  if (status != shaderc_compilation_status_success) {
    const std::string log = shaderc_result_get_error_message(r);
    shaderc_result_release(r);
    EMBER_FAIL("vulkan", "shaderc failed to compile kernel ", name, " (status ", int(status),
               "):\n", log, "source:\n", numbered(source));
  }
  const size_t n = shaderc_result_get_length(r);
  std::vector<uint32_t> words(n / 4);
  std::memcpy(words.data(), shaderc_result_get_bytes(r), n);
  shaderc_result_release(r);
  return words;
}

PipelineCache::PipelineCache(Context& ctx) : ctx_(ctx) {
  dir_ = cache_dir_from_env();
  if (const std::string d = env_string("EMBER_DEBUG_KERNELS"); !d.empty()) {
    debug_dir_ = d;
    std::error_code ec;
    fs::create_directories(debug_dir_, ec);
  }
  compiler_ = shaderc_compiler_initialize();
  if (!compiler_) EMBER_FAIL("vulkan", "shaderc_compiler_initialize failed");
  auto ci = make<VkPipelineCacheCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO);
  EMBER_VK_CHECK(ctx_.fn().vkCreatePipelineCache(ctx_.device(), &ci, nullptr, &vk_cache_));
}

void PipelineCache::clear_memory() {
  const auto& fn = ctx_.fn();
  for (auto& [key, p] : map_) {
    fn.vkDestroyPipeline(ctx_.device(), p->pipeline, nullptr);
    fn.vkDestroyPipelineLayout(ctx_.device(), p->layout, nullptr);
    fn.vkDestroyDescriptorSetLayout(ctx_.device(), p->set_layout, nullptr);
    fn.vkDestroyShaderModule(ctx_.device(), p->module, nullptr);
  }
  map_.clear();
}

PipelineCache::~PipelineCache() {
  clear_memory();
  ctx_.fn().vkDestroyPipelineCache(ctx_.device(), vk_cache_, nullptr);
  shaderc_compiler_release(static_cast<shaderc_compiler_t>(compiler_));
}

std::vector<uint32_t> PipelineCache::spirv(const codegen::Kernel& k) {
  const uint64_t h = fnv1a(k.source.data(), k.source.size());
  fs::path path;
  if (!dir_.empty()) {
    const std::string id = ctx_.identity();
    path = fs::path(dir_) / (hex(h) + "-" + hex(fnv1a(id.data(), id.size())) + ".spv");
    auto words = read_entry(path, h, k.source.size());
    if (!words.empty()) {
      stats_.loaded_from_disk++;
      return words;
    }
  }
  auto words = compile_glsl(compiler_, k.name, k.source);
  stats_.compiled++;
  if (!dir_.empty()) write_entry(path, h, k.source.size(), words);
  return words;
}

const Pipeline& PipelineCache::get(const codegen::Kernel& k) {
  const std::string key = k.key.empty() ? hex(fnv1a(k.source.data(), k.source.size())) : k.key;
  if (auto it = map_.find(key); it != map_.end()) {
    stats_.memory_hits++;
    return *it->second;
  }
  if (k.dialect != codegen::Dialect::glsl) EMBER_FAIL("vulkan", "kernel ", k.name, " is not GLSL");
  if (!debug_dir_.empty()) {
    std::ofstream out(fs::path(debug_dir_) / (k.name + "-" + key + ".comp"));
    out << k.source;
  }
  const std::vector<uint32_t> words = spirv(k);
  const auto& fn = ctx_.fn();
  auto p = std::make_unique<Pipeline>();
  p->bindings = uint32_t(k.buffers.size()) + 1;
  auto mi = make<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
  mi.codeSize = words.size() * 4;
  mi.pCode = words.data();
  EMBER_VK_CHECK(fn.vkCreateShaderModule(ctx_.device(), &mi, nullptr, &p->module));
  std::vector<VkDescriptorSetLayoutBinding> b(p->bindings);
  for (uint32_t i = 0; i < p->bindings; ++i) {
    b[i].binding = i;
    b[i].descriptorType = i + 1 == p->bindings ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER
                                               : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    b[i].descriptorCount = 1;
    b[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  auto li =
      make<VkDescriptorSetLayoutCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
  li.bindingCount = p->bindings;
  li.pBindings = b.data();
  EMBER_VK_CHECK(fn.vkCreateDescriptorSetLayout(ctx_.device(), &li, nullptr, &p->set_layout));
  auto pl = make<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &p->set_layout;
  EMBER_VK_CHECK(fn.vkCreatePipelineLayout(ctx_.device(), &pl, nullptr, &p->layout));
  auto ci = make<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = p->module;
  ci.stage.pName = "main";
  ci.layout = p->layout;
  EMBER_VK_CHECK(
      fn.vkCreateComputePipelines(ctx_.device(), vk_cache_, 1, &ci, nullptr, &p->pipeline));
  return *map_.emplace(key, std::move(p)).first->second;
}

}  // namespace ember::vk
