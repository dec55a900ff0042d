#include "codegen/common.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "core/env.h"
#include "core/merge_dims.h"
#include "ember/error.h"

namespace ember::codegen {

const char* dtype_tag(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f64:
      return "f64";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::i8:
      return "i8";
    case DType::i16:
      return "i16";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
    case DType::u8:
      return "u8";
    case DType::u16:
      return "u16";
    case DType::u32:
      return "u32";
    case DType::u64:
      return "u64";
    case DType::b8:
      return "b8";
  }
  return "?";
}

bool supports(DType t, const Caps& caps) {
  switch (t) {
    case DType::f16:
      return caps.f16;
    case DType::f64:
      return caps.f64;
    case DType::i64:
    case DType::u64:
      return caps.i64;
    case DType::i8:
    case DType::u8:
    case DType::b8:
      return caps.i8;
    case DType::i16:
    case DType::u16:
    case DType::bf16:
      return caps.i16;
    default:
      return true;
  }
}

void check_dtype(const char* op, DType t, const Caps& caps) {
  if (supports(t, caps)) return;
  const char* feature = "";
  switch (t) {
    case DType::f16:
      feature = "shaderFloat16 + 16-bit storage";
      break;
    case DType::f64:
      feature = "shaderFloat64";
      break;
    case DType::i64:
    case DType::u64:
      feature = "shaderInt64";
      break;
    case DType::i16:
    case DType::u16:
    case DType::bf16:
      feature = "shaderInt16 + 16-bit storage";
      break;
    default:
      feature = "shaderInt8 + 8-bit storage";
      break;
  }
  EMBER_FAIL(op, "dtype ", dtype_name(t), " needs ", feature,
             ", which this device lacks (see supports_dtype)");
}

// ---- Params ----

uint32_t Params::u32(uint32_t v) {
  words_.push_back(v);
  return uint32_t(words_.size() - 1);
}

uint32_t Params::i32(int64_t v, const char* op) {
  EMBER_CHECK(v >= INT32_MIN && v <= INT32_MAX, op, "value ", v,
              " does not fit the 32-bit indexing of GPU kernels");
  return u32(uint32_t(int32_t(v)));
}

uint32_t Params::f32(float v) {
  uint32_t w;
  std::memcpy(&w, &v, 4);
  return u32(w);
}

uint32_t Params::f64(double v) {
  uint64_t w;
  std::memcpy(&w, &v, 8);
  return u64(w);
}

uint32_t Params::u64(uint64_t v) {
  const uint32_t k = u32(uint32_t(v));
  u32(uint32_t(v >> 32));
  return k;
}

namespace {
void check_extent(int64_t offset, const std::vector<int64_t>& sizes,
                  const std::vector<int64_t>& strides, const char* op) {
  int64_t lo = offset, hi = offset, n = 1;
  bool empty = false;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) empty = true;
    n *= sizes[d] > 0 ? sizes[d] : 1;
    EMBER_CHECK(n <= INT32_MAX, op, "tensor of ", n,
                "+ elements is too large for the 32-bit indexing of GPU kernels");
    const int64_t span = (sizes[d] > 0 ? sizes[d] - 1 : 0) * strides[d];
    (span < 0 ? lo : hi) += span;
  }
  EMBER_CHECK(empty || (lo >= 0 && hi <= INT32_MAX), op, "tensor view spans elements [", lo, ", ",
              hi, "], too large for the 32-bit indexing of GPU kernels");
}
}  // namespace

uint32_t Params::strided(int64_t offset, const std::vector<int64_t>& sizes,
                         const std::vector<int64_t>& strides, const char* op) {
  check_extent(offset, sizes, strides, op);
  const uint32_t k = i32(offset, op);
  for (int64_t s : sizes) i32(s, op);
  for (int64_t s : strides) i32(s, op);
  return k;
}

uint32_t Params::tensor(const Tensor& t, const char* op) {
  return strided(t.offset(), std::vector<int64_t>(t.shape().begin(), t.shape().end()),
                 std::vector<int64_t>(t.strides().begin(), t.strides().end()), op);
}

std::vector<uint32_t> Params::take() {
  std::vector<uint32_t> w = std::move(words_);
  words_.clear();
  if (w.empty()) w.push_back(0);
  return w;
}

// ---- indexing ----

Iter merged_iter(const Shape& shape, std::vector<int64_t> offsets,
                 const std::vector<Strides>& strides) {
  Iter it;
  it.offsets = std::move(offsets);
  it.numel = numel_of(shape);
  const size_t n = strides.size();
  std::vector<const Strides*> in(n);
  for (size_t k = 0; k < n; ++k) in[k] = &strides[k];
  int64_t sizes[kMaxMergedDims];
  std::vector<int64_t> st(n * kMaxMergedDims);
  const size_t r = merge_dims(shape, in.data(), n, sizes, st.data());
  it.sizes.assign(sizes, sizes + r);
  it.strides.resize(n);
  for (size_t k = 0; k < n; ++k)
    it.strides[k].assign(st.begin() + ptrdiff_t(k * kMaxMergedDims),
                         st.begin() + ptrdiff_t(k * kMaxMergedDims + r));
  return it;
}

Iter make_iter(const std::vector<Tensor>& ts) {
  std::vector<int64_t> offsets;
  std::vector<Strides> strides;
  for (const Tensor& t : ts) {
    offsets.push_back(t.offset());
    strides.push_back(t.strides());
  }
  return merged_iter(ts[0].shape(), std::move(offsets), strides);
}

std::string Iter::access() const {
  if (rank() != 1) return "";
  std::string a;
  for (const auto& s : strides) a += s[0] == 1 ? 'c' : s[0] == 0 ? 'b' : 's';
  return a;
}

FastDiv fast_div(uint32_t d) {
  FastDiv f;
  if (d == 0) return f;
  while ((uint64_t(1) << f.s) < d) ++f.s;
  f.m = uint32_t((uint64_t(1) << 32) * ((uint64_t(1) << f.s) - d) / d + 1);
  return f;
}

uint32_t add_iter(Params& p, const Iter& it, const char* op) {
  EMBER_CHECK(it.numel <= INT32_MAX, op, "tensor of ", it.numel,
              " elements is too large for the 32-bit indexing of GPU kernels");
  const uint32_t base = p.u32(uint32_t(it.numel));
  for (int64_t s : it.sizes) p.u32(uint32_t(s));
  for (size_t d = 1; d < it.sizes.size(); ++d) {
    const FastDiv f = fast_div(uint32_t(it.sizes[d]));
    p.u32(f.m);
    p.u32(f.s);
  }
  for (size_t k = 0; k < it.offsets.size(); ++k) {
    check_extent(it.offsets[k], it.sizes, it.strides[k], op);
    p.i32(it.offsets[k], op);
    for (int64_t s : it.strides[k]) p.i32(s, op);
  }
  return base;
}

// ---- launches and caching ----

uint32_t groups_1d(int64_t n, uint32_t local_size, const Caps& caps) {
  const int64_t g = (n + local_size - 1) / local_size;
  if (g < 1) return 1;
  return uint32_t(g > int64_t(caps.max_groups_x) ? caps.max_groups_x : g);
}

Launch launch_1d(std::shared_ptr<const Kernel> k, std::vector<Binding> bindings,
                 std::vector<uint32_t> params, int64_t n, const Caps& caps) {
  Launch l;
  l.groups = groups_1d(n, k->local_size, caps);
  l.kernel = std::move(k);
  l.bindings = std::move(bindings);
  l.params = std::move(params);
  if (l.params.empty()) l.params.push_back(0);
  return l;
}

namespace {
std::mutex g_kmu;
std::unordered_map<std::string, std::shared_ptr<const Kernel>>& kernel_cache() {
  static auto* m = new std::unordered_map<std::string, std::shared_ptr<const Kernel>>();
  return *m;
}
}  // namespace

namespace {
std::shared_ptr<const Kernel> cached(const std::string& key, Dialect d, const Caps& caps,
                                     const std::function<std::shared_ptr<const Kernel>()>& make) {
  std::string full = key + "|" + std::to_string(int(d)) + "|" + std::to_string(caps.f16) +
                     std::to_string(caps.f64) + std::to_string(caps.i64) + std::to_string(caps.i8) +
                     std::to_string(caps.i16) + "|" + std::to_string(caps.max_workgroup_size) +
                     "|" + std::to_string(caps.subgroup_size) + "|" +
                     std::to_string(caps.max_shared_bytes) + std::to_string(caps.cpu) +
                     std::to_string(caps.cooperative_matrix);
  std::shared_ptr<const Kernel> hit;
  {
    std::lock_guard<std::mutex> lock(g_kmu);
    auto it = kernel_cache().find(full);
    if (it != kernel_cache().end()) hit = it->second;
  }
  if (hit) {
    // EMBER_CHECK_KERNEL_KEYS=1 (the tests set it): a key must name one kernel, so a lowering
    // that bakes something into the source but not into the key fails here, not with wrong data.
    static const bool check = env_flag("EMBER_CHECK_KERNEL_KEYS", false);
    if (check && make()->source != hit->source)
      EMBER_FAIL("codegen", "kernel key '", key,
                 "' names two different kernels: the lowering must put what it bakes into the "
                 "source into the key");
    return hit;
  }
  auto k = make();
  std::lock_guard<std::mutex> lock(g_kmu);
  kernel_cache()[full] = k;
  return k;
}
}  // namespace

std::shared_ptr<const Kernel> cached_kernel(const std::string& key, Dialect d, const Caps& caps,
                                            const std::function<kir::Kernel()>& make) {
  return cached(key, d, caps, [&] { return kir::render(make(), d, caps); });
}

size_t cached_kernel_count() {
  std::lock_guard<std::mutex> lock(g_kmu);
  return kernel_cache().size();
}

}  // namespace ember::codegen
