// The backend interface: a small runtime (memory, copies, sync) plus execute() of primitive ops.
#pragma once
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "ember/device.h"
#include "ir/fused.h"
#include "ir/ops.h"

namespace ember {

class Backend {
 public:
  /// Registers the backend so manual_seed(seed) reaches it; starts from the last such seed.
  Backend();
  virtual ~Backend();
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;
  virtual std::string name() const = 0;
  virtual Device device() const = 0;
  /// Allocate / free `nbytes` of device memory (a host pointer for host backends).
  virtual void* allocate(int64_t nbytes) = 0;
  virtual void deallocate(void* ptr, int64_t nbytes) = 0;
  /// Copy bytes between host memory and this device's buffer at a byte offset.
  virtual void write(void* dst, int64_t dst_offset, const void* src, int64_t nbytes) = 0;
  virtual void read(const void* src, int64_t src_offset, void* dst, int64_t nbytes) = 0;
  /// Queues (or runs) one primitive. Backends may defer work until sync() or a read.
  virtual void execute(const ir::Op& op) = 0;
  /// Runs an optional fused op (ir/fused.h) and returns true, or returns false (nothing written)
  /// when this backend does not accelerate it; the frontend then runs the composite.
  virtual bool execute_fused(const ir::Fused&) { return false; }
  virtual void sync() {}
  virtual bool supports_dtype(DType t) const = 0;
  virtual DeviceInfo info() const = 0;
  /// Caching-allocator statistics and cache release (ember::memory_stats / empty_cache).
  virtual MemoryStats memory_stats() const { return {}; }
  virtual void empty_cache() {}
  /// Next Philox offset for this device's generator (advances it by `count`).
  uint64_t next_random_offset(uint64_t count);
  uint64_t seed() const { return seed_; }
  void set_seed(uint64_t s) {
    seed_ = s;
    offset_ = 0;
  }
  uint64_t random_offset() const { return offset_; }
  /// A check of device data that would cost a host round trip on the op path (an index range, a
  /// class target): GPU backends keep it and run it at their next sync or read, where it reads
  /// the device tensors it captured and throws the op's ember::Error. Host backends never get one
  /// (the frontend checks eagerly there: detail::check_device_data).
  void defer_check(std::function<void()> check);
  /// Runs and clears the deferred checks; the first that fails throws (the others are dropped).
  void run_deferred_checks();
  void set_random_state(uint64_t s, uint64_t offset) {
    seed_ = s;
    offset_ = offset;
  }

 private:
  uint64_t seed_ = 0x5eed;
  uint64_t offset_ = 0;
  std::mutex checks_mutex_;
  std::vector<std::function<void()>> checks_;
};

/// Seeds every backend created so far and every one created later (torch.manual_seed).
void seed_all_backends(uint64_t seed);

/// The backend that owns `device`. Throws ember::Error for devices that are not built/present.
Backend& backend_for(const Device& device);
/// Shorthand: backend_for(t.device()).execute(op).
void run(const ir::Op& op);

}  // namespace ember
