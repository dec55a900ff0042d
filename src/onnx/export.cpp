// ember::onnx::save (include/ember/onnx.h): walks a module tree through the exporter registry
// (export_modules.cpp holds the built-in exporters), writes a ModelProto checked by ONNX's
// checker, runs it back through ember::onnx::load and compares with the module before the file
// takes its name.
#include <onnx/checker.h>

#include <unistd.h>
#include <cmath>
#include <filesystem>
#include <mutex>
#include <set>

#include "core/atomic_file.h"
#include "ember/autograd.h"
#include "ember/nn/modules/container.h"
#include "ember/onnx.h"
#include "onnx/export.h"
#include "onnx/proto.h"

namespace ember::onnx {

namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

std::map<std::string, Exporter>& registry() {
  static std::map<std::string, Exporter> r = [] {
    std::map<std::string, Exporter> b;
    detail::register_builtin_exporters(b);
    return b;
  }();
  return r;
}

void set_attr(::onnx::AttributeProto& a, const Attribute& attr) {
  using AP = ::onnx::AttributeProto;
  a.set_name(attr.name);
  if (auto* i = std::get_if<int64_t>(&attr.value)) {
    a.set_type(AP::INT);
    a.set_i(*i);
  } else if (auto* f = std::get_if<double>(&attr.value)) {
    a.set_type(AP::FLOAT);
    a.set_f(float(*f));
  } else if (auto* s = std::get_if<std::string>(&attr.value)) {
    a.set_type(AP::STRING);
    a.set_s(*s);
  } else if (auto* is = std::get_if<std::vector<int64_t>>(&attr.value)) {
    a.set_type(AP::INTS);
    for (int64_t v : *is) a.add_ints(v);
  } else {
    a.set_type(AP::FLOATS);
    for (double v : std::get<std::vector<double>>(attr.value)) a.add_floats(float(v));
  }
}

void set_type(::onnx::ValueInfoProto& v, const std::string& name, const Tensor& t, bool dyn) {
  v.set_name(name);
  auto* tt = v.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(detail::dtype_to_onnx(t.dtype()));
  auto* sh = tt->mutable_shape();
  for (int64_t d = 0; d < t.dim(); ++d) {
    auto* dim = sh->add_dim();
    if (d == 0 && dyn)
      dim->set_dim_param("batch");
    else
      dim->set_dim_value(t.size(d));
  }
}

class Builder final : public ExportGraph {
 public:
  Builder(::onnx::GraphProto& g, bool dynamic_batch) : g_(g), dyn_(dynamic_batch) {}

  std::vector<std::string> add(const std::string& op_type, const std::vector<std::string>& inputs,
                               const std::vector<Attribute>& attrs, int outputs) override {
    EMBER_CHECK(outputs >= 1, "onnx::save", "node ", op_type, " needs at least one output");
    auto* n = g_.add_node();
    const std::string name = prefix() + op_type + "_" + std::to_string(g_.node_size() - 1);
    n->set_name(name);
    n->set_op_type(op_type);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& a : attrs) set_attr(*n->add_attribute(), a);
    std::vector<std::string> out;
    for (int k = 0; k < outputs; ++k) {
      out.push_back(name + ":" + std::to_string(k));
      n->add_output(out.back());
    }
    return out;
  }

  std::string constant(const Tensor& t, const std::string& name) override {
    for (const auto& c : constants_)
      if (c.storage == t.impl()->storage.get() && c.offset == t.offset() && c.shape == t.shape() &&
          c.strides == t.strides() && c.dtype == t.dtype())
        return c.name;
    const Tensor host = t.detach().to(Device::ref()).contiguous();
    std::string full = prefix() + name;
    while (!names_.insert(full).second) full += "_";
    auto* init = g_.add_initializer();
    init->set_name(full);
    init->set_data_type(detail::dtype_to_onnx(host.dtype()));
    for (int64_t d : host.shape()) init->add_dims(d);
    init->set_raw_data(static_cast<const char*>(host.raw_data()),
                       size_t(host.numel()) * size_t(dtype_size(host.dtype())));
    constants_.push_back(
        {t.impl()->storage.get(), t.offset(), t.shape(), t.strides(), t.dtype(), full, t});
    return full;
  }

  std::string module(nn::Module& m, const std::string& child_name,
                     const std::string& input) override {
    path_.push_back(child_name);
    const std::string where = path_str();
    Exporter fn;
    {
      std::lock_guard<std::mutex> lock(registry_mutex());
      auto it = registry().find(m.type_name());
      if (it != registry().end()) fn = it->second;
    }
    if (!fn && dynamic_cast<nn::Sequential*>(&m)) fn = detail::export_sequential;
    EMBER_CHECK(fn, "onnx::save", "module '", where, "' of type ", m.type_name(),
                " has no ONNX exporter (register one with ember::onnx::register_exporter)");
    auto* unary = dynamic_cast<nn::UnaryModule*>(&m);
    EMBER_CHECK(unary != nullptr, "onnx::save", "module '", where, "' (", m.type_name(),
                ") does not take one tensor; only one-input modules export");
    std::string out;
    try {
      out = fn(m, *this, input);
    } catch (const Error& e) {
      // Name the innermost module once.
      const std::string what = e.what();
      if (what.find("module '") != std::string::npos) throw;
      EMBER_FAIL("onnx::save", "module '", where, "' (", m.type_name(), "): ", what);
    }
    examples_[out] = unary->forward(example(input));
    path_.pop_back();
    return out;
  }

  const Tensor& example(const std::string& v) const override {
    auto it = examples_.find(v);
    EMBER_CHECK(it != examples_.end(), "onnx::save", "no example value for '", v,
                "' (only module inputs and outputs have one)");
    return it->second;
  }
  void set_example(const std::string& v, const Tensor& t) { examples_[v] = t; }

 private:
  std::string path_str() const {
    std::string s;
    for (const auto& p : path_)
      if (!p.empty()) s += (s.empty() ? "" : ".") + p;
    return s.empty() ? "<root>" : s;
  }
  std::string prefix() const {
    std::string s = path_str();
    return s == "<root>" ? "" : s + ".";
  }

  ::onnx::GraphProto& g_;
  bool dyn_;
  std::vector<std::string> path_;
  std::map<std::string, Tensor> examples_;
  struct Constant {
    const void* storage;
    int64_t offset;
    Shape shape;
    Strides strides;
    DType dtype;
    std::string name;
    Tensor keep;  // holds the storage, so its address names it while the export runs
  };
  std::vector<Constant> constants_;
  std::set<std::string> names_;
};

// Largest |got - want| - (atol + rtol |want|) over the elements; > 0 is a mismatch.
std::string compare(const Tensor& got, const Tensor& want, double rtol, double atol) {
  if (got.shape() != want.shape())
    return "shape " + shape_str(got.shape()) + " instead of " + shape_str(want.shape());
  const std::vector<double> g =
      got.to(Device::ref()).to(DType::f64).contiguous().to_vector<double>();
  const std::vector<double> w =
      want.to(Device::ref()).to(DType::f64).contiguous().to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    const bool both_nan = std::isnan(g[i]) && std::isnan(w[i]);
    if (!both_nan && !(std::fabs(g[i] - w[i]) <= atol + rtol * std::fabs(w[i])))
      return "element " + std::to_string(i) + " is " + std::to_string(g[i]) + " instead of " +
             std::to_string(w[i]);
  }
  return "";
}

}  // namespace

void register_exporter(const std::string& type_name, Exporter fn) {
  EMBER_CHECK(!type_name.empty() && fn, "onnx::register_exporter",
              "needs a type name and a function");
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry()[type_name] = std::move(fn);
}

void save(nn::Module& module, const Tensor& example_input, const std::string& path,
          const ExportOptions& options) {
  EMBER_CHECK(example_input.defined(), "onnx::save", "the example input is undefined");
  EMBER_CHECK(!path.empty(), "onnx::save", "the path is empty");
  EMBER_CHECK(!options.input_name.empty() && !options.output_name.empty() &&
                  options.input_name != options.output_name,
              "onnx::save", "the input and output need two different non-empty names");
  EMBER_CHECK(!options.dynamic_batch || example_input.dim() >= 1, "onnx::save",
              "a dynamic batch needs an input of rank >= 1, got ",
              shape_str(example_input.shape()));
  {
    // Checked before any work: the file is replaced by a rename, which would put a regular
    // file in place of a device (/dev/null) or fail on a folder only after the export ran.
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path target(path);
    const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
    EMBER_CHECK(fs::is_directory(dir, ec), "onnx::save", path, ": the folder ", dir.string(),
                " does not exist");
    const fs::file_status st = fs::status(target, ec);
    EMBER_CHECK(
        !fs::exists(st) || fs::is_regular_file(st), "onnx::save", path,
        fs::is_directory(st) ? " is a folder" : " is not a regular file (a device, FIFO or socket)",
        "; give the path of a .onnx file");
  }
  ::onnx::ModelProto model;
  model.set_ir_version(8);  // ONNX 1.12, opset 17
  model.set_producer_name("ember");
  model.set_producer_version("0.1");
  for (const auto& [k, v] : options.metadata) {
    auto* prop = model.add_metadata_props();
    prop->set_key(k);
    prop->set_value(v);
  }
  auto* op = model.add_opset_import();
  op->set_domain("");
  op->set_version(kExportOpset);
  auto* g = model.mutable_graph();
  g->set_name(module.type_name());

  const bool was_training = module.is_training();
  module.eval();
  Tensor want;
  try {
    NoGradGuard no_grad;
    const Tensor x = example_input.detach();
    Builder b(*g, options.dynamic_batch);
    b.set_example(options.input_name, x);
    std::string out = b.module(module, "", options.input_name);
    want = b.example(out);
    // The graph output takes its name from the node writing it (or an Identity when the
    // module returned its input or a weight).
    bool renamed = false;
    for (auto& n : *g->mutable_node())
      for (auto& o : *n.mutable_output())
        if (o == out) {
          o = options.output_name;
          renamed = true;
        }
    if (renamed) {
      for (auto& n : *g->mutable_node())
        for (auto& i : *n.mutable_input())
          if (i == out) i = options.output_name;
    } else {
      auto* n = g->add_node();
      n->set_name("Identity_output");
      n->set_op_type("Identity");
      n->add_input(out);
      n->add_output(options.output_name);
    }
    set_type(*g->add_input(), options.input_name, x, options.dynamic_batch);
    set_type(*g->add_output(), options.output_name, want, options.dynamic_batch && want.dim() >= 1);
  } catch (...) {
    module.train(was_training);
    throw;
  }
  module.train(was_training);
  try {
    ::onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    EMBER_FAIL("onnx::save", "the exported graph fails ONNX's checker: ", e.what());
  }
  std::string bytes;
  EMBER_CHECK(model.SerializeToString(&bytes), "onnx::save",
              "the model does not serialize (over 2 GiB?)");
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path tmp = target.parent_path() / ("." + target.filename().string() + "." +
                                               std::to_string(::getpid()) + ".check.onnx");
  const RemoveOnSignal guard(tmp.string());  // the check can take a while: Ctrl-C removes it
  write_file_atomic(tmp.string(), bytes.data(), bytes.size(), "onnx::save");
  try {
    if (options.check) {
      const Model m = load(tmp.string(), example_input.device());
      const auto got = m.run({{options.input_name, example_input.detach()}});
      const std::string why =
          compare(got.at(options.output_name), want, options.rtol, options.atol);
      EMBER_CHECK(why.empty(), "onnx::save", "the exported model does not reproduce ",
                  module.type_name(), "'s output on the example (", why,
                  "): a module whose forward is not what its exporter writes (a Sequential "
                  "subclass with its own forward?)");
    }
    std::error_code ec;
    fs::rename(tmp, target, ec);
    EMBER_CHECK(!ec, "onnx::save", "cannot rename ", tmp.string(), " to ", path, " (", ec.message(),
                ")");
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
}

}  // namespace ember::onnx
