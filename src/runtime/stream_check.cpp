// Check mode (EMBER_CHECK=1): every fused graph (and every anchored group: a matmul and its
// epilogue) also runs as its ops one by one, on copies of the storages it writes, and the first
// element where the two differ (anchored groups and reductions: beyond the tolerance) is an
// ember::Error naming the device, the graph, its dtypes and shapes.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/dispatch.h"
#include "core/env.h"
#include "runtime/backend.h"
#include "runtime/stream_io.h"

namespace ember {

using detail::io_of;

namespace {

Tensor on_storage(const Tensor& t, const std::shared_ptr<Storage>& s) {
  auto impl = std::make_shared<TensorImpl>(*t.impl());
  impl->storage = s;
  return Tensor(std::move(impl));
}

double element(const std::vector<unsigned char>& bytes, DType t, int64_t i) {
  double v = 0;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    T x;
    std::memcpy(&x, bytes.data() + i * int64_t(sizeof(T)), sizeof(T));
    v = scalar_cast<double>(x);
  });
  return v;
}

}  // namespace

bool stream_check_mode() {
  static const bool on = env_flag("EMBER_CHECK", false);
  return on;
}

bool Backend::execute_graph_checked(const ir::FusedGraph& g, const std::vector<StreamOp>& ops,
                                    const std::vector<size_t>& index) {
  return run_checked([&] { return execute_graph(g); }, g, ops, index, 0.0);
}

// An anchored group changes the order of arithmetic (a GEMM library's and the epilogue's
// approximations of gelu, tanh, ...): f32 results agree within 1e-4 * (1 + |eager|).
bool Backend::execute_anchored_checked(const ir::FusedGraph& g, int32_t anchor_input,
                                       const std::vector<StreamOp>& ops, size_t anchor,
                                       const std::vector<size_t>& index) {
  std::vector<size_t> all{anchor};
  all.insert(all.end(), index.begin(), index.end());
  return run_checked([&] { return run_anchor_group(ops[anchor], g, anchor_input); }, g, ops, all,
                     1e-4);
}

bool Backend::run_checked(const std::function<bool()>& fused_run, const ir::FusedGraph& g,
                          const std::vector<StreamOp>& ops, const std::vector<size_t>& index,
                          double rtol) {
  // The check's reads sync the device, and a GPU's sync runs the deferred data checks (index
  // ranges, class targets...): one that fails would throw from here, before or halfway through
  // the graph, and its ops would never run (a caught error left their outputs unwritten). The
  // checks wait for the next sync or read after the graph, as without EMBER_CHECK.
  struct HoldChecks {
    Backend& b;
    std::vector<std::function<void()>> held;
    explicit HoldChecks(Backend& backend) : b(backend) {
      std::lock_guard<std::mutex> lock(b.checks_mutex_);
      held.swap(b.checks_);
    }
    ~HoldChecks() {
      std::lock_guard<std::mutex> lock(b.checks_mutex_);
      held.insert(held.end(), b.checks_.begin(), b.checks_.end());
      b.checks_.swap(held);
    }
  } hold(*this);
  // Copies of every storage the graph's ops write, made before the graph runs (an op may read
  // what it writes).
  std::unordered_map<const Storage*, std::shared_ptr<Storage>> copy;
  auto bytes_of = [&](const Storage& s) {
    std::vector<unsigned char> b(size_t(s.nbytes));
    if (s.nbytes > 0) read_bytes(s.data(), 0, b.data(), s.nbytes);
    return b;
  };
  auto remap = [&](Tensor& t) {
    auto it = copy.find(t.impl()->storage.get());
    if (it != copy.end()) t = on_storage(t, it->second);
  };
  for (size_t k : index) {
    const std::shared_ptr<Storage>& s = io_of(ops[k]).dst->impl()->storage;
    if (copy.count(s.get())) continue;
    auto c = std::make_shared<Storage>(this, device(), s->nbytes);
    const std::vector<unsigned char> b = bytes_of(*s);
    if (s->nbytes > 0) write_bytes(c->data(), 0, b.data(), s->nbytes);
    copy[s.get()] = c;
  }
  if (!fused_run()) return false;
  for (size_t k : index) {
    StreamOp op = ops[k];
    const auto io = io_of(op);
    for (int i = 0; i < io.nreads; ++i) remap(*io.reads[i]);
    remap(*io.dst);
    run_recorded(op);
  }
  // A reduction sums in another order than the eager kernel (both accumulate in double):
  // its dst agrees within a rounding or two of its dtype.
  auto reduce_rtol = [](DType t) { return t == DType::f64 ? 1e-9 : t == DType::f32 ? 1e-4 : 1e-2; };
  // The epilogue (`after`) computes on the reductions' results: the same tolerance.
  const size_t nout = g.outputs.size(), nred = g.reductions.size();
  const size_t nafter = g.after.empty() ? 0 : g.after[0].outputs.size();
  for (size_t i = 0; i < nout + nred + nafter; ++i) {
    const Tensor& dst = i < nout          ? g.outputs[i].dst
                        : i < nout + nred ? g.reductions[i - nout].dst
                                          : g.after[0].outputs[i - nout - nred].dst;
    const double tol = i < nout ? rtol : std::max(rtol, reduce_rtol(dst.dtype()));
    const Storage& s = *dst.impl()->storage;
    const std::vector<unsigned char> fused = bytes_of(s);
    const std::vector<unsigned char> eager = bytes_of(*copy.at(&s));
    if (fused == eager) continue;
    const int64_t es = int64_t(dtype_size(dst.dtype()));
    for (int64_t e = 0; e * es < s.nbytes; ++e) {
      if (std::memcmp(fused.data() + e * es, eager.data() + e * es, size_t(es)) == 0) continue;
      const double f = element(fused, dst.dtype(), e), w = element(eager, dst.dtype(), e);
      if (std::isnan(f) && std::isnan(w)) continue;
      if (tol > 0 && std::fabs(f - w) <= tol * (1 + std::fabs(w))) continue;
      EMBER_FAIL("EMBER_CHECK", "a fused graph on ", device().str(),
                 " differs from its ops run one by one: ",
                 i < nout          ? "output "
                 : i < nout + nred ? "reduction "
                                   : "epilogue output ",
                 i < nout          ? i
                 : i < nout + nred ? i - nout
                                   : i - nout - nred,
                 " (", dtype_name(dst.dtype()), "), storage element ", e, ": fused ", f,
                 ", one by one ", w, "\n", g.describe());
    }
  }
  return true;
}

}  // namespace ember
