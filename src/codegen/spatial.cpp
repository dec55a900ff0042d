// PLACEHOLDER: being written now; every op here still throws.
#include "codegen/lower.h"
#include "ember/error.h"

namespace ember::codegen {

Lowering lower_matmul(const ir::Matmul&, Dialect, const Caps&) {
  EMBER_FAIL("matmul", "not available on GPU backends yet");
}
Lowering lower_im2col(const ir::Im2col&, Dialect, const Caps&) {
  EMBER_FAIL("im2col", "not available on GPU backends yet");
}
Lowering lower_col2im(const ir::Col2im&, Dialect, const Caps&) {
  EMBER_FAIL("col2im", "not available on GPU backends yet");
}
Lowering lower_adaptive_pool(const ir::AdaptivePool&, Dialect, const Caps&) {
  EMBER_FAIL("adaptive_pool", "not available on GPU backends yet");
}
Lowering lower_interpolate(const ir::Interpolate&, Dialect, const Caps&) {
  EMBER_FAIL("interpolate", "not available on GPU backends yet");
}

}  // namespace ember::codegen
