// The user's own images for `ember train --data DIR` (as torchvision's ImageFolder with
// Resize + CenterCrop + ToTensor + Normalize), and what a model trained on them records, so that
// `ember eval` and `ember predict` read images the same way.
//
// Layouts: DIR/<class>/*.png|jpg|jpeg (classes are the sub-folders, sorted by name; label =
// position), split per class into training and validation images (a stratified split, seeded);
// or DIR/train/<class>/... with DIR/test/<class>/... (or DIR/val/...), the test folder then
// being the validation set (it must have the same classes). Images of any size are resized so
// that their shorter side is the image size and the centre square is cropped.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ember/data/dataset.h"
#include "models.h"

namespace ember::tools {

/// The largest image size a model file may record (the cnn's fc1 then has about 2e13 inputs,
/// so the weight-shape check of eval / predict refuses a file before anything is allocated).
inline constexpr int64_t kMaxImageSize = 1 << 20;

/// An image folder and how its images become model inputs.
struct ImageData {
  std::string dir;                   ///< the folder given to --data
  std::vector<std::string> classes;  ///< sorted class folder names (label = position)
  int64_t channels = 0;              ///< 1 or 3; 0: 1 when every image is grayscale, else 3
  int64_t image_size = 0;            ///< S; 0: 28 for grayscale, 32 for colour images
  /// Per channel, of the training images scaled to [0, 1]; empty: computed when loading.
  std::vector<double> mean, std;
  double valid_fraction = 0.2;  ///< the validation share of each class (without a test folder)
  uint64_t seed = 0;            ///< seeds the split
  std::string test_folder;      ///< "test" or "val" when DIR has one, else ""

  nlohmann::json to_json() const;
  /// Throws ember::Error("[images] <where>: ...") for a record that is not one of to_json(),
  /// naming the field that is out of range (ember/checked.h): channels not 1 or 3, image_size
  /// not an integer in [1, kMaxImageSize], a mean outside [0, 1], a std outside (0, 1], a
  /// valid_fraction outside (0, 1), a seed that is not an unsigned 64-bit integer.
  static ImageData from_json(const nlohmann::json& j, const std::string& where);
  ModelShape model_shape() const {
    return {channels, image_size, static_cast<int64_t>(classes.size())};
  }
};

/// The training and validation images as f32 [C, S, S] normalized examples with i64 labels, in a
/// seeded shuffled order (so --limit-train / --limit-test take a sample of every class), and
/// `data` with channels, image_size, classes, test_folder and (when they were empty) mean/std
/// filled in. Images are decoded once, into u8 memory (N * C * S * S bytes), on `workers`
/// threads. with_train false skips decoding the training images (then mean/std must be given).
struct ImageSplits {
  data::DatasetPtr<data::Example> train, valid;
  ImageData data;
};
/// Throws ember::Error naming the folder or file for: a missing folder, no class folders, a
/// class folder without images, a single class, a test folder whose classes differ, a class
/// too small to split, a corrupt or unsupported image; and for a valid_fraction not in (0, 1),
/// channels not in {0, 1, 3} or an image_size < 1.
ImageSplits load_image_folder(ImageData data, bool with_train, int64_t workers);

/// One image file read as the training images were: f32 [1, C, S, S]. Throws for a missing,
/// corrupt or unsupported file.
Tensor image_input(const std::string& path, const ImageData& data);

}  // namespace ember::tools
