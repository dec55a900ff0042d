// ember::onnx::run_test_case (include/ember/onnx.h): one directory of ONNX's backend test data
// loaded, run and compared, for the conformance test and `ember onnx conformance`.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <sstream>

#include <onnx/shape_inference/implementation.h>

#include "ember/onnx.h"
#include "onnx/proto.h"

namespace ember::onnx {
namespace {

namespace fs = std::filesystem;

// Entries of `dir` starting with `prefix`, input_10.pb after input_9.pb.
std::vector<fs::path> numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
  auto num = [&](const fs::path& p) {
    const std::string s = p.stem().string().substr(prefix.size());
    return s.empty() || !std::isdigit(static_cast<unsigned char>(s[0])) ? -1L : std::stol(s);
  };
  std::sort(out.begin(), out.end(), [&](const fs::path& a, const fs::path& b) {
    const long na = num(a), nb = num(b);
    return na != nb ? na < nb : a < b;
  });
  return out;
}

Tensor read_tensor(const fs::path& file) {
  ::onnx::TensorProto tp;
  EMBER_CHECK(detail::read_proto(file.string(), tp), "onnx", "cannot parse '", file.string(), "'");
  return detail::tensor_from_proto(tp, Device::ref());
}

// "" when `got` equals `want` within ONNX's tolerances, else the first difference.
std::string compare(const Tensor& want, const Tensor& got) {
  std::ostringstream os;
  if (got.dtype() != want.dtype())
    return std::string("dtype ") + dtype_name(got.dtype()) + ", want " + dtype_name(want.dtype());
  if (got.shape() != want.shape())
    return "shape " + shape_str(got.shape()) + ", want " + shape_str(want.shape());
  const Tensor g = got.to(Device::ref());
  if (!is_floating(want.dtype())) {
    // Through i64: u64 values above 2^63 keep their bits.
    const auto w = want.to(DType::i64).to_vector<int64_t>(),
               v = g.to(DType::i64).to_vector<int64_t>();
    for (size_t k = 0; k < w.size(); ++k)
      if (w[k] != v[k]) {
        os << "element " << k << ": got " << v[k] << ", want " << w[k];
        return os.str();
      }
    return "";
  }
  const auto w = want.to(DType::f64).to_vector<double>(), v = g.to(DType::f64).to_vector<double>();
  for (size_t k = 0; k < w.size(); ++k) {
    const double a = v[k], b = w[k];
    const bool same =
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

// Whether `t` is a type Ember has no tensor for (string, sequence, optional, map).
bool foreign_type(const ::onnx::TypeProto& t) {
  return !t.has_tensor_type() || t.tensor_type().elem_type() == ::onnx::TensorProto::STRING;
}

// Whether graph `g` (or a subgraph of it) needs a type or domain Ember does not have.
bool needs_foreign(const ::onnx::GraphProto& g) {
  for (const auto* list : {&g.input(), &g.output(), &g.value_info()})
    for (const auto& v : *list)
      if (v.has_type() && foreign_type(v.type())) return true;
  for (const auto& t : g.initializer())
    if (t.data_type() == ::onnx::TensorProto::STRING) return true;
  for (const auto& n : g.node()) {
    const std::string& op = n.op_type();
    if (!n.domain().empty() && n.domain() != "ai.onnx") return true;
    if (op.rfind("Sequence", 0) == 0 || op.rfind("Optional", 0) == 0 ||
        op.rfind("String", 0) == 0 || op == "SplitToSequence" || op == "ConcatFromSequence" ||
        op == "RegexFullMatch")
      return true;
    for (const auto& a : n.attribute()) {
      if ((op == "Cast" || op == "CastLike") && a.name() == "to" &&
          a.i() == ::onnx::TensorProto::STRING)
        return true;
      if (a.has_t() && a.t().data_type() == ::onnx::TensorProto::STRING) return true;
      if (a.has_g() && needs_foreign(a.g())) return true;
      for (const auto& sub : a.graphs())
        if (needs_foreign(sub)) return true;
    }
  }
  return false;
}

// Whether the model file needs what Ember has no type for (after ONNX's shape inference, so
// that a node making a sequence or string shows).
bool excluded_case(const std::string& model_file) {
  ::onnx::ModelProto m;
  if (!detail::read_proto(model_file, m)) return false;
  bool default_domain = false;
  for (const auto& o : m.opset_import())
    default_domain = default_domain || o.domain().empty() || o.domain() == "ai.onnx";
  if (!default_domain) return true;
  try {
    ::onnx::shape_inference::InferShapes(m);
  } catch (const std::exception&) {
  }
  return needs_foreign(m.graph());
}

}  // namespace

CaseResult run_test_case(const std::string& dir, Device device) {
  using Status = CaseResult::Status;
  const std::string model_file = (fs::path(dir) / "model.onnx").string();
  Info info;
  try {
    info = inspect(model_file);
  } catch (const std::exception& e) {
    std::string why = e.what();  // the same reason for every case: without the path
    for (size_t at; (at = why.find(model_file)) != std::string::npos;)
      why.replace(at, model_file.size(), "model.onnx");
    return {excluded_case(model_file) ? Status::excluded : Status::unsupported, "", why};
  }
  if (!info.unsupported.empty())
    return {excluded_case(model_file) ? Status::excluded : Status::unsupported,
            info.unsupported.front().op_type, info.unsupported.front().reason};
  for (const auto* list : {&info.inputs, &info.outputs})
    for (const ValueInfo& v : *list)
      if (!supports_dtype(device, v.dtype))
        return {Status::unsupported, "",
                std::string("dtype ") + dtype_name(v.dtype) + " not on " + device.str()};
  Model model;
  try {
    model = load(model_file, device);
  } catch (const std::exception& e) {
    return {Status::unsupported, "", e.what()};  // weights of a dtype the device lacks
  }
  for (const fs::path& set : numbered(dir, "test_data_set_")) {
    try {
      const auto ins = numbered(set, "input_"), outs = numbered(set, "output_");
      if (ins.size() > model.inputs().size())
        return {Status::failed, "", set.filename().string() + ": more input files than inputs"};
      // ONNX 1.12's bfloat16 cases store bf16 values as UINT16 bit patterns (truncated, not
      // rounded): they describe no bf16 tensor.
      const char* kBf16 = "test data stores bfloat16 as UINT16 bit patterns";
      std::map<std::string, Tensor> feed;
      for (size_t k = 0; k < ins.size(); ++k) {
        const Tensor t = read_tensor(ins[k]);
        if (model.inputs()[k].dtype == DType::bf16 && t.dtype() != DType::bf16)
          return {Status::unsupported, "", kBf16};
        feed[model.inputs()[k].name] = t;
      }
      std::vector<Tensor> wants;
      for (size_t k = 0; k < outs.size() && k < model.outputs().size(); ++k) {
        wants.push_back(read_tensor(outs[k]));
        if (model.outputs()[k].dtype == DType::bf16 && wants.back().dtype() != DType::bf16)
          return {Status::unsupported, "", kBf16};
      }
      const std::map<std::string, Tensor> got = model.run(feed);
      for (size_t k = 0; k < wants.size(); ++k) {
        const std::string diff = compare(wants[k], got.at(model.outputs()[k].name));
        if (!diff.empty())
          return {Status::failed, "",
                  set.filename().string() + ": output " + std::to_string(k) + ": " + diff};
      }
    } catch (const std::exception& e) {
      return {Status::failed, "", set.filename().string() + ": " + e.what()};
    }
  }
  return {Status::passed, "", ""};
}

}  // namespace ember::onnx
