#include "ir/ops.h"

namespace ember::ir {

namespace {
struct Namer {
  const char* operator()(const Copy&) const { return "copy"; }
  const char* operator()(const Fill&) const { return "fill"; }
  const char* operator()(const Unary& o) const { return name(o.op); }
  const char* operator()(const Binary& o) const { return name(o.op); }
  const char* operator()(const Where&) const { return "where"; }
  const char* operator()(const Reduce&) const { return "reduce"; }
  const char* operator()(const Scan&) const { return "scan"; }
  const char* operator()(const Sort&) const { return "sort"; }
  const char* operator()(const Gather&) const { return "gather"; }
  const char* operator()(const Scatter&) const { return "scatter"; }
  const char* operator()(const IndexSelect&) const { return "index_select"; }
  const char* operator()(const IndexAdd&) const { return "index_add"; }
  const char* operator()(const Nonzero&) const { return "nonzero"; }
  const char* operator()(const Matmul&) const { return "matmul"; }
  const char* operator()(const Im2col&) const { return "im2col"; }
  const char* operator()(const Col2im&) const { return "col2im"; }
  const char* operator()(const AdaptivePool&) const { return "adaptive_pool"; }
  const char* operator()(const Interpolate&) const { return "interpolate"; }
  const char* operator()(const Random&) const { return "random"; }
};
}  // namespace

const char* name(const Op& op) { return std::visit(Namer{}, op); }

}  // namespace ember::ir
