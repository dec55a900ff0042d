// kir rendered as WGSL (WebGPU; as Chromium's Tint accepts). The ABI:
//   @group(0) @binding(i) var<storage, read_write> <buffer>: array<T>;  (every buffer writable:
//       the runtime may bind one GPUBuffer to several bindings of a dispatch)
//   @group(0) @binding(nbuffers) var<uniform> ember_params: array<vec4<u32>, kParamsBytes / 16>;
//   @compute @workgroup_size(local_size) fn main(...)
// WGSL has no 8/16-bit integer or bf16 storage: such buffers are array<atomic<u32>>, an element
// a byte or halfword of a word (little-endian, as the host's bytes; the runtime rounds their
// sizes up to 4 bytes). A store clears and sets its bits with atomicAnd + atomicOr, so threads
// storing neighbouring elements of one word do not race. Register values of 8/16-bit integer
// types live in i32/u32 (casts to them wrap). No 64-bit types: kernels needing them are
// rejected by the caps check.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "codegen/kir_renderer.h"

namespace ember::codegen::kir::detail {

namespace {

// Fn order as kir.h's; "" where a rule below renders it.
const Table kWgsl = {{"void", "bool", "i32", "i32", "i32", "i64", "u32", "u32", "u32", "u64", "f16",
                      "u32", "f32", "f64", "i32", "u32", "vec4<f32>"},
                     true,
                     "f",
                     "",
                     "",
                     "",
                     {"ember_w_gid.x", "ember_w_lid.x", "ember_w_wid.x", "ember_w_local_size",
                      "ember_w_nwg.x", "(ember_w_local_size * ember_w_nwg.x)", "ember_w_gid.x",
                      "(ember_w_local_size * ember_w_nwg.x)"},
                     "workgroupBarrier();",
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
                      "inverseSqrt",
                      "pow",
                      "floor",
                      "ceil",
                      "trunc",
                      "round",
                      "abs",
                      "min",
                      "max",
                      "clamp",
                      "fma",
                      "",
                      "",
                      "ldexp",
                      "",
                      "",
                      "ember_w_mul_hi",
                      "",
                      "",
                      "",
                      ""},
                     "bitcast<u32>",
                     "bitcast<i32>",
                     "bitcast<f32>",
                     "bitcast<u64>",
                     "bitcast<i64>",
                     "bitcast<f64>",
                     "",
                     ""};

bool wide(Type t) { return t == Type::i64 || t == Type::u64 || t == Type::f64; }

// Bits of a packed element (0: the buffer is an array of its own type).
int packed_bits(DType t) {
  switch (t) {
    case DType::b8:
    case DType::i8:
    case DType::u8:
      return 8;
    case DType::i16:
    case DType::u16:
    case DType::bf16:
      return 16;
    default:
      return 0;
  }
}

class WgslRenderer : public Renderer {
 public:
  explicit WgslRenderer(const Kernel& k) : Renderer(k, Dialect::wgsl, kWgsl) {}

 private:
  bool f32_bits_ = false, bf16_ = false;

  // The storage rule and the type table see 64-bit types; the caps check rejects the kernel
  // after rendering, so a 64-bit construct renders as a placeholder.
  std::string wide_placeholder(Type t) {
    n_.type(t);
    return "0";
  }

  std::string cast_to(Type t, const std::string& x) override {
    switch (t) {
      case Type::i8:
      case Type::i16:  // wrap: sign-extend the low bits
        return "((i32(" + x + ") << " + (t == Type::i8 ? "24u) >> 24u)" : "16u) >> 16u)");
      case Type::u8:
      case Type::u16:
        return "(u32(" + x + ") & " + (t == Type::u8 ? "0xffu)" : "0xffffu)");
      default:
        return ty(t) + "(" + x + ")";
    }
  }

  std::string f32_bits(uint32_t b) {
    f32_bits_ = true;  // a call, not a const-expression: a non-finite constant is an error
    char buf[32];
    std::snprintf(buf, sizeof buf, "ember_w_f32(%uu)", b);
    return buf;
  }

  std::string literal(const Node& n) override {
    char buf[64];
    switch (n.type) {
      case Type::f32:
      case Type::f16: {
        float f;
        const uint32_t b = uint32_t(n.bits);
        std::memcpy(&f, &b, 4);
        if (!std::isfinite(f) || (n.type == Type::f16 && std::fabs(f) > 65504.0f))
          return n.type == Type::f16 ? "f16(" + f32_bits(b) + ")" : f32_bits(b);
        std::snprintf(buf, sizeof buf, "%.9ef", double(f));
        const std::string s = f < 0 ? std::string("(") + buf + ")" : buf;
        return n.type == Type::f16 ? "f16(" + s + ")" : s;
      }
      case Type::i8:
      case Type::i16:
      case Type::i32:
      case Type::idx: {
        const int32_t v = int32_t(uint32_t(n.bits));
        if (v == INT32_MIN) return "i32(-2147483648)";
        std::snprintf(buf, sizeof buf, v < 0 ? "(%di)" : "%di", v);
        return buf;
      }
      case Type::u8:
      case Type::u16:
      case Type::u32:
      case Type::uidx:
        std::snprintf(buf, sizeof buf, "%uu", uint32_t(n.bits));
        return buf;
      case Type::i64:
      case Type::u64:
      case Type::f64:
        return wide_placeholder(n.type);
      default:
        return n.bits ? "true" : "false";
    }
  }

  std::string param_word(const std::string& k) override {
    return "ember_params[(" + k + ") >> 2u][(" + k + ") & 3u]";
  }
  std::string param_word(uint32_t k) override {
    return "ember_params[" + std::to_string(k / 4) + "][" + std::to_string(k % 4) + "]";
  }
  std::string param(const Node& n) override {
    if (wide(n.type)) return wide_placeholder(n.type);
    return Renderer::param(n);
  }

  std::string op(const Node& n) override {
    const Type t = n.args[0].type();
    if (wide(t) || wide(n.type)) return wide_placeholder(t);
    if (n.args.size() == 1 && n.op == Op::neg && is_int(t) && !is_signed(t))
      return "(0u - " + expr(n.args[0]) + ")";
    if (n.args.size() == 2) {
      const Type tb = n.args[1].type();
      // shift counts are u32; bool has no ^
      if (n.op == Op::shl || n.op == Op::shr) {
        const std::string c = expr(n.args[1]);
        return "(" + expr(n.args[0]) + (n.op == Op::shl ? " << " : " >> ") +
               (ty(tb) == "u32" ? c : "u32(" + c + ")") + ")";
      }
      if (n.op == Op::bit_xor && t == Type::boolean)
        return "(" + expr(n.args[0]) + " != " + expr(n.args[1]) + ")";
    }
    return Renderer::op(n);
  }

  std::string select(const Node& n) override {
    return "select(" + expr(n.args[2]) + ", " + expr(n.args[1]) + ", " + expr(n.args[0]) + ")";
  }

  std::string cast(const Node& n) override {
    if (wide(n.type) || wide(n.args[0].type())) return wide_placeholder(n.type);
    return cast_to(n.type, expr(n.args[0]));
  }

  std::string builtin(const Node& n) override {
    for (const Expr& e : n.args)
      if (wide(e.type())) return wide_placeholder(e.type());
    if (wide(n.type)) return wide_placeholder(n.type);
    switch (n.fn) {
      case Fn::isnan:
        return "((bitcast<u32>(" + expr(n.args[0]) + ") & 0x7fffffffu) > 0x7f800000u)";
      case Fn::isinf:
        return "((bitcast<u32>(" + expr(n.args[0]) + ") & 0x7fffffffu) == 0x7f800000u)";
      case Fn::frexp_mant:
        return "frexp(" + expr(n.args[0]) + ").fract";
      case Fn::frexp_exp:
        return "frexp(" + expr(n.args[0]) + ").exp";
      case Fn::f32_from_half:
        return "unpack2x16float(" + expr(n.args[0]) + ").x";
      case Fn::mul_hi:
        n_.mul_hi = true;
        break;
      default:
        break;
    }
    std::string s = std::string(t_.fns[int(n.fn)]) + "(";
    for (size_t i = 0; i < n.args.size(); ++i) s += (i ? ", " : "") + expr(n.args[i]);
    return s + ")";
  }

  std::string bitcast(const Node& n) override {
    const Type from = n.args[0].type(), to = n.type;
    if (wide(from) || wide(to)) return wide_placeholder(wide(from) ? from : to);
    const std::string x = expr(n.args[0]);
    n_.type(from);
    n_.type(to);
    // 16-bit: through a vec2<f16> (the low half)
    if (from == Type::f16) {
      const std::string w = "bitcast<u32>(vec2<f16>(" + x + ", 0.0h))";
      return to == Type::i16 ? "((bitcast<i32>(" + w + ") << 16u) >> 16u)" : w;
    }
    if (to == Type::f16) return "bitcast<vec2<f16>>(u32(" + x + ")).x";
    // a constant's bits may be a NaN or an infinity, which no WGSL constant may be
    if (to == Type::f32 && n.args[0].node().kind == Node::literal)
      return f32_bits(uint32_t(n.args[0].node().bits));
    return "bitcast<" + ty(to) + ">(" + x + ")";
  }

  std::string packed_load(int id) { return "ember_w_ld" + std::to_string(id); }

  std::string load(const Node& n) override {
    if (n.id < 0) return Renderer::load(n);
    const DType dt = k_.buffers()[size_t(n.id)].dtype;
    const std::string index = expr(n.args[0]);
    if (wide(storage_of(dt))) return wide_placeholder(storage_of(dt));
    const std::string w = packed_load(n.id) + "(u32(" + index + "))";
    switch (dt) {
      case DType::f16:
        return "f32(" + buffer(n.id) + "[" + index + "])";
      case DType::u8:
      case DType::u16:
        return w;
      case DType::i8:
        return "((bitcast<i32>(" + w + ") << 24u) >> 24u)";
      case DType::i16:
        return "((bitcast<i32>(" + w + ") << 16u) >> 16u)";
      case DType::b8:
        return "(" + w + " != 0u)";
      case DType::bf16:
        return "bitcast<f32>(" + w + " << 16u)";
      default:
        return buffer(n.id) + "[" + index + "]";
    }
  }

  std::string store(int id, const std::string& i, const std::string& v) override {
    const DType dt = k_.buffers()[size_t(id)].dtype;
    const std::string st = "ember_w_st" + std::to_string(id) + "(u32(" + i + "), ";
    switch (dt) {
      case DType::f16:
        return buffer(id) + "[" + i + "] = f16(" + v + ");";
      case DType::u8:
      case DType::u16:
        return st + v + ");";
      case DType::i8:
      case DType::i16:
        return st + "bitcast<u32>(" + v + "));";
      case DType::b8:
        return st + "select(0u, 1u, " + v + "));";
      case DType::bf16:
        bf16_ = true;
        return st + "ember_w_bf16(" + v + "));";
      default:
        return buffer(id) + "[" + i + "] = " + v + ";";
    }
  }

  std::string declare(int id, const std::string& init, bool) override {
    const std::string d = "var " + var(id) + ": " + ty(k_.vars()[size_t(id)].type);
    return init.empty() ? d : d + " = " + init;
  }

  static bool assigns(const std::vector<Stmt>& body, int id) {
    for (const Stmt& s : body)
      if ((s.kind == St::assign && s.target == id) || assigns(s.body, id) || assigns(s.orelse, id))
        return true;
    return false;
  }

  // WGSL parameters are immutable: one the body assigns is copied into a local.
  std::string function(const Kernel::FunctionDef& f) override {
    std::string s = "fn " + f.name + "(", copies;
    for (size_t i = 0; i < f.params.size(); ++i) {
      const int p = f.params[i];
      const std::string t = ty(k_.vars()[size_t(p)].type);
      if (assigns(f.body, p)) {
        const std::string in = "ember_w_p" + std::to_string(p);
        s += (i ? ", " : "") + in + ": " + t;
        copies += "  var " + var(p) + ": " + t + " = " + in + ";\n";
      } else {
        s += (i ? ", " : "") + var(p) + ": " + t;
      }
    }
    s += ")";
    if (f.ret != Type::void_) s += " -> " + ty(f.ret);
    return s + " {\n" + copies + block(f.body, 1) + "}\n";
  }

  std::string prelude() {
    std::string s;
    if (f32_bits_) s += "fn ember_w_f32(b: u32) -> f32 { return bitcast<f32>(b); }\n";
    if (n_.mul_hi)
      s += "fn ember_w_mul_hi(a: u32, b: u32) -> u32 {\n"
           "  let al = a & 0xffffu; let ah = a >> 16u; let bl = b & 0xffffu; let bh = b >> 16u;\n"
           "  let ll = al * bl; let lh = al * bh; let hl = ah * bl;\n"
           "  let mid = (ll >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);\n"
           "  return ah * bh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u);\n}\n";
    if (bf16_)  // as BFloat16::from_float: round to nearest even, NaN kept quiet
      s += "fn ember_w_bf16(f: f32) -> u32 {\n  let x = bitcast<u32>(f);\n"
           "  if ((x & 0x7fffffffu) > 0x7f800000u) { return (x >> 16u) | 0x40u; }\n"
           "  return (x + 0x7fffu + ((x >> 16u) & 1u)) >> 16u;\n}\n";
    for (size_t i = 0; i < k_.buffers().size(); ++i) {
      const BufferDecl& b = k_.buffers()[i];
      const int bits = packed_bits(b.dtype);
      if (!bits) continue;
      const std::string id = std::to_string(i), w = std::to_string(bits),
                        word = bits == 8 ? "ember_w_i >> 2u" : "ember_w_i >> 1u",
                        lane = bits == 8 ? "(ember_w_i & 3u) * 8u" : "(ember_w_i & 1u) * 16u",
                        mask = bits == 8 ? "0xffu" : "0xffffu";
      s += "fn ember_w_ld" + id + "(ember_w_i: u32) -> u32 {\n  return (atomicLoad(&" + b.name +
           "[" + word + "]) >> (" + lane + ")) & " + mask + ";\n}\n";
      s += "fn ember_w_st" + id + "(ember_w_i: u32, ember_w_v: u32) {\n  let s = " + lane +
           ";\n  atomicAnd(&" + b.name + "[" + word + "], ~(" + mask + " << s));\n  atomicOr(&" +
           b.name + "[" + word + "], (ember_w_v & " + mask + ") << s);\n}\n";
    }
    return s;
  }

  std::string assemble(const std::string& fns, const std::string& body) override {
    std::string decl;
    for (size_t i = 0; i < k_.buffers().size(); ++i) {
      const BufferDecl& b = k_.buffers()[i];
      const std::string elem = packed_bits(b.dtype) ? "atomic<u32>" : ty(storage_of(b.dtype));
      decl += "@group(0) @binding(" + std::to_string(i) + ") var<storage, read_write> " + b.name +
              ": array<" + elem + ">;\n";
    }
    decl += "@group(0) @binding(" + std::to_string(k_.buffers().size()) +
            ") var<uniform> ember_params: array<vec4<u32>, " + std::to_string(kParamsBytes / 16) +
            ">;\n";
    for (const auto& sh : k_.shared_arrays())
      decl += "var<workgroup> " + sh.name + ": array<" + ty(sh.type) + ", " +
              std::to_string(sh.count) + ">;\n";
    const std::string ls = std::to_string(k_.local_size_x());
    decl += "const ember_w_local_size: u32 = " + ls + "u;\n";
    const std::string pre = prelude();
    return std::string(n_.f16 ? "enable f16;\n" : "") + decl + pre + fns +
           "\n@compute @workgroup_size(" + ls +
           ")\nfn main(@builtin(global_invocation_id) ember_w_gid: vec3<u32>,\n"
           "        @builtin(local_invocation_id) ember_w_lid: vec3<u32>,\n"
           "        @builtin(workgroup_id) ember_w_wid: vec3<u32>,\n"
           "        @builtin(num_workgroups) ember_w_nwg: vec3<u32>) {\n" +
           body + "}\n";
  }
};

}  // namespace

std::unique_ptr<Renderer> make_wgsl_renderer(const Kernel& k) {
  return std::make_unique<WgslRenderer>(k);
}

}  // namespace ember::codegen::kir::detail
