// The OpenCL backend: the runtime of the shared GPU stream (runtime/kernel_backend.h) on an
// in-order OpenCL command queue. Launches are enqueued as they are recorded; a batch ends with a
// marker event the stream waits on. Matmuls go to CLBlast when it is installed (clblast.cpp).
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/opencl/loader.h"
#include "runtime/kernel_backend.h"

namespace ember::cl {

/// What the program cache did (tests check the disk cache with it).
struct ProgramStats {
  int64_t compiled = 0, loaded_from_disk = 0, memory_hits = 0;
};

/// A kernel build is about to start: kernels compiled by the driver now or at their launch.
void note_driver_work();
/// Registers the exit hook that waits for every queue again when a build happened since the
/// last time, after a build or after a wait (opencl_backend.cpp says why).
void hook_exit_after_driver_work(bool after_wait);

class OpenCLBackend : public runtime::KernelBackend {
 public:
  /// Creates the context and queue of `device` (opencl:index).
  OpenCLBackend(int64_t index, cl_platform_id platform, cl_device_id device);
  ~OpenCLBackend() override;

  /// At exit: waits for every queued kernel; never throws.
  void quiesce() noexcept;
  std::string name() const override { return "opencl"; }
  Device device() const override { return Device(DeviceType::opencl, index_); }
  void* allocate(int64_t nbytes) override;
  void deallocate(void* ptr, int64_t nbytes) override;
  void write_bytes(void* dst, int64_t dst_offset, const void* src, int64_t nbytes) override;
  void read_bytes(const void* src, int64_t src_offset, void* dst, int64_t nbytes) override;
  bool supports_dtype(DType t) const override;
  DeviceInfo info() const override;
  MemoryStats memory_stats() const override;
  void empty_cache() override;

  /// The compiled program of a kernel (the runtime's compile(), public for the cache tests).
  const void* compile(const codegen::Kernel& k) override;
  const ProgramStats& program_stats() const { return stats_; }
  /// Whether matmuls run through CLBlast (libclblast.so.1 found, EMBER_OPENCL_CLBLAST != 0).
  bool clblast_enabled() const;
  /// Matmuls CLBlast ran so far.
  int64_t clblast_calls() const { return clblast_calls_; }
  cl_command_queue queue() const { return queue_; }
  cl_context context() const { return ctx_; }

 protected:
  codegen::Dialect dialect() const override { return codegen::Dialect::opencl; }
  const codegen::Caps& caps() const override { return caps_; }
  void start_runtime() override {}
  Buffer alloc_scratch(int64_t nbytes) override;
  void free_scratch(Buffer b) override;
  ArenaBlock alloc_arena(int64_t nbytes) override;
  void free_host_block(Buffer b) override;
  void free_arena(const ArenaBlock& b) override;
  int64_t arena_alignment() const override { return 16; }
  bool stream_ordered() const override { return true; }  // one in-order queue
  void open_batch(Batch&) override {}
  void record(Batch& b, const LaunchArgs& a) override;
  void submit_batch(Batch& b) override;
  bool batch_done(Batch& b, bool wait) override;
  void reset_batch(Batch& b) override;
  bool execute_native(const ir::Op& op) override;
  bool native_applies(const ir::Op& op) const override;

 private:
  struct ClBatch;
  static ClBatch& state(Batch& b);
  struct Program {
    cl_program program = nullptr;
    cl_kernel kernel = nullptr;
  };
  std::string device_string(cl_device_info what) const;
  cl_program build(const codegen::Kernel& k);
  cl_program build_binary(const std::string& path, uint64_t hash, const std::string& opts);
  void store_binary(cl_program p, const std::string& path, uint64_t hash);
  static int64_t size_class(int64_t nbytes);
  cl_mem new_buffer(int64_t bytes, cl_mem_flags flags);

  int64_t index_;
  cl_device_id dev_;
  cl_context ctx_ = nullptr;
  cl_command_queue queue_ = nullptr;
  codegen::Caps caps_;
  std::string dev_name_, driver_, version_, options_, cache_dir_;
  cl_device_type type_ = 0;
  bool unified_ = false;
  uint64_t mem_bytes_ = 0;
  size_t max_wg_ = 0;
  // The caching allocator: free buffers by size class until empty_cache(). Locked by itself
  // (storages are freed from retire() and from any thread).
  mutable std::mutex mem_mutex_;
  std::multimap<int64_t, cl_mem> free_;
  MemoryStats mem_;
  std::vector<ArenaBlock> free_arenas_;
  std::unordered_map<std::string, Program> programs_;
  ProgramStats stats_;
  int64_t clblast_calls_ = 0;
};

/// opencl:index (every device of every platform, in enumeration order). Throws ember::Error for
/// an index naming no device, or when the context cannot be created.
OpenCLBackend& backend(int64_t index);
/// A new backend on opencl:index with its own queue and caches (tests: "another process").
std::unique_ptr<OpenCLBackend> make_backend(int64_t index);
/// Every OpenCL device (empty when there is no loader or no device).
std::vector<Device> devices();
/// The default max_tasks (ops per batch before it is flushed; EMBER_OPENCL_MAX_TASKS).
constexpr int64_t kDefaultMaxTasks = 16;

}  // namespace ember::cl
