// The base of every GPU backend: the per-device stream of kernel launches that codegen::lower()
// makes. It owns what every GPU backend needs the same way: the op queue (one open batch, then
// batches in flight), flushing at a read, a sync or every max_tasks ops, keep-alive of the
// tensors, scratch buffers and params that recorded work binds until that work has retired, the
// params arena, and execute(op) = lower, then record its launches. A backend implements only its
// runtime (the pure virtual functions under "the runtime"): allocate/free, copy, compile, launch,
// submit, fence, capabilities. docs/adding_a_backend.md has the checklist.
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "codegen/kernel.h"
#include "codegen/lower.h"
#include "runtime/backend.h"

namespace ember::runtime {

class KernelBackend : public Backend {
 public:
  /// max_tasks: ops recorded before a batch is submitted (>= 1).
  explicit KernelBackend(int64_t max_tasks);
  ~KernelBackend() override;

  /// execute_native(op), else lower(op, dialect(), caps()) then run() (profiled when
  /// profiling() says so).
  void run_op(const ir::Op& op) final;
  /// Submits the open batch, waits for every batch in flight, then check_device_errors() and
  /// the deferred data checks (Backend::defer_check). Reads of a backend sync first.
  void sync_device() override;

  /// Records the launches of a lowering (tests call it directly). Every kernel is compiled
  /// first, so a kernel that does not build leaves nothing recorded.
  void run(const codegen::Lowering& l);
  int64_t max_tasks() const { return max_tasks_; }
  /// Submits what is open, then records `n` (>= 1) ops per batch from now on.
  void set_max_tasks(int64_t n);
  /// Batches submitted so far (tests check batching with it).
  int64_t submissions() const { return submissions_; }
  /// Whether the device has allocated or run anything (options may change only before).
  bool used() const { return used_; }

  /// Caps::max_buffers: what one fused-graph kernel may bind besides its params.
  int64_t max_graph_buffers() const override;

 protected:
  // ---- fusion (Backend's stream): one generated kernel per fused graph ----
  /// Copy, Fill, Unary, Binary and Where whose dtypes the device supports (codegen::Caps).
  bool fusible(const ir::Op& op) const override;
  /// codegen::lower_graph, then run() (one op counted); false when the graph needs something
  /// the device lacks (a dtype, or f64 for a function), remembered per graph key.
  bool execute_graph(const ir::FusedGraph& g) override;
  /// Sum, prod, max and min without indices of a non-empty, non-bool src whose dtype the device
  /// has, into a dst of that dtype: execute_graph folds them into their graph's kernel
  /// (codegen::lower_graph_reduce) and runs the graph's `after` next.
  bool reducible(const ir::Reduce& op) const override;
  /// Float matmuls (f32, f16, bf16, f64) whose dtype the device has, not while profiling.
  bool anchorable(const ir::Op& op) const override;
  /// The matmul with its epilogue as one generated kernel (codegen::lower_matmul_epilogue), in
  /// the tile the autotuner chose for the plain matmul; false when the epilogue does not fit
  /// the kernel (an operand not viewable as [B, M, N], too many buffers) or the device lacks
  /// something it needs (remembered per variant and graph key).
  bool execute_anchored(const ir::Op& anchor, const ir::FusedGraph& epilogue,
                        int32_t anchor_input) override;

 protected:
  /// A device buffer the base binds or owns: a tensor's Storage::data, or a scratch buffer.
  using Buffer = void*;
  /// A host-writable block the params of a batch's launches are packed into.
  struct ArenaBlock {
    Buffer handle = nullptr;  // what launch() binds
    uint8_t* host = nullptr;  // where the base writes params
    int64_t bytes = 0;
  };
  /// What the backend keeps per batch (command buffer, fence, descriptor pools, event...).
  struct BatchState {
    virtual ~BatchState() = default;
  };
  /// One batch of recorded work and everything it keeps alive.
  struct Batch {
    std::unique_ptr<BatchState> state;  // the backend's; made by open_batch on first use
    std::vector<Tensor> keep;           // tensors bound by recorded launches
    std::vector<Buffer> scratch;        // alloc_scratch() buffers, freed when retired
    std::vector<ArenaBlock> arenas;     // params; the last one is being filled
    std::vector<Buffer> host_blocks;    // staging buffers (free_host_block when retired)
    int64_t arena_used = 0;
    int64_t ops = 0;
  };
  /// One launch as the backend records it: the buffers bound in kernel order (tensor storage or
  /// scratch), then the params at `params_offset` of `params`.
  struct LaunchArgs {
    const codegen::Kernel* kernel = nullptr;
    const void* program = nullptr;  // what compile() returned
    std::vector<Buffer> buffers;
    std::vector<int64_t> buffer_bytes;  // bytes of each (tensor storage size or scratch size)
    ArenaBlock params;
    int64_t params_offset = 0;
    int64_t params_bytes = 0;  // the words written at params_offset
    uint32_t groups = 1;
  };

  // ---- the runtime a backend implements ----
  virtual codegen::Dialect dialect() const = 0;
  virtual const codegen::Caps& caps() const = 0;
  /// Creates allocators, caches and queues on first use (after the backend's options are set).
  virtual void start_runtime() = 0;
  /// Throws ember::Error when the device was lost (then nothing may be recorded).
  virtual void check_alive() const {}
  /// Device memory for a lowering's scratch buffer, freed by free_scratch when its batch retires.
  virtual Buffer alloc_scratch(int64_t nbytes) = 0;
  virtual void free_scratch(Buffer b) = 0;
  /// A host-writable params block of `nbytes`, bound to launches as a read-only buffer.
  virtual ArenaBlock alloc_arena(int64_t nbytes) = 0;
  virtual void free_arena(const ArenaBlock& b) = 0;
  /// Byte alignment of params offsets within an arena block.
  virtual int64_t arena_alignment() const = 0;
  /// Frees a staging buffer a backend put in Batch::host_blocks.
  virtual void free_host_block(Buffer) {}
  /// The compiled form of a kernel (cached by the backend; lives as long as the backend).
  /// Throws ember::Error naming the kernel when it does not build.
  virtual const void* compile(const codegen::Kernel& k) = 0;
  /// Throws ember::Error when the launch exceeds the device's limits (groups, buffer sizes).
  virtual void check_launch(const codegen::Launch&) const {}
  /// Opens the batch for recording (state made or reused).
  virtual void open_batch(Batch& b) = 0;
  /// Records one launch into the open batch.
  virtual void record(Batch& b, const LaunchArgs& a) = 0;
  /// Hands a batch to the device. On an error it throws; the base then drops the batch.
  virtual void submit_batch(Batch& b) = 0;
  /// Whether a submitted batch has finished (waits for it when `wait`).
  virtual bool batch_done(Batch& b, bool wait) = 0;
  /// Returns a retired or dropped batch's state to reusable (descriptor pools, command buffer).
  virtual void reset_batch(Batch&) {}
  /// Drops an open batch that was never submitted (at exit or after a failed submit).
  virtual void discard_batch(Batch&) {}
  /// Errors the device reported (validation layer); thrown at sync.
  virtual void check_device_errors() {}
  /// Runs `op` through a library the backend links (CLBlast's GEMM) and returns true, or returns
  /// false to have it lowered. It records into batch() (keeping its tensors) and calls count_op().
  virtual bool execute_native(const ir::Op&) { return false; }
  /// Whether execute_native(op) would take `op`: the matmul autotuner then times the library
  /// (its default) against the generated variants.
  virtual bool native_applies(const ir::Op&) const { return false; }
  /// Per-op profiling (EMBER_VULKAN_PROFILE): when true, execute() times each op alone.
  virtual bool profiling() const { return false; }
  virtual void profile_op(const ir::Op&, const codegen::Lowering&, double, double) {}
  /// Called after a batch retired (Vulkan registers its exit handler here).
  virtual void after_retire() {}
  /// Whether device work runs in recording order, each command finished before the next starts,
  /// and freeing a buffer that queued work still uses is safe (OpenCL's in-order queue and
  /// clReleaseMemObject). Then a tensor's buffer returns to the allocator as soon as its last
  /// handle drops, and later work reuses it at once (stream-ordered reuse, as PyTorch's CUDA
  /// caching allocator): a loop making a new tensor per op needs no fresh memory per op.
  /// Otherwise recorded work keeps the tensors it binds until its batch retires.
  virtual bool stream_ordered() const { return false; }

  // ---- for the backend's own copies and reads ----
  /// The open batch (opened now when none is).
  Batch& batch();
  /// Keeps `t` until batch `b` retires, unless the device is stream_ordered().
  void keep_alive(Batch& b, const Tensor& t);
  bool has_open_batch() const { return bool(current_); }
  /// Whether no work is open or in flight.
  bool idle() const { return !current_ && in_flight_.empty(); }
  /// Counts one recorded op (a launch set or a copy) and submits at max_tasks.
  void count_op();
  /// Submits the open batch (if any).
  void flush();
  /// Retires finished batches; with wait_all, waits for every one.
  void retire(bool wait_all);
  /// Drops the open batch unsubmitted and waits for the ones in flight (never throws).
  void drop_open_and_wait() noexcept;
  /// Sets used() and starts the runtime on first use.
  void start_use();
  /// Destroys every batch (open, in flight, recycled) and its state: the backend calls it once its
  /// device is idle, before the device goes.
  void destroy_batches();
  void set_max_tasks_unlocked(int64_t n) { max_tasks_ = n; }
  /// After the backend released its device objects: start_runtime() runs again on next use.
  void mark_unused() { used_ = false; }

  mutable std::recursive_mutex mutex_;

 private:
  void release(Batch& b);
  /// A matmul with more than one variant (the library, the generated tiles) run through the
  /// device's autotuner (runtime/autotune.h); false when there is only one way (lowered as usual).
  bool run_matmul_tuned(const ir::Op& op);
  /// The autotuner's choice for a matmul: -1 when it has one way only or is too small to tune,
  /// else an index into its candidates: "library" first when `native`, then `vs` (the generated
  /// variants). Tuning (the first use of a key) runs the plain matmul into mm.dst.
  int64_t tuned_matmul(const ir::Matmul& mm, bool& native, std::vector<codegen::MatmulVariant>& vs);
  void run_matmul_candidate(const ir::Matmul& mm, bool native,
                            const std::vector<codegen::MatmulVariant>& vs, size_t i);
  /// t's elements (row-major) read back after the device finished: autotune check mode.
  std::vector<double> device_values(const Tensor& t);
  /// Whether one of g's outputs is the storage of one of its inputs (an in-place write).
  static bool writes_an_input(const ir::FusedGraph& g);
  /// A reduction (ir::Reduce) through tuned_reduce; false when the default runs (lowered as
  /// usual).
  bool run_reduce_tuned(const ir::Op& op);
  /// The autotuner's variant for reducing `shape` over `dims` into `dst` (src's dtype t) from
  /// `sources` buffers (src, or a graph's inputs and outputs): null when there are fewer than
  /// kTuneMinWork elements or one variant fits, else one of `vs` (splits only when their
  /// partials fit the device's buffers). Tuning (the first use of a key: op, dtype, outputs and
  /// extent classes, whether the last dim is reduced, `heavy`: elements that run loops) calls
  /// run(v), which must overwrite dst (and any other output) each time.
  const codegen::ReduceVariant* tuned_reduce(
      ir::ReduceOp op, DType t, const Shape& shape, const std::vector<int64_t>& dims,
      const Tensor& dst, int64_t sources, bool heavy, std::vector<codegen::ReduceVariant>& vs,
      const std::function<void(const codegen::ReduceVariant&)>& run);
  std::pair<ArenaBlock, int64_t> params(Batch& b, const std::vector<uint32_t>& words);

  int64_t max_tasks_;
  bool used_ = false;
  // keys lower_graph (and lower_matmul_epilogue: variant + dtype + graph key) rejected
  std::unordered_set<std::string> unsupported_graphs_;
  std::unique_ptr<Batch> current_;
  std::deque<std::unique_ptr<Batch>> in_flight_, free_batches_;
  int64_t submissions_ = 0;
};

}  // namespace ember::runtime
