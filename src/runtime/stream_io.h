// The tensors a recordable op (element-wise, an ir::Matmul or ir::Conv anchor or an ir::Reduce)
// reads and writes, for the stream, its planner and check mode. Internal.
#pragma once
#include <type_traits>
#include <variant>

#include "ir/fused.h"
#include "ir/ops.h"

namespace ember::detail {

/// One recorded op: a primitive, or a forward convolution the backend takes as an anchor
/// (Backend::conv_anchorable; reached through execute_fused).
using StreamOp = std::variant<ir::Op, ir::Conv>;

/// The primitive of kind T that `s` holds, else null.
template <typename T>
const T* op_if(const StreamOp& s) {
  const ir::Op* op = std::get_if<ir::Op>(&s);
  return op ? std::get_if<T>(op) : nullptr;
}

/// Pointers into an op's fields: reads[0..nreads) in operand order, dst the written tensor.
/// Tensor is const when the op is.
template <typename T>
struct OpIO {
  T* reads[3] = {nullptr, nullptr, nullptr};
  int nreads = 0;
  T* dst = nullptr;  // null: not a Copy, Fill, Unary, Binary, Where, Matmul, Reduce or Conv
};

template <typename OpT>
auto io_of(OpT& op) {
  using T = std::conditional_t<std::is_const_v<OpT>, const Tensor, Tensor>;
  OpIO<T> r;
  if constexpr (std::is_same_v<std::remove_const_t<OpT>, StreamOp>) {
    if (auto* v = std::get_if<ir::Conv>(&op)) {
      r.reads[r.nreads++] = &v->src;
      r.reads[r.nreads++] = &v->weight;
      if (v->bias.defined()) r.reads[r.nreads++] = &v->bias;
      r.dst = &v->dst;
      return r;
    }
    return io_of(*std::get_if<ir::Op>(&op));
  } else if (auto* c = std::get_if<ir::Copy>(&op)) {
    r.reads[r.nreads++] = &c->src;
    r.dst = &c->dst;
  } else if (auto* f = std::get_if<ir::Fill>(&op)) {
    r.dst = &f->dst;
  } else if (auto* u = std::get_if<ir::Unary>(&op)) {
    r.reads[r.nreads++] = &u->src;
    r.dst = &u->dst;
  } else if (auto* b = std::get_if<ir::Binary>(&op)) {
    r.reads[r.nreads++] = &b->a;
    r.reads[r.nreads++] = &b->b;
    r.dst = &b->dst;
  } else if (auto* w = std::get_if<ir::Where>(&op)) {
    r.reads[r.nreads++] = &w->cond;
    r.reads[r.nreads++] = &w->a;
    r.reads[r.nreads++] = &w->b;
    r.dst = &w->dst;
  } else if (auto* m = std::get_if<ir::Matmul>(&op)) {
    r.reads[r.nreads++] = &m->a;
    r.reads[r.nreads++] = &m->b;
    r.dst = &m->dst;
  } else if (auto* d = std::get_if<ir::Reduce>(&op)) {
    r.reads[r.nreads++] = &d->src;  // recorded only without indices (Backend::reducible)
    r.dst = &d->dst;
  }
  return r;
}

}  // namespace ember::detail
