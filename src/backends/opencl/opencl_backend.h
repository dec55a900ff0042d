// The OpenCL backend: the runtime of the shared GPU stream (runtime/kernel_backend.h) on an
// OpenCL 1.2 device. Kernels are the shared lowerings rendered as OpenCL C (codegen
// Dialect::opencl), built at run time and cached in memory and on disk (programs.cpp). Launches
// are enqueued on one in-order queue as they are recorded; a batch ends with a flush and a
// marker event, which retires it. docs/opencl.md.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/opencl/loader.h"
#include "runtime/kernel_backend.h"

namespace ember::cl {

/// One device allocation: what Storage::data points to for an OpenCL tensor.
struct Buf {
  cl_mem mem = nullptr;
  int64_t bytes = 0;  // the size class
};

/// A built kernel.
struct Program {
  cl_program program = nullptr;
  cl_kernel kernel = nullptr;
};

class OpenCLBackend : public runtime::KernelBackend {
 public:
  OpenCLBackend(int64_t index, cl_platform_id platform, cl_device_id device);
  ~OpenCLBackend() override;

  std::string name() const override { return "opencl"; }
  Device device() const override { return Device(DeviceType::opencl, index_); }
  void* allocate(int64_t nbytes) override;
  void deallocate(void* ptr, int64_t nbytes) override;
  void write(void* dst, int64_t dst_offset, const void* src, int64_t nbytes) override;
  void read(const void* src, int64_t src_offset, void* dst, int64_t nbytes) override;
  bool supports_dtype(DType t) const override;
  DeviceInfo info() const override;
  MemoryStats memory_stats() const override;
  void empty_cache() override;
  /// Programs built from source / loaded from the disk cache so far (tests).
  int64_t programs_built() const { return built_; }
  int64_t programs_loaded() const { return loaded_; }

 protected:
  codegen::Dialect dialect() const override { return codegen::Dialect::opencl; }
  const codegen::Caps& caps() const override { return caps_; }
  void start_runtime() override;
  Buffer alloc_scratch(int64_t nbytes) override { return alloc(nbytes); }
  void free_scratch(Buffer b) override { release(static_cast<Buf*>(b)); }
  ArenaBlock alloc_arena(int64_t nbytes) override;
  void free_arena(const ArenaBlock& b) override;
  int64_t arena_alignment() const override { return 16; }
  const void* compile(const codegen::Kernel& k) override;
  void open_batch(Batch&) override {}
  void record(Batch& b, const LaunchArgs& a) override;
  void submit_batch(Batch& b) override;
  bool batch_done(Batch& b, bool wait) override;

 private:
  struct ClBatch;
  Buf* alloc(int64_t nbytes);
  void release(Buf* b);
  std::string device_string(cl_device_info what) const;
  Program build(const codegen::Kernel& k);

  int64_t index_;
  cl_platform_id platform_;
  cl_device_id device_;
  codegen::Caps caps_;
  std::string device_name_, driver_, version_, extensions_;
  bool host_unified_ = false;
  cl_device_type type_ = 0;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  std::unordered_map<std::string, Program> programs_;
  int64_t built_ = 0, loaded_ = 0;
  // The caching allocator: freed buffers by size class, until empty_cache().
  mutable std::mutex mem_mutex_;
  std::multimap<int64_t, cl_mem> free_;
  MemoryStats stats_;
};

/// Every device of every platform, in enumeration order (opencl:0..n-1); empty without a loader.
std::vector<Device> devices();
/// The backend of opencl:index. Throws ember::Error when no such device exists.
OpenCLBackend& backend(int64_t index);

/// Reads the cached binary of a program keyed by `key` ("" when missing or corrupt) and stores one
/// (atomically; failures are ignored). The folder is EMBER_KERNEL_CACHE_DIR ("off" disables it),
/// else $XDG_CACHE_HOME/ember/kernels or ~/.cache/ember/kernels, as the Vulkan pipeline cache.
std::string read_binary(const std::string& key);
void write_binary(const std::string& key, const std::string& binary);

}  // namespace ember::cl
