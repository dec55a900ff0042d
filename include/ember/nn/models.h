// The image classifiers the `ember` command trains, in the library so that every build (the
// browser's included) can rebuild a trained model from its weights.
//   cnn: conv 1->32 3x3, relu, conv 32->64 3x3, relu, maxpool 2, flatten, fc 9216->128, relu,
//        fc 128->10 (no padding: 28 -> 26 -> 24 -> 12), the Keras/PyTorch MNIST example net.
//   mlp: 784-256-128-10 with ReLU.
// Both take f32 [N, 1, 28, 28] and return logits [N, 10] for MNIST; for other images they take
// [N, C, S, S] and return [N, classes] (ModelShape): the cnn's fc1 then has
// 64 * ((S - 4) / 2)^2 inputs, the mlp's fc1 C * S * S.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ember/nn/module.h"
#include "ember/nn/modules/container.h"
#include "ember/nn/modules/conv.h"
#include "ember/nn/modules/linear.h"

namespace ember::nn {

/// The input and output sizes of a model: images [N, channels, image_size, image_size] ->
/// logits [N, classes]. The default is MNIST's.
struct ModelShape {
  int64_t channels = 1, image_size = 28, classes = 10;
};

// Both are Sequentials of named layers (their state_dict keys: conv1.weight, fc2.bias...), so
// ember::onnx::save exports them as any Sequential.
class Cnn : public Sequential {
 public:
  explicit Cnn(const ModelShape& shape = {});

  std::shared_ptr<Conv2d> conv1, conv2;
  std::shared_ptr<Linear> fc1, fc2;
};

class Mlp : public Sequential {
 public:
  explicit Mlp(const ModelShape& shape = {});

  std::shared_ptr<Linear> fc1, fc2, fc3;
};

/// "cnn" or "mlp" for `shape`, f32 parameters on the default device. Throws ember::Error for
/// another name, or a shape the model cannot take (cnn: image_size < 6; any: a size or count < 1).
std::shared_ptr<UnaryModule> make_model(const std::string& name, const ModelShape& shape = {});
/// The model name whose parameter names `keys` are ("cnn" / "mlp"), or "" when neither.
std::string model_from_keys(const std::vector<std::string>& keys);

/// A model's name and shape as read from its weights.
struct ModelSpec {
  std::string name;  ///< "cnn" or "mlp"
  ModelShape shape;
};
/// Which make_model(name, shape) made `weights` (a state_dict of a Cnn or Mlp): the name from
/// the keys; channels from conv1.weight [32, C, 3, 3] (cnn) or fc1.weight [256, C*S*S] (mlp:
/// C = 1 when C*S*S is a square, else 3); the image size from fc1.weight (cnn:
/// 64 * ((S - 4) / 2)^2 inputs give the even S); classes from the last layer's rows. Throws
/// ember::Error("[model_from_state_dict] ...") naming the key and its shape when the keys are
/// neither model's or a shape is not one make_model creates.
ModelSpec infer_model_spec(const StateDict& weights);
/// make_model(infer_model_spec(weights)) with the weights loaded (strict: every name, shape and
/// dtype), on the default device, in eval mode. Throws ember::Error as infer_model_spec, or
/// load_state_dict's error for a missing, extra or mismatched tensor.
std::shared_ptr<UnaryModule> model_from_state_dict(const StateDict& weights);

}  // namespace ember::nn
