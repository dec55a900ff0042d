// Ember's gradients against PyTorch 1.13's autograd: tests/golden/make_grad_golden.py writes
// tests/data/golden/grads.json (f64 inputs, output, a random grad_output and the input
// gradients); each case here runs the Ember op, backpropagates the same grad_output and compares
// output and gradients (rtol 1e-6). An op name without a mapping below is a failure.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "ember/autograd.h"
#include "ember/ember.h"

using json = nlohmann::json;

namespace ember {
namespace {

namespace F = nn::functional;
using Ins = std::vector<Tensor>;
using Op = std::function<Tensor(const Ins&, const json&)>;

Tensor from_json(const json& j) {
  const std::string dt = j["dtype"].get<std::string>();
  const Shape shape = j["shape"].get<std::vector<int64_t>>();
  if (dt == "float64") return from_vector<double>(j["data"].get<std::vector<double>>(), shape);
  std::vector<int64_t> v;
  for (const auto& e : j["data"])
    v.push_back(e.is_boolean() ? int64_t(e.get<bool>()) : e.get<int64_t>());
  Tensor t = from_vector<int64_t>(v, shape);
  return dt == "bool" ? t.to(DType::b8) : t;
}

std::vector<int64_t> ivec(const json& a, const char* k) { return a[k].get<std::vector<int64_t>>(); }
template <typename T>
T get(const json& a, const char* k, T def) {
  return a.contains(k) ? a[k].get<T>() : def;
}
Tensor opt(const Ins& in, size_t i) { return i < in.size() ? in[i] : Tensor(); }
std::string red(const json& a) { return get<std::string>(a, "reduction", "mean"); }

const std::map<std::string, Op>& ops() {
  static const std::map<std::string, Op> m = {
      {"softmax",
       [](const Ins& in, const json& a) { return F::softmax(in[0], a["dim"].get<int64_t>()); }},
      {"log_softmax",
       [](const Ins& in, const json& a) { return F::log_softmax(in[0], a["dim"].get<int64_t>()); }},
      {"gelu", [](const Ins& in,
                  const json& a) { return F::gelu(in[0], a["approximate"].get<std::string>()); }},
      {"layer_norm",
       [](const Ins& in, const json& a) {
         return F::layer_norm(in[0], ivec(a, "normalized_shape"), opt(in, 1), opt(in, 2),
                              a["eps"].get<double>());
       }},
      {"group_norm",
       [](const Ins& in, const json& a) {
         return F::group_norm(in[0], a["num_groups"].get<int64_t>(), opt(in, 1), opt(in, 2),
                              a["eps"].get<double>());
       }},
      {"batch_norm",
       [](const Ins& in, const json& a) {
         return F::batch_norm(in[0], in[3], in[4], in[1], in[2], a["training"].get<bool>(),
                              a["momentum"].get<double>(), a["eps"].get<double>());
       }},
      {"rms_norm",
       [](const Ins& in, const json& a) {
         std::optional<double> eps;
         if (a.contains("eps")) eps = a["eps"].get<double>();
         return F::rms_norm(in[0], ivec(a, "normalized_shape"), opt(in, 1), eps);
       }},
      {"conv2d",
       [](const Ins& in, const json& a) {
         return F::conv2d(in[0], in[1], opt(in, 2), ivec(a, "stride"), ivec(a, "padding"),
                          ivec(a, "dilation"), a["groups"].get<int64_t>());
       }},
      {"conv_transpose2d",
       [](const Ins& in, const json& a) {
         return F::conv_transpose2d(in[0], in[1], opt(in, 2), ivec(a, "stride"), ivec(a, "padding"),
                                    ivec(a, "output_padding"), a["groups"].get<int64_t>(),
                                    ivec(a, "dilation"));
       }},
      {"max_pool2d",
       [](const Ins& in, const json& a) {
         return F::max_pool2d(in[0], ivec(a, "kernel_size"), ivec(a, "stride"), ivec(a, "padding"),
                              ivec(a, "dilation"), a["ceil_mode"].get<bool>());
       }},
      {"avg_pool2d",
       [](const Ins& in, const json& a) {
         return F::avg_pool2d(in[0], ivec(a, "kernel_size"), ivec(a, "stride"), ivec(a, "padding"),
                              a["ceil_mode"].get<bool>(), a["count_include_pad"].get<bool>());
       }},
      {"interpolate",
       [](const Ins& in, const json& a) {
         return F::interpolate(in[0], get<std::vector<int64_t>>(a, "size", {}),
                               get<std::vector<double>>(a, "scale_factor", {}),
                               a["mode"].get<std::string>(), a["align_corners"].get<bool>());
       }},
      {"scaled_dot_product_attention",
       [](const Ins& in, const json& a) {
         std::optional<double> scale;
         if (a.contains("scale")) scale = a["scale"].get<double>();
         return F::scaled_dot_product_attention(in[0], in[1], in[2], opt(in, 3), 0.0,
                                                get<bool>(a, "is_causal", false), scale);
       }},
      {"cross_entropy",
       [](const Ins& in, const json& a) {
         return F::cross_entropy(in[0], in[1], opt(in, 2), get<int64_t>(a, "ignore_index", -100),
                                 red(a), get<double>(a, "label_smoothing", 0.0));
       }},
      {"nll_loss",
       [](const Ins& in, const json& a) {
         return F::nll_loss(in[0], in[1], opt(in, 2), get<int64_t>(a, "ignore_index", -100),
                            red(a));
       }},
      {"binary_cross_entropy",
       [](const Ins& in, const json& a) {
         return F::binary_cross_entropy(in[0], in[1], opt(in, 2), red(a));
       }},
      {"binary_cross_entropy_with_logits",
       [](const Ins& in, const json& a) {
         return F::binary_cross_entropy_with_logits(in[0], in[1], opt(in, 2), red(a), opt(in, 3));
       }},
      {"huber_loss",
       [](const Ins& in, const json& a) {
         return F::huber_loss(in[0], in[1], red(a), a["delta"].get<double>());
       }},
      {"smooth_l1_loss",
       [](const Ins& in, const json& a) {
         return F::smooth_l1_loss(in[0], in[1], red(a), a["beta"].get<double>());
       }},
      {"kl_div",
       [](const Ins& in, const json& a) {
         return F::kl_div(in[0], in[1], red(a), a["log_target"].get<bool>());
       }},
  };
  return m;
}

// "" when every element of `got` is within rtol 1e-6 (plus a 1e-12 floor) of `want`.
std::string compare(const Tensor& got, const Tensor& want) {
  if (!got.defined()) return "undefined";
  if (got.shape() != want.shape())
    return "shape " + shape_str(got.shape()) + " vs " + shape_str(want.shape());
  const auto g = got.to(DType::f64).contiguous().to_vector<double>();
  const auto w = want.to_vector<double>();
  int64_t bad = 0;
  std::string first;
  for (size_t i = 0; i < g.size(); ++i) {
    const bool same_nan = std::isnan(g[i]) && std::isnan(w[i]);
    if (!same_nan && !(std::abs(g[i] - w[i]) <= 1e-12 + 1e-6 * std::abs(w[i]))) {
      if (bad++ == 0)
        first = "element " + std::to_string(i) + ": " + std::to_string(g[i]) + " vs torch " +
                std::to_string(w[i]);
    }
  }
  return bad ? std::to_string(bad) + " of " + std::to_string(g.size()) + " differ, first " + first
             : "";
}

TEST(GoldenGradTest, MatchesTorchAutograd) {
  const std::string path = std::string(EMBER_TEST_DATA_DIR) + "/golden/grads.json";
  std::ifstream f(path);
  ASSERT_TRUE(f) << "cannot open " << path << " (run tests/golden/make_grad_golden.py)";
  const json cases = json::parse(f);
  ASSERT_GE(cases.size(), 60u);
  int64_t grads_checked = 0;
  for (const json& c : cases) {
    const std::string name = c["name"].get<std::string>();
    SCOPED_TRACE(name);
    const auto it = ops().find(c["op"].get<std::string>());
    if (it == ops().end()) {
      ADD_FAILURE() << "no mapping for op " << c["op"];
      continue;
    }
    Ins in;
    std::vector<Tensor> leaves, want;
    for (size_t i = 0; i < c["inputs"].size(); ++i) {
      const json& j = c["inputs"][i];
      Tensor t = from_json(j);
      if (j["grad"].get<bool>()) {
        t.requires_grad_();
        leaves.push_back(t);
        want.push_back(from_json(c["grads"][i]));
      }
      in.push_back(t);
    }
    Tensor out;
    try {
      out = it->second(in, c["args"]);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "threw " << e.what();
      continue;
    }
    EXPECT_EQ(compare(out, from_json(c["output"])), "") << "output";
    const auto got = autograd::grad({out}, leaves, {from_json(c["grad_output"])}, false, true);
    for (size_t k = 0; k < leaves.size(); ++k) {
      const Tensor g = got[k].defined() ? got[k] : zeros_like(leaves[k]);
      EXPECT_EQ(compare(g, want[k]), "") << "gradient of input " << k;
      ++grads_checked;
    }
  }
  std::printf("golden grads: %zu cases, %lld input gradients\n", cases.size(),
              static_cast<long long>(grads_checked));
}

}  // namespace
}  // namespace ember
