#include "backends/opencl/opencl_backend.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "core/env.h"
#include "ember/error.h"

namespace ember::cl {

namespace {
// A bad value warns and keeps the default (core/env.h).
int64_t env_max_tasks() { return env_int("EMBER_OPENCL_MAX_TASKS", kDefaultMaxTasks, 1, 1000000); }

struct Entry {
  cl_platform_id platform;
  cl_device_id device;
};

// Every device of every platform, in enumeration order (empty without a loader).
const std::vector<Entry>& entries() {
  static const std::vector<Entry> all = [] {
    std::vector<Entry> out;
    const Fns* f = try_loader();
    cl_uint np = 0;
    if (!f || f->clGetPlatformIDs(0, nullptr, &np) != CL_SUCCESS || np == 0) return out;
    std::vector<cl_platform_id> ps(np);
    if (f->clGetPlatformIDs(np, ps.data(), nullptr) != CL_SUCCESS) return out;
    for (cl_platform_id p : ps) {
      cl_uint nd = 0;
      if (f->clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0)
        continue;
      std::vector<cl_device_id> ds(nd);
      if (f->clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, ds.data(), nullptr) != CL_SUCCESS) continue;
      for (cl_device_id d : ds) out.push_back({p, d});
    }
    return out;
  }();
  return all;
}

template <class T>
T device_value(cl_device_id d, cl_device_info what) {
  T v{};
  EMBER_CL(clGetDeviceInfo, d, what, sizeof v, &v, nullptr);
  return v;
}

}  // namespace

// What a batch holds on OpenCL: the marker event enqueued after its last command.
struct OpenCLBackend::ClBatch : BatchState {
  cl_event done = nullptr;
};
OpenCLBackend::ClBatch& OpenCLBackend::state(Batch& b) {
  if (!b.state) b.state = std::make_unique<ClBatch>();
  return static_cast<ClBatch&>(*b.state);
}

namespace {
const Entry& entry(int64_t index) {
  const auto& all = entries();
  if (index < 0 || size_t(index) >= all.size()) {
    std::string why;
    if (!try_loader(&why)) why = "no OpenCL loader: " + why;
    EMBER_FAIL("device", "opencl:", index, " names no OpenCL device (", all.size(), " found",
               why.empty() ? "" : "; ", why, ")");
  }
  return all[size_t(index)];
}
}  // namespace

std::unique_ptr<OpenCLBackend> make_backend(int64_t index) {
  const Entry& e = entry(index);
  return std::make_unique<OpenCLBackend>(index, e.platform, e.device);
}

namespace {

// Every backend made so far. Never destroyed: ICD threads (PoCL's) may be gone at exit, and
// tensors may outlive statics.
std::vector<std::unique_ptr<OpenCLBackend>>& made() {
  static auto* m = new std::vector<std::unique_ptr<OpenCLBackend>>();
  return *m;
}
std::mutex& made_mutex() {
  static auto* m = new std::mutex();
  return *m;
}

void quiesce_all() {
  std::lock_guard<std::mutex> lock(made_mutex());
  for (auto& b : made())
    if (b) b->quiesce();
}

// Builds so far, and their count when the hook was last registered after a build / a wait.
std::atomic<uint64_t> g_driver_work{1}, g_hooked[2];

}  // namespace

// At exit no kernel may still run, or be compiled, on the driver's threads while statics are
// destroyed. Exit handlers run in the reverse order of registration, and the compiler PoCL
// runs (clang/LLVM, shared with lavapipe) creates function-local statics the first time it
// compiles, so the hook is registered again after driver work: it must come after those. A
// build compiles now; its kernels compile again at their first launch, done by the next wait.
void hook_exit_after_driver_work(bool after_wait) {
  const uint64_t now = g_driver_work.load();
  if (g_hooked[after_wait ? 1 : 0].exchange(now) != now) std::atexit(quiesce_all);
}

void note_driver_work() { g_driver_work.fetch_add(1); }

OpenCLBackend& backend(int64_t index) {
  entry(index);
  {
    std::lock_guard<std::mutex> lock(made_mutex());
    auto& all = made();
    if (all.size() < entries().size()) all.resize(entries().size());
    auto& b = all[size_t(index)];
    if (!b) b = make_backend(index);
  }
  hook_exit_after_driver_work(false);
  return *made()[size_t(index)];
}

void OpenCLBackend::quiesce() noexcept {
  try {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    if (queue_) fn().clFinish(queue_);
  } catch (...) {
  }
}

std::vector<Device> devices() {
  std::vector<Device> out;
  for (size_t i = 0; i < entries().size(); ++i) out.emplace_back(DeviceType::opencl, int64_t(i));
  return out;
}

std::string OpenCLBackend::device_string(cl_device_info what) const {
  size_t n = 0;
  EMBER_CL(clGetDeviceInfo, dev_, what, 0, nullptr, &n);
  std::string s(n, '\0');
  EMBER_CL(clGetDeviceInfo, dev_, what, n, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

OpenCLBackend::OpenCLBackend(int64_t index, cl_platform_id platform, cl_device_id device)
    : KernelBackend(env_max_tasks()), index_(index), dev_(device) {
  const Fns& f = fn();
  dev_name_ = device_string(CL_DEVICE_NAME);
  driver_ = device_string(CL_DRIVER_VERSION);
  version_ = device_string(CL_DEVICE_VERSION);
  std::istringstream exts(device_string(CL_DEVICE_EXTENSIONS));
  for (std::string e; exts >> e;) {
    caps_.f64 |= e == "cl_khr_fp64";
    caps_.f16 |= e == "cl_khr_fp16";
  }
  type_ = device_value<cl_device_type>(dev_, CL_DEVICE_TYPE);
  unified_ = device_value<cl_bool>(dev_, CL_DEVICE_HOST_UNIFIED_MEMORY);
  mem_bytes_ = device_value<cl_ulong>(dev_, CL_DEVICE_GLOBAL_MEM_SIZE);
  max_wg_ = device_value<size_t>(dev_, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  caps_.i64 = caps_.i8 = caps_.i16 = true;
  caps_.max_workgroup_size = uint32_t(std::min<size_t>(256, max_wg_));
  caps_.max_shared_bytes = uint32_t(
      std::min<cl_ulong>(48 << 10, device_value<cl_ulong>(dev_, CL_DEVICE_LOCAL_MEM_SIZE)));
  caps_.max_groups_x = 1u << 20;
  // Buffers besides the params: kernel arguments are the buffers, the params buffer and its
  // word offset (record()), within CL_DEVICE_MAX_PARAMETER_SIZE; 31 at most, as on Vulkan.
  const size_t arg_bytes = device_value<size_t>(dev_, CL_DEVICE_MAX_PARAMETER_SIZE);
  const size_t fixed = sizeof(cl_mem) + sizeof(cl_uint);
  caps_.max_buffers =
      uint32_t(std::min<size_t>(31, arg_bytes > fixed ? (arg_bytes - fixed) / sizeof(cl_mem) : 0));
  caps_.cpu = (type_ & CL_DEVICE_TYPE_CPU) != 0;
  options_ = "-cl-std=CL1.2";
  const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, cl_context_properties(platform), 0};
  cl_int err = CL_SUCCESS;
  ctx_ = f.clCreateContext(props, 1, &dev_, nullptr, nullptr, &err);
  if (err != CL_SUCCESS) fail("clCreateContext", err);
  queue_ = f.clCreateCommandQueue(ctx_, dev_, 0, &err);
  if (err != CL_SUCCESS) {
    f.clReleaseContext(ctx_);
    fail("clCreateCommandQueue", err);
  }
  cache_dir_ = env_cache_dir("EMBER_KERNEL_CACHE_DIR", "kernels");
}

OpenCLBackend::~OpenCLBackend() {
  drop_stream();
  drop_open_and_wait();
  const Fns& f = fn();
  f.clFinish(queue_);
  destroy_batches();
  for (auto& [key, p] : programs_) {
    f.clReleaseKernel(p.kernel);
    f.clReleaseProgram(p.program);
  }
  for (const ArenaBlock& a : free_arenas_) {
    f.clReleaseMemObject(cl_mem(a.handle));
    delete[] a.host;
  }
  empty_cache();
  f.clReleaseCommandQueue(queue_);
  f.clReleaseContext(ctx_);
}

// ---- memory ----

// Size classes: 256-byte steps up to 64 KiB, then a quarter of the power of two below.
int64_t OpenCLBackend::size_class(int64_t n) {
  if (n <= (64 << 10)) return std::max<int64_t>(256, (n + 255) / 256 * 256);
  int64_t p = 1;
  while (p * 2 <= n) p *= 2;
  const int64_t step = p / 4;
  return (n + step - 1) / step * step;
}

cl_mem OpenCLBackend::new_buffer(int64_t bytes, cl_mem_flags flags) {
  cl_int err = CL_SUCCESS;
  cl_mem m = fn().clCreateBuffer(ctx_, flags, size_t(bytes), nullptr, &err);
  if (err != CL_SUCCESS)
    EMBER_FAIL("opencl", "clCreateBuffer of ", bytes, " bytes on ", device().str(),
               " failed: ", status_name(err), " (", mem_.allocated, " bytes allocated)");
  return m;
}

void* OpenCLBackend::allocate(int64_t nbytes) {
  EMBER_CHECK(nbytes >= 0, "opencl", "allocate of ", nbytes, " bytes");
  start_use();
  const int64_t c = size_class(nbytes);
  std::lock_guard<std::mutex> lock(mem_mutex_);
  cl_mem m = nullptr;
  if (auto it = free_.find(c); it != free_.end()) {
    m = it->second;
    free_.erase(it);
  } else {
    m = new_buffer(c, CL_MEM_READ_WRITE);
    mem_.reserved += c;
  }
  mem_.allocated += c;
  mem_.peak = std::max(mem_.peak, mem_.allocated);
  return m;
}

void OpenCLBackend::deallocate(void* ptr, int64_t nbytes) {
  if (!ptr) return;
  const int64_t c = size_class(nbytes);
  std::lock_guard<std::mutex> lock(mem_mutex_);
  free_.emplace(c, cl_mem(ptr));
  mem_.allocated -= c;
}

// Scratch lives for one batch: its own buffers, outside the cache and the stats.
runtime::KernelBackend::Buffer OpenCLBackend::alloc_scratch(int64_t nbytes) {
  return new_buffer(std::max<int64_t>(nbytes, 4), CL_MEM_READ_WRITE);
}

void OpenCLBackend::free_scratch(Buffer b) { fn().clReleaseMemObject(cl_mem(b)); }

MemoryStats OpenCLBackend::memory_stats() const {
  std::lock_guard<std::mutex> lock(mem_mutex_);
  return mem_;
}

void OpenCLBackend::empty_cache() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (used()) sync_device();  // scratch and arenas of retired batches are free first
  std::lock_guard<std::mutex> mlock(mem_mutex_);
  for (auto& [c, m] : free_) {
    fn().clReleaseMemObject(m);
    mem_.reserved -= c;
  }
  free_.clear();
}

runtime::KernelBackend::ArenaBlock OpenCLBackend::alloc_arena(int64_t nbytes) {
  for (size_t i = 0; i < free_arenas_.size(); ++i)
    if (free_arenas_[i].bytes == nbytes) {
      const ArenaBlock a = free_arenas_[i];
      free_arenas_.erase(free_arenas_.begin() + long(i));
      return a;
    }
  return {new_buffer(nbytes, CL_MEM_READ_ONLY), new uint8_t[size_t(nbytes)], nbytes};
}

void OpenCLBackend::free_arena(const ArenaBlock& b) { free_arenas_.push_back(b); }

void OpenCLBackend::write_bytes(void* dst, int64_t dst_offset, const void* src, int64_t nbytes) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  EMBER_CHECK(dst_offset >= 0 && nbytes >= 0, "opencl", "write of ", nbytes, " bytes at ",
              dst_offset);
  start_use();
  if (nbytes == 0) return;
  retire(false);
  if (idle()) {
    // Nothing queued: a blocking write waits for nothing, and `src` may go at return.
    EMBER_CL(clEnqueueWriteBuffer, queue_, cl_mem(dst), CL_TRUE, size_t(dst_offset), size_t(nbytes),
             src, 0, nullptr, nullptr);
    return;
  }
  // Work is queued: a blocking write would wait for all of it (a sync per scalar operand). The
  // write is queued after it from a host copy the batch keeps until it retires.
  auto* copy = new uint8_t[size_t(nbytes)];
  std::memcpy(copy, src, size_t(nbytes));
  Batch& b = batch();
  b.host_blocks.push_back(copy);
  EMBER_CL(clEnqueueWriteBuffer, queue_, cl_mem(dst), CL_FALSE, size_t(dst_offset), size_t(nbytes),
           copy, 0, nullptr, nullptr);
  count_op();
}

void OpenCLBackend::free_host_block(Buffer b) { delete[] static_cast<uint8_t*>(b); }

void OpenCLBackend::read_bytes(const void* src, int64_t src_offset, void* dst, int64_t nbytes) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  EMBER_CHECK(src_offset >= 0 && nbytes >= 0, "opencl", "read of ", nbytes, " bytes at ",
              src_offset);
  start_use();
  sync_device();
  if (nbytes == 0) return;
  EMBER_CL(clEnqueueReadBuffer, queue_, cl_mem(const_cast<void*>(src)), CL_TRUE, size_t(src_offset),
           size_t(nbytes), dst, 0, nullptr, nullptr);
}

// ---- the stream ----

// One launch: buffers in kernel order, then the params buffer and the word offset of this
// launch's block, written from the batch's host shadow just before (non-blocking: the shadow
// lives until the batch retires).
void OpenCLBackend::record(Batch& b, const LaunchArgs& a) {
  const cl_kernel k = static_cast<const Program*>(a.program)->kernel;
  const int64_t bytes = b.arena_used > a.params_offset ? b.arena_used - a.params_offset : 4;
  cl_mem params = cl_mem(a.params.handle);
  EMBER_CL(clEnqueueWriteBuffer, queue_, params, CL_FALSE, size_t(a.params_offset),
           size_t(std::min<int64_t>(bytes, a.params.bytes - a.params_offset)),
           a.params.host + a.params_offset, 0, nullptr, nullptr);
  cl_uint i = 0;
  for (Buffer buf : a.buffers) {
    cl_mem m = cl_mem(buf);
    EMBER_CL(clSetKernelArg, k, i++, sizeof m, &m);
  }
  EMBER_CL(clSetKernelArg, k, i++, sizeof params, &params);
  const cl_uint off = cl_uint(a.params_offset / 4);
  EMBER_CL(clSetKernelArg, k, i++, sizeof off, &off);
  const size_t local = a.kernel->local_size, global = size_t(a.groups) * local;
  EMBER_CL(clEnqueueNDRangeKernel, queue_, k, 1, nullptr, &global, &local, 0, nullptr, nullptr);
}

void OpenCLBackend::submit_batch(Batch& b) {
  ClBatch& s = state(b);
  EMBER_CL(clEnqueueMarkerWithWaitList, queue_, 0, nullptr, &s.done);
  EMBER_CL(clFlush, queue_);
}

bool OpenCLBackend::batch_done(Batch& b, bool wait) {
  ClBatch& s = state(b);
  if (!s.done) return true;
  if (wait) {
    const cl_int r = fn().clWaitForEvents(1, &s.done);
    if (r != CL_SUCCESS && r != CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
      fail("clWaitForEvents", r);
    hook_exit_after_driver_work(true);
  }
  cl_int st = CL_QUEUED;
  EMBER_CL(clGetEventInfo, s.done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, nullptr);
  if (st < 0)
    EMBER_FAIL("opencl", "a batch on ", device().str(), " failed on the device: ", status_name(st));
  return st == CL_COMPLETE;
}

void OpenCLBackend::reset_batch(Batch& b) {
  ClBatch& s = state(b);
  if (s.done) fn().clReleaseEvent(s.done);
  s.done = nullptr;
}

// ---- the device ----

bool OpenCLBackend::supports_dtype(DType t) const {
  if (t == DType::f64) return caps_.f64;
  if (t == DType::f16) return caps_.f16;
  return true;
}

DeviceInfo OpenCLBackend::info() const {
  DeviceInfo d;
  d.device = device();
  d.name = dev_name_;
  d.kind = (type_ & CL_DEVICE_TYPE_CPU)   ? "Cpu"
           : (type_ & CL_DEVICE_TYPE_GPU) ? (unified_ ? "IntegratedGpu" : "DiscreteGpu")
                                          : "Other";
  for (DType t : kAllDTypes)
    if (supports_dtype(t)) d.dtypes.push_back(t);
  std::ostringstream os;
  os << version_ << ", driver " << driver_ << ", " << (mem_bytes_ >> 20) << " MiB, max work-group "
     << max_wg_ << ", max_tasks " << max_tasks() << (clblast_enabled() ? ", CLBlast" : "");
  d.details = os.str();
  return d;
}

}  // namespace ember::cl
