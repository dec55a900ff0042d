#include "codegen/math_f64.h"

namespace ember::codegen {

bool math_f64_fn(const std::string&, std::vector<std::string>&, std::string&) { return false; }

}  // namespace ember::codegen
