// `ember train --data DIR`: an image folder split, decoded, resized and normalized (image_data.h).
#include "image_data.h"

#include "commands.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>

#include "ember/checked.h"
#include "ember/data/dataloader.h"
#include "ember/data/io.h"
#include "ember/data/transforms.h"
#include "ember/error.h"
#include "ember/ops/layout.h"

namespace ember::tools {

namespace fs = std::filesystem;

namespace {

// Stream salts of data::permutation: the per-class split and the order of each part.
constexpr uint64_t kSplitStream = 0x73706c6974000000ull;  // "split"
constexpr uint64_t kOrderStream = 0x6f72646572000000ull;  // "order"

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "'" : ", '") + x + "'";
  return s;
}

// Decodes `indices` of `folder` (resized, centre-cropped) into u8 [N, C, S, S] and i64 [N].
data::TensorDataset decode(const std::shared_ptr<data::ImageFolder>& folder,
                           std::vector<int64_t> indices, int64_t size, int64_t workers) {
  auto subset = std::make_shared<data::Subset<data::Example>>(folder, std::move(indices));
  auto sized = data::map_data(subset, data::compose({data::Resize(size), data::CenterCrop(size)}));
  data::DataLoaderOptions lo;
  lo.batch_size = 64;
  lo.num_workers = workers;
  data::DataLoader<data::Example, data::Example> loader(sized, lo);
  std::vector<Tensor> xs, ys;
  for (const data::Example& b : loader) xs.push_back(b.data), ys.push_back(b.target);
  return data::TensorDataset(cat(xs, 0).contiguous(), cat(ys, 0).contiguous());
}

// Per-channel mean and std (population) of u8 [N, C, S, S] scaled to [0, 1].
void channel_stats(const Tensor& x, std::vector<double>& mean, std::vector<double>& std) {
  const int64_t n = x.size(0), c = x.size(1), plane = x.size(2) * x.size(3);
  const uint8_t* p = x.data_ptr<uint8_t>();
  mean.assign(size_t(c), 0.0), std.assign(size_t(c), 1.0);
  for (int64_t ch = 0; ch < c; ++ch) {
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t* q = p + (i * c + ch) * plane;
      for (int64_t k = 0; k < plane; ++k) s += q[k], s2 += double(q[k]) * q[k];
    }
    const double cnt = double(n * plane), m = s / cnt / 255.0;
    const double var = std::max(0.0, s2 / cnt / (255.0 * 255.0) - m * m);
    mean[size_t(ch)] = m;
    std[size_t(ch)] = var > 1e-12 ? std::sqrt(var) : 1.0;  // constant images: no scaling
  }
}

// The u8 images as normalized f32 examples, read in permutation(n, seed, stream) order.
data::DatasetPtr<data::Example> normalized(data::TensorDataset ds, const ImageData& d,
                                           uint64_t stream) {
  auto base = std::make_shared<data::TensorDataset>(std::move(ds));
  auto shuffled = std::make_shared<data::Subset<data::Example>>(
      base, data::permutation(base->size(), d.seed, stream));
  return data::map_data(shuffled,
                        data::compose({data::ToTensor(), data::Normalize(d.mean, d.std)}));
}

}  // namespace

nlohmann::json ImageData::to_json() const {
  return {{"dir", dir},
          {"classes", classes},
          {"channels", channels},
          {"image_size", image_size},
          {"mean", mean},
          {"std", std},
          {"valid_fraction", valid_fraction},
          {"seed", seed},
          {"test_folder", test_folder}};
}

ImageData ImageData::from_json(const nlohmann::json& j, const std::string& where) {
  ImageData d;
  // Each number is range-checked before it is used or converted (a file's 1e300 read with
  // get<int64_t> is an undefined cast; a std of 0 or a NaN mean makes every output NaN).
  auto field = [&](const char* name) {
    return FileField{"images", where, std::string("data.") + name};
  };
  auto integer = [&](const char* name, int64_t lo, int64_t hi) {
    const nlohmann::json& v = j.at(name);
    return v.is_number_float() ? checked_int64(field(name), v.get<double>(), lo, hi)
                               : checked_int64(field(name), v.dump(), lo, hi);
  };
  try {
    d.dir = j.at("dir").get<std::string>();
    d.classes = j.at("classes").get<std::vector<std::string>>();
    d.channels = integer("channels", 1, 3);
    d.image_size = integer("image_size", 1, kMaxImageSize);
    d.mean = j.at("mean").get<std::vector<double>>();
    d.std = j.at("std").get<std::vector<double>>();
    d.valid_fraction =
        checked_double(field("valid_fraction"), j.at("valid_fraction").get<double>(), 0.0, 1.0);
    const nlohmann::json& seed = j.at("seed");
    d.seed = checked_uint64(field("seed"), seed.dump());  // digits only: no float, no string
    d.test_folder = j.at("test_folder").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    EMBER_FAIL("images", where, ": the recorded image folder is incomplete (", e.what(), ")");
  }
  for (size_t c = 0; c < d.mean.size(); ++c)
    checked_double(field(("mean[" + std::to_string(c) + "]").c_str()), d.mean[c], 0.0, 1.0);
  for (size_t c = 0; c < d.std.size(); ++c) {
    const FileField f = field(("std[" + std::to_string(c) + "]").c_str());
    if (checked_double(f, d.std[c], 0.0, 1.0) == 0)
      EMBER_FAIL("images", where, ": field '", f.name, "' = 0 is not a standard deviation > 0");
  }
  EMBER_CHECK(d.channels != 2 && d.classes.size() >= 2 && d.mean.size() == size_t(d.channels) &&
                  d.std.size() == size_t(d.channels) && d.valid_fraction > 0 &&
                  d.valid_fraction < 1,
              "images", where, ": the recorded image folder is inconsistent: ", j.dump());
  return d;
}

ImageSplits load_image_folder(ImageData d, bool with_train, int64_t workers) {
  EMBER_CHECK(d.channels == 0 || d.channels == 1 || d.channels == 3, "images",
              "--channels must be 1 or 3, got ", d.channels);
  EMBER_CHECK(d.image_size >= 0, "images", "--image-size must be >= 1, got ", d.image_size);
  EMBER_CHECK(d.valid_fraction > 0 && d.valid_fraction < 1, "images",
              "--valid-fraction must be in (0, 1), got ", d.valid_fraction);
  std::error_code ec;
  EMBER_CHECK(fs::is_directory(d.dir, ec), "images", "--data ", d.dir,
              ": no such folder (expected one sub-folder of images per class)");
  fs::path abs = fs::absolute(d.dir).lexically_normal();  // recorded: eval may run elsewhere
  if (abs.filename().empty() && abs.has_relative_path()) abs = abs.parent_path();  // "d/" -> "d"
  d.dir = abs.string();
  // DIR/train with DIR/test (or DIR/val): the test folder is the validation set.
  const fs::path root = d.dir;
  d.test_folder.clear();
  fs::path train_root = root;
  if (fs::is_directory(root / "train", ec)) {
    train_root = root / "train";
    for (const char* t : {"test", "val"})
      if (d.test_folder.empty() && fs::is_directory(root / t, ec)) d.test_folder = t;
  }
  auto train_folder = std::make_shared<data::ImageFolder>(train_root.string());
  const std::vector<std::string> classes = train_folder->classes();
  EMBER_CHECK(classes.size() >= 2, "images", train_root.string(), ": one class folder only (",
              join(classes), "); a classifier needs at least 2, one sub-folder of images each");
  std::shared_ptr<data::ImageFolder> test_folder;
  if (!d.test_folder.empty()) {
    test_folder = std::make_shared<data::ImageFolder>((root / d.test_folder).string());
    EMBER_CHECK(test_folder->classes() == classes, "images", (root / d.test_folder).string(),
                ": its classes (", join(test_folder->classes()),
                ") differ from the training folder's (", join(classes), ")");
  }
  if (!d.classes.empty())  // a recorded run: the folder must still hold its classes
    EMBER_CHECK(d.classes == classes, "images", d.dir, ": its classes (", join(classes),
                ") differ from those the model was trained on (", join(d.classes), ")");
  d.classes = classes;

  // Channels: grayscale when every image is (reading the headers only).
  if (d.channels == 0) {
    d.channels = 1;
    for (const auto* f : {train_folder.get(), test_folder.get()})
      if (f)
        for (const auto& s : f->samples())
          if (d.channels == 1 && data::read_image_info(s.first).channels == 3) d.channels = 3;
  }
  if (d.image_size == 0) d.image_size = d.channels == 1 ? 28 : 32;
  // ImageFolder decodes with a fixed channel count from here on.
  train_folder = std::make_shared<data::ImageFolder>(train_root.string(), int(d.channels));
  if (test_folder)
    test_folder =
        std::make_shared<data::ImageFolder>((root / d.test_folder).string(), int(d.channels));

  // The split: per class, round(fraction * n) images (at least 1, at most n - 1) for validation.
  std::vector<int64_t> train_idx, valid_idx;
  if (test_folder) {
    train_idx.resize(size_t(train_folder->size()));
    valid_idx.resize(size_t(test_folder->size()));
    for (size_t i = 0; i < train_idx.size(); ++i) train_idx[i] = int64_t(i);
    for (size_t i = 0; i < valid_idx.size(); ++i) valid_idx[i] = int64_t(i);
  } else {
    std::vector<std::vector<int64_t>> by_class(classes.size());
    const auto& samples = train_folder->samples();
    for (size_t i = 0; i < samples.size(); ++i)
      by_class[size_t(samples[i].second)].push_back(int64_t(i));
    for (size_t c = 0; c < classes.size(); ++c) {
      const auto n = int64_t(by_class[c].size());
      EMBER_CHECK(n >= 2, "images", (train_root / classes[c]).string(), ": ", n,
                  " image; a class needs at least 2 to be split into training and validation "
                  "images (or give DIR/train and DIR/test folders)");
      const int64_t nv = std::clamp<int64_t>(std::llround(d.valid_fraction * double(n)), 1, n - 1);
      const std::vector<int64_t> perm = data::permutation(n, d.seed, kSplitStream + c);
      for (int64_t k = 0; k < n; ++k)
        (k < nv ? valid_idx : train_idx).push_back(by_class[c][size_t(perm[size_t(k)])]);
    }
    std::sort(train_idx.begin(), train_idx.end());
    std::sort(valid_idx.begin(), valid_idx.end());
  }

  ImageSplits out;
  data::TensorDataset valid_u8 =
      decode(test_folder ? test_folder : train_folder, valid_idx, d.image_size, workers);
  if (with_train) {
    data::TensorDataset train_u8 = decode(train_folder, train_idx, d.image_size, workers);
    if (d.mean.empty()) channel_stats(train_u8.data(), d.mean, d.std);
    out.train = normalized(std::move(train_u8), d, kOrderStream);
  }
  EMBER_CHECK(d.mean.size() == size_t(d.channels) && d.std.size() == size_t(d.channels), "images",
              "the normalization needs ", d.channels, " means and stds, got ", d.mean.size(),
              " and ", d.std.size());
  out.valid = normalized(std::move(valid_u8), d, kOrderStream + 1);
  out.data = d;
  return out;
}

Tensor image_input(const std::string& path, const ImageData& d) {
  const Tensor img = data::load_image(path, int(d.channels));  // u8 [C, H, W]
  EMBER_CHECK(img.size(1) > 0 && img.size(2) > 0, "predict", path, ": the image is empty");
  auto t = data::compose({data::Resize(d.image_size), data::CenterCrop(d.image_size),
                          data::ToTensor(), data::Normalize(d.mean, d.std)});
  return t(img, {}).unsqueeze(0);
}

CLI::Option* add_max_image_pixels_option(CLI::App* cmd) {
  static int64_t pixels = data::kDefaultMaxImagePixels;  // the setting is per process anyway
  return add_int_option(cmd, "--max-image-pixels", pixels,
                        "The largest image, in pixels (width x height), to decode: a larger one "
                        "is an error, before any memory is allocated for it (0: no limit)",
                        int64_t(0))
      ->each([](const std::string& v) { data::set_max_image_pixels(std::stoll(v)); })
      ->capture_default_str();
}

}  // namespace ember::tools
