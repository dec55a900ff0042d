// TEMPORARY scaffold: delete this file when the real kernels land.
#include "backends/ref/kernels.h"
namespace ember::ref {
void im2col(const ir::Im2col&) { EMBER_FAIL("im2col", "pending"); }
void col2im(const ir::Col2im&) { EMBER_FAIL("col2im", "pending"); }
void adaptive_pool(const ir::AdaptivePool&) { EMBER_FAIL("adaptive_pool", "pending"); }
void interpolate(const ir::Interpolate&) { EMBER_FAIL("interpolate", "pending"); }
}  // namespace ember::ref
