// Backward rules of the indexing family: gather, the scatter family (scatter, scatter_add,
// scatter_reduce), index_select, index_add and index_put (which also carry advanced indexing and
// masked_select). Written with tensor ops (run with grad mode off). Indices never get gradients.
#include "ember/ops/indexing.h"
#include "autodiff/rules.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/reduce.h"
#include "tensor/internal.h"

namespace ember::autograd::rules {

using ir::ScatterReduce;

namespace {
Tensor zeros_of(const Shape& s, DType dt, const Tensor& like) {
  return zeros(s, {dt, like.device()});
}
Tensor as_dtype(const Tensor& b, DType dt) { return b.to(dt); }
}  // namespace

void gather(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out) {
  if (!needs_grad({&x}) || !is_floating(out.dtype())) return;
  SavedTensor si(index);
  const Shape xs = x.shape();
  const DType dt = x.dtype();
  record1("GatherBackward", {x}, out, [si, xs, dt, dim](const Tensor& g) {
    // Duplicate indices read one element several times: their gradients add up.
    return std::vector<Tensor>{scatter_add(zeros_of(xs, dt, g), dim, si.get("GatherBackward"), g)};
  });
}

void scatter(ScatterReduce reduce, bool include_self, const Tensor& x, int64_t dim,
             const Tensor& index, const Tensor& src, const Tensor& out) {
  if (!needs_grad({&x, &src}) || !is_floating(out.dtype())) return;
  const bool prod = reduce == ScatterReduce::prod;
  const bool extreme = reduce == ScatterReduce::amax || reduce == ScatterReduce::amin;
  const char* name = reduce == ScatterReduce::none  ? "ScatterBackward"
                     : reduce == ScatterReduce::sum ? "ScatterAddBackward"
                                                    : "ScatterReduceBackward";
  SavedTensor si(index), sx(prod || extreme ? x : Tensor()), ss(prod || extreme ? src : Tensor()),
      sy(prod || extreme ? out : Tensor());
  const bool gx_needed = x.requires_grad(), gs_needed = src.requires_grad();
  record1(name, {x, src}, out, [=](const Tensor& g) {
    const Tensor idx = si.get(name);
    const DType dt = g.dtype();
    // Positions that received src values; the old self there is overwritten (or, without
    // include_self, left out of the reduction).
    auto zero_scattered = [&](const Tensor& t) { return ember::scatter(t, dim, idx, 0.0); };
    Tensor gx, gs;
    switch (reduce) {
      case ScatterReduce::none:
        gx = zero_scattered(g);
        gs = gather(g, dim, idx);
        break;
      case ScatterReduce::sum:
        gx = include_self ? g : zero_scattered(g);
        gs = gather(g, dim, idx);
        break;
      case ScatterReduce::mean: {
        Tensor n = include_self ? ones_like(g) : zeros_like(g);
        n = scatter_add(n, dim, idx, ones(idx.shape(), {dt, g.device()}));
        const Tensor gn = g / where(eq(n, 0), 1.0, n);
        gx = include_self ? gn : zero_scattered(gn);
        gs = gather(gn, dim, idx);
        break;
      }
      case ScatterReduce::prod: {
        // As torch: divide by the factor unless it is the only zero of its group, where the
        // product of the others is recomputed with that zero replaced by one.
        const Tensor xv = sx.get(name), sv = ss.get(name), y = sy.get(name);
        if (gx_needed) {
          const Tensor masked_self = where(eq(xv, 0), 1.0, xv);
          const Tensor r = scatter_reduce(masked_self, dim, idx, sv, "prod", include_self);
          gx = g * r / masked_self;
          if (!include_self) gx = zero_scattered(gx);
        }
        if (gs_needed) {
          const Tensor src_zero = eq(sv, 0);
          const Tensor zeros_in_group =
              gather(scatter_add(zeros_like(xv), dim, idx, as_dtype(src_zero, dt)), dim, idx);
          const Tensor single = logical_and(src_zero, eq(zeros_in_group, 1));
          const Tensor r =
              scatter_reduce(xv, dim, idx, where(single, 1.0, sv), "prod", include_self);
          gs = where(single, gather(g * r, dim, idx),
                     gather(g * y, dim, idx) / where(src_zero, 1.0, sv));
          // A zero among other zeros gets the constant 0 above, whose derivative (the product of
          // the rest when one other zero remains) a create_graph backward needs: recompute each
          // such element's product of the others with it replaced by one.
          const Tensor crowded = logical_and(src_zero, logical_not(single));
          if (is_grad_enabled() && any(crowded).item<bool>()) {
            const std::vector<uint8_t> flag = crowded.to(DType::u8).to_vector<uint8_t>();
            const Tensor pos =
                arange(sv.numel(), TensorOptions(DType::i64, sv.device())).reshape(sv.shape());
            for (size_t p = 0; p < flag.size(); ++p) {
              if (!flag[p]) continue;
              const Tensor here = eq(pos, int64_t(p));
              const Tensor rp =
                  scatter_reduce(xv, dim, idx, where(here, 1.0, sv), "prod", include_self);
              gs = where(here, gather(g * rp, dim, idx), gs);
            }
          }
        }
        break;
      }
      case ScatterReduce::amax:
      case ScatterReduce::amin: {
        // Ties share the gradient evenly, as torch.
        const Tensor xv = sx.get(name), sv = ss.get(name), y = sy.get(name);
        Tensor self_hit = as_dtype(eq(xv, y), dt);
        if (!include_self) self_hit = zero_scattered(self_hit);
        const Tensor src_hit = as_dtype(eq(sv, gather(y, dim, idx)), dt);
        const Tensor n = scatter_add(self_hit, dim, idx, src_hit);
        const Tensor gn = g / where(eq(n, 0), 1.0, n);
        gx = self_hit * gn;
        gs = src_hit * gather(gn, dim, idx);
        break;
      }
    }
    return std::vector<Tensor>{gx_needed ? gx : Tensor(), gs_needed ? gs : Tensor()};
  });
}

void index_select(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out) {
  if (!needs_grad({&x}) || !is_floating(out.dtype())) return;
  SavedTensor si(index);
  const Shape xs = x.shape();
  const DType dt = x.dtype();
  record1("IndexSelectBackward", {x}, out, [si, xs, dt, dim](const Tensor& g) {
    return std::vector<Tensor>{
        index_add(zeros_of(xs, dt, g), dim, si.get("IndexSelectBackward"), g)};
  });
}

void index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, double alpha,
               const Tensor& out) {
  if (!needs_grad({&x, &src}) || !is_floating(out.dtype())) return;
  SavedTensor si(src.requires_grad() ? index : Tensor());
  const bool gs_needed = src.requires_grad();
  record1("IndexAddBackward", {x, src}, out, [si, dim, alpha, gs_needed](const Tensor& g) {
    Tensor gs;
    if (gs_needed) gs = ember::index_select(g, dim, si.get("IndexAddBackward")) * alpha;
    return std::vector<Tensor>{g, gs};
  });
}

void index_put(const Tensor& x, const Tensor& index, const Tensor& values, bool accumulate,
               const Tensor& out) {
  if (!needs_grad({&x, &values}) || !is_floating(out.dtype())) return;
  SavedTensor si(index);
  record1("IndexPutBackward", {x, values}, out, [si, accumulate](const Tensor& g) {
    const Tensor idx = si.get("IndexPutBackward");
    // Without accumulate the written rows lose their old value; every value gets the gradient
    // of the row it was written to, duplicates included (as torch).
    Tensor gx = g;
    if (!accumulate && g.numel() > 0 && idx.numel() > 0)
      gx = ember::scatter(g, 0, idx.unsqueeze(1).expand({idx.size(0), g.size(1)}), 0.0);
    return std::vector<Tensor>{gx, ember::index_select(g, 0, idx)};
  });
}

}  // namespace ember::autograd::rules
