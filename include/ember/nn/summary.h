// nn::summary: a table of a model's layers with their output shapes and parameter counts, as
// torchinfo.summary / Keras model.summary():
//   std::cout << nn::summary(model, torch_like_input);
//   ==============================================================
//   Layer (type)          Output Shape        Param #
//   ==============================================================
//   Sequential            [2, 2]              --
//     (0): Linear         [2, 8]              40
//     (1): ReLU           [2, 8]              --
//     (2): Linear         [2, 2]              18
//   ==============================================================
//   Total params: 58
//   Trainable params: 58
//   Non-trainable params: 0
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "ember/nn/module.h"
#include "ember/nn/modules/any.h"

namespace ember::nn {

/// One module of the model, in named_modules order (depth first, a shared module once).
struct SummaryRow {
  std::string name;  // path from the model ("" for the model, "layers.0.self_attn")
  std::string type;  // type_name()
  int64_t depth = 0;
  /// Shape of the module's output tensor (its first output for a tuple) at its last call; empty
  /// when `called` is false (a module never called through operator(), AnyModule or Sequential).
  Shape output_shape;
  bool called = false;
  int64_t params = 0;  // its own parameters' elements (recurse = false)
};

/// What nn::summary returns; str() (or operator<<) gives the table.
struct Summary {
  std::vector<SummaryRow> rows;
  int64_t total_params = 0;      // model->num_parameters()
  int64_t trainable_params = 0;  // model->num_parameters(true)
  std::string str() const;
};
std::ostream& operator<<(std::ostream& os, const Summary& s);

namespace detail {
Summary summarize(const std::shared_ptr<Module>& model, const std::function<void()>& run);
}

/// Runs model's forward once on `inputs` (passed as AnyModule::forward passes them: a mask,
/// a target...) in eval mode without gradients, recording each module's output through forward
/// hooks, then restores every module's training mode and removes the hooks. Throws what forward
/// throws, and ember::Error for a null model.
template <typename M, typename... Args>
Summary summary(const std::shared_ptr<M>& model, Args&&... inputs) {
  AnyModule any(model);
  return detail::summarize(
      any.ptr(), [&] { any.any_forward({detail::any_arg(std::forward<Args>(inputs))...}); });
}

}  // namespace ember::nn
