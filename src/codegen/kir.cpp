// kir's builder: expression nodes with type checks, and the kernel's statement lists.
#include "codegen/kir.h"

#include <cmath>
#include <cstring>

#include "ember/error.h"

namespace ember::codegen::kir {

const char* type_name(Type t) {
  static const char* kNames[kTypeCount] = {"void", "bool", "i8",  "i16",  "i32",  "i64",
                                           "u8",   "u16",  "u32", "u64",  "f16",  "bf16",
                                           "f32",  "f64",  "idx", "uidx", "f32x4"};
  return kNames[int(t)];
}

bool is_float(Type t) {
  return t == Type::f16 || t == Type::f32 || t == Type::f64 || t == Type::f32x4;
}
bool is_int(Type t) {
  return (t >= Type::i8 && t <= Type::u64) || t == Type::idx || t == Type::uidx;
}
bool is_signed(Type t) { return (t >= Type::i8 && t <= Type::i64) || t == Type::idx; }

Type storage_of(DType t) {
  switch (t) {
    case DType::f32:
      return Type::f32;
    case DType::f64:
      return Type::f64;
    case DType::f16:
      return Type::f16;
    case DType::bf16:
      return Type::bf16;
    case DType::i8:
      return Type::i8;
    case DType::i16:
      return Type::i16;
    case DType::i32:
      return Type::i32;
    case DType::i64:
      return Type::i64;
    case DType::u8:
    case DType::b8:
      return Type::u8;
    case DType::u16:
      return Type::u16;
    case DType::u32:
      return Type::u32;
    case DType::u64:
      return Type::u64;
  }
  return Type::f32;
}

Type compute_of(DType t) {
  switch (t) {
    case DType::f32:
    case DType::f16:
    case DType::bf16:
      return Type::f32;
    case DType::f64:
      return Type::f64;
    case DType::i8:
    case DType::i16:
    case DType::i32:
      return Type::i32;
    case DType::u8:
    case DType::u16:
    case DType::u32:
      return Type::u32;
    case DType::i64:
      return Type::i64;
    case DType::u64:
      return Type::u64;
    case DType::b8:
      return Type::boolean;
  }
  return Type::f32;
}

namespace {

Expr make(Node n) { return Expr(std::make_shared<const Node>(std::move(n))); }

[[noreturn]] void type_error(const std::string& what) { EMBER_FAIL("kir", what); }

void need(const Expr& e, const char* what) {
  if (!e.valid()) type_error(std::string("missing operand of ") + what);
}

Node make_node(Node::Kind k, Type t) {
  Node n;
  n.kind = k;
  n.type = t;
  return n;
}

}  // namespace

Type Expr::type() const {
  if (!n_) type_error("use of an empty expression");
  return n_->type;
}

Expr Expr::operator[](int i) const {
  if (type() != Type::f32x4 || i < 0 || i > 3) type_error("component of a non-f32x4 value");
  Node n = make_node(Node::component, Type::f32);
  n.id = i;
  n.args = {*this};
  return make(std::move(n));
}

Expr lit(Type t, double v) {
  Node n = make_node(Node::literal, t);
  switch (t) {
    case Type::f32:
    case Type::f16: {
      const float f = float(v);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      n.bits = b;
      break;
    }
    case Type::f64:
      std::memcpy(&n.bits, &v, 8);
      break;
    case Type::boolean:
      n.bits = v != 0;
      break;
    default:
      if (!is_int(t)) type_error(std::string("no literal of type ") + type_name(t));
      if (is_signed(t))
        n.bits = uint64_t(int64_t(v));
      else
        n.bits = v <= 0 ? 0 : v >= 18446744073709551615.0 ? ~uint64_t(0) : uint64_t(v);
  }
  return make(std::move(n));
}

Expr lit_int(Type t, int64_t v) {
  if (!is_int(t)) return lit(t, double(v));
  Node n = make_node(Node::literal, t);
  n.bits = uint64_t(v);
  return make(std::move(n));
}

Expr lit_uint(Type t, uint64_t v) {
  if (!is_int(t)) return lit(t, double(v));
  Node n = make_node(Node::literal, t);
  n.bits = v;
  return make(std::move(n));
}

Expr cast(Type t, Expr e) {
  need(e, "cast");
  if (e.type() == t) return e;
  if (t == Type::void_ || t == Type::bf16 || t == Type::f32x4 || e.type() == Type::f32x4 ||
      e.type() == Type::bf16)
    type_error(std::string("cast from ") + type_name(e.type()) + " to " + type_name(t));
  Node n = make_node(Node::cast, t);
  n.args = {std::move(e)};
  return make(std::move(n));
}

Expr bitcast(Type t, Expr e) {
  need(e, "bitcast");
  const Type f = e.type();
  auto bits = [](Type x) {
    switch (x) {
      case Type::f16:
      case Type::u16:
      case Type::i16:
        return 16;
      case Type::f32:
      case Type::u32:
      case Type::i32:
        return 32;
      case Type::f64:
      case Type::u64:
      case Type::i64:
        return 64;
      default:
        return 0;
    }
  };
  if (bits(t) == 0 || bits(t) != bits(f) || is_float(t) == is_float(f))
    type_error(std::string("bitcast from ") + type_name(f) + " to " + type_name(t));
  Node n = make_node(Node::bitcast, t);
  n.args = {std::move(e)};
  return make(std::move(n));
}

Expr select(Expr c, Expr a, Expr b) {
  need(c, "select");
  need(a, "select");
  need(b, "select");
  if (c.type() != Type::boolean) type_error("select condition is not bool");
  if (a.type() != b.type())
    type_error(std::string("select of ") + type_name(a.type()) + " and " + type_name(b.type()));
  Node n = make_node(Node::select, a.type());
  n.args = {std::move(c), std::move(a), std::move(b)};
  return make(std::move(n));
}

Expr call(Fn f, std::vector<Expr> args) {
  static const int kArity[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 2,
                               1, 1, 1, 1, 1, 2, 2, 3, 3, 1, 1, 2, 1, 1, 2, 1, 1, 1, 2};
  static_assert(sizeof(kArity) / sizeof(int) == int(Fn::f64_from_words) + 1, "arity table");
  if (int(args.size()) != kArity[int(f)]) type_error("built-in called with a wrong argument count");
  for (const Expr& a : args) need(a, "call");
  const Type t = args[0].type();
  Type ret = t;
  auto same = [&](size_t from) {
    for (size_t i = from; i < args.size(); ++i)
      if (args[i].type() != t)
        type_error(std::string("built-in called with ") + type_name(t) + " and " +
                   type_name(args[i].type()));
  };
  switch (f) {
    case Fn::abs:
    case Fn::min:
    case Fn::max:
    case Fn::clamp:
      if (t == Type::boolean) type_error("min/max/abs/clamp of bool");
      same(1);
      break;
    case Fn::isnan:
    case Fn::isinf:
      if (t != Type::f32 && t != Type::f64) type_error("isnan/isinf of a non-float");
      ret = Type::boolean;
      break;
    case Fn::ldexp:
      if (!is_float(t) || args[1].type() != Type::i32) type_error("ldexp(float, i32)");
      break;
    case Fn::frexp_exp:
      if (!is_float(t)) type_error("frexp of a non-float");
      ret = Type::i32;
      break;
    case Fn::mul_hi:
      if (t != Type::u32) type_error("mul_hi of a non-u32");
      same(1);
      break;
    case Fn::f32_from_half:
      if (t != Type::u32) type_error("f32_from_half of a non-u32");
      ret = Type::f32;
      break;
    case Fn::f64_lo:
    case Fn::f64_hi:
      if (t != Type::f64) type_error("f64_lo/hi of a non-f64");
      ret = Type::u32;
      break;
    case Fn::f64_from_words:
      if (t != Type::u32) type_error("f64_from_words of non-u32 words");
      same(1);
      ret = Type::f64;
      break;
    default:
      if (!is_float(t) || t == Type::f16) type_error("float built-in of a non-float");
      same(1);
  }
  Node n = make_node(Node::builtin, ret);
  n.fn = f;
  n.args = std::move(args);
  return make(std::move(n));
}

Expr vec4(Expr x, Expr y, Expr z, Expr w) {
  for (const Expr* e : {&x, &y, &z, &w})
    if (e->type() != Type::f32) type_error("vec4 of a non-f32 component");
  Node n = make_node(Node::vector, Type::f32x4);
  n.args = {std::move(x), std::move(y), std::move(z), std::move(w)};
  return make(std::move(n));
}

namespace {
Expr param(Type t, uint32_t k) {
  Node n = make_node(Node::param, t);
  n.id = int(k);
  return make(std::move(n));
}
Expr thread(int id, Type t = Type::u32) {
  Node n = make_node(Node::thread, t);
  n.id = id;
  return make(std::move(n));
}
}  // namespace

Expr param_u32(uint32_t k) { return param(Type::u32, k); }
Expr param_i32(uint32_t k) { return param(Type::i32, k); }
Expr param_f32(uint32_t k) { return param(Type::f32, k); }
Expr param_f64(uint32_t k) { return param(Type::f64, k); }
Expr param_u64(uint32_t k) { return param(Type::u64, k); }
Expr param_u32(Expr k) {
  if (k.type() != Type::u32) type_error("params index is not u32");
  Node n = make_node(Node::param, Type::u32);
  n.id = -1;
  n.args = {std::move(k)};
  return make(std::move(n));
}

Expr global_id() { return thread(0); }
Expr local_id() { return thread(1); }
Expr group_id() { return thread(2); }
Expr local_size() { return thread(3); }
Expr num_groups() { return thread(4); }
Expr global_size() { return thread(5); }
Expr global_id_idx() { return thread(6, Type::uidx); }
Expr global_size_idx() { return thread(7, Type::uidx); }

namespace {

const char* op_name(Op o) {
  static const char* k[] = {"+",  "-", "*",  "/",  "%",  "&",  "|",  "^", "<<", ">>", "<",
                            "<=", ">", ">=", "==", "!=", "&&", "||", "-", "!",  "~"};
  return k[int(o)];
}

Expr binary(Op o, Expr a, Expr b) {
  need(a, op_name(o));
  need(b, op_name(o));
  const Type ta = a.type(), tb = b.type();
  Type ret = ta;
  auto mismatch = [&] {
    type_error(std::string("operator ") + op_name(o) + " on " + type_name(ta) + " and " +
               type_name(tb));
  };
  switch (o) {
    case Op::shl:
    case Op::shr:
      if (!is_int(ta) || !is_int(tb)) mismatch();
      break;
    case Op::bit_and:
    case Op::bit_or:
    case Op::bit_xor:
      if (ta != tb || !(is_int(ta) || ta == Type::boolean)) mismatch();
      break;
    case Op::mod:
      if (ta != tb || !is_int(ta)) mismatch();
      break;
    case Op::logical_and:
    case Op::logical_or:
      if (ta != Type::boolean || tb != Type::boolean) mismatch();
      break;
    case Op::lt:
    case Op::le:
    case Op::gt:
    case Op::ge:
    case Op::eq:
    case Op::ne:
      if (ta != tb || ta == Type::f32x4) mismatch();
      ret = Type::boolean;
      break;
    default:  // arithmetic
      if (ta != tb || ta == Type::boolean) mismatch();
  }
  Node n = make_node(Node::operation, ret);
  n.op = o;
  n.args = {std::move(a), std::move(b)};
  return make(std::move(n));
}

Expr unary(Op o, Expr a) {
  need(a, op_name(o));
  const Type t = a.type();
  const bool ok = o == Op::logical_not ? t == Type::boolean
                  : o == Op::bit_not   ? is_int(t)
                                       : t != Type::boolean;
  if (!ok) type_error(std::string("operator ") + op_name(o) + " on " + type_name(t));
  Node n = make_node(Node::operation, t);
  n.op = o;
  n.args = {std::move(a)};
  return make(std::move(n));
}

}  // namespace

Expr operator+(Expr a, Expr b) { return binary(Op::add, std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return binary(Op::sub, std::move(a), std::move(b)); }
Expr operator*(Expr a, Expr b) { return binary(Op::mul, std::move(a), std::move(b)); }
Expr operator/(Expr a, Expr b) { return binary(Op::div, std::move(a), std::move(b)); }
Expr operator%(Expr a, Expr b) { return binary(Op::mod, std::move(a), std::move(b)); }
Expr operator&(Expr a, Expr b) { return binary(Op::bit_and, std::move(a), std::move(b)); }
Expr operator|(Expr a, Expr b) { return binary(Op::bit_or, std::move(a), std::move(b)); }
Expr operator^(Expr a, Expr b) { return binary(Op::bit_xor, std::move(a), std::move(b)); }
Expr operator<<(Expr a, Expr b) { return binary(Op::shl, std::move(a), std::move(b)); }
Expr operator>>(Expr a, Expr b) { return binary(Op::shr, std::move(a), std::move(b)); }
Expr operator<(Expr a, Expr b) { return binary(Op::lt, std::move(a), std::move(b)); }
Expr operator<=(Expr a, Expr b) { return binary(Op::le, std::move(a), std::move(b)); }
Expr operator>(Expr a, Expr b) { return binary(Op::gt, std::move(a), std::move(b)); }
Expr operator>=(Expr a, Expr b) { return binary(Op::ge, std::move(a), std::move(b)); }
Expr operator==(Expr a, Expr b) { return binary(Op::eq, std::move(a), std::move(b)); }
Expr operator!=(Expr a, Expr b) { return binary(Op::ne, std::move(a), std::move(b)); }
Expr operator&&(Expr a, Expr b) { return binary(Op::logical_and, std::move(a), std::move(b)); }
Expr operator||(Expr a, Expr b) { return binary(Op::logical_or, std::move(a), std::move(b)); }
Expr operator-(Expr a) { return unary(Op::neg, std::move(a)); }
Expr operator!(Expr a) { return unary(Op::logical_not, std::move(a)); }
Expr operator~(Expr a) { return unary(Op::bit_not, std::move(a)); }

// ---- the kernel ----

Kernel::Kernel(std::string name, uint32_t local_size)
    : name_(std::move(name)), local_size_(local_size) {
  open_.push_back(&body_);
}

void Kernel::fail(const std::string& what) const { EMBER_FAIL(name_.c_str(), "kir: ", what); }

Buf Kernel::buffer(const std::string& name, DType t, bool writable) {
  buffers_.push_back(BufferDecl{claim_name(name), t, writable});
  return Buf{int(buffers_.size()) - 1};
}

Shared Kernel::shared(const std::string& name, Type t, uint32_t count) {
  if (t == Type::bf16 || t == Type::void_ || t == Type::boolean)
    fail(std::string("shared array of ") + type_name(t));
  shared_.push_back(SharedDecl{claim_name(name), t, count});
  return Shared{int(shared_.size()) - 1};
}

Expr Kernel::load(Buf b, Expr index) {
  if (b.id < 0 || b.id >= int(buffers_.size())) fail("load from an unknown buffer");
  if (in_function_) fail("a helper function loads buffer " + buffers_[size_t(b.id)].name);
  if (!is_int(index.type())) fail("buffer index is not an integer");
  Node n = make_node(Node::load, compute_of(buffers_[size_t(b.id)].dtype));
  n.id = b.id;
  n.args = {std::move(index)};
  return make(std::move(n));
}

Expr Kernel::load(Shared s, Expr index) {
  if (s.id < 0 || s.id >= int(shared_.size())) fail("load from an unknown shared array");
  if (in_function_) fail("a helper function loads shared " + shared_[size_t(s.id)].name);
  if (!is_int(index.type())) fail("shared index is not an integer");
  Node n = make_node(Node::load, shared_[size_t(s.id)].type);
  n.id = ~s.id;
  n.args = {std::move(index)};
  return make(std::move(n));
}

void Kernel::store(Buf b, Expr index, Expr v) {
  if (b.id < 0 || b.id >= int(buffers_.size())) fail("store to an unknown buffer");
  const BufferDecl& d = buffers_[size_t(b.id)];
  if (in_function_) fail("a helper function stores to buffer " + d.name);
  if (!d.writable) fail("store to read-only buffer " + d.name);
  if (!is_int(index.type())) fail("buffer index is not an integer");
  if (v.type() != compute_of(d.dtype))
    fail(std::string("store of ") + type_name(v.type()) + " to " + dtype_name(d.dtype) +
         " buffer " + d.name);
  Stmt s(St::store);
  s.target = b.id;
  s.a = std::move(index);
  s.b = std::move(v);
  push(std::move(s));
}

void Kernel::store(Shared sh, Expr index, Expr v) {
  if (sh.id < 0 || sh.id >= int(shared_.size())) fail("store to an unknown shared array");
  if (in_function_) fail("a helper function stores to shared " + shared_[size_t(sh.id)].name);
  if (!is_int(index.type())) fail("shared index is not an integer");
  if (v.type() != shared_[size_t(sh.id)].type)
    fail(std::string("store of ") + type_name(v.type()) + " to shared " +
         shared_[size_t(sh.id)].name);
  Stmt s(St::store);
  s.target = ~sh.id;
  s.a = std::move(index);
  s.b = std::move(v);
  push(std::move(s));
}

int Kernel::new_var(const std::string& name, Type t) {
  if (t == Type::void_ || t == Type::bf16) fail(std::string("variable of type ") + type_name(t));
  vars_.push_back(Var{claim_name(name), t});
  return int(vars_.size()) - 1;
}

std::string Kernel::claim_name(const std::string& name) {
  if (!valid_identifier(name)) fail("'" + name + "' is not an identifier");
  auto taken = [&](const std::string& x) {
    if (reserved_name(x)) return true;
    for (const std::string& u : used_names_)
      if (u == x) return true;
    return false;
  };
  // One namespace for buffers, shared arrays, locals and helpers (C's scopes would let a local
  // hide a buffer or a function), and never a dialect's word: "half" is a type in OpenCL C.
  std::string n = name;
  for (int k = 2; taken(n); ++k) n = name + "_" + std::to_string(k);
  used_names_.push_back(n);
  return n;
}

namespace {
Expr var_ref(int id, Type t) {
  Node n = make_node(Node::var, t);
  n.id = id;
  return make(std::move(n));
}
}  // namespace

void Kernel::push(Stmt s) { open_.back()->push_back(std::move(s)); }

std::vector<Stmt> Kernel::nested(const std::function<void()>& f) {
  std::vector<Stmt> body;
  if (f) {
    open_.push_back(&body);
    try {
      f();
    } catch (...) {
      open_.pop_back();
      throw;
    }
    open_.pop_back();
  }
  return body;
}

Expr Kernel::let(const std::string& name, Expr init) {
  need(init, "let");
  const int id = new_var(name, init.type());
  Stmt s(St::let);
  s.target = id;
  s.a = init;
  push(std::move(s));
  return var_ref(id, init.type());
}

Expr Kernel::var(const std::string& name, Type t) {
  const int id = new_var(name, t);
  Stmt s(St::let);
  s.target = id;
  push(std::move(s));
  return var_ref(id, t);
}

void Kernel::assign(Expr v, Expr value) {
  if (!v.valid() || v.node().kind != Node::var) fail("assignment to a non-variable");
  if (value.type() != v.type())
    fail(std::string("assignment of ") + type_name(value.type()) + " to " + type_name(v.type()) +
         " variable " + vars_[size_t(v.node().id)].name);
  Stmt s(St::assign);
  s.target = v.node().id;
  s.a = std::move(value);
  push(std::move(s));
}

void Kernel::for_(const std::string& name, Expr init, const std::function<Expr(Expr)>& cond,
                  const std::function<Expr(Expr)>& update, const std::function<void(Expr)>& body) {
  need(init, "for");
  const int id = new_var(name, init.type());
  const Expr i = var_ref(id, init.type());
  Stmt s(St::for_);
  s.target = id;
  s.a = init;
  s.b = cond(i);
  s.c = update(i);
  if (s.b.type() != Type::boolean) fail("loop condition is not bool");
  if (s.c.type() != init.type()) fail("loop update changes the variable's type");
  s.body = nested([&] { body(i); });
  push(std::move(s));
}

void Kernel::for_range(const std::string& name, Expr begin, Expr end, Expr step,
                       const std::function<void(Expr)>& body) {
  for_(
      name, begin, [&](Expr i) { return i < end; }, [&](Expr i) { return i + step; }, body);
}

void Kernel::grid_loop(const std::string& name, Expr n, const std::function<void(Expr)>& body) {
  const bool wide = n.type() == Type::uidx;
  if (!wide && n.type() != Type::u32) fail("grid loop bound is not u32 or uidx");
  for_range(name, wide ? global_id_idx() : global_id(), n, wide ? global_size_idx() : global_size(),
            body);
}

void Kernel::if_(Expr cond, const std::function<void()>& then,
                 const std::function<void()>& orelse) {
  if (cond.type() != Type::boolean) fail("if condition is not bool");
  Stmt s(St::if_);
  s.a = std::move(cond);
  s.body = nested(then);
  s.orelse = nested(orelse);
  push(std::move(s));
}

void Kernel::while_(Expr cond, const std::function<void()>& body) {
  if (cond.type() != Type::boolean) fail("while condition is not bool");
  Stmt s(St::while_);
  s.a = std::move(cond);
  s.body = nested(body);
  push(std::move(s));
}

void Kernel::break_() { push(Stmt(St::break_)); }
void Kernel::continue_() { push(Stmt(St::continue_)); }
void Kernel::barrier() {
  if (in_function_) fail("barrier in a helper function");
  push(Stmt(St::barrier));
}

void Kernel::ret(Expr v) {
  if (!in_function_) fail("return outside a helper function");
  need(v, "return");
  Stmt s(St::ret);
  s.a = std::move(v);
  push(std::move(s));
}

bool Kernel::has_function(const std::string& name) const {
  for (const FunctionDef& f : functions_)
    if (f.key == name) return true;
  return false;
}

Function Kernel::find_function(const std::string& name) const {
  for (size_t i = 0; i < functions_.size(); ++i)
    if (functions_[i].key == name) return Function{int(i)};
  fail("unknown helper function " + name);
}

Function Kernel::function(const std::string& name, Type ret, const std::vector<Type>& params,
                          const std::function<void(const std::vector<Expr>&)>& body) {
  if (has_function(name)) return find_function(name);
  FunctionDef f;
  f.key = name;
  f.name = claim_name(name);
  f.ret = ret;
  std::vector<Expr> args;
  for (size_t i = 0; i < params.size(); ++i) {
    const int id = new_var("a" + std::to_string(i), params[i]);
    f.params.push_back(id);
    args.push_back(var_ref(id, params[i]));
  }
  ++in_function_;
  try {
    f.body = nested([&] { body(args); });
  } catch (...) {
    --in_function_;
    throw;
  }
  --in_function_;
  // a helper's own helpers were appended while its body was built: it goes after them
  functions_.push_back(std::move(f));
  return Function{int(functions_.size()) - 1};
}

Expr Kernel::call(Function f, std::vector<Expr> args) const {
  if (f.id < 0 || f.id >= int(functions_.size())) fail("call of an unknown helper function");
  const FunctionDef& d = functions_[size_t(f.id)];
  if (args.size() != d.params.size()) fail("helper " + d.name + " called with a wrong arity");
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].type() != vars_[size_t(d.params[i])].type)
      fail("helper " + d.name + " argument " + std::to_string(i) + " is " +
           type_name(args[i].type()) + ", not " + type_name(vars_[size_t(d.params[i])].type));
  Node n = make_node(Node::user_call, d.ret);
  n.id = f.id;
  n.args = std::move(args);
  return make(std::move(n));
}

}  // namespace ember::codegen::kir
