// The op table's compare(): values within tolerance, and special floats (signed zeros,
// infinities, NaN) the same as expected, on every float dtype.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ember/ember.h"
#include "op_table.h"

namespace ember {
namespace {

using testing::compare;

Tensor vec(std::vector<double> v, DType dt) {
  const int64_t n = int64_t(v.size());
  return from_vector<double>(v, {n}, Device::ref()).to(dt);
}

const double kInf = std::numeric_limits<double>::infinity();
const double kNan = std::numeric_limits<double>::quiet_NaN();

std::vector<DType> floats() { return {DType::f32, DType::f64, DType::f16, DType::bf16}; }

TEST(OpTableCompare, SignedZeroMismatchIsReported) {
  for (DType dt : floats()) {
    const std::string m = compare(vec({1.0, -0.0}, dt), vec({1.0, 0.0}, dt));
    EXPECT_NE(m.find("element 1"), std::string::npos) << dtype_name(dt) << ": " << m;
    EXPECT_NE(m.find("sign of zero"), std::string::npos) << dtype_name(dt) << ": " << m;
    EXPECT_NE(compare(vec({0.0}, dt), vec({-0.0}, dt)), "") << dtype_name(dt);
  }
}

TEST(OpTableCompare, EqualSpecialValuesAreEqual) {
  for (DType dt : floats()) {
    const Tensor v = vec({-0.0, 0.0, kInf, -kInf, kNan, 2.5}, dt);
    EXPECT_EQ(compare(v, v.clone()), "") << dtype_name(dt);
    // NaN's sign is not compared (torch does not define it)
    EXPECT_EQ(compare(vec({kNan}, dt), vec({-kNan}, dt)), "") << dtype_name(dt);
  }
}

TEST(OpTableCompare, InfinityNeedsTheSameInfinity) {
  for (DType dt : floats()) {
    const double big = dt == DType::f16 ? 60000.0 : 1e38;
    EXPECT_NE(compare(vec({kInf}, dt), vec({big}, dt)), "") << dtype_name(dt);
    EXPECT_NE(compare(vec({kInf}, dt), vec({-kInf}, dt)), "") << dtype_name(dt);
    EXPECT_NE(compare(vec({-kInf}, dt), vec({kNan}, dt)), "") << dtype_name(dt);
    EXPECT_NE(compare(vec({big}, dt), vec({kInf}, dt)), "") << dtype_name(dt);
  }
}

TEST(OpTableCompare, NanNeedsNanAndNumbersNeedNumbers) {
  for (DType dt : floats()) {
    EXPECT_NE(compare(vec({kNan}, dt), vec({0.0}, dt)), "") << dtype_name(dt);
    EXPECT_NE(compare(vec({0.0}, dt), vec({kNan}, dt)), "") << dtype_name(dt);
    EXPECT_NE(compare(vec({1.0}, dt), vec({kNan}, dt)), "") << dtype_name(dt);
  }
}

TEST(OpTableCompare, RoundingNearZeroStaysWithinTolerance) {
  // a tiny nonzero result where zero is expected (a sum that cancels in another order) and a
  // zero where a tiny value is expected are rounding, not a special-value mismatch
  EXPECT_EQ(compare(vec({0.0}, DType::f32), vec({-1e-8}, DType::f32)), "");
  EXPECT_EQ(compare(vec({-1e-8}, DType::f32), vec({0.0}, DType::f32)), "");
  EXPECT_NE(compare(vec({0.0}, DType::f32), vec({1e-3}, DType::f32)), "");
  EXPECT_EQ(compare(vec({1.0}, DType::f32), vec({1.0 + 1e-7}, DType::f32)), "");
  EXPECT_NE(compare(vec({1.0}, DType::f32), vec({1.001}, DType::f32)), "");
}

}  // namespace
}  // namespace ember
