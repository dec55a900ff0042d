// Linear-algebra frontend: torch.matmul's shape rules lowered to one ir::Matmul ([B, M, K] x
// [B, K, N]); mm, bmm, dot, outer and linear are written on top of it.
#include "ember/ops/linalg.h"

#include <algorithm>

#include "autodiff/rules.h"
#include "ember/ops/elementwise.h"
#include "tensor/autocast.h"
#include "tensor/internal.h"

namespace ember {

using detail::check_defined;
using detail::make_tensor;
using detail::amp::Policy;
using detail::amp::Scope;

namespace {

[[noreturn]] void fail_shapes(const char* op, const Tensor& a, const Tensor& b, int64_t ka,
                              int64_t kb) {
  EMBER_FAIL(op, "shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()),
             " cannot be multiplied (", ka, " != ", kb, ")");
}

// The common dtype of a matmul's operands (bool has no matmul, as in torch).
DType matmul_dtype(const char* op, const Tensor& a, const Tensor& b) {
  detail::check_same_device(a, b, op);
  const DType dt = promote_types(a.dtype(), b.dtype());
  if (is_bool(dt))
    EMBER_FAIL(op, "is not supported for bool tensors (", detail::describe(a), " and ",
               detail::describe(b), ")");
  return dt;
}

// [Bt, M, K] x [Bt, K, N] -> [Bt, M, N]; operands already share a dtype and device.
Tensor batched(const Tensor& a, const Tensor& b) {
  Tensor out = make_tensor({a.size(0), a.size(1), b.size(2)}, a.dtype(), a.device(), /*lazy=*/true);
  run(ir::Matmul{a, b, out});
  autograd::rules::matmul(a, b, out);
  return out;
}

// [M, K] x [K, N] -> [M, N].
Tensor mm2(const Tensor& a, const Tensor& b) {
  return batched(a.unsqueeze(0), b.unsqueeze(0)).squeeze(0);
}

Tensor matmul_impl(const char* op, Tensor a, Tensor b) {
  const DType dt = matmul_dtype(op, a, b);
  if (a.dim() == 0 || b.dim() == 0)
    EMBER_FAIL(op, "both arguments need at least 1 dim, got shapes ", shape_str(a.shape()), " and ",
               shape_str(b.shape()));
  const int64_t ka = a.size(-1), kb = b.dim() == 1 ? b.size(0) : b.size(-2);
  if (ka != kb) fail_shapes(op, a, b, ka, kb);
  a = detail::cast(a, dt);
  b = detail::cast(b, dt);
  const bool a1 = a.dim() == 1, b1 = b.dim() == 1;
  const int64_t K = ka, M = a1 ? 1 : a.size(-2), N = b1 ? 1 : b.size(-1);
  const Tensor A = a1 ? a.unsqueeze(0) : a;
  const Tensor B = b1 ? b.unsqueeze(1) : b;

  // The batch dims of the result, then [M] unless a was 1-d, then [N] unless b was 1-d.
  Shape batch;
  if (A.dim() > 2 || B.dim() > 2) {
    const Shape ba(A.shape().begin(), A.shape().end() - 2);
    const Shape bb(B.shape().begin(), B.shape().end() - 2);
    // Checked here so that the error names both full shapes, not only the batch dims.
    for (size_t i = 1; i <= std::min(ba.size(), bb.size()); ++i) {
      const int64_t x = ba[ba.size() - i], y = bb[bb.size() - i];
      if (x != y && x != 1 && y != 1)
        EMBER_FAIL(op, "shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()),
                   " cannot be multiplied: batch dims ", shape_str(ba), " and ", shape_str(bb),
                   " do not broadcast (", x, " != ", y, ")");
    }
    batch = broadcast_shapes(ba, bb, op);
  }
  Shape final_shape = batch;
  if (!a1) final_shape.push_back(M);
  if (!b1) final_shape.push_back(N);

  if (A.dim() == 2 && B.dim() == 2) return mm2(A, B).reshape(final_shape);
  if (B.dim() == 2) {
    // A batched matrix times one matrix: fold A's batch into its rows (one big product).
    const int64_t rows = numel_of(Shape(A.shape().begin(), A.shape().end() - 1));
    return mm2(A.reshape({rows, K}), B).reshape(final_shape);
  }
  const int64_t bt = numel_of(batch);
  Shape sa = batch, sb = batch;
  sa.insert(sa.end(), {M, K});
  sb.insert(sb.end(), {K, N});
  const Tensor A3 = A.expand(sa).reshape({bt, M, K});
  const Tensor B3 = B.expand(sb).reshape({bt, K, N});
  return batched(A3, B3).reshape(final_shape);
}

// beta * input + alpha * (a @ b) (torch.addmm / baddbmm) with `mul` = mm or bmm: input
// broadcasts to the product's shape; beta = 0 ignores input (NaN and inf in it included), as
// torch. f16/bf16 operands are multiplied and combined in f32 and rounded once, as torch's fused
// kernel: rounding the product first loses its low bits where beta * input cancels it.
Tensor add_product(const char* op, const Tensor& input, const Tensor& a, const Tensor& b,
                   const Scalar& beta, const Scalar& alpha,
                   Tensor (*mul_fn)(const Tensor&, const Tensor&)) {
  const DType dt = promote_types(input.dtype(), promote_types(a.dtype(), b.dtype()));
  const bool half = dt == DType::f16 || dt == DType::bf16;
  const Tensor product = half ? mul_fn(a.to(DType::f32), b.to(DType::f32)) : mul_fn(a, b);
  const Shape s = broadcast_shapes(input.shape(), product.shape(), op);
  if (s != product.shape())
    EMBER_FAIL(op, "input of shape ", shape_str(input.shape()),
               " does not broadcast to the product's shape ", shape_str(product.shape()));
  const Tensor p = alpha.to_double() == 1.0 ? product : mul(product, alpha);
  if (beta.to_double() == 0.0) return p.to(dt);
  const Tensor in = beta.to_double() == 1.0 ? input : mul(input, beta);
  return add(in, p).to(dt);
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  if (Scope s{Policy::lower, {&a, &b}}) return matmul(s(a), s(b));
  return matmul_impl("matmul", a, b);
}

Tensor Tensor::matmul(const Tensor& o) const { return ember::matmul(*this, o); }

Tensor mm(const Tensor& a, const Tensor& b) {
  if (Scope s{Policy::lower, {&a, &b}}) return mm(s(a), s(b));
  matmul_dtype("mm", a, b);
  if (a.dim() != 2 || b.dim() != 2)
    EMBER_FAIL("mm", "expects 2-d tensors, got shapes ", shape_str(a.shape()), " and ",
               shape_str(b.shape()));
  return matmul_impl("mm", a, b);
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  if (Scope s{Policy::lower, {&a, &b}}) return bmm(s(a), s(b));
  matmul_dtype("bmm", a, b);
  if (a.dim() != 3 || b.dim() != 3)
    EMBER_FAIL("bmm", "expects 3-d tensors, got shapes ", shape_str(a.shape()), " and ",
               shape_str(b.shape()));
  if (a.size(0) != b.size(0))
    EMBER_FAIL("bmm", "batch sizes differ: shapes ", shape_str(a.shape()), " and ",
               shape_str(b.shape()));
  return matmul_impl("bmm", a, b);
}

Tensor dot(const Tensor& a, const Tensor& b) {
  matmul_dtype("dot", a, b);
  if (a.dim() != 1 || b.dim() != 1)
    EMBER_FAIL("dot", "expects 1-d tensors, got shapes ", shape_str(a.shape()), " and ",
               shape_str(b.shape()));
  return matmul_impl("dot", a, b);
}

Tensor outer(const Tensor& a, const Tensor& b) {
  detail::check_same_device(a, b, "outer");
  if (a.dim() != 1 || b.dim() != 1)
    EMBER_FAIL("outer", "expects 1-d tensors, got shapes ", shape_str(a.shape()), " and ",
               shape_str(b.shape()));
  return mul(a.unsqueeze(1), b.unsqueeze(0));
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (Scope s{Policy::lower, {&x, &weight, &bias}}) return linear(s(x), s(weight), s(bias));
  detail::check_same_device(x, weight, "linear");
  if (weight.dim() != 1 && weight.dim() != 2)
    EMBER_FAIL("linear", "weight must be [out_features, in_features], got shape ",
               shape_str(weight.shape()));
  if (x.dim() == 0)
    EMBER_FAIL("linear", "input must have at least 1 dim, got shape ", shape_str(x.shape()));
  if (x.size(-1) != weight.size(-1))
    EMBER_FAIL("linear", "input features ", x.size(-1), " do not match weight's in_features ",
               weight.size(-1), " (input ", shape_str(x.shape()), ", weight ",
               shape_str(weight.shape()), ")");
  if (bias.defined()) {
    detail::check_same_device(x, bias, "linear");
    const int64_t out_f = weight.dim() == 2 ? weight.size(0) : 1;
    const bool ok =
        bias.dim() == 0 || (bias.dim() == 1 && (bias.size(0) == out_f || bias.size(0) == 1));
    if (!ok || (weight.dim() == 1 && bias.numel() != 1))
      EMBER_FAIL("linear", "bias must be [out_features] = [", out_f, "], got shape ",
                 shape_str(bias.shape()), " (weight ", shape_str(weight.shape()), ")");
  }
  Tensor y = matmul_impl("linear", x, weight.t());
  return bias.defined() ? add(y, bias) : y;
}

Tensor addmm(const Tensor& input, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
             const Scalar& alpha) {
  if (Scope s{Policy::lower, {&input, &mat1, &mat2}})
    return addmm(s(input), s(mat1), s(mat2), beta, alpha);
  check_defined(input, "addmm");
  detail::check_same_device(input, mat1, "addmm");
  if (mat1.dim() != 2 || mat2.dim() != 2)
    EMBER_FAIL("addmm", "expects 2-d mat1 and mat2, got shapes ", shape_str(mat1.shape()), " and ",
               shape_str(mat2.shape()));
  return add_product("addmm", input, mat1, mat2, beta, alpha, &mm);
}

Tensor baddbmm(const Tensor& input, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
               const Scalar& alpha) {
  if (Scope s{Policy::lower, {&input, &batch1, &batch2}})
    return baddbmm(s(input), s(batch1), s(batch2), beta, alpha);
  check_defined(input, "baddbmm");
  detail::check_same_device(input, batch1, "baddbmm");
  return add_product("baddbmm", input, batch1, batch2, beta, alpha, &bmm);
}

}  // namespace ember
