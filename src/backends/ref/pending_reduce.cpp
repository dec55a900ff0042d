// TEMPORARY scaffold: delete this file when the real kernels land.
#include "backends/ref/kernels.h"
namespace ember::ref {
void reduce(const ir::Reduce&) { EMBER_FAIL("reduce", "pending"); }
void scan(const ir::Scan&) { EMBER_FAIL("scan", "pending"); }
void sort(const ir::Sort&) { EMBER_FAIL("sort", "pending"); }
}  // namespace ember::ref
