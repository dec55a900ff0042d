// Training checkpoints in one safetensors file (model.*, optimizer.*, scheduler.* + metadata).
#include "ember/record/checkpoint.h"

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

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

bool parse_i64(const std::string& s, int64_t& out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno || *end) return false;
  out = v;
  return true;
}
bool parse_u64(const std::string& s, uint64_t& out) {
  if (s.empty() || s[0] == '-') return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (errno || *end) return false;
  out = v;
  return true;
}
bool parse_f64(const std::string& s, double& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return *end == 0;
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
  auto i64 = [&](const char* key, int64_t& v) {
    if (!parse_i64(get(key), v)) EMBER_FAIL(op, path, ": metadata \"", key, "\" is not an integer");
  };
  i64("epoch", s.epoch);
  i64("step", s.step);
  i64("batch", s.batch);
  i64("best_epoch", s.best_epoch);
  i64("loader_epoch", s.loader_epoch);
  if (!parse_u64(get("loader_seed"), s.loader_seed))
    EMBER_FAIL(op, path, ": metadata \"loader_seed\" is not an unsigned integer");
  if (!parse_f64(get("best_metric"), s.best_metric))
    EMBER_FAIL(op, path, ": metadata \"best_metric\" is not a number");
  s.best_metric_name = get("best_metric_name");
  s.user_json = get("user");
  if (!nlohmann::json::accept(s.user_json))
    EMBER_FAIL(op, path, ": metadata \"user\" is not valid JSON");
  for (const auto& [k, v] : m) {
    if (k.rfind("rng.", 0) == 0) {
      const size_t comma = v.find(',');
      RandomState st;
      if (comma == std::string::npos || !parse_u64(v.substr(0, comma), st.seed) ||
          !parse_u64(v.substr(comma + 1), st.offset))
        EMBER_FAIL(op, path, ": metadata \"", k, "\" is not \"<seed>,<offset>\"");
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
  if (into.model)
    part("model", f.model, [&](const nn::StateDict& d) { into.model->load_state_dict(d, true); });
  if (into.optimizer)
    part("optimizer", f.optimizer,
         [&](const nn::StateDict& d) { into.optimizer->load_state_dict(d); });
  if (into.scheduler)
    part("scheduler", f.scheduler,
         [&](const nn::StateDict& d) { into.scheduler->load_state_dict(d); });
  if (into.plateau)
    part("scheduler", f.scheduler,
         [&](const nn::StateDict& d) { into.plateau->load_state_dict(d); });
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
