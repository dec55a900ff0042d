// The shared internals of the layering: the dim merging every strided loop uses
// (core/merge_dims.h), the op traits table (ir/op_traits.h) and the cpu backend's dense
// temporaries (backends/cpu/dense.h).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "backends/cpu/dense.h"
#include "core/merge_dims.h"
#include "ember/ember.h"
#include "ir/op_traits.h"

namespace ember {
namespace {

TEST(MergeDimsTest, MergesDimsContiguousForEveryOperand) {
  // [2, 3, 4] contiguous with a second operand broadcast along dim 1: dims 0 and 1 do not merge
  // for the broadcast operand, dims 1 and 2 do not either; all three stay.
  const Shape s = {2, 3, 4};
  const Strides a = {12, 4, 1}, b = {4, 0, 1};
  const MergedDims<2> m = merge_dims<2>(s, {&a, &b});
  ASSERT_EQ(m.rank, 3u);
  // Both contiguous: one dim of 24.
  const MergedDims<2> c = merge_dims<2>(s, {&a, &a});
  ASSERT_EQ(c.rank, 1u);
  EXPECT_EQ(c.size[0], 24);
  EXPECT_EQ(c.stride[1][0], 1);
}

TEST(MergeDimsTest, DropsSizeOneDimsAndKeepsTransposedOrder) {
  const Shape s = {1, 3, 1, 4};
  const Strides t = {99, 1, 7, 3};  // a transposed [4, 3] with size-1 dims of any stride
  const MergedDims<1> m = merge_dims<1>(s, {&t});
  ASSERT_EQ(m.rank, 2u);
  EXPECT_EQ(m.size[0], 3);
  EXPECT_EQ(m.size[1], 4);
  EXPECT_EQ(m.stride[0][0], 1);
  EXPECT_EQ(m.stride[0][1], 3);
  // In the order (3, 1) the same operand is one dense run of 12.
  const size_t order[] = {3, 1};
  const MergedDims<1> o = merge_dims<1>(s, {&t}, order, 2);
  ASSERT_EQ(o.rank, 1u);
  EXPECT_EQ(o.size[0], 12);
  EXPECT_EQ(o.stride[0][0], 1);
}

TEST(MergeDimsTest, EmptyShapeHasNoDims) {
  const Shape s = {3, 0, 2};
  const Strides t = {2, 2, 1};
  EXPECT_EQ(merge_dims<1>(s, {&t}).rank, 0u);
}

TEST(OpTraitsTest, NamesAreUniqueAndPredicatesReturnBool) {
  std::set<std::string> names;
  for (size_t i = 0; i < ir::kUnaryOpCount; ++i) {
    const auto op = ir::UnaryOp(i);
    EXPECT_TRUE(names.insert(ir::name(op)).second) << ir::name(op);
    EXPECT_EQ(ir::traits(op).op, op);
  }
  names.clear();
  for (size_t i = 0; i < ir::kBinaryOpCount; ++i) {
    const auto op = ir::BinaryOp(i);
    EXPECT_TRUE(names.insert(ir::name(op)).second) << ir::name(op);
  }
  // The frontend allocates the result from the table.
  const Tensor x = full({3}, 1.5);
  EXPECT_EQ(isnan(x).dtype(), DType::b8);
  EXPECT_EQ(exp(full({3}, 2, DType::i32)).dtype(), DType::f32);
  EXPECT_EQ(square(full({3}, true, DType::b8)).dtype(), DType::i64);
  EXPECT_EQ(lt(x, x).dtype(), DType::b8);
  EXPECT_STREQ(ir::user_name(ir::UnaryOp::gelu_tanh), "gelu");
  EXPECT_STREQ(ir::user_variant(ir::BinaryOp::div_trunc), "rounding_mode='trunc'");
  EXPECT_THROW(frac(full({3}, 1, DType::i64)), Error);
}

TEST(CpuDenseTest, CopiesWithoutRecordingHistory) {
  const Tensor x = arange(12, {DType::f32, Device::cpu()}).reshape({3, 4}).requires_grad_(true);
  const Tensor xt = x.t();
  const Tensor d = cpu::dense_copy(xt, DType::f64);
  EXPECT_TRUE(d.is_contiguous());
  EXPECT_EQ(d.dtype(), DType::f64);
  EXPECT_FALSE(d.requires_grad());
  EXPECT_EQ(d.to_vector<double>(), xt.contiguous().to(DType::f64).to_vector<double>());
  // Dense input comes back as itself; a batch-broadcast operand copies one matrix.
  EXPECT_TRUE(cpu::dense(x).is_alias_of(x));
  const Tensor b = xt.unsqueeze(0).expand({5, 4, 3});
  const Tensor bc = cpu::dense_batch_copy(b, DType::f32);
  EXPECT_EQ(bc.stride(0), 0);
  EXPECT_EQ(bc.stride(2), 1);
  EXPECT_EQ(bc.to_vector<float>(), b.contiguous().to_vector<float>());
}

}  // namespace
}  // namespace ember
