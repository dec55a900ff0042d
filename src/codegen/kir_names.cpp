// The identifiers kir gives to buffers, shared arrays, locals and helper functions: never a
// keyword, type or built-in of a dialect it renders (GLSL 450, OpenCL C 1.2, WGSL; CUDA C next),
// never a name the renderer's ABI or prelude declares (WGSL's: ember_w_*).
#include <cctype>
#include <cstring>
#include <set>
#include <string>

#include "codegen/kir.h"

namespace ember::codegen::kir {

namespace {

const std::set<std::string>& reserved_words() {
  static const auto* s = new std::set<std::string>{
      // C and OpenCL C keywords, qualifiers and types
      "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
      "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
      "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
      "union", "unsigned", "void", "volatile", "while", "bool", "true", "false", "half", "uchar",
      "ushort", "uint", "ulong", "size_t", "ptrdiff_t", "intptr_t", "uintptr_t", "global", "local",
      "constant", "private", "kernel", "read_only", "write_only", "read_write", "image1d_t",
      "image2d_t", "image3d_t", "sampler_t", "event_t", "complex", "imaginary", "quad",
      "vec_type_hint", "reqd_work_group_size", "work_group_size_hint",
      // GLSL 450 keywords, qualifiers, types and reserved words
      "attribute", "uniform", "varying", "buffer", "shared", "coherent", "readonly", "writeonly",
      "layout", "centroid", "flat", "smooth", "noperspective", "patch", "sample", "subroutine",
      "in", "out", "inout", "invariant", "precise", "discard", "lowp", "mediump", "highp",
      "precision", "common", "partition", "active", "asm", "class", "template", "this", "resource",
      "noinline", "public", "external", "interface", "fixed", "unsigned", "superp", "input",
      "output", "filter", "namespace", "using", "cast", "main", "atomic_uint", "float16_t",
      "float32_t", "float64_t", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t",
      "uint32_t", "uint64_t",
      // WGSL keywords, reserved words, predeclared types and the built-ins its renderer calls
      "alias", "const_assert", "continuing", "diagnostic", "enable", "fallthrough", "override",
      "requires", "let", "var", "fn", "loop", "array", "atomic", "ptr", "f16", "f32", "f64", "i32",
      "u32", "i64", "u64", "vec2", "vec3", "vec4", "mat2x2", "mat3x3", "mat4x4", "workgroup",
      "storage", "function", "private", "read", "write", "sampler", "texture_2d", "as", "async",
      "await", "become", "binding_array", "catch", "co_await", "co_return", "co_yield",
      "const_cast", "consteval", "constexpr", "constinit", "crate", "debugger", "decltype",
      "delete", "demote", "demote_to_helper", "dynamic_cast", "enum", "explicit", "export", "final",
      "finally", "friend", "from", "fxgroup", "get", "groupshared", "handle", "impl", "implements",
      "import", "instanceof", "macro", "macro_rules", "match", "meta", "mod", "module", "move",
      "mut", "mutable", "new", "nil", "noexcept", "nointerpolation", "null", "nullptr", "of",
      "operator", "package", "packoffset", "pass", "pixelfragment", "premerge", "priv", "protected",
      "pub", "ref", "regardless", "reinterpret_cast", "require", "self", "set", "snorm",
      "static_assert", "static_cast", "std", "super", "target", "thread_local", "throw", "trait",
      "try", "type", "typeid", "typename", "typeof", "unless", "unorm", "unsafe", "unsized", "use",
      "virtual", "wgsl", "where", "with", "yield", "bitcast", "inverseSqrt", "fract",
      "workgroupBarrier", "storageBarrier", "workgroupUniformLoad", "atomicLoad", "atomicStore",
      "atomicAnd", "atomicOr", "atomicAdd", "unpack2x16float", "pack2x16float", "arrayLength",
      "any", "all", "saturate", "degrees", "radians",
      // CUDA C words
      "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "__syncthreads",
      // built-in functions the dialect tables and rules call
      "exp", "exp2", "log", "log2", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh",
      "cosh", "tanh", "asinh", "acosh", "atanh", "sqrt", "rsqrt", "inversesqrt", "pow", "floor",
      "ceil", "trunc", "round", "roundEven", "rint", "abs", "fabs", "min", "max", "fmin", "fmax",
      "clamp", "fma", "mad", "mix", "select", "sign", "step", "isnan", "isinf", "ldexp", "frexp",
      "mul_hi", "barrier", "mem_fence", "floatBitsToUint", "floatBitsToInt", "uintBitsToFloat",
      "intBitsToFloat", "doubleBitsToUint64", "doubleBitsToInt64", "uint64BitsToDouble",
      "float16BitsToUint16", "uint16BitsToFloat16", "packDouble2x32", "unpackDouble2x32",
      "packHalf2x16", "unpackHalf2x16", "vload_half", "vstore_half", "dot", "length",
      // the renderers' ABI and prelude
      "ember_main", "ember_params", "ember_params_off", "ember_bf16_to_float",
      "ember_bf16_from_float", "ember_half_to_float", "ember_frexp_mant", "ember_frexp_exp",
      "ember_mul_hi", "EmberParams"};
  return *s;
}

bool has_prefix(const std::string& s, const char* p) {
  return s.compare(0, std::strlen(p), p) == 0;
}

}  // namespace

bool reserved_name(const std::string& name) {
  if (reserved_words().count(name)) return true;
  // built-in families: gl_*, get_*, as_*, convert_*, atomic_*, __*, vector types, buffer blocks
  for (const char* p : {"gl_", "get_", "as_", "convert_", "atomic_", "__", "EmberBuf", "vload",
                        "vstore", "ember_w_"})
    if (has_prefix(name, p)) return true;
  for (const char* t :
       {"char",   "uchar", "short",  "ushort", "int",    "uint",   "long",  "ulong", "float",
        "double", "half",  "vec",    "ivec",   "uvec",   "dvec",   "bvec",  "mat",   "dmat",
        "i8vec",  "u8vec", "i16vec", "u16vec", "i64vec", "u64vec", "f16vec"})
    if (has_prefix(name, t)) {
      const std::string rest = name.substr(std::strlen(t));
      if (!rest.empty() && rest.find_first_not_of("0123456789x") == std::string::npos) return true;
    }
  return false;
}

bool valid_identifier(const std::string& name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
    return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

}  // namespace ember::codegen::kir
