// ember run MODEL.onnx --input NAME=FILE.npy ... | ember onnx info MODEL | ember onnx conformance:
// ONNX models through ember::onnx (include/ember/onnx.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "ember/autograd.h"
#include "ember/data/io.h"
#include "ember/error.h"
#include "ember/nn/functional/interpolate.h"
#include "ember/onnx.h"
#include "ember/record/npy.h"
#include "ember/tensor.h"
#include "models.h"
#include "trained.h"

namespace ember::tools {
namespace {

namespace fs = std::filesystem;

std::string shape_text(const onnx::ValueInfo& v) {
  if (!v.has_shape) return "(any shape)";
  std::string s = "[";
  for (size_t d = 0; d < v.shape.size(); ++d)
    s += (d ? ", " : "") + (v.shape[d] >= 0           ? std::to_string(v.shape[d])
                            : v.dim_params[d].empty() ? std::string("?")
                                                      : v.dim_params[d]);
  return s + "]";
}

void print_values(const char* what, const std::vector<onnx::ValueInfo>& vs) {
  std::printf("%s:\n", what);
  for (const onnx::ValueInfo& v : vs)
    std::printf("  %-24s %-8s %s\n", v.name.c_str(), dtype_name(v.dtype), shape_text(v).c_str());
}

// The first values of `t` and, for a float output with one row, its largest entry.
std::string preview(const Tensor& t) {
  const Tensor flat = t.to(Device::cpu()).contiguous().reshape({t.numel()});
  const int64_t n = std::min<int64_t>(flat.numel(), 8);
  std::string s = "[";
  const std::vector<double> v = flat.slice(0, 0, n).to(DType::f64).to_vector<double>();
  for (int64_t i = 0; i < n; ++i) {
    char b[32];
    std::snprintf(b, sizeof b, is_floating(t.dtype()) ? "%.5g" : "%.0f", v[size_t(i)]);
    s += (i ? ", " : "") + std::string(b);
  }
  s += flat.numel() > n ? ", ...]" : "]";
  const bool row = t.dim() >= 1 && t.numel() == t.size(t.dim() - 1) && t.numel() > 1;
  if (row && is_floating(t.dtype())) {
    const std::vector<double> all = flat.to(DType::f64).to_vector<double>();
    const auto best = std::max_element(all.begin(), all.end());
    char b[64];
    std::snprintf(b, sizeof b, "  argmax %td (%.5g)", best - all.begin(), *best);
    s += b;
  }
  return s;
}

// A file name for an output: characters other than [A-Za-z0-9._-] become '_'.
std::string file_name(const std::string& name) {
  std::string out = name.empty() ? "output" : name;
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  if (out[0] == '.') out[0] = '_';
  return out + ".npy";
}

// --image FILE as the model's one input: [1, C, H, W] f32 in 0..1, C from the model (1 or 3),
// resized (bilinear; area when shrinking) to the model's H x W where it fixes them.
Tensor image_tensor(const std::string& path, const onnx::ValueInfo& in) {
  EMBER_CHECK(in.has_shape && in.shape.size() == 4 && is_floating(in.dtype), "run",
              "--image needs a model input [N, C, H, W] of floats; input '", in.name, "' is ",
              dtype_name(in.dtype), " ", shape_text(in));
  const int64_t c = in.shape[1] > 0 ? in.shape[1] : 3;
  EMBER_CHECK(c == 1 || c == 3, "run", "--image: input '", in.name, "' takes ", c,
              " channels (an image has 1 or 3)");
  Tensor x = data::load_image(path, int(c)).to(DType::f32).unsqueeze(0) * (1.0 / 255.0);
  const int64_t h = in.shape[2] > 0 ? in.shape[2] : x.size(2);
  const int64_t w = in.shape[3] > 0 ? in.shape[3] : x.size(3);
  if (h != x.size(2) || w != x.size(3)) {
    const bool shrink = x.size(2) >= h && x.size(3) >= w;
    x = nn::functional::interpolate(x, {h, w}, {}, shrink ? "area" : "bilinear");
  }
  return x.to(in.dtype);
}

// `x` ([1, C, H, W], scaled to 0..1) as (x - mean) / std per channel, from the comma-separated
// lists `ember export` records (one value, or one per channel).
Tensor normalized(const Tensor& x, const std::string& mean_s, const std::string& std_s) {
  auto parse = [&](const std::string& s, const char* key) {
    std::vector<double> v;
    std::stringstream ss(s);
    for (std::string item; std::getline(ss, item, ',');) {
      char* end = nullptr;
      const double d = std::strtod(item.c_str(), &end);
      EMBER_CHECK(end != item.c_str() && std::isfinite(d), "run", "the model's ", key, " '", s,
                  "' is not a list of numbers");
      v.push_back(d);
    }
    EMBER_CHECK(v.size() == 1 || int64_t(v.size()) == x.size(1), "run", "the model's ", key,
                " has ", v.size(), " values for ", x.size(1), " channels");
    for (double d : v)
      EMBER_CHECK(d != 0 || std::string(key) != "ember.std", "run",
                  "the model's ember.std holds 0");
    return from_vector(v, {1, int64_t(v.size()), 1, 1}, x.device()).to(x.dtype());
  };
  return (x - parse(mean_s, "ember.mean")) / parse(std_s, "ember.std");
}

// "Sneaker (index 7)" for an output [1, K] when the model records K class names (ember.classes,
// a JSON list), else "".
std::string class_of(const Tensor& t, const std::map<std::string, std::string>& md) {
  auto it = md.find("ember.classes");
  if (it == md.end() || t.dim() != 2 || t.size(0) != 1 || !is_floating(t.dtype())) return "";
  const nlohmann::json j = nlohmann::json::parse(it->second, nullptr, false);
  if (!j.is_array() || int64_t(j.size()) != t.size(1)) return "";
  const int64_t k = t.reshape({-1}).argmax(0).to(Device::cpu()).item<int64_t>();
  if (!j[size_t(k)].is_string()) return "";
  return j[size_t(k)].get<std::string>() + " (index " + std::to_string(k) + ")";
}

void add_run_command(CLI::App& app) {
  struct Args {
    std::string model, image, device, output_dir;
    std::vector<std::string> inputs;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "run", "Run an ONNX model on NumPy .npy inputs (or one image) and print its outputs");
  cmd->add_option("model", a->model, "The .onnx file")->required()->check(non_empty_path());
  cmd->add_option("--input", a->inputs,
                  "NAME=FILE.npy for each model input (FILE.npy alone when the model has one)")
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {
            const size_t eq = s.find('=');
            if (s.empty() || eq + 1 == s.size()) return "'" + s + "': the file name is empty";
            if (eq == 0) return "'" + s + "': the input name is empty (NAME=FILE.npy)";
            return "";
          },
          "", ""));
  cmd->add_option("--image", a->image,
                  "A PNG or JPEG as the model's one [N, C, H, W] input: scaled to 0..1, "
                  "resized to the model's H x W, and normalized with the mean and std the "
                  "model records (ember.mean, ember.std: `ember export` writes them; else none)")
      ->check(non_empty_path());
  cmd->add_option("--output-dir", a->output_dir, "Write each output to DIR/NAME.npy")
      ->check(non_empty_path());
  add_device_option(cmd, a->device);
  add_max_image_pixels_option(cmd);
  cmd->callback([a] {
    if (!a->image.empty() && !a->inputs.empty())  // before any file is read: a usage error
      throw CLI::ValidationError("--image",
                                 "--image is the model's one input; --input gave one "
                                 "too (give one of them)");
    const Device device = device_of(a->device);
    const onnx::Model model = onnx::load(a->model, device);
    std::map<std::string, Tensor> feed;
    for (const std::string& spec : a->inputs) {
      const size_t eq = spec.find('=');
      std::string name, file = spec;
      if (eq != std::string::npos) {
        name = spec.substr(0, eq);
        file = spec.substr(eq + 1);
      } else {
        if (model.inputs().size() != 1)  // usage errors against the model: exit status 2
          throw CLI::ValidationError(
              "--input", spec + ": the model has " + std::to_string(model.inputs().size()) +
                             " inputs; name each one (--input NAME=FILE.npy)");
        name = model.inputs()[0].name;
      }
      if (feed.count(name))  // a usage error (exit status 2), as any option given twice
        throw CLI::ValidationError("--input", "input '" + name + "' given twice");
      bool known = false;
      std::string names;
      for (const onnx::ValueInfo& v : model.inputs()) {
        known = known || v.name == name;
        names += (names.empty() ? "" : ", ") + v.name;
      }
      if (!known)
        throw CLI::ValidationError(
            "--input", "the model has no input '" + name + "' (its inputs: " + names + ")");
      feed[name] = record::load_npy(file, device);
    }
    if (!a->image.empty()) {
      if (model.inputs().size() != 1)
        throw CLI::ValidationError("--image", "--image is the model's one input; this model has " +
                                                  std::to_string(model.inputs().size()) +
                                                  " inputs");
      Tensor img = image_tensor(a->image, model.inputs()[0]);
      const auto& md = model.metadata();
      if (md.count("ember.mean") && md.count("ember.std")) {
        img = normalized(img, md.at("ember.mean"), md.at("ember.std"));
        std::printf("--image normalized with the model's recorded mean [%s] and std [%s]\n",
                    md.at("ember.mean").c_str(), md.at("ember.std").c_str());
      }
      feed[model.inputs()[0].name] = img.to(device);
    }
    for (const onnx::ValueInfo& v : model.inputs())
      if (!feed.count(v.name))
        throw CLI::ValidationError(
            "--input",
            "the model's input '" + v.name + "' is not given (--input " + v.name + "=FILE.npy)");
    InferenceMode inference;
    const std::map<std::string, Tensor> out = model.run(feed);
    if (!a->output_dir.empty()) {
      std::error_code ec;
      fs::create_directories(a->output_dir, ec);
      EMBER_CHECK(!ec && fs::is_directory(a->output_dir), "run", "--output-dir ", a->output_dir,
                  ": cannot create the folder (", ec ? ec.message() : "a file is in the way", ")");
    }
    std::printf("outputs of %s on %s:\n", a->model.c_str(), device.str().c_str());
    std::set<std::string> written;  // "a/b" and "a_b" both map to a_b.npy: the second gets _2
    for (const onnx::ValueInfo& v : model.outputs()) {
      const Tensor& t = out.at(v.name);
      std::printf("  %-20s %-8s %-16s %s\n", v.name.c_str(), dtype_name(t.dtype()),
                  shape_str(t.shape()).c_str(), preview(t).c_str());
      const std::string cls = class_of(t, model.metadata());
      if (!cls.empty()) std::printf("  %-20s class: %s\n", "", cls.c_str());
      if (!a->output_dir.empty()) {
        std::string name = file_name(v.name);
        for (int k = 2; !written.insert(name).second; ++k)
          name = file_name(v.name).insert(file_name(v.name).size() - 4, "_" + std::to_string(k));
        const std::string path = (fs::path(a->output_dir) / name).string();
        record::save_npy(path, t);
        std::printf("  %-20s -> %s\n", "", path.c_str());
      }
    }
  });
}

void add_info_command(CLI::App* onnx_cmd) {
  auto model = std::make_shared<std::string>();
  auto* cmd = onnx_cmd->add_subcommand(
      "info",
      "Print an ONNX model's inputs, outputs, opset and op counts, marking what Ember "
      "cannot run");
  cmd->add_option("model", *model, "The .onnx file")->required()->check(non_empty_path());
  cmd->callback([model] {
    const onnx::Info info = onnx::inspect(*model);
    std::printf("%s\n  IR version %lld, opset %lld, producer %s\n", model->c_str(),
                static_cast<long long>(info.ir_version), static_cast<long long>(info.opset),
                info.producer.empty() ? "(none)" : info.producer.c_str());
    std::printf("  %lld initializers, %lld parameters\n", static_cast<long long>(info.initializers),
                static_cast<long long>(info.parameters));
    print_values("inputs", info.inputs);
    print_values("outputs", info.outputs);
    if (!info.metadata.empty()) {
      std::printf("metadata:\n");
      for (const auto& [k, v] : info.metadata) std::printf("  %-20s %s\n", k.c_str(), v.c_str());
    }
    std::map<std::string, std::string> why;  // op type -> first reason
    for (const onnx::Unsupported& u : info.unsupported)
      if (!u.op_type.empty()) why.emplace(u.op_type, u.reason);
    std::printf("ops:\n");
    for (const auto& [op, count] : info.op_counts) {
      auto it = why.find(op);
      std::printf("  %6lld  %-24s%s\n", static_cast<long long>(count), op.c_str(),
                  it == why.end() ? "" : ("  CANNOT RUN: " + it->second).c_str());
    }
    if (info.unsupported.empty()) {
      std::printf("Ember can run this model.\n");
      return;
    }
    std::printf("Ember cannot run %zu part%s of this model:\n", info.unsupported.size(),
                info.unsupported.size() == 1 ? "" : "s");
    for (const onnx::Unsupported& u : info.unsupported)
      std::printf("  %s%s: %s\n", u.node.c_str(),
                  u.op_type.empty() ? "" : (" (" + u.op_type + ")").c_str(), u.reason.c_str());
  });
}

void add_conformance_command(CLI::App* onnx_cmd) {
  struct Args {
    std::string data = "/usr/share/libonnx-testdata/data";
    std::vector<std::string> suites{"node", "pytorch-converted", "pytorch-operator", "simple"};
    std::vector<std::string> devices;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = onnx_cmd->add_subcommand(
      "conformance",
      "Run ONNX's backend test data (Debian libonnx-testdata) on each device and print passed / "
      "failed / unsupported per suite and device, and the share passed of the cases whose types "
      "Ember "
      "has (excluded: strings, sequences, optionals, training-domain ops); exit status 1 when any "
      "case fails");
  cmd->add_option("--data", a->data, "The test data folder")
      ->capture_default_str()
      ->check(non_empty_path());
  cmd->add_option("--suite", a->suites, "Suites to run")
      ->check(CLI::IsMember({"node", "pytorch-converted", "pytorch-operator", "simple"}))
      ->capture_default_str();
  add_devices_option(cmd, a->devices,
                     "Devices to run on (default: ref, cpu and every GPU device found)");
  cmd->callback([a] {
    std::vector<Device> devices;
    for (const std::string& d : a->devices) devices.push_back(device_of(d));
    for (size_t i = 0; i < devices.size(); ++i)  // each once: a repeat would run it again
      for (size_t j = 0; j < i; ++j)
        if (devices[i] == devices[j])
          throw CLI::ValidationError("--device", devices[i].str() + " given twice");
    for (size_t i = 0; i < a->suites.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (a->suites[i] == a->suites[j])
          throw CLI::ValidationError("--suite", a->suites[i] + " given twice");
    if (devices.empty())
      for (const DeviceInfo& d : available_devices()) devices.push_back(d.device);
    std::vector<std::string> failures;
    std::printf("%-18s %-10s %6s %7s %7s %12s %9s %9s\n", "suite", "device", "cases", "passed",
                "failed", "unsupported", "excluded", "coverage");
    for (const std::string& suite : a->suites) {
      const fs::path root = fs::path(a->data) / suite;
      EMBER_CHECK(fs::is_directory(root), "onnx conformance", root.string(),
                  " is not a folder (install Debian's libonnx-testdata or give --data)");
      std::vector<fs::path> cases;
      for (const auto& e : fs::directory_iterator(root))
        if (e.is_directory() && fs::exists(e.path() / "model.onnx")) cases.push_back(e.path());
      std::sort(cases.begin(), cases.end());
      for (const Device& device : devices) {
        int passed = 0, failed = 0, unsupported = 0, excluded = 0;
        for (const fs::path& dir : cases) {
          const onnx::CaseResult r = onnx::run_test_case(dir.string(), device);
          passed += r.status == onnx::CaseResult::Status::passed;
          unsupported += r.status == onnx::CaseResult::Status::unsupported;
          excluded += r.status == onnx::CaseResult::Status::excluded;
          if (r.status == onnx::CaseResult::Status::failed) {
            ++failed;
            failures.push_back(suite + "/" + dir.filename().string() + " on " + device.str() +
                               ": " + r.detail);
          }
        }
        const int in_scope = int(cases.size()) - excluded;
        std::printf("%-18s %-10s %6zu %7d %7d %12d %9d %8.1f%%\n", suite.c_str(),
                    device.str().c_str(), cases.size(), passed, failed, unsupported, excluded,
                    in_scope > 0 ? 100.0 * passed / in_scope : 0.0);
        std::fflush(stdout);
      }
    }
    for (const std::string& f : failures) std::printf("FAILED %s\n", f.c_str());
    if (!failures.empty()) throw CLI::RuntimeError(kExitFailure);
  });
}

// "a, b, c" of `v`, each formatted by `f`.
template <typename T, typename F>
std::string joined(const std::vector<T>& v, F f) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + f(v[i]);
  return s;
}

void add_export_command(CLI::App& app) {
  struct Args {
    std::string checkpoint, onnx, dataset;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "export", "Export a model trained by `ember train` to ONNX (for ONNX Runtime and others)");
  cmd->add_option("--checkpoint", a->checkpoint,
                  "A checkpoint (DIR/checkpoints/*.safetensors) or DIR/model.safetensors")
      ->required()
      ->check(non_empty_path());
  cmd->add_option("--onnx", a->onnx, "The .onnx file to write (replaced atomically)")
      ->required()
      ->check(non_empty_path());
  cmd->add_option("--dataset", a->dataset,
                  "mnist or fashion-mnist, for a model file that does not record its dataset")
      ->check(CLI::IsMember({"mnist", "fashion-mnist"}));
  cmd->footer(
      "The file takes float32 [batch, C, S, S] images normalized as in training and returns\n"
      "float32 [batch, classes] logits; both are printed, and recorded in the file's\n"
      "metadata (ember.input, ember.mean, ember.std, ember.classes: `ember run --image`\n"
      "applies and names them). Before the file is written, ember::onnx runs\n"
      "it and compares its output with the model's.");
  cmd->callback([a] {
    std::error_code same_ec;
    EMBER_CHECK(!fs::equivalent(a->checkpoint, a->onnx, same_ec), "export", "--onnx ", a->onnx,
                " is the checkpoint itself; give another file (the weights would be replaced)");
    Trained t = load_trained("export", a->checkpoint, a->dataset, Device::cpu());
    const ModelShape s = t.dataset == "images" ? t.images.model_shape() : ModelShape{};
    std::string normalize;
    std::vector<std::string> classes;
    auto f = [](double v) {  // 0.286, as the dataset's figures are written
      std::ostringstream os;
      os << v;
      return os.str();
    };
    if (t.dataset == "images") {
      normalize = "(pixel / 255 - mean) / std per channel, mean [" + joined(t.images.mean, f) +
                  "], std [" + joined(t.images.std, f) + "]; resized to " +
                  std::to_string(s.image_size) + "x" + std::to_string(s.image_size);
      classes = t.images.classes;
    } else {
      const DatasetSpec spec = dataset_spec(t.dataset);
      normalize = "(pixel / 255 - " + f(spec.mean) + ") / " + f(spec.std);
      classes = spec.classes;
    }
    manual_seed(0);
    const Tensor example = randn({2, s.channels, s.image_size, s.image_size});
    onnx::ExportOptions o;
    auto quoted = [](const std::string& c) { return "\"" + c + "\""; };
    auto g = [](double v) {  // every digit, for `ember run --image`
      char b[32];
      std::snprintf(b, sizeof b, "%.9g", v);
      return std::string(b);
    };
    const std::vector<double> mean =
        t.dataset == "images" ? t.images.mean : std::vector<double>{dataset_spec(t.dataset).mean};
    const std::vector<double> std_ =
        t.dataset == "images" ? t.images.std : std::vector<double>{dataset_spec(t.dataset).std};
    o.metadata = {
        {"ember.model", t.model_name},  {"ember.dataset", t.dataset},
        {"ember.input", normalize},     {"ember.mean", joined(mean, g)},
        {"ember.std", joined(std_, g)}, {"ember.classes", "[" + joined(classes, quoted) + "]"}};
    onnx::save(*t.model, example, a->onnx, o);
    int64_t weights = 0;
    for (const Tensor& p : t.model->parameters()) weights += p.numel();
    std::printf("exported %s (%s) from %s to %s: opset %lld, %lld weights\n", t.model_name.c_str(),
                t.dataset.c_str(), a->checkpoint.c_str(), a->onnx.c_str(),
                static_cast<long long>(onnx::kExportOpset), static_cast<long long>(weights));
    std::printf("  input   %-7s float32 [batch, %lld, %lld, %lld]  %s\n", o.input_name.c_str(),
                static_cast<long long>(s.channels), static_cast<long long>(s.image_size),
                static_cast<long long>(s.image_size), normalize.c_str());
    std::printf("  output  %-7s float32 [batch, %lld]  logits of %s\n", o.output_name.c_str(),
                static_cast<long long>(s.classes),
                joined(classes, [](auto& c) { return c; }).c_str());
    std::printf("  checked: ember::onnx ran the file and matched the model (rtol %g, atol %g)\n",
                o.rtol, o.atol);
  });
}

}  // namespace

void add_onnx_commands(CLI::App& app) {
  add_run_command(app);
  add_export_command(app);
  auto* onnx_cmd = app.add_subcommand("onnx", "ONNX models: info, conformance");
  onnx_cmd->require_subcommand(1);
  add_info_command(onnx_cmd);
  add_conformance_command(onnx_cmd);
}

}  // namespace ember::tools
