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
#include "tensor/overlap.h"

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

using detail::io_of;
using detail::op_if;
using detail::StreamOp;

bool elementwise_kind(const ir::Op& op) {
  return std::holds_alternative<ir::Copy>(op) || std::holds_alternative<ir::Fill>(op) ||
         std::holds_alternative<ir::Unary>(op) || std::holds_alternative<ir::Binary>(op) ||
         std::holds_alternative<ir::Where>(op);
}

bool elementwise_kind(const StreamOp& op) {
  const ir::Op* p = std::get_if<ir::Op>(&op);
  return p && elementwise_kind(*p);
}

// Integer division and remainder throw from host kernels (the frontend turns that into the
// user's error at the call), so they always run at once.
bool may_throw(const ir::Op& op) {
  auto* b = std::get_if<ir::Binary>(&op);
  if (!b || !is_integral(b->a.dtype())) return false;
  return b->op == ir::BinaryOp::div_floor || b->op == ir::BinaryOp::div_trunc ||
         b->op == ir::BinaryOp::remainder || b->op == ir::BinaryOp::fmod;
}

bool same_view(const Tensor& a, const Tensor& b) {
  const TensorImpl& x = *a.impl();
  const TensorImpl& y = *b.impl();
  return x.storage == y.storage && x.offset == y.offset && x.dtype == y.dtype &&
         x.shape == y.shape && x.strides == y.strides;
}

// Whether an epilogue op's read `r` is the anchor's output `d` itself: the same elements, in
// row-major order (any shape of that many elements), so element i of the graph is element i of
// the anchor's (contiguous) result; or the anchor's dst view itself (a channels-last
// convolution's output: the graph then has the dst's shape, element (n, c, h, w) is the
// anchor's).
bool epilogue_view(const Tensor& r, const Tensor& d) {
  if (r.numel() == 0 || r.numel() != d.numel()) return false;
  if (same_view(r, d)) return true;
  return r.impl()->storage == d.impl()->storage && r.dtype() == d.dtype() && r.is_contiguous() &&
         d.is_contiguous() && r.offset() == d.offset();
}

// Whether `t` is every element of its storage, each once (a Fill of it leaves one value).
bool covers_storage(const Tensor& t) {
  return t.is_contiguous() && t.offset() == 0 &&
         t.numel() * int64_t(t.element_size()) == t.impl()->storage->nbytes;
}

// Dense ids 0, 1, ... for the pointers of one flush (storages, impls): an open-addressing table,
// so a lookup allocates nothing (the planner looks up every operand of every op).
class PtrIds {
 public:
  explicit PtrIds(size_t n) {
    while (cap_ < 2 * n + 2) cap_ *= 2;
    keys_.assign(cap_, nullptr);
    ids_.assign(cap_, -1);
  }
  // p's id, given the next one when p is new.
  int32_t insert(const void* p) {
    size_t i = slot(p);
    if (!keys_[i]) {
      keys_[i] = p;
      ids_[i] = int32_t(n_++);
    }
    return ids_[i];
  }
  // p's id, or -1.
  int32_t find(const void* p) const { return ids_[slot(p)]; }
  size_t size() const { return n_; }

 private:
  size_t slot(const void* p) const {
    size_t i = size_t((uint64_t(reinterpret_cast<uintptr_t>(p)) >> 4) * 0x9E3779B97F4A7C15ull) &
               (cap_ - 1);
    while (keys_[i] && keys_[i] != p) i = (i + 1) & (cap_ - 1);
    return i;
  }
  size_t cap_ = 16, n_ = 0;
  std::vector<const void*> keys_;
  std::vector<int32_t> ids_;
};

// What the planner needs to know about a flush's storages, by id: whether something outside the
// recorded ops still holds the storage (it must be written; the others only when a later op
// reads them) and the last op reading it. The ops share their tensors' impls with the caller (no
// copy per op: recording is the hot path), so a storage is held when one of those impls has an
// owner besides the ops' references to it and the view_base links of recorded views, or when an
// impl the ops do not reference (another view, a tensor saved for backward) refers to it.
struct FlushStorages {
  static constexpr size_t kNone = size_t(-1);
  PtrIds ids;
  std::vector<char> held;
  std::vector<size_t> last_read;
  std::vector<Storage*> storage;  // by id
  std::vector<size_t> last_use;   // the last op reading or writing it

  explicit FlushStorages(const std::vector<StreamOp>& ops) : ids(operands(ops)) {
    // The impls the ops reference, then the view bases they link to (autodiff's view_base: a
    // recorded view keeps its base alive, which is no owner from outside).
    PtrIds impls(2 * operands(ops));
    std::vector<long> refs;                                   // references from ops and links
    std::vector<const std::shared_ptr<TensorImpl>*> impl_of;  // by impl id
    auto add = [&](const std::shared_ptr<TensorImpl>& m) {
      const int32_t id = impls.insert(m.get());
      if (size_t(id) == refs.size()) {
        refs.push_back(0);
        impl_of.push_back(&m);
      }
      refs[size_t(id)]++;
    };
    for (size_t k = 0; k < ops.size(); ++k) {
      const auto io = io_of(ops[k]);
      for (int i = 0; i <= io.nreads; ++i) {
        const Tensor& t = i < io.nreads ? *io.reads[i] : *io.dst;
        const int32_t s = ids.insert(t.impl()->storage.get());
        if (size_t(s) == last_read.size()) {
          last_read.push_back(kNone);
          storage.push_back(t.impl()->storage.get());
          last_use.push_back(k);
        }
        if (i < io.nreads) last_read[size_t(s)] = k;
        last_use[size_t(s)] = k;
        add(t.impl_ptr());
      }
    }
    for (size_t m = 0; m < impl_of.size(); ++m)  // grows while bases are added
      if (const std::shared_ptr<TensorImpl>& base = (*impl_of[m])->view_base) add(base);
    std::vector<long> storage_impls;  // distinct impls of each storage among impl_of
    for (const auto* m : impl_of) {
      const size_t s = size_t(ids.insert((*m)->storage.get()));
      if (s >= storage_impls.size()) storage_impls.resize(s + 1, 0);
      storage_impls[s]++;
    }
    last_read.resize(ids.size(), kNone);
    held.assign(ids.size(), 0);
    // use_count is exact here: the stream's lock keeps the recorded ops from changing.
    for (size_t m = 0; m < impl_of.size(); ++m) {
      const std::shared_ptr<Storage>& st = (*impl_of[m])->storage;
      const size_t s = size_t(ids.find(st.get()));
      if (impl_of[m]->use_count() > refs[m] || st.use_count() > storage_impls[s]) held[s] = 1;
    }
  }

 private:
  static size_t operands(const std::vector<StreamOp>& ops) {
    size_t n = 0;
    for (const StreamOp& op : ops) n += size_t(io_of(op).nreads) + 1;
    return n;
  }
};

// One fused graph under construction.
struct Group {
  struct Written {
    const Storage* storage;
    Tensor view;  // the view every write of the group to this storage uses
    int32_t node;
    bool whole_fill;  // the last write is a Fill of every element
    size_t op;        // index (in the flush) of the last write
  };
  ir::FusedGraph g;
  std::vector<size_t> op_index;  // the flush's ops in this group, in order
  std::vector<Written> written;
  std::vector<Tensor> loads_view;  // == g.inputs
  std::vector<int32_t> loads_node;
  bool has_shape = false;
  int64_t compute_ops = 0;
  // An anchored group (Backend::anchorable): the anchor op's index, its output; the element-wise
  // ops after it form its epilogue. -1: a plain element-wise group.
  int64_t anchor = -1;
  Tensor anchor_dst;
  // A group ended by a reduction: the plain group of the reduced shape after it (its first
  // computing op reads the reduction's result), run as the graph's `after` (fuse-on-write).
  std::shared_ptr<Group> post;

  uint32_t stamp = 0;  // the planner's mark of this group's entries in its written table (0: none)

  bool reads_storage_otherwise(const Tensor& dst) const {
    for (const Tensor& v : loads_view)
      if (v.impl()->storage == dst.impl()->storage && !same_view(v, dst)) return true;
    return false;
  }
};

// How a read resolves: an existing node, or a new load of `view`.
struct ReadPlan {
  int32_t node = -1;
  bool new_load = false;
};

class Planner {
 public:
  Planner(const std::vector<StreamOp>& ops, int64_t max_buffers)
      : ops_(ops), max_buffers_(max_buffers), st_(ops), written_at_(st_.ids.size()) {}

  // Whether a write to `s` that op k leaves may still be an output when the group closes at or
  // after k: something holds it or an op after k reads it (exact when the group ends at k).
  bool may_be_output(const Storage* s, size_t k) const {
    const int32_t i = st_.ids.find(s);
    if (i < 0) return false;
    const size_t last = st_.last_read[size_t(i)];
    return st_.held[size_t(i)] || (last != FlushStorages::kNone && last > k);
  }

  // Once the ops before k have run: frees the host buffers nothing outside the flush holds and
  // no op from k on uses, so that the next ops' results reuse that memory while it is in cache
  // (otherwise every intermediate of a long flush stays allocated until the flush ends). The
  // Storage objects stay; only dead contents go. GPU backends keep theirs (queued work).
  void release_before(size_t k) {
    if (!ordered_) {
      ordered_ = true;
      for (size_t i = 0; i < st_.storage.size(); ++i)
        if (!st_.held[i] && st_.storage[i]->device.is_host()) order_.push_back(int32_t(i));
      std::sort(order_.begin(), order_.end(), [&](int32_t a, int32_t b) {
        return st_.last_use[size_t(a)] < st_.last_use[size_t(b)];
      });
    }
    for (; next_ < order_.size() && st_.last_use[size_t(order_[next_])] < k; ++next_)
      st_.storage[size_t(order_[next_])]->release_buffer();
  }

  // Appends op k to `grp`, or returns false (nothing changed) when it cannot join it.
  bool add(Group& grp, size_t k) {
    const ir::Op& op = std::get<ir::Op>(ops_[k]);  // element-wise
    const auto io = io_of(op);
    const Tensor& dst = *io.dst;
    const bool fill = std::holds_alternative<ir::Fill>(op);
    if (!fill && grp.has_shape && dst.shape() != grp.g.shape) return false;
    if (grp.anchor >= 0 && !joins_anchor(grp, io, fill)) return false;
    // A destination whose elements share memory is written in the eager loop's order.
    if (detail::overlaps_itself(dst))
      return grp.op_index.empty() && grp.anchor < 0 ? add_alone(grp, k) : false;
    ReadPlan plans[3];
    int new_loads = 0;
    for (int i = 0; i < io.nreads; ++i) {
      const Tensor& r = *io.reads[i];
      if (Group::Written* w = find_written(grp, r.impl()->storage.get())) {
        if (same_view(w->view, r) || w->whole_fill) {
          plans[i].node = w->node;
          continue;
        }
        return false;  // reads memory the group writes in another order
      }
      bool found = false;
      for (size_t j = 0; j < grp.loads_view.size(); ++j)
        if (same_view(grp.loads_view[j], r)) {
          plans[i].node = grp.loads_node[j];
          found = true;
          break;
        }
      for (int j = 0; j < i && !found; ++j)
        if (plans[j].new_load && same_view(*io.reads[j], r)) {
          plans[i] = plans[j];
          plans[i].new_load = false;
          plans[i].node = -2 - j;  // resolved after commit
          found = true;
        }
      if (!found) {
        plans[i].new_load = true;
        ++new_loads;
      }
    }
    // The destination: no other view of it may be read from memory, nor written.
    Group::Written* w = find_written(grp, dst.impl()->storage.get());
    if (w && !same_view(w->view, dst) && !(fill && covers_storage(dst) && w->whole_fill))
      return false;
    if (grp.reads_storage_otherwise(dst)) return false;
    for (int i = 0; i < io.nreads; ++i)
      if (plans[i].new_load && io.reads[i]->impl()->storage == dst.impl()->storage &&
          !same_view(*io.reads[i], dst))
        return false;
    if (max_buffers_ > 0 && !grp.op_index.empty()) {
      // Buffers the kernel binds if the group closes after this op: its loads and the writes
      // that are still needed then (dead intermediates bind nothing).
      const Storage* ds = dst.impl()->storage.get();
      int64_t outs = may_be_output(ds, k) ? 1 : 0;
      for (const Group::Written& x : grp.written)
        if (x.storage != ds && may_be_output(x.storage, k)) ++outs;
      if (int64_t(grp.loads_view.size()) + new_loads + outs > max_buffers_) return false;
    }
    // Commit.
    if (!fill && !grp.has_shape) {
      grp.g.shape = dst.shape();
      grp.has_shape = true;
    }
    int32_t operand[3] = {-1, -1, -1};
    for (int i = 0; i < io.nreads; ++i) {
      if (plans[i].new_load) {
        ir::FusedGraph::Node n;
        n.kind = ir::FusedGraph::Kind::load;
        n.dtype = io.reads[i]->dtype();
        n.input = int32_t(grp.g.inputs.size());
        grp.g.inputs.push_back(*io.reads[i]);
        grp.loads_view.push_back(*io.reads[i]);
        grp.g.nodes.push_back(n);
        grp.loads_node.push_back(int32_t(grp.g.nodes.size()) - 1);
        operand[i] = int32_t(grp.g.nodes.size()) - 1;
      } else if (plans[i].node <= -2) {
        operand[i] = operand[-2 - plans[i].node];
      } else {
        operand[i] = plans[i].node;
      }
    }
    const int32_t node = emit(grp, op, operand);
    if (w) {
      w->view = dst;
      w->node = node;
      w->whole_fill = fill && covers_storage(dst);
      w->op = k;
    } else {
      set_written(grp, dst.impl()->storage.get(), grp.written.size());
      grp.written.push_back({dst.impl()->storage.get(), dst, node, fill && covers_storage(dst), k});
    }
    grp.op_index.push_back(k);
    if (!fill) ++grp.compute_ops;
    return true;
  }

  // Appends the reduction op k to a plain group as its last op when its src is the whole value
  // of a node (a view the group writes or loads, in the graph's shape and element order) and
  // its dst is no storage the group touches; false: nothing changed.
  bool add_reduce(Group& grp, size_t k) {
    const auto& r = *op_if<ir::Reduce>(ops_[k]);
    if (grp.anchor >= 0 || grp.compute_ops < 1 || !grp.has_shape) return false;
    if (r.src.shape() != grp.g.shape || detail::overlaps_itself(r.dst)) return false;
    int32_t node = -1;
    if (Group::Written* w = find_written(grp, r.src.impl()->storage.get())) {
      if (!same_view(w->view, r.src)) return false;
      node = w->node;
    } else {
      for (size_t j = 0; j < grp.loads_view.size() && node < 0; ++j)
        if (same_view(grp.loads_view[j], r.src)) node = grp.loads_node[j];
    }
    if (node < 0) return false;
    const Storage* ds = r.dst.impl()->storage.get();
    if (find_written(grp, ds) || ds == r.src.impl()->storage.get()) return false;
    for (const Tensor& v : grp.loads_view)
      if (v.impl()->storage.get() == ds) return false;
    if (max_buffers_ > 0) {
      int64_t outs = 1;  // the reduction's dst
      for (const Group::Written& x : grp.written)
        if (may_be_output(x.storage, k)) ++outs;
      if (int64_t(grp.loads_view.size()) + outs > max_buffers_) return false;
    }
    grp.g.reductions.push_back({r.op, node, r.dims, r.dst});
    grp.op_index.push_back(k);
    ++grp.compute_ops;
    return true;
  }

 private:
  // The group's write to storage s, or null.
  Group::Written* find_written(Group& grp, const Storage* s) {
    const int32_t i = st_.ids.find(s);
    if (i < 0 || grp.stamp == 0) return nullptr;
    const auto& e = written_at_[size_t(i)];
    return e.first == grp.stamp ? &grp.written[e.second] : nullptr;
  }
  void set_written(Group& grp, const Storage* s, size_t index) {
    if (grp.stamp == 0) grp.stamp = ++stamps_;
    written_at_[size_t(st_.ids.find(s))] = {grp.stamp, index};
  }

  // Whether an element-wise op may join an anchored group: it reads the anchor's output only as
  // the whole result (epilogue_view), writes none of the anchor's tensors, and the first
  // computing op reads the anchor (else the anchor runs alone).
  template <typename IO>
  bool joins_anchor(const Group& grp, const IO& io, bool fill) const {
    const Storage* as = grp.anchor_dst.impl()->storage.get();
    const auto aio = io_of(ops_[size_t(grp.anchor)]);
    const Storage* ds = io.dst->impl()->storage.get();
    if (ds == as) return false;
    for (int i = 0; i < aio.nreads; ++i)
      if (aio.reads[i]->impl()->storage.get() == ds) return false;
    bool reads_anchor = false;
    for (int i = 0; i < io.nreads; ++i) {
      if (io.reads[i]->impl()->storage.get() != as) continue;
      if (!epilogue_view(*io.reads[i], grp.anchor_dst)) return false;
      reads_anchor = true;
    }
    return fill || grp.compute_ops > 0 || reads_anchor;
  }

  // An op that cannot be a graph node (a self-overlapping destination): its own group, run as
  // it is.
  bool add_alone(Group& grp, size_t k) {
    grp.op_index.push_back(k);
    grp.compute_ops = -1;  // never a graph
    return true;
  }

  static int32_t emit(Group& grp, const ir::Op& op, const int32_t* a) {
    using K = ir::FusedGraph::Kind;
    ir::FusedGraph::Node n;
    const auto io = io_of(op);
    n.dtype = io.dst->dtype();
    if (auto* f = std::get_if<ir::Fill>(&op)) {
      n.kind = K::constant;
      n.value = f->value;
    } else if (std::holds_alternative<ir::Copy>(op)) {
      if (grp.g.nodes[size_t(a[0])].dtype == n.dtype) return a[0];  // the same value
      n.kind = K::cast;
      n.a = a[0];
    } else if (auto* u = std::get_if<ir::Unary>(&op)) {
      n.kind = K::unary;
      n.unary = u->op;
      n.p0 = u->p0;
      n.p1 = u->p1;
      n.p2 = u->p2;
      n.a = a[0];
    } else if (auto* b = std::get_if<ir::Binary>(&op)) {
      n.kind = K::binary;
      n.binary = b->op;
      n.a = a[0];
      n.b = a[1];
    } else {
      n.kind = K::where;
      n.a = a[0];
      n.b = a[1];
      n.c = a[2];
    }
    grp.g.nodes.push_back(n);
    return int32_t(grp.g.nodes.size()) - 1;
  }

  const std::vector<StreamOp>& ops_;
  int64_t max_buffers_;
  FlushStorages st_;
  // By storage id: (stamp of the group that writes it, index in its written).
  std::vector<std::pair<uint32_t, size_t>> written_at_;
  uint32_t stamps_ = 0;
  // release_before's storages by last use, and how many it has released.
  bool ordered_ = false;
  std::vector<int32_t> order_;
  size_t next_ = 0;
};

}  // namespace

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

// ---- FusedGraph ----

namespace ir {

std::string FusedGraph::key() const {
  std::string k = "g" + std::to_string(inputs.size()) + ":";
  for (const Node& n : nodes) {
    k += char('a' + int(n.kind));
    k += dtype_name(n.dtype);
    switch (n.kind) {
      case Kind::load:
        k += std::to_string(n.input);
        break;
      case Kind::constant:
        break;
      case Kind::unary:
        k += name(n.unary);
        break;
      case Kind::binary:
        k += name(n.binary);
        break;
      default:
        break;
    }
    for (int32_t o : {n.a, n.b, n.c})
      if (o >= 0) k += "," + std::to_string(o);
    k += ";";
  }
  k += "|";
  for (const Output& o : outputs) k += std::to_string(o.node) + ";";
  for (const Reduction& r : reductions) {
    k += "|r" + std::to_string(int(r.op)) + "." + std::to_string(r.node) + "." +
         dtype_name(r.dst.dtype()) + ".d";
    for (int64_t d : r.dims) k += std::to_string(d) + ",";
  }
  for (const FusedGraph& a : after) k += "|after{" + a.key() + "}";
  return k;
}

std::string FusedGraph::describe() const {
  std::string s;
  auto shape_str = [](const Shape& sh) {
    std::string r = "[";
    for (size_t i = 0; i < sh.size(); ++i) r += (i ? ", " : "") + std::to_string(sh[i]);
    return r + "]";
  };
  s += "  shape " + shape_str(shape) + ", " + std::to_string(inputs.size()) + " inputs, " +
       std::to_string(outputs.size()) + " outputs\n";
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    s += "  %" + std::to_string(i) + " " + dtype_name(n.dtype) + " = ";
    auto arg = [](int32_t o) { return "%" + std::to_string(o); };
    switch (n.kind) {
      case Kind::load:
        s += "load in" + std::to_string(n.input);
        break;
      case Kind::constant:
        s += "constant " + std::to_string(n.value.to_double());
        break;
      case Kind::unary:
        s += std::string(name(n.unary)) + "(" + arg(n.a) + ")";
        break;
      case Kind::binary:
        s += std::string(name(n.binary)) + "(" + arg(n.a) + ", " + arg(n.b) + ")";
        break;
      case Kind::where:
        s += "where(" + arg(n.a) + ", " + arg(n.b) + ", " + arg(n.c) + ")";
        break;
      case Kind::cast:
        s += "cast(" + arg(n.a) + ")";
        break;
    }
    s += "\n";
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    s += "  out" + std::to_string(i) + " = %" + std::to_string(outputs[i].node) + "\n";
  static const char* const kReduceNames[] = {"sum", "prod", "max", "min", "any", "all"};
  for (size_t i = 0; i < reductions.size(); ++i) {
    const Reduction& r = reductions[i];
    s += "  red" + std::to_string(i) + " = " + kReduceNames[int(r.op)] + "(%" +
         std::to_string(r.node) + ", dims";
    for (int64_t d : r.dims) s += " " + std::to_string(d);
    s += ") -> " + std::string(dtype_name(r.dst.dtype())) + " " + shape_str(r.dst.shape()) + "\n";
  }
  for (const FusedGraph& a : after) s += "  then, on the reductions' results:\n" + a.describe();
  return s;
}

}  // namespace ir

}  // namespace ember
