// The Learner's epoch end (metrics, schedulers, best / early stopping), checkpoints, resume and
// logs.
#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <tuple>
#include <utility>

#include "ember/checked.h"
#include "ember/dist/dist.h"
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
std::string new_run_id() {
  std::random_device rd;
  const uint64_t v = (uint64_t(rd()) << 32) ^ uint64_t(rd()) ^
                     uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)v);
  return buf;
}
}  // namespace detail

namespace {

// "epoch-0007.safetensors": the name of the checkpoint written after epoch 7.
std::string epoch_checkpoint_name(int64_t epoch) {
  char name[64];
  std::snprintf(name, sizeof name, "epoch-%04lld.safetensors", (long long)epoch);
  return name;
}

// The epoch of a name epoch_checkpoint_name() makes ("epoch-" + at least 4 digits +
// ".safetensors", nothing else: no folder, no "..", not absolute), or -1.
int64_t epoch_of_checkpoint_name(const std::string& n) {
  const std::string pre = "epoch-", suf = ".safetensors";
  if (n.size() < pre.size() + 4 + suf.size() || n.size() > pre.size() + 16 + suf.size() ||
      n.compare(0, pre.size(), pre) != 0 || n.compare(n.size() - suf.size(), suf.size(), suf) != 0)
    return -1;
  int64_t e = 0;
  for (size_t i = pre.size(); i < n.size() - suf.size(); ++i) {
    if (n[i] < '0' || n[i] > '9') return -1;
    e = e * 10 + (n[i] - '0');
  }
  return epoch_checkpoint_name(e) == n ? e : -1;  // canonical: no extra leading zeros
}

// An integer of the learner's JSON state: JSON integers as their digits, other numbers checked
// before conversion (nlohmann's get<int64_t> of 1e300 is an undefined cast).
int64_t json_int(const FileField& f, const nlohmann::json& j, int64_t lo, int64_t hi) {
  if (j.is_number_float()) return checked_int64(f, j.get<double>(), lo, hi);
  return checked_int64(f, j.dump(), lo, hi);  // a string, bool or object fails as its text
}

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

bool Learner::end_epoch(detail::BatchSource* valid, Run& run) {
  EpochSummary s;
  s.epoch = epoch_ + 1;
  const double train_seconds = seconds_since(run.epoch_start);
  for (const auto& [k, v] : gather_metrics(run.acc)) s.metrics["train_" + k] = v;
  if (train_seconds > 0) s.metrics["samples_per_sec"] = double(run.acc.samples()) / train_seconds;
  if (run.batches > 0) {
    // Kernels the device launched per training batch: fused graphs plus ops run one by one.
    const StreamStats now = stream_stats(opts_.device);
    const double nb = double(run.batches);
    s.metrics["kernels_per_step"] = double(now.kernels() - run.stream_start.kernels()) / nb;
    s.metrics["fused_kernels_per_step"] = double(now.graphs - run.stream_start.graphs) / nb;
  }
  s.metrics["lr"] = optimizer_->param_groups().at(0).lr();  // the lr this epoch ended with
  if (opts_.precision == Precision::f16) {
    s.metrics["grad_scale"] = scaler_.get_scale();
    s.metrics["skipped_steps"] = double(run.skipped_steps);
  }
  if (valid)
    for (const auto& [k, v] : evaluate_source(*valid)) s.metrics["valid_" + k] = v;
  if (scheduler_ && interval_ == SchedulerInterval::epoch) scheduler_->step();
  if (plateau_) plateau_->step(metric_of(s, plateau_metric_, "ReduceLROnPlateau"));
  s.seconds = seconds_since(run.epoch_start);
  s.metrics["epoch"] = double(epoch_ + 1);

  bool improved = false;
  if (auto it = s.metrics.find(opts_.monitor); it != s.metrics.end() && std::isfinite(it->second)) {
    if (std::isnan(best_) || better(it->second, best_, opts_.monitor_mode, 0)) {
      best_ = it->second;
      best_epoch_ = epoch_ + 1;
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
    if (writer_) detail::ensure_dir(dir);
    if (opts_.keep_last > 0) {
      const std::string name = epoch_checkpoint_name(epoch_);
      const std::string path = dir + "/" + name;
      for (auto it = kept_.begin(); it != kept_.end();) it = *it == name ? kept_.erase(it) : it + 1;
      kept_.push_back(name);
      std::vector<std::string> old;
      while (int64_t(kept_.size()) > opts_.keep_last) {
        old.push_back(kept_.front());
        kept_.erase(kept_.begin());
      }
      // The new checkpoint first: a failed write leaves the older ones in place.
      if (writer_) write_checkpoint(path, 0);
      if (std::find(written_.begin(), written_.end(), name) == written_.end())
        written_.push_back(name);
      if (writer_)
        for (const std::string& n : old) remove_old_checkpoint(n);
      run.last_checkpoint = path;
    }
    if (improved) {
      if (writer_) write_checkpoint(dir + "/best.safetensors", 0);
      if (opts_.keep_last == 0) run.last_checkpoint = dir + "/best.safetensors";
    }
    if (writer_) write_logs();
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
  if (opts_.on_epoch_end) opts_.on_epoch_end(history_.back());
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
  learner["run_id"] = run_id_;
  learner["precision"] = precision_name(opts_.precision);
  if (scaler_.is_enabled()) {
    nlohmann::json gs = nlohmann::json::object();
    for (const auto& [k, v] : scaler_.state_dict()) gs[k] = v.item<double>();
    learner["grad_scaler"] = gs;
  }
  // Epochs (history, best_epoch) count from 1 since this key; files without it count from 0.
  learner["epoch_base"] = 1;
  st.extra["learner"] = learner.dump();
  record::CheckpointTargets t;
  t.model = model_.get();
  t.optimizer = optimizer_.get();
  t.scheduler = scheduler_.get();
  t.plateau = plateau_.get();
  record::save_checkpoint(path, t, st);
}

void Learner::save_checkpoint(const std::string& path) const { write_checkpoint(path, 0); }

namespace {
// `path` is no symbolic link and its folder, links resolved, lies inside `output_dir`'s (a
// checkpoints/ linked to another run's must not lose that run's files).
bool resolves_inside(const std::string& path, const std::string& output_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_symlink(path, ec)) return false;
  const fs::path dir = fs::canonical(fs::path(path).parent_path(), ec);
  if (ec) return false;
  const fs::path root = fs::canonical(output_dir.empty() ? "." : output_dir, ec);
  if (ec) return false;
  const std::string d = dir.string() + "/", r = root.string() + "/";
  return d.compare(0, r.size(), r) == 0;
}
}  // namespace

void Learner::remove_old_checkpoint(const std::string& name) {
  const int64_t epoch = epoch_of_checkpoint_name(name);
  if (epoch < 0) return;  // resume() keeps only such names; never delete anything else
  const std::string path = detail::checkpoint_dir(opts_) + "/" + name;
  if (!record::detail::file_exists(path)) return;
  if (!resolves_inside(path, opts_.output_dir)) {
    std::cerr << "warning: [Learner] not deleting " << path
              << ": it is a symbolic link or lies outside the output folder " << opts_.output_dir
              << " once links are resolved\n";
    return;
  }
  bool ours = std::find(written_.begin(), written_.end(), name) != written_.end();
  if (!ours) {  // from before a resume: its content must say it is this run's, of that epoch
    try {
      const record::CheckpointFile f = record::read_checkpoint(path);
      auto it = f.state.extra.find("learner");
      const auto j = it == f.state.extra.end() ? nlohmann::json()
                                               : nlohmann::json::parse(it->second, nullptr, false);
      ours =
          f.state.epoch == epoch && j.is_object() && j.contains("run_id") && j["run_id"] == run_id_;
    } catch (const Error&) {
      ours = false;
    }
  }
  if (ours)
    record::detail::remove_file(path);
  else
    std::cerr << "warning: [Learner] not deleting " << path
              << ": it is not a checkpoint this run wrote\n";
}

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
  if (ddp_ && !given("processes"))
    info.settings.emplace_back("processes", std::to_string(dist::world_size()) + " (" +
                                                dist::default_group().backend() +
                                                ", data-parallel)");
  if (!given("precision") && opts_.precision != Precision::f32)
    info.settings.emplace_back(
        "precision", std::string("mixed ") + dtype_name(*detail::autocast_dtype(opts_.precision)) +
                         " (float32 weights)");
  else if (!given("precision"))
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

void Learner::set_report_setting(const std::string& name, const std::string& value) {
  for (auto& [k, v] : opts_.report_settings)
    if (k == name) {
      v = value;
      return;
    }
  opts_.report_settings.emplace_back(name, value);
}

namespace {
// The checkpoint resume(dir) loads: dir itself when it is a file, else the newest in
// dir/checkpoints (interrupted or epoch-NNNN, by optimizer step). Its path and state.
std::pair<std::string, record::TrainingState> newest_checkpoint(const std::string& dir,
                                                                const char* op) {
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
  return {path, newest};
}

// The learner's JSON state of a checkpoint.
nlohmann::json learner_state(const record::TrainingState& st, const std::string& path,
                             const char* op) {
  nlohmann::json learner;
  auto it = st.extra.find("learner");
  if (it != st.extra.end()) learner = nlohmann::json::parse(it->second, nullptr, false);
  if (!learner.is_object()) EMBER_FAIL(op, path, ": not a Learner checkpoint (no learner state)");
  return learner;
}

// The checkpoint's precision: f32 when absent (written before precision was recorded).
Precision precision_of(const nlohmann::json& learner, const std::string& path, const char* op) {
  if (!learner.contains("precision")) return Precision::f32;
  const nlohmann::json& p = learner["precision"];
  for (Precision c : {Precision::f32, Precision::bf16, Precision::f16})
    if (p.is_string() && p.get<std::string>() == precision_name(c)) return c;
  EMBER_FAIL(op, path, ": field 'learner.precision' = ", p.dump(), " is not f32, bf16 or f16");
}
}  // namespace

Precision checkpoint_precision(const std::string& dir) {
  constexpr const char* op = "checkpoint_precision";
  const auto [path, st] = newest_checkpoint(dir, op);
  return precision_of(learner_state(st, path, op), path, op);
}

void Learner::resume(const std::string& dir) {
  constexpr const char* op = "Learner::resume";
  const auto [path, newest] = newest_checkpoint(dir, op);
  // The learner's state is checked before load_checkpoint (which changes nothing when it
  // fails), so a bad file leaves this learner as it was.
  const record::TrainingState& st = newest;
  const nlohmann::json learner = learner_state(st, path, op);
  // A run keeps its precision (the loss scale and the weights' trajectory belong to it).
  const Precision precision = precision_of(learner, path, op);
  if (precision != opts_.precision)
    EMBER_FAIL(op, path, ": the checkpoint was trained with precision ", precision_name(precision),
               ", this Learner's is ", precision_name(opts_.precision),
               " (a run keeps its precision; start a new run to change it)");
  optim::GradScaler scaler = scaler_;
  if (scaler.is_enabled()) {
    // The scaler's own checks (ember/checked.h) on its numbers, with the file named.
    const nlohmann::json gs = learner.value("grad_scaler", nlohmann::json());
    if (!gs.is_object())
      EMBER_FAIL(op, path, ": field 'learner.grad_scaler' is missing (an f16 checkpoint has one)");
    nn::StateDict sd;
    for (const auto& [k, v] : gs.items()) {
      if (!v.is_number())
        EMBER_FAIL(op, path, ": field 'learner.grad_scaler.", k, "' = ", v.dump(),
                   " is not a number");
      // from_vector, not a Scalar: the file's number may be past int64 (Scalar keeps both).
      sd.set(k, from_vector(std::vector<double>{v.get<double>()}, Shape{}, Device::cpu()));
    }
    try {
      scaler.load_state_dict(sd);
    } catch (const Error& e) {
      EMBER_FAIL(op, path, ": learner.grad_scaler: ", e.what());
    }
  }
  // Every value is checked before it is used (ember/checked.h): the error names the field.
  const int64_t epochs = st.epoch;
  auto field = [&](const std::string& name) { return FileField{op, path, name}; };
  // Checkpoints before "epoch_base" counted epochs from 0 (best_epoch -1: none); they are read
  // into today's numbering, from 1 (best_epoch 0: none).
  int64_t base = 0;
  if (learner.contains("epoch_base")) {
    const nlohmann::json& b = learner["epoch_base"];
    if (!b.is_number_integer() || b.get<int64_t>() != 1)
      EMBER_FAIL(op, path, ": field 'learner.epoch_base' = ", b.dump(),
                 " is not 1 (a checkpoint of a newer Ember?)");
    base = 1;
  }
  const int64_t best_epoch = st.best_epoch + (1 - base);
  if (best_epoch < 0 || best_epoch > epochs)
    EMBER_FAIL(op, path, ": field 'best_epoch' = ", st.best_epoch, " is not in [", base - 1, ", ",
               epochs + base - 1, "] (", epochs, epochs == 1 ? " epoch" : " epochs",
               " completed, numbered from ", base, ")");
  std::vector<EpochSummary> history;
  double es_best = kNaN;
  bool es_has_best = false;
  int64_t es_bad_epochs = 0;
  std::vector<std::string> kept;
  std::string run_id;
  try {
    const auto& hist = learner.at("history");
    if (!hist.is_array() || int64_t(hist.size()) != epochs)
      EMBER_FAIL(op, path, ": field 'learner.history' holds ",
                 hist.is_array() ? std::to_string(hist.size()) : hist.type_name(),
                 " entries, not one per completed epoch (", epochs, ")");
    for (const auto& e : hist) {
      const std::string at = "learner.history[" + std::to_string(history.size()) + "]";
      EpochSummary s;
      const int64_t want = int64_t(history.size()) + base;
      s.epoch = json_int(field(at + ".epoch"), e.at("epoch"), want, want) + (1 - base);
      s.seconds = from_json(e.at("seconds"));
      if (!std::isnan(s.seconds)) checked_double(field(at + ".seconds"), s.seconds, 0.0);
      for (const auto& [k, v] : e.at("metrics").items()) s.metrics[k] = from_json(v);
      history.push_back(std::move(s));
    }
    es_best = from_json(learner.at("es_best"));
    es_has_best = learner.at("es_has_best").get<bool>();
    es_bad_epochs =
        json_int(field("learner.es_bad_epochs"), learner.at("es_bad_epochs"), 0, epochs);
    run_id = learner.value("run_id", "");
    // Bare names of this run's epoch checkpoints only; a path or another file is never
    // deleted (a copied run folder deleted the original's checkpoints).
    for (const auto& k : learner.at("kept")) {
      const std::string name = k.is_string() ? k.get<std::string>() : k.dump();
      const int64_t e = epoch_of_checkpoint_name(name);
      if (e < 1 || e > epochs || std::find(kept.begin(), kept.end(), name) != kept.end()) {
        std::cerr << "warning: [" << op << "] " << path << ": ignoring \"" << name
                  << "\" in the list of kept checkpoints (not a name epoch-NNNN.safetensors "
                     "of an epoch completed); it will not be deleted\n";
        continue;
      }
      kept.push_back(name);
    }
  } catch (const nlohmann::json::exception& e) {
    EMBER_FAIL(op, path, ": bad learner state (", e.what(), ")");
  }
  record::CheckpointTargets t;
  t.model = model_.get();
  t.optimizer = optimizer_.get();
  t.scheduler = scheduler_.get();
  t.plateau = plateau_.get();
  (void)record::load_checkpoint(path, t, /*restore_rng=*/true);
  resumed_user_json_ = st.user_json;
  scaler_ = scaler;
  history_ = std::move(history);
  es_best_ = es_best;
  es_has_best_ = es_has_best;
  es_bad_epochs_ = es_bad_epochs;
  kept_ = std::move(kept);
  written_.clear();
  if (run_id.size() == 16 && run_id.find_first_not_of("0123456789abcdef") == std::string::npos)
    run_id_ = run_id;  // the same run goes on; without one its old files are never deleted
  epoch_ = st.epoch;
  step_ = st.step;
  resume_batch_ = st.batch;
  resume_seed_ = st.loader_seed;
  best_ = st.best_metric;
  best_epoch_ = best_epoch;
  if (ddp_) {
    // Every rank must continue from the same point: the same checkpoint (rank 0's output_dir).
    const Tensor at =
        from_vector(std::vector<int64_t>{step_, -step_, st.batch, -st.batch}, {4}, Device::cpu());
    dist::all_reduce(at, dist::ReduceOp::max);
    const std::vector<int64_t> v = at.to_vector<int64_t>();
    if (v[0] != -v[1] || v[2] != -v[3])
      EMBER_FAIL(op, path, ": the ranks resumed from different checkpoints (optimizer steps ",
                 -v[1], " to ", v[0],
                 "); every rank must see rank 0's output folder (a shared one between machines)");
  }
}

}  // namespace ember::train
