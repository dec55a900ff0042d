// The kir library's table and the expression helpers its bodies use (kir_lib.cpp,
// kir_lib_f32.cpp). Internal to src/codegen.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "codegen/kir.h"
#include "codegen/kir_lib.h"

namespace ember::codegen::kir::libdetail {

using Args = std::vector<Expr>;

/// A library function: its signature and a body builder.
struct Def {
  Type ret;
  std::vector<Type> params;
  std::function<void(Kernel&, const Args&)> body;
};
using Lib = std::map<std::string, Def>;
inline void def(Lib& m, const std::string& name, Type ret, std::vector<Type> params,
                std::function<void(Kernel&, const Args&)> body) {
  m[name] = Def{ret, std::move(params), std::move(body)};
}

inline Expr D(double v) { return lit(Type::f64, v); }
inline Expr I(int64_t v) { return lit_int(Type::i32, v); }
inline Expr U(uint64_t v) { return lit_uint(Type::u32, v); }
inline Expr fma_(Expr a, Expr b, Expr c) { return call(Fn::fma, {a, b, c}); }
inline Expr abs_(Expr a) { return call(Fn::abs, {a}); }
inline Expr sqrt_(Expr a) { return call(Fn::sqrt, {a}); }
inline Expr floor_(Expr a) { return call(Fn::floor, {a}); }
inline Expr trunc_(Expr a) { return call(Fn::trunc, {a}); }
inline Expr round_even(Expr a) { return call(Fn::round_even, {a}); }
inline Expr isnan_(Expr a) { return call(Fn::isnan, {a}); }
inline Expr isinf_(Expr a) { return call(Fn::isinf, {a}); }
inline Expr lib(Kernel& k, const char* name, Args a) { return library_call(k, name, std::move(a)); }
inline Expr neg_if(Expr c, Expr r) { return select(c, -r, r); }
inline void ret_if(Kernel& k, Expr c, Expr v) {
  k.if_(c, [&] { k.ret(v); });
}

/// Horner evaluation of sum c[i] z^i.
inline Expr horner(Expr z, const std::vector<double>& c) {
  Expr s = lit(z.type(), c.back());
  for (size_t i = c.size() - 1; i-- > 0;) s = fma_(s, z, lit(z.type(), c[i]));
  return s;
}

/// Single-precision erf, erfinv, pow, atan2 and hypot for devices without f64
/// (kir_lib_f32.cpp).
void add_f32_math(Lib& m);

}  // namespace ember::codegen::kir::libdetail
