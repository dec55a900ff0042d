// Loss functions as composites of public tensor ops (log_softmax, gather, where, sum).
// Formulas follow torch 1.13+ exactly, including how weight and ignore_index enter "mean".
#include "ember/nn/functional/loss.h"

#include "ember/nn/functional/activation.h"
#include "ember/ops/indexing.h"
#include "nn/functional/common.h"
#include "tensor/autocast.h"

namespace ember::nn::functional {

using detail::Reduction;
using ember::detail::cast;
using ember::detail::describe;

namespace {

// The promoted floating dtype of input and a floating target; throws for non-float input.
DType loss_dtype(const Tensor& input, const Tensor& target, const char* op) {
  ember::detail::check_defined(input, op);
  ember::detail::check_defined(target, op);
  ember::detail::check_same_device(input, target, op);
  const DType dt = ember::detail::result_type(input, target);
  if (!is_floating(dt))
    EMBER_FAIL(op, "expects floating-point input and target, got ", describe(input), " and ",
               describe(target));
  return dt;
}

// Pointwise losses: (input, target) broadcast and upcast; the result is cast back to `dt`.
std::pair<Tensor, Tensor> pointwise_args(const Tensor& input, const Tensor& target, DType dt,
                                         const char* op) {
  auto b = ember::detail::broadcast_all({input, target}, op);
  const DType c = detail::compute_dtype(dt);
  return {cast(b[0], c), cast(b[1], c)};
}

void check_same_shape(const Tensor& input, const Tensor& target, const char* op) {
  if (input.shape() != target.shape())
    EMBER_FAIL(op, "target size ", shape_str(target.shape()), " must be the same as input size ",
               shape_str(input.shape()));
}

// Class-index target checks shared by nll_loss and cross_entropy. Returns (valid mask,
// safe indices (ignored -> 0), weight per target (0 where ignored)), for input [N, C, ...].
struct Picked {
  Tensor valid, index, w;
};

Picked pick_targets(const Tensor& input, const Tensor& target, const Tensor& weight,
                    int64_t ignore_index, const char* op) {
  const int64_t c = input.size(1);
  Shape want = input.shape();
  want.erase(want.begin() + 1);
  if (target.shape() != want)
    EMBER_FAIL(op, "expected target of shape ", shape_str(want), " for input of shape ",
               shape_str(input.shape()), ", got ", shape_str(target.shape()));
  Tensor t = cast(target, DType::i64);
  Tensor valid = ne(t, ignore_index);
  Tensor bad = logical_and(valid, logical_or(lt(t, 0), ge(t, c)));
  if (t.numel()) {
    const std::string name = op;
    const Shape in_shape = input.shape();
    const Tensor any_bad = any(bad);
    ember::detail::check_device_data(t.device(), [=] {
      if (!any_bad.item<bool>()) return;
      const int64_t v = masked_select(t, bad).to_vector<int64_t>()[0];
      EMBER_FAIL(name.c_str(), "target ", v, " is out of bounds for ", c, " classes (input ",
                 shape_str(in_shape), ")");
    });
  }
  // Out-of-range targets (an error at the next sync on GPU devices) index class 0 meanwhile.
  Tensor index = where(logical_and(valid, logical_not(bad)), t,
                       ember::detail::scalar_to_tensor(0, DType::i64, t.device()));
  Tensor w;
  const DType ct = detail::compute_dtype(input.dtype());
  if (weight.defined())
    w = index_select(cast(weight, ct), 0, index.reshape({-1})).reshape(index.shape());
  else
    w = ones(index.shape(), {ct, input.device()});
  w = where(valid, w, ember::detail::scalar_to_tensor(0, ct, input.device()));
  return {valid, index, w};
}

void check_weight(const Tensor& weight, const Tensor& input, int64_t c, const char* op) {
  if (!weight.defined()) return;
  ember::detail::check_same_device(input, weight, op);
  if (weight.dim() != 1 || weight.numel() != c)
    EMBER_FAIL(op, "weight should be a [", c, "] tensor (one per class), got ",
               shape_str(weight.shape()));
}

// input [C] (unbatched) gets a batch dim of 1; returns whether it did.
bool batchify(Tensor& input, Tensor& target, bool class_target, const char* op) {
  if (input.dim() == 0) EMBER_FAIL(op, "input must have a class dim, got a 0-d tensor");
  if (input.dim() != 1) return false;
  if (class_target && target.dim() != 0)
    EMBER_FAIL(op, "expected a 0-d target for unbatched input of shape ", shape_str(input.shape()),
               ", got ", shape_str(target.shape()));
  input = input.unsqueeze(0);
  target = target.unsqueeze(0);
  return true;
}

// nll on upcast log-probabilities logp [N, C, ...]: the reduced loss (compute dtype).
Tensor nll_core(const Tensor& logp, const Picked& p, Reduction r) {
  Tensor picked = gather(logp, 1, p.index.unsqueeze(1)).squeeze(1);
  Tensor zero = ember::detail::scalar_to_tensor(0, logp.dtype(), logp.device());
  // where (not multiply) so that an ignored -inf log-probability gives 0, not NaN.
  Tensor loss = where(p.valid, -picked * p.w, zero);
  if (r == Reduction::none) return loss;
  if (r == Reduction::sum) return sum(loss);
  return sum(loss) / sum(p.w);
}

Shape class_bshape(int64_t rank, int64_t c) {
  Shape s(size_t(rank), 1);
  s[1] = c;
  return s;
}

/// Class-index targets are i64 (or u8), as torch 1.13 (which reports the others as "expected
/// scalar type Long but found Float"); a floating target that is not of input's shape
/// (probabilities) is a class-index target of the wrong dtype, not a shape mismatch.
void check_class_target(const Tensor& input, const Tensor& target, const char* op) {
  const DType t = target.dtype();
  if (t == DType::i64 || t == DType::u8) return;
  const char* fix = is_floating(t) ? "round and convert" : "convert";
  EMBER_FAIL(op, "class-index targets must be int64 (torch's Long), got a target of dtype ",
             dtype_name(t), " and shape ", shape_str(target.shape()), " for input of shape ",
             shape_str(input.shape()),
             is_floating(t) && std::string(op) == "cross_entropy"
                 ? " (class probabilities must have input's shape)"
                 : "",
             "; ", fix, " the labels with target.to(DType::i64)");
}

}  // namespace

Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                int64_t ignore_index, const std::string& reduction) {
  if (ember::detail::amp::Scope s{ember::detail::amp::Policy::f32, input})
    return nll_loss(s(input), target, s(weight), ignore_index, reduction);
  const char* op = "nll_loss";
  detail::check_float_input(input, op);
  ember::detail::check_defined(target, op);
  ember::detail::check_same_device(input, target, op);
  const Reduction r = detail::parse_reduction(reduction, op);
  check_class_target(input, target, op);
  Tensor x = input, t = target;
  const bool unbatched = batchify(x, t, true, op);
  check_weight(weight, x, x.size(1), op);
  Picked p = pick_targets(x, t, weight, ignore_index, op);
  Tensor out = nll_core(detail::upcast(x), p, r);
  if (unbatched && r == Reduction::none) out = out.squeeze(0);
  return cast(out, input.dtype());
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                     int64_t ignore_index, const std::string& reduction, double label_smoothing) {
  if (ember::detail::amp::Scope s{ember::detail::amp::Policy::f32, input})
    return cross_entropy(s(input), target, s(weight), ignore_index, reduction, label_smoothing);
  const char* op = "cross_entropy";
  detail::check_float_input(input, op);
  ember::detail::check_defined(target, op);
  ember::detail::check_same_device(input, target, op);
  const Reduction r = detail::parse_reduction(reduction, op);
  if (!(label_smoothing >= 0 && label_smoothing <= 1))
    EMBER_FAIL(op, "label_smoothing must be between 0.0 and 1.0, got ", label_smoothing);
  // As torch: a floating target of input's shape holds class probabilities; any other target
  // holds class indices.
  const bool prob_target = is_floating(target.dtype()) && target.shape() == input.shape();
  if (!prob_target) check_class_target(input, target, op);
  Tensor x = input, t = target;
  const bool unbatched = batchify(x, t, !prob_target, op);
  const int64_t c = x.size(1);
  check_weight(weight, x, c, op);
  const double e = label_smoothing;
  Tensor logp = log_softmax(detail::upcast(x), 1);
  const DType out_dtype = prob_target ? ember::detail::result_type(input, target) : input.dtype();
  Tensor w_b;  // weight as [1, C, 1, ...]
  if (weight.defined()) w_b = detail::upcast(weight).reshape(class_bshape(x.dim(), c));
  Tensor out;
  if (prob_target) {
    Tensor tp = detail::upcast(t);
    if (e > 0) tp = tp * (1 - e) + e / double(c);
    Tensor prod = logp * tp;
    if (w_b.defined()) prod = prod * w_b;
    Tensor loss = -sum(prod, {1});
    if (r == Reduction::none)
      out = loss;
    else if (r == Reduction::sum)
      out = sum(loss);
    else
      out = sum(loss) / (x.numel() ? double(x.numel() / c) : 0.0);  // 0/0: NaN, as torch
  } else {
    Picked p = pick_targets(x, t, weight, ignore_index, op);
    out = nll_core(logp, p, r);
    if (e > 0) {
      Tensor smooth = -sum(w_b.defined() ? logp * w_b : logp, {1});
      smooth = where(p.valid, smooth,
                     ember::detail::scalar_to_tensor(0, smooth.dtype(), smooth.device()));
      Tensor red = smooth;
      if (r == Reduction::sum) red = sum(smooth);
      if (r == Reduction::mean)  // torch normalizes by the weights of the non-ignored targets
        red = sum(smooth) / (weight.defined() ? sum(p.w) : sum(p.valid).to(smooth.dtype()));
      out = out * (1 - e) + red * (e / double(c));
    }
  }
  if (unbatched && r == Reduction::none) out = out.squeeze(0);
  return cast(out, out_dtype);
}

Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  if (ember::detail::amp::Scope s{ember::detail::amp::Policy::f32, input})
    return mse_loss(s(input), s(target), reduction);
  const DType dt = loss_dtype(input, target, "mse_loss");
  const Reduction r = detail::parse_reduction(reduction, "mse_loss");
  auto [x, t] = pointwise_args(input, target, dt, "mse_loss");
  Tensor d = x - t;
  return cast(detail::apply_reduction(d * d, r), dt);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  if (ember::detail::amp::Scope s{ember::detail::amp::Policy::f32, input})
    return l1_loss(s(input), s(target), reduction);
  const DType dt = loss_dtype(input, target, "l1_loss");
  const Reduction r = detail::parse_reduction(reduction, "l1_loss");
  auto [x, t] = pointwise_args(input, target, dt, "l1_loss");
  return cast(detail::apply_reduction(abs(x - t), r), dt);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, const std::string& reduction,
                  double delta) {
  if (ember::detail::amp::Scope s{ember::detail::amp::Policy::f32, input})
    return huber_loss(s(input), s(target), reduction, delta);
  const DType dt = loss_dtype(input, target, "huber_loss");
  const Reduction r = detail::parse_reduction(reduction, "huber_loss");
  if (!(delta > 0)) EMBER_FAIL("huber_loss", "delta must be positive, got ", delta);
  auto [x, t] = pointwise_args(input, target, dt, "huber_loss");
  Tensor a = abs(x - t);
  Tensor loss = where(lt(a, delta), a * a * 0.5, (a - 0.5 * delta) * delta);
  return cast(detail::apply_reduction(loss, r), dt);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction,
                      double beta) {
  if (ember::detail::amp::Scope s{ember::detail::amp::Policy::f32, input})
    return smooth_l1_loss(s(input), s(target), reduction, beta);
  const DType dt = loss_dtype(input, target, "smooth_l1_loss");
  const Reduction r = detail::parse_reduction(reduction, "smooth_l1_loss");
  if (!(beta >= 0)) EMBER_FAIL("smooth_l1_loss", "beta must be non-negative, got ", beta);
  auto [x, t] = pointwise_args(input, target, dt, "smooth_l1_loss");
  Tensor a = abs(x - t);
  Tensor loss = beta == 0 ? a : where(lt(a, beta), a * a * (0.5 / beta), a - 0.5 * beta);
  return cast(detail::apply_reduction(loss, r), dt);
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            const std::string& reduction) {
  if (ember::detail::amp::Scope s{ember::detail::amp::Policy::f32, input})
    return binary_cross_entropy(s(input), s(target), s(weight), reduction);
  const char* op = "binary_cross_entropy";
  const DType dt = loss_dtype(input, target, op);
  const Reduction r = detail::parse_reduction(reduction, op);
  check_same_shape(input, target, op);
  if (input.numel()) {
    const Tensor bad = any(logical_or(lt(input, 0), gt(input, 1)));
    const Shape in_shape = input.shape();
    ember::detail::check_device_data(input.device(), [=] {
      if (bad.item<bool>())
        EMBER_FAIL("binary_cross_entropy",
                   "all elements of input should be between 0 and 1 (input ", shape_str(in_shape),
                   ")");
    });
  }
  const DType c = detail::compute_dtype(dt);
  Tensor x = cast(input, c), t = cast(target, c);
  Tensor lx = clamp_min(log(x), -100), l1x = clamp_min(log1p(-x), -100);
  Tensor loss = -(t * lx + (1 - t) * l1x);
  if (weight.defined()) {
    ember::detail::check_same_device(input, weight, op);
    // The weight broadcasts to the target's shape (it may not enlarge it), as torch.
    if (broadcast_shapes(weight.shape(), input.shape(), op) != input.shape())
      EMBER_FAIL(op, "weight of shape ", shape_str(weight.shape()),
                 " does not broadcast to input shape ", shape_str(input.shape()));
    loss = loss * cast(weight, c);
  }
  return cast(detail::apply_reduction(loss, r), dt);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight, const std::string& reduction,
                                        const Tensor& pos_weight) {
  if (ember::detail::amp::Scope s{ember::detail::amp::Policy::f32, input})
    return binary_cross_entropy_with_logits(s(input), s(target), s(weight), reduction,
                                            s(pos_weight));
  const char* op = "binary_cross_entropy_with_logits";
  const DType dt = loss_dtype(input, target, op);
  const Reduction r = detail::parse_reduction(reduction, op);
  check_same_shape(input, target, op);
  const DType c = detail::compute_dtype(dt);
  Tensor x = cast(input, c), t = cast(target, c);
  Tensor ls = log_sigmoid(x);
  if (pos_weight.defined()) {
    ember::detail::check_same_device(input, pos_weight, op);
    ls = ls * ((cast(pos_weight, c) - 1) * t + 1);
  }
  Tensor loss = (1 - t) * x - ls;
  if (weight.defined()) {
    ember::detail::check_same_device(input, weight, op);
    loss = loss * cast(weight, c);
  }
  return cast(detail::apply_reduction(loss, r), dt);
}

Tensor kl_div(const Tensor& input, const Tensor& target, const std::string& reduction,
              bool log_target) {
  if (ember::detail::amp::Scope s{ember::detail::amp::Policy::f32, input})
    return kl_div(s(input), s(target), reduction, log_target);
  const char* op = "kl_div";
  const DType dt = loss_dtype(input, target, op);
  const Reduction r = detail::parse_reduction(reduction, op, true);
  auto [x, t] = pointwise_args(input, target, dt, op);
  Tensor loss;
  if (log_target) {
    loss = exp(t) * (t - x);
  } else {  // xlogy(t, t) - t * x: 0 * log 0 counts as 0
    Tensor zero = ember::detail::scalar_to_tensor(0, t.dtype(), t.device());
    loss = where(eq(t, 0), zero, t * log(t)) - t * x;
  }
  if (r == Reduction::batchmean)
    return cast(input.dim() ? sum(loss) / double(input.size(0)) : sum(loss), dt);
  return cast(detail::apply_reduction(loss, r), dt);
}

}  // namespace ember::nn::functional
