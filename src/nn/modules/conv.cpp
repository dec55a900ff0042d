#include "ember/nn/modules/conv.h"

#include <cmath>

#include "ember/nn/init.h"
#include "ember/ops/layout.h"
#include "tensor/internal.h"

namespace ember::nn {

namespace fn = ember::nn::functional;

namespace {
std::string conv_name(size_t d, bool transposed) {
  return std::string(transposed ? "ConvTranspose" : "Conv") + std::to_string(d) + "d";
}

// Shared constructor checks (as torch's _ConvNd.__init__).
void check_conv_args(const std::string& name, int64_t in, int64_t out, int64_t groups,
                     const std::vector<int64_t>& k, const std::vector<int64_t>& stride,
                     const std::vector<int64_t>& dilation) {
  if (groups <= 0) EMBER_FAIL(name.c_str(), "groups must be a positive integer, got ", groups);
  if (in < 0 || out < 0) EMBER_FAIL(name.c_str(), "channels must be >= 0, got ", in, " and ", out);
  if (in % groups != 0)
    EMBER_FAIL(name.c_str(), "in_channels ", in, " must be divisible by groups ", groups);
  if (out % groups != 0)
    EMBER_FAIL(name.c_str(), "out_channels ", out, " must be divisible by groups ", groups);
  for (int64_t v : k)
    if (v < 1) EMBER_FAIL(name.c_str(), "kernel_size must be >= 1, got ", detail::tuple_str(k));
  for (int64_t v : stride)
    if (v < 1) EMBER_FAIL(name.c_str(), "stride must be >= 1, got ", detail::tuple_str(stride));
  for (int64_t v : dilation)
    if (v < 1) EMBER_FAIL(name.c_str(), "dilation must be >= 1, got ", detail::tuple_str(dilation));
}

// weight ~ kaiming_uniform_(a = sqrt(5)), bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
void reset_conv(Tensor& weight, Tensor& bias) {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    if (fan_in != 0) {
      const double bound = 1.0 / std::sqrt(double(fan_in));
      init::uniform_(bias, -bound, bound);
    } else {
      init::zeros_(bias);
    }
  }
}

std::string conv_repr(int64_t in, int64_t out, const std::vector<int64_t>& k,
                      const std::vector<int64_t>& stride, const std::string& padding_str,
                      const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
                      const std::vector<int64_t>* output_padding, int64_t groups, bool bias,
                      const std::string& padding_mode) {
  auto all = [](const std::vector<int64_t>& v, int64_t x) {
    for (int64_t e : v)
      if (e != x) return false;
    return true;
  };
  std::string s = std::to_string(in) + ", " + std::to_string(out) +
                  ", kernel_size=" + detail::tuple_str(k) + ", stride=" + detail::tuple_str(stride);
  if (!padding_str.empty())
    s += ", padding=" + padding_str;
  else if (!all(padding, 0))
    s += ", padding=" + detail::tuple_str(padding);
  if (!all(dilation, 1)) s += ", dilation=" + detail::tuple_str(dilation);
  if (output_padding && !all(*output_padding, 0))
    s += ", output_padding=" + detail::tuple_str(*output_padding);
  if (groups != 1) s += ", groups=" + std::to_string(groups);
  if (!bias) s += ", bias=False";
  if (padding_mode != "zeros") s += ", padding_mode=" + padding_mode;
  return s;
}
}  // namespace

template <size_t D>
ConvNd<D>::ConvNd(const ConvOptions<D>& o) : UnaryModule(conv_name(D, false)), options(o) {
  const std::string name = conv_name(D, false);
  check_conv_args(name, o.in_channels(), o.out_channels(), o.groups(), o.kernel_size().vec(),
                  o.stride().vec(), o.dilation().vec());
  const std::string& ps = o.padding_str();
  if (!ps.empty() && ps != "same" && ps != "valid")
    EMBER_FAIL(name.c_str(), "invalid padding string '", ps,
               "', should be one of {'valid', 'same'}");
  if (ps == "same" && !o.stride().all(1))
    EMBER_FAIL(name.c_str(), "padding='same' is not supported for strided convolutions");
  for (int64_t p : o.padding().vec())
    if (p < 0)
      EMBER_FAIL(name.c_str(), "padding must be >= 0, got ", detail::tuple_str(o.padding().vec()));
  const std::string& pm = o.padding_mode();
  if (pm != "zeros" && pm != "reflect" && pm != "replicate" && pm != "circular")
    EMBER_FAIL(name.c_str(),
               "padding_mode must be one of 'zeros', 'reflect', 'replicate' or "
               "'circular', got '",
               pm, "'");
  Shape ws = {o.out_channels(), o.in_channels() / o.groups()};
  for (int64_t k : o.kernel_size().vec()) ws.push_back(k);
  weight = register_parameter("weight", empty(ws));
  if (o.bias()) bias = register_parameter("bias", empty({o.out_channels()}));
  reset_parameters();
}

template <size_t D>
void ConvNd<D>::reset_parameters() {
  reset_conv(weight, bias);
}

template <size_t D>
Tensor ConvNd<D>::forward(const Tensor& x) {
  const auto& o = options;
  auto conv = [&](const Tensor& in, std::vector<int64_t> padding) {
    if (D == 1)
      return fn::conv1d(in, weight, bias, o.stride().vec(), padding, o.dilation().vec(),
                        o.groups());
    if (D == 2)
      return fn::conv2d(in, weight, bias, o.stride().vec(), padding, o.dilation().vec(),
                        o.groups());
    return fn::conv3d(in, weight, bias, o.stride().vec(), padding, o.dilation().vec(), o.groups());
  };
  if (o.padding_mode() == "zeros") {
    if (!o.padding_str().empty()) {
      fn::PaddingMode pm(o.padding_str());
      if (D == 1)
        return fn::conv1d(x, weight, bias, o.stride().vec(), pm, o.dilation().vec(), o.groups());
      if (D == 2)
        return fn::conv2d(x, weight, bias, o.stride().vec(), pm, o.dilation().vec(), o.groups());
      return fn::conv3d(x, weight, bias, o.stride().vec(), pm, o.dilation().vec(), o.groups());
    }
    return conv(x, o.padding().vec());
  }
  // Non-zero padding modes pad explicitly first (torch's _reversed_padding_repeated_twice).
  std::vector<int64_t> pads;
  for (size_t i = D; i-- > 0;) {
    int64_t left = 0, right = 0;
    if (o.padding_str() == "same") {
      const int64_t total = o.dilation().vec()[i] * (o.kernel_size().vec()[i] - 1);
      left = total / 2;
      right = total - left;
    } else if (o.padding_str().empty()) {
      left = right = o.padding().vec()[i];
    }
    pads.push_back(left);
    pads.push_back(right);
  }
  return conv(pad(x, pads, o.padding_mode()), std::vector<int64_t>(D, 0));
}

template <size_t D>
std::string ConvNd<D>::extra_repr() const {
  const auto& o = options;
  return conv_repr(o.in_channels(), o.out_channels(), o.kernel_size().vec(), o.stride().vec(),
                   o.padding_str(), o.padding().vec(), o.dilation().vec(), nullptr, o.groups(),
                   bias.defined(), o.padding_mode());
}

template <size_t D>
ConvTransposeNd<D>::ConvTransposeNd(const ConvTransposeOptions<D>& o)
    : UnaryModule(conv_name(D, true)), options(o) {
  const std::string name = conv_name(D, true);
  check_conv_args(name, o.in_channels(), o.out_channels(), o.groups(), o.kernel_size().vec(),
                  o.stride().vec(), o.dilation().vec());
  if (o.padding_mode() != "zeros")
    EMBER_FAIL(name.c_str(), "only 'zeros' padding mode is supported, got '", o.padding_mode(),
               "'");
  for (int64_t p : o.padding().vec())
    if (p < 0)
      EMBER_FAIL(name.c_str(), "padding must be >= 0, got ", detail::tuple_str(o.padding().vec()));
  Shape ws = {o.in_channels(), o.out_channels() / o.groups()};
  for (int64_t k : o.kernel_size().vec()) ws.push_back(k);
  weight = register_parameter("weight", empty(ws));
  if (o.bias()) bias = register_parameter("bias", empty({o.out_channels()}));
  reset_parameters();
}

template <size_t D>
void ConvTransposeNd<D>::reset_parameters() {
  reset_conv(weight, bias);
}

namespace {
template <size_t D>
Tensor conv_t(const Tensor& x, const Tensor& w, const Tensor& b, const ConvTransposeOptions<D>& o,
              const std::vector<int64_t>& output_padding) {
  if (D == 1)
    return fn::conv_transpose1d(x, w, b, o.stride().vec(), o.padding().vec(), output_padding,
                                o.groups(), o.dilation().vec());
  if (D == 2)
    return fn::conv_transpose2d(x, w, b, o.stride().vec(), o.padding().vec(), output_padding,
                                o.groups(), o.dilation().vec());
  return fn::conv_transpose3d(x, w, b, o.stride().vec(), o.padding().vec(), output_padding,
                              o.groups(), o.dilation().vec());
}
}  // namespace

template <size_t D>
Tensor ConvTransposeNd<D>::forward(const Tensor& x) {
  return conv_t<D>(x, weight, bias, options, options.output_padding().vec());
}

template <size_t D>
Tensor ConvTransposeNd<D>::forward(const Tensor& x, const std::vector<int64_t>& output_size) {
  const std::string name = conv_name(D, true);
  ember::detail::check_defined(x, name.c_str());
  if (output_size.size() != D && output_size.size() != D + 2 && !(output_size.size() == D + 1))
    EMBER_FAIL(name.c_str(), "output_size must have ", D, " or ", D + 2, " elements, got ",
               detail::tuple_str(output_size));
  if (x.dim() < int64_t(D))
    EMBER_FAIL(name.c_str(), "input ", shape_str(x.shape()), " has too few dims");
  std::vector<int64_t> op(D);
  const auto& o = options;
  for (size_t i = 0; i < D; ++i) {
    const int64_t want = output_size[output_size.size() - D + i];
    const int64_t in = x.size(x.dim() - int64_t(D) + int64_t(i));
    const int64_t min_size = (in - 1) * o.stride().vec()[i] - 2 * o.padding().vec()[i] +
                             o.dilation().vec()[i] * (o.kernel_size().vec()[i] - 1) + 1;
    const int64_t max_size = min_size + o.stride().vec()[i] - 1;
    if (want < min_size || want > max_size)
      EMBER_FAIL(name.c_str(), "requested an output size of ", detail::tuple_str(output_size),
                 ", but valid sizes for dim ", i, " range from ", min_size, " to ", max_size,
                 " (for an input of ", shape_str(x.shape()), ")");
    op[i] = want - min_size;
  }
  return conv_t<D>(x, weight, bias, o, op);
}

template <size_t D>
std::string ConvTransposeNd<D>::extra_repr() const {
  const auto& o = options;
  return conv_repr(o.in_channels(), o.out_channels(), o.kernel_size().vec(), o.stride().vec(), "",
                   o.padding().vec(), o.dilation().vec(), &o.output_padding().vec(), o.groups(),
                   bias.defined(), o.padding_mode());
}

template class ConvNd<1>;
template class ConvNd<2>;
template class ConvNd<3>;
template class ConvTransposeNd<1>;
template class ConvTransposeNd<2>;
template class ConvTransposeNd<3>;

}  // namespace ember::nn
