#include <gtest/gtest.h>

#include "ember/ember.h"

using namespace ember;

TEST(TensorTest, CreationAndItem) {
  Tensor t = tensor<float>({1.f, 2.f, 3.f, 4.f}, {2, 2});
  EXPECT_EQ(t.shape(), (Shape{2, 2}));
  EXPECT_EQ(t.dtype(), DType::f32);
  EXPECT_FLOAT_EQ(t.select(1, 1)[1].item<float>(), 4.f);
}
