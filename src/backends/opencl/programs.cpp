// compile(): a rendered kernel's OpenCL C built into a cl_program, cached in memory by
// Kernel::key and on disk (CL_PROGRAM_BINARIES) by a hash of the source, the device, the driver
// and the build options, in the folder the Vulkan pipeline cache uses (EMBER_KERNEL_CACHE_DIR).

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "backends/opencl/opencl_backend.h"
#include "core/atomic_file.h"
#include "core/env.h"
#include "ember/error.h"

namespace ember::cl {

namespace fs = std::filesystem;

namespace {
constexpr char kMagic[8] = {'E', 'M', 'B', 'C', 'L', 'B', '1', '\0'};
struct Header {
  char magic[8];
  uint64_t hash, bytes, checksum;
};

uint64_t fnv1a(const std::string& s, uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string hex(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

// A cache entry's binary; empty when missing, foreign or corrupt (the caller rebuilds it).
std::string read_entry(const std::string& path, uint64_t hash) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  Header h{};
  if (!in.read(reinterpret_cast<char*>(&h), sizeof h)) return {};
  if (std::memcmp(h.magic, kMagic, 8) != 0 || h.hash != hash || h.bytes == 0 ||
      h.bytes > (256u << 20))
    return {};
  std::string bin(h.bytes, '\0');
  if (!in.read(bin.data(), std::streamsize(h.bytes))) return {};
  if (in.peek() != std::char_traits<char>::eof() || fnv1a(bin) != h.checksum) return {};
  return bin;
}

// Atomic: a reader sees the old entry, no entry, or the whole new one.
void write_entry(const std::string& path, uint64_t hash, const std::string& bin) {
  Header h{};
  std::memcpy(h.magic, kMagic, 8);
  h.hash = hash;
  h.bytes = bin.size();
  h.checksum = fnv1a(bin);
  std::string out(reinterpret_cast<const char*>(&h), sizeof h);
  out += bin;
  // An unwritable cache is not an error, it only costs build time; said once (it was silent).
  std::string why;
  if (!try_write_file_atomic(path, out.data(), out.size(), &why))
    warn_cache_unwritable("EMBER_KERNEL_CACHE_DIR", "opencl", path, why,
                          "kernels are built again in every process");
}

std::string build_log(cl_program p, cl_device_id d) {
  size_t n = 0;
  if (fn().clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) != CL_SUCCESS)
    return "(no build log)";
  std::string log(n, '\0');
  fn().clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log.size() > 8000 ? log.substr(0, 8000) + "..." : log;
}
}  // namespace

// A program from a cached binary, or nullptr when the driver rejects it.
cl_program OpenCLBackend::build_binary(const std::string& path, uint64_t hash,
                                       const std::string& opts) {
  const std::string bin = read_entry(path, hash);
  if (bin.empty()) return nullptr;
  const size_t n = bin.size();
  const auto* data = reinterpret_cast<const unsigned char*>(bin.data());
  cl_int err = CL_SUCCESS, status = CL_SUCCESS;
  cl_program p = fn().clCreateProgramWithBinary(ctx_, 1, &dev_, &n, &data, &status, &err);
  if (err != CL_SUCCESS || status != CL_SUCCESS) {
    if (p) fn().clReleaseProgram(p);
    return nullptr;
  }
  note_driver_work();
  if (fn().clBuildProgram(p, 1, &dev_, opts.c_str(), nullptr, nullptr) != CL_SUCCESS) {
    fn().clReleaseProgram(p);
    return nullptr;
  }
  hook_exit_after_driver_work(false);
  return p;
}

void OpenCLBackend::store_binary(cl_program p, const std::string& path, uint64_t hash) {
  size_t n = 0;
  if (fn().clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, nullptr) != CL_SUCCESS ||
      n == 0)
    return;
  std::string bin(n, '\0');
  unsigned char* data = reinterpret_cast<unsigned char*>(bin.data());
  if (fn().clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof data, &data, nullptr) != CL_SUCCESS)
    return;
  write_entry(path, hash, bin);
}

cl_program OpenCLBackend::build(const codegen::Kernel& k) {
  // The renderer's options when it names some (Kernel::build_options), else the backend's.
  const std::string& opts = k.build_options.empty() ? options_ : k.build_options;
  const uint64_t hash = fnv1a(opts, fnv1a(driver_, fnv1a(dev_name_, fnv1a(k.source))));
  const std::string path = cache_dir_.empty() ? "" : cache_dir_ + "/" + hex(hash) + ".clbin";
  if (!path.empty())
    if (cl_program p = build_binary(path, hash, opts)) {
      stats_.loaded_from_disk++;
      return p;
    }
  const char* src = k.source.c_str();
  const size_t len = k.source.size();
  cl_int err = CL_SUCCESS;
  cl_program p = fn().clCreateProgramWithSource(ctx_, 1, &src, &len, &err);
  if (err != CL_SUCCESS) fail("clCreateProgramWithSource", err);
  note_driver_work();
  err = fn().clBuildProgram(p, 1, &dev_, opts.c_str(), nullptr, nullptr);
  hook_exit_after_driver_work(false);
  if (err != CL_SUCCESS) {
    const std::string log = build_log(p, dev_);
    fn().clReleaseProgram(p);
    EMBER_FAIL("opencl", "kernel ", k.name, " does not build on ", dev_name_, " (",
               status_name(err), "):\n", log);
  }
  stats_.compiled++;
  if (!path.empty()) store_binary(p, path, hash);
  return p;
}

const void* OpenCLBackend::compile(const codegen::Kernel& k) {
  const std::string key = k.key.empty() ? hex(fnv1a(k.source)) : k.key;
  if (auto it = programs_.find(key); it != programs_.end()) {
    stats_.memory_hits++;
    return &it->second;
  }
  if (k.dialect != codegen::Dialect::opencl)
    EMBER_FAIL("opencl", "kernel ", k.name, " is not OpenCL C");
  if (const std::string d = env_string("EMBER_DEBUG_KERNELS"); !d.empty()) {  // as Vulkan's
    std::error_code ec;
    fs::create_directories(d, ec);
    std::ofstream(fs::path(d) / (k.name + "-" + key + ".cl")) << k.source;
  }
  Program prog;
  prog.program = build(k);
  cl_int err = CL_SUCCESS;
  prog.kernel = fn().clCreateKernel(prog.program, "ember_main", &err);
  if (err != CL_SUCCESS) {
    fn().clReleaseProgram(prog.program);
    EMBER_FAIL("opencl", "kernel ", k.name,
               ": clCreateKernel(ember_main) failed: ", status_name(err));
  }
  return &programs_.emplace(key, prog).first->second;
}

}  // namespace ember::cl
