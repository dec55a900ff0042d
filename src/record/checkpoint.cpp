// Training checkpoints in one safetensors file (model.*, optimizer.*, scheduler.* + metadata).
#include "ember/record/checkpoint.h"

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <tuple>

#include "ember/checked.h"

namespace ember::record {

namespace {

constexpr const char* kFormat = "ember.checkpoint.v1";
constexpr const char* kReserved[] = {
    "format",           "epoch",      "step",         "batch",       "best_metric",
    "best_metric_name", "best_epoch", "loader_epoch", "loader_seed", "user"};

std::string num(double v) {
  if (std::isnan(v)) return "nan";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void add_prefixed(nn::StateDict& all, const std::string& prefix, const nn::StateDict& part) {
  for (const auto& [k, v] : part.items()) all.set(prefix + k, v);
}

}  // namespace

std::vector<std::pair<std::string, RandomState>> capture_random_states(
    const std::vector<Device>& devices) {
  std::vector<std::pair<std::string, RandomState>> out;
  for (const Device& d : devices) {
    bool seen = false;
    for (const auto& e : out) seen = seen || e.first == d.str();
    if (!seen) out.emplace_back(d.str(), random_state(d));
  }
  return out;
}

void restore_random_states(const std::vector<std::pair<std::string, RandomState>>& states) {
  for (const auto& [name, st] : states) set_random_state(Device::parse(name), st);
}

void save_checkpoint(const std::string& path, const CheckpointTargets& from,
                     const TrainingState& s) {
  constexpr const char* op = "save_checkpoint";
  if (!from.model) EMBER_FAIL(op, path, ": no model given");
  if (from.scheduler && from.plateau) EMBER_FAIL(op, path, ": both scheduler and plateau given");
  if (!nlohmann::json::accept(s.user_json)) EMBER_FAIL(op, path, ": user_json is not valid JSON");
  // What read_checkpoint would refuse is not written.
  for (const auto& [key, v, lo] : {std::tuple{"epoch", s.epoch, int64_t(0)},
                                   {"step", s.step, int64_t(0)},
                                   {"batch", s.batch, int64_t(0)},
                                   {"best_epoch", s.best_epoch, int64_t(-1)},
                                   {"loader_epoch", s.loader_epoch, int64_t(0)}})
    if (v < lo || v > kMaxFileCount)
      EMBER_FAIL(op, path, ": ", key, " ", v, " is out of range [", lo, ", ", kMaxFileCount, "]");
  if (std::isinf(s.best_metric))
    EMBER_FAIL(op, path, ": best_metric is ", s.best_metric, " (a finite number or NaN: none)");
  nn::StateDict all;
  add_prefixed(all, "model.", from.model->state_dict());
  if (from.optimizer) add_prefixed(all, "optimizer.", from.optimizer->state_dict());
  if (from.scheduler) add_prefixed(all, "scheduler.", from.scheduler->state_dict());
  if (from.plateau) add_prefixed(all, "scheduler.", from.plateau->state_dict());
  Metadata m;
  for (const auto& [k, v] : s.extra) {
    for (const char* r : kReserved)
      if (k == r) EMBER_FAIL(op, path, ": extra key \"", k, "\" is reserved");
    if (k.rfind("rng.", 0) == 0) EMBER_FAIL(op, path, ": extra key \"", k, "\" is reserved");
    m[k] = v;
  }
  m["format"] = kFormat;
  m["epoch"] = std::to_string(s.epoch);
  m["step"] = std::to_string(s.step);
  m["batch"] = std::to_string(s.batch);
  m["best_metric"] = num(s.best_metric);
  m["best_metric_name"] = s.best_metric_name;
  m["best_epoch"] = std::to_string(s.best_epoch);
  m["loader_epoch"] = std::to_string(s.loader_epoch);
  m["loader_seed"] = std::to_string(s.loader_seed);
  m["user"] = s.user_json;
  for (const auto& [dev, st] : s.rng)
    m["rng." + dev] = std::to_string(st.seed) + "," + std::to_string(st.offset);
  std::string bytes;
  try {
    bytes = serialize_safetensors(all, m);
  } catch (const Error& e) {
    EMBER_FAIL(op, path, ": ", e.what());
  }
  write_file_atomic(path, bytes, op);
}

CheckpointFile read_checkpoint(const std::string& path) {
  constexpr const char* op = "load_checkpoint";
  SafetensorsFile f;
  try {
    f = load_safetensors(path, Device::cpu());
  } catch (const Error& e) {
    EMBER_FAIL(op, e.what());
  }
  auto& m = f.metadata;
  auto get = [&](const char* key) -> const std::string& {
    auto it = m.find(key);
    if (it == m.end()) EMBER_FAIL(op, path, ": metadata has no \"", key, "\"");
    return it->second;
  };
  if (get("format") != kFormat)
    EMBER_FAIL(op, path, ": format is \"", get("format"), "\", expected ", kFormat);
  CheckpointFile out;
  TrainingState& s = out.state;
  // Every number is range-checked here, so that a resumed run never counts from a negative or
  // NaN epoch and nothing converts an out-of-range value (the error names the field).
  auto field = [&](const std::string& key) { return FileField{op, path, key}; };
  auto count = [&](const char* key, int64_t lo = 0) {
    return checked_int64(field(key), get(key), lo, kMaxFileCount);
  };
  s.epoch = count("epoch");
  s.step = count("step");
  s.batch = count("batch");
  s.best_epoch = count("best_epoch", -1);
  s.loader_epoch = count("loader_epoch");
  s.loader_seed = checked_uint64(field("loader_seed"), get("loader_seed"));
  // NaN (written "nan") means no best value yet; anything else must be a finite number.
  if (get("best_metric") == "nan") {
    s.best_metric = std::numeric_limits<double>::quiet_NaN();
  } else {
    char* end = nullptr;
    const std::string& text = get("best_metric");
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end || !std::isfinite(v))
      EMBER_FAIL(op, path, ": field 'best_metric' = \"", text,
                 "\" is not a finite number (or nan: none yet)");
    s.best_metric = v;
  }
  s.best_metric_name = get("best_metric_name");
  s.user_json = get("user");
  if (!nlohmann::json::accept(s.user_json))
    EMBER_FAIL(op, path, ": metadata \"user\" is not valid JSON");
  for (const auto& [k, v] : m) {
    if (k.rfind("rng.", 0) == 0) {
      const size_t comma = v.find(',');
      RandomState st;
      if (comma == std::string::npos)
        EMBER_FAIL(op, path, ": metadata \"", k, "\" is not \"<seed>,<offset>\"");
      st.seed = checked_uint64(field(k + " seed"), v.substr(0, comma));
      st.offset = checked_uint64(field(k + " offset"), v.substr(comma + 1));
      s.rng.emplace_back(k.substr(4), st);
      continue;
    }
    bool reserved = false;
    for (const char* r : kReserved) reserved = reserved || k == r;
    if (!reserved) s.extra[k] = v;
  }
  for (const auto& [k, t] : f.tensors.items()) {
    if (k.rfind("model.", 0) == 0)
      out.model.set(k.substr(6), t);
    else if (k.rfind("optimizer.", 0) == 0)
      out.optimizer.set(k.substr(10), t);
    else if (k.rfind("scheduler.", 0) == 0)
      out.scheduler.set(k.substr(10), t);
    else
      EMBER_FAIL(op, path, ": unexpected tensor \"", k,
                 "\" (not model.*, optimizer.* or scheduler.*)");
  }
  return out;
}

TrainingState load_checkpoint(const std::string& path, const CheckpointTargets& into,
                              bool restore_rng) {
  constexpr const char* op = "load_checkpoint";
  if (into.scheduler && into.plateau) EMBER_FAIL(op, path, ": both scheduler and plateau given");
  CheckpointFile f = read_checkpoint(path);
  auto part = [&](const char* what, const nn::StateDict& d, const auto& apply) {
    if (d.size() == 0) EMBER_FAIL(op, path, ": the file holds no ", what, " state");
    try {
      apply(d);
    } catch (const Error& e) {
      EMBER_FAIL(op, path, ": ", what, ": ", e.what());
    }
  };
  // Validate the RNG names before changing anything.
  for (const auto& [name, st] : f.state.rng) {
    try {
      (void)Device::parse(name);
    } catch (const Error& e) {
      EMBER_FAIL(op, path, ": bad device in rng state: ", e.what());
    }
  }
  // Model, optimizer, scheduler (each checks all its values before it changes anything; the
  // model first, whose mismatch says most). When a part fails, the parts loaded before it are
  // put back, so a bad file leaves every target as it was.
  nn::StateDict model_before;  // a copy: load_state_dict writes the parameters in place
  if (into.model && (into.optimizer || into.scheduler || into.plateau)) {
    const nn::StateDict now = into.model->state_dict();
    for (const auto& [k, v] : now.items()) model_before.set(k, v.clone());
  }
  const nn::StateDict opt_before = into.optimizer ? into.optimizer->state_dict() : nn::StateDict();
  bool model_done = false, opt_done = false;
  try {
    if (into.model) {
      part("model", f.model, [&](const nn::StateDict& d) { into.model->load_state_dict(d, true); });
      model_done = true;
    }
    if (into.optimizer) {
      part("optimizer", f.optimizer,
           [&](const nn::StateDict& d) { into.optimizer->load_state_dict(d); });
      opt_done = true;
    }
    if (into.scheduler)
      part("scheduler", f.scheduler,
           [&](const nn::StateDict& d) { into.scheduler->load_state_dict(d); });
    if (into.plateau)
      part("scheduler", f.scheduler,
           [&](const nn::StateDict& d) { into.plateau->load_state_dict(d); });
  } catch (...) {
    if (model_done && model_before.size() > 0) into.model->load_state_dict(model_before, true);
    if (opt_done) into.optimizer->load_state_dict(opt_before);
    throw;
  }
  if (restore_rng) {
    try {
      restore_random_states(f.state.rng);
    } catch (const Error& e) {
      EMBER_FAIL(op, path, ": rng: ", e.what());
    }
  }
  return f.state;
}

}  // namespace ember::record
