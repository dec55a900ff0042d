// The autotuner (autotune.h): choices per key, timing, check mode and the cache file.
#include "runtime/autotune.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/atomic_file.h"
#include "core/env.h"
#include "ember/error.h"
#include "runtime/backend.h"

namespace ember::autotune {

namespace {

constexpr int kFormatVersion = 1;
constexpr const char* kFormat = "ember-autotune";

// Timed runs per candidate at each effort.
int reps_of(Effort e) { return e == Effort::minimal ? 2 : e == Effort::balanced ? 3 : 5; }

bool parse_effort(const std::string& s, Effort& e) {
  for (Effort x : {Effort::off, Effort::minimal, Effort::balanced, Effort::full})
    if (s == effort_name(x)) {
      e = x;
      return true;
    }
  return false;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string key_of(const std::string& op, const std::string& dtypes, const std::string& shape) {
  return op + "|" + dtypes + "|" + shape;
}

}  // namespace

const char* effort_name(Effort e) {
  switch (e) {
    case Effort::off:
      return "off";
    case Effort::minimal:
      return "minimal";
    case Effort::balanced:
      return "balanced";
    case Effort::full:
      return "full";
  }
  return "balanced";
}

// EMBER_AUTOTUNE: a level, or a flag word as every switch reads them (0/false/no: off,
// 1/true/yes/on: the default, balanced).
Effort effort_from_env() {
  if (const std::optional<bool> f = parse_env_flag(env_string("EMBER_AUTOTUNE")))
    return *f ? Effort::balanced : Effort::off;
  const std::string v = env_choice("EMBER_AUTOTUNE", {"off", "minimal", "balanced", "full"},
                                   effort_name(Effort::balanced));
  Effort e = Effort::balanced;
  parse_effort(v, e);
  return e;
}

std::string cache_dir_from_env() { return env_cache_dir("EMBER_AUTOTUNE_CACHE", "autotune"); }

int64_t anchor(int64_t v) {
  int64_t p = 1;
  while (p < v && p < (int64_t(1) << 62)) p <<= 1;
  return p;
}

Options Options::from_env() {
  Options o;
  o.effort = effort_from_env();
  o.dir = cache_dir_from_env();
  o.check = env_flag("EMBER_CHECK", false);
  return o;
}

Autotuner::Autotuner(std::string stem, std::string identity, Options options)
    : stem_(std::move(stem)), identity_(std::move(identity)), options_(std::move(options)) {}

std::string Autotuner::file() const {
  std::lock_guard<std::mutex> l(mu_);
  return options_.dir.empty() || options_.effort == Effort::off
             ? std::string()
             : options_.dir + "/" + stem_ + ".json";
}

Options Autotuner::options() const {
  std::lock_guard<std::mutex> l(mu_);
  return options_;
}

void Autotuner::set_options(const Options& o) {
  std::lock_guard<std::recursive_mutex> t(tune_mu_);
  std::lock_guard<std::mutex> l(mu_);
  options_ = o;
  entries_.clear();
  loaded_ = false;
  stats_ = {};
}

TunerStats Autotuner::stats() const {
  TunerStats s;
  {
    std::lock_guard<std::mutex> l(mu_);
    s = stats_;
    s.entries = int64_t(entries_.size());
  }
  s.file = file();
  return s;
}

void Autotuner::force(const std::string& op, const std::string& name) {
  std::lock_guard<std::mutex> l(mu_);
  if (name.empty())
    forced_.erase(op);
  else
    forced_[op] = name;
}

void Autotuner::clear() {
  const std::string path = file();
  std::lock_guard<std::recursive_mutex> t(tune_mu_);
  std::lock_guard<std::mutex> l(mu_);
  entries_.clear();
  stats_ = {};
  loaded_ = true;  // nothing to read back: the file is gone
  if (!path.empty()) std::remove(path.c_str());
}

// Reads the entries of the cache file at `path` into `got`: "" when the file is ours (or absent:
// `found` false), else why it is not (then `got` is left empty).
std::string Autotuner::read_file(const std::string& path, std::map<std::string, Entry>& got,
                                 bool& found) const {
  found = false;
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";  // no file yet
  found = true;
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    const nlohmann::json j = nlohmann::json::parse(ss.str());
    if (!j.is_object() || j.value("format", "") != kFormat) return "not an Ember autotune cache";
    if (j.value("version", -1) != kFormatVersion)
      return "format version " + j.value("version", nlohmann::json(-1)).dump() + ", not " +
             std::to_string(kFormatVersion);
    if (j.value("device", "") != identity_)
      return "made for device '" + j.value("device", "") + "', this is '" + identity_ + "'";
    for (const auto& [k, v] : j.at("entries").items()) {
      Entry e;
      e.variant = v.at("variant").get<std::string>();
      if (!parse_effort(v.at("effort").get<std::string>(), e.effort))
        throw std::runtime_error("bad effort");
      e.names = v.value("candidates", std::vector<std::string>{});
      e.ms = v.value("ms", std::vector<double>{});
      got[k] = std::move(e);
    }
    return "";
  } catch (const std::exception& e) {
    got.clear();
    return std::string("unreadable (") + e.what() + ")";
  }
}

// Reads the cache file once (mu_ held). Anything unreadable as ours is ignored with a warning;
// the next save rewrites the file.
void Autotuner::load_locked() {
  if (loaded_) return;
  loaded_ = true;
  if (options_.dir.empty() || options_.effort == Effort::off) return;
  const std::string path = options_.dir + "/" + stem_ + ".json";
  std::map<std::string, Entry> got;
  bool found = false;
  const std::string why = read_file(path, got, found);
  if (!why.empty()) {
    std::fprintf(stderr, "warning: [autotune] cache %s ignored: %s; it will be rewritten\n",
                 path.c_str(), why.c_str());
    return;
  }
  stats_.loaded = int64_t(got.size());
  for (auto& [k, e] : got) entries_.emplace(k, std::move(e));
}

// Writes every choice (mu_ held): temp file + rename (core/atomic_file.h). Choices another
// process wrote since this one loaded the file are kept (a foreign or corrupt file, reported at
// load, is overwritten). A failed write only costs the next process its tuning: it warns once
// per tuner (an unwritable EMBER_AUTOTUNE_CACHE would otherwise never keep a choice, silently).
void Autotuner::save_locked() {
  if (options_.dir.empty() || options_.effort == Effort::off) return;
  const std::string path = options_.dir + "/" + stem_ + ".json";
  std::map<std::string, Entry> theirs;
  bool found = false;
  if (read_file(path, theirs, found).empty())
    for (auto& [k, e] : theirs) entries_.emplace(k, std::move(e));
  nlohmann::json entries = nlohmann::json::object();
  for (const auto& [k, e] : entries_)
    entries[k] = {{"variant", e.variant},
                  {"effort", effort_name(e.effort)},
                  {"candidates", e.names},
                  {"ms", e.ms}};
  const nlohmann::json j = {{"format", kFormat},
                            {"version", kFormatVersion},
                            {"device", identity_},
                            {"entries", entries}};
  const std::string text = j.dump(1) + "\n";
  std::string why;
  if (!try_write_file_atomic(path, text.data(), text.size(), &why) && !save_warned_) {
    save_warned_ = true;
    // Named: the folder comes from EMBER_AUTOTUNE_CACHE (or its default under ~/.cache), and
    // the user has to know which setting to change.
    std::fprintf(stderr,
                 "warning: [autotune] cannot write the cache file %s: %s; the choices are kept "
                 "in memory only (set EMBER_AUTOTUNE_CACHE to a writable folder, or to 0 for no "
                 "file)\n",
                 path.c_str(), why.c_str());
  }
}

size_t Autotuner::tune(const std::string& key, const std::vector<Candidate>& cands,
                       const std::vector<size_t>& eligible, const Bench& bench, Entry& e) {
  const int reps = reps_of(e.effort);
  std::vector<double> want;  // check mode: the default's outputs
  int64_t runs = 0;
  auto timed = [&](size_t i) {
    if (bench.sync) bench.sync();
    const auto t0 = std::chrono::steady_clock::now();
    bench.run(i);
    if (bench.sync) bench.sync();
    ++runs;
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  const std::string detail = bench.detail ? bench.detail() : std::string();
  double tol = bench.atol;  // the part of the tolerance that does not depend on the element
  size_t best = eligible[0];
  double best_ms = 0;
  for (size_t i : eligible) {
    for (int w = 0; w < bench.warmup; ++w) timed(i);
    std::vector<double> t;
    for (int r = 0; r < reps; ++r) t.push_back(timed(i));
    const double m = median(t);
    e.names.push_back(cands[i].name);
    e.ms.push_back(m);
    if (i == eligible[0] || m < best_ms) {
      best = i;
      best_ms = m;
    }
    if (!options_.check || !bench.result) continue;
    std::vector<double> got = bench.result();
    if (i == eligible[0]) {
      want = std::move(got);
      double mx = 0;
      for (double w : want)
        if (std::isfinite(w)) mx = std::max(mx, std::abs(w));
      tol += bench.max_rtol * mx;
      continue;
    }
    if (got.size() != want.size())
      EMBER_FAIL("EMBER_CHECK", "autotune variant '", cands[i].name, "' of ", key, " (", detail,
                 ") wrote ", got.size(), " values, the default '", cands[eligible[0]].name, "' ",
                 want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      const double g = got[k], w = want[k];
      if (std::isnan(g) && std::isnan(w)) continue;
      if (g == w || std::abs(g - w) <= tol + bench.rtol * std::abs(w)) continue;
      EMBER_FAIL("EMBER_CHECK", "autotune variant '", cands[i].name, "' of ", key, " (", detail,
                 ") differs from the default '", cands[eligible[0]].name, "': output element ", k,
                 ": variant ", g, ", default ", w, " (tolerance ", tol, " + ", bench.rtol,
                 " x |default|)");
    }
  }
  std::lock_guard<std::mutex> l(mu_);
  stats_.timed_runs += runs;
  return best;
}

size_t Autotuner::pick(const std::string& op, const std::string& dtypes, const std::string& shape,
                       const std::vector<Candidate>& cands, const Bench& bench) {
  if (cands.size() <= 1) return 0;
  auto index_of = [&](const std::string& name) {
    for (size_t i = 0; i < cands.size(); ++i)
      if (cands[i].name == name) return i;
    return cands.size();
  };
  const std::string key = key_of(op, dtypes, shape);
  Effort effort;
  {
    std::lock_guard<std::mutex> l(mu_);
    ++stats_.lookups;
    auto f = forced_.find(op);
    if (f != forced_.end()) {
      // The exact name, else the first candidate in its family ("onednn": "onednn/...").
      if (index_of(f->second) < cands.size()) return index_of(f->second);
      for (size_t i = 0; i < cands.size(); ++i)
        if (cands[i].name.compare(0, f->second.size() + 1, f->second + "/") == 0) return i;
    }
    effort = options_.effort;
    if (effort == Effort::off) return 0;
    load_locked();
    auto it = entries_.find(key);
    // A choice made at a lower effort than now is tuned again (it saw fewer candidates).
    if (it != entries_.end() && it->second.effort >= effort) {
      const size_t i = index_of(it->second.variant);
      if (i < cands.size()) return i;
    }
  }
  std::vector<size_t> eligible;
  for (size_t i = 0; i < cands.size(); ++i)
    if (i == 0 || cands[i].min_effort <= effort) eligible.push_back(i);
  if (eligible.size() == 1) return 0;

  std::lock_guard<std::recursive_mutex> t(tune_mu_);
  {
    std::lock_guard<std::mutex> l(mu_);  // another thread may have tuned it meanwhile
    auto it = entries_.find(key);
    if (it != entries_.end() && it->second.effort >= effort) {
      const size_t i = index_of(it->second.variant);
      if (i < cands.size()) return i;
    }
  }
  Entry e;
  e.effort = effort;
  const size_t best = tune(key, cands, eligible, bench, e);
  e.variant = cands[best].name;
  std::lock_guard<std::mutex> l(mu_);
  ++stats_.tuned;
  entries_[key] = std::move(e);
  save_locked();
  return best;
}

std::string stem_of(const Device& d) {
  std::string s = d.str();
  std::replace(s.begin(), s.end(), ':', '-');
  return s;
}

Autotuner& for_device(const Device& d) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Autotuner>> tuners;
  const std::string stem = stem_of(d);
  {
    std::lock_guard<std::mutex> l(mu);
    auto it = tuners.find(stem);
    if (it != tuners.end()) return *it->second;
  }
  // The identity is asked outside the lock: a backend may open its device for it.
  std::string identity = backend_for(d).autotune_identity();
  std::lock_guard<std::mutex> l(mu);
  auto& slot = tuners[stem];
  if (!slot) slot = std::make_unique<Autotuner>(stem, std::move(identity));
  return *slot;
}

}  // namespace ember::autotune

namespace ember {

AutotuneStats autotune_stats(const Device& device) {
  const autotune::TunerStats t = autotune::for_device(device).stats();
  AutotuneStats s;
  s.tuned = t.tuned;
  s.timed_runs = t.timed_runs;
  s.loaded = t.loaded;
  s.entries = t.entries;
  s.cache_file = t.file;
  return s;
}

void clear_autotune_cache(const Device& device) { autotune::for_device(device).clear(); }

}  // namespace ember
