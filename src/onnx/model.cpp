// ember::onnx::load / inspect / Model::run (include/ember/onnx.h): a ModelProto checked by
// ONNX's checker and typed by its shape inference, each node mapped through the op registry
// (ops.h), constants folded once, and the remaining nodes run in graph order over value slots.
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>
#include <unordered_map>

#include "ember/onnx.h"
#include "onnx/ops.h"
#include "onnx/program.h"
#include "onnx/proto.h"

namespace ember::onnx {

using detail::Node;
using detail::OpImpl;
using detail::Tensors;

namespace {

struct Parsed {
  ::onnx::ModelProto model;
  std::string dir;  // for external data
  int64_t opset = 0;
  std::map<std::string, int32_t> types;  // value name -> ONNX element type, where known
};

int64_t default_opset(const ::onnx::ModelProto& m) {
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  return 0;
}

// The element types of the values of `g` and its subgraphs, where known.
void collect_types(const ::onnx::GraphProto& g, std::map<std::string, int32_t>& types) {
  for (const auto* list : {&g.value_info(), &g.input(), &g.output()})
    for (const auto& v : *list)
      if (v.type().has_tensor_type()) types[v.name()] = v.type().tensor_type().elem_type();
  for (const auto& t : g.initializer()) types[t.name()] = t.data_type();
  for (const auto& n : g.node())
    for (const auto& a : n.attribute()) {
      if (a.has_g()) collect_types(a.g(), types);
      for (const auto& sub : a.graphs()) collect_types(sub, types);
    }
}

std::string node_label(const ::onnx::NodeProto& n, int index);

// Window attributes that ONNX's shape inference divides by (strides [0, 0] on a Conv or pool,
// blocksize 0 on SpaceToDepth: SIGFPE inside libonnx) must be >= 1; checked in every graph.
void check_positive_attrs(const ::onnx::GraphProto& g, const std::string& path) {
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    for (const auto& a : n.attribute()) {
      const std::string& name = a.name();
      const bool window = name == "strides" || name == "dilations" || name == "kernel_shape" ||
                          name == "blocksize" || (name == "group" && n.op_type() != "GroupNorm");
      if (window) {
        auto bad = [&](int64_t v) {
          EMBER_FAIL("onnx", "'", path, "': node '", node_label(n, i), "' (", n.op_type(),
                     "): attribute ", name, " holds ", v, " (must be >= 1)");
        };
        if (a.type() == ::onnx::AttributeProto::INT && a.i() < 1) bad(a.i());
        for (int64_t v : a.ints())
          if (v < 1) bad(v);
      }
      if (a.has_g()) check_positive_attrs(a.g(), path);
      for (const auto& sub : a.graphs()) check_positive_attrs(sub, path);
    }
  }
}

// Reads, parses and checks `path`; types every value ONNX's shape inference can.
std::unique_ptr<Parsed> parse(const std::string& path) {
  // Parsed straight from the file (a ResNet-50 is 100 MB: read into a string first, its bytes
  // were copied twice, page faults included, before any weight reached the device).
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    EMBER_FAIL("onnx", path, ": cannot open (", std::strerror(errno), ")");
  EMBER_CHECK(!S_ISDIR(st.st_mode), "onnx", path, ": is a directory");
  EMBER_CHECK(S_ISREG(st.st_mode), "onnx", path, ": not a regular file (a FIFO, socket or device)");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) EMBER_FAIL("onnx", path, ": cannot open (", std::strerror(errno), ")");
  auto p = std::make_unique<Parsed>();
  const bool parsed = st.st_size > 0 && p->model.ParseFromFileDescriptor(fd);
  ::close(fd);
  EMBER_CHECK(parsed, "onnx", "'", path, "' is not an ONNX model (", int64_t(st.st_size),
              " bytes that do not parse as a ModelProto: truncated or corrupt)");
  EMBER_CHECK(p->model.has_graph(), "onnx", "'", path, "' holds no graph");
  p->dir = std::filesystem::path(path).parent_path().string();
  p->opset = default_opset(p->model);
  EMBER_CHECK(p->opset != 0, "onnx", "'", path,
              "' imports no opset of the default domain (only other domains' ops)");
  EMBER_CHECK(p->opset >= kMinOpset && p->opset <= kMaxOpset, "onnx", "'", path, "' imports opset ",
              p->opset, " of the default domain; Ember runs opsets ", kMinOpset, " to ", kMaxOpset);
  try {
    // The checker looks for external data files from the working directory: it sees a copy
    // whose locations are resolved against the model's directory (weights held elsewhere make
    // the copy cheap).
    bool external = false;
    for (const auto& t : p->model.graph().initializer())
      external = external || t.data_location() == ::onnx::TensorProto::EXTERNAL;
    if (!external) {
      ::onnx::checker::check_model(p->model);
    } else {
      ::onnx::ModelProto copy = p->model;
      for (auto& t : *copy.mutable_graph()->mutable_initializer())
        for (auto& kv : *t.mutable_external_data())
          if (t.data_location() == ::onnx::TensorProto::EXTERNAL && kv.key() == "location")
            kv.set_value(std::filesystem::absolute(detail::external_file(t, p->dir)).string());
      ::onnx::checker::check_model(copy);
    }
  } catch (const Error&) {
    throw;  // an external location outside the model's directory
  } catch (const std::exception& e) {
    EMBER_FAIL("onnx", "'", path, "' is not a valid ONNX model: ", e.what());
  }
  check_positive_attrs(p->model.graph(), path);
  // In place (a copy of the model copied every weight): inference only adds value_info.
  try {
    ::onnx::shape_inference::InferShapes(p->model);
  } catch (const std::exception&) {
    // Types stay unknown where inference stops; the op mapping then decides from the values.
  }
  collect_types(p->model.graph(), p->types);
  return p;
}

std::string node_label(const ::onnx::NodeProto& n, int index) {
  return n.name().empty() ? "#" + std::to_string(index) : n.name();
}

// "" when `v` is a tensor of an Ember dtype, else why not.
std::string value_type_problem(const ::onnx::ValueInfoProto& v) {
  if (!v.type().has_tensor_type())
    return v.type().has_sequence_type()   ? "sequence type"
           : v.type().has_optional_type() ? "optional type"
                                          : "non-tensor type";
  DType d;
  const int32_t t = v.type().tensor_type().elem_type();
  return detail::dtype_from_onnx(t, d) ? "" : "tensor type " + detail::onnx_type_name(t);
}

ValueInfo value_info(const ::onnx::ValueInfoProto& v) {
  ValueInfo out;
  out.name = v.name();
  const auto& tt = v.type().tensor_type();
  detail::dtype_from_onnx(tt.elem_type(), out.dtype);
  out.has_shape = tt.has_shape();
  for (const auto& d : tt.shape().dim()) {
    out.shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
    out.dim_params.push_back(d.has_dim_param() ? d.dim_param() : "");
  }
  return out;
}

std::set<std::string> initializer_names(const ::onnx::GraphProto& g) {
  std::set<std::string> names;
  for (const auto& t : g.initializer()) names.insert(t.name());
  return names;
}

Node make_node(const Parsed& p, const ::onnx::NodeProto& n, Device device = Device::ref()) {
  Node node{n, p.opset, {}, device, {}};
  for (const auto& in : n.input()) {
    auto it = p.types.find(in);
    node.input_types.push_back(it == p.types.end() ? 0 : it->second);
  }
  return node;
}

// What keeps node `n` from running, or "" (the graph-level checks of the node tests' runner).
std::string node_problem(const Parsed& p, const ::onnx::NodeProto& n) {
  if (!n.domain().empty() && n.domain() != "ai.onnx") return "domain " + n.domain();
  if (detail::is_control(n.op_type())) return detail::control_problem(n, p.opset);
  auto& reg = detail::op_registry();
  auto it = reg.find(n.op_type());
  if (it == reg.end()) return "op not mapped";
  for (const auto& a : n.attribute())
    if (a.has_g() || a.graphs_size()) return "subgraph attribute " + a.name();
  return it->second.check(make_node(p, n));
}

// The nodes of `g` (and of its subgraphs, labelled "node/attr/#k") Ember cannot run.
void node_problems(const Parsed& p, const ::onnx::GraphProto& g, const std::string& prefix,
                   Info& info, bool count) {
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    if (count) ++info.op_counts[n.op_type()];
    std::string why;
    try {
      why = node_problem(p, n);
    } catch (const std::exception& e) {
      why = e.what();
    }
    const std::string label = prefix + node_label(n, i);
    if (!why.empty()) info.unsupported.push_back({label, n.op_type(), why});
    for (const auto& a : n.attribute())
      if (a.has_g()) {
        for (const auto* list : {&a.g().input(), &a.g().output()})
          for (const auto& v : *list) {
            const std::string t = v.has_type() ? value_type_problem(v) : "";  // may be untyped
            if (!t.empty())
              info.unsupported.push_back({label + "/" + a.name() + " value " + v.name(), "", t});
          }
        node_problems(p, a.g(), label + "/" + a.name() + "/", info, false);
      }
  }
}

Info describe(const Parsed& p) {
  const auto& g = p.model.graph();
  Info info;
  info.ir_version = p.model.ir_version();
  info.opset = p.opset;
  for (const auto& prop : p.model.metadata_props()) info.metadata[prop.key()] = prop.value();
  info.producer = p.model.producer_name() +
                  (p.model.producer_version().empty() ? "" : " " + p.model.producer_version());
  const std::set<std::string> inits = initializer_names(g);
  auto io = [&](const ::onnx::ValueInfoProto& v, std::vector<ValueInfo>& out, const char* what) {
    const std::string why = value_type_problem(v);
    if (!why.empty()) {
      info.unsupported.push_back({std::string("graph ") + what + " " + v.name(), "", why});
      return;
    }
    out.push_back(value_info(v));
  };
  for (const auto& v : g.input())
    if (!inits.count(v.name())) io(v, info.inputs, "input");
  for (const auto& v : g.output()) io(v, info.outputs, "output");
  for (const auto& t : g.initializer()) {
    ++info.initializers;
    int64_t n = 1;
    for (int64_t d : t.dims()) n *= std::max<int64_t>(d, 0);
    info.parameters += n;
    DType d;
    if (!detail::dtype_from_onnx(t.data_type(), d))
      info.unsupported.push_back(
          {"initializer " + t.name(), "", "tensor type " + detail::onnx_type_name(t.data_type())});
  }
  if (g.sparse_initializer_size()) info.unsupported.push_back({"graph", "", "sparse initializers"});
  node_problems(p, g, "", info, true);
  return info;
}

}  // namespace

struct Model::Impl {
  std::unique_ptr<Parsed> parsed;
  Device device = Device::cpu();
  std::vector<ValueInfo> inputs, outputs;
  std::map<std::string, std::string> metadata;
  std::shared_ptr<const detail::Program> program;  // the main graph
};

Info inspect(const std::string& path) { return describe(*parse(path)); }

Model load(const std::string& path, Device device) {
  auto impl = std::make_shared<Model::Impl>();
  impl->parsed = parse(path);
  impl->device = device;
  const Parsed& p = *impl->parsed;
  Info info = describe(p);
  if (!info.unsupported.empty()) {
    std::ostringstream os;
    os << "'" << path << "' has " << info.unsupported.size() << " part"
       << (info.unsupported.size() == 1 ? "" : "s") << " Ember cannot run:";
    for (size_t i = 0; i < info.unsupported.size() && i < 20; ++i) {
      const Unsupported& u = info.unsupported[i];
      os << (i ? ";" : "") << " "
         << (u.op_type.empty() ? u.node : "node '" + u.node + "' (" + u.op_type + ")") << ": "
         << u.reason;
    }
    if (info.unsupported.size() > 20) os << "; and " << info.unsupported.size() - 20 << " more";
    EMBER_FAIL("onnx", os.str());
  }
  impl->inputs = info.inputs;
  impl->outputs = info.outputs;
  impl->metadata = info.metadata;

  detail::CompileContext ctx;
  ctx.opset = p.opset;
  ctx.types = &p.types;
  ctx.dir = p.dir;
  ctx.path = path;
  ctx.device = device;
  std::vector<std::string> names;
  for (const ValueInfo& v : impl->inputs) names.push_back(v.name);
  impl->program = detail::compile(p.model.graph(), names, ctx, nullptr);
  Model m;
  m.impl_ = std::move(impl);
  return m;
}

const Model::Impl& Model::impl() const {
  EMBER_CHECK(impl_ != nullptr, "onnx",
              "this Model holds no model (make it with ember::onnx::load)");
  return *impl_;
}
const std::vector<ValueInfo>& Model::inputs() const { return impl().inputs; }
const std::vector<ValueInfo>& Model::outputs() const { return impl().outputs; }
int64_t Model::opset() const { return impl().parsed->opset; }
const std::map<std::string, std::string>& Model::metadata() const { return impl().metadata; }
Device Model::device() const { return impl().device; }
int64_t Model::folded_nodes() const { return impl().program->folded; }
int64_t Model::nodes() const { return int64_t(impl().program->steps.size()); }

std::map<std::string, Tensor> Model::run(const std::map<std::string, Tensor>& inputs) const {
  const Impl& m = impl();
  Tensors feed(m.inputs.size());
  auto expected = [&] {
    std::string names;
    for (const ValueInfo& v : m.inputs) names += (names.empty() ? "" : ", ") + v.name;
    return names;
  };
  for (const auto& [name, t] : inputs) {
    bool known = false;
    for (const ValueInfo& v : m.inputs) known = known || v.name == name;
    EMBER_CHECK(known, "onnx.run", "the model has no input '", name, "' (its inputs: ", expected(),
                ")");
  }
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    const ValueInfo& v = m.inputs[i];
    auto it = inputs.find(v.name);
    EMBER_CHECK(it != inputs.end() && it->second.defined(), "onnx.run", "input '", v.name,
                "' is missing (the model's inputs: ", expected(), ")");
    const Tensor& t = it->second;
    EMBER_CHECK(t.dtype() == v.dtype, "onnx.run", "input '", v.name, "' is ", dtype_name(t.dtype()),
                ", the model takes ", dtype_name(v.dtype));
    bool fits = !v.has_shape || int64_t(v.shape.size()) == t.dim();
    for (size_t d = 0; fits && v.has_shape && d < v.shape.size(); ++d)
      fits = v.shape[d] < 0 || v.shape[d] == t.size(int64_t(d));
    if (!fits) {
      std::string want = "[";
      for (size_t d = 0; d < v.shape.size(); ++d)
        want += (d ? ", " : "") + (v.shape[d] >= 0           ? std::to_string(v.shape[d])
                                   : v.dim_params[d].empty() ? std::string("?")
                                                             : v.dim_params[d]);
      EMBER_FAIL("onnx.run", "input '", v.name, "' has shape ", shape_str(t.shape()),
                 ", the model takes ", want, "]");
    }
    feed[i] = t.device() == m.device ? t : t.to(m.device);
  }
  Tensors values;
  try {
    values = detail::execute(*m.program, feed, {}, m.device, false);
    sync(m.device);  // errors surface here, not in the caller's first read
  } catch (const std::exception& first) {
    // Once more, the device finishing each node before the next, to name the failing one.
    detail::execute(*m.program, feed, {}, m.device, true);
    EMBER_FAIL("onnx.run", "running the graph failed: ", first.what());
  }
  std::map<std::string, Tensor> out;
  for (size_t i = 0; i < m.outputs.size(); ++i) {
    const Tensor& t = values[i];
    EMBER_CHECK(t.defined(), "onnx.run", "output '", m.outputs[i].name, "' was not computed");
    out[m.outputs[i].name] = t;
  }
  return out;
}

}  // namespace ember::onnx
