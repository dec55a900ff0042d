#include "ember/nn/summary.h"

#include <algorithm>
#include <sstream>

#include "ember/autograd.h"
#include "tensor/internal.h"

namespace ember::nn {

namespace detail {
Summary summarize(const std::shared_ptr<Module>& model, const std::function<void()>& run) {
  if (!model) EMBER_FAIL("summary", "the model is null");
  auto modules = model->named_modules();
  Summary s;
  std::vector<bool> training;
  std::vector<RemovableHandle> handles;
  for (size_t i = 0; i < modules.size(); ++i) {
    const auto& [name, m] = modules[i];
    SummaryRow row;
    row.name = name;
    row.type = m->type_name();
    row.depth = name.empty() ? 0 : 1 + int64_t(std::count(name.begin(), name.end(), '.'));
    for (const Tensor& p : m->parameters(false)) row.params += p.numel();
    s.rows.push_back(row);
    training.push_back(m->is_training());
    handles.push_back(
        m->register_forward_hook([&s, i](Module&, const std::vector<Tensor>&, const Tensor& out) {
          s.rows[i].output_shape = out.shape();
          s.rows[i].called = true;
        }));
  }
  struct Restore {  // on return and on a throw from forward
    std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules;
    std::vector<bool>& training;
    std::vector<RemovableHandle>& handles;
    ~Restore() {
      for (auto& h : handles) h.remove();
      // Parents before children, so each module ends in its own mode.
      for (size_t i = 0; i < modules.size(); ++i) modules[i].second->train(training[i]);
    }
  } restore{modules, training, handles};
  model->eval();
  {
    NoGradGuard no_grad;
    run();
  }
  s.total_params = model->num_parameters();
  s.trainable_params = model->num_parameters(true);
  return s;
}
}  // namespace detail

std::string Summary::str() const {
  std::vector<std::string> names, shapes, params;
  size_t w0 = std::string("Layer (type)").size(), w1 = std::string("Output Shape").size();
  for (const SummaryRow& r : rows) {
    std::string leaf = r.name.substr(r.name.find_last_of('.') + 1);
    names.push_back(std::string(2 * size_t(r.depth), ' ') +
                    (r.name.empty() ? r.type : "(" + leaf + "): " + r.type));
    shapes.push_back(r.called ? shape_str(r.output_shape) : "--");
    params.push_back(r.params ? std::to_string(r.params) : "--");
    w0 = std::max(w0, names.back().size());
    w1 = std::max(w1, shapes.back().size());
  }
  w0 += 4;
  w1 += 4;
  const std::string rule(w0 + w1 + 12, '=');
  auto pad = [](const std::string& t, size_t w) { return t + std::string(w - t.size(), ' '); };
  std::ostringstream os;
  os << rule << '\n'
     << pad("Layer (type)", w0) << pad("Output Shape", w1) << "Param #\n"
     << rule << '\n';
  for (size_t i = 0; i < rows.size(); ++i)
    os << pad(names[i], w0) << pad(shapes[i], w1) << params[i] << '\n';
  os << rule << '\n'
     << "Total params: " << total_params << '\n'
     << "Trainable params: " << trainable_params << '\n'
     << "Non-trainable params: " << total_params - trainable_params << '\n';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Summary& s) { return os << s.str(); }

}  // namespace ember::nn
