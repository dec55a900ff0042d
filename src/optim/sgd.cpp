// SGD (torch.optim.SGD, PyTorch 1.13 _single_tensor_sgd).
#include "ember/optim/sgd.h"

#include "ember/ops/elementwise.h"

namespace ember::optim {

std::vector<OptimizerOptions::Field> SGDOptions::fields() {
  return {{"lr", &lr_, lr_default},
          {"momentum", &momentum_, momentum_default},
          {"dampening", &dampening_, dampening_default},
          {"weight_decay", &weight_decay_, weight_decay_default},
          {"nesterov", &nesterov_, nesterov_default},
          {"maximize", &maximize_, maximize_default}};
}

void SGDOptions::validate() const {
  EMBER_CHECK(lr_.has_value(), "SGD", "lr is required (SGDOptions(lr))");
  EMBER_CHECK(lr() >= 0, "SGD", "Invalid learning rate: ", lr());
  EMBER_CHECK(momentum() >= 0, "SGD", "Invalid momentum value: ", momentum());
  EMBER_CHECK(weight_decay() >= 0, "SGD", "Invalid weight_decay value: ", weight_decay());
  EMBER_CHECK(!nesterov() || (momentum() > 0 && dampening() == 0), "SGD",
              "Nesterov momentum requires a momentum and zero dampening");
}

SGD::SGD(std::vector<ParamGroup> groups, const SGDOptions& defaults)
    : Optimizer("SGD", std::move(groups), defaults.clone()) {}

void SGD::update(const std::vector<Tensor>& params, const OptimizerOptions& base) {
  const auto& o = static_cast<const SGDOptions&>(base);
  for (const Tensor& p : params) {
    Tensor d_p = o.maximize() ? neg(p.grad()) : p.grad();
    if (o.weight_decay() != 0) d_p = add(d_p, p, o.weight_decay());
    if (o.momentum() != 0) {
      ParamState& st = state_of(p);
      auto it = st.buffers.find("momentum_buffer");
      Tensor buf;
      if (it == st.buffers.end()) {
        buf = d_p.clone();
        st.buffers["momentum_buffer"] = buf;
      } else {
        buf = it->second;
        buf.mul_(o.momentum()).add_(d_p, 1 - o.dampening());
      }
      d_p = o.nesterov() ? add(d_p, buf, o.momentum()) : buf;
    }
    Tensor(p).add_(d_p, -o.lr());
  }
}

}  // namespace ember::optim
