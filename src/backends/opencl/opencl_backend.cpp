#include "backends/opencl/opencl_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "ember/error.h"

namespace ember::cl {

namespace {
constexpr int64_t kDefaultMaxTasks = 16;

int64_t env_max_tasks() {
  const char* e = std::getenv("EMBER_OPENCL_MAX_TASKS");
  if (!e || !*e) return kDefaultMaxTasks;
  char* end = nullptr;
  const long long v = std::strtoll(e, &end, 10);
  if (*end != '\0' || v < 1 || v > 1000000)
    EMBER_FAIL("opencl", "EMBER_OPENCL_MAX_TASKS must be an integer in [1, 1000000], got '", e,
               "'");
  return v;
}

// Allocation size classes: powers of two up to 1 MiB, then multiples of 1 MiB.
int64_t size_class(int64_t n) {
  n = std::max<int64_t>(n, 256);
  if (n <= (1 << 20)) {
    int64_t c = 256;
    while (c < n) c <<= 1;
    return c;
  }
  return (n + (1 << 20) - 1) / (1 << 20) * (1 << 20);
}
}  // namespace

// A submitted batch's marker event.
struct OpenCLBackend::ClBatch : BatchState {
  cl_event done = nullptr;
  ~ClBatch() override {
    if (done) fn().clReleaseEvent(done);
  }
};

OpenCLBackend::OpenCLBackend(int64_t index, cl_platform_id platform, cl_device_id device)
    : KernelBackend(env_max_tasks()), index_(index), platform_(platform), device_(device) {
  const Functions& f = fn();
  device_name_ = device_string(CL_DEVICE_NAME);
  driver_ = device_string(CL_DRIVER_VERSION);
  version_ = device_string(CL_DEVICE_VERSION);
  extensions_ = " " + device_string(CL_DEVICE_EXTENSIONS) + " ";
  cl_bool unified = CL_FALSE;
  f.clGetDeviceInfo(device_, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, nullptr);
  host_unified_ = unified == CL_TRUE;
  f.clGetDeviceInfo(device_, CL_DEVICE_TYPE, sizeof type_, &type_, nullptr);
  size_t wg = 256;
  f.clGetDeviceInfo(device_, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, nullptr);
  cl_ulong local = 16384;
  f.clGetDeviceInfo(device_, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local, nullptr);
  caps_.f64 = extensions_.find(" cl_khr_fp64 ") != std::string::npos;
  caps_.f16 = extensions_.find(" cl_khr_fp16 ") != std::string::npos;
  caps_.i64 = caps_.i8 = caps_.i16 = true;  // long, char and short are core OpenCL C types
  caps_.max_workgroup_size = uint32_t(std::min<size_t>(wg, 256));
  caps_.max_shared_bytes = uint32_t(std::min<cl_ulong>(local, 48 << 10));
  caps_.max_groups_x = 1u << 20;
  caps_.cpu = (type_ & CL_DEVICE_TYPE_CPU) != 0;
}

OpenCLBackend::~OpenCLBackend() {
  // Backends live until exit (backend() never destroys them); nothing to release safely here.
}

std::string OpenCLBackend::device_string(cl_device_info what) const {
  size_t n = 0;
  if (fn().clGetDeviceInfo(device_, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  fn().clGetDeviceInfo(device_, what, n, s.data(), nullptr);
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

void OpenCLBackend::start_runtime() {
  const Functions& f = fn();
  cl_int err = CL_SUCCESS;
  const cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                         reinterpret_cast<cl_context_properties>(platform_), 0};
  context_ = f.clCreateContext(props, 1, &device_, nullptr, nullptr, &err);
  if (err != CL_SUCCESS) fail("clCreateContext", err);
  queue_ = f.clCreateCommandQueue(context_, device_, 0, &err);  // in order
  if (err != CL_SUCCESS) fail("clCreateCommandQueue", err);
}

Buf* OpenCLBackend::alloc(int64_t nbytes) {
  EMBER_CHECK(nbytes >= 0, "opencl", "cannot allocate ", nbytes, " bytes");
  const int64_t c = size_class(nbytes);
  std::lock_guard<std::mutex> lock(mem_mutex_);
  cl_mem m = nullptr;
  auto it = free_.find(c);
  if (it != free_.end()) {
    m = it->second;
    free_.erase(it);
  } else {
    cl_int err = CL_SUCCESS;
    m = fn().clCreateBuffer(context_, CL_MEM_READ_WRITE, size_t(c), nullptr, &err);
    if (err != CL_SUCCESS || !m)
      EMBER_FAIL("opencl", "out of device memory allocating ", nbytes, " bytes on ", device().str(),
                 " (", error_name(err), "; ", stats_.allocated, " bytes in use)");
    stats_.reserved += c;
  }
  stats_.allocated += c;
  stats_.peak = std::max(stats_.peak, stats_.allocated);
  return new Buf{m, c};
}

void OpenCLBackend::release(Buf* b) {
  if (!b) return;
  std::lock_guard<std::mutex> lock(mem_mutex_);
  stats_.allocated -= b->bytes;
  free_.emplace(b->bytes, b->mem);
  delete b;
}

void* OpenCLBackend::allocate(int64_t nbytes) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  start_use();
  return alloc(nbytes);
}

// No backend lock: storages are released from retire() too. The allocator locks itself.
void OpenCLBackend::deallocate(void* ptr, int64_t) { release(static_cast<Buf*>(ptr)); }

MemoryStats OpenCLBackend::memory_stats() const {
  std::lock_guard<std::mutex> lock(mem_mutex_);
  return stats_;
}

void OpenCLBackend::empty_cache() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (!used()) return;
  sync();  // buffers of retired batches become free first
  std::lock_guard<std::mutex> mlock(mem_mutex_);
  for (auto& [bytes, m] : free_) {
    fn().clReleaseMemObject(m);
    stats_.reserved -= bytes;
  }
  free_.clear();
}

runtime::KernelBackend::ArenaBlock OpenCLBackend::alloc_arena(int64_t nbytes) {
  Buf* b = alloc(nbytes);
  // The host shadow the stream writes params into; launches copy their part to the device.
  auto* host = new uint8_t[size_t(nbytes)];
  return {new std::pair<Buf*, uint8_t*>(b, host), host, nbytes};
}

void OpenCLBackend::free_arena(const ArenaBlock& a) {
  auto* p = static_cast<std::pair<Buf*, uint8_t*>*>(a.handle);
  release(p->first);
  delete[] p->second;
  delete p;
}

const void* OpenCLBackend::compile(const codegen::Kernel& k) {
  EMBER_CHECK(k.dialect == codegen::Dialect::opencl, "opencl", "kernel ", k.name,
              " was not rendered as OpenCL C");
  auto it = programs_.find(k.key);
  if (it == programs_.end()) it = programs_.emplace(k.key, build(k)).first;
  return &it->second;
}

void OpenCLBackend::record(Batch& b, const LaunchArgs& a) {
  (void)b;
  const Functions& f = fn();
  const Program& p = *static_cast<const Program*>(a.program);
  auto* arena = static_cast<std::pair<Buf*, uint8_t*>*>(a.params.handle);
  // The params first (in order on the queue; the shadow lives until the batch retires).
  EMBER_CL_CHECK(f.clEnqueueWriteBuffer(queue_, arena->first->mem, CL_FALSE,
                                        size_t(a.params_offset), size_t(a.params_bytes),
                                        a.params.host + a.params_offset, 0, nullptr, nullptr));
  cl_uint arg = 0;
  for (void* buf : a.buffers)
    EMBER_CL_CHECK(f.clSetKernelArg(p.kernel, arg++, sizeof(cl_mem), &static_cast<Buf*>(buf)->mem));
  EMBER_CL_CHECK(f.clSetKernelArg(p.kernel, arg++, sizeof(cl_mem), &arena->first->mem));
  const cl_uint off = cl_uint(a.params_offset / 4);
  EMBER_CL_CHECK(f.clSetKernelArg(p.kernel, arg++, sizeof off, &off));
  const size_t local = a.kernel->local_size, global = size_t(a.groups) * local;
  const cl_int r =
      f.clEnqueueNDRangeKernel(queue_, p.kernel, 1, nullptr, &global, &local, 0, nullptr, nullptr);
  if (r != CL_SUCCESS)
    EMBER_FAIL("opencl", "kernel ", a.kernel->name, " (", a.groups, " groups of ", local,
               ") could not be enqueued: ", error_name(r));
}

void OpenCLBackend::submit_batch(Batch& b) {
  const Functions& f = fn();
  if (!b.state) b.state = std::make_unique<ClBatch>();
  auto& s = static_cast<ClBatch&>(*b.state);
  EMBER_CL_CHECK(f.clEnqueueMarkerWithWaitList(queue_, 0, nullptr, &s.done));
  EMBER_CL_CHECK(f.clFlush(queue_));
}

bool OpenCLBackend::batch_done(Batch& b, bool wait) {
  const Functions& f = fn();
  auto& s = static_cast<ClBatch&>(*b.state);
  if (wait) {
    const cl_int r = f.clWaitForEvents(1, &s.done);
    if (r != CL_SUCCESS) fail("clWaitForEvents", r);
  } else {
    cl_int status = CL_QUEUED;
    EMBER_CL_CHECK(f.clGetEventInfo(s.done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status,
                                    &status, nullptr));
    if (status < 0) fail("a batch's kernels", status);
    if (status != CL_COMPLETE) return false;
  }
  f.clReleaseEvent(s.done);
  s.done = nullptr;
  return true;
}

void OpenCLBackend::write(void* dst, int64_t dst_offset, const void* src, int64_t nbytes) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  start_use();
  auto* b = static_cast<Buf*>(dst);
  EMBER_CHECK(dst_offset >= 0 && nbytes >= 0 && dst_offset + nbytes <= b->bytes, "opencl",
              "write of ", nbytes, " bytes at ", dst_offset, " exceeds the buffer");
  if (nbytes == 0) return;
  // Blocking, after every kernel enqueued before it (in-order queue).
  EMBER_CL_CHECK(fn().clEnqueueWriteBuffer(queue_, b->mem, CL_TRUE, size_t(dst_offset),
                                           size_t(nbytes), src, 0, nullptr, nullptr));
}

void OpenCLBackend::read(const void* src, int64_t src_offset, void* dst, int64_t nbytes) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  start_use();
  const auto* b = static_cast<const Buf*>(src);
  EMBER_CHECK(src_offset >= 0 && nbytes >= 0 && src_offset + nbytes <= b->bytes, "opencl",
              "read of ", nbytes, " bytes at ", src_offset, " exceeds the buffer");
  sync();  // raises the deferred data checks before anything is read
  if (nbytes == 0) return;
  EMBER_CL_CHECK(fn().clEnqueueReadBuffer(queue_, b->mem, CL_TRUE, size_t(src_offset),
                                          size_t(nbytes), dst, 0, nullptr, nullptr));
}

bool OpenCLBackend::supports_dtype(DType t) const {
  switch (t) {
    case DType::f64:
      return caps_.f64;
    case DType::f16:
      return caps_.f16;
    default:
      return true;
  }
}

DeviceInfo OpenCLBackend::info() const {
  DeviceInfo d;
  d.device = device();
  d.name = device_name_;
  d.kind = (type_ & CL_DEVICE_TYPE_CPU)   ? "Cpu"
           : (type_ & CL_DEVICE_TYPE_GPU) ? (host_unified_ ? "IntegratedGpu" : "DiscreteGpu")
                                          : "Accelerator";
  for (DType t : kAllDTypes)
    if (supports_dtype(t)) d.dtypes.push_back(t);
  cl_ulong mem = 0;
  fn().clGetDeviceInfo(device_, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, nullptr);
  std::ostringstream os;
  os << version_ << ", driver " << driver_ << ", " << (mem >> 20) << " MiB, max work-group "
     << caps_.max_workgroup_size << ", max_tasks " << max_tasks();
  d.details = os.str();
  return d;
}

// ---- the registry ----

namespace {
struct Entry {
  cl_platform_id platform;
  cl_device_id device;
  std::unique_ptr<OpenCLBackend> backend;
};
struct Registry {
  std::mutex mutex;
  std::vector<Entry> entries;
  std::string why;  // why there are none
};

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry;  // never destroyed: backends outlive static teardown order
    std::string why;
    const Functions* f = functions(&why);
    if (!f) {
      reg->why = why;
      return reg;
    }
    cl_uint np = 0;
    if (f->clGetPlatformIDs(0, nullptr, &np) != CL_SUCCESS || np == 0) {
      reg->why = "no OpenCL platform (install a driver such as pocl-opencl-icd)";
      return reg;
    }
    std::vector<cl_platform_id> ps(np);
    f->clGetPlatformIDs(np, ps.data(), nullptr);
    for (cl_platform_id p : ps) {
      cl_uint nd = 0;
      if (f->clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS) continue;
      std::vector<cl_device_id> ds(nd);
      f->clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, ds.data(), nullptr);
      for (cl_device_id d : ds) reg->entries.push_back({p, d, nullptr});
    }
    if (reg->entries.empty()) reg->why = "no OpenCL device on any platform";
    return reg;
  }();
  return *r;
}
}  // namespace

std::vector<Device> devices() {
  Registry& r = registry();
  std::vector<Device> out;
  for (size_t i = 0; i < r.entries.size(); ++i) out.emplace_back(DeviceType::opencl, int64_t(i));
  return out;
}

OpenCLBackend& backend(int64_t index) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (index < 0 || index >= int64_t(r.entries.size())) {
    if (r.entries.empty()) EMBER_FAIL("device", "no such device: opencl:", index, " (", r.why, ")");
    EMBER_FAIL("device", "no such device: opencl:", index, " (", r.entries.size(),
               " OpenCL device(s): opencl:0..opencl:", r.entries.size() - 1,
               "; see `ember devices`)");
  }
  Entry& e = r.entries[size_t(index)];
  if (!e.backend) e.backend = std::make_unique<OpenCLBackend>(index, e.platform, e.device);
  return *e.backend;
}

}  // namespace ember::cl
