// PLACEHOLDER: being written now; every op here still throws.
#include "codegen/lower.h"
#include "ember/error.h"

namespace ember::codegen {

Lowering lower_reduce(const ir::Reduce&, Dialect, const Caps&) {
  EMBER_FAIL("reduce", "not available on GPU backends yet");
}
Lowering lower_scan(const ir::Scan&, Dialect, const Caps&) {
  EMBER_FAIL("scan", "not available on GPU backends yet");
}
Lowering lower_sort(const ir::Sort&, Dialect, const Caps&) {
  EMBER_FAIL("sort", "not available on GPU backends yet");
}
Lowering lower_nonzero(const ir::Nonzero&, Dialect, const Caps&) {
  EMBER_FAIL("nonzero", "not available on GPU backends yet");
}

}  // namespace ember::codegen
