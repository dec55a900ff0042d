// Adagrad (torch.optim.Adagrad, PyTorch 1.13 _single_tensor_adagrad, dense gradients).
#include "ember/optim/adagrad.h"

#include "ember/ops/elementwise.h"

namespace ember::optim {

std::vector<OptimizerOptions::Field> AdagradOptions::fields() {
  return {
      {"lr", &lr_, lr_default},
      {"lr_decay", &lr_decay_, lr_decay_default},
      {"weight_decay", &weight_decay_, weight_decay_default},
      {"initial_accumulator_value", &initial_accumulator_value_, initial_accumulator_value_default},
      {"eps", &eps_, eps_default},
      {"maximize", &maximize_, maximize_default}};
}

void AdagradOptions::validate() const {
  EMBER_CHECK(lr() >= 0, "Adagrad", "Invalid learning rate: ", lr());
  EMBER_CHECK(lr_decay() >= 0, "Adagrad", "Invalid lr_decay value: ", lr_decay());
  EMBER_CHECK(weight_decay() >= 0, "Adagrad", "Invalid weight_decay value: ", weight_decay());
  EMBER_CHECK(initial_accumulator_value() >= 0, "Adagrad",
              "Invalid initial_accumulator_value value: ", initial_accumulator_value());
  EMBER_CHECK(eps() >= 0, "Adagrad", "Invalid epsilon value: ", eps());
}

Adagrad::Adagrad(std::vector<ParamGroup> groups, const AdagradOptions& defaults)
    : Optimizer("Adagrad", std::move(groups), defaults.clone()) {}

void Adagrad::update(const std::vector<Tensor>& params, const OptimizerOptions& base) {
  const auto& o = static_cast<const AdagradOptions&>(base);
  for (const Tensor& p0 : params) {
    Tensor p = p0;
    ParamState& st = state_of(p);
    // torch fills the accumulator at construction; creating it on first use is equivalent.
    if (st.buffers.find("sum") == st.buffers.end())
      st.buffers["sum"] = full_like(p, o.initial_accumulator_value());
    st.step += 1;
    Tensor grad = o.maximize() ? neg(p.grad()) : p.grad();
    if (o.weight_decay() != 0) grad = add(grad, p, o.weight_decay());
    const double clr = o.lr() / (1 + (st.step - 1) * o.lr_decay());
    Tensor sum = st.buffers["sum"];
    sum.add_(grad * grad);
    p.add_(grad / (sqrt(sum) + o.eps()), -clr);
  }
}

}  // namespace ember::optim
