// Bad files must never cost a user their data (issue 13): readers refuse, with an ember::Error
// naming the file, what a damaged or hostile file declares instead of allocating for it,
// filling in what is missing, or dropping what they do not understand. Images: the pixel budget
// (data::max_image_pixels) for PNG and JPEG, baseline and progressive, and libjpeg's warnings
// about damaged data; shapes whose zero dimension hid the others' overflow (IDX, MNIST,
// safetensors, reshape); gzip files of several members or with trailing bytes; CSV rows "".
// The crafted files are made here from valid ones (Ember's writers, libjpeg for a progressive
// JPEG), not committed.
#include <gtest/gtest.h>
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

// After <cstdio>: jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>
#include <sys/stat.h>

#include "ember/data/data.h"
#include "ember/ember.h"
#include "ember/record/safetensors.h"
#include "test_util.h"

namespace fs = std::filesystem;
using namespace ember;
using namespace ember::data;

namespace {

using test::expect_error;

// A scratch folder for one test.
struct TempDir : test::TempDir {
  TempDir() : test::TempDir("bad_files") {}
};

using Bytes = std::vector<unsigned char>;

void write_bytes(const std::string& path, const Bytes& b) {
  test::write_bytes(path, std::string(b.begin(), b.end()));
}
Bytes read_bytes(const std::string& path) {
  const std::string s = test::read_bytes(path);
  return Bytes(s.begin(), s.end());
}
void write_text(const std::string& path, const std::string& s) { test::write_bytes(path, s); }

// CRC-32 (ISO 3309, as PNG chunks and gzip trailers use).
uint32_t crc32_of(const unsigned char* p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return c ^ 0xFFFFFFFFu;
}
void put_be32(unsigned char* p, uint32_t v) {
  p[0] = uint8_t(v >> 24), p[1] = uint8_t(v >> 16), p[2] = uint8_t(v >> 8), p[3] = uint8_t(v);
}
void put_le32(Bytes& b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(uint8_t(v >> (8 * i)));
}

Tensor pattern(int64_t c, int64_t h, int64_t w) {
  std::vector<uint8_t> v(size_t(c * h * w));
  for (size_t i = 0; i < v.size(); ++i) v[i] = uint8_t((i * 37 + 11) % 256);
  return from_vector<uint8_t>(v, {c, h, w}, Device::cpu());
}
// Flat colours: JPEG keeps them almost exactly, so a decoded copy can be compared.
Tensor flat(int64_t h, int64_t w) {
  Tensor t = empty({3, h, w}, TensorOptions(DType::u8, Device::cpu()));
  t[0].fill_(200), t[1].fill_(100), t[2].fill_(50);
  return t;
}

// The PNG with its IHDR's width and height replaced (and the chunk's CRC recomputed).
Bytes png_with_size(Bytes png, uint32_t w, uint32_t h) {
  // Signature (8), IHDR length (4), "IHDR" (4), width, height, ..., CRC over type + data.
  EXPECT_EQ(std::memcmp(png.data() + 12, "IHDR", 4), 0);
  put_be32(png.data() + 16, w);
  put_be32(png.data() + 20, h);
  put_be32(png.data() + 29, crc32_of(png.data() + 12, 17));
  return png;
}

// Offset of the JPEG frame header (SOF0 baseline or SOF2 progressive marker).
size_t sof_offset(const Bytes& jpg) {
  for (size_t i = 2; i + 9 < jpg.size(); ++i)
    if (jpg[i] == 0xFF && (jpg[i + 1] == 0xC0 || jpg[i + 1] == 0xC2)) return i;
  ADD_FAILURE() << "no SOF marker";
  return 0;
}
// The JPEG with its frame header's height and width replaced.
Bytes jpeg_with_size(Bytes jpg, unsigned w, unsigned h) {
  const size_t s = sof_offset(jpg);  // FF Cn, length (2), precision (1), height (2), width (2)
  jpg[s + 5] = uint8_t(h >> 8), jpg[s + 6] = uint8_t(h);
  jpg[s + 7] = uint8_t(w >> 8), jpg[s + 8] = uint8_t(w);
  return jpg;
}
// Offset of the first byte of entropy-coded data (after the SOS segment).
size_t scan_data_offset(const Bytes& jpg) {
  for (size_t i = 2; i + 3 < jpg.size(); ++i)
    if (jpg[i] == 0xFF && jpg[i + 1] == 0xDA) return i + 2 + (size_t(jpg[i + 2]) << 8 | jpg[i + 3]);
  ADD_FAILURE() << "no SOS marker";
  return 0;
}

// A progressive RGB JPEG written by libjpeg itself (jpeg_simple_progression).
Bytes progressive_jpeg(const Tensor& chw) {
  const int64_t h = chw.size(1), w = chw.size(2);
  const std::vector<uint8_t> v = chw.permute({1, 2, 0}).contiguous().to_vector<uint8_t>();
  jpeg_compress_struct cinfo;
  jpeg_error_mgr jerr;
  cinfo.err = jpeg_std_error(&jerr);
  jpeg_create_compress(&cinfo);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buf, &size);
  cinfo.image_width = JDIMENSION(w), cinfo.image_height = JDIMENSION(h);
  cinfo.input_components = 3, cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, 95, TRUE);
  jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(v.data()) + size_t(cinfo.next_scanline) * size_t(w * 3);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  Bytes out(buf, buf + size);
  std::free(buf);
  return out;
}

// Sets data::max_image_pixels for one test.
struct PixelLimit {
  int64_t old;
  explicit PixelLimit(int64_t n) : old(max_image_pixels()) { set_max_image_pixels(n); }
  ~PixelLimit() { set_max_image_pixels(old); }
};

}  // namespace

// ---------------------------------------------------------------- the pixel budget

TEST(ImageLimitTest, DefaultIsSixtyFourMebipixelsAndSettable) {
  EXPECT_EQ(kDefaultMaxImagePixels, int64_t(1) << 26);
  EXPECT_EQ(max_image_pixels(), kDefaultMaxImagePixels);
  {
    PixelLimit limit(1000);
    EXPECT_EQ(max_image_pixels(), 1000);
  }
  EXPECT_EQ(max_image_pixels(), kDefaultMaxImagePixels);
  expect_error([] { set_max_image_pixels(-1); }, {"[set_max_image_pixels]", "-1"});
  EXPECT_EQ(max_image_pixels(), kDefaultMaxImagePixels);
}

// The 837-byte JPEG declaring 65500x65500: 12.9 GB allocated before the fix.
TEST(ImageLimitTest, JpegDeclaringHugeSizeIsRefusedFromItsHeader) {
  TempDir dir;
  save_jpeg(dir / "ok.jpg", flat(16, 16));
  write_bytes(dir / "bomb.jpg", jpeg_with_size(read_bytes(dir / "ok.jpg"), 65500, 65500));
  for (const char* op : {"load_image", "read_image_info"}) {
    expect_error(
        [&] {
          if (std::string(op) == "load_image")
            load_image(dir / "bomb.jpg");
          else
            read_image_info(dir / "bomb.jpg");
        },
        {std::string("[") + op + "]", dir / "bomb.jpg", "JPEG declares 65500x65500 = 4290250000",
         "limit of 67108864", "set_max_image_pixels", "--max-image-pixels"});
  }
}

// The 584-byte progressive JPEG declaring 16384x16384 (1.6 GB of coefficients, 9 s).
TEST(ImageLimitTest, ProgressiveJpegIsRefusedBeforeItsCoefficientsAreAllocated) {
  TempDir dir;
  const Bytes prog = progressive_jpeg(flat(16, 16));
  ASSERT_EQ(prog[sof_offset(prog) + 1], 0xC2);  // SOF2: progressive
  write_bytes(dir / "prog.jpg", prog);
  // A valid progressive JPEG decodes (its scans raise no warning).
  const Tensor img = load_image(dir / "prog.jpg");
  ASSERT_EQ(img.shape(), (Shape{3, 16, 16}));
  const auto v = img.to_vector<int>();
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], (i < 256 ? 200 : i < 512 ? 100 : 50), 3);
  write_bytes(dir / "bomb.jpg", jpeg_with_size(prog, 16384, 16384));
  expect_error([&] { load_image(dir / "bomb.jpg"); },
               {"[load_image]", dir / "bomb.jpg", "16384x16384 = 268435456", "limit of 67108864"});
}

// The 453-byte PNG declaring 16384x16384 (2^28 pixels): today's per-side cap let it
// force a 768 MiB buffer.
TEST(ImageLimitTest, PngDeclaringHugeSizeIsRefusedFromItsHeader) {
  TempDir dir;
  save_png(dir / "ok.png", pattern(3, 4, 4));
  write_bytes(dir / "bomb.png", png_with_size(read_bytes(dir / "ok.png"), 16384, 16384));
  expect_error([&] { load_image(dir / "bomb.png"); },
               {"[load_image]", dir / "bomb.png", "PNG declares 16384x16384 = 268435456",
                "limit of 67108864"});
  expect_error([&] { read_image_info(dir / "bomb.png"); },
               {"[read_image_info]", dir / "bomb.png", "16384x16384"});
  // Grayscale is counted in pixels too (the budget is per pixel, not per byte).
  save_png(dir / "gray.png", pattern(1, 4, 4));
  write_bytes(dir / "gray_bomb.png", png_with_size(read_bytes(dir / "gray.png"), 9000, 9000));
  expect_error([&] { load_image(dir / "gray_bomb.png"); }, {"9000x9000 = 81000000"});
}

// libpng allocates a text chunk's declared length before reading it: a 141-byte file declaring a
// 2 GiB tEXt cost 2.1 GB. Every chunk must fit in the file.
TEST(PngChunkTest, ChunkLongerThanTheFileIsRefused) {
  TempDir dir;
  save_png(dir / "ok.png", pattern(3, 4, 4));
  Bytes png = read_bytes(dir / "ok.png");
  png.resize(33);  // signature and IHDR
  const unsigned char text[8] = {0x7f, 0xff, 0xff, 0xff, 't', 'E', 'X', 't'};
  png.insert(png.end(), text, text + 8);
  png.resize(png.size() + 100, 'a');
  write_bytes(dir / "text_bomb.png", png);
  expect_error([&] { load_image(dir / "text_bomb.png"); },
               {"[load_image]", dir / "text_bomb.png", "chunk 'tEXt'", "declares 2147483647"});
  expect_error([&] { read_image_info(dir / "text_bomb.png"); },
               {"[read_image_info]", "chunk 'tEXt'"});
}

// Opening a FIFO without a writer blocks forever: readers take regular files only.
TEST(PngChunkTest, FifoIsRefusedNotWaitedOn) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "f.png").c_str(), 0600), 0);
  expect_error([&] { load_image(dir / "f.png"); }, {"[load_image]", "not a regular file"});
  expect_error([&] { read_idx(dir / "f.png"); }, {"not a regular file"});
  expect_error([&] { record::load_safetensors(dir / "f.png"); }, {"not a regular file"});
}

// One budget for every format: a genuine image beyond it fails, at it loads, and 0 lifts it.
TEST(ImageLimitTest, OneBudgetForEveryFormatAndItCanBeRaised) {
  TempDir dir;
  const Tensor rgb = pattern(3, 12, 10);  // 120 pixels
  save_png(dir / "a.png", rgb);
  save_jpeg(dir / "a.jpg", flat(12, 10));
  write_bytes(dir / "p.jpg", progressive_jpeg(flat(12, 10)));
  {
    PixelLimit limit(119);
    for (const char* f : {"a.png", "a.jpg", "p.jpg"}) {
      expect_error([&] { load_image(dir / f); },
                   {"[load_image]", dir / f, "declares 10x12 = 120 pixels", "limit of 119"});
      expect_error([&] { read_image_info(dir / f); }, {"[read_image_info]", "limit of 119"});
    }
  }
  for (int64_t n : {int64_t(120), int64_t(0)}) {
    PixelLimit limit(n);
    EXPECT_EQ(load_image(dir / "a.png").to_vector<int>(), rgb.to_vector<int>()) << n;
    EXPECT_EQ(load_image(dir / "a.jpg").shape(), (Shape{3, 12, 10})) << n;
    EXPECT_EQ(load_image(dir / "p.jpg").shape(), (Shape{3, 12, 10})) << n;
    EXPECT_EQ(read_image_info(dir / "a.jpg").height, 12) << n;
  }
  // An ImageFolder sample beyond the budget fails as load_image does.
  fs::create_directories(fs::path(dir.path()) / "f/cls");
  save_png(dir / "f/cls/x.png", rgb);
  ImageFolder folder((fs::path(dir.path()) / "f").string());
  PixelLimit limit(100);
  expect_error([&] { folder.get(0); }, {"x.png", "limit of 100"});
}

// ---------------------------------------------------------------- damaged JPEGs

// The issue's 12x10 JPEG whose height field is doubled: libjpeg warned "premature end of data
// segment" and filled the missing rows; it loaded as [3, 24, 10].
TEST(JpegDamageTest, DoubledHeightIsAnError) {
  TempDir dir;
  save_jpeg(dir / "ok.jpg", flat(12, 10));
  ASSERT_EQ(load_image(dir / "ok.jpg").shape(), (Shape{3, 12, 10}));
  write_bytes(dir / "tall.jpg", jpeg_with_size(read_bytes(dir / "ok.jpg"), 10, 24));
  expect_error([&] { load_image(dir / "tall.jpg"); },
               {"[load_image]", dir / "tall.jpg", "corrupt or truncated JPEG",
                "premature end of data segment"});
  // The same for a progressive JPEG.
  write_bytes(dir / "ptall.jpg", jpeg_with_size(progressive_jpeg(flat(12, 10)), 10, 24));
  expect_error([&] { load_image(dir / "ptall.jpg"); }, {"[load_image]", dir / "ptall.jpg", "JPEG"});
}

// Entropy-coded data cut short but the file still ends with EOI: before, only a missing EOI
// (libjpeg's end-of-file warning) was fatal.
TEST(JpegDamageTest, TruncatedDataSegmentIsAnError) {
  TempDir dir;
  save_jpeg(dir / "ok.jpg", pattern(3, 32, 32));
  const Bytes jpg = read_bytes(dir / "ok.jpg");
  const size_t data = scan_data_offset(jpg);
  Bytes cut(jpg.begin(), jpg.begin() + std::ptrdiff_t(data + (jpg.size() - data) / 3));
  cut.push_back(0xFF), cut.push_back(0xD9);  // EOI
  write_bytes(dir / "cut.jpg", cut);
  expect_error([&] { load_image(dir / "cut.jpg"); },
               {"[load_image]", dir / "cut.jpg", "premature end of data segment"});
}

// Bytes where a marker belongs ("extraneous bytes before marker"): corrupt, also in the header
// that read_image_info reads.
TEST(JpegDamageTest, ExtraneousBytesAreAnError) {
  TempDir dir;
  save_jpeg(dir / "ok.jpg", flat(8, 8));
  Bytes jpg = read_bytes(dir / "ok.jpg");
  const size_t sof = sof_offset(jpg);
  jpg.insert(jpg.begin() + std::ptrdiff_t(sof), {0x12, 0x34});
  write_bytes(dir / "junk.jpg", jpg);
  expect_error([&] { load_image(dir / "junk.jpg"); },
               {"[load_image]", dir / "junk.jpg", "extraneous bytes before marker"});
  expect_error([&] { read_image_info(dir / "junk.jpg"); },
               {"[read_image_info]", dir / "junk.jpg", "extraneous bytes"});
}

// An unknown JFIF revision is metadata: the pixels are intact and the image loads.
TEST(JpegDamageTest, UnknownJfifRevisionStillLoads) {
  TempDir dir;
  save_jpeg(dir / "ok.jpg", flat(8, 8));
  Bytes jpg = read_bytes(dir / "ok.jpg");
  // SOI, APP0 (FF E0), length (2), "JFIF\0", major, minor.
  ASSERT_EQ(std::memcmp(jpg.data() + 6, "JFIF", 4), 0);
  jpg[11] = 2;
  write_bytes(dir / "v2.jpg", jpg);
  EXPECT_EQ(load_image(dir / "v2.jpg").to_vector<int>(),
            load_image(dir / "ok.jpg").to_vector<int>());
}

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
  fs::create_directories(fs::path(dir.path()) / "mnist");
  write_bytes(dir / "mnist/train-images-idx3-ubyte",
              {0, 0, 8, 3, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0});
  write_bytes(dir / "mnist/train-labels-idx1-ubyte", {0, 0, 8, 1, 0, 0, 0, 0});
  expect_error([&] { load_mnist((fs::path(dir.path()) / "mnist").string(), true); },
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
