// The reference backend against values computed by PyTorch 1.13: tests/golden/make_golden.py
// writes tests/data/golden/*.json (inputs, options, outputs); each case here calls the Ember op
// of the same name on Device::ref() and compares dtype, shape and values. An op name without a
// mapping below is a failure, so every committed case runs.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ember/ember.h"

using json = nlohmann::json;
using namespace ember;
namespace F = ember::nn::functional;

namespace {

const std::string kDir = std::string(EMBER_TEST_DATA_DIR) + "/golden/";

json load(const std::string& file) {
  std::ifstream f(kDir + file);
  if (!f)
    throw std::runtime_error("cannot open " + kDir + file + " (run tests/golden/make_golden.py)");
  return json::parse(f);
}

double number(const json& v) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "nan") return NAN;
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
    throw std::runtime_error("bad number " + s);
  }
  return v.get<double>();
}

// An input: a tensor or a Python number (kept as a Scalar with its category).
struct Arg {
  Tensor t;
  Scalar s;
  bool is_scalar = false;
};

Tensor tensor_from_json(const json& j) {
  const DType dt = dtype_from_name(j["dtype"].get<std::string>());
  const Shape shape = j["shape"].get<std::vector<int64_t>>();
  const json& data = j["data"];
  if (is_floating(dt)) {
    std::vector<double> v;
    for (const auto& e : data) v.push_back(number(e));
    return from_vector<double>(v, shape, Device::ref()).to(dt);
  }
  std::vector<int64_t> v;
  for (const auto& e : data)
    v.push_back(e.is_boolean() ? int64_t(e.get<bool>()) : e.get<int64_t>());
  return from_vector<int64_t>(v, shape, Device::ref()).to(dt);
}

Arg arg_from_json(const json& j) {
  Arg a;
  if (!j.contains("scalar")) {
    a.t = tensor_from_json(j);
    return a;
  }
  a.is_scalar = true;
  const std::string kind = j["kind"].get<std::string>();
  if (kind == "bool")
    a.s = Scalar(j["scalar"].get<bool>());
  else if (kind == "int")
    a.s = Scalar(j["scalar"].get<int64_t>());
  else
    a.s = Scalar(number(j["scalar"]));
  return a;
}

using Args = std::vector<Arg>;
using Outs = std::vector<Tensor>;
using OpFn = std::function<Outs(const Args&, const json&)>;

std::vector<int64_t> ints(const json& a, const char* key) {
  return a.contains(key) ? a[key].get<std::vector<int64_t>>() : std::vector<int64_t>{};
}
Tensor opt(const Args& in, size_t k) { return k < in.size() ? in[k].t : Tensor(); }
template <typename T>
T get(const json& a, const char* key, T def) {
  return a.contains(key) ? a[key].get<T>() : def;
}
Outs pair(std::tuple<Tensor, Tensor> t) { return {std::get<0>(t), std::get<1>(t)}; }

// Binary ops taking tensor/tensor, tensor/scalar (and scalar/tensor where Ember has it).
OpFn binary(Tensor (*tt)(const Tensor&, const Tensor&), Tensor (*ts)(const Tensor&, const Scalar&),
            Tensor (*st)(const Scalar&, const Tensor&) = nullptr) {
  return [=](const Args& in, const json&) -> Outs {
    if (in[0].is_scalar) {
      if (!st) throw std::runtime_error("no scalar-tensor overload mapped");
      return {st(in[0].s, in[1].t)};
    }
    if (in[1].is_scalar) {
      if (!ts) throw std::runtime_error("no tensor-scalar overload mapped");
      return {ts(in[0].t, in[1].s)};
    }
    return {tt(in[0].t, in[1].t)};
  };
}

const std::map<std::string, OpFn>& ops() {
  static const std::map<std::string, OpFn> m = [] {
    std::map<std::string, OpFn> r;
    // ---- element-wise ----
    r["div"] = [](const Args& in, const json& a) -> Outs {
      const std::string mode = get<std::string>(a, "rounding_mode", "");
      return {in[1].is_scalar ? div(in[0].t, in[1].s, mode) : div(in[0].t, in[1].t, mode)};
    };
    r["remainder"] = binary(remainder, remainder);
    r["fmod"] = binary(fmod, fmod);
    r["floor_divide"] = binary(floor_divide, nullptr);
    r["pow"] = binary(pow, pow, pow);
    r["maximum"] = binary(maximum, nullptr);
    r["minimum"] = binary(minimum, nullptr);
    r["atan2"] = binary(atan2, nullptr);
    r["copysign"] = binary(copysign, nullptr);
    r["hypot"] = binary(hypot, nullptr);
    r["bitwise_left_shift"] = binary(bitwise_left_shift, nullptr);
    r["bitwise_right_shift"] = binary(bitwise_right_shift, nullptr);
    r["add"] = [](const Args& in, const json&) -> Outs { return {add(in[0].t, in[1].t)}; };
    r["sub"] = [](const Args& in, const json&) -> Outs { return {sub(in[0].t, in[1].t)}; };
    r["round"] = [](const Args& in, const json&) -> Outs { return {round(in[0].t)}; };
    r["sign"] = [](const Args& in, const json&) -> Outs { return {sign(in[0].t)}; };
    r["erfinv"] = [](const Args& in, const json&) -> Outs { return {erfinv(in[0].t)}; };
    r["frac"] = [](const Args& in, const json&) -> Outs { return {frac(in[0].t)}; };
    r["nan_to_num"] = [](const Args& in, const json&) -> Outs { return {nan_to_num(in[0].t)}; };
    r["clamp"] = [](const Args& in, const json&) -> Outs {
      return {clamp(in[0].t, in[1].s, in[2].s)};
    };
    r["lerp"] = [](const Args& in, const json&) -> Outs {
      return {lerp(in[0].t, in[1].t, in[2].s)};
    };

    // ---- reductions, scans, sorting ----
    r["var"] = [](const Args& in, const json& a) -> Outs {
      return {
          var(in[0].t, ints(a, "dims"), a["correction"].get<int64_t>(), a["keepdim"].get<bool>())};
    };
    r["std"] = [](const Args& in, const json& a) -> Outs {
      return {ember::std(in[0].t, ints(a, "dims"), a["correction"].get<int64_t>(),
                         a["keepdim"].get<bool>())};
    };
    r["norm"] = [](const Args& in, const json& a) -> Outs {
      return {norm(in[0].t, number(a["p"]), ints(a, "dims"), a["keepdim"].get<bool>())};
    };
    r["logsumexp"] = [](const Args& in, const json& a) -> Outs {
      return {logsumexp(in[0].t, ints(a, "dims"), a["keepdim"].get<bool>())};
    };
    r["argmax"] = [](const Args& in, const json& a) -> Outs {
      if (!a.contains("dim")) return {argmax(in[0].t)};
      return {argmax(in[0].t, a["dim"].get<int64_t>(), a["keepdim"].get<bool>())};
    };
    r["argmin"] = [](const Args& in, const json& a) -> Outs {
      if (!a.contains("dim")) return {argmin(in[0].t)};
      return {argmin(in[0].t, a["dim"].get<int64_t>(), a["keepdim"].get<bool>())};
    };
    r["max_dim"] = [](const Args& in, const json& a) -> Outs {
      return pair(max(in[0].t, a["dim"].get<int64_t>(), a["keepdim"].get<bool>()));
    };
    r["min_dim"] = [](const Args& in, const json& a) -> Outs {
      return pair(min(in[0].t, a["dim"].get<int64_t>(), a["keepdim"].get<bool>()));
    };
    r["max"] = [](const Args& in, const json&) -> Outs { return {max(in[0].t)}; };
    r["amax"] = [](const Args& in, const json& a) -> Outs {
      return {amax(in[0].t, ints(a, "dims"), a["keepdim"].get<bool>())};
    };
    r["cummax"] = [](const Args& in, const json& a) -> Outs {
      return pair(cummax(in[0].t, a["dim"].get<int64_t>()));
    };
    r["cummin"] = [](const Args& in, const json& a) -> Outs {
      return pair(cummin(in[0].t, a["dim"].get<int64_t>()));
    };
    r["cumsum"] = [](const Args& in, const json& a) -> Outs {
      return {cumsum(in[0].t, a["dim"].get<int64_t>())};
    };
    r["cumprod"] = [](const Args& in, const json& a) -> Outs {
      return {cumprod(in[0].t, a["dim"].get<int64_t>())};
    };
    r["sum"] = [](const Args& in, const json& a) -> Outs {
      return {sum(in[0].t, ints(a, "dims"), a["keepdim"].get<bool>())};
    };
    r["prod"] = [](const Args& in, const json& a) -> Outs {
      return {prod(in[0].t, ints(a, "dims"), a["keepdim"].get<bool>())};
    };
    r["mean"] = [](const Args& in, const json& a) -> Outs {
      return {mean(in[0].t, ints(a, "dims"), a["keepdim"].get<bool>())};
    };
    r["all"] = [](const Args& in, const json& a) -> Outs {
      return {all(in[0].t, ints(a, "dims"), a["keepdim"].get<bool>())};
    };
    r["count_nonzero"] = [](const Args& in, const json& a) -> Outs {
      return {count_nonzero(in[0].t, ints(a, "dims"))};
    };
    r["sort"] = [](const Args& in, const json& a) -> Outs {
      return pair(sort(in[0].t, a["dim"].get<int64_t>(), a["descending"].get<bool>(), true));
    };
    r["argsort"] = [](const Args& in, const json& a) -> Outs {
      return {argsort(in[0].t, a["dim"].get<int64_t>(), a["descending"].get<bool>(), true)};
    };
    r["topk"] = [](const Args& in, const json& a) -> Outs {
      return pair(topk(in[0].t, a["k"].get<int64_t>(), a["dim"].get<int64_t>(),
                       a["largest"].get<bool>(), true));
    };

    // ---- creation and layout ----
    r["linspace"] = [](const Args&, const json& a) -> Outs {
      DType dt = dtype_from_name(get<std::string>(a, "dtype", "float32"));
      return {linspace(a["start"].get<double>(), a["end"].get<double>(), a["steps"].get<int64_t>(),
                       TensorOptions(dt, Device::ref()))};
    };
    r["arange"] = [](const Args&, const json& a) -> Outs {
      auto sc = [](const json& v) {
        return v.is_number_integer() ? Scalar(v.get<int64_t>()) : Scalar(v.get<double>());
      };
      if (a.contains("dtype"))
        return {
            arange(sc(a["start"]), sc(a["end"]), sc(a["step"]),
                   TensorOptions(dtype_from_name(a["dtype"].get<std::string>()), Device::ref()))};
      Scalar s = sc(a["start"]), e = sc(a["end"]), st = sc(a["step"]);
      DType dt = s.is_float() || e.is_float() || st.is_float() ? DType::f32 : DType::i64;
      return {arange(s, e, st, TensorOptions(dt, Device::ref()))};
    };
    r["pad"] = [](const Args& in, const json& a) -> Outs {
      return {pad(in[0].t, ints(a, "pad"), a["mode"].get<std::string>(), a["value"].get<double>())};
    };
    r["roll"] = [](const Args& in, const json& a) -> Outs {
      return {roll(in[0].t, ints(a, "shifts"), ints(a, "dims"))};
    };
    r["triu"] = [](const Args& in, const json& a) -> Outs {
      return {triu(in[0].t, a["diagonal"].get<int64_t>())};
    };
    r["tril"] = [](const Args& in, const json& a) -> Outs {
      return {tril(in[0].t, a["diagonal"].get<int64_t>())};
    };
    return r;
  }();
  return m;
}

// Registers the nn mappings (golden_test_nn.inc keeps this file short).
void add_nn_ops(std::map<std::string, OpFn>& r);

const std::map<std::string, OpFn>& all_ops() {
  static const std::map<std::string, OpFn> m = [] {
    auto r = ops();
    add_nn_ops(r);
    return r;
  }();
  return m;
}

// "" when equal: dtype, shape, and values (floats within tolerance, NaN where NaN; ints exact).
std::string compare(const Tensor& want, const Tensor& got) {
  std::ostringstream os;
  if (!got.defined()) return "no result";
  if (got.dtype() != want.dtype())
    return std::string("dtype ") + dtype_name(got.dtype()) + ", want " + dtype_name(want.dtype());
  if (got.shape() != want.shape())
    return "shape " + shape_str(got.shape()) + ", want " + shape_str(want.shape());
  if (!is_floating(want.dtype())) {
    auto w = want.to(DType::i64).to_vector<int64_t>(), g = got.to(DType::i64).to_vector<int64_t>();
    for (size_t k = 0; k < w.size(); ++k)
      if (w[k] != g[k]) {
        os << "element " << k << ": got " << g[k] << ", want " << w[k];
        return os.str();
      }
    return "";
  }
  // f32: the reference computes in f32/f64 in its own order; allow a few ulps of f32 scaled by
  // the magnitude. f64 cases hold differences to rounding.
  const bool f64 = want.dtype() == DType::f64;
  const double rtol = f64 ? 1e-10 : 1e-5, atol = f64 ? 1e-12 : 1e-6;
  auto w = want.to(DType::f64).to_vector<double>(), g = got.to(DType::f64).to_vector<double>();
  for (size_t k = 0; k < w.size(); ++k) {
    const double a = g[k], b = w[k];
    const bool ok =
        (std::isnan(a) && std::isnan(b)) || a == b ||
        (std::isfinite(a) && std::isfinite(b) && std::fabs(a - b) <= atol + rtol * std::fabs(b));
    if (!ok) {
      os.precision(17);
      os << "element " << k << ": got " << a << ", want " << b;
      return os.str();
    }
  }
  return "";
}

void run_file(const std::string& file) {
  json cases = load(file);
  int passed = 0;
  for (const auto& c : cases) {
    const std::string name = c["name"].get<std::string>(), op = c["op"].get<std::string>();
    std::string error;
    try {
      auto it = all_ops().find(op);
      if (it == all_ops().end()) throw std::runtime_error("op '" + op + "' has no Ember mapping");
      Args in;
      for (const auto& j : c["inputs"]) in.push_back(arg_from_json(j));
      Outs got = it->second(in, c["args"]);
      const auto& want = c["outputs"];
      if (got.size() != want.size()) throw std::runtime_error("wrong number of outputs");
      for (size_t k = 0; k < got.size() && error.empty(); ++k) {
        error = compare(tensor_from_json(want[k]), got[k]);
        if (!error.empty()) error = "output " + std::to_string(k) + ": " + error;
      }
    } catch (const std::exception& e) {
      error = std::string("threw: ") + e.what();
    }
    if (error.empty())
      ++passed;
    else
      ADD_FAILURE() << file << " case " << name << " (" << op << "): " << error;
  }
  std::printf("%s: %d of %zu golden cases match PyTorch\n", file.c_str(), passed, cases.size());
  EXPECT_GT(cases.size(), 0u);
}

}  // namespace

TEST(GoldenTest, TypePromotionMatchesTorch) {
  json table = load("promotion.json");
  int passed = 0;
  for (const auto& e : table) {
    const std::string op = e["op"], kind = e["kind"];
    const DType a = dtype_from_name(e["a"].get<std::string>());
    const std::string bname = e["b"].get<std::string>();
    std::string got;
    try {
      const TensorOptions oa(a, Device::ref());
      Tensor x = kind == "0d-tensor" ? ones({}, oa) : ones({2}, oa);
      Tensor res;
      if (kind == "tensor-scalar") {
        Scalar s = bname == "bool" ? Scalar(true) : bname == "int" ? Scalar(2) : Scalar(2.5);
        res = op == "add" ? add(x, s) : op == "mul" ? mul(x, s) : div(x, s);
      } else {
        const TensorOptions ob(dtype_from_name(bname), Device::ref());
        Tensor y = kind == "tensor-0d" ? ones({}, ob) : ones({2}, ob);
        if (op == "add")
          res = add(x, y);
        else if (op == "mul")
          res = mul(x, y);
        else if (op == "div")
          res = div(x, y);
        else if (op == "maximum")
          res = maximum(x, y);
        else
          res = where(tensor<bool>({true, false}, {2}, Device::ref()), x, y);
      }
      got = dtype_name(res.dtype());
    } catch (const std::exception& ex) {
      got = std::string("threw: ") + ex.what();
    }
    const std::string want = dtype_name(dtype_from_name(e["result"].get<std::string>()));
    if (got == want)
      ++passed;
    else
      ADD_FAILURE() << op << " " << kind << " " << e["a"] << " x " << bname << ": got " << got
                    << ", want " << want;
  }
  std::printf("promotion.json: %d of %zu dtype results match PyTorch\n", passed, table.size());
  EXPECT_GT(table.size(), 0u);
}

TEST(GoldenTest, ElementwiseMatchesTorch) { run_file("elementwise.json"); }
TEST(GoldenTest, ReductionsMatchTorch) { run_file("reduce.json"); }
TEST(GoldenTest, CreationAndLayoutMatchTorch) { run_file("layout.json"); }
TEST(GoldenTest, ConvPoolInterpolateMatchTorch) { run_file("nn_conv_pool.json"); }
TEST(GoldenTest, ActivationsNormsLossesAttentionMatchTorch) { run_file("nn_misc.json"); }

#include "golden/golden_test_nn.inc"
