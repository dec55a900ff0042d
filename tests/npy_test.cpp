// NumPy .npy files (ember/record/npy.h) against files numpy 1.24 wrote (tests/data/npy/make.py).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/record/npy.h"
#include "test_util.h"

namespace ember {
namespace {

std::string data(const std::string& name) {
  return std::string(EMBER_TEST_DATA_DIR) + "/npy/" + name;
}

std::string bytes_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

template <typename T>
std::vector<T> values(const Tensor& t) {
  return t.to(Device::ref()).contiguous().to_vector<T>();
}

TEST(NpyTest, ReadsWhatNumpyWrites) {
  Tensor t = record::load_npy(data("f32_2x3.npy"));
  EXPECT_EQ(t.dtype(), DType::f32);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<float>(t), (std::vector<float>{-1, -0.5, 0, 0.5, 1, 1.5}));

  t = record::load_npy(data("f64_fortran_2x3.npy"));  // column-major on disk
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<double>(t), (std::vector<double>{0, 1, 2, 3, 4, 5}));

  t = record::load_npy(data("bool_4.npy"));
  EXPECT_EQ(t.dtype(), DType::b8);
  EXPECT_EQ(values<uint8_t>(t.to(DType::u8)), (std::vector<uint8_t>{1, 0, 0, 1}));

  t = record::load_npy(data("i64_scalar.npy"));
  EXPECT_EQ(t.dim(), 0);
  EXPECT_EQ(t.item<int64_t>(), -7);

  t = record::load_npy(data("u8_5.npy"));
  EXPECT_EQ(values<uint8_t>(t), (std::vector<uint8_t>{0, 1, 127, 128, 255}));

  t = record::load_npy(data("f16_3.npy"));
  EXPECT_EQ(t.dtype(), DType::f16);
  EXPECT_EQ(values<float>(t.to(DType::f32)), (std::vector<float>{0.5, -2, 65504}));

  t = record::load_npy(data("i32_empty_0x4.npy"));
  EXPECT_EQ(t.shape(), (Shape{0, 4}));
  EXPECT_EQ(t.dtype(), DType::i32);

  std::string native = bytes_of(data("f32_2x3.npy"));  // 'f4' without a byte order: native
  native.replace(native.find("'<f4'"), 5, "'f4' ");
  EXPECT_EQ(values<float>(record::deserialize_npy(native, "native")),
            values<float>(record::load_npy(data("f32_2x3.npy"))));

  t = record::load_npy(data("f32_v2.npy"));  // format version 2.0
  EXPECT_EQ(values<float>(t), (std::vector<float>{1.5, 2.5}));
}

TEST(NpyTest, WritesWhatNumpyWrites) {
  // The same bytes as numpy.save for the dtypes numpy has (header padded to 64 bytes).
  for (const char* name : {"f32_2x3.npy", "bool_4.npy", "i64_scalar.npy", "u8_5.npy", "f16_3.npy",
                           "i32_empty_0x4.npy"}) {
    const Tensor t = record::load_npy(data(name));
    EXPECT_EQ(record::serialize_npy(t), bytes_of(data(name))) << name;
  }
  // Views, other devices and bf16 (written as float32) round-trip by value.
  const Tensor x = arange(Scalar(0), Scalar(12), Scalar(1), {DType::f32}).reshape({3, 4});
  Tensor back = record::deserialize_npy(record::serialize_npy(x.t()), "t");
  EXPECT_EQ(back.shape(), (Shape{4, 3}));
  EXPECT_EQ(values<float>(back), values<float>(x.t()));
  back = record::deserialize_npy(record::serialize_npy(x.to(DType::bf16)), "bf16");
  EXPECT_EQ(back.dtype(), DType::f32);
  EXPECT_EQ(values<float>(back), values<float>(x));

  test::TempDir dir("npy");
  record::save_npy(dir / "x.npy", x);
  EXPECT_EQ(values<float>(record::load_npy(dir / "x.npy")), values<float>(x));
}

TEST(NpyTest, RejectsWhatItCannotRead) {
  const std::string good = bytes_of(data("f32_2x3.npy"));
  auto fails = [](const std::string& bytes, const std::string& needle) {
    try {
      record::deserialize_npy(bytes, "case");
      ADD_FAILURE() << "no error; expected one about " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("[load_npy] case"), std::string::npos) << e.what();
    }
  };
  fails("", "not a .npy file");
  fails("PK\x03\x04 zip", "not a .npy file");
  fails(good.substr(0, 20), "header claims");
  fails(good.substr(0, good.size() - 1), "needs 24 bytes of data, the file holds 23");
  fails(good + "x", "the file holds 25");
  std::string v9 = good;
  v9[6] = 9;
  fails(v9, "version 9");
  fails(bytes_of(data("big_endian_f4.npy")), "dtype '>f4'");
  std::string obj = good;
  obj.replace(obj.find("<f4"), 3, "|O8");
  fails(obj, "dtype '|O8'");
  std::string neg = good;
  neg.replace(neg.find("(2, 3)"), 6, "(-2, 3)");
  fails(neg, "non-negative integers");
  std::string huge = good;
  huge.replace(huge.find("(2, 3)"), 6, "(99999999999999, 99999)");
  fails(huge, "too large");
  std::string nokey = good;
  nokey.replace(nokey.find("'shape'"), 7, "'shapf'");
  fails(nokey, "unknown header key 'shapf'");
  std::string unterminated = good;
  unterminated.replace(unterminated.find("'<f4'"), 5, "'<f4 ");
  fails(unterminated, "expected");
  EXPECT_THROW(record::load_npy("/nonexistent/x.npy"), Error);
  EXPECT_THROW(record::serialize_npy(Tensor()), Error);
}

}  // namespace
}  // namespace ember
