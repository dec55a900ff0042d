// Adam and AdamW (torch.optim.Adam / AdamW, PyTorch 1.13 _single_tensor_adam(w)).
#include "ember/optim/adam.h"

#include <cmath>

#include "ember/ops/elementwise.h"

namespace ember::optim {

namespace {

template <typename Opts>
void validate_adam(const Opts& o, const char* op) {
  EMBER_CHECK(o.lr() >= 0, op, "Invalid learning rate: ", o.lr());
  EMBER_CHECK(o.eps() >= 0, op, "Invalid epsilon value: ", o.eps());
  EMBER_CHECK(o.beta1() >= 0 && o.beta1() < 1, op,
              "Invalid beta parameter at index 0: ", o.beta1());
  EMBER_CHECK(o.beta2() >= 0 && o.beta2() < 1, op,
              "Invalid beta parameter at index 1: ", o.beta2());
  EMBER_CHECK(o.weight_decay() >= 0, op, "Invalid weight_decay value: ", o.weight_decay());
}

// One Adam/AdamW step over `params`; `decoupled` selects AdamW's weight decay.
template <typename Opts>
void adam_update(const std::vector<Tensor>& params, const Opts& o, bool decoupled,
                 const std::function<ParamState&(const Tensor&)>& state_of) {
  const double lr = o.lr(), b1 = o.beta1(), b2 = o.beta2(), wd = o.weight_decay();
  for (const Tensor& p0 : params) {
    Tensor p = p0;
    Tensor grad = o.maximize() ? neg(p.grad()) : p.grad();
    ParamState& st = state_of(p);
    if (st.buffers.find("exp_avg") == st.buffers.end()) {
      st.buffers["exp_avg"] = zeros_like(p);
      st.buffers["exp_avg_sq"] = zeros_like(p);
    }
    if (o.amsgrad() && st.buffers.find("max_exp_avg_sq") == st.buffers.end())
      st.buffers["max_exp_avg_sq"] = zeros_like(p);
    Tensor exp_avg = st.buffers["exp_avg"];
    Tensor exp_avg_sq = st.buffers["exp_avg_sq"];
    st.step += 1;
    if (decoupled) {
      p.mul_(1 - lr * wd);
    } else if (wd != 0) {
      grad = add(grad, p, wd);
    }
    exp_avg.mul_(b1).add_(grad, 1 - b1);
    exp_avg_sq.mul_(b2).add_(grad * grad, 1 - b2);
    const double bias_correction1 = 1 - std::pow(b1, st.step);
    const double bias_correction2 = 1 - std::pow(b2, st.step);
    const double step_size = lr / bias_correction1;
    const double bc2_sqrt = std::sqrt(bias_correction2);
    Tensor denom;
    if (o.amsgrad()) {
      Tensor max_sq = st.buffers["max_exp_avg_sq"];
      max_sq.copy_(maximum(max_sq, exp_avg_sq));
      denom = sqrt(max_sq) / bc2_sqrt + o.eps();
    } else {
      denom = sqrt(exp_avg_sq) / bc2_sqrt + o.eps();
    }
    p.add_(exp_avg / denom, -step_size);
  }
}

}  // namespace

std::vector<OptimizerOptions::Field> AdamOptions::fields() {
  return {{"lr", &lr_, lr_default},
          {"beta1", &beta1_, beta1_default},
          {"beta2", &beta2_, beta2_default},
          {"eps", &eps_, eps_default},
          {"weight_decay", &weight_decay_, weight_decay_default},
          {"amsgrad", &amsgrad_, amsgrad_default},
          {"maximize", &maximize_, maximize_default}};
}

std::vector<OptimizerOptions::Field> AdamWOptions::fields() {
  return {{"lr", &lr_, lr_default},
          {"beta1", &beta1_, beta1_default},
          {"beta2", &beta2_, beta2_default},
          {"eps", &eps_, eps_default},
          {"weight_decay", &weight_decay_, weight_decay_default},
          {"amsgrad", &amsgrad_, amsgrad_default},
          {"maximize", &maximize_, maximize_default}};
}

void AdamOptions::validate() const { validate_adam(*this, "Adam"); }
void AdamWOptions::validate() const { validate_adam(*this, "AdamW"); }

Adam::Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults)
    : Optimizer("Adam", std::move(groups), defaults.clone()) {}
AdamW::AdamW(std::vector<ParamGroup> groups, const AdamWOptions& defaults)
    : Optimizer("AdamW", std::move(groups), defaults.clone()) {}

void Adam::update(const std::vector<Tensor>& params, const OptimizerOptions& o) {
  adam_update(params, static_cast<const AdamOptions&>(o), false,
              [this](const Tensor& p) -> ParamState& { return state_of(p); });
}

void AdamW::update(const std::vector<Tensor>& params, const OptimizerOptions& o) {
  adam_update(params, static_cast<const AdamWOptions&>(o), true,
              [this](const Tensor& p) -> ParamState& { return state_of(p); });
}

}  // namespace ember::optim
