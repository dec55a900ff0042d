// Bad files must never cost a user their data (issue 13): readers refuse, with an ember::Error
// naming the file, what a damaged or hostile file declares instead of allocating for it,
// filling in what is missing, or dropping what they do not understand. Images: the pixel budget
// (data::max_image_pixels) for PNG and JPEG, baseline and progressive, and libjpeg's warnings
// about damaged data; shapes whose zero dimension hid the others' overflow (IDX, MNIST,
// safetensors, reshape); gzip files of several members or with trailing bytes; CSV rows "".
// The crafted files are made here from valid ones (Ember's writers, libjpeg for a progressive
// JPEG), not committed.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ember/data/data.h"
#include "ember/ember.h"
#include "ember/record/safetensors.h"

namespace fs = std::filesystem;
using namespace ember;
using namespace ember::data;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    static std::atomic<int> counter{0};
    path = fs::temp_directory_path() /
           ("ember_bad_files_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

using Bytes = std::vector<unsigned char>;

void write_bytes(const std::string& path, const Bytes& b) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}
Bytes read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), {});
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

// CRC-32 (ISO 3309, as PNG chunks and gzip trailers use).
uint32_t crc32_of(const unsigned char* p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return c ^ 0xFFFFFFFFu;
}
void put_le32(Bytes& b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(uint8_t(v >> (8 * i)));
}

}  // namespace

// ---------------------------------------------------------------- shapes with a zero dim

TEST(ShapeOverflowTest, EveryDimensionIsCheckedWhateverTheElementCount) {
  const int64_t big = int64_t(1) << 62;
  EXPECT_EQ(checked_numel({0, 5, 7}, "t"), 0);
  EXPECT_EQ(checked_numel({3, 5}, "t"), 15);
  expect_error([&] { checked_numel({0, big, big}, "t"); }, {"[t]", "too large", "2^62"});
  expect_error([&] { checked_numel({big, big, 0}, "t"); }, {"[t]", "too large"});
  expect_error([&] { checked_numel({0, -1}, "t"); }, {"[t]", "negative"});
  expect_error([&] { empty({0, big, big}); }, {"[empty]", "too large"});
  expect_error([&] { contiguous_strides({0, big, big}); }, {"[contiguous_strides]", "overflow"});
  EXPECT_EQ(contiguous_strides({0, int64_t(1) << 31, int64_t(1) << 31}),
            (Strides{int64_t(1) << 62, int64_t(1) << 31, 1}));
  EXPECT_EQ(empty({0, 3, 4}).strides(), (Strides{12, 4, 1}));
  expect_error([&] { zeros({0}).reshape({0, big, big}); }, {"[reshape]", "too large"});
  expect_error([&] { zeros({0}).reshape({int64_t(1) << 32, int64_t(1) << 32, 0}); }, {"[reshape]"});
}

// The 16-byte IDX file: dims [0, 2^32 - 1, 2^32 - 1] were accepted as an empty tensor
// with wrapped strides.
TEST(ShapeOverflowTest, IdxEmptyTensorWithHugeDimsIsRejected) {
  TempDir dir;
  const Bytes bad = {0, 0, 8, 3, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
  write_bytes(dir / "bad.idx", bad);
  expect_error([&] { read_idx(dir / "bad.idx"); },
               {"[read_idx]", dir / "bad.idx", "dims/size mismatch", "[0, 4294967295, 4294967295]",
                "too large"});
  // A zero dim last, and load_mnist reaching it.
  fs::create_directories(dir.path / "mnist");
  write_bytes(dir / "mnist/train-images-idx3-ubyte",
              {0, 0, 8, 3, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0});
  write_bytes(dir / "mnist/train-labels-idx1-ubyte", {0, 0, 8, 1, 0, 0, 0, 0});
  expect_error([&] { load_mnist((dir.path / "mnist").string(), true); },
               {"[read_idx]", "train-images-idx3-ubyte", "too large"});
  // Empty tensors of sane dims still read.
  write_idx(dir / "empty.idx", zeros({0, 28, 28}, DType::u8));
  const Tensor e = read_idx(dir / "empty.idx");
  EXPECT_EQ(e.shape(), (Shape{0, 28, 28}));
  EXPECT_EQ(e.strides(), (Strides{784, 28, 1}));
}

TEST(ShapeOverflowTest, SafetensorsEmptyTensorWithHugeDimsIsRejected) {
  TempDir dir;
  auto file = [](const std::string& shape) {
    std::string h = "{\"x\":{\"dtype\":\"F32\",\"shape\":" + shape + ",\"data_offsets\":[0,0]}}";
    h.append((8 - h.size() % 8) % 8, ' ');
    std::string out;
    for (int i = 0; i < 8; ++i) out.push_back(char((h.size() >> (8 * i)) & 0xff));
    return out + h;
  };
  const std::string bad = file("[0,4611686018427387904,4611686018427387904]");
  std::ofstream(dir / "bad.safetensors", std::ios::binary) << bad;
  expect_error([&] { record::load_safetensors(dir / "bad.safetensors"); },
               {"[load_safetensors]", dir / "bad.safetensors", "entry \"x\"", "too large"});
  expect_error([&] { record::deserialize_safetensors(bad, "mem", Device::cpu()); },
               {"[load_safetensors]", "too large"});
  const record::SafetensorsFile ok =
      record::deserialize_safetensors(file("[0,3,4]"), "mem", Device::cpu());
  EXPECT_EQ(ok.tensors.at("x").shape(), (Shape{0, 3, 4}));
  EXPECT_EQ(ok.tensors.at("x").strides(), (Strides{12, 4, 1}));
}

// ---------------------------------------------------------------- gzip members

namespace {
// One gzip member holding `data` in stored (uncompressed) deflate blocks.
Bytes gzip_stored(const Bytes& data) {
  Bytes z = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};
  size_t at = 0;
  do {
    const size_t n = std::min<size_t>(data.size() - at, 65535);
    const bool last = at + n == data.size();
    z.push_back(last ? 1 : 0);
    z.push_back(uint8_t(n)), z.push_back(uint8_t(n >> 8));
    z.push_back(uint8_t(~n)), z.push_back(uint8_t(~n >> 8));
    z.insert(z.end(), data.begin() + std::ptrdiff_t(at), data.begin() + std::ptrdiff_t(at + n));
    at += n;
  } while (at < data.size());
  put_le32(z, crc32_of(data.data(), data.size()));
  put_le32(z, uint32_t(data.size()));
  return z;
}
}  // namespace

// Concatenated members are one file to gzip -d: every member is read (before, all but the first
// were dropped, so the IDX data looked truncated).
TEST(GzipMembersTest, EveryMemberIsRead) {
  TempDir dir;
  const Tensor t = arange(0, 300, 1, TensorOptions(DType::i32, Device::cpu()));
  write_idx(dir / "t.idx", t);
  const Bytes idx = read_bytes(dir / "t.idx");
  const Bytes first(idx.begin(), idx.begin() + 500), second(idx.begin() + 500, idx.end());
  const Bytes m1 = gzip_stored(first), m2 = gzip_stored(second), empty_member = gzip_stored({});
  Bytes two = m1;
  two.insert(two.end(), m2.begin(), m2.end());
  write_bytes(dir / "two.gz", two);
  EXPECT_EQ(read_idx(dir / "two.gz").to_vector<int>(), t.to_vector<int>());
  // Three members, the middle one empty, then zero padding (ignored, as Python's gzip does).
  Bytes three = m1;
  three.insert(three.end(), empty_member.begin(), empty_member.end());
  three.insert(three.end(), m2.begin(), m2.end());
  three.insert(three.end(), 7, 0);
  write_bytes(dir / "three.gz", three);
  EXPECT_EQ(read_idx(dir / "three.gz").to_vector<int>(), t.to_vector<int>());
  // A deflate member (zlib's, from write_idx) followed by another member.
  write_idx(dir / "t.gz", t);
  Bytes deflated = read_bytes(dir / "t.gz");
  const Bytes extra = gzip_stored({0, 0, 0, 7});  // one more i32 (big-endian 7)
  deflated.insert(deflated.end(), extra.begin(), extra.end());
  write_bytes(dir / "more.gz", deflated);
  // The header still says 300 values: the member is read, and its 4 bytes are trailing data.
  expect_error([&] { read_idx(dir / "more.gz"); }, {"[read_idx]", "4 trailing bytes"});
}

// Bytes after the last member that are not a gzip member are an error, not dropped.
TEST(GzipMembersTest, TrailingGarbageAndTruncatedMembersAreErrors) {
  TempDir dir;
  const Tensor t = arange(0, 300, 1, TensorOptions(DType::i32, Device::cpu()));
  write_idx(dir / "t.gz", t);  // zlib's deflate
  const Bytes z = read_bytes(dir / "t.gz");
  EXPECT_EQ(read_idx(dir / "t.gz").to_vector<int>(), t.to_vector<int>());
  Bytes junk = z;
  for (unsigned char c : std::string("garbage")) junk.push_back(c);
  write_bytes(dir / "junk.gz", junk);
  expect_error([&] { read_idx(dir / "junk.gz"); },
               {"[read_idx]", dir / "junk.gz", "gzip error", "7 trailing bytes",
                "offset " + std::to_string(z.size()), "not another gzip member"});
  Bytes zeros_then_junk = z;
  zeros_then_junk.insert(zeros_then_junk.end(), {0, 0, 1});
  write_bytes(dir / "zj.gz", zeros_then_junk);
  expect_error([&] { read_idx(dir / "zj.gz"); }, {"[read_idx]", "3 trailing bytes"});
  // A second member cut short.
  Bytes cut = z;
  const Bytes m = gzip_stored({1, 2, 3, 4, 5, 6, 7, 8});
  cut.insert(cut.end(), m.begin(), m.begin() + 12);
  write_bytes(dir / "cut.gz", cut);
  expect_error([&] { read_idx(dir / "cut.gz"); }, {"[read_idx]", dir / "cut.gz", "truncated"});
}

// ---------------------------------------------------------------- CSV

// A row holding only "" is one empty field, not a blank line (it was skipped).
TEST(CsvEmptyFieldTest, QuotedEmptyRowIsRejected) {
  TempDir dir;
  write_text(dir / "a.csv", "x,y,label\n1,2,0\n\"\"\n3,4,1\n");
  expect_error([&] { read_csv(dir / "a.csv"); },
               {"[read_csv]", dir / "a.csv", ":3:", "expected 3 columns, found 1"});
  write_text(dir / "b.csv", "  \"\"  \r\n1,2,0\n");
  expect_error([&] { read_csv(dir / "b.csv"); }, {"[read_csv]", ":1:", "at least 2 columns"});
  write_text(dir / "c.csv", "1,2,0\n\"\",\"\",\"\"\n");
  expect_error([&] { read_csv(dir / "c.csv"); }, {"[read_csv]", ":2:", "not a number: ''"});
  // Whitespace-only lines are still blank.
  write_text(dir / "d.csv", "1,2,0\n  \t \n\r\n3,4,1\n");
  EXPECT_EQ(read_csv(dir / "d.csv").size(), 2);
}
