#include "codegen/common.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>

#include "codegen/math_f64.h"
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

const char* storage_type(DType t) { return t == DType::bf16 ? "bf16s" : dtype_tag(t); }

const char* compute_type(DType t) {
  switch (t) {
    case DType::f32:
    case DType::f16:
    case DType::bf16:
      return "float";
    case DType::f64:
      return "f64";
    case DType::i8:
    case DType::i16:
    case DType::i32:
      return "int";
    case DType::u8:
    case DType::u16:
    case DType::u32:
      return "uint";
    case DType::i64:
      return "i64";
    case DType::u64:
      return "u64";
    case DType::b8:
      return "bool";
  }
  return "float";
}

std::string load(DType t, const std::string& e) {
  switch (t) {
    case DType::f16:
      return "float(" + e + ")";
    case DType::bf16:
      return "ember_bf16_to_float(" + e + ")";
    case DType::i8:
    case DType::i16:
      return "int(" + e + ")";
    case DType::u8:
    case DType::u16:
      return "uint(" + e + ")";
    case DType::b8:
      return "(uint(" + e + ") != 0u)";
    default:
      return e;
  }
}

std::string store(DType t, const std::string& v) {
  switch (t) {
    case DType::bf16:
      return "ember_bf16_from_float(" + v + ")";
    case DType::b8:
      return "((" + v + ") ? b8(1) : b8(0))";
    case DType::f16:
    case DType::i8:
    case DType::i16:
    case DType::u8:
    case DType::u16:
      return std::string(storage_type(t)) + "(" + v + ")";
    default:
      return v;
  }
}

namespace {

bool is_float_compute(DType t) { return is_floating(t); }
bool narrow_int(DType t) {
  return t == DType::i8 || t == DType::i16 || t == DType::u8 || t == DType::u16;
}

const char* zero_of(DType t) {
  switch (t) {
    case DType::f64:
      return "0.0lf";
    case DType::i64:
      return "0l";
    case DType::u64:
      return "0ul";
    case DType::u8:
    case DType::u16:
    case DType::u32:
      return "0u";
    case DType::i8:
    case DType::i16:
    case DType::i32:
      return "0";
    default:
      return "0.0";
  }
}

const char* one_of(DType t) {
  switch (t) {
    case DType::f64:
      return "1.0lf";
    case DType::i64:
      return "1l";
    case DType::u64:
      return "1ul";
    case DType::u8:
    case DType::u16:
    case DType::u32:
      return "1u";
    case DType::i8:
    case DType::i16:
    case DType::i32:
      return "1";
    default:
      return "1.0";
  }
}

}  // namespace

std::string convert(DType from, DType to, const std::string& v) {
  if (std::strcmp(compute_type(from), compute_type(to)) == 0 && !narrow_int(to)) return v;
  if (to == DType::b8) return "(!((" + v + ") == " + zero_of(from) + "))";
  if (from == DType::b8) return "((" + v + ") ? " + one_of(to) + " : " + zero_of(to) + ")";
  if (is_float_compute(to)) return std::string(compute_type(to)) + "(" + v + ")";
  // to is an integer
  if (is_float_compute(from))
    return std::string("ember_sat_") + dtype_tag(to) + "_" + (from == DType::f64 ? "f64" : "f32") +
           "(" + v + ")";
  if (narrow_int(to))  // wrap like C++'s narrowing conversion
    return std::string(compute_type(to)) + "(" + storage_type(to) + "(" + v + "))";
  return std::string(compute_type(to)) + "(" + v + ")";
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

std::string offset_code(const std::string& var, const std::string& lin, int rank, uint32_t base) {
  std::string s = "int " + var + " = P_I(" + std::to_string(base) + ");\n";
  if (rank == 0) return s;
  const std::string r = var + "_r";
  s += "{ uint " + r + " = " + lin + ";\n";
  for (int d = rank - 1; d >= 0; --d) {
    const std::string size = "P_U(" + std::to_string(base + 1 + d) + ")";
    const std::string stride = "P_I(" + std::to_string(base + 1 + rank + d) + ")";
    if (d == 0) {
      s += "  " + var + " += int(" + r + ") * " + stride + ";\n";
    } else {
      s += "  " + var + " += int(" + r + " % " + size + ") * " + stride + "; " + r + " /= " + size +
           ";\n";
    }
  }
  return s + "}\n";
}

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

uint32_t add_iter(Params& p, const Iter& it, const char* op) {
  EMBER_CHECK(it.numel <= INT32_MAX, op, "tensor of ", it.numel,
              " elements is too large for the 32-bit indexing of GPU kernels");
  const uint32_t base = p.u32(uint32_t(it.numel));
  for (int64_t s : it.sizes) p.u32(uint32_t(s));
  for (size_t k = 0; k < it.offsets.size(); ++k) {
    check_extent(it.offsets[k], it.sizes, it.strides[k], op);
    p.i32(it.offsets[k], op);
    for (int64_t s : it.strides[k]) p.i32(s, op);
  }
  return base;
}

std::string iter_code(const std::vector<std::string>& vars, const std::string& lin, int rank,
                      uint32_t base) {
  std::string s;
  const int n = int(vars.size());
  auto off_word = [&](int k) { return base + 1 + uint32_t(rank) + uint32_t(k) * (rank + 1); };
  for (int k = 0; k < n; ++k)
    s += "int " + vars[k] + " = P_I(" + std::to_string(off_word(k)) + ");\n";
  if (rank == 0) return s;
  s += "{ uint ember_r = " + lin + ";\n";
  for (int d = rank - 1; d >= 0; --d) {
    const std::string size = "P_U(" + std::to_string(base + 1 + d) + ")";
    std::string c = "ember_r";
    if (d > 0) {
      s += "  uint ember_c" + std::to_string(d) + " = ember_r % " + size + "; ember_r /= " + size +
           ";\n";
      c = "ember_c" + std::to_string(d);
    }
    for (int k = 0; k < n; ++k)
      s += "  " + vars[k] + " += int(" + c + ") * P_I(" + std::to_string(off_word(k) + 1 + d) +
           ");\n";
  }
  return s + "}\n";
}

// ---- launches and caching ----

std::string grid_loop(const std::string& var, const std::string& n) {
  return "for (uint " + var + " = GLOBAL_ID; " + var + " < " + n + "; " + var + " += GLOBAL_SIZE)";
}

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
    static const bool check = [] {
      const char* e = std::getenv("EMBER_CHECK_KERNEL_KEYS");
      return e && *e && std::string(e) != "0";
    }();
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
                                            const std::function<KernelDef()>& make) {
  return cached(key, d, caps, [&] { return render(make(), d, caps); });
}

std::shared_ptr<const Kernel> cached_kernel(const std::string& key, Dialect d, const Caps& caps,
                                            const std::function<kir::Kernel()>& make) {
  return cached(key, d, caps, [&] { return kir::render(make(), d, caps); });
}

size_t cached_kernel_count() {
  std::lock_guard<std::mutex> lock(g_kmu);
  return kernel_cache().size();
}

// ---- the library ----

namespace {

struct LibFn {
  std::vector<std::string> deps;
  std::string code;
};

const char* kBf16 =
    "uint16_t ember_bf16_from_float(float f) {\n"
    "  uint x = floatBitsToUint(f);\n"
    "  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);\n"
    "  x += 0x7fffu + ((x >> 16) & 1u);\n"
    "  return uint16_t(x >> 16);\n"
    "}\n";
const char* kBf16To =
    "float ember_bf16_to_float(uint16_t b) { return uintBitsToFloat(uint(b) << 16); }\n";

// ember_sat_<to>_<from>: saturating, NaN -> 0, truncating float -> integer (ref::cast).
bool sat_fn(const std::string& name, LibFn& out) {
  static const char* kTo[] = {"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"};
  static const char* kLo[] = {"-128", "-32768", "-2147483648", "-9223372036854775808",
                              "0",    "0",      "0",           "0"};
  static const char* kHi[] = {"127", "32767", "2147483647", "9223372036854775807",
                              "255", "65535", "4294967295", "18446744073709551615"};
  static const char* kType[] = {"int", "int", "int", "i64", "uint", "uint", "uint", "u64"};
  static const char* kLoV[] = {
      "-128", "-32768", "(-2147483647 - 1)", "(-9223372036854775807l - 1l)", "0u", "0u",
      "0u",   "0ul"};
  static const char* kHiV[] = {"127",  "32767",  "2147483647",  "9223372036854775807l",
                               "255u", "65535u", "4294967295u", "18446744073709551615ul"};
  for (int i = 0; i < 8; ++i) {
    for (int f = 0; f < 2; ++f) {
      const std::string from = f ? "f64" : "f32";
      if (name != std::string("ember_sat_") + kTo[i] + "_" + from) continue;
      const std::string ty = kType[i], suf = f ? ".0lf" : ".0";
      const std::string arg = f ? "f64" : "float";
      out.code = ty + " " + name + "(" + arg + " v) { return isnan(v) ? " + ty +
                 "(0) : v <= " + kLo[i] + suf + " ? " + ty + "(" + kLoV[i] + ") : v >= " + kHi[i] +
                 suf + " ? " + ty + "(" + kHiV[i] + ") : " + ty + "(v); }\n";
      return true;
    }
  }
  return false;
}

bool find_fn(const std::string& name, LibFn& out) {
  if (name == "ember_bf16_from_float") {
    out = {{}, kBf16};
    return true;
  }
  if (name == "ember_bf16_to_float") {
    out = {{}, kBf16To};
    return true;
  }
  if (name.compare(0, 10, "ember_sat_") == 0) return sat_fn(name, out);
  return math_f64_fn(name, out.deps, out.code);
}

void identifiers(const std::string& code, std::vector<std::string>& out) {
  size_t i = 0;
  while (i < code.size()) {
    const unsigned char c = static_cast<unsigned char>(code[i]);
    if (std::isalpha(c) || c == '_') {
      size_t j = i;
      while (j < code.size() &&
             (std::isalnum(static_cast<unsigned char>(code[j])) || code[j] == '_'))
        ++j;
      if (code.compare(i, 6, "ember_") == 0) out.push_back(code.substr(i, j - i));
      i = j;
    } else if (std::isdigit(c)) {
      while (i < code.size() &&
             (std::isalnum(static_cast<unsigned char>(code[i])) || code[i] == '.'))
        ++i;
    } else {
      ++i;
    }
  }
}

void emit(const std::string& name, std::set<std::string>& done, std::string& out) {
  if (done.count(name)) return;
  done.insert(name);
  LibFn fn;
  if (!find_fn(name, fn)) return;  // not a library function (e.g. a local named ember_r)
  for (const std::string& d : fn.deps) emit(d, done, out);
  // functions called by the body of this one (found by scanning) come first too
  std::vector<std::string> used;
  identifiers(fn.code, used);
  for (const std::string& u : used)
    if (u != name) emit(u, done, out);
  out += fn.code;
}

}  // namespace

std::string library_code(const std::string& code, Dialect) {
  std::vector<std::string> used;
  identifiers(code, used);
  std::set<std::string> done;
  std::string out;
  for (const std::string& u : used) emit(u, done, out);
  return out;
}

}  // namespace ember::codegen
