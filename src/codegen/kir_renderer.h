// The C-style kir renderer that every dialect shares: the walk over expressions and statements,
// GLSL's and OpenCL C's rules, and the hooks (virtual) a dialect with other rules overrides
// (WGSL, kir_render_wgsl.cpp). Internal to kir_render*.cpp.
#pragma once
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "codegen/kir.h"
#include "ember/error.h"

namespace ember::codegen::kir::detail {

struct Table {
  const char* types[kTypeCount];
  bool constructor_casts;  // GLSL T(x); else C ((T)(x))
  const char* f32_suffix;
  const char* f64_suffix;
  const char* i64_suffix;
  const char* u64_suffix;
  const char* thread[8];
  const char* barrier;
  const char* fns[int(Fn::f64_from_words) + 1];  // "" when a rule renders it
  const char* bits_f32_to_u32;
  const char* bits_f32_to_i32;
  const char* bits_u32_to_f32;
  const char* bits_f64_to_u64;
  const char* bits_f64_to_i64;
  const char* bits_u64_to_f64;
  const char* bits_f16_to_u16;
  const char* bits_u16_to_f16;
};

// Feature groups a kernel's types need.
struct Needs {
  bool f16 = false, f64 = false, i64 = false, i8 = false, i16 = false, bf16 = false;
  bool frexp32 = false, frexp64 = false, mul_hi = false, half = false;
  void type(Type t) {
    switch (t) {
      case Type::f16:
        f16 = true;
        break;
      case Type::f64:
        f64 = true;
        break;
      case Type::i64:
      case Type::u64:
        i64 = true;
        break;
      case Type::i8:
      case Type::u8:
        i8 = true;
        break;
      case Type::i16:
      case Type::u16:
        i16 = true;
        break;
      case Type::bf16:
        bf16 = i16 = true;
        break;
      default:
        break;
    }
  }
};

class Renderer {
 public:
  Renderer(const Kernel& k, Dialect d, const Table& t) : k_(k), d_(d), t_(t) {}
  virtual ~Renderer() = default;

  std::string source() {
    for (const BufferDecl& b : k_.buffers()) n_.type(storage_of(b.dtype));
    for (const auto& s : k_.shared_arrays()) n_.type(s.type);
    std::string fns;
    for (const auto& f : k_.functions()) fns += function(f);
    std::string body = block(k_.body(), 1);
    return assemble(fns, body);
  }
  const Needs& needs() const { return n_; }

 protected:
  const Kernel& k_;
  Dialect d_;
  const Table& t_;
  Needs n_;

  bool cl() const { return d_ == Dialect::opencl; }
  std::string ty(Type t) {
    n_.type(t);
    return t_.types[int(t)];
  }
  virtual std::string cast_to(Type t, const std::string& x) {
    return t_.constructor_casts ? ty(t) + "(" + x + ")" : "((" + ty(t) + ")(" + x + "))";
  }
  std::string var(int id) const { return k_.vars()[size_t(id)].name; }
  const std::string& buffer(int id) const { return k_.buffers()[size_t(id)].name; }

  // ---- expressions ----

  virtual std::string literal(const Node& n) {
    char buf[64];
    const Type t = n.type;
    switch (t) {
      case Type::boolean:
        return n.bits ? "true" : "false";
      case Type::f32:
      case Type::f16: {
        float f;
        const uint32_t b = uint32_t(n.bits);
        std::memcpy(&f, &b, 4);
        std::string s;
        if (std::isfinite(f)) {
          std::snprintf(buf, sizeof buf, "%.9e%s", double(f), t_.f32_suffix);
          s = buf;
        } else {
          std::snprintf(buf, sizeof buf, "%uu", b);
          s = std::string(t_.bits_u32_to_f32) + "(" + buf + ")";
        }
        return t == Type::f16 ? cast_to(Type::f16, s) : s;
      }
      case Type::f64: {
        n_.f64 = true;
        double v;
        std::memcpy(&v, &n.bits, 8);
        if (std::isfinite(v)) {
          std::snprintf(buf, sizeof buf, "%.17e%s", v, t_.f64_suffix);
          return buf;
        }
        std::snprintf(buf, sizeof buf, "%uu, %uu", uint32_t(n.bits), uint32_t(n.bits >> 32));
        return cl() ? std::string("as_double((uint2)(") + buf + "))"
                    : std::string("packDouble2x32(uvec2(") + buf + "))";
      }
      case Type::i64: {
        n_.i64 = true;
        const int64_t v = int64_t(n.bits);
        if (v == INT64_MIN)
          return std::string("(-9223372036854775807") + t_.i64_suffix + " - 1" + t_.i64_suffix +
                 ")";
        std::snprintf(buf, sizeof buf, "%lld%s", static_cast<long long>(v), t_.i64_suffix);
        return v < 0 ? std::string("(") + buf + ")" : buf;
      }
      case Type::u64:
        n_.i64 = true;
        std::snprintf(buf, sizeof buf, "%llu%s", static_cast<unsigned long long>(n.bits),
                      t_.u64_suffix);
        return buf;
      case Type::u32:
      case Type::u8:
      case Type::u16:
      case Type::uidx: {
        std::snprintf(buf, sizeof buf, "%uu", uint32_t(n.bits));
        if (t == Type::u32 || (t == Type::uidx && !cl())) return buf;
        if (t == Type::uidx && cl()) {
          std::snprintf(buf, sizeof buf, "%llu%s", static_cast<unsigned long long>(n.bits),
                        t_.u64_suffix);
        }
        return cast_to(t, buf);
      }
      default: {  // i32, i8, i16, idx
        const int64_t v = t == Type::idx ? int64_t(n.bits) : int64_t(int32_t(uint32_t(n.bits)));
        std::string s;
        if (v == INT32_MIN && t != Type::idx) {
          s = "(-2147483647 - 1)";
        } else {
          std::snprintf(buf, sizeof buf, "%lld%s", static_cast<long long>(v),
                        t == Type::idx && cl() ? t_.i64_suffix : "");
          s = v < 0 ? std::string("(") + buf + ")" : buf;
        }
        return t == Type::i32 || (t == Type::idx && !cl()) ? s : cast_to(t, s);
      }
    }
  }

  virtual std::string param_word(const std::string& k) {
    return cl() ? "ember_params[ember_params_off + " + k + "]"
                : "ember_params[(" + k + ") >> 2][(" + k + ") & 3u]";
  }
  virtual std::string param_word(uint32_t k) {
    return cl() ? "ember_params[ember_params_off + " + std::to_string(k) + "u]"
                : "ember_params[" + std::to_string(k / 4) + "][" + std::to_string(k % 4) + "]";
  }
  virtual std::string param(const Node& n) {
    if (n.id < 0) return param_word(expr(n.args[0]));
    const uint32_t k = uint32_t(n.id);
    switch (n.type) {
      case Type::i32:
        return cast_to(Type::i32, param_word(k));
      case Type::f32:
        return std::string(t_.bits_u32_to_f32) + "(" + param_word(k) + ")";
      case Type::f64:
        n_.f64 = true;
        return cl() ? "as_double((uint2)(" + param_word(k) + ", " + param_word(k + 1) + "))"
                    : "packDouble2x32(uvec2(" + param_word(k) + ", " + param_word(k + 1) + "))";
      case Type::u64:
        return "(" + cast_to(Type::u64, param_word(k)) + " | (" +
               cast_to(Type::u64, param_word(k + 1)) + " << 32))";
      default:
        return param_word(k);
    }
  }

  virtual std::string op(const Node& n) {
    static const char* k[] = {"+",  "-", "*",  "/",  "%",  "&",  "|",  "^", "<<", ">>", "<",
                              "<=", ">", ">=", "==", "!=", "&&", "||", "-", "!",  "~"};
    if (n.args.size() == 1) return std::string("(") + k[int(n.op)] + expr(n.args[0]) + ")";
    std::string a = expr(n.args[0]), b = expr(n.args[1]);
    // GLSL shifts need one of the two operands' base types; cast the count to the value's
    if ((n.op == Op::shl || n.op == Op::shr) && !cl() && n.args[0].type() != n.args[1].type())
      b = cast_to(n.args[0].type(), b);
    return "(" + a + " " + k[int(n.op)] + " " + b + ")";
  }

  virtual std::string builtin(const Node& n) {
    const Type t = n.args[0].type();
    std::vector<std::string> a;
    for (const Expr& e : n.args) a.push_back(expr(e));
    auto args = [&] {
      std::string s;
      for (size_t i = 0; i < a.size(); ++i) s += (i ? ", " : "") + a[i];
      return s;
    };
    if (!cl() && t == Type::f64) {
      static const Fn kGlslF64[] = {
          Fn::sqrt,  Fn::rsqrt, Fn::floor,      Fn::ceil,      Fn::trunc,  Fn::round_even,
          Fn::abs,   Fn::min,   Fn::max,        Fn::clamp,     Fn::fma,    Fn::isnan,
          Fn::isinf, Fn::ldexp, Fn::frexp_mant, Fn::frexp_exp, Fn::f64_lo, Fn::f64_hi};
      bool ok = false;
      for (Fn f : kGlslF64) ok = ok || f == n.fn;
      if (!ok)
        EMBER_FAIL(k_.name().c_str(), "kir: GLSL has no double-precision built-in #", int(n.fn),
                   "; use the f64 library (kir_lib.h)");
    }
    switch (n.fn) {
      case Fn::abs:
        if (cl()) return std::string(is_float(t) ? "fabs" : "abs") + "(" + a[0] + ")";
        break;
      case Fn::isnan:
      case Fn::isinf:
        if (cl())
          return std::string("(") + (n.fn == Fn::isnan ? "isnan" : "isinf") + "(" + a[0] +
                 ") != 0)";
        break;
      case Fn::frexp_mant:
      case Fn::frexp_exp:
        (t == Type::f64 ? n_.frexp64 : n_.frexp32) = true;
        return std::string(t_.fns[int(n.fn)]) + (t == Type::f64 ? "_f64(" : "_f32(") + a[0] + ")";
      case Fn::mul_hi:
        n_.mul_hi = true;
        break;
      case Fn::f32_from_half:
        if (!cl()) return "unpackHalf2x16(" + a[0] + ").x";
        n_.half = true;
        break;
      case Fn::f64_lo:
      case Fn::f64_hi:
        return (cl() ? "as_uint2(" : "unpackDouble2x32(") + a[0] +
               (n.fn == Fn::f64_lo ? ").x" : ").y");
      case Fn::f64_from_words:
        n_.f64 = true;
        return cl() ? "as_double((uint2)(" + args() + "))"
                    : "packDouble2x32(uvec2(" + args() + "))";
      default:
        break;
    }
    return std::string(t_.fns[int(n.fn)]) + "(" + args() + ")";
  }

  virtual std::string bitcast(const Node& n) {
    const Type from = n.args[0].type(), to = n.type;
    const std::string x = expr(n.args[0]);
    n_.type(to);
    n_.type(from);
    const char* f = nullptr;
    if (from == Type::f32) f = to == Type::u32 ? t_.bits_f32_to_u32 : t_.bits_f32_to_i32;
    if (to == Type::f32) f = t_.bits_u32_to_f32;
    if (from == Type::f64) f = to == Type::u64 ? t_.bits_f64_to_u64 : t_.bits_f64_to_i64;
    if (to == Type::f64) f = t_.bits_u64_to_f64;
    if (from == Type::f16) f = t_.bits_f16_to_u16;
    if (to == Type::f16) f = t_.bits_u16_to_f16;
    std::string arg = x;
    // GLSL's intBitsToFloat / int64BitsToDouble take signed ints: go through unsigned
    if (!cl() && (to == Type::f32 || to == Type::f64 || to == Type::f16) && is_signed(from))
      arg = cast_to(to == Type::f32 ? Type::u32 : to == Type::f64 ? Type::u64 : Type::u16, x);
    if (cl() && (to == Type::f32 || to == Type::f64 || to == Type::f16) && is_signed(from))
      arg = cast_to(to == Type::f32 ? Type::u32 : to == Type::f64 ? Type::u64 : Type::u16, x);
    return std::string(f) + "(" + arg + ")";
  }

  // A buffer element in its compute type (the storage rule).
  virtual std::string load(const Node& n) {
    const std::string index = expr(n.args[0]);
    if (n.id < 0) return k_.shared_arrays()[size_t(~n.id)].name + "[" + index + "]";
    const DType dt = k_.buffers()[size_t(n.id)].dtype;
    const std::string e = buffer(n.id) + "[" + index + "]";
    switch (dt) {
      case DType::f16:
      case DType::i8:
      case DType::i16:
      case DType::u8:
      case DType::u16:
        return cast_to(compute_of(dt), e);
      case DType::bf16:
        return "ember_bf16_to_float(" + e + ")";
      case DType::b8:
        return "(" + e + " != " + cast_to(Type::u8, "0") + ")";
      default:
        return e;
    }
  }

  std::string store_value(DType dt, const std::string& v) {
    switch (dt) {
      case DType::bf16:
        return "ember_bf16_from_float(" + v + ")";
      case DType::b8:
        return "(" + v + " ? " + cast_to(Type::u8, "1") + " : " + cast_to(Type::u8, "0") + ")";
      case DType::f16:
      case DType::i8:
      case DType::i16:
      case DType::u8:
      case DType::u16:
        return cast_to(storage_of(dt), v);
      default:
        return v;
    }
  }

  // A condition without the parentheses its outermost operator wraps itself in (clang warns on
  // `if ((a == b))`, and PoCL prints the warning at every build).
  std::string cond(const Expr& e) {
    const std::string s = expr(e);
    if (s.size() < 2 || s.front() != '(' || s.back() != ')') return s;
    int depth = 0;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      depth += s[i] == '(' ? 1 : s[i] == ')' ? -1 : 0;
      if (depth == 0) return s;  // the first '(' closes before the end: (a) + (b)
    }
    return s.substr(1, s.size() - 2);
  }

  virtual std::string select(const Node& n) {
    return "(" + expr(n.args[0]) + " ? " + expr(n.args[1]) + " : " + expr(n.args[2]) + ")";
  }
  virtual std::string cast(const Node& n) { return cast_to(n.type, expr(n.args[0])); }

  std::string expr(const Expr& e) {
    const Node& n = e.node();
    n_.type(n.type);
    switch (n.kind) {
      case Node::literal:
        return literal(n);
      case Node::var:
        return var(n.id);
      case Node::param:
        return param(n);
      case Node::thread:
        return t_.thread[n.id];
      case Node::operation:
        return op(n);
      case Node::select:
        return select(n);
      case Node::cast:
        n_.type(n.args[0].type());
        return cast(n);
      case Node::bitcast:
        return bitcast(n);
      case Node::builtin:
        return builtin(n);
      case Node::user_call: {
        std::string s = k_.functions()[size_t(n.id)].name + "(";
        for (size_t i = 0; i < n.args.size(); ++i) s += (i ? ", " : "") + expr(n.args[i]);
        return s + ")";
      }
      case Node::load:
        return load(n);
      case Node::vector: {
        std::string s;
        for (size_t i = 0; i < 4; ++i) s += (i ? ", " : "") + expr(n.args[i]);
        return cl() ? "((float4)(" + s + "))" : t_.types[int(Type::f32x4)] + ("(" + s + ")");
      }
      case Node::component:
        return expr(n.args[0]) + "." + "xyzw"[n.id];
    }
    return "";
  }

  // ---- statements ----

  std::string block(const std::vector<Stmt>& body, int depth) {
    std::string s;
    for (const Stmt& st : body) s += stmt(st, depth);
    return s;
  }

  // A local's declaration (init may be empty) and a buffer store, without indent or newline.
  virtual std::string declare(int id, const std::string& init, bool loop = false) {
    const Type t = k_.vars()[size_t(id)].type;
    const char* q = !cl() && !loop && k_.precise_locals() && is_float(t) ? "precise " : "";
    return q + ty(t) + " " + var(id) + (init.empty() ? "" : " = " + init);
  }
  virtual std::string store(int buf, const std::string& i, const std::string& v) {
    return buffer(buf) + "[" + i + "] = " + store_value(k_.buffers()[size_t(buf)].dtype, v) + ";";
  }

  std::string stmt(const Stmt& st, int depth) {
    const std::string ind(size_t(depth) * 2, ' ');
    switch (st.kind) {
      case St::let:
        return ind + declare(st.target, st.a.valid() ? expr(st.a) : "") + ";\n";
      case St::assign:
        return ind + var(st.target) + " = " + expr(st.a) + ";\n";
      case St::store: {
        const std::string i = expr(st.a), v = expr(st.b);
        if (st.target < 0)
          return ind + k_.shared_arrays()[size_t(~st.target)].name + "[" + i + "] = " + v + ";\n";
        return ind + store(st.target, i, v) + "\n";
      }
      case St::if_: {
        std::string s = ind + "if (" + cond(st.a) + ") {\n" + block(st.body, depth + 1) + ind + "}";
        if (!st.orelse.empty()) s += " else {\n" + block(st.orelse, depth + 1) + ind + "}";
        return s + "\n";
      }
      case St::for_: {
        return ind + "for (" + declare(st.target, expr(st.a), true) + "; " + cond(st.b) + "; " +
               var(st.target) + " = " + expr(st.c) + ") {\n" + block(st.body, depth + 1) + ind +
               "}\n";
      }
      case St::while_:
        return ind + "while (" + cond(st.a) + ") {\n" + block(st.body, depth + 1) + ind + "}\n";
      case St::break_:
        return ind + "break;\n";
      case St::continue_:
        return ind + "continue;\n";
      case St::ret:
        return ind + "return " + expr(st.a) + ";\n";
      case St::barrier:
        return ind + t_.barrier + "\n";
    }
    return "";
  }

  virtual std::string function(const Kernel::FunctionDef& f) {
    std::string s = ty(f.ret) + " " + f.name + "(";
    for (size_t i = 0; i < f.params.size(); ++i)
      s += (i ? ", " : "") + ty(k_.vars()[size_t(f.params[i])].type) + " " + var(f.params[i]);
    return s + ") {\n" + block(f.body, 1) + "}\n";
  }

  // ---- the rules of each dialect ----

  // Helpers the built-ins and the storage rule need (bf16 conversions as BFloat16: RNE, NaN
  // kept quiet).
  std::string prelude() {
    std::string s;
    if (n_.bf16) {
      const std::string u16 = ty(Type::u16);
      s += u16 + " ember_bf16_from_float(float f) {\n  uint x = " + t_.bits_f32_to_u32 +
           "(f);\n  if ((x & 0x7fffffffu) > 0x7f800000u) return " +
           cast_to(Type::u16, "(x >> 16) | 0x40u") +
           ";\n  x += 0x7fffu + ((x >> 16) & 1u);\n  return " + cast_to(Type::u16, "x >> 16") +
           ";\n}\n";
      s += "float ember_bf16_to_float(" + u16 + " b) { return " + t_.bits_u32_to_f32 + "(" +
           cast_to(Type::u32, "b") + " << 16); }\n";
    }
    auto frexp = [&](const char* tn, const char* suf) {
      if (cl())
        return std::string(tn) + " ember_frexp_mant" + suf + "(" + tn +
               " x) { int e; return frexp(x, &e); }\n" + "int ember_frexp_exp" + suf + "(" + tn +
               " x) { int e; frexp(x, &e); return e; }\n";
      return std::string(tn) + " ember_frexp_mant" + suf + "(" + tn +
             " x) { int e; return frexp(x, e); }\n" + "int ember_frexp_exp" + suf + "(" + tn +
             " x) { int e; frexp(x, e); return e; }\n";
    };
    if (n_.frexp32) s += frexp("float", "_f32");
    if (n_.frexp64) s += frexp("double", "_f64");
    if (n_.mul_hi && !cl())
      s += "uint ember_mul_hi(uint a, uint b) { uint h, l; umulExtended(a, b, h, l); return h; }\n";
    if (n_.half && cl())
      s += "float ember_half_to_float(uint v) { return vload_half(0, (const half*)&v); }\n";
    return s;
  }

  std::string glsl(const std::string& fns, const std::string& body) {
    std::string decl;
    for (size_t i = 0; i < k_.buffers().size(); ++i) {
      const BufferDecl& b = k_.buffers()[i];
      decl += "layout(std430, set = 0, binding = " + std::to_string(i) + ") " +
              (b.writable ? "" : "readonly ") + "buffer EmberBuf" + std::to_string(i) + " { " +
              ty(storage_of(b.dtype)) + " " + b.name + "[]; };\n";
    }
    // Params in a uniform block (kParamsBytes, the minimum maxUniformBufferRange): drivers read
    // uniform loads once per workgroup (lavapipe reads storage buffers lane by lane).
    decl += "layout(std140, set = 0, binding = " + std::to_string(k_.buffers().size()) +
            ") uniform EmberParams { uvec4 ember_params[" + std::to_string(kParamsBytes / 16) +
            "]; };\n";
    for (const auto& sh : k_.shared_arrays())
      decl += "shared " + ty(sh.type) + " " + sh.name + "[" + std::to_string(sh.count) + "];\n";
    const std::string pre = prelude();
    std::string s = "#version 450\n";
    if (n_.f16) s += "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n";
    if (n_.i64) s += "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n";
    if (n_.i16) s += "#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require\n";
    if (n_.i8) s += "#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require\n";
    if (n_.f16 || n_.i16) s += "#extension GL_EXT_shader_16bit_storage : require\n";
    if (n_.i8) s += "#extension GL_EXT_shader_8bit_storage : require\n";
    s += "layout(local_size_x = " + std::to_string(k_.local_size_x()) + ") in;\n";
    return s + decl + pre + fns + "\nvoid main() {\n" + body + "}\n";
  }

  virtual std::string assemble(const std::string& fns, const std::string& body) {
    return cl() ? opencl(fns, body) : glsl(fns, body);
  }

  std::string opencl(const std::string& fns, const std::string& body) {
    std::string sig = "\n__kernel __attribute__((reqd_work_group_size(" +
                      std::to_string(k_.local_size_x()) + ", 1, 1)))\nvoid ember_main(";
    for (const BufferDecl& b : k_.buffers())
      sig += std::string("__global ") + (b.writable ? "" : "const ") + ty(storage_of(b.dtype)) +
             "* restrict " + b.name + ", ";
    sig += "__global const uint* ember_params, uint ember_params_off) {\n";
    for (const auto& sh : k_.shared_arrays())
      sig += "  __local " + ty(sh.type) + " " + sh.name + "[" + std::to_string(sh.count) + "];\n";
    const std::string pre = prelude();
    std::string s;
    if (n_.f64) s += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
    if (n_.f16) s += "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n";
    return s + pre + fns + sig + body + "}\n";
  }
};

/// The WGSL renderer (kir_render_wgsl.cpp).
std::unique_ptr<Renderer> make_wgsl_renderer(const Kernel& k);

}  // namespace ember::codegen::kir::detail
