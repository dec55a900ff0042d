// The reference backend against PyTorch 1.13 on signed zeros, infinities and NaN, bit for bit
// (the sign of zero, the infinity, NaN where NaN): tests/golden/make_golden.py special() writes
// tests/data/golden/special.json; the op table then holds every other backend to the reference.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "ember/ember.h"
#include "op_table.h"

namespace ember {
namespace {

using json = nlohmann::json;
namespace F = nn::functional;
using U = std::function<Tensor(const Tensor&)>;
using B = std::function<Tensor(const Tensor&, const Tensor&)>;

double number(const json& v) {
  if (!v.is_string()) return v.get<double>();
  const std::string s = v.get<std::string>();
  if (s == "nan") return NAN;
  if (s == "inf") return INFINITY;
  if (s == "-inf") return -INFINITY;
  throw std::runtime_error("bad number " + s);
}

Tensor tensor_from_json(const json& j) {
  std::vector<double> v;
  for (const auto& e : j["data"]) v.push_back(number(e));
  return from_vector<double>(v, j["shape"].get<std::vector<int64_t>>(), Device::ref())
      .to(dtype_from_name(j["dtype"].get<std::string>()));
}

const std::map<std::string, U>& unary_ops() {
  static const std::map<std::string, U> m = {
      {"neg", [](const Tensor& x) { return neg(x); }},
      {"abs", [](const Tensor& x) { return abs(x); }},
      {"sign", [](const Tensor& x) { return sign(x); }},
      {"exp", [](const Tensor& x) { return exp(x); }},
      {"expm1", [](const Tensor& x) { return expm1(x); }},
      {"log", [](const Tensor& x) { return log(x); }},
      {"log1p", [](const Tensor& x) { return log1p(x); }},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }},
      {"square", [](const Tensor& x) { return square(x); }},
      {"reciprocal", [](const Tensor& x) { return reciprocal(x); }},
      {"sin", [](const Tensor& x) { return sin(x); }},
      {"cos", [](const Tensor& x) { return cos(x); }},
      {"tan", [](const Tensor& x) { return tan(x); }},
      {"asin", [](const Tensor& x) { return asin(x); }},
      {"atan", [](const Tensor& x) { return atan(x); }},
      {"sinh", [](const Tensor& x) { return sinh(x); }},
      {"tanh", [](const Tensor& x) { return tanh(x); }},
      {"asinh", [](const Tensor& x) { return asinh(x); }},
      {"atanh", [](const Tensor& x) { return atanh(x); }},
      {"erf", [](const Tensor& x) { return erf(x); }},
      {"erfinv", [](const Tensor& x) { return erfinv(x); }},
      {"floor", [](const Tensor& x) { return floor(x); }},
      {"ceil", [](const Tensor& x) { return ceil(x); }},
      {"round", [](const Tensor& x) { return round(x); }},
      {"trunc", [](const Tensor& x) { return trunc(x); }},
      {"frac", [](const Tensor& x) { return frac(x); }},
      {"nan_to_num", [](const Tensor& x) { return nan_to_num(x); }},
      {"relu", [](const Tensor& x) { return F::relu(x); }},
      {"relu6", [](const Tensor& x) { return F::relu6(x); }},
      {"hardtanh", [](const Tensor& x) { return F::hardtanh(x); }},
      {"leaky_relu", [](const Tensor& x) { return F::leaky_relu(x); }},
      {"elu", [](const Tensor& x) { return F::elu(x); }},
      {"selu", [](const Tensor& x) { return F::selu(x); }},
      {"celu", [](const Tensor& x) { return F::celu(x); }},
      {"silu", [](const Tensor& x) { return F::silu(x); }},
      {"mish", [](const Tensor& x) { return F::mish(x); }},
      {"softplus", [](const Tensor& x) { return F::softplus(x); }},
      {"hardsigmoid", [](const Tensor& x) { return F::hardsigmoid(x); }},
      {"hardswish", [](const Tensor& x) { return F::hardswish(x); }},
      {"sigmoid", [](const Tensor& x) { return F::sigmoid(x); }},
      {"log_sigmoid", [](const Tensor& x) { return F::log_sigmoid(x); }},
      {"softsign", [](const Tensor& x) { return F::softsign(x); }},
      {"tanhshrink", [](const Tensor& x) { return F::tanhshrink(x); }},
      {"hardshrink", [](const Tensor& x) { return F::hardshrink(x); }},
      {"sum", [](const Tensor& x) { return sum(x); }},
      {"prod", [](const Tensor& x) { return prod(x); }},
      {"mean", [](const Tensor& x) { return mean(x); }},
      {"cumsum", [](const Tensor& x) { return cumsum(x, 0); }},
      {"cumprod", [](const Tensor& x) { return cumprod(x, 0); }},
  };
  return m;
}

const std::map<std::string, B>& binary_ops() {
  static const std::map<std::string, B> m = {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); }},
      {"div_floor", [](const Tensor& a, const Tensor& b) { return div(a, b, "floor"); }},
      {"div_trunc", [](const Tensor& a, const Tensor& b) { return div(a, b, "trunc"); }},
      {"remainder", [](const Tensor& a, const Tensor& b) { return remainder(a, b); }},
      {"fmod", [](const Tensor& a, const Tensor& b) { return fmod(a, b); }},
      {"pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); }},
      {"atan2", [](const Tensor& a, const Tensor& b) { return atan2(a, b); }},
      {"hypot", [](const Tensor& a, const Tensor& b) { return hypot(a, b); }},
      {"copysign", [](const Tensor& a, const Tensor& b) { return copysign(a, b); }},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }},
  };
  return m;
}

TEST(GoldenSpecial, SignedZerosInfinitiesAndNanMatchTorchBitForBit) {
  std::ifstream f(std::string(EMBER_TEST_DATA_DIR) + "/golden/special.json");
  ASSERT_TRUE(f) << "run tests/golden/make_golden.py";
  const json cases = json::parse(f);
  int passed = 0;
  for (const auto& c : cases) {
    const std::string name = c["name"], op = c["op"], fn = c["args"]["fn"];
    std::string error;
    try {
      Tensor got;
      if (op == "special_unary") {
        got = unary_ops().at(fn)(tensor_from_json(c["inputs"][0]));
      } else {
        got =
            binary_ops().at(fn)(tensor_from_json(c["inputs"][0]), tensor_from_json(c["inputs"][1]));
      }
      error = testing::compare(tensor_from_json(c["outputs"][0]), got);
    } catch (const std::exception& e) {
      error = std::string("threw: ") + e.what();
    }
    if (error.empty())
      ++passed;
    else
      ADD_FAILURE() << "special.json case " << name << ": " << error;
  }
  std::printf("special.json: %d of %zu golden cases match PyTorch bit for bit\n", passed,
              cases.size());
  EXPECT_GT(cases.size(), 0u);
}

}  // namespace
}  // namespace ember
