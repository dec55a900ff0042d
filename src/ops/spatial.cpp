// Frontends of the spatial primitives: allocate, issue the ir op, record its rule (spatial.h).
#include "ops/spatial.h"

#include "autodiff/rules.h"
#include "tensor/internal.h"
#include "tensor/suggest_format.h"

namespace ember::ops {

Tensor im2col(const Tensor& x, const std::vector<int64_t>& kernel,
              const std::vector<int64_t>& stride, const std::vector<int64_t>& pad_begin,
              const std::vector<int64_t>& dilation, const std::vector<int64_t>& out,
              const Scalar& pad_value) {
  int64_t k = 1, l = 1;
  for (size_t d = 0; d < kernel.size(); ++d) {
    k *= kernel[d];
    l *= out[d];
  }
  Tensor cols = detail::make_tensor({x.size(0), x.size(1) * k, l}, x.dtype(), x.device());
  const ir::Im2col op{x, cols, kernel, stride, pad_begin, dilation, pad_value, out};
  if (cols.numel() > 0) run(op);
  autograd::rules::im2col(op);
  return cols;
}

Tensor col2im(const Tensor& cols, int64_t channels, const std::vector<int64_t>& size,
              const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride,
              const std::vector<int64_t>& pad_begin, const std::vector<int64_t>& dilation,
              const std::vector<int64_t>& out) {
  Shape s{cols.size(0), channels};
  s.insert(s.end(), size.begin(), size.end());
  Tensor img = zeros(s, TensorOptions(cols.dtype(), cols.device()));
  const ir::Col2im op{cols, img, kernel, stride, pad_begin, dilation, out};
  if (img.numel() > 0 && cols.numel() > 0) run(op);
  autograd::rules::col2im(op);
  return img;
}

std::tuple<Tensor, Tensor> adaptive_pool(const Tensor& x, const std::vector<int64_t>& out,
                                         bool is_max, bool with_indices) {
  Shape s{x.size(0), x.size(1)};
  s.insert(s.end(), out.begin(), out.end());
  Tensor y = detail::make_tensor(s, x.dtype(), x.device());
  // Max's backward scatters to the argmax, so the indices are also computed when x needs grad.
  const bool want_idx = is_max && (with_indices || autograd::needs_grad({&x}));
  Tensor idx = want_idx ? detail::make_tensor(s, DType::i64, x.device()) : Tensor();
  const ir::AdaptivePool op{is_max, x, y, idx};
  if (y.numel() > 0) run(op);
  autograd::rules::adaptive_pool(op);
  return {y, with_indices ? idx : Tensor()};
}

Tensor interpolate(const Tensor& x, const std::vector<int64_t>& out, InterpMode mode,
                   bool align_corners, const std::vector<double>& scales) {
  Shape s{x.size(0), x.size(1)};
  s.insert(s.end(), out.begin(), out.end());
  Tensor y = detail::make_tensor(
      s, x.dtype(), x.device(),
      mode == InterpMode::cubic ? MemoryFormat::contiguous : detail::suggest_format(x));
  const ir::Interpolate op{mode, align_corners, scales, x, y};
  if (y.numel() > 0) run(op);
  autograd::rules::interpolate(op);
  return y;
}

}  // namespace ember::ops
