// Helpers shared by the reduction family's lowerings (reduce.cpp, reduce_scan_sort.cpp):
// value types with bool as u32 (so it orders), NaN-aware comparisons as kir helper functions.
// Internal to src/codegen.
#pragma once
#include <string>
#include <vector>

#include "codegen/common.h"
#include "codegen/kir.h"

namespace ember::codegen::red {

inline bool is_float_dtype(DType t) {
  return t == DType::f32 || t == DType::f64 || t == DType::f16 || t == DType::bf16;
}

/// The type elements are compared in: the compute type, but bool as u32 (no bool <).
inline kir::Type vtype(DType t) { return t == DType::b8 ? kir::Type::u32 : kir::compute_of(t); }
/// Element `index` of buffer b (of dtype t) as vtype(t).
inline kir::Expr vload(kir::Kernel& k, kir::Buf b, DType t, kir::Expr index) {
  const kir::Expr v = k.load(b, std::move(index));
  if (t != DType::b8) return v;
  return kir::select(v, kir::lit(kir::Type::u32, 1), kir::lit(kir::Type::u32, 0));
}
/// The vtype(from) value v as the compute type of `to`, ready for k.store: bool from v != 0;
/// other dtypes as convert() (the identity when from == to).
inline kir::Expr vstore(kir::Kernel& k, DType from, DType to, kir::Expr v) {
  if (to == DType::b8) return v != 0;
  if (from == DType::b8) return convert(k, DType::b8, to, v != 0);
  return convert(k, from, to, std::move(v));
}

/// Defines `bool <prefix>_lt(V a, V b)` in k: a < b with NaN the largest value (NaN == NaN).
inline kir::Function lt_function(kir::Kernel& k, const std::string& prefix, DType t) {
  const kir::Type v = vtype(t);
  return k.function(prefix + "_lt", kir::Type::boolean, {v, v},
                    [&](const std::vector<kir::Expr>& p) {
                      const kir::Expr a = p[0], b = p[1];
                      if (is_float_dtype(t)) {
                        const kir::Expr na = kir::call(kir::Fn::isnan, {a});
                        k.if_(kir::call(kir::Fn::isnan, {b}), [&] { k.ret(!na); });
                        k.if_(na, [&] { k.ret(kir::lit_bool(false)); });
                      }
                      k.ret(a < b);
                    });
}

/// Throws ember::Error naming `op` and the dtype when the device lacks it.
inline void check_dtypes(const char* op, const std::vector<DType>& ts, const Caps& caps) {
  for (DType t : ts) check_dtype(op, t, caps);
}

}  // namespace ember::codegen::red
