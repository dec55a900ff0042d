// ImageFolder: root/<class>/<image> as a dataset of decoded images.
#include <algorithm>
#include <cctype>
#include <filesystem>

#include "ember/data/io.h"

namespace ember::data {
namespace fs = std::filesystem;

namespace {
bool is_image_file(const fs::path& p) {
  std::string ext = p.extension().string();
  for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}
}  // namespace

ImageFolder::ImageFolder(const std::string& root, int channels) : channels_(channels) {
  if (channels != 0 && channels != 1 && channels != 3)
    EMBER_FAIL("ImageFolder", root, ": channels must be 0 (as stored), 1 or 3, got ", channels);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) EMBER_FAIL("ImageFolder", root, ": not a directory");
  for (const auto& e : fs::directory_iterator(root, ec))
    if (e.is_directory()) classes_.push_back(e.path().filename().string());
  if (ec) EMBER_FAIL("ImageFolder", root, ": cannot list (", ec.message(), ")");
  std::sort(classes_.begin(), classes_.end());
  if (classes_.empty()) EMBER_FAIL("ImageFolder", root, ": no class folders");
  for (size_t label = 0; label < classes_.size(); ++label) {
    std::vector<std::string> files;
    const fs::path dir = fs::path(root) / classes_[label];
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.is_regular_file() && is_image_file(e.path())) files.push_back(e.path().string());
    if (ec) EMBER_FAIL("ImageFolder", dir.string(), ": cannot list (", ec.message(), ")");
    if (files.empty())
      EMBER_FAIL("ImageFolder", root, ": class folder '", classes_[label],
                 "' holds no .png/.jpg/.jpeg file");
    std::sort(files.begin(), files.end());
    for (auto& f : files) samples_.emplace_back(std::move(f), int64_t(label));
  }
}

Example ImageFolder::get(int64_t index) const {
  detail::check_item_index(index, size(), "ImageFolder");
  const auto& s = samples_[size_t(index)];
  return Example{load_image(s.first, channels_),
                 scalar_tensor(s.second, TensorOptions(DType::i64, Device::cpu()))};
}

}  // namespace ember::data
