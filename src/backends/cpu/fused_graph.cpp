// The cpu backend's fused element-wise graphs (ir/graph.h).
#include "backends/cpu/cpu_backend.h"

namespace ember::cpu {

CpuBackend::CpuBackend() { enable_fusion(); }

bool CpuBackend::fusible(const ir::Op&) const { return true; }

bool CpuBackend::execute_graph(const ir::FusedGraph&) { return false; }

}  // namespace ember::cpu
