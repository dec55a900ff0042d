// PLACEHOLDER: being written now; every op here still throws.
#include "codegen/lower.h"
#include "ember/error.h"

namespace ember::codegen {

Lowering lower_gather(const ir::Gather&, Dialect, const Caps&) {
  EMBER_FAIL("gather", "not available on GPU backends yet");
}
Lowering lower_scatter(const ir::Scatter&, Dialect, const Caps&) {
  EMBER_FAIL("scatter", "not available on GPU backends yet");
}
Lowering lower_index_select(const ir::IndexSelect&, Dialect, const Caps&) {
  EMBER_FAIL("index_select", "not available on GPU backends yet");
}
Lowering lower_index_add(const ir::IndexAdd&, Dialect, const Caps&) {
  EMBER_FAIL("index_add", "not available on GPU backends yet");
}

}  // namespace ember::codegen
