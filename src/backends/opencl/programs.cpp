// Programs: OpenCL C built at run time, cached in memory by kernel key and on disk by a hash of
// (source, build options, device name, driver version), as the device's binary
// (CL_PROGRAM_BINARIES). A corrupt or foreign cache file is rejected and the program rebuilt.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "backends/opencl/opencl_backend.h"
#include "ember/error.h"

namespace ember::cl {

namespace fs = std::filesystem;

namespace {
constexpr char kMagic[8] = {'E', 'M', 'B', 'C', 'L', 'B', '1', '\0'};
struct Header {
  char magic[8];
  uint64_t key_hash, bytes, checksum;
};

uint64_t fnv(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string hex(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

std::string cache_dir() {
  if (const char* e = std::getenv("EMBER_KERNEL_CACHE_DIR")) {
    const std::string s = e;
    return (s == "off" || s == "0") ? "" : s;
  }
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::string(x) + "/ember/kernels";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/ember/kernels";
  return "";
}

fs::path entry(const std::string& key) {
  const std::string dir = cache_dir();
  return dir.empty() ? fs::path() : fs::path(dir) / ("opencl-" + hex(fnv(key)) + ".bin");
}
}  // namespace

std::string read_binary(const std::string& key) {
  const fs::path p = entry(key);
  if (p.empty()) return "";
  std::ifstream in(p, std::ios::binary);
  Header h{};
  if (!in || !in.read(reinterpret_cast<char*>(&h), sizeof h)) return "";
  if (std::memcmp(h.magic, kMagic, 8) != 0 || h.key_hash != fnv(key) || h.bytes == 0 ||
      h.bytes > (256u << 20))
    return "";
  std::string bin(size_t(h.bytes), '\0');
  if (!in.read(bin.data(), std::streamsize(h.bytes)) || in.peek() != EOF) return "";
  return fnv(bin) == h.checksum ? bin : "";
}

void write_binary(const std::string& key, const std::string& binary) {
  const fs::path p = entry(key);
  if (p.empty() || binary.empty()) return;
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  const fs::path tmp = p.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    Header h{};
    std::memcpy(h.magic, kMagic, 8);
    h.key_hash = fnv(key);
    h.bytes = binary.size();
    h.checksum = fnv(binary);
    out.write(reinterpret_cast<const char*>(&h), sizeof h);
    out.write(binary.data(), std::streamsize(binary.size()));
    if (!out) {
      out.close();
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, p, ec);  // atomic: readers see the old entry or the whole new one
  if (ec) fs::remove(tmp, ec);
}

Program OpenCLBackend::build(const codegen::Kernel& k) {
  const Functions& f = fn();
  const std::string key = k.source + "\n" + k.build_options + "\n" + device_name_ + "\n" + driver_;
  cl_int err = CL_SUCCESS;
  Program p;
  const std::string bin = read_binary(key);
  if (!bin.empty()) {
    const size_t n = bin.size();
    const auto* data = reinterpret_cast<const unsigned char*>(bin.data());
    cl_int status = CL_SUCCESS;
    p.program = f.clCreateProgramWithBinary(context_, 1, &device_, &n, &data, &status, &err);
    if (err != CL_SUCCESS || status != CL_SUCCESS ||
        f.clBuildProgram(p.program, 1, &device_, k.build_options.c_str(), nullptr, nullptr) !=
            CL_SUCCESS) {
      if (p.program) f.clReleaseProgram(p.program);
      p.program = nullptr;  // a binary this driver rejects: build from source
    } else {
      ++loaded_;
    }
  }
  if (!p.program) {
    const char* src = k.source.c_str();
    const size_t len = k.source.size();
    p.program = f.clCreateProgramWithSource(context_, 1, &src, &len, &err);
    if (err != CL_SUCCESS) fail("clCreateProgramWithSource", err);
    err = f.clBuildProgram(p.program, 1, &device_, k.build_options.c_str(), nullptr, nullptr);
    if (err != CL_SUCCESS) {
      size_t n = 0;
      f.clGetProgramBuildInfo(p.program, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
      std::string log(n, '\0');
      f.clGetProgramBuildInfo(p.program, device_, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
      f.clReleaseProgram(p.program);
      EMBER_FAIL("opencl", "kernel ", k.name, " does not build on ", device_name_, " (",
                 error_name(err), "):\n", log);
    }
    ++built_;
    size_t n = 0;
    if (f.clGetProgramInfo(p.program, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, nullptr) ==
            CL_SUCCESS &&
        n > 0) {
      std::string out(n, '\0');
      unsigned char* ptr = reinterpret_cast<unsigned char*>(out.data());
      if (f.clGetProgramInfo(p.program, CL_PROGRAM_BINARIES, sizeof ptr, &ptr, nullptr) ==
          CL_SUCCESS)
        write_binary(key, out);
    }
  }
  p.kernel = f.clCreateKernel(p.program, "ember_main", &err);
  if (err != CL_SUCCESS) {
    f.clReleaseProgram(p.program);
    EMBER_FAIL("opencl", "kernel ", k.name, ": clCreateKernel failed: ", error_name(err));
  }
  return p;
}

}  // namespace ember::cl
