// The backend interface: a small runtime (memory, copies, sync) plus execute() of primitive ops.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "ember/device.h"
#include "ir/fused.h"
#include "ir/graph.h"
#include "ir/ops.h"
#include "runtime/stream_io.h"

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
  /// Copy bytes between host memory and this device's buffer at a byte offset. Both run the
  /// recorded stream first (flush_stream).
  void write(void* dst, int64_t dst_offset, const void* src, int64_t nbytes);
  void read(const void* src, int64_t src_offset, void* dst, int64_t nbytes);
  /// Runs one primitive now (or queues it on the device's own queue) after what the stream
  /// recorded: the eager path (tests and internal callers). The frontend calls submit().
  void execute(const ir::Op& op);
  /// Runs an optional fused op (ir/fused.h) and returns true, or returns false (nothing written)
  /// when this backend does not accelerate it; the frontend then runs the composite. Runs the
  /// recorded stream first, except for a forward convolution the backend takes as an anchor
  /// (conv_anchorable) while fusion is on: that one is recorded (true) and runs at the flush.
  bool execute_fused(const ir::Fused& op);
  /// Runs the recorded stream, then waits for the device (Backend::sync_device).
  void sync();

  // ---- the lazy stream and its fusion planner (src/runtime/stream.cpp) ----
  /// What the frontend calls for each primitive: an op this backend can fuse (fusible()) is
  /// recorded while fusion is on; any other op runs the recorded stream, then itself (execute).
  /// The stream also runs at a read, write, sync, fused op or host access to a storage it uses
  /// (Tensor::data_ptr), and when it holds stream_capacity() ops.
  void submit(const ir::Op& op);
  /// Plans the recorded ops into fused graphs and runs them (execute_graph, else op by op). An
  /// output nobody holds any more is not written. Thread-safe; a no-op when nothing is recorded.
  /// When a graph throws, the others still run and the stream is left empty; the first error is
  /// rethrown.
  void flush_stream();
  /// Whether ops on this backend are recorded and fused (default: on for backends that fuse,
  /// unless EMBER_FUSION=0). Turning it off runs the stream first.
  bool fusion_enabled() const { return fusion_ && fusion_capable_; }
  void set_fusion(bool on);
  /// Recorded ops that make the stream run by themselves (>= 1; EMBER_STREAM_OPS, default 256).
  int64_t stream_capacity() const { return capacity_; }
  void set_stream_capacity(int64_t n);
  /// Counters since start or reset_stream_stats(): what the stream ran.
  StreamStats stream_stats() const;
  void reset_stream_stats();

  virtual bool supports_dtype(DType t) const = 0;
  virtual DeviceInfo info() const = 0;
  /// What the autotuner's cache file records as this device (runtime/autotune.h): a file made
  /// on another device is ignored. Default: name, info().name and info().details.
  virtual std::string autotune_identity() const;
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
  /// Inside the execution of ops (an autotuner's sync while the stream runs) it does nothing:
  /// a check may read a tensor whose op has not run yet; the next sync after them runs it.
  void run_deferred_checks();
  void set_random_state(uint64_t s, uint64_t offset) {
    seed_ = s;
    offset_ = offset;
  }

  /// Loads + outputs one graph kernel may bind (0: no limit); the planner splits above it,
  /// counting only the writes still needed when the graph closes.
  virtual int64_t max_graph_buffers() const { return 0; }

 protected:
  /// Runs (or queues) one primitive; the stream has run what it recorded before.
  virtual void run_op(const ir::Op& op) = 0;
  /// Waits until the device has finished everything queued (sync() runs the stream first).
  virtual void sync_device() {}
  virtual void write_bytes(void* dst, int64_t dst_offset, const void* src, int64_t nbytes) = 0;
  virtual void read_bytes(const void* src, int64_t src_offset, void* dst, int64_t nbytes) = 0;
  virtual bool run_fused(const ir::Fused&) { return false; }
  /// Whether the backend can take `op` inside a fused graph (a Copy, Fill, Unary, Binary or
  /// Where it has a graph kernel for). Never called for ops of other kinds. An op whose eager
  /// kernel can throw on data (integer division by zero) must not be fusible.
  virtual bool fusible(const ir::Op&) const { return false; }
  /// Runs a fused graph as one kernel (or a few) and returns true, or returns false having
  /// written nothing: the stream then runs the graph's ops one by one.
  virtual bool execute_graph(const ir::FusedGraph&) { return false; }
  /// Whether `op` (not element-wise; today an ir::Matmul) may be recorded as the anchor of a
  /// group: the element-wise ops after it that read its whole output (same elements, row-major)
  /// join it as its epilogue, and the group goes to execute_anchored. The op must not throw on
  /// data. Default: nothing is an anchor (the op runs at once, after the stream).
  virtual bool anchorable(const ir::Op&) const { return false; }
  /// Runs `anchor` and its epilogue as one kernel and returns true, or returns false having
  /// written nothing (the stream then runs the anchor, then the epilogue as a graph). The
  /// epilogue reads the anchor's dst as inputs[anchor_input] (contiguous, the anchor's elements
  /// in row-major order, in the graph's shape); the anchor's own dst is dead (nothing holds or
  /// reads it later) and need not be written. Results may differ from the eager ops by the
  /// order of arithmetic (check mode compares within the dtype's tolerance).
  virtual bool execute_anchored(const ir::Op& /*anchor*/, const ir::FusedGraph& /*epilogue*/,
                                int32_t /*anchor_input*/) {
    return false;
  }
  /// As anchorable/execute_anchored, for a forward convolution offered through execute_fused.
  /// conv_anchorable must only say yes to a convolution run_fused will run (it returns true then:
  /// the frontend has no composite to fall back on once it is recorded). Default: never.
  virtual bool conv_anchorable(const ir::Conv&) const { return false; }
  virtual bool execute_conv_anchored(const ir::Conv& /*anchor*/, const ir::FusedGraph& /*epilogue*/,
                                     int32_t /*anchor_input*/) {
    return false;
  }
  /// Whether `op` (sum, prod, max or min without indices) may be recorded and end a fused graph
  /// whose node it reduces (FusedGraph::reductions): the backend's execute_graph folds it, then
  /// runs the graph's `after` (the element-wise ops on the result, fuse-on-write) if any. The
  /// op must not throw on data. Default: no reduction is recorded (each runs at once).
  virtual bool reducible(const ir::Reduce&) const { return false; }
  /// Backends that fuse call it from their constructor.
  void enable_fusion();

  /// Drops what is recorded without running it (derived destructors call it while the device
  /// is still there: the recorded tensors free their buffers through it).
  void drop_stream() noexcept;

 private:
  using StreamOp = detail::StreamOp;
  void run_stream_ops(const std::vector<StreamOp>& ops);
  /// Appends `op` to the stream (its storages' pending counts go up). The op shares its tensors'
  /// impls: metadata changes in place (Module::to) flush the stream first.
  void record(const StreamOp& op);
  /// Runs one recorded op now (a convolution anchor through run_fused).
  void run_recorded(const StreamOp& op);
  /// execute_anchored or execute_conv_anchored, by the anchor's kind.
  bool run_anchor_group(const StreamOp& anchor, const ir::FusedGraph& g, int32_t anchor_input);
  bool recordable_kind(const ir::Op& op) const;
  /// execute_graph(g), then (EMBER_CHECK=1) ops[index] one by one on copies of what they write;
  /// throws ember::Error at the first element that differs (stream_check.cpp).
  bool execute_graph_checked(const ir::FusedGraph& g, const std::vector<StreamOp>& ops,
                             const std::vector<size_t>& index);
  /// execute_anchored, then (EMBER_CHECK=1) ops[anchor] and ops[index] one by one on copies;
  /// throws at the first element outside the tolerance (stream_check.cpp).
  bool execute_anchored_checked(const ir::FusedGraph& g, int32_t anchor_input,
                                const std::vector<StreamOp>& ops, size_t anchor,
                                const std::vector<size_t>& index);
  /// Runs `fused`, then ops[index] one by one on copies of what they write, and compares each
  /// of g's outputs: bitwise when rtol is 0, else |fused - eager| <= rtol * (1 + |eager|); each
  /// reduction's dst (and each output of the graph's `after`, computed from it) within its
  /// dtype's tolerance for a changed summation order.
  bool run_checked(const std::function<bool()>& fused, const ir::FusedGraph& g,
                   const std::vector<StreamOp>& ops, const std::vector<size_t>& index, double rtol);

  std::recursive_mutex stream_mutex_;
  std::vector<StreamOp> pending_;
  std::atomic<int64_t> pending_count_{0};  // pending_.size() until a flush has finished
  std::atomic<bool> fusion_{false};
  bool fusion_capable_ = false;
  int64_t capacity_ = 256;
  std::atomic<int64_t> n_recorded_{0}, n_graphs_{0}, n_fused_ops_{0}, n_eager_{0}, n_dropped_{0},
      n_flushes_{0};

  uint64_t seed_ = 0x5eed;
  uint64_t offset_ = 0;
  std::mutex checks_mutex_;
  std::vector<std::function<void()>> checks_;
  std::atomic<int> running_ops_{0};  // > 0 while flush_stream or execute runs ops
  friend struct RunningOps;
};

/// Seeds every backend created so far and every one created later (torch.manual_seed).
void seed_all_backends(uint64_t seed);

/// The backend that owns `device`. Throws ember::Error for devices that are not built/present.
Backend& backend_for(const Device& device);
/// Shorthand: backend_for(t.device()).submit(op), after the version bump autodiff checks.
void run(const ir::Op& op);

}  // namespace ember
