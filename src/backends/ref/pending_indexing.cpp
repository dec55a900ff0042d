// TEMPORARY scaffold: delete this file when the real kernels land.
#include "backends/ref/kernels.h"
namespace ember::ref {
void gather(const ir::Gather&) { EMBER_FAIL("gather", "pending"); }
void scatter(const ir::Scatter&) { EMBER_FAIL("scatter", "pending"); }
void index_select(const ir::IndexSelect&) { EMBER_FAIL("index_select", "pending"); }
void index_add(const ir::IndexAdd&) { EMBER_FAIL("index_add", "pending"); }
void nonzero(const ir::Nonzero&) { EMBER_FAIL("nonzero", "pending"); }
}  // namespace ember::ref
