// The lazy stream every backend has (Backend::submit / flush_stream) and its fusion planner:
// recorded element-wise ops are grouped into ir::FusedGraphs (a reduction the backend folds may
// end one, the element-wise ops on its result then joining it as its `after`), outputs no tensor
// holds any more are left unwritten, and each graph goes to the backend's execute_graph (else op by
// op).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include "core/env.h"
#include "runtime/backend.h"
#include "runtime/stream_io.h"
#include "runtime/stream_planner.h"

namespace ember {

bool stream_check_mode();  // stream_check.cpp

// Marks a backend as running ops for a scope (Backend::run_deferred_checks waits for the end).
struct RunningOps {
  explicit RunningOps(Backend& b) : b(b) { ++b.running_ops_; }
  ~RunningOps() { --b.running_ops_; }
  RunningOps(const RunningOps&) = delete;
  RunningOps& operator=(const RunningOps&) = delete;
  Backend& b;
};

namespace {

bool fusion_log() {
  static const bool on = env_flag("EMBER_FUSION_LOG", false);
  return on;
}

// Ops a stream holds before it flushes (EMBER_STREAM_OPS); a bad value warns (core/env.h).
int64_t env_capacity() { return env_int("EMBER_STREAM_OPS", 256, 1, 1000000); }

}  // namespace

using namespace stream_planner;  // NOLINT(google-build-using-namespace)

// ---- Backend: the wrappers that run the stream first ----

void Backend::write(void* dst, int64_t dst_offset, const void* src, int64_t nbytes) {
  flush_stream();
  write_bytes(dst, dst_offset, src, nbytes);
}

void Backend::read(const void* src, int64_t src_offset, void* dst, int64_t nbytes) {
  flush_stream();
  read_bytes(src, src_offset, dst, nbytes);
}

bool Backend::execute_fused(const ir::Fused& op) {
  const auto* conv = std::get_if<ir::Conv>(&op);
  if (conv && fusion_.load(std::memory_order_relaxed) && conv_anchorable(*conv)) {
    // Recorded as an anchor: the element-wise ops after it may become its epilogue.
    const StreamOp rec = *conv;
    const auto io = io_of(rec);
    bool here = true;
    auto recordable = [&](const Tensor& t) {
      return t.device() == device() &&
             !t.impl()->storage->host_pointer_kept.load(std::memory_order_acquire);
    };
    for (int i = 0; i < io.nreads; ++i) here = here && recordable(*io.reads[i]);
    if (here && recordable(*io.dst)) {
      record(rec);
      return true;
    }
  }
  flush_stream();
  if (!run_fused(op)) return false;
  ++n_eager_;  // one kernel outside the stream (stream_stats().kernels() counts it)
  return true;
}

void Backend::record(const StreamOp& op) {
  const auto io = io_of(op);
  std::lock_guard<std::recursive_mutex> lock(stream_mutex_);
  for (int i = 0; i < io.nreads; ++i) io.reads[i]->impl()->storage->pending++;
  io.dst->impl()->storage->pending++;
  pending_.push_back(op);
  pending_count_ = int64_t(pending_.size());
  ++n_recorded_;
  if (int64_t(pending_.size()) >= capacity_) flush_stream();
}

void Backend::run_recorded(const StreamOp& op) {
  if (const auto* conv = std::get_if<ir::Conv>(&op)) {
    // conv_anchorable promised run_fused takes it; the frontend's composite is gone by now.
    if (!run_fused(*conv))
      EMBER_FAIL("conv", "the backend ", name(), " declined a convolution it recorded");
    return;
  }
  run_op(std::get<ir::Op>(op));
}

bool Backend::run_anchor_group(const StreamOp& anchor, const ir::FusedGraph& g,
                               int32_t anchor_input) {
  if (const auto* conv = std::get_if<ir::Conv>(&anchor))
    return execute_conv_anchored(*conv, g, anchor_input);
  return execute_anchored(std::get<ir::Op>(anchor), g, anchor_input);
}

void Backend::sync() {
  flush_stream();
  sync_device();
}

void Backend::execute(const ir::Op& op) {
  flush_stream();
  ++n_eager_;
  RunningOps running(*this);
  run_op(op);
}

void Backend::enable_fusion() {
  fusion_capable_ = true;
  fusion_ = env_flag("EMBER_FUSION", true);
  capacity_ = env_capacity();
}

void Backend::set_fusion(bool on) {
  if (!on) flush_stream();
  fusion_ = on;
}

void Backend::set_stream_capacity(int64_t n) {
  if (n < 1) EMBER_FAIL("set_stream_capacity", "capacity must be >= 1, got ", n);
  std::lock_guard<std::recursive_mutex> lock(stream_mutex_);
  capacity_ = n;
  if (int64_t(pending_.size()) >= capacity_) flush_stream();
}

StreamStats Backend::stream_stats() const {
  StreamStats s;
  s.recorded = n_recorded_;
  s.graphs = n_graphs_;
  s.fused_ops = n_fused_ops_;
  s.eager_ops = n_eager_;
  s.dropped = n_dropped_;
  s.flushes = n_flushes_;
  return s;
}

void Backend::reset_stream_stats() {
  n_recorded_ = n_graphs_ = n_fused_ops_ = n_eager_ = n_dropped_ = n_flushes_ = 0;
}

// A non-element-wise op the backend lets the stream record: a matmul anchor or a reduction
// (never one producing indices).
bool Backend::recordable_kind(const ir::Op& op) const {
  if (std::holds_alternative<ir::Matmul>(op)) return anchorable(op);
  if (auto* r = std::get_if<ir::Reduce>(&op)) return !r->indices.defined() && reducible(*r);
  return false;
}

void Backend::submit(const ir::Op& op) {
  const bool elementwise = elementwise_kind(op);
  if (fusion_.load(std::memory_order_relaxed) &&
      (elementwise ? !may_throw(op) : recordable_kind(op))) {
    const auto io = io_of(op);
    // Recorded only when every tensor is on this device and no host pointer into its storage
    // was kept (data_ptr): such a storage is read and written in program order, at once.
    auto recordable = [&](const Tensor& t) {
      return t.device() == device() &&
             !t.impl()->storage->host_pointer_kept.load(std::memory_order_acquire);
    };
    bool here = recordable(*io.dst);
    for (int i = 0; i < io.nreads; ++i) here = here && recordable(*io.reads[i]);
    if (here && (!elementwise || fusible(op))) {
      record(StreamOp(op));
      return;
    }
  }
  execute(op);
}

void Backend::drop_stream() noexcept {
  std::vector<StreamOp> ops;
  {
    std::lock_guard<std::recursive_mutex> lock(stream_mutex_);
    ops.swap(pending_);
    pending_count_ = 0;
  }
  for (const StreamOp& op : ops) {
    const auto io = io_of(op);
    for (int i = 0; i < io.nreads; ++i) io.reads[i]->impl()->storage->pending--;
    io.dst->impl()->storage->pending--;
  }
}

void Backend::flush_stream() {
  if (pending_count_.load(std::memory_order_acquire) == 0) return;
  std::lock_guard<std::recursive_mutex> lock(stream_mutex_);
  if (pending_.empty()) return;  // another thread ran it, or this one is running it
  std::vector<StreamOp> ops;
  ops.swap(pending_);
  ++n_flushes_;
  struct Release {  // the storages' counts drop when the ops are done (also on an error)
    const std::vector<StreamOp>& ops;
    std::atomic<int64_t>& count;
    ~Release() {
      for (const StreamOp& op : ops) {
        const auto io = io_of(op);
        for (int i = 0; i < io.nreads; ++i) io.reads[i]->impl()->storage->pending--;
        io.dst->impl()->storage->pending--;
      }
      count = 0;
    }
  } release{ops, pending_count_};
  RunningOps running(*this);
  run_stream_ops(ops);
}

void Backend::run_stream_ops(const std::vector<StreamOp>& ops) {
  Planner planner(ops, max_graph_buffers());
  std::exception_ptr first_error;
  auto run_eager = [&](size_t k) {
    ++n_eager_;
    run_recorded(ops[k]);
  };
  // An anchored group as one kernel (execute_anchored) when the anchor's own output is dead and
  // the epilogue computes something; false: nothing ran.
  auto run_anchored = [&](Group& grp) {
    if (grp.compute_ops <= 0) return false;
    const size_t last = grp.op_index.back();
    const Storage* as = grp.anchor_dst.impl()->storage.get();
    if (planner.may_be_output(as, last)) return false;  // held, or read after the group
    ir::FusedGraph g = grp.g;
    std::vector<size_t> side_fills;
    for (const Group::Written& w : grp.written) {
      if (!planner.may_be_output(w.storage, last)) continue;
      const bool fill = op_if<ir::Fill>(ops[w.op]) != nullptr;
      if (fill && w.view.shape() != g.shape)
        side_fills.push_back(w.op);
      else
        g.outputs.push_back({w.node, w.view});
    }
    if (g.outputs.empty()) return false;
    int32_t input = -1;
    for (size_t i = 0; i < g.inputs.size(); ++i)
      if (g.inputs[i].impl()->storage.get() == as) input = int32_t(i);
    if (input < 0) return false;
    g.ops = int64_t(grp.op_index.size());
    const bool done = stream_check_mode() ? execute_anchored_checked(
                                                g, input, ops, size_t(grp.anchor), grp.op_index)
                                          : run_anchor_group(ops[size_t(grp.anchor)], g, input);
    if (!done) return false;
    ++n_graphs_;
    n_fused_ops_ += g.ops + 1;
    n_dropped_ +=
        1 + int64_t(grp.written.size()) - int64_t(g.outputs.size()) - int64_t(side_fills.size());
    if (fusion_log())
      std::fprintf(stderr, "[ember fusion] %s: %s + %lld epilogue ops -> 1 kernel\n%s",
                   name().c_str(),
                   std::holds_alternative<ir::Conv>(ops[size_t(grp.anchor)]) ? "conv" : "matmul",
                   (long long)g.ops, g.describe().c_str());
    std::sort(side_fills.begin(), side_fills.end());
    for (size_t k : side_fills) run_eager(k);
    return true;
  };
  // `consumer`: the anchored group a side group runs before; what it loads is needed too, even
  // when its reader comes before the side group's last op (the planner's last-read test alone
  // dropped such a value and the epilogue read an unwritten buffer).
  auto run_group = [&](Group& grp, const Group* consumer = nullptr) {
    if (grp.anchor >= 0) {
      try {
        if (run_anchored(grp)) return;
        run_eager(size_t(grp.anchor));  // the anchor alone, then its epilogue as a plain group
      } catch (...) {
        if (!first_error) first_error = std::current_exception();
        return;
      }
    }
    if (grp.op_index.empty()) return;
    const size_t last = grp.op_index.back();
    auto needed = [&](const Group::Written& w) {
      if (planner.may_be_output(w.storage, last)) return true;
      if (consumer)
        for (const Tensor& v : consumer->loads_view)
          if (v.impl()->storage.get() == w.storage) return true;
      return false;
    };
    try {
      if (grp.compute_ops < 0) {  // an op that is no graph node
        run_eager(grp.op_index[0]);
        return;
      }
      // Fills of another shape than the graph's (scalars the graph reads as constants) run
      // after it when something needs them; their readers in the graph use the constant.
      std::vector<size_t> side_fills;
      for (const Group::Written& w : grp.written) {
        if (!needed(w)) continue;
        const bool fill = op_if<ir::Fill>(ops[w.op]) != nullptr;
        if (fill && (!grp.has_shape || w.view.shape() != grp.g.shape))
          side_fills.push_back(w.op);
        else
          grp.g.outputs.push_back({w.node, w.view});
      }
      int64_t dropped =
          int64_t(grp.written.size()) - int64_t(grp.g.outputs.size()) - int64_t(side_fills.size());
      // The ops the graph replaces: the group's, then its epilogue's (fuse-on-write).
      std::vector<size_t> index = grp.op_index;
      if (grp.post) {
        Group& post = *grp.post;
        const size_t post_last = post.op_index.back();
        const size_t main_fills = side_fills.size();
        for (const Group::Written& w : post.written) {
          if (!planner.may_be_output(w.storage, post_last)) continue;
          const bool fill = op_if<ir::Fill>(ops[w.op]) != nullptr;
          if (fill && w.view.shape() != post.g.shape)
            side_fills.push_back(w.op);
          else
            post.g.outputs.push_back({w.node, w.view});
        }
        dropped += int64_t(post.written.size()) - int64_t(post.g.outputs.size()) -
                   int64_t(side_fills.size() - main_fills);
        post.g.ops = int64_t(post.op_index.size());
        index.insert(index.end(), post.op_index.begin(), post.op_index.end());
        grp.g.after.push_back(std::move(post.g));
      }
      n_dropped_ += dropped;
      grp.g.ops = int64_t(index.size());
      if (!grp.g.outputs.empty() || !grp.g.reductions.empty()) {
        bool done = false;
        if (grp.compute_ops >= 2 || grp.g.outputs.size() < size_t(grp.compute_ops) || grp.post) {
          done =
              stream_check_mode() ? execute_graph_checked(grp.g, ops, index) : execute_graph(grp.g);
          if (done) {
            ++n_graphs_;
            n_fused_ops_ += grp.g.ops;
            if (fusion_log())
              std::fprintf(stderr, "[ember fusion] %s: %lld ops -> 1 kernel\n%s", name().c_str(),
                           (long long)grp.g.ops, grp.g.describe().c_str());
          }
        }
        if (!done) {
          // Op by op, in order: every write the graph's ops make (later ops read them).
          n_dropped_ -= dropped;
          for (size_t k : index) run_eager(k);
          return;
        }
      }
      std::sort(side_fills.begin(), side_fills.end());
      for (size_t k : side_fills) run_eager(k);
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  };
  // The first op after k that is no Fill (ops.size() when none): a run of Fills before an op of
  // another shape than the open group's (the scalars and zeros of the next chain, as an
  // optimizer's next parameter) starts the next group, where it is read as constants; in the
  // open group it would be written (side fills) and loaded back.
  // Whether element-wise op k may start the epilogue of `r`'s reduction: it reads the reduction's
  // result and computes a value of the reduced size (the keepdim dst or a view of it).
  auto epilogue_starts = [&](const Group& r, size_t k) {
    const Tensor& dst = r.g.reductions[0].dst;
    const auto io = io_of(ops[k]);
    if (io.dst->numel() != dst.numel()) return false;
    for (int i = 0; i < io.nreads; ++i)
      if (io.reads[i]->impl()->storage == dst.impl()->storage) return true;
    return false;
  };
  std::vector<size_t> next_compute(ops.size() + 1, ops.size());
  for (size_t k = ops.size(); k-- > 0;)
    next_compute[k] = op_if<ir::Fill>(ops[k]) ? next_compute[k + 1] : k;
  Group grp;
  // A group ended by a reduction, waiting for its epilogue: `grp` then holds the element-wise ops
  // of the reduced shape that follow (fuse-on-write), which run as the graph's `after`.
  std::unique_ptr<Group> red;
  // While `grp` is anchored: the element-wise ops after the anchor that neither read what the
  // anchored group writes nor write what it reads or writes (batch_norm's per-channel scale and
  // shift between a convolution and its epilogue). They run before the anchored group, which
  // may then read their results: an epilogue the side ops would otherwise cut off.
  Group side;
  auto independent_of_anchor = [&](size_t k) {
    const auto io = io_of(ops[k]);
    const auto aio = io_of(ops[size_t(grp.anchor)]);
    auto written = [&](const Storage* st) {
      if (st == grp.anchor_dst.impl()->storage.get()) return true;
      for (const Group::Written& w : grp.written)
        if (w.storage == st) return true;
      return false;
    };
    auto read = [&](const Storage* st) {
      for (int i = 0; i < aio.nreads; ++i)
        if (aio.reads[i]->impl()->storage.get() == st) return true;
      for (const Tensor& v : grp.loads_view)
        if (v.impl()->storage.get() == st) return true;
      return false;
    };
    const Storage* ds = io.dst->impl()->storage.get();
    if (written(ds) || read(ds)) return false;
    for (int i = 0; i < io.nreads; ++i)
      if (written(io.reads[i]->impl()->storage.get())) return false;
    return true;
  };
  auto reads_anchor = [&](size_t k) {
    const auto io = io_of(ops[k]);
    for (int i = 0; i < io.nreads; ++i)
      if (io.reads[i]->impl()->storage == grp.anchor_dst.impl()->storage) return true;
    return false;
  };
  auto run_side = [&] {
    if (side.op_index.empty()) return;
    run_group(side, &grp);
    side = Group();
  };
  size_t current = 0;  // the loop's op
  // Runs the open group (with the reduction's group, when one waits, as its epilogue).
  auto close = [&] {
    run_side();
    if (red) {
      // The epilogue joins when it computes something and the reduction's group leaves no Fill
      // to run after its graph (the epilogue might read or overwrite it).
      bool attach = grp.compute_ops > 0 && grp.anchor < 0 && grp.has_shape;
      const size_t last = red->op_index.back();
      for (const Group::Written& w : red->written)
        attach = attach && !(planner.may_be_output(w.storage, last) && op_if<ir::Fill>(ops[w.op]) &&
                             w.view.shape() != red->g.shape);
      if (attach) {
        red->post = std::make_shared<Group>(std::move(grp));
        grp = Group();
      }
      run_group(*red);
      red.reset();
    }
    run_group(grp);
    grp = Group();
    planner.release_before(current);  // every op before the current one has run
  };
  for (size_t k = 0; k < ops.size(); ++k) {
    current = k;
    if (op_if<ir::Reduce>(ops[k])) {
      // A reduction ends the group that computes its src; the ops after it that consume its
      // result join it as its epilogue (close). Else the group runs and the reduction after it,
      // eagerly.
      const bool joined = grp.compute_ops >= 0 && planner.add_reduce(grp, k);
      if (joined) {
        if (red) {  // the waiting reduction's epilogue ends in a reduction: a group of its own
          run_group(*red);
          red.reset();
        }
        red = std::make_unique<Group>(std::move(grp));
        grp = Group();
        continue;
      }
      close();
      try {
        run_eager(k);
      } catch (...) {
        if (!first_error) first_error = std::current_exception();
      }
      continue;
    }
    if (!elementwise_kind(ops[k])) {  // an anchor (Backend::anchorable) starts its own group
      close();
      grp.anchor = int64_t(k);
      grp.anchor_dst = *io_of(ops[k]).dst;
      continue;
    }
    if (red && grp.compute_ops == 0 && !op_if<ir::Fill>(ops[k]) && !epilogue_starts(*red, k)) {
      // No epilogue: the reduction's group runs alone; the Fills before k stay open (k's
      // graph reads them as constants).
      run_group(*red);
      red.reset();
    }
    if (grp.has_shape && grp.compute_ops >= 0 && op_if<ir::Fill>(ops[k]) &&
        next_compute[k] < ops.size() && io_of(ops[next_compute[k]]).dst->shape() != grp.g.shape)
      close();
    // A Fill before an op that goes to the side group (it reads no anchor output) goes there too.
    const bool side_fill = grp.anchor >= 0 && grp.compute_ops == 0 && op_if<ir::Fill>(ops[k]) &&
                           next_compute[k] < ops.size() && !reads_anchor(next_compute[k]);
    if (!side_fill && grp.compute_ops >= 0 && planner.add(grp, k)) continue;
    if (grp.anchor >= 0 && side.compute_ops >= 0 && independent_of_anchor(k) &&
        planner.add(side, k))
      continue;
    close();
    if (!planner.add(grp, k)) {  // cannot happen for a fresh group; run it alone to be safe
      close();
      try {
        run_eager(k);
      } catch (...) {
        if (!first_error) first_error = std::current_exception();
      }
    }
  }
  close();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace ember
