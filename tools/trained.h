// A model trained by `ember train`, loaded back from its file (tools/infer.cpp): what `ember
// eval`, `ember predict` and `ember export` start from.
#pragma once
#include <memory>
#include <string>

#include "ember/device.h"
#include "ember/nn/module.h"
#include "image_data.h"

namespace ember::tools {

struct Trained {
  std::shared_ptr<nn::UnaryModule> model;
  std::string model_name, dataset;
  ImageData images;       // dataset "images": the recorded image folder
  std::string test_data;  // data_fingerprint of the test split it was trained with ("" unknown)
};

/// A Learner checkpoint (metadata format ember.checkpoint.v1, "model." tensors, the dataset and
/// model names in its user JSON) or a model file (safetensors with ember.dataset / ember.model
/// metadata), built as make_model's cnn or mlp on `device` (made the default device) in eval
/// mode. `dataset` overrides a dataset the file does not record ("" keeps it). `op`: the command,
/// the tag of its errors. Throws ember::Error for a file that is not such a model, another
/// dataset than the recorded one, or weights of the wrong shapes; warns on stderr when weights
/// are NaN or infinite.
Trained load_trained(const char* op, const std::string& path, const std::string& dataset,
                     const Device& device);

}  // namespace ember::tools
