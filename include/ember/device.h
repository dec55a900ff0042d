// Devices: which backend runs an op. Chosen at run time (as Burn and LibTorch do).
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "ember/dtype.h"

namespace ember {

/// Backend families. `ref` is the portable reference (the oracle), `cpu` the fast default.
enum class DeviceType : uint8_t { ref, cpu, vulkan, cuda, opencl, webgpu };

/// Which adapter a GPU backend should take, as Burn's WgpuDevice.
/// DefaultDevice picks discrete, then integrated, virtual, CPU; Existing(id) names a device the
/// application created and registered.
struct DeviceKind {
  enum class Kind : uint8_t {
    DiscreteGpu,
    IntegratedGpu,
    VirtualGpu,
    Cpu,
    DefaultDevice,
    Existing
  };
  Kind kind = Kind::DefaultDevice;
  int64_t index = 0;

  static DeviceKind DiscreteGpu(int64_t i = 0) { return {Kind::DiscreteGpu, i}; }
  static DeviceKind IntegratedGpu(int64_t i = 0) { return {Kind::IntegratedGpu, i}; }
  static DeviceKind VirtualGpu(int64_t i = 0) { return {Kind::VirtualGpu, i}; }
  static DeviceKind Cpu() { return {Kind::Cpu, 0}; }
  static DeviceKind DefaultDevice() { return {Kind::DefaultDevice, 0}; }
  static DeviceKind Existing(int64_t id) { return {Kind::Existing, id}; }
  /// Parses "IntegratedGpu(1)", "Cpu", "DefaultDevice", "Existing(3)". Throws ember::Error.
  static DeviceKind parse(const std::string& s);
  std::string str() const;
  bool operator==(const DeviceKind& o) const { return kind == o.kind && index == o.index; }
};

/// A device: a backend type plus an index (an adapter for GPU backends).
class Device {
 public:
  /// The fast CPU backend (the default).
  static Device cpu();
  /// The reference backend: plain loops, every dtype; the oracle the others are tested against.
  static Device ref();
  /// A Vulkan adapter. Throws ember::Error ("backend not built" / "no such device").
  static Device vulkan(DeviceKind kind = DeviceKind::DefaultDevice());
  /// CUDA device `index`. Throws ember::Error ("backend not built" / "no such device").
  static Device cuda(int64_t index = 0);
  /// OpenCL device `index` (every device of every platform, in ICD enumeration order; see
  /// `ember devices`). Throws ember::Error ("backend not built" / "no such device").
  static Device opencl(int64_t index = 0);
  /// The browser's WebGPU device (the WebAssembly build only: the page's navigator.gpu adapter,
  /// which the JavaScript API opens before Ember starts). Throws ember::Error ("backend not
  /// built" natively; "no WebGPU adapter" in a browser without one).
  static Device webgpu();
  /// Parses "cpu", "cpu:0", "ref", "ref:0", "vulkan", "vulkan:0", "vulkan:IntegratedGpu(1)",
  /// "cuda:0", "opencl", "opencl:1", "webgpu" (as torch.device: no spaces). Throws ember::Error on
  /// anything else, "cpu:1" included.
  static Device parse(const std::string& s);
  /// The device new tensors go to: env EMBER_DEVICE if set, else cpu; or set_default_device().
  /// Throws ember::Error naming EMBER_DEVICE when its value is not a usable device.
  static Device default_device();
  static void set_default_device(const Device& d);

  Device() : type_(DeviceType::cpu), index_(0) {}
  DeviceType type() const { return type_; }
  int64_t index() const { return index_; }
  std::string str() const;  // "cpu", "ref", "vulkan:0", "cuda:0", "opencl:0", "webgpu"
  bool operator==(const Device& o) const { return type_ == o.type_ && index_ == o.index_; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  /// Host-addressable memory (ref and cpu): data pointers can be read directly.
  bool is_host() const { return type_ == DeviceType::ref || type_ == DeviceType::cpu; }

  Device(DeviceType t, int64_t index) : type_(t), index_(index) {}

 private:
  DeviceType type_;
  int64_t index_;
};
std::ostream& operator<<(std::ostream& os, const Device& d);

/// One entry of available_devices(): what `ember devices` prints.
struct DeviceInfo {
  Device device;
  std::string name;           // e.g. "reference (portable loops)", "llvmpipe (LLVM 15)"
  std::string kind;           // "Cpu", "DiscreteGpu", ...
  std::vector<DType> dtypes;  // supported dtypes
  std::string details;        // free text: threads, memory, driver
};

/// Every device that can run now (ref and cpu always; GPU backends when built and present).
std::vector<DeviceInfo> available_devices();
/// Whether `device` can hold and compute tensors of `dtype`.
bool supports_dtype(const Device& device, DType dtype);
/// Waits until every queued op on `device` has finished (runs its recorded stream first).
void sync(const Device& device);

/// What a device's lazy stream ran (stream_stats), counted since start or reset_stream_stats.
/// A "kernel" is one launch of the backend's: a fused graph, or one primitive run eagerly.
struct StreamStats {
  int64_t recorded = 0;   // ops recorded into the stream (fusion on)
  int64_t graphs = 0;     // fused graphs run as one kernel (also a matmul with its epilogue)
  int64_t fused_ops = 0;  // recorded ops those graphs replaced (the matmul counted)
  int64_t eager_ops = 0;  // primitives run one by one (not fusible, fusion off, fallback)
  int64_t dropped = 0;    // recorded outputs never written: no tensor held them any more
  int64_t flushes = 0;    // times the stream ran
  int64_t kernels() const { return graphs + eager_ops; }
};

/// Lazy execution and kernel fusion (docs/ARCHITECTURE.md, "The stream"). On devices that fuse
/// (cpu, vulkan, opencl) element-wise ops are recorded and run as fused kernels when a result is
/// needed; ref always runs eagerly. The environment's EMBER_FUSION=0 turns fusion off
/// everywhere at start; set_fusion changes one device (turning it off runs what is recorded).
/// Throws ember::Error for devices that are not built/present.
void set_fusion(const Device& device, bool on);
bool fusion_enabled(const Device& device);
StreamStats stream_stats(const Device& device);
void reset_stream_stats(const Device& device);

/// Autotuning (docs/ARCHITECTURE.md, "The autotuner"): ops with several implementations (the
/// cpu GEMM library, the cpu convolution layout, the cpu fused-graph tile size, ...) time them on
/// first use of a shape class and keep the fastest, in memory and in a cache file per device
/// (under $XDG_CACHE_HOME/ember/autotune, else ~/.cache/ember/autotune; env
/// EMBER_AUTOTUNE_CACHE names another folder). Env EMBER_AUTOTUNE=off|minimal|balanced|full sets
/// the effort (default balanced; off: fixed heuristics, no timing, no file). Results never
/// depend on the choice beyond the op's rounding (EMBER_CHECK=1 compares every variant with the
/// default while tuning and throws ember::Error on a mismatch).
struct AutotuneStats {
  int64_t tuned = 0;       // op keys timed by this process
  int64_t timed_runs = 0;  // candidate runs those timings made
  int64_t loaded = 0;      // choices read from the cache file
  int64_t entries = 0;     // choices held now (loaded or tuned)
  std::string cache_file;  // the device's cache file ("" when there is none: effort off, no folder)
};
/// The autotuner's counters for `device` since start or clear_autotune_cache. Throws
/// ember::Error for devices that are not built/present. Thread-safe.
AutotuneStats autotune_stats(const Device& device);
/// Forgets every autotuned choice of `device` and deletes its cache file, so that the next use
/// of each op times its variants again. Throws ember::Error for devices that are not
/// built/present. Thread-safe.
void clear_autotune_cache(const Device& device);

/// Bytes held by a device's caching allocator (as torch.cuda.memory_allocated / memory_reserved /
/// max_memory_allocated): `allocated` by live tensors (rounded up to the allocator's size
/// classes), `reserved` = allocated + cached free blocks, `peak` the highest `allocated` so far.
struct MemoryStats {
  int64_t allocated = 0;
  int64_t reserved = 0;
  int64_t peak = 0;
};
/// The allocator statistics of `device`; all zeros for backends that do not cache (ref).
/// Throws ember::Error for devices that are not built/present. Thread-safe.
MemoryStats memory_stats(const Device& device);
/// Returns the cached free blocks of `device`'s allocator to the system (as
/// torch.cuda.empty_cache); live tensors are untouched. Thread-safe.
void empty_cache(const Device& device);

/// Threads the cpu backend's kernels use (as torch.get_num_threads): env EMBER_NUM_THREADS when
/// it is a positive integer (otherwise a warning on stderr), else the hardware threads; at most
/// max(64, 4 x hardware threads). oneDNN's GEMM keeps its own (OpenMP) threads.
int get_num_threads();
/// Sets the cpu backend's thread count (n <= 0 restores the default; capped as above, with a
/// warning). Results do not depend on it.
void set_num_threads(int n);

}  // namespace ember
