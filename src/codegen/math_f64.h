// Double-precision math that GLSL's double type lacks (exp, log, trig, erf, ...), as kernel
// library functions named ember_<fn>_f64. Internal to src/codegen.
#pragma once
#include <string>
#include <vector>

namespace ember::codegen {

/// If `name` is a double-precision library function, sets its dependencies and GLSL code.
bool math_f64_fn(const std::string& name, std::vector<std::string>& deps, std::string& code);

}  // namespace ember::codegen
