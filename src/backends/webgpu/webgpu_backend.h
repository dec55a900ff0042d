// The WebGPU backend (WebAssembly build only): the runtime of the shared GPU stream
// (runtime/kernel_backend.h) over the browser's navigator.gpu, through the functions of
// web/webgpu_lib.js (js_api.h). Kernels are codegen's WGSL; one command encoder per batch, one
// bind group per dispatch, one GPUBuffer per allocation (a cache keyed by size class).
//
// The browser cannot block on the GPU, so reads never wait: request_host_copy(t) queues a copy
// of t's storage into a host shadow, Module.emberWebGPU.settle() (JavaScript) resolves once
// every queued copy has landed, and only then does reading t (Tensor::to(Device::cpu()),
// item(), to_vector()) work, as long as nothing wrote the storage since. docs/webgpu.md.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/kernel_backend.h"

namespace ember::webgpu {

/// Whether the page gave the module a WebGPU device (Module.emberWebGPU.device, from
/// web/webgpu_device.mjs's openWebGPU()).
bool available();

/// Queues a copy of `t`'s storage into host memory (after everything queued on the device) and
/// returns the tensor whose storage is copied: `t` when contiguous, else `t.contiguous()`. Once
/// Module.emberWebGPU.settle() has resolved, reading the returned tensor returns the copy until
/// the storage is written again. Throws ember::Error when `t` is not on webgpu, or for a device
/// error raised since the last check.
Tensor request_host_copy(const Tensor& t);

class WebGPUBackend : public runtime::KernelBackend {
 public:
  /// Reads the device's limits and features. Throws ember::Error without a device.
  WebGPUBackend();
  ~WebGPUBackend() override;

  std::string name() const override { return "webgpu"; }
  Device device() const override { return Device(DeviceType::webgpu, 0); }
  /// One buffer of the size class of `nbytes`; above the device's maxBufferSize an ember::Error
  /// naming the size and the limit.
  void* allocate(int64_t nbytes) override;
  void deallocate(void* ptr, int64_t nbytes) override;
  /// queue.writeBuffer after the open batch (submitted first). dst_offset must be a multiple of
  /// 4, and so must nbytes unless the write ends the storage (throws ember::Error otherwise).
  void write_bytes(void* dst, int64_t dst_offset, const void* src, int64_t nbytes) override;
  /// From the storage's host copy (request_host_copy, landed, storage not written since);
  /// otherwise throws ember::Error saying what to call first. Never waits.
  void read_bytes(const void* src, int64_t src_offset, void* dst, int64_t nbytes) override;
  bool supports_dtype(DType t) const override;
  DeviceInfo info() const override;
  MemoryStats memory_stats() const override { return mem_; }
  void empty_cache() override;
  /// The compiled pipeline of a kernel (cached in memory by key). Throws ember::Error naming
  /// the kernel for a dialect other than WGSL or a device error raised since the last check.
  const void* compile(const codegen::Kernel& k) override;
  /// Queues the host copy of `st` (request_host_copy without the tensor).
  void request_copy(const Storage& st);
  /// Host copies queued and not landed yet.
  int64_t pending_copies() const;
  /// Pipelines compiled so far.
  int64_t pipelines() const { return int64_t(programs_.size()); }
  const codegen::Caps& device_caps() const { return caps_; }

 protected:
  codegen::Dialect dialect() const override { return codegen::Dialect::wgsl; }
  const codegen::Caps& caps() const override { return caps_; }
  void start_runtime() override;
  void check_alive() const override;
  Buffer alloc_scratch(int64_t nbytes) override;
  void free_scratch(Buffer b) override;
  ArenaBlock alloc_arena(int64_t nbytes) override;
  void free_arena(const ArenaBlock& b) override;
  int64_t arena_alignment() const override { return uniform_align_; }
  void check_launch(const codegen::Launch& l) const override;
  bool stream_ordered() const override { return true; }  // one queue, destroy deferred
  void open_batch(Batch&) override {}
  void record(Batch& b, const LaunchArgs& a) override;
  void submit_batch(Batch& b) override;
  bool batch_done(Batch&, bool) override { return true; }
  void check_device_errors() override;

 private:
  // A host copy of one buffer: the bytes, and what the storage was when it was requested.
  struct Shadow {
    std::vector<uint8_t> bytes;
    int32_t status = 0;  // written by JS: 0 queued, 1 landed, 2 failed
    int copy_id = 0;
    const Storage* storage = nullptr;
    uint64_t writes = 0;  // Storage::writes then
    uint64_t epoch = 0;   // epochs_ of the buffer then
  };
  static int64_t size_class(int64_t nbytes);
  int new_buffer(int64_t bytes, bool uniform);
  void drop_shadow(int handle);
  /// A device write to `handle` (a kernel output, writeBuffer): its shadow is stale.
  void wrote(int handle) { epochs_[handle]++; }

  codegen::Caps caps_;
  double limits_[16] = {};
  int64_t uniform_align_ = 256;
  std::string vendor_, arch_, dev_name_, description_;
  bool fallback_ = false;
  std::multimap<int64_t, int> free_;  // cached buffers by size class
  MemoryStats mem_;
  std::vector<ArenaBlock> free_arenas_;
  std::unordered_map<std::string, std::unique_ptr<int>> programs_;  // kernel key -> pipeline
  std::unordered_map<int, uint64_t> epochs_;
  std::unordered_map<int, std::unique_ptr<Shadow>> shadows_;
};

/// The backend of Device::webgpu(). Throws ember::Error when the page gave no device.
WebGPUBackend& backend();

}  // namespace ember::webgpu
