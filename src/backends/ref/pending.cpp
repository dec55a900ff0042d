// TEMPORARY scaffold while the kernel families are written; each helper deletes its lines.
#include "backends/ref/kernels.h"
namespace ember::ref {
void reduce(const ir::Reduce&) { EMBER_FAIL("reduce", "pending"); }
void scan(const ir::Scan&) { EMBER_FAIL("scan", "pending"); }
void sort(const ir::Sort&) { EMBER_FAIL("sort", "pending"); }
void gather(const ir::Gather&) { EMBER_FAIL("gather", "pending"); }
void scatter(const ir::Scatter&) { EMBER_FAIL("scatter", "pending"); }
void index_select(const ir::IndexSelect&) { EMBER_FAIL("index_select", "pending"); }
void index_add(const ir::IndexAdd&) { EMBER_FAIL("index_add", "pending"); }
void nonzero(const ir::Nonzero&) { EMBER_FAIL("nonzero", "pending"); }
void matmul(const ir::Matmul&) { EMBER_FAIL("matmul", "pending"); }
void im2col(const ir::Im2col&) { EMBER_FAIL("im2col", "pending"); }
void col2im(const ir::Col2im&) { EMBER_FAIL("col2im", "pending"); }
void adaptive_pool(const ir::AdaptivePool&) { EMBER_FAIL("adaptive_pool", "pending"); }
void interpolate(const ir::Interpolate&) { EMBER_FAIL("interpolate", "pending"); }
}  // namespace ember::ref
