// RMSprop (torch.optim.RMSprop, PyTorch 1.13 _single_tensor_rmsprop).
#include "ember/optim/rmsprop.h"

#include "ember/ops/elementwise.h"

namespace ember::optim {

std::vector<OptimizerOptions::Field> RMSpropOptions::fields() {
  return {{"lr", &lr_, lr_default},
          {"alpha", &alpha_, alpha_default},
          {"eps", &eps_, eps_default},
          {"weight_decay", &weight_decay_, weight_decay_default},
          {"momentum", &momentum_, momentum_default},
          {"centered", &centered_, centered_default},
          {"maximize", &maximize_, maximize_default}};
}

void RMSpropOptions::validate() const {
  EMBER_CHECK(lr() >= 0, "RMSprop", "Invalid learning rate: ", lr());
  EMBER_CHECK(eps() >= 0, "RMSprop", "Invalid epsilon value: ", eps());
  EMBER_CHECK(momentum() >= 0, "RMSprop", "Invalid momentum value: ", momentum());
  EMBER_CHECK(weight_decay() >= 0, "RMSprop", "Invalid weight_decay value: ", weight_decay());
  EMBER_CHECK(alpha() >= 0, "RMSprop", "Invalid alpha value: ", alpha());
}

RMSprop::RMSprop(std::vector<ParamGroup> groups, const RMSpropOptions& defaults)
    : Optimizer("RMSprop", std::move(groups), defaults.clone()) {}

void RMSprop::update(const std::vector<Tensor>& params, const OptimizerOptions& base) {
  const auto& o = static_cast<const RMSpropOptions&>(base);
  const double alpha = o.alpha();
  for (const Tensor& p0 : params) {
    Tensor p = p0;
    ParamState& st = state_of(p);
    if (st.buffers.find("square_avg") == st.buffers.end()) st.buffers["square_avg"] = zeros_like(p);
    if (o.momentum() > 0 && st.buffers.find("momentum_buffer") == st.buffers.end())
      st.buffers["momentum_buffer"] = zeros_like(p);
    if (o.centered() && st.buffers.find("grad_avg") == st.buffers.end())
      st.buffers["grad_avg"] = zeros_like(p);
    st.step += 1;
    Tensor grad = o.maximize() ? neg(p.grad()) : p.grad();
    if (o.weight_decay() != 0) grad = add(grad, p, o.weight_decay());
    Tensor square_avg = st.buffers["square_avg"];
    square_avg.mul_(alpha).add_(grad * grad, 1 - alpha);
    Tensor avg;
    if (o.centered()) {
      Tensor grad_avg = st.buffers["grad_avg"];
      grad_avg.mul_(alpha).add_(grad, 1 - alpha);
      avg = sqrt(sub(square_avg, grad_avg * grad_avg));
    } else {
      avg = sqrt(square_avg);
    }
    avg = avg + o.eps();
    if (o.momentum() > 0) {
      Tensor buf = st.buffers["momentum_buffer"];
      buf.mul_(o.momentum()).add_(grad / avg);
      p.add_(buf, -o.lr());
    } else {
      p.add_(grad / avg, -o.lr());
    }
  }
}

}  // namespace ember::optim
