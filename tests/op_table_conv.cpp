// Op-table cases for convolutions, pooling and interpolation (ember::nn::functional).
#include <limits>

#include "op_table.h"

namespace ember::testing {
namespace {

namespace F = ember::nn::functional;
using Out = std::vector<Tensor>;

// The optional bias: the third input when the case has one.
Tensor bias_of(const Inputs& in) { return in.size() > 2 ? in[2] : Tensor(); }

// Accumulating ops (conv) get a wider tolerance for f16/bf16.
constexpr double kConvTol = 4.0;

int conv_case(const std::string& name, Shape x, Shape w, bool bias,
              std::function<Tensor(const Inputs&)> fn) {
  return register_case(OpCase{name,
                              float_dtypes(),
                              [x, w, bias](DType dt, uint64_t seed) {
                                Inputs in{uniform(x, dt, seed), uniform(w, dt, seed + 1, -1, 1)};
                                if (bias) in.push_back(uniform({w[0]}, dt, seed + 2));
                                return in;
                              },
                              [fn](const Inputs& in) { return Out{fn(in)}; },
                              {},
                              kConvTol});
}

int unary_case(const std::string& name, Shape x, std::vector<DType> dtypes,
               std::function<Out(const Tensor&)> fn, double tol = 1.0) {
  return register_case(OpCase{name,
                              std::move(dtypes),
                              [x](DType dt, uint64_t seed) { return Inputs{uniform(x, dt, seed)}; },
                              [fn](const Inputs& in) { return fn(in[0]); },
                              {},
                              tol});
}

const int kConv = [] {
  conv_case("conv1d/basic", {2, 3, 9}, {4, 3, 3}, true,
            [](const Inputs& i) { return F::conv1d(i[0], i[1], bias_of(i)); });
  conv_case("conv1d/stride2_pad2_dil2_groups3", {2, 6, 11}, {9, 2, 3}, true,
            [](const Inputs& i) { return F::conv1d(i[0], i[1], bias_of(i), {2}, {2}, {2}, 3); });
  conv_case("conv1d/same_even_kernel", {1, 2, 7}, {3, 2, 4}, false,
            [](const Inputs& i) { return F::conv1d(i[0], i[1], bias_of(i), {1}, "same"); });
  conv_case("conv2d/basic", {2, 3, 6, 5}, {4, 3, 3, 3}, true,
            [](const Inputs& i) { return F::conv2d(i[0], i[1], bias_of(i)); });
  conv_case("conv2d/stride2_pad1", {2, 3, 7, 6}, {5, 3, 3, 2}, true, [](const Inputs& i) {
    return F::conv2d(i[0], i[1], bias_of(i), {2, 1}, {1, 0});
  });
  conv_case("conv2d/dilation2_groups2", {1, 4, 8, 7}, {6, 2, 3, 3}, true, [](const Inputs& i) {
    return F::conv2d(i[0], i[1], bias_of(i), {1}, {1}, {2, 1}, 2);
  });
  conv_case("conv2d/depthwise", {2, 3, 5, 5}, {3, 1, 3, 3}, false,
            [](const Inputs& i) { return F::conv2d(i[0], i[1], bias_of(i), {1}, {1}, {1}, 3); });
  conv_case("conv2d/same_dilated", {1, 2, 6, 6}, {2, 2, 2, 3}, true,
            [](const Inputs& i) { return F::conv2d(i[0], i[1], bias_of(i), {1}, "same", {2}); });
  conv_case("conv2d/valid_unbatched", {3, 5, 5}, {2, 3, 2, 2}, true,
            [](const Inputs& i) { return F::conv2d(i[0], i[1], bias_of(i), {1}, "valid"); });
  conv_case("conv3d/basic", {1, 2, 4, 5, 4}, {3, 2, 2, 3, 2}, true,
            [](const Inputs& i) { return F::conv3d(i[0], i[1], bias_of(i)); });
  conv_case("conv3d/stride_pad_groups", {2, 4, 5, 4, 4}, {4, 2, 3, 3, 3}, false,
            [](const Inputs& i) { return F::conv3d(i[0], i[1], bias_of(i), {2}, {1}, {1}, 2); });
  // conv_transpose weights are [C_in, C_out / groups, *K]; bias has C_out = w[1] * groups values.
  auto ct_case = [](const std::string& name, Shape x, Shape w, int64_t c_out, auto fn) {
    return register_case(OpCase{name,
                                float_dtypes(),
                                [x, w, c_out](DType dt, uint64_t seed) {
                                  return Inputs{uniform(x, dt, seed),
                                                uniform(w, dt, seed + 1, -1, 1),
                                                uniform({c_out}, dt, seed + 2)};
                                },
                                [fn](const Inputs& in) { return Out{fn(in)}; },
                                {},
                                kConvTol});
  };
  ct_case("conv_transpose1d/stride2_outpad1", {2, 3, 5}, {3, 2, 3}, 2,
          [](const Inputs& i) { return F::conv_transpose1d(i[0], i[1], i[2], {2}, {1}, {1}); });
  ct_case("conv_transpose2d/basic", {2, 3, 4, 3}, {3, 4, 3, 3}, 4,
          [](const Inputs& i) { return F::conv_transpose2d(i[0], i[1], i[2]); });
  ct_case("conv_transpose2d/stride_groups_dilation", {1, 4, 3, 4}, {4, 3, 2, 3}, 6,
          [](const Inputs& i) {
            return F::conv_transpose2d(i[0], i[1], i[2], {2, 3}, {1}, {1, 0}, 2, {2, 1});
          });
  ct_case("conv_transpose3d/stride2", {1, 2, 3, 2, 3}, {2, 2, 2, 2, 2}, 2,
          [](const Inputs& i) { return F::conv_transpose3d(i[0], i[1], i[2], {2}, {0}, {1}); });
  return 0;
}();

const int kPool = [] {
  const auto flt = float_dtypes();
  const auto num = numeric_dtypes();
  unary_case("max_pool1d/k3_s2_p1_ceil", {2, 3, 10}, num, [](const Tensor& x) {
    auto [v, i] = F::max_pool1d_with_indices(x, {3}, {2}, {1}, {1}, true);
    return Out{v, i};
  });
  unary_case("max_pool2d/k2", {2, 3, 6, 7}, num, [](const Tensor& x) {
    auto [v, i] = F::max_pool2d_with_indices(x, {2});
    return Out{v, i};
  });
  unary_case("max_pool2d/k3_s2_p1_dil2", {1, 2, 9, 8}, flt, [](const Tensor& x) {
    auto [v, i] = F::max_pool2d_with_indices(x, {3, 2}, {2, 1}, {1}, {2, 1});
    return Out{v, i};
  });
  unary_case("max_pool2d/ceil_unbatched", {3, 7, 7}, flt,
             [](const Tensor& x) { return Out{F::max_pool2d(x, {3}, {2}, {0}, {1}, true)}; });
  unary_case("max_pool3d/k2_p1", {1, 2, 5, 4, 5}, flt, [](const Tensor& x) {
    auto [v, i] = F::max_pool3d_with_indices(x, {2}, {2}, {1});
    return Out{v, i};
  });
  unary_case("avg_pool1d/k3_s2_p1_ceil", {2, 3, 10}, flt,
             [](const Tensor& x) { return Out{F::avg_pool1d(x, {3}, {2}, {1}, true)}; });
  unary_case("avg_pool2d/k3_p1_nopad", {2, 2, 6, 7}, flt,
             [](const Tensor& x) { return Out{F::avg_pool2d(x, {3}, {1}, {1}, false, false)}; });
  unary_case("avg_pool2d/ceil_divisor", {1, 3, 7, 5}, flt, [](const Tensor& x) {
    return Out{F::avg_pool2d(x, {2, 3}, {2}, {1}, true, true, 5)};
  });
  unary_case("avg_pool3d/k2_ceil_nopad", {1, 2, 5, 5, 4}, flt,
             [](const Tensor& x) { return Out{F::avg_pool3d(x, {2}, {2}, {1}, true, false)}; });
  unary_case("adaptive_avg_pool1d", {2, 3, 10}, flt,
             [](const Tensor& x) { return Out{F::adaptive_avg_pool1d(x, {4})}; });
  unary_case("adaptive_avg_pool2d", {2, 3, 7, 9}, flt, [](const Tensor& x) {
    return Out{F::adaptive_avg_pool2d(x, {3, 4})};
  });
  unary_case("adaptive_avg_pool3d", {1, 2, 5, 4, 6}, flt, [](const Tensor& x) {
    return Out{F::adaptive_avg_pool3d(x, {2, 3, 4})};
  });
  unary_case("adaptive_max_pool2d", {2, 3, 7, 9}, num, [](const Tensor& x) {
    auto [v, i] = F::adaptive_max_pool2d_with_indices(x, {3, 5});
    return Out{v, i};
  });
  unary_case("adaptive_max_pool3d", {1, 2, 5, 4, 6}, num, [](const Tensor& x) {
    auto [v, i] = F::adaptive_max_pool3d_with_indices(x, {2, 3, 4});
    return Out{v, i};
  });
  // No element beats the initial -inf: the index is the window's first element (as torch).
  unary_case("adaptive_max_pool3d/all_neg_inf", {1, 2, 5, 4, 6}, flt, [](const Tensor& x) {
    auto [v, i] = F::adaptive_max_pool3d_with_indices(
        full_like(x, -std::numeric_limits<double>::infinity()), {2, 3, 4});
    return Out{v, i};
  });
  unary_case("adaptive_max_pool1d", {2, 5}, flt,
             [](const Tensor& x) { return Out{F::adaptive_max_pool1d(x, {3})}; });
  return 0;
}();

const int kInterpolate = [] {
  const auto flt = float_dtypes();
  const auto num = numeric_dtypes();
  unary_case("interpolate/nearest_2d", {2, 3, 4, 5}, num, [](const Tensor& x) {
    return Out{F::interpolate(x, {7, 3})};
  });
  unary_case("interpolate/nearest_scale", {1, 2, 5}, num,
             [](const Tensor& x) { return Out{F::interpolate(x, {}, {1.7})}; });
  unary_case("interpolate/nearest_exact_3d", {1, 2, 3, 4, 5}, num, [](const Tensor& x) {
    return Out{F::interpolate(x, {5, 3, 7}, {}, "nearest-exact")};
  });
  unary_case("interpolate/linear", {2, 3, 6}, flt,
             [](const Tensor& x) { return Out{F::interpolate(x, {11}, {}, "linear")}; });
  unary_case("interpolate/bilinear_align", {2, 3, 4, 5}, flt, [](const Tensor& x) {
    return Out{F::interpolate(x, {7, 3}, {}, "bilinear", true)};
  });
  unary_case("interpolate/bilinear_scale", {1, 2, 5, 4}, flt, [](const Tensor& x) {
    return Out{F::interpolate(x, {}, {1.5, 0.75}, "bilinear")};
  });
  unary_case(
      "interpolate/bicubic", {1, 2, 4, 5}, flt,
      [](const Tensor& x) {
        return Out{F::interpolate(x, {9, 6}, {}, "bicubic")};
      },
      2.0);
  unary_case(
      "interpolate/bicubic_align", {1, 2, 4, 5}, flt,
      [](const Tensor& x) { return Out{F::interpolate(x, {}, {2.0}, "bicubic", true)}; }, 2.0);
  unary_case("interpolate/trilinear", {1, 2, 3, 4, 3}, flt, [](const Tensor& x) {
    return Out{F::interpolate(x, {5, 2, 6}, {}, "trilinear")};
  });
  unary_case("interpolate/area", {2, 3, 7, 6}, flt, [](const Tensor& x) {
    return Out{F::interpolate(x, {3, 4}, {}, "area")};
  });
  return 0;
}();

}  // namespace
}  // namespace ember::testing
