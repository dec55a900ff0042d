// The OpenCL C 1.2 dialect of the renderer (cl_khr_fp64 when a kernel needs f64; cl_khr_fp16
// when it needs f16, which devices without it refuse through Caps::f16 = false).
//
// The kernel ABI (the OpenCL runtime relies on it):
//   __kernel __attribute__((reqd_work_group_size(local_size, 1, 1)))
//   void ember_main(__global [const] T* restrict ember_g_<buffer>...,
//                   __global const uint* ember_params, uint ember_params_off)
// one pointer per KernelDef::buffers entry in order (const when read-only), then the params
// words, read from ember_params_off on; launches are 1-d. Buffer arguments are prefixed: a body
// may declare a local of a buffer's name that reads the buffer in its initializer (GLSL scope).
//
// The kernel language is GLSL-flavoured; its text is rewritten token by token through tables:
// type names, constructor casts -> C casts `((T)(x))` and vector literals `((uint2)(a, b))`,
// float literals get an `f` suffix (f32 kernels compute in float as in GLSL; `lf` literals stay
// double), GLSL built-ins -> OpenCL built-ins or prelude helpers, `out` parameters of helper
// functions -> pointers (callers pass `&arg`), shared arrays -> `__local` arrays at kernel scope,
// and identifiers that are OpenCL keywords (`half`, `local`...) renamed.
#include <cctype>
#include <map>
#include <set>
#include <vector>

#include "codegen/common.h"
#include "codegen/render_internal.h"
#include "ember/error.h"

namespace ember::codegen {

namespace {

// ---- the dialect's tables ----

// Type names of the kernel language and of GLSL -> OpenCL C.
const std::map<std::string, std::string>& type_map() {
  static const std::map<std::string, std::string> m = {
      {"f32", "float"},     {"f64", "double"},      {"f16", "half"},       {"bf16s", "ushort"},
      {"i8", "char"},       {"i16", "short"},       {"i32", "int"},        {"i64", "long"},
      {"u8", "uchar"},      {"u16", "ushort"},      {"u32", "uint"},       {"u64", "ulong"},
      {"b8", "uchar"},      {"float", "float"},     {"double", "double"},  {"int", "int"},
      {"uint", "uint"},     {"bool", "bool"},       {"int8_t", "char"},    {"uint8_t", "uchar"},
      {"int16_t", "short"}, {"uint16_t", "ushort"}, {"int32_t", "int"},    {"uint32_t", "uint"},
      {"int64_t", "long"},  {"uint64_t", "ulong"},  {"float16_t", "half"}, {"vec2", "float2"},
      {"vec4", "float4"},   {"uvec2", "uint2"},     {"uvec4", "uint4"},    {"ivec2", "int2"},
      {"ivec4", "int4"},    {"dvec2", "double2"},   {"dvec4", "double4"},  {"u64vec2", "ulong2"},
      {"i64vec2", "long2"}, {"f16vec2", "half2"},   {"f16vec4", "half4"},  {"idx_t", "long"},
      {"uidx_t", "size_t"}};
  return m;
}

// GLSL built-ins called under another name in OpenCL C (same arguments).
const std::map<std::string, std::string>& builtin_map() {
  static const std::map<std::string, std::string> m = {
      {"floatBitsToUint", "as_uint"},
      {"floatBitsToInt", "as_int"},
      {"uintBitsToFloat", "as_float"},
      {"intBitsToFloat", "as_float"},
      {"packDouble2x32", "as_double"},
      {"unpackDouble2x32", "as_uint2"},
      {"doubleBitsToUint64", "as_ulong"},
      {"doubleBitsToInt64", "as_long"},
      {"uint64BitsToDouble", "as_double"},
      {"int64BitsToDouble", "as_double"},
      {"inversesqrt", "rsqrt"},
      {"roundEven", "rint"},
      {"abs", "fabs"},  // the kernel language uses abs on floats only (ints: explicit selects)
      {"fract", "ember_fract"},
      {"mod", "ember_mod"},
      {"umulExtended", "ember_umul_extended"},
      {"unpackHalf2x16", "ember_unpack_half2x16"},
      {"barrier", "BARRIER"}};
  return m;
}

// Prelude helpers for the mapped built-ins, emitted when used.
const std::map<std::string, std::string>& helper_code() {
  static const std::map<std::string, std::string> m = {
      {"ember_fract", "#define ember_fract(x) ((x) - floor(x))\n"},
      {"ember_mod", "#define ember_mod(x, y) ((x) - (y) * floor((x) / (y)))\n"},
      {"ember_umul_extended",
       "void ember_umul_extended(uint a, uint b, uint* hi, uint* lo) {\n"
       "  *hi = mul_hi(a, b);\n  *lo = a * b;\n}\n"},
      {"ember_unpack_half2x16",
       "float2 ember_unpack_half2x16(uint v) { return vload_half2(0, (const half*)&v); }\n"}};
  return m;
}

// Calls whose arguments at these indices are GLSL `out` parameters (OpenCL: pointers).
std::map<std::string, std::set<size_t>> builtin_out_args() {
  return {{"frexp", {1}}, {"modf", {1}}, {"ember_umul_extended", {2, 3}}};
}

// Legal GLSL identifiers that are OpenCL C keywords or reserved type names.
const std::set<std::string>& reserved() {
  static const std::set<std::string> s = {
      "half",      "char",       "short",      "long",      "uchar",     "ushort",    "ulong",
      "local",     "global",     "constant",   "private",   "kernel",    "restrict",  "size_t",
      "ptrdiff_t", "intptr_t",   "uintptr_t",  "event_t",   "sampler_t", "__local",   "__global",
      "read_only", "write_only", "read_write", "image1d_t", "image2d_t", "image3d_t", "signed",
      "unsigned",  "register",   "auto",       "extern",    "static",    "goto",      "typedef",
      "union",     "enum",       "sizeof",     "volatile"};
  return s;
}

// ---- tokens ----

enum class Kind { ident, number, punct, space };
struct Tok {
  Kind kind;
  std::string text;
};

std::vector<Tok> tokenize(const std::string& s) {
  std::vector<Tok> out;
  size_t i = 0;
  auto alnum = [&](size_t j) {
    return j < s.size() && (std::isalnum((unsigned char)s[j]) || s[j] == '_');
  };
  while (i < s.size()) {
    const unsigned char c = (unsigned char)s[i];
    size_t j = i + 1;
    Kind k = Kind::punct;
    if (std::isalpha(c) || c == '_') {
      k = Kind::ident;
      while (alnum(j)) ++j;
    } else if (std::isdigit(c) ||
               (c == '.' && i + 1 < s.size() && std::isdigit((unsigned char)s[i + 1]))) {
      k = Kind::number;
      const bool hex = c == '0' && i + 1 < s.size() && (s[i + 1] == 'x' || s[i + 1] == 'X');
      while (j < s.size()) {
        if (alnum(j) || s[j] == '.') {
          ++j;
        } else if (!hex && (s[j] == '+' || s[j] == '-') && (s[j - 1] == 'e' || s[j - 1] == 'E')) {
          ++j;
        } else {
          break;
        }
      }
    } else if (std::isspace(c)) {
      k = Kind::space;
      while (j < s.size() && std::isspace((unsigned char)s[j])) ++j;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      k = Kind::space;
      while (j < s.size() && s[j] != '\n') ++j;
    } else if (c == '#') {  // a preprocessor line passes through whole
      while (j < s.size() && s[j] != '\n') ++j;
    }
    out.push_back({k, s.substr(i, j - i)});
    i = j;
  }
  return out;
}

// A float literal gets the `f` suffix (GLSL's float), `lf` goes (OpenCL's double); integers
// and hex literals keep theirs (`u`, `l`, `ul` mean the same in both).
std::string number(const std::string& t) {
  if (t.size() > 1 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) return t;
  const bool is_float = t.find_first_of(".eE") != std::string::npos;
  if (!is_float) return t;
  size_t end = t.size();
  while (end > 0 && std::isalpha((unsigned char)t[end - 1]) && t[end - 1] != 'e' &&
         t[end - 1] != 'E')
    --end;
  const std::string body = t.substr(0, end), suffix = t.substr(end);
  if (suffix == "lf" || suffix == "LF") return body;
  return body + "f";
}

// ---- the rewriter ----

class Rewriter {
 public:
  explicit Rewriter(std::vector<Tok> toks) : t_(std::move(toks)) {}

  std::string program_scope() {
    std::string out;
    size_t i = 0;
    while (i < t_.size()) {
      const size_t close = definition_at(i);
      if (close == 0) {
        out += token(i, t_.size());
        ++i;
        continue;
      }
      out += definition(i, close);
      i = skip_block(close);
    }
    return out;
  }

  std::string kernel_scope() { return range(0, t_.size()); }

  // Functions with `out` parameters seen so far (callers pass addresses).
  std::map<std::string, std::set<size_t>> out_args = builtin_out_args();
  std::set<std::string> used_helpers;
  // Buffer names: an indexed one is the kernel argument `ember_g_<name>` (C's scope of a local
  // starts at its declarator, GLSL's after its initializer: `float a = f(a[i]);` reads buffer a).
  std::set<std::string> buffers;

 private:
  std::vector<Tok> t_;
  std::set<std::string> deref_;  // `out` parameters of the function being rewritten

  size_t next(size_t i) const {
    while (i < t_.size() && t_[i].kind == Kind::space) ++i;
    return i;
  }
  size_t prev(size_t i) const {  // index of the non-space token before i, or npos
    while (i > 0) {
      --i;
      if (t_[i].kind != Kind::space) return i;
    }
    return std::string::npos;
  }
  bool is(size_t i, const char* p) const { return i < t_.size() && t_[i].text == p; }
  size_t match(size_t open) const {  // the `)` (or `}`) closing t_[open]
    const std::string o = t_[open].text, c = o == "(" ? ")" : "}";
    int depth = 0;
    for (size_t i = open; i < t_.size(); ++i) {
      if (t_[i].text == o) ++depth;
      if (t_[i].text == c && --depth == 0) return i;
    }
    EMBER_FAIL("render_opencl", "unbalanced '", o, "' in kernel code");
  }
  // Top-level comma-separated arguments of the parenthesis opened at `open`: [begin, end) pairs.
  std::vector<std::pair<size_t, size_t>> args(size_t open, size_t close) const {
    std::vector<std::pair<size_t, size_t>> a;
    int depth = 0;
    size_t b = open + 1;
    for (size_t i = open + 1; i < close; ++i) {
      const std::string& x = t_[i].text;
      if (x == "(" || x == "[" || x == "{") ++depth;
      if (x == ")" || x == "]" || x == "}") --depth;
      if (x == "," && depth == 0) {
        a.push_back({b, i});
        b = i + 1;
      }
    }
    if (next(b) < close || !a.empty()) a.push_back({b, close});
    return a;
  }

  // If t_[i] starts a function definition at program scope (`T name(...) {`), returns the
  // index of its `)`; else 0.
  size_t definition_at(size_t i) const {
    if (t_[i].kind != Kind::ident) return 0;
    const size_t p = prev(i);
    if (p == std::string::npos || t_[p].kind != Kind::ident) return 0;
    const size_t o = next(i + 1);
    if (!is(o, "(")) return 0;
    const size_t c = match(o);
    return is(next(c + 1), "{") ? c : 0;
  }
  size_t skip_block(size_t close) const { return match(next(close + 1)) + 1; }

  // `name(params) { body }` with `out`/`inout` parameters as pointers.
  std::string definition(size_t i, size_t close) {
    const std::string name = t_[i].text;
    std::string s = name + "(";
    std::set<std::string> outs;
    const auto ps = args(next(i + 1), close);
    for (size_t k = 0; k < ps.size(); ++k) {
      size_t b = next(ps[k].first);
      const bool out = is(b, "out") || is(b, "inout");
      if (out) b = next(b + 1);
      if (b == ps[k].first) b = ps[k].first;
      std::string param;
      size_t last = ps[k].second;  // the parameter's name is its last identifier
      for (size_t j = b; j < ps[k].second; ++j)
        if (t_[j].kind == Kind::ident) last = j;
      for (size_t j = b; j < ps[k].second; ++j) {
        if (j == last && out) param += "*";
        param += token(j, ps[k].second);
      }
      if (out) {
        outs.insert(t_[last].text);
        out_args[name].insert(k);
      }
      s += (k ? ", " : "") + trim(param);
    }
    const size_t open = next(close + 1), end = match(open);
    deref_ = outs;
    s += ") " + range(open, end + 1);
    deref_.clear();
    return s;
  }

  static std::string trim(const std::string& x) {
    const size_t b = x.find_first_not_of(" \n\t"), e = x.find_last_not_of(" \n\t");
    return b == std::string::npos ? "" : x.substr(b, e - b + 1);
  }

  std::string range(size_t b, size_t e) {
    std::string s;
    for (size_t i = b; i < e;) {
      size_t consumed = 0;
      s += call(i, e, consumed);
      if (consumed) {
        i += consumed;
      } else {
        s += token(i, e);
        ++i;
      }
    }
    return s;
  }

  // A call or constructor `name(args)` at i: its rewrite, with `consumed` tokens; "" if none.
  std::string call(size_t i, size_t e, size_t& consumed) {
    consumed = 0;
    if (t_[i].kind != Kind::ident) return "";
    const size_t p = prev(i);
    if (p != std::string::npos && is(p, ".")) return "";
    const size_t o = next(i + 1);
    if (o >= e || !is(o, "(")) return "";
    const size_t c = match(o);
    std::string name = t_[i].text;
    const auto as = args(o, c);
    auto arg = [&](size_t k) { return range(as[k].first, as[k].second); };
    const auto& tm = type_map();
    auto ty = tm.find(name);
    std::string s;
    if (ty != tm.end()) {  // constructor: a cast or a vector literal
      s = "((" + ty->second + ")(";
      for (size_t k = 0; k < as.size(); ++k) s += (k ? "," : "") + arg(k);
      s += "))";
    } else {
      if (name == "atan" && as.size() == 2) name = "atan2";
      auto bi = builtin_map().find(name);
      if (bi != builtin_map().end()) name = bi->second;
      if (helper_code().count(name)) used_helpers.insert(name);
      if (reserved().count(name)) name = "ember_kw_" + name;
      const auto outs = out_args.find(name);
      s = name + "(";
      for (size_t k = 0; k < as.size(); ++k) {
        const bool addr = outs != out_args.end() && outs->second.count(k);
        s += (k ? ", " : "") + std::string(addr ? "&" : "") + (addr ? trim(arg(k)) : arg(k));
      }
      s += ")";
    }
    consumed = c + 1 - i;
    return s;
  }

  std::string token(size_t i, size_t) const {
    const Tok& x = t_[i];
    if (x.kind == Kind::number) return number(x.text);
    if (x.kind != Kind::ident) return x.text;
    const size_t p = prev(i);
    if (p != std::string::npos && is(p, ".")) return x.text;  // a swizzle or member
    if (x.text == "out" || x.text == "inout" || x.text == "in") {
      // a parameter qualifier outside a definition cannot occur; keep GLSL's `in` harmless
      if (x.text == "in") return "";
    }
    auto ty = type_map().find(x.text);
    if (ty != type_map().end()) return ty->second;
    if (deref_.count(x.text)) return "(*" + x.text + ")";
    if (buffers.count(x.text) && is(next(i + 1), "[")) return "ember_g_" + x.text;
    if (reserved().count(x.text)) return "ember_kw_" + x.text;
    return x.text;
  }
};

std::string cl_type(const std::string& t) {
  auto it = type_map().find(t);
  return it == type_map().end() ? t : it->second;
}

}  // namespace

const char* opencl_build_options() { return "-cl-std=CL1.2"; }

std::string render_opencl(const KernelDef& def, const Needs& n, const std::string& lib) {
  // Helper functions are at program scope: buffers, shared arrays and the params are the entry
  // point's arguments and locals there, so a helper must take them as arguments.
  std::set<std::string> kernel_names = {"P_U", "P_I", "P_F", "P_D", "ember_params"};
  for (const BufferDecl& b : def.buffers) kernel_names.insert(b.name);
  for (const SharedDecl& sh : def.shared) kernel_names.insert(sh.name);
  const std::vector<Tok> fn_toks = tokenize(def.functions);
  for (size_t i = 0; i < fn_toks.size(); ++i) {
    if (fn_toks[i].kind != Kind::ident || !kernel_names.count(fn_toks[i].text)) continue;
    size_t j = i + 1;
    while (j < fn_toks.size() && fn_toks[j].kind == Kind::space) ++j;
    const bool indexed = j < fn_toks.size() && (fn_toks[j].text == "[" || fn_toks[j].text == "(");
    EMBER_CHECK(!indexed, def.name.c_str(), "a helper function uses '", fn_toks[i].text,
                "', which is local to the entry point in OpenCL C; pass it as an argument");
  }

  Rewriter scope(tokenize(lib + def.functions));
  const std::string functions = scope.program_scope();
  Rewriter body(tokenize(def.body));
  body.out_args = scope.out_args;
  for (const BufferDecl& b : def.buffers) body.buffers.insert(b.name);
  const std::string main = body.kernel_scope();

  std::string s;
  if (n.f64) s += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  if (n.f16) s += "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n";
  s += "#define GLOBAL_ID ((uint)get_global_id(0))\n"
       "#define LOCAL_ID ((uint)get_local_id(0))\n"
       "#define GROUP_ID ((uint)get_group_id(0))\n"
       "#define LOCAL_SIZE " +
       std::to_string(def.local_size) +
       "u\n"
       "#define NUM_GROUPS ((uint)get_num_groups(0))\n"
       "#define GLOBAL_SIZE ((uint)get_global_size(0))\n"
       "#define GLOBAL_ID_IDX get_global_id(0)\n"
       "#define GLOBAL_SIZE_IDX get_global_size(0)\n"
       "#define BARRIER() barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)\n"
       "#define P_U(k) ember_params[ember_params_off + (k)]\n"
       "#define P_I(k) ((int)P_U(k))\n"
       "#define P_F(k) as_float(P_U(k))\n";
  if (n.f64) s += "#define P_D(k) as_double((uint2)(P_U(k), P_U((k) + 1)))\n";
  std::set<std::string> helpers = scope.used_helpers;
  helpers.insert(body.used_helpers.begin(), body.used_helpers.end());
  for (const std::string& h : helpers) s += helper_code().at(h);
  s += functions;
  s += "\n__kernel __attribute__((reqd_work_group_size(" + std::to_string(def.local_size) +
       ", 1, 1)))\nvoid ember_main(";
  for (const BufferDecl& b : def.buffers)
    s += std::string("__global ") + (b.writable ? "" : "const ") + cl_type(storage_type(b.dtype)) +
         "* restrict ember_g_" + b.name + ", ";
  s += "__global const uint* ember_params, uint ember_params_off) {\n";
  for (const SharedDecl& sh : def.shared)
    s += "__local " + cl_type(sh.type) + " " + sh.name + "[" + std::to_string(sh.count) + "];\n";
  s += main + "\n}\n";
  return s;
}

}  // namespace ember::codegen
