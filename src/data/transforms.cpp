// Image transforms: ToTensor, Normalize, RandomCrop, RandomHorizontalFlip, Resize, CenterCrop,
// compose, map_data.
#include "ember/data/transforms.h"

#include <cmath>
#include <cstring>

#include "ember/autograd.h"
#include "ember/nn/functional/interpolate.h"
#include "ember/ops/elementwise.h"

#include "data/random.h"

namespace ember::data {
namespace {

// Salts so that transforms given the same seed still draw independent numbers.
constexpr uint64_t kCropSalt = 0x63726f70ull;  // "crop"
constexpr uint64_t kFlipSalt = 0x666c6970ull;  // "flip"

void check_image(const Tensor& t, const char* op, int64_t min_rank) {
  if (!t.defined()) EMBER_FAIL(op, "image is undefined");
  if (t.dim() < min_rank)
    EMBER_FAIL(op, "expected an image with at least ", min_rank, " dims, got ",
               dtype_name(t.dtype()), " ", shape_str(t.shape()));
}

// A contiguous host copy (or t itself when it already is one).
Tensor host(const Tensor& t) {
  return (t.device().is_host() ? t : t.to(Device::cpu())).contiguous();
}
Tensor back(const Tensor& out, const Tensor& like) {
  return out.device() == like.device() ? out : out.to(like.device());
}

}  // namespace

Tensor ToTensor::operator()(const Tensor& image, const ItemContext&) const {
  check_image(image, "ToTensor", 2);
  if (image.dtype() != DType::u8 || image.dim() > 3)
    EMBER_FAIL("ToTensor", "expected a uint8 image [H, W], [C, H, W] or [H, W, C], got ",
               dtype_name(image.dtype()), " ", shape_str(image.shape()));
  Tensor x = image.dim() == 2              ? image.unsqueeze(0)
             : layout_ == ImageLayout::HWC ? image.permute({2, 0, 1})
                                           : image;
  x = host(x);
  Tensor out = empty(x.shape(), TensorOptions(DType::f32, x.device()));
  const uint8_t* src = static_cast<uint8_t*>(x.raw_data());
  float* dst = static_cast<float*>(out.raw_data());
  for (int64_t i = 0, n = x.numel(); i < n; ++i) dst[i] = float(src[i]) / 255.0f;
  return back(out, image);
}

Normalize::Normalize(std::vector<double> mean, std::vector<double> std)
    : mean_(std::move(mean)), std_(std::move(std)) {
  if (mean_.empty() || mean_.size() != std_.size())
    EMBER_FAIL("Normalize", "mean and std need the same, non-zero number of entries (got ",
               mean_.size(), " and ", std_.size(), ")");
  for (double s : std_)
    if (s == 0 || !std::isfinite(s)) EMBER_FAIL("Normalize", "std must be non-zero, got ", s);
}

Tensor Normalize::operator()(const Tensor& image, const ItemContext&) const {
  check_image(image, "Normalize", 3);
  if (image.dim() != 3 || !is_floating(image.dtype()))
    EMBER_FAIL("Normalize", "expected a floating-point image [C, H, W], got ",
               dtype_name(image.dtype()), " ", shape_str(image.shape()));
  const int64_t c = image.size(0);
  if (mean_.size() != 1 && int64_t(mean_.size()) != c)
    EMBER_FAIL("Normalize", mean_.size(), " means/stds for an image with ", c, " channels ",
               shape_str(image.shape()));
  const DType dt = image.dtype() == DType::f64 ? DType::f64 : DType::f32;
  Tensor x = host(image.to(dt));
  Tensor out = empty(x.shape(), TensorOptions(dt, x.device()));
  const int64_t plane = image.size(1) * image.size(2);
  for (int64_t ch = 0; ch < c; ++ch) {
    const size_t k = mean_.size() == 1 ? 0 : size_t(ch);
    const double m = mean_[k], inv = 1.0 / std_[k];
    if (dt == DType::f64) {
      const double* s = static_cast<double*>(x.raw_data()) + ch * plane;
      double* d = static_cast<double*>(out.raw_data()) + ch * plane;
      for (int64_t i = 0; i < plane; ++i) d[i] = (s[i] - m) * inv;
    } else {
      const float* s = static_cast<float*>(x.raw_data()) + ch * plane;
      float* d = static_cast<float*>(out.raw_data()) + ch * plane;
      for (int64_t i = 0; i < plane; ++i) d[i] = float((double(s[i]) - m) * inv);
    }
  }
  return back(out, image);
}

RandomCrop::RandomCrop(CropSize size, int64_t padding, uint64_t seed)
    : h_(size.height), w_(size.width), pad_(padding), seed_(seed) {
  if (h_ < 1 || w_ < 1 || pad_ < 0)
    EMBER_FAIL("RandomCrop", "size must be >= 1 and padding >= 0, got size [", h_, ", ", w_,
               "] padding ", pad_);
}

Tensor RandomCrop::operator()(const Tensor& image, const ItemContext& ctx) const {
  check_image(image, "RandomCrop", 2);
  const int64_t H = image.size(-2), W = image.size(-1);
  const int64_t ph = H + 2 * pad_, pw = W + 2 * pad_;
  if (h_ > ph || w_ > pw)
    EMBER_FAIL("RandomCrop", "crop [", h_, ", ", w_, "] is larger than the padded image [", ph,
               ", ", pw, "] (image ", shape_str(image.shape()), ", padding ", pad_, ")");
  detail::Stream rng(seed_ ^ kCropSalt, uint64_t(ctx.epoch), uint64_t(ctx.index));
  const int64_t top = int64_t(rng.below(uint64_t(ph - h_ + 1)));
  const int64_t left = int64_t(rng.below(uint64_t(pw - w_ + 1)));
  Tensor x = host(image);
  Shape shape = x.shape();
  shape[shape.size() - 2] = h_;
  shape[shape.size() - 1] = w_;
  Tensor out = zeros(shape, TensorOptions(x.dtype(), x.device()));
  const int64_t es = x.element_size(), planes = H * W == 0 ? 0 : x.numel() / (H * W);
  const auto* src = static_cast<const unsigned char*>(x.raw_data());
  auto* dst = static_cast<unsigned char*>(out.raw_data());
  // Output column range that falls inside the source image (the rest stays zero padding).
  const int64_t x0 = std::max<int64_t>(0, pad_ - left), x1 = std::min(w_, pad_ + W - left);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t y = 0; y < h_; ++y) {
      const int64_t sy = top + y - pad_;
      if (sy < 0 || sy >= H || x1 <= x0) continue;
      std::memcpy(dst + ((p * h_ + y) * w_ + x0) * es,
                  src + ((p * H + sy) * W + (left + x0 - pad_)) * es, size_t((x1 - x0) * es));
    }
  return back(out, image);
}

RandomHorizontalFlip::RandomHorizontalFlip(double p, uint64_t seed) : p_(p), seed_(seed) {
  if (!(p >= 0 && p <= 1)) EMBER_FAIL("RandomHorizontalFlip", "p must be in [0, 1], got ", p);
}

Tensor RandomHorizontalFlip::operator()(const Tensor& image, const ItemContext& ctx) const {
  check_image(image, "RandomHorizontalFlip", 1);
  detail::Stream rng(seed_ ^ kFlipSalt, uint64_t(ctx.epoch), uint64_t(ctx.index));
  if (!(rng.uniform() < p_)) return image;
  Tensor x = host(image);
  Tensor out = empty(x.shape(), TensorOptions(x.dtype(), x.device()));
  const int64_t W = x.size(-1), es = x.element_size(), rows = W == 0 ? 0 : x.numel() / W;
  const auto* src = static_cast<const unsigned char*>(x.raw_data());
  auto* dst = static_cast<unsigned char*>(out.raw_data());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < W; ++c)
      std::memcpy(dst + (r * W + c) * es, src + (r * W + W - 1 - c) * es, size_t(es));
  return back(out, image);
}

Resize::Resize(int64_t size) : size_(size) {
  if (size < 1) EMBER_FAIL("Resize", "size must be >= 1, got ", size);
}

Tensor Resize::operator()(const Tensor& image, const ItemContext&) const {
  check_image(image, "Resize", 3);
  if (image.dim() != 3 || image.size(1) < 1 || image.size(2) < 1 ||
      !(image.dtype() == DType::u8 || is_floating(image.dtype())))
    EMBER_FAIL("Resize", "expected a uint8 or floating-point image [C, H, W] with H, W >= 1, got ",
               dtype_name(image.dtype()), " ", shape_str(image.shape()));
  const int64_t h = image.size(1), w = image.size(2);
  const int64_t shorter = std::min(h, w), longer = std::max(h, w);
  // As torchvision: int(size * long / short), in double.
  const auto new_long = int64_t(double(size_ * longer) / double(shorter));
  const int64_t oh = h <= w ? size_ : new_long, ow = h <= w ? new_long : size_;
  if (oh == h && ow == w) return image;
  NoGradGuard no_grad;
  const bool u8 = image.dtype() == DType::u8;
  Tensor x = host(image);
  x = (u8 ? x.to(DType::f32) : x).unsqueeze(0);
  const bool shrink = oh <= h && ow <= w;
  Tensor y = nn::functional::interpolate(x, {oh, ow}, {}, shrink ? "area" : "bilinear")[0];
  if (u8) y = clamp(round(y), 0.0, 255.0).to(DType::u8);
  return y.contiguous();
}

CenterCrop::CenterCrop(int64_t height, int64_t width) : h_(height), w_(width) {
  if (h_ < 1 || w_ < 1) EMBER_FAIL("CenterCrop", "size must be >= 1, got [", h_, ", ", w_, "]");
}

Tensor CenterCrop::operator()(const Tensor& image, const ItemContext&) const {
  check_image(image, "CenterCrop", 2);
  const int64_t H = image.size(-2), W = image.size(-1);
  if (H == h_ && W == w_) return image;
  // Where the source's row 0 / column 0 lands in the output (negative: cropped away); padding
  // puts floor(extra / 2) before, as torchvision; cropping starts at round((S - s) / 2).
  auto offset = [](int64_t src, int64_t dst) -> int64_t {
    if (dst > src) return (dst - src) / 2;
    return -int64_t(std::nearbyint(double(src - dst) / 2.0));
  };
  const int64_t oy = offset(H, h_), ox = offset(W, w_);
  Tensor x = host(image);
  Shape shape = x.shape();
  shape[shape.size() - 2] = h_;
  shape[shape.size() - 1] = w_;
  Tensor out = zeros(shape, TensorOptions(x.dtype(), x.device()));
  const int64_t es = x.element_size(), planes = H * W == 0 ? 0 : x.numel() / (H * W);
  const auto* src = static_cast<const unsigned char*>(x.raw_data());
  auto* dst = static_cast<unsigned char*>(out.raw_data());
  const int64_t x0 = std::max<int64_t>(0, ox), x1 = std::min(w_, ox + W);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t y = 0; y < h_; ++y) {
      const int64_t sy = y - oy;
      if (sy < 0 || sy >= H || x1 <= x0) continue;
      std::memcpy(dst + ((p * h_ + y) * w_ + x0) * es, src + ((p * H + sy) * W + (x0 - ox)) * es,
                  size_t((x1 - x0) * es));
    }
  return back(out, image);
}

Transform compose(std::vector<Transform> transforms) {
  for (const auto& t : transforms)
    if (!t) EMBER_FAIL("compose", "got an empty transform");
  return [ts = std::move(transforms)](const Tensor& x, const ItemContext& ctx) {
    Tensor y = x;
    for (const auto& t : ts) y = t(y, ctx);
    return y;
  };
}

std::shared_ptr<MapDataset<Example, Example>> map_data(DatasetPtr<Example> dataset,
                                                       Transform transform) {
  if (!transform) EMBER_FAIL("map_data", "got an empty transform");
  return std::make_shared<MapDataset<Example, Example>>(
      std::move(dataset), [t = std::move(transform)](Example e, const ItemContext& ctx) {
        return Example{t(e.data, ctx), std::move(e.target)};
      });
}

}  // namespace ember::data
