#include "backends/webgpu/webgpu_backend.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "backends/webgpu/js_api.h"
#include "codegen/common.h"
#include "ember/error.h"
#include "runtime/autotune.h"

namespace ember::webgpu {

namespace {
constexpr int64_t kMaxTasks = 32;  // ops per command buffer
int handle_of(const void* p) { return int(reinterpret_cast<uintptr_t>(p)); }
void* ptr_of(int h) { return reinterpret_cast<void*>(uintptr_t(h)); }
int64_t round4(int64_t n) { return (n + 3) / 4 * 4; }
std::string next_line(std::istringstream& in) {
  std::string s;
  std::getline(in, s);
  return s;
}
}  // namespace

bool available() { return ember_wgpu_available() != 0; }

WebGPUBackend& backend() {
  static WebGPUBackend* b = nullptr;
  if (!b) {
    if (!available())
      EMBER_FAIL("device",
                 "webgpu: no WebGPU device was given to the module (pass one: "
                 "createEmberModule({emberWebGPU: await openWebGPU()}) with web/webgpu_device.mjs; "
                 "the browser needs WebGPU and a secure context)");
    b = new WebGPUBackend();  // never destroyed: tensors may outlive statics
  }
  return *b;
}

WebGPUBackend::WebGPUBackend() : KernelBackend(kMaxTasks) {
  ember_wgpu_limits(limits_);
  char buf[1024] = {};
  ember_wgpu_info(buf, sizeof buf);
  std::istringstream in(buf);
  vendor_ = next_line(in);
  arch_ = next_line(in);
  dev_name_ = next_line(in);
  description_ = next_line(in);
  fallback_ = next_line(in) == "1";
  auto lim = [&](Limit l) { return limits_[l]; };
  caps_.f16 = ember_wgpu_has_feature("shader-f16") != 0;
  caps_.f64 = caps_.i64 = false;  // WGSL has neither
  caps_.i8 = caps_.i16 = true;    // packed in u32 words by the WGSL renderer
  caps_.max_workgroup_size =
      uint32_t(std::min({lim(kMaxInvocationsPerWorkgroup), lim(kMaxWorkgroupSizeX), 256.0}));
  caps_.max_shared_bytes = uint32_t(lim(kMaxWorkgroupStorageSize));
  caps_.max_groups_x = uint32_t(lim(kMaxWorkgroupsPerDimension));
  caps_.max_buffers = uint32_t(
      std::min({lim(kMaxStorageBuffersPerStage), lim(kMaxBindingsPerBindGroup) - 1, 31.0}));
  const std::string a = arch_ + " " + description_;
  caps_.cpu = fallback_ || a.find("swiftshader") != std::string::npos ||
              a.find("SwiftShader") != std::string::npos;
  uniform_align_ = std::max<int64_t>(16, int64_t(lim(kMinUniformBufferOffsetAlignment)));
}

WebGPUBackend::~WebGPUBackend() {
  drop_stream();
  drop_open_and_wait();
  destroy_batches();
}

// Tuning times runs with the device synced around each; the browser cannot wait for the GPU,
// so every op takes its default variant (autotune effort off, no cache file).
void WebGPUBackend::start_runtime() {
  autotune::Options o = autotune::Options::from_env();
  o.effort = autotune::Effort::off;
  o.dir.clear();
  o.check = false;
  autotune::for_device(device()).set_options(o);
}

void WebGPUBackend::check_alive() const {
  if (ember_wgpu_lost())
    EMBER_FAIL("webgpu",
               "the WebGPU device was lost; reload the page (or open a new device and "
               "a new module) to continue");
}

void WebGPUBackend::check_device_errors() {
  char buf[2048];
  std::string first;
  int n = 0;
  while (ember_wgpu_take_error(buf, sizeof buf) > 0) {
    if (n++ == 0) first = buf;
  }
  if (n)
    EMBER_FAIL("webgpu", "the device reported ",
               n == 1 ? "an error" : std::to_string(n) + " errors", ": ", first);
}

// ---- memory ----

// 256-byte steps up to 64 KiB, then a quarter of the power of two below (as OpenCL).
int64_t WebGPUBackend::size_class(int64_t n) {
  if (n <= (64 << 10)) return std::max<int64_t>(256, (n + 255) / 256 * 256);
  int64_t p = 1;
  while (p * 2 <= n) p *= 2;
  const int64_t step = p / 4;
  return (n + step - 1) / step * step;
}

int WebGPUBackend::new_buffer(int64_t bytes, bool uniform) {
  const double max = limits_[kMaxBufferSize];
  if (double(bytes) > max)
    EMBER_FAIL("webgpu", "a buffer of ", bytes, " bytes is over this device's maxBufferSize of ",
               int64_t(max), " bytes (split the tensor, or use a smaller batch)");
  return ember_wgpu_create_buffer(double(bytes), uniform ? 1 : 0);
}

void* WebGPUBackend::allocate(int64_t nbytes) {
  EMBER_CHECK(nbytes >= 0, "webgpu", "allocate of ", nbytes, " bytes");
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  start_use();
  // The class must fit the limit too: over it, the exact size (rounded to 4).
  int64_t c = size_class(nbytes);
  if (double(c) > limits_[kMaxBufferSize]) c = round4(std::max<int64_t>(nbytes, 4));
  int h = 0;
  if (auto it = free_.find(c); it != free_.end()) {
    h = it->second;
    free_.erase(it);
  } else {
    h = new_buffer(c, false);
    mem_.reserved += c;
  }
  mem_.allocated += c;
  mem_.peak = std::max(mem_.peak, mem_.allocated);
  return ptr_of(h);
}

// Stream-ordered: the buffer goes back to the cache at once; work recorded later runs after
// the work that used it (one queue, in order).
void WebGPUBackend::deallocate(void* ptr, int64_t nbytes) {
  if (!ptr) return;
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  const int h = handle_of(ptr);
  drop_shadow(h);
  epochs_.erase(h);
  int64_t c = size_class(nbytes);
  if (double(c) > limits_[kMaxBufferSize]) c = round4(std::max<int64_t>(nbytes, 4));
  free_.emplace(c, h);
  mem_.allocated -= c;
}

void WebGPUBackend::empty_cache() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (used()) flush();  // destroying after the submit is safe; before it is not
  for (auto& [c, h] : free_) {
    ember_wgpu_destroy_buffer(h);
    mem_.reserved -= c;
  }
  free_.clear();
}

runtime::KernelBackend::Buffer WebGPUBackend::alloc_scratch(int64_t nbytes) {
  return ptr_of(new_buffer(round4(std::max<int64_t>(nbytes, 4)), false));
}

void WebGPUBackend::free_scratch(Buffer b) { ember_wgpu_destroy_buffer(handle_of(b)); }

runtime::KernelBackend::ArenaBlock WebGPUBackend::alloc_arena(int64_t nbytes) {
  for (size_t i = 0; i < free_arenas_.size(); ++i)
    if (free_arenas_[i].bytes == nbytes) {
      const ArenaBlock a = free_arenas_[i];
      free_arenas_.erase(free_arenas_.begin() + long(i));
      return a;
    }
  return {ptr_of(new_buffer(nbytes, true)), new uint8_t[size_t(nbytes)], nbytes};
}

// A retired batch's params block is reused by a later batch: its writeBuffer calls are queued
// after the earlier submit, so they never overwrite params that work still reads.
void WebGPUBackend::free_arena(const ArenaBlock& b) { free_arenas_.push_back(b); }

// ---- copies ----

void WebGPUBackend::write_bytes(void* dst, int64_t dst_offset, const void* src, int64_t nbytes) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  EMBER_CHECK(dst_offset >= 0 && nbytes >= 0, "webgpu", "write of ", nbytes, " bytes at ",
              dst_offset);
  start_use();
  if (nbytes == 0) return;
  const int h = handle_of(dst);
  // queue.writeBuffer runs before anything submitted later: the recorded batch goes first.
  flush();
  wrote(h);
  if (dst_offset % 4 == 0 && nbytes % 4 == 0) {
    ember_wgpu_write_buffer(h, double(dst_offset), src, double(nbytes));
    return;
  }
  // An unaligned tail (a b8/f16 tensor of odd length): padded with zeros past the storage's
  // end, which belongs to no element.
  EMBER_CHECK(dst_offset % 4 == 0, "webgpu", "a write of ", nbytes, " bytes at byte offset ",
              dst_offset,
              ": WebGPU writes whole 4-byte words (write the whole storage, or a view "
              "starting at a multiple of 4 bytes)");
  std::vector<uint8_t> padded(size_t(round4(nbytes)), 0);
  std::memcpy(padded.data(), src, size_t(nbytes));
  ember_wgpu_write_buffer(h, double(dst_offset), padded.data(), double(padded.size()));
}

void WebGPUBackend::read_bytes(const void* src, int64_t src_offset, void* dst, int64_t nbytes) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  EMBER_CHECK(src_offset >= 0 && nbytes >= 0, "webgpu", "read of ", nbytes, " bytes at ",
              src_offset);
  sync_device();
  if (nbytes == 0) return;
  const int h = handle_of(src);
  const char* why = "no host copy was requested";
  if (auto it = shadows_.find(h); it != shadows_.end()) {
    const Shadow& s = *it->second;
    if (s.status == 2)
      why = "its host copy failed";
    else if (s.epoch != epochs_[h] || s.storage->writes.load() != s.writes)
      why = "it was written after its host copy was requested";
    else if (s.status == 0)
      why = "its host copy has not landed yet (await Module.emberWebGPU.settle())";
    else if (src_offset + nbytes > int64_t(s.bytes.size()))
      why = "the read is outside its host copy";
    else {
      std::memcpy(dst, s.bytes.data() + src_offset, size_t(nbytes));
      return;
    }
  }
  EMBER_FAIL("webgpu", "read of ", nbytes, " bytes of a webgpu tensor: ", why,
             "; the browser cannot wait for the GPU: call webgpu::request_host_copy(t) / "
             "`await tensor.data()` first, then read");
}

void WebGPUBackend::drop_shadow(int h) {
  auto it = shadows_.find(h);
  if (it == shadows_.end()) return;
  if (it->second->status == 0) ember_wgpu_cancel_copy(it->second->copy_id);
  shadows_.erase(it);
}

void WebGPUBackend::request_copy(const Storage& st) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  check_alive();
  start_use();
  flush();
  check_device_errors();
  const int h = handle_of(st.data());
  const uint64_t writes = st.writes.load(), epoch = epochs_[h];
  if (auto it = shadows_.find(h); it != shadows_.end()) {
    const Shadow& s = *it->second;
    if (s.storage == &st && s.writes == writes && s.epoch == epoch && s.status != 2) return;
  }
  drop_shadow(h);
  auto s = std::make_unique<Shadow>();
  s->bytes.resize(size_t(st.nbytes));
  s->storage = &st;
  s->writes = writes;
  s->epoch = epoch;
  if (st.nbytes == 0)
    s->status = 1;
  else
    s->copy_id = ember_wgpu_read_async(h, double(st.nbytes), s->bytes.data(), &s->status);
  shadows_[h] = std::move(s);
}

int64_t WebGPUBackend::pending_copies() const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  int64_t n = 0;
  for (const auto& [h, s] : shadows_) n += s->status == 0;
  return n;
}

Tensor request_host_copy(const Tensor& t) {
  EMBER_CHECK(t.defined() && t.device().type() == DeviceType::webgpu, "request_host_copy",
              "the tensor is on ", t.defined() ? t.device().str() : "no device",
              ", not webgpu (host tensors are readable as they are)");
  Tensor c = t.is_contiguous() ? t : t.contiguous();
  WebGPUBackend& b = backend();
  b.flush_stream();
  b.request_copy(*c.impl()->storage);
  return c;
}

// ---- kernels ----

const void* WebGPUBackend::compile(const codegen::Kernel& k) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  check_alive();
  if (auto it = programs_.find(k.key); it != programs_.end()) return it->second.get();
  EMBER_CHECK(k.dialect == codegen::Dialect::wgsl, "webgpu", "kernel ", k.name,
              " was rendered for another dialect than WGSL");
  check_device_errors();
  const int p = ember_wgpu_create_pipeline(k.source.c_str(), int(k.buffers.size()), k.name.c_str());
  auto& slot = programs_[k.key];
  slot = std::make_unique<int>(p);
  return slot.get();
}

void WebGPUBackend::check_launch(const codegen::Launch& l) const {
  const double max_binding = limits_[kMaxStorageBufferBindingSize];
  for (const codegen::Binding& b : l.bindings)
    if (b.scratch < 0 && double(b.tensor.impl()->storage->nbytes) > max_binding)
      EMBER_FAIL("webgpu", "kernel ", l.kernel->name, " binds a tensor of ",
                 b.tensor.impl()->storage->nbytes,
                 " bytes, over this device's maxStorageBufferBindingSize of ", int64_t(max_binding),
                 " bytes");
  EMBER_CHECK(l.groups <= caps_.max_groups_x, "webgpu", "kernel ", l.kernel->name, " launches ",
              l.groups, " workgroups; this device allows ", caps_.max_groups_x);
}

// The params go up with queue.writeBuffer now (before the batch's submit, so before its
// dispatches run); every buffer is bound whole (its bytes rounded up to 4).
void WebGPUBackend::record(Batch&, const LaunchArgs& a) {
  const int program = *static_cast<const int*>(a.program);
  const int params = handle_of(a.params.handle);
  ember_wgpu_write_buffer(params, double(a.params_offset), a.params.host + a.params_offset,
                          double(round4(a.params_bytes)));
  std::vector<int32_t> bufs(a.buffers.size());
  for (size_t i = 0; i < a.buffers.size(); ++i) {
    bufs[i] = handle_of(a.buffers[i]);
    if (a.kernel->buffers[i].writable) wrote(bufs[i]);
  }
  ember_wgpu_dispatch(program, bufs.data(), int(bufs.size()), params, double(a.params_offset),
                      double(codegen::kParamsBytes), double(a.groups));
}

void WebGPUBackend::submit_batch(Batch&) { ember_wgpu_submit(); }

// ---- the device ----

bool WebGPUBackend::supports_dtype(DType t) const { return codegen::supports(t, caps_); }

DeviceInfo WebGPUBackend::info() const {
  DeviceInfo d;
  d.device = device();
  d.name = !description_.empty() ? description_
                                 : vendor_ + (arch_.empty() ? "" : " " + arch_) + " (WebGPU)";
  d.kind = caps_.cpu ? "Cpu" : "Gpu";
  for (DType t : kAllDTypes)
    if (supports_dtype(t)) d.dtypes.push_back(t);
  std::ostringstream os;
  os << "webgpu, vendor " << (vendor_.empty() ? "?" : vendor_) << ", architecture "
     << (arch_.empty() ? "?" : arch_) << (fallback_ ? ", fallback adapter" : "")
     << (caps_.f16 ? ", shader-f16" : "") << ", maxBufferSize "
     << int64_t(limits_[kMaxBufferSize] / (1 << 20)) << " MiB, max_buffers " << caps_.max_buffers
     << ", max_tasks " << max_tasks();
  d.details = os.str();
  return d;
}

}  // namespace ember::webgpu
