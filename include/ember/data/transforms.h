// Image transforms (as torchvision.transforms) for images [C, H, W]. Random ones draw from
// (seed, epoch, index) only, so a run is reproducible whatever the number of DataLoader workers.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "ember/data/dataset.h"

namespace ember::data {

/// A per-item tensor transform: fn(image, {index, epoch}).
using Transform = std::function<Tensor(const Tensor&, const ItemContext&)>;

/// Layout of an integer image given to ToTensor.
enum class ImageLayout : uint8_t { CHW, HWC };

/// u8 image -> f32 [C, H, W] in [0, 1] (value / 255), as torchvision.transforms.ToTensor.
/// Input u8 [H, W] (-> [1, H, W]), [C, H, W] (CHW, what load_image returns) or [H, W, C] (HWC).
/// Throws "[ToTensor] ..." for other dtypes or ranks.
class ToTensor {
 public:
  explicit ToTensor(ImageLayout layout = ImageLayout::CHW) : layout_(layout) {}
  Tensor operator()(const Tensor& image, const ItemContext& ctx = {}) const;

 private:
  ImageLayout layout_;
};

/// (x - mean[c]) / std[c] per channel of a floating image [C, H, W], as
/// torchvision.transforms.Normalize. mean/std have C entries (or one, used for every channel).
/// Returns f32 (f64 for f64 input). Throws for a zero std, wrong counts, or non-float input.
class Normalize {
 public:
  Normalize(std::vector<double> mean, std::vector<double> std);
  Tensor operator()(const Tensor& image, const ItemContext& ctx = {}) const;

 private:
  std::vector<double> mean_, std_;
};

/// Pads the last two dims by `padding` zeros on each side, then crops a random [height, width]
/// window (as torchvision.transforms.RandomCrop(size, padding) with fill 0). Input [..., H, W],
/// any dtype; the window's corner is drawn from (seed, epoch, index). Throws when the window is
/// larger than the padded image.
class RandomCrop {
 public:
  /// A rectangular window: RandomCrop(CropSize{height, width}, padding, seed).
  struct CropSize {
    int64_t height, width;
  };
  RandomCrop(CropSize size, int64_t padding = 0, uint64_t seed = 0);
  /// A square window.
  RandomCrop(int64_t size, int64_t padding = 0, uint64_t seed = 0)
      : RandomCrop(CropSize{size, size}, padding, seed) {}
  Tensor operator()(const Tensor& image, const ItemContext& ctx) const;

 private:
  int64_t h_, w_, pad_;
  uint64_t seed_;
};

/// Flips the last dim with probability p, drawn from (seed, epoch, index), as
/// torchvision.transforms.RandomHorizontalFlip. Input [..., W], any dtype. Throws unless 0<=p<=1.
class RandomHorizontalFlip {
 public:
  explicit RandomHorizontalFlip(double p = 0.5, uint64_t seed = 0);
  Tensor operator()(const Tensor& image, const ItemContext& ctx) const;

 private:
  double p_;
  uint64_t seed_;
};

/// Resizes an image [C, H, W] (u8 or floating) so that its shorter side is `size`, keeping the
/// aspect ratio (the longer side becomes floor(size * long / short), as torchvision.transforms.
/// Resize(size)). Shrinking averages the covered pixels (interpolate mode "area"), enlarging
/// interpolates bilinearly (align_corners false); u8 results are rounded and clamped to 0..255
/// (as torchvision on uint8 tensors). An image whose shorter side is already `size` is returned
/// as it is. Returns the input's dtype, on the host. Throws "[Resize] ..." for size < 1 or an
/// input that is not [C, H, W] with H, W >= 1.
class Resize {
 public:
  explicit Resize(int64_t size);
  Tensor operator()(const Tensor& image, const ItemContext& ctx = {}) const;

 private:
  int64_t size_;
};

/// Crops the central [height, width] window of an image [..., H, W] (any dtype), as
/// torchvision.transforms.CenterCrop: top = round((H - height) / 2), left = round((W - width)
/// / 2) (half to even). A side smaller than the window is first padded with zeros on both sides
/// (the extra one at the end), as torchvision. Throws "[CenterCrop] ..." for a size < 1.
class CenterCrop {
 public:
  CenterCrop(int64_t height, int64_t width);
  explicit CenterCrop(int64_t size) : CenterCrop(size, size) {}
  Tensor operator()(const Tensor& image, const ItemContext& ctx = {}) const;

 private:
  int64_t h_, w_;
};

/// The transforms one after another (as torchvision.transforms.Compose).
Transform compose(std::vector<Transform> transforms);

/// The Example dataset with `transform` applied to each item's data (targets unchanged).
std::shared_ptr<MapDataset<Example, Example>> map_data(DatasetPtr<Example> dataset,
                                                       Transform transform);

}  // namespace ember::data
