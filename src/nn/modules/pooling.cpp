#include "ember/nn/modules/pooling.h"

#include "ember/nn/functional/pool.h"
#include "tensor/internal.h"

namespace ember::nn {

namespace fn = ember::nn::functional;

namespace {
std::string name_of(const char* base, size_t d) { return base + std::to_string(d) + "d"; }
}  // namespace

template <size_t D>
MaxPoolNd<D>::MaxPoolNd(const MaxPoolOptions<D>& o)
    : UnaryModule(name_of("MaxPool", D)), options(o) {}

template <size_t D>
Tensor MaxPoolNd<D>::forward(const Tensor& x) {
  const auto& o = options;
  if (D == 1)
    return fn::max_pool1d(x, o.kernel_size().vec(), o.stride().vec(), o.padding().vec(),
                          o.dilation().vec(), o.ceil_mode());
  if (D == 2)
    return fn::max_pool2d(x, o.kernel_size().vec(), o.stride().vec(), o.padding().vec(),
                          o.dilation().vec(), o.ceil_mode());
  return fn::max_pool3d(x, o.kernel_size().vec(), o.stride().vec(), o.padding().vec(),
                        o.dilation().vec(), o.ceil_mode());
}

template <size_t D>
std::tuple<Tensor, Tensor> MaxPoolNd<D>::forward_with_indices(const Tensor& x) {
  const auto& o = options;
  if (D == 1)
    return fn::max_pool1d_with_indices(x, o.kernel_size().vec(), o.stride().vec(),
                                       o.padding().vec(), o.dilation().vec(), o.ceil_mode());
  if (D == 2)
    return fn::max_pool2d_with_indices(x, o.kernel_size().vec(), o.stride().vec(),
                                       o.padding().vec(), o.dilation().vec(), o.ceil_mode());
  return fn::max_pool3d_with_indices(x, o.kernel_size().vec(), o.stride().vec(), o.padding().vec(),
                                     o.dilation().vec(), o.ceil_mode());
}

template <size_t D>
std::string MaxPoolNd<D>::extra_repr() const {
  const auto& o = options;
  return "kernel_size=" + detail::arg_str(o.kernel_size()) +
         ", stride=" + detail::arg_str(o.stride()) + ", padding=" + detail::arg_str(o.padding()) +
         ", dilation=" + detail::arg_str(o.dilation()) +
         ", ceil_mode=" + detail::bool_str(o.ceil_mode());
}

template <size_t D>
AvgPoolNd<D>::AvgPoolNd(const AvgPoolOptions<D>& o)
    : UnaryModule(name_of("AvgPool", D)), options(o) {
  if (D == 1 && o.divisor_override())
    EMBER_FAIL("AvgPool1d", "divisor_override is not supported by AvgPool1d (as torch)");
}

template <size_t D>
Tensor AvgPoolNd<D>::forward(const Tensor& x) {
  const auto& o = options;
  if (D == 1)
    return fn::avg_pool1d(x, o.kernel_size().vec(), o.stride().vec(), o.padding().vec(),
                          o.ceil_mode(), o.count_include_pad());
  if (D == 2)
    return fn::avg_pool2d(x, o.kernel_size().vec(), o.stride().vec(), o.padding().vec(),
                          o.ceil_mode(), o.count_include_pad(), o.divisor_override());
  return fn::avg_pool3d(x, o.kernel_size().vec(), o.stride().vec(), o.padding().vec(),
                        o.ceil_mode(), o.count_include_pad(), o.divisor_override());
}

template <size_t D>
std::string AvgPoolNd<D>::extra_repr() const {
  const auto& o = options;
  // torch's AvgPool1d stores _single(...) tuples; AvgPool2d/3d keep the values as given.
  auto str = [](const ExpandingArray<D>& a) {
    return D == 1 ? detail::tuple_str(a.vec()) : detail::arg_str(a);
  };
  return "kernel_size=" + str(o.kernel_size()) + ", stride=" + str(o.stride()) +
         ", padding=" + str(o.padding());
}

template <size_t D>
AdaptiveAvgPoolNd<D>::AdaptiveAvgPoolNd(ExpandingArray<D> output_size)
    : UnaryModule(name_of("AdaptiveAvgPool", D)), output_size(std::move(output_size)) {}

template <size_t D>
Tensor AdaptiveAvgPoolNd<D>::forward(const Tensor& x) {
  if (D == 1) return fn::adaptive_avg_pool1d(x, output_size.vec());
  return fn::adaptive_avg_pool2d(x, output_size.vec());
}

template <size_t D>
std::string AdaptiveAvgPoolNd<D>::extra_repr() const {
  return "output_size=" + detail::arg_str(output_size);
}

Tensor AdaptiveMaxPool2d::forward(const Tensor& x) {
  return fn::adaptive_max_pool2d(x, output_size.vec());
}
std::tuple<Tensor, Tensor> AdaptiveMaxPool2d::forward_with_indices(const Tensor& x) {
  return fn::adaptive_max_pool2d_with_indices(x, output_size.vec());
}
std::string AdaptiveMaxPool2d::extra_repr() const {
  return "output_size=" + detail::arg_str(output_size);
}

template class MaxPoolNd<1>;
template class MaxPoolNd<2>;
template class MaxPoolNd<3>;
template class AvgPoolNd<1>;
template class AvgPoolNd<2>;
template class AvgPoolNd<3>;
template class AdaptiveAvgPoolNd<1>;
template class AdaptiveAvgPoolNd<2>;

}  // namespace ember::nn
