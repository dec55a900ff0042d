// kir's renderer: one table per dialect (type names, literal suffixes, casts, built-in names,
// thread ids, barrier) plus a few rules: the declarations of buffers, params and shared arrays,
// the entry point's signature, and the storage rule (loads widen 8/16-bit and bf16 elements to
// their compute type, stores round or wrap them back). The kernel ABI is kernel.h's; OpenCL's:
//   __kernel __attribute__((reqd_work_group_size(local_size, 1, 1)))
//   void ember_main(__global [const] T* restrict <buffer>..., __global const uint* ember_params,
//                   uint ember_params_off)
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "codegen/kir.h"
#include "codegen/kir_renderer.h"
#include "ember/error.h"

namespace ember::codegen::kir {

namespace {

using detail::Needs;
using detail::Renderer;
using detail::Table;

// Fn order: exp exp2 log log2 sin cos tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh
// sqrt rsqrt pow floor ceil trunc round_even abs min max clamp fma isnan isinf ldexp frexp_mant
// frexp_exp mul_hi f32_from_half f64_lo f64_hi f64_from_words
const Table kGlsl = {
    {"void", "bool", "int8_t", "int16_t", "int", "int64_t", "uint8_t", "uint16_t", "uint",
     "uint64_t", "float16_t", "uint16_t", "float", "double", "int", "uint", "vec4"},
    true,
    "",
    "lf",
    "l",
    "ul",
    {"gl_GlobalInvocationID.x", "gl_LocalInvocationID.x", "gl_WorkGroupID.x", "gl_WorkGroupSize.x",
     "gl_NumWorkGroups.x", "(gl_WorkGroupSize.x * gl_NumWorkGroups.x)", "gl_GlobalInvocationID.x",
     "(gl_WorkGroupSize.x * gl_NumWorkGroups.x)"},
    "barrier();",
    {"exp",
     "exp2",
     "log",
     "log2",
     "sin",
     "cos",
     "tan",
     "asin",
     "acos",
     "atan",
     "atan",
     "sinh",
     "cosh",
     "tanh",
     "asinh",
     "acosh",
     "atanh",
     "sqrt",
     "inversesqrt",
     "pow",
     "floor",
     "ceil",
     "trunc",
     "roundEven",
     "abs",
     "min",
     "max",
     "clamp",
     "fma",
     "isnan",
     "isinf",
     "ldexp",
     "ember_frexp_mant",
     "ember_frexp_exp",
     "ember_mul_hi",
     "",
     "",
     "",
     ""},
    "floatBitsToUint",
    "floatBitsToInt",
    "uintBitsToFloat",
    "doubleBitsToUint64",
    "doubleBitsToInt64",
    "uint64BitsToDouble",
    "float16BitsToUint16",
    "uint16BitsToFloat16"};

const Table kOpenCL = {
    {"void", "bool", "char", "short", "int", "long", "uchar", "ushort", "uint", "ulong", "half",
     "ushort", "float", "double", "long", "size_t", "float4"},
    false,
    "f",
    "",
    "L",
    "UL",
    {"((uint)get_global_id(0))", "((uint)get_local_id(0))", "((uint)get_group_id(0))",
     "((uint)get_local_size(0))", "((uint)get_num_groups(0))", "((uint)get_global_size(0))",
     "get_global_id(0)", "get_global_size(0)"},
    "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);",
    {"exp",
     "exp2",
     "log",
     "log2",
     "sin",
     "cos",
     "tan",
     "asin",
     "acos",
     "atan",
     "atan2",
     "sinh",
     "cosh",
     "tanh",
     "asinh",
     "acosh",
     "atanh",
     "sqrt",
     "rsqrt",
     "pow",
     "floor",
     "ceil",
     "trunc",
     "rint",
     "",
     "min",
     "max",
     "clamp",
     "fma",
     "",
     "",
     "ldexp",
     "ember_frexp_mant",
     "ember_frexp_exp",
     "mul_hi",
     "ember_half_to_float",
     "",
     "",
     ""},
    "as_uint",
    "as_int",
    "as_float",
    "as_ulong",
    "as_long",
    "as_double",
    "as_ushort",
    "as_half"};

std::string hash_hex(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

void check_caps(const Kernel& k, const Needs& n, const Caps& caps) {
  auto fail = [&](const char* what, const char* feature) {
    EMBER_FAIL(k.name().c_str(), "needs ", what, " (", feature,
               ") which this device lacks; use a dtype it supports (see supports_dtype)");
  };
  if (n.f16 && !caps.f16) fail("float16", "shaderFloat16 + 16-bit storage");
  if (n.f64 && !caps.f64) fail("float64", "shaderFloat64");
  if (n.i64 && !caps.i64) fail("64-bit integers", "shaderInt64");
  if (n.i8 && !caps.i8) fail("8-bit types (int8/uint8/bool)", "shaderInt8 + 8-bit storage");
  if (n.i16 && !caps.i16)
    fail(n.bf16 ? "bfloat16/16-bit integers" : "16-bit integers", "shaderInt16 + 16-bit storage");
}

}  // namespace

std::shared_ptr<const codegen::Kernel> render(const Kernel& k, Dialect dialect, const Caps& caps) {
  EMBER_CHECK(dialect == Dialect::glsl || dialect == Dialect::opencl || dialect == Dialect::wgsl,
              k.name().c_str(), "unknown kernel dialect");
  EMBER_CHECK(k.local_size_x() >= 1 && k.local_size_x() <= caps.max_workgroup_size,
              k.name().c_str(), "local size ", k.local_size_x(), " exceeds the device's maximum ",
              caps.max_workgroup_size);
  std::unique_ptr<Renderer> r =
      dialect == Dialect::wgsl
          ? detail::make_wgsl_renderer(k)
          : std::make_unique<Renderer>(k, dialect, dialect == Dialect::opencl ? kOpenCL : kGlsl);
  std::string src = r->source();
  check_caps(k, r->needs(), caps);
  static std::mutex mu;
  static auto* cache =
      new std::unordered_map<std::string, std::shared_ptr<const codegen::Kernel>>();
  std::string key = hash_hex(src);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache->find(key);
  if (it != cache->end() && it->second->source == src) return it->second;
  auto out = std::make_shared<codegen::Kernel>();
  out->name = k.name();
  out->key = key;
  out->source = std::move(src);
  out->dialect = dialect;
  out->buffers = k.buffers();
  out->local_size = k.local_size_x();
  if (dialect == Dialect::opencl) out->build_options = "-cl-std=CL1.2";
  (*cache)[key] = out;
  return out;
}

}  // namespace ember::codegen::kir
