// The reference backend against the ONNX backend node tests (Debian's libonnx-testdata): every
// /usr/share/libonnx-testdata/data/node/test_*/ directory is read; a test is "covered" when each
// node of its graph has an Ember mapping (tests/onnx/onnx_ops*.cpp) that accepts its attributes
// and types, decided before running anything. Covered tests run on Device::ref() and must match
// every test_data_set_* output: rtol 1e-3, atol 1e-7 for floats (ONNX's own), exact otherwise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "ember/ember.h"
#include "onnx/onnx_ops.h"
#include "onnx/onnx_reader.h"

namespace fs = std::filesystem;
using namespace ember;
using namespace ember::onnx_test;

namespace {

struct DefaultDeviceGuard {
  Device saved = Device::default_device();
  DefaultDeviceGuard() { Device::set_default_device(Device::ref()); }
  ~DefaultDeviceGuard() { Device::set_default_device(saved); }
};

int64_t model_opset(const onnx::ModelProto& m) {
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  return 1;
}

// The element type of a value_info when it is a tensor; 0 (with `why`) otherwise.
int32_t tensor_type(const onnx::ValueInfoProto& v, std::string& why) {
  if (!v.type().has_tensor_type()) {
    why = v.type().has_sequence_type()   ? "sequence type"
          : v.type().has_optional_type() ? "optional type"
                                         : "non-tensor type";
    return 0;
  }
  return v.type().tensor_type().elem_type();
}

struct Classified {
  std::string op;      // the op type the reason is about ("" when covered)
  std::string reason;  // "" when covered
};

Classified classify(const onnx::ModelProto& model, std::map<std::string, int32_t>& types) {
  const auto& g = model.graph();
  const int64_t opset = model_opset(model);
  std::string first_op = g.node_size() ? g.node(0).op_type() : "<empty graph>";
  auto io = [&](const onnx::ValueInfoProto& v) -> std::string {
    std::string why;
    int32_t t = tensor_type(v, why);
    if (!why.empty()) return why;
    DType d;
    if (!dtype_from_onnx(t, d)) return "tensor type " + onnx_type_name(t);
    types[v.name()] = t;
    return "";
  };
  for (const auto& v : g.input())
    if (auto why = io(v); !why.empty()) return {first_op, "graph input: " + why};
  for (const auto& v : g.output())
    if (auto why = io(v); !why.empty()) return {first_op, "graph output: " + why};
  for (const auto& v : g.value_info()) {
    std::string why;
    int32_t t = tensor_type(v, why);
    if (why.empty()) types[v.name()] = t;
  }
  for (const auto& t : g.initializer()) types[t.name()] = t.data_type();
  if (g.sparse_initializer_size()) return {first_op, "sparse initializer"};
  auto& reg = op_registry();
  for (const auto& n : g.node()) {
    if (!n.domain().empty() && n.domain() != "ai.onnx")
      return {n.op_type(), "domain " + n.domain()};
    auto it = reg.find(n.op_type());
    if (it == reg.end()) return {n.op_type(), "op not mapped"};
    for (const auto& a : n.attribute())
      if (a.has_g() || a.graphs_size()) return {n.op_type(), "subgraph attribute"};
    Node node{n, opset, {}};
    for (const auto& in : n.input()) node.input_types.push_back(types.count(in) ? types[in] : 0);
    std::string why = it->second.check(node);
    if (!why.empty()) return {n.op_type(), why};
  }
  return {"", ""};
}

// "" when equal within ONNX's tolerances, else the first difference.
std::string compare(const Tensor& want, const Tensor& got) {
  std::ostringstream os;
  if (!got.defined()) return "no output";
  if (got.dtype() != want.dtype())
    return std::string("dtype ") + dtype_name(got.dtype()) + ", want " + dtype_name(want.dtype());
  if (got.shape() != want.shape())
    return "shape " + shape_str(got.shape()) + ", want " + shape_str(want.shape());
  const bool fl = is_floating(want.dtype());
  if (!fl) {
    // Exact: compare through i64 (u64 values above 2^63 keep their bits).
    auto w = want.to(DType::i64).to_vector<int64_t>(),
         g = got.to(Device::ref()).to(DType::i64).to_vector<int64_t>();
    for (size_t k = 0; k < w.size(); ++k)
      if (w[k] != g[k]) {
        os << "element " << k << ": got " << g[k] << ", want " << w[k];
        return os.str();
      }
    return "";
  }
  auto w = want.to(DType::f64).to_vector<double>(),
       g = got.to(Device::ref()).to(DType::f64).to_vector<double>();
  for (size_t k = 0; k < w.size(); ++k) {
    const double a = g[k], b = w[k];
    bool same =
        (std::isnan(a) && std::isnan(b)) || a == b ||
        (std::isfinite(a) && std::isfinite(b) && std::fabs(a - b) <= 1e-7 + 1e-3 * std::fabs(b));
    if (!same) {
      os.precision(9);
      os << "element " << k << ": got " << a << ", want " << b;
      return os.str();
    }
  }
  return "";
}

std::vector<fs::path> sorted_entries(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
  // input_10.pb after input_9.pb: order by the number after the prefix when there is one.
  std::sort(out.begin(), out.end(), [&](const fs::path& a, const fs::path& b) {
    auto num = [&](const fs::path& p) {
      std::string s = p.stem().string().substr(prefix.size());
      return s.empty() || !std::isdigit(static_cast<unsigned char>(s[0])) ? -1L : std::stol(s);
    };
    auto na = num(a), nb = num(b);
    return na != nb ? na < nb : a < b;
  });
  return out;
}

// Runs the graph on one data set; "" on success, else what went wrong.
std::string run_data_set(const onnx::ModelProto& model, const fs::path& set) {
  const auto& g = model.graph();
  const int64_t opset = model_opset(model);
  std::map<std::string, Tensor> values;
  std::set<std::string> inits;
  for (const auto& t : g.initializer()) {
    values[t.name()] = tensor_from_proto(t, Device::ref());
    inits.insert(t.name());
  }
  std::vector<std::string> input_names;
  for (const auto& v : g.input())
    if (!inits.count(v.name())) input_names.push_back(v.name());
  auto in_files = sorted_entries(set, "input_");
  if (in_files.size() > input_names.size()) return "more input files than graph inputs";
  for (size_t k = 0; k < in_files.size(); ++k) {
    onnx::TensorProto tp;
    if (!read_proto(in_files[k].string(), tp)) return "cannot parse " + in_files[k].string();
    values[input_names[k]] = tensor_from_proto(tp, Device::ref());
  }
  auto& reg = op_registry();
  for (const auto& n : g.node()) {
    Node node{n, opset, {}};
    Tensors ins;
    for (const auto& name : n.input()) {
      if (name.empty()) {
        ins.push_back(Tensor());
        continue;
      }
      auto it = values.find(name);
      if (it == values.end()) return n.op_type() + ": missing input " + name;
      ins.push_back(it->second);
      node.input_types.push_back(0);
    }
    Tensors outs = reg.at(n.op_type()).run(node, ins);
    for (int k = 0; k < n.output_size(); ++k)
      if (!n.output(k).empty() && size_t(k) < outs.size()) values[n.output(k)] = outs[size_t(k)];
  }
  auto out_files = sorted_entries(set, "output_");
  for (size_t k = 0; k < out_files.size() && int(k) < g.output_size(); ++k) {
    onnx::TensorProto tp;
    if (!read_proto(out_files[k].string(), tp)) return "cannot parse " + out_files[k].string();
    Tensor want = tensor_from_proto(tp, Device::ref());
    auto it = values.find(g.output(int(k)).name());
    if (it == values.end()) return "output " + g.output(int(k)).name() + " not produced";
    std::string diff = compare(want, it->second);
    if (!diff.empty()) return "output " + std::to_string(k) + ": " + diff;
  }
  return "";
}

}  // namespace

TEST(OnnxNodeTest, ReferenceBackendMatchesOnnxTestData) {
  const fs::path root = fs::path(EMBER_ONNX_TESTDATA_DIR) / "node";
  if (!fs::is_directory(root)) {
    std::printf("ONNX backend test data not found at %s (install Debian's libonnx-testdata)\n",
                root.c_str());
    GTEST_SKIP() << "libonnx-testdata is not installed (" << root << " missing)";
  }
  DefaultDeviceGuard guard;
  int read = 0, covered = 0, passed = 0, failed = 0;
  // op type -> reason -> tests
  std::map<std::string, std::map<std::string, std::vector<std::string>>> uncovered;
  std::vector<std::string> failures;
  for (const auto& dir : sorted_entries(root, "test_")) {
    if (!fs::is_directory(dir)) continue;
    const std::string name = dir.filename().string();
    ++read;
    onnx::ModelProto model;
    if (!read_proto((dir / "model.onnx").string(), model)) {
      uncovered["<model>"]["model.onnx unreadable"].push_back(name);
      continue;
    }
    std::map<std::string, int32_t> types;
    Classified c = classify(model, types);
    if (!c.reason.empty()) {
      uncovered[c.op][c.reason].push_back(name);
      continue;
    }
    ++covered;
    std::string error;
    for (const auto& set : sorted_entries(dir, "test_data_set_")) {
      try {
        error = run_data_set(model, set);
      } catch (const std::exception& e) {
        error = std::string("threw: ") + e.what();
      }
      if (!error.empty()) {
        error = set.filename().string() + ": " + error;
        break;
      }
    }
    if (error.empty()) {
      ++passed;
    } else {
      ++failed;
      failures.push_back(name + ": " + error);
    }
  }
  std::printf("ONNX node tests not covered, by op type:\n");
  for (const auto& [op, reasons] : uncovered)
    for (const auto& [why, tests] : reasons)
      std::printf("  %-28s %3zu  %s (e.g. %s)\n", op.c_str(), tests.size(), why.c_str(),
                  tests.front().c_str());
  for (const auto& f : failures) ADD_FAILURE() << "ONNX node test " << f;
  std::printf("onnx node tests: %d read, %d covered, %d passed, %d failed\n", read, covered, passed,
              failed);
  EXPECT_GT(read, 0);
  EXPECT_EQ(covered, passed + failed);
}
