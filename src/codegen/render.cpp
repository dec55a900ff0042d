// The renderer: Ember's kernel language (kernel.h) -> GLSL 450 compute for Vulkan (here) or
// OpenCL C 1.2 (render_opencl.cpp).
// A kernel is rendered as: version and the extensions its types need, the storage type names as
// macros onto GLSL types, thread-id and params macros, one std430 block per buffer (anonymous,
// so `name[i]` indexes it), the params block, shared arrays, helper functions, then main().
#include <cctype>
#include <cstdio>
#include <mutex>
#include <set>
#include <unordered_map>

#include "codegen/common.h"
#include "codegen/kernel.h"
#include "codegen/render_internal.h"
#include "ember/error.h"

namespace ember::codegen {

namespace {

void need_type(Needs& n, const std::string& t) {
  if (t == "f16" || t == "float16_t" || t == "f16vec2" || t == "f16vec4") n.f16 = true;
  if (t == "f64" || t == "double" || t == "dvec2" || t == "dvec4" || t == "P_D" ||
      t == "packDouble2x32" || t == "unpackDouble2x32")
    n.f64 = true;
  if (t == "i64" || t == "u64" || t == "int64_t" || t == "uint64_t" || t == "i64vec2" ||
      t == "u64vec2")
    n.i64 = true;
  if (t == "i8" || t == "u8" || t == "b8" || t == "int8_t" || t == "uint8_t") n.i8 = true;
  if (t == "i16" || t == "u16" || t == "int16_t" || t == "uint16_t") n.i16 = true;
  if (t == "bf16s") n.bf16 = n.i16 = true;
}

void need_dtype(Needs& n, DType t) {
  switch (t) {
    case DType::f16:
      n.f16 = true;
      break;
    case DType::f64:
      n.f64 = true;
      break;
    case DType::bf16:
      n.bf16 = n.i16 = true;
      break;
    case DType::i16:
    case DType::u16:
      n.i16 = true;
      break;
    case DType::i64:
    case DType::u64:
      n.i64 = true;
      break;
    case DType::i8:
    case DType::u8:
    case DType::b8:
      n.i8 = true;
      break;
    default:
      break;
  }
}

// Scans identifiers of kernel-language code for the type names it uses.
void scan_identifiers(Needs& n, const std::string& code) {
  size_t i = 0;
  while (i < code.size()) {
    const unsigned char c = static_cast<unsigned char>(code[i]);
    if (std::isalpha(c) || c == '_') {
      size_t j = i;
      while (j < code.size() &&
             (std::isalnum(static_cast<unsigned char>(code[j])) || code[j] == '_'))
        ++j;
      need_type(n, code.substr(i, j - i));
      i = j;
    } else if (std::isdigit(c)) {
      // skip numeric literals with suffixes (1.0lf, 3ul) so suffix letters are not identifiers
      while (i < code.size() &&
             (std::isalnum(static_cast<unsigned char>(code[i])) || code[i] == '.'))
        ++i;
    } else {
      ++i;
    }
  }
}

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

void check_caps(const KernelDef& def, const Needs& n, const Caps& caps) {
  auto fail = [&](const char* what, const char* feature) {
    EMBER_FAIL(def.name.c_str(), "needs ", what, " (", feature,
               ") which this device lacks; use a dtype it supports (see supports_dtype)");
  };
  if (n.f16 && !caps.f16) fail("float16", "shaderFloat16 + 16-bit storage");
  if (n.f64 && !caps.f64) fail("float64", "shaderFloat64");
  if (n.i64 && !caps.i64) fail("64-bit integers", "shaderInt64");
  if (n.i8 && !caps.i8) fail("8-bit types (int8/uint8/bool)", "shaderInt8 + 8-bit storage");
  if (n.i16 && !caps.i16)
    fail(n.bf16 ? "bfloat16/16-bit integers" : "16-bit integers", "shaderInt16 + 16-bit storage");
}

std::string render_glsl(const KernelDef& def, const Needs& n, const std::string& lib) {
  std::string s = "#version 450\n";
  if (n.f16) s += "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n";
  if (n.i64) s += "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n";
  if (n.i16) s += "#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require\n";
  if (n.i8) s += "#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require\n";
  if (n.f16 || n.i16) s += "#extension GL_EXT_shader_16bit_storage : require\n";
  if (n.i8) s += "#extension GL_EXT_shader_8bit_storage : require\n";
  s += "layout(local_size_x = " + std::to_string(def.local_size) + ") in;\n";
  s += "#define f32 float\n#define i32 int\n#define u32 uint\n";
  if (n.f64) s += "#define f64 double\n";
  if (n.f16) s += "#define f16 float16_t\n";
  if (n.i16) s += "#define i16 int16_t\n#define u16 uint16_t\n#define bf16s uint16_t\n";
  if (n.i64) s += "#define i64 int64_t\n#define u64 uint64_t\n";
  if (n.i8) s += "#define i8 int8_t\n#define u8 uint8_t\n#define b8 uint8_t\n";
  s += "#define GLOBAL_ID gl_GlobalInvocationID.x\n"
       "#define LOCAL_ID gl_LocalInvocationID.x\n"
       "#define GROUP_ID gl_WorkGroupID.x\n"
       "#define LOCAL_SIZE gl_WorkGroupSize.x\n"
       "#define NUM_GROUPS gl_NumWorkGroups.x\n"
       "#define GLOBAL_SIZE (gl_WorkGroupSize.x * gl_NumWorkGroups.x)\n"
       "#define GLOBAL_ID_IDX GLOBAL_ID\n"
       "#define GLOBAL_SIZE_IDX GLOBAL_SIZE\n"
       "#define idx_t int\n#define uidx_t uint\n"
       "#define BARRIER() barrier()\n";
  for (size_t i = 0; i < def.buffers.size(); ++i) {
    const BufferDecl& b = def.buffers[i];
    s += "layout(std430, set = 0, binding = " + std::to_string(i) + ") " +
         (b.writable ? "" : "readonly ") + "buffer EmberBuf" + std::to_string(i) + " { " +
         storage_type(b.dtype) + " " + b.name + "[]; };\n";
  }
  // Params in a uniform block (kParamsBytes, the minimum maxUniformBufferRange): drivers read
  // uniform loads once per workgroup (lavapipe reads storage buffers lane by lane).
  s += "layout(std140, set = 0, binding = " + std::to_string(def.buffers.size()) +
       ") uniform EmberParams { uvec4 ember_params[" + std::to_string(kParamsBytes / 16) +
       "]; };\n"
       "#define P_U(k) ember_params[(k) >> 2][(k) & 3]\n"
       "#define P_I(k) int(P_U(k))\n"
       "#define P_F(k) uintBitsToFloat(P_U(k))\n";
  if (n.f64) s += "#define P_D(k) packDouble2x32(uvec2(P_U(k), P_U((k) + 1)))\n";
  for (const SharedDecl& sh : def.shared)
    s += "shared " + sh.type + " " + sh.name + "[" + std::to_string(sh.count) + "];\n";
  s += lib;
  s += def.functions;
  s += "\nvoid main() {\n" + def.body + "\n}\n";
  return s;
}

std::mutex g_mu;
std::unordered_map<std::string, std::shared_ptr<const Kernel>>& cache() {
  static auto* m = new std::unordered_map<std::string, std::shared_ptr<const Kernel>>();
  return *m;
}

}  // namespace

std::shared_ptr<const Kernel> render(const KernelDef& def, Dialect dialect, const Caps& caps) {
  EMBER_CHECK(dialect == Dialect::glsl || dialect == Dialect::opencl, def.name.c_str(),
              "unknown kernel dialect");
  EMBER_CHECK(def.local_size >= 1 && def.local_size <= caps.max_workgroup_size, def.name.c_str(),
              "local size ", def.local_size, " exceeds the device's maximum ",
              caps.max_workgroup_size);
  Needs n;
  for (const BufferDecl& b : def.buffers) need_dtype(n, b.dtype);
  for (const SharedDecl& sh : def.shared) need_type(n, sh.type);
  const std::string lib = library_code(def.functions + "\n" + def.body, dialect);
  scan_identifiers(n, lib);
  scan_identifiers(n, def.functions);
  scan_identifiers(n, def.body);
  check_caps(def, n, caps);
  std::string src =
      dialect == Dialect::opencl ? render_opencl(def, n, lib) : render_glsl(def, n, lib);
  std::string key = hash_hex(src);
  std::lock_guard<std::mutex> lock(g_mu);
  auto& c = cache();
  auto it = c.find(key);
  if (it != c.end() && it->second->source == src) return it->second;
  auto k = std::make_shared<Kernel>();
  k->name = def.name;
  k->key = key;
  k->source = std::move(src);
  k->dialect = dialect;
  k->buffers = def.buffers;
  k->local_size = def.local_size;
  if (dialect == Dialect::opencl) k->build_options = opencl_build_options();
  c[key] = k;
  return k;
}

}  // namespace ember::codegen
