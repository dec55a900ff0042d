// TEMPORARY scaffold: delete this file when the real kernels land.
#include "backends/ref/kernels.h"
namespace ember::ref {
void matmul(const ir::Matmul&) { EMBER_FAIL("matmul", "pending"); }
}  // namespace ember::ref
