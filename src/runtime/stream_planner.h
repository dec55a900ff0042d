// The fusion planner's view of one flush (src/runtime/stream.cpp runs it): dense ids for the
// flush's storages with who holds them and their last use (FlushStorages), the fused graph a
// group of recorded ops grows into (Group), and the rules for when an op may join it (Planner).
// Internal to src/runtime.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "runtime/backend.h"
#include "runtime/stream_io.h"
#include "tensor/overlap.h"

namespace ember::stream_planner {

using detail::io_of;
using detail::op_if;
using detail::StreamOp;

inline bool elementwise_kind(const ir::Op& op) {
  return std::holds_alternative<ir::Copy>(op) || std::holds_alternative<ir::Fill>(op) ||
         std::holds_alternative<ir::Unary>(op) || std::holds_alternative<ir::Binary>(op) ||
         std::holds_alternative<ir::Where>(op);
}

inline bool elementwise_kind(const StreamOp& op) {
  const ir::Op* p = std::get_if<ir::Op>(&op);
  return p && elementwise_kind(*p);
}

// Integer division and remainder throw from host kernels (the frontend turns that into the
// user's error at the call), so they always run at once.
inline bool may_throw(const ir::Op& op) {
  auto* b = std::get_if<ir::Binary>(&op);
  if (!b || !is_integral(b->a.dtype())) return false;
  return b->op == ir::BinaryOp::div_floor || b->op == ir::BinaryOp::div_trunc ||
         b->op == ir::BinaryOp::remainder || b->op == ir::BinaryOp::fmod;
}

inline bool same_view(const Tensor& a, const Tensor& b) {
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
inline bool epilogue_view(const Tensor& r, const Tensor& d) {
  if (r.numel() == 0 || r.numel() != d.numel()) return false;
  if (same_view(r, d)) return true;
  return r.impl()->storage == d.impl()->storage && r.dtype() == d.dtype() && r.is_contiguous() &&
         d.is_contiguous() && r.offset() == d.offset();
}

// Whether `t` is every element of its storage, each once (a Fill of it leaves one value).
inline bool covers_storage(const Tensor& t) {
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

}  // namespace ember::stream_planner
