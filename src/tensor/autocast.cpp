// Autocast's thread-local state (ember/autocast.h); the per-op policies are tensor/autocast.h.
#include "ember/autocast.h"

#include "ember/error.h"
#include "tensor/autocast.h"

namespace ember {

namespace {

constexpr int kTypes = int(DeviceType::webgpu) + 1;  // one per DeviceType (as autocast::prev_)

struct TypeState {
  bool enabled = false;
  DType dtype = DType::bf16;
};

struct State {
  TypeState types[kTypes];
  int suspended = 0;  // > 0 inside a listed op's body or a backward pass
  State() {
    for (int i = 0; i < kTypes; ++i) {
      const DeviceType t = DeviceType(i);
      types[i].dtype = (t == DeviceType::ref || t == DeviceType::cpu) ? DType::bf16 : DType::f16;
    }
  }
};

thread_local State g_state;

int slot(DeviceType t) {
  const int i = int(t);
  if (i < 0 || i >= kTypes) EMBER_FAIL("autocast", "unknown device type ", i);
  return i;
}

void check_dtype(DType dtype) {
  if (dtype != DType::f16 && dtype != DType::bf16)
    EMBER_FAIL("autocast", "dtype must be f16 or bf16, got ", dtype_name(dtype));
}

}  // namespace

bool is_autocast_enabled(DeviceType type) { return g_state.types[slot(type)].enabled; }
DType get_autocast_dtype(DeviceType type) { return g_state.types[slot(type)].dtype; }
void set_autocast_enabled(DeviceType type, bool enabled) {
  g_state.types[slot(type)].enabled = enabled;
}
void set_autocast_dtype(DeviceType type, DType dtype) {
  check_dtype(dtype);
  g_state.types[slot(type)].dtype = dtype;
}

autocast::autocast(DType dtype, bool enabled) {
  check_dtype(dtype);
  for (int i = 0; i < kTypes; ++i) {
    prev_[i] = {g_state.types[i].enabled, g_state.types[i].dtype};
    g_state.types[i] = {enabled, dtype};
  }
}

autocast::autocast(DeviceType type, DType dtype, bool enabled) {
  check_dtype(dtype);
  const int s = slot(type);
  for (int i = 0; i < kTypes; ++i) prev_[i] = {g_state.types[i].enabled, g_state.types[i].dtype};
  g_state.types[s] = {enabled, dtype};
}

autocast::~autocast() {
  for (int i = 0; i < kTypes; ++i) g_state.types[i] = {prev_[i].enabled, prev_[i].dtype};
}

namespace detail::amp {

Suspend::Suspend() { ++g_state.suspended; }
Suspend::~Suspend() { --g_state.suspended; }

void Scope::init(Policy p, const Device& d) {
  if (g_state.suspended != 0 || !g_state.types[int(d.type())].enabled) return;
  const bool gpu = !d.is_host();
  switch (p) {
    case Policy::lower:
      lower_ = true;
      break;
    case Policy::f32:
      lower_ = false;
      break;
    case Policy::f32_gpu:
      if (!gpu) return;
      lower_ = false;
      break;
    case Policy::lower_gpu_f32_host:
      lower_ = gpu;
      break;
    case Policy::lower_gpu:
      if (!gpu) return;
      lower_ = true;
      break;
  }
  low_ = g_state.types[int(d.type())].dtype;
  if (lower_ && !supports_dtype(d, low_))
    EMBER_FAIL("autocast", d.str(), " has no ", dtype_name(low_), " (its ops would run in it); ",
               "use autocast with ", low_ == DType::f16 ? "bf16" : "f16", " there, or f32");
  on_ = true;
  ++g_state.suspended;
}

Scope::Scope(Policy p, const Tensor& t) {
  if (t.defined()) init(p, t.device());
}

Scope::Scope(Policy p, std::initializer_list<const Tensor*> inputs) {
  const Tensor* first = nullptr;
  for (const Tensor* t : inputs) {
    if (!t->defined()) continue;
    if (t->dtype() == DType::f64) return;
    if (!first) first = t;
  }
  if (first) init(p, first->device());
}

Scope::~Scope() {
  if (on_) --g_state.suspended;
}

Tensor Scope::operator()(const Tensor& t) const {
  if (!on_ || !t.defined()) return t;
  const DType dt = t.dtype();
  if (lower_) {
    if (dt == DType::f32 || ((dt == DType::f16 || dt == DType::bf16) && dt != low_))
      return t.to(low_);
  } else if (dt == DType::f16 || dt == DType::bf16) {
    return t.to(DType::f32);
  }
  return t;
}

}  // namespace detail::amp

}  // namespace ember
