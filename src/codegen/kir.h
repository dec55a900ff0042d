// kir: Ember's typed kernel language. A lowering builds a kernel as typed expressions and
// statements (variables, buffer and shared-memory loads and stores, params, thread ids, calls of
// built-ins and helper functions, casts, loops, barriers); kir_render.cpp renders it through one
// table per dialect (GLSL 450 compute, OpenCL C 1.2; CUDA C and WGSL are a table each).
//
// Types are checked while the kernel is built: an operator on two different types, a load from
// a helper function, or a bool in arithmetic throws ember::Error naming the kernel, so a
// malformed kernel never reaches a driver's compiler.
//
// Storage is rewritten once, in the renderer: `load` returns a buffer element in its compute
// type (f16 and bf16 -> f32, i8/i16 -> i32, u8/u16 -> u32, b8 -> bool) and `store` takes the
// compute type (f16 rounds to nearest even, bf16 rounds as BFloat16::from_float, narrow
// integers wrap, bool stores 1/0). A dialect without 8/16-bit or 64-bit storage changes only
// this rule.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "ember/dtype.h"

namespace ember::codegen::kir {

/// Value types. idx / uidx are the index types: 32-bit in GLSL, the address width in OpenCL C
/// (64-bit offsets there let CPU drivers vectorise). f32x4 is a vector of four floats (matmul's
/// staged operands). bf16 occurs only in storage (loads give f32).
enum class Type : uint8_t {
  void_,
  boolean,
  i8,
  i16,
  i32,
  i64,
  u8,
  u16,
  u32,
  u64,
  f16,
  bf16,
  f32,
  f64,
  idx,
  uidx,
  f32x4
};
constexpr int kTypeCount = 17;

const char* type_name(Type t);  // "f32", "idx", ... (for errors)
/// Whether `name` is a keyword, type or built-in of a dialect (GLSL, OpenCL C, CUDA C, WGSL) or
/// a name the renderers declare (ember_params, ...): kir renames such locals, buffers, shared
/// arrays and helpers (half -> half_2), as it renames names already taken in the kernel.
bool reserved_name(const std::string& name);
/// [A-Za-z_][A-Za-z0-9_]*.
bool valid_identifier(const std::string& name);
bool is_float(Type t);   // f16, f32, f64 (and f32x4)
bool is_int(Type t);     // i8..u64, idx, uidx
bool is_signed(Type t);  // i8..i64, idx
/// The storage type of a buffer of dtype t (bf16 -> bf16, b8 -> u8).
Type storage_of(DType t);
/// The type values of dtype t are computed in (as the ref backend's compute_t): f32 for
/// f32/f16/bf16, i32 for i8/i16/i32, u32 for u8/u16/u32, bool for b8; i64, u64, f64 as is.
Type compute_of(DType t);

struct Node;
class Kernel;

/// An expression: an immutable typed tree node. Operators build new nodes and check types;
/// a number on one side takes the type of the other.
class Expr {
 public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const Node> n) : n_(std::move(n)) {}
  Type type() const;
  const Node& node() const { return *n_; }
  bool valid() const { return bool(n_); }
  /// Component i (0..3) of an f32x4.
  Expr operator[](int i) const;

 private:
  std::shared_ptr<const Node> n_;
};

/// Operators of expressions (C semantics; integer / and % truncate toward zero).
enum class Op : uint8_t {
  add,
  sub,
  mul,
  div,
  mod,
  bit_and,
  bit_or,
  bit_xor,
  shl,
  shr,
  lt,
  le,
  gt,
  ge,
  eq,
  ne,
  logical_and,
  logical_or,
  neg,
  logical_not,
  bit_not
};

/// Built-in functions. Float ones take and return one float type (f32, f64 where the dialect
/// has it, f32x4 element-wise for fma/min/max); min/max/abs/clamp also take integers.
/// isnan/isinf give bool. frexp_mant/frexp_exp split x = m * 2^e with |m| in [0.5, 1)
/// (frexp_exp gives i32); ldexp(x, i32 e). mul_hi(u32, u32): the high word of the product.
/// f32_from_half(u32 w): the f16 in w's low 16 bits as f32.
/// f64_lo / f64_hi: the low / high 32 bits of an f64; f64_from_words(lo, hi) the inverse.
enum class Fn : uint8_t {
  exp,
  exp2,
  log,
  log2,
  sin,
  cos,
  tan,
  asin,
  acos,
  atan,
  atan2,
  sinh,
  cosh,
  tanh,
  asinh,
  acosh,
  atanh,
  sqrt,
  rsqrt,
  pow,
  floor,
  ceil,
  trunc,
  round_even,
  abs,
  min,
  max,
  clamp,
  fma,
  isnan,
  isinf,
  ldexp,
  frexp_mant,
  frexp_exp,
  mul_hi,
  f32_from_half,
  f64_lo,
  f64_hi,
  f64_from_words
};

// ---- building expressions ----

/// A literal of type t with value v (t numeric or bool). Integer types take v truncated.
Expr lit(Type t, double v);
/// An integer literal of type t (exact for 64-bit values).
Expr lit_int(Type t, int64_t v);
Expr lit_uint(Type t, uint64_t v);
inline Expr lit_bool(bool v) { return lit(Type::boolean, v ? 1 : 0); }
/// Numeric conversion of e to t (C / GLSL constructor semantics: float -> int truncates, out of
/// range is undefined; anything -> bool is != 0). See codegen convert() for the ref semantics.
Expr cast(Type t, Expr e);
/// Reinterprets the bits of e as t (f32 <-> i32/u32, f64 <-> i64/u64, f16 <-> u16).
Expr bitcast(Type t, Expr e);
/// c ? a : b (a and b of one type; c bool).
Expr select(Expr c, Expr a, Expr b);
/// A built-in call.
Expr call(Fn f, std::vector<Expr> args);
/// An f32x4 from four f32.
Expr vec4(Expr x, Expr y, Expr z, Expr w);
/// Params word k as u32 / i32 / f32 bits, and words k, k+1 (low, high) as f64 or u64.
Expr param_u32(uint32_t k);
Expr param_i32(uint32_t k);
Expr param_f32(uint32_t k);
Expr param_f64(uint32_t k);
Expr param_u64(uint32_t k);
/// Params word at a computed u32 index.
Expr param_u32(Expr k);

/// Thread ids of a 1-d launch (u32): global, local, group, workgroup size, group count,
/// global size (= local size * groups); the same in idx / uidx.
Expr global_id();
Expr local_id();
Expr group_id();
Expr local_size();
Expr num_groups();
Expr global_size();
Expr global_id_idx();    // uidx
Expr global_size_idx();  // uidx

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);
Expr operator%(Expr a, Expr b);
Expr operator&(Expr a, Expr b);
Expr operator|(Expr a, Expr b);
Expr operator^(Expr a, Expr b);
Expr operator<<(Expr a, Expr b);  // b: any integer type
Expr operator>>(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator==(Expr a, Expr b);
Expr operator!=(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr operator-(Expr a);
Expr operator!(Expr a);
Expr operator~(Expr a);

// A number beside an expression is a literal of the expression's type.
#define EMBER_KIR_MIXED(op)                                                   \
  inline Expr operator op(Expr a, double b) { return a op lit(a.type(), b); } \
  inline Expr operator op(double a, Expr b) { return lit(b.type(), a) op b; }
EMBER_KIR_MIXED(+)
EMBER_KIR_MIXED(-)
EMBER_KIR_MIXED(*)
EMBER_KIR_MIXED(/)
EMBER_KIR_MIXED(%)
EMBER_KIR_MIXED(&)
EMBER_KIR_MIXED(|)
EMBER_KIR_MIXED(^)
EMBER_KIR_MIXED(<)
EMBER_KIR_MIXED(<=)
EMBER_KIR_MIXED(>)
EMBER_KIR_MIXED(>=)
EMBER_KIR_MIXED(==)
EMBER_KIR_MIXED(!=)
#undef EMBER_KIR_MIXED
inline Expr operator<<(Expr a, int b) { return a << lit(Type::u32, b); }
inline Expr operator>>(Expr a, int b) { return a >> lit(Type::u32, b); }

// ---- statements ----

enum class St : uint8_t { let, assign, store, if_, for_, while_, break_, continue_, ret, barrier };

/// A statement; bodies are lists of statements.
struct Stmt {
  explicit Stmt(St k) : kind(k) {}
  St kind;
  int target = -1;  // let/assign/for: variable id; store: buffer (>= 0) or ~shared (< 0)
  Expr a, b, c;     // let: init; assign: value; store: index, value; if/while: cond;
                    // for: init, cond, update (update: the variable's next value); ret: value
  std::vector<Stmt> body, orelse;
};

/// A buffer or shared array handle (an index into the kernel's declarations).
struct Buf {
  int id = -1;
};
struct Shared {
  int id = -1;
};
/// A helper function handle.
struct Function {
  int id = -1;
};

/// A kernel under construction: declarations and the entry point's statements. Statements
/// go to the innermost open body (a loop's, a branch's or a helper function's).
class Kernel {
 public:
  Kernel(std::string name, uint32_t local_size);

  /// Storage buffer binding i = the i-th call; elements of dtype t.
  Buf buffer(const std::string& name, DType t, bool writable);
  /// A workgroup-shared array of `count` elements of t (a compute type or f32x4).
  Shared shared(const std::string& name, Type t, uint32_t count);

  /// Element `index` (an integer expression) of buffer b in its compute type; of a shared array.
  Expr load(Buf b, Expr index);
  Expr load(Shared s, Expr index);
  /// Stores v (b's compute type; for shared, its type) at `index`.
  void store(Buf b, Expr index, Expr v);
  void store(Shared s, Expr index, Expr v);

  /// Declares a mutable local initialised to `init` and returns it; names are made unique.
  Expr let(const std::string& name, Expr init);
  /// Declares an uninitialised local of type t.
  Expr var(const std::string& name, Type t);
  /// var = v (var made by let/var, v of its type).
  void assign(Expr var, Expr v);
  /// for (T i = init; cond(i); i = update(i)) body(i).
  void for_(const std::string& name, Expr init, const std::function<Expr(Expr)>& cond,
            const std::function<Expr(Expr)>& update, const std::function<void(Expr)>& body);
  /// for (T i = begin; i < end; i += step) body(i) (step of begin's type).
  void for_range(const std::string& name, Expr begin, Expr end, Expr step,
                 const std::function<void(Expr)>& body);
  /// The grid-stride loop over [0, n): for (i = global_id; i < n; i += global_size), in n's
  /// type (u32 or uidx).
  void grid_loop(const std::string& name, Expr n, const std::function<void(Expr)>& body);
  void if_(Expr cond, const std::function<void()>& then,
           const std::function<void()>& orelse = nullptr);
  void while_(Expr cond, const std::function<void()>& body);
  void break_();
  void continue_();
  /// Workgroup barrier with shared-memory (and buffer) visibility.
  void barrier();

  /// Float locals are rendered `precise` in GLSL: no contraction (a * b + c into an fma) or
  /// reassociation into or out of them, which GLSL otherwise allows even across statements. The
  /// element-wise kernels set it so a fused graph's nodes round as the eager ops' results do
  /// (OpenCL C never contracts across statements).
  void set_precise_locals(bool on) { precise_locals_ = on; }
  bool precise_locals() const { return precise_locals_; }

  /// Defines helper function `name` returning `ret` with the given parameters; `body` receives
  /// the parameters as expressions and must `ret`. Defined once: a second call with the same
  /// name returns the first definition (library functions call this on every use).
  /// A helper may not touch buffers, shared arrays or params.
  Function function(const std::string& name, Type ret, const std::vector<Type>& params,
                    const std::function<void(const std::vector<Expr>&)>& body);
  /// Whether helper `name` is defined.
  bool has_function(const std::string& name) const;
  Function find_function(const std::string& name) const;
  /// A call of helper f.
  Expr call(Function f, std::vector<Expr> args) const;
  /// return v (in a helper function).
  void ret(Expr v);

  // ---- read by the renderer ----
  struct Var {
    std::string name;
    Type type;
  };
  struct SharedDecl {
    std::string name;
    Type type;
    uint32_t count;
  };
  struct FunctionDef {
    std::string key;   // the name it was defined and is looked up by
    std::string name;  // the identifier it renders as (key, unless that is taken or reserved)
    Type ret;
    std::vector<int> params;  // variable ids
    std::vector<Stmt> body;
  };
  const std::string& name() const { return name_; }
  uint32_t local_size_x() const { return local_size_; }
  const std::vector<BufferDecl>& buffers() const { return buffers_; }
  const std::vector<SharedDecl>& shared_arrays() const { return shared_; }
  const std::vector<Var>& vars() const { return vars_; }
  const std::vector<FunctionDef>& functions() const { return functions_; }
  const std::vector<Stmt>& body() const { return body_; }

 private:
  int new_var(const std::string& name, Type t);
  /// `name`, or name_2, name_3... when it is taken or reserved_name(); throws when `name` is not
  /// an identifier.
  std::string claim_name(const std::string& name);
  void push(Stmt s);
  std::vector<Stmt> nested(const std::function<void()>& f);
  [[noreturn]] void fail(const std::string& what) const;

  std::string name_;
  uint32_t local_size_;
  bool precise_locals_ = false;
  std::vector<BufferDecl> buffers_;
  std::vector<SharedDecl> shared_;
  std::vector<Var> vars_;
  std::vector<FunctionDef> functions_;
  std::vector<Stmt> body_;
  std::vector<std::vector<Stmt>*> open_;  // innermost last
  int in_function_ = 0;
  std::vector<std::string> used_names_;
};

/// The node behind an Expr (read by the renderer).
struct Node {
  enum Kind : uint8_t {
    literal,
    var,
    param,      // id = word (or a: computed u32 word); type: u32/i32/f32/f64/u64
    thread,     // id: 0 global, 1 local, 2 group, 3 local size, 4 groups, 5 global size,
                // 6 global id (uidx), 7 global size (uidx)
    operation,  // op over args
    select,     // args: cond, a, b
    cast,       // args[0] to type
    bitcast,    // args[0] to type
    builtin,    // fn over args
    user_call,  // id = function, args
    load,       // id = buffer (>= 0) or ~shared (< 0); args[0] = index
    vector,     // f32x4 of args
    component   // id = component of args[0]
  };
  Kind kind;
  Type type;
  Op op = Op::add;
  Fn fn = Fn::exp;
  int id = 0;
  uint64_t bits = 0;  // literal: the value's bits (as type)
  std::vector<Expr> args;
};

/// Renders `k` into `dialect` for a device with `caps`: the source, its key (a hash of the
/// source) and the ABI the backends bind (kernel.h). Throws ember::Error naming the kernel
/// when it needs a type the device lacks.
std::shared_ptr<const codegen::Kernel> render(const Kernel& k, Dialect dialect, const Caps& caps);

}  // namespace ember::codegen::kir
