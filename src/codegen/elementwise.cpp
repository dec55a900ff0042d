// PLACEHOLDER: being written now; every op here still throws.
#include "codegen/lower.h"
#include "ember/error.h"

namespace ember::codegen {

Lowering lower_copy(const ir::Copy&, Dialect, const Caps&) {
  EMBER_FAIL("copy", "not available on GPU backends yet");
}
Lowering lower_fill(const ir::Fill&, Dialect, const Caps&) {
  EMBER_FAIL("fill", "not available on GPU backends yet");
}
Lowering lower_unary(const ir::Unary&, Dialect, const Caps&) {
  EMBER_FAIL("unary", "not available on GPU backends yet");
}
Lowering lower_binary(const ir::Binary&, Dialect, const Caps&) {
  EMBER_FAIL("binary", "not available on GPU backends yet");
}
Lowering lower_where(const ir::Where&, Dialect, const Caps&) {
  EMBER_FAIL("where", "not available on GPU backends yet");
}
Lowering lower_random(const ir::Random&, Dialect, const Caps&) {
  EMBER_FAIL("random", "not available on GPU backends yet");
}

}  // namespace ember::codegen
