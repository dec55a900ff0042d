// The Learner's epoch end (metrics, schedulers, best / early stopping), checkpoints, resume and
// logs.
#include <dirent.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "ember/record/checkpoint.h"
#include "ember/train/learner.h"
#include "ember/train/report.h"
#include "record/file_io.h"
#include "train/learner_internal.h"

namespace ember::train {

namespace detail {
std::string checkpoint_dir(const LearnerOptions& o) {
  return o.output_dir.empty() ? "" : o.output_dir + "/checkpoints";
}

void ensure_dir(const std::string& dir) {
  errno = 0;
  if (!record::detail::make_dirs(dir))  // a path component that is a file leaves errno 0
    EMBER_FAIL("Learner", "cannot create directory ", dir, " (",
               std::strerror(errno ? errno : ENOTDIR), ")");
}
}  // namespace detail

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool better(double v, double best, Mode mode, double min_delta) {
  return mode == Mode::min ? v < best - min_delta : v > best + min_delta;
}

double metric_of(const EpochSummary& s, const std::string& name, const char* what) {
  auto it = s.metrics.find(name);
  if (it == s.metrics.end()) {
    std::string have;
    for (const auto& [k, v] : s.metrics) have += (have.empty() ? "" : ", ") + k;
    EMBER_FAIL("Learner", what, " metric \"", name, "\" is not computed (have: ", have, ")");
  }
  return it->second;
}

nlohmann::json to_json(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }
double from_json(const nlohmann::json& j) { return j.is_number() ? j.get<double>() : kNaN; }

}  // namespace

bool Learner::end_epoch(Loader* valid, Run& run) {
  EpochSummary s;
  s.epoch = epoch_;
  const double train_seconds = seconds_since(run.epoch_start);
  for (const auto& [k, v] : run.acc.compute()) s.metrics["train_" + k] = v;
  if (train_seconds > 0) s.metrics["samples_per_sec"] = double(run.acc.samples()) / train_seconds;
  s.metrics["lr"] = optimizer_->param_groups().at(0).lr();  // the lr this epoch ended with
  if (valid)
    for (const auto& [k, v] : evaluate(*valid)) s.metrics["valid_" + k] = v;
  if (scheduler_ && interval_ == SchedulerInterval::epoch) scheduler_->step();
  if (plateau_) plateau_->step(metric_of(s, plateau_metric_, "ReduceLROnPlateau"));
  s.seconds = seconds_since(run.epoch_start);
  s.metrics["epoch"] = double(epoch_ + 1);

  bool improved = false;
  if (auto it = s.metrics.find(opts_.monitor); it != s.metrics.end() && std::isfinite(it->second)) {
    if (std::isnan(best_) || better(it->second, best_, opts_.monitor_mode, 0)) {
      best_ = it->second;
      best_epoch_ = epoch_;
      improved = true;
    }
  }
  bool stop = false;
  if (opts_.early_stopping) {
    const EarlyStopping& es = *opts_.early_stopping;
    const double v = metric_of(s, es.metric, "early stopping");
    if (!es_has_best_ || better(v, es_best_, es.mode, es.min_delta)) {
      es_best_ = v;
      es_has_best_ = true;
      es_bad_epochs_ = 0;
    } else {
      stop = ++es_bad_epochs_ >= es.patience;
    }
  }
  history_.push_back(s);
  ++epoch_;

  if (!opts_.output_dir.empty()) {
    const std::string dir = detail::checkpoint_dir(opts_);
    detail::ensure_dir(dir);
    if (opts_.keep_last > 0) {
      char name[64];
      std::snprintf(name, sizeof name, "/epoch-%04lld.safetensors", (long long)epoch_);
      const std::string path = dir + name;
      kept_.push_back(path);
      while (int64_t(kept_.size()) > opts_.keep_last) {
        record::detail::remove_file(kept_.front());
        kept_.erase(kept_.begin());
      }
      write_checkpoint(path, 0);
      run.last_checkpoint = path;
    }
    if (improved) {
      write_checkpoint(dir + "/best.safetensors", 0);
      if (opts_.keep_last == 0) run.last_checkpoint = dir + "/best.safetensors";
    }
    write_logs();
  }
  if (run.lines) {
    std::string line = "epoch " + std::to_string(epoch_) + "/" + std::to_string(run.total_epochs);
    char buf[96];
    for (const auto& [k, v] : s.metrics) {
      if (k == "epoch") continue;
      std::snprintf(buf, sizeof buf, k == "samples_per_sec" ? "  %s %.0f" : "  %s %.4g", k.c_str(),
                    v);
      line += buf;
    }
    std::snprintf(buf, sizeof buf, "  time %.1fs", s.seconds);
    line += buf;
    if (improved) line += "  (best " + opts_.monitor + ")";
    if (stop) line += "  early stop";
    *run.out << line << "\n" << std::flush;
  }
  return stop;
}

void Learner::write_checkpoint(const std::string& path, int64_t batch) const {
  record::TrainingState st;
  st.epoch = epoch_;
  st.step = step_;
  st.batch = batch;
  st.best_metric = best_;
  st.best_metric_name = opts_.monitor;
  st.best_epoch = best_epoch_;
  st.loader_epoch = epoch_;
  st.loader_seed = loader_seed_;
  st.rng = record::capture_random_states({Device::cpu(), Device::ref(), opts_.device});
  st.user_json = opts_.user_json;
  nlohmann::json learner = nlohmann::json::object();
  nlohmann::json hist = nlohmann::json::array();
  for (const auto& e : history_) {
    nlohmann::json m = nlohmann::json::object();
    for (const auto& [k, v] : e.metrics) m[k] = to_json(v);
    hist.push_back({{"epoch", e.epoch}, {"seconds", e.seconds}, {"metrics", m}});
  }
  learner["history"] = hist;
  learner["es_best"] = to_json(es_best_);
  learner["es_has_best"] = es_has_best_;
  learner["es_bad_epochs"] = es_bad_epochs_;
  learner["kept"] = kept_;
  st.extra["learner"] = learner.dump();
  record::CheckpointTargets t;
  t.model = model_.get();
  t.optimizer = optimizer_.get();
  t.scheduler = scheduler_.get();
  t.plateau = plateau_.get();
  record::save_checkpoint(path, t, st);
}

void Learner::save_checkpoint(const std::string& path) const { write_checkpoint(path, 0); }

void Learner::write_logs() const {
  const std::string& dir = opts_.output_dir;
  record::write_file_atomic(dir + "/metrics.csv", history_csv(history_), "Learner");
  record::write_file_atomic(dir + "/metrics.json", history_json(history_), "Learner");
  ReportInfo info;
  info.settings = opts_.report_settings;
  auto given = [&](const char* k) {
    for (const auto& [name, v] : info.settings)
      if (name == k) return true;
    return false;
  };
  if (!given("device")) info.settings.emplace_back("device", opts_.device.str());
  if (!given("precision"))
    for (const Tensor& p : model_->parameters())
      if (is_floating(p.dtype())) {
        info.settings.emplace_back("precision", dtype_name(p.dtype()));
        break;
      }
  info.monitor = opts_.monitor;
  info.monitor_mode = opts_.monitor_mode;
  record::write_file_atomic(dir + "/report.html",
                            history_html(history_, "Ember training report", info), "Learner");
}

void Learner::resume(const std::string& dir) {
  constexpr const char* op = "Learner::resume";
  std::vector<std::string> candidates;
  if (record::detail::file_exists(dir)) {
    candidates.push_back(dir);
  } else {
    const std::string cdir = dir + "/checkpoints";
    if (DIR* d = ::opendir(cdir.c_str())) {
      while (const dirent* e = ::readdir(d)) {
        const std::string n = e->d_name;
        if ((n.rfind("epoch-", 0) == 0 || n == "interrupted.safetensors") && n.size() > 12 &&
            n.compare(n.size() - 12, 12, ".safetensors") == 0)
          candidates.push_back(cdir + "/" + n);
      }
      ::closedir(d);
    }
  }
  if (candidates.empty()) EMBER_FAIL(op, "no checkpoint in ", dir, "/checkpoints");
  // The newest state: most optimizer steps, then most epochs / batches.
  std::string path;
  record::TrainingState newest;
  for (const auto& c : candidates) {
    const record::TrainingState st = record::read_checkpoint(c).state;
    if (path.empty() || std::make_tuple(st.step, st.epoch, st.batch) >
                            std::make_tuple(newest.step, newest.epoch, newest.batch)) {
      path = c;
      newest = st;
    }
  }
  resumed_user_json_ = newest.user_json;
  record::CheckpointTargets t;
  t.model = model_.get();
  t.optimizer = optimizer_.get();
  t.scheduler = scheduler_.get();
  t.plateau = plateau_.get();
  const record::TrainingState st = record::load_checkpoint(path, t, /*restore_rng=*/true);
  nlohmann::json learner;
  auto it = st.extra.find("learner");
  if (it != st.extra.end()) learner = nlohmann::json::parse(it->second, nullptr, false);
  if (!learner.is_object()) EMBER_FAIL(op, path, ": not a Learner checkpoint (no learner state)");
  try {
    history_.clear();
    for (const auto& e : learner.at("history")) {
      EpochSummary s;
      s.epoch = e.at("epoch").get<int64_t>();
      s.seconds = from_json(e.at("seconds"));
      for (const auto& [k, v] : e.at("metrics").items()) s.metrics[k] = from_json(v);
      history_.push_back(std::move(s));
    }
    es_best_ = from_json(learner.at("es_best"));
    es_has_best_ = learner.at("es_has_best").get<bool>();
    es_bad_epochs_ = learner.at("es_bad_epochs").get<int64_t>();
    kept_ = learner.at("kept").get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    EMBER_FAIL(op, path, ": bad learner state (", e.what(), ")");
  }
  epoch_ = st.epoch;
  step_ = st.step;
  resume_batch_ = st.batch;
  resume_seed_ = st.loader_seed;
  best_ = st.best_metric;
  best_epoch_ = st.best_epoch;
}

}  // namespace ember::train
