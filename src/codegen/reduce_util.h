// Helpers shared by the reduction family's lowerings (reduce.cpp, reduce_scan_sort.cpp):
// value types with bool as uint (so it orders), NaN-aware comparisons and dim merging over raw
// sizes/strides. Internal to src/codegen.
#pragma once
#include <string>
#include <vector>

#include "codegen/common.h"

namespace ember::codegen::red {

inline bool is_float_dtype(DType t) {
  return t == DType::f32 || t == DType::f64 || t == DType::f16 || t == DType::bf16;
}

/// The type elements are compared in: compute_type, but bool as uint (GLSL has no bool <).
inline std::string vtype(DType t) { return t == DType::b8 ? "uint" : compute_type(t); }
/// Expression: element `elem` of a buffer of t as vtype(t).
inline std::string vload(DType t, const std::string& elem) {
  return t == DType::b8 ? "uint(" + load(t, elem) + ")" : load(t, elem);
}
/// Expression: the vtype(t) value `v` as storage of t.
inline std::string vstore(DType t, const std::string& v) {
  return t == DType::b8 ? store(t, "(" + v + " != 0u)") : store(t, v);
}

/// Definitions of `bool <prefix>_lt(V a, V b)`: a < b with NaN the largest value (NaN == NaN).
inline std::string lt_function(const std::string& prefix, DType t) {
  const std::string v = vtype(t);
  std::string s = "bool " + prefix + "_lt(" + v + " a, " + v + " b) {\n";
  if (is_float_dtype(t)) s += "  if (isnan(b)) return !isnan(a);\n  if (isnan(a)) return false;\n";
  s += "  return a < b;\n}\n";
  return s;
}

/// Throws ember::Error naming `op` and the dtype when the device lacks it.
inline void check_dtypes(const char* op, const std::vector<DType>& ts, const Caps& caps) {
  for (DType t : ts) check_dtype(op, t, caps);
}

}  // namespace ember::codegen::red
