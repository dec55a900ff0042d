// Autotuning, one mechanism for every backend (docs/ARCHITECTURE.md, "The autotuner"). An op
// key (op, dtypes, shape class; one Autotuner per device) maps to the op's candidate variants.
// The first use of a key times the candidates (a few runs each, the median, with the device
// synced around each run) and keeps the fastest; the choice persists in a JSON cache file per
// device, written atomically, that records a format version and the device's identity (a file
// for another device or version is "foreign": ignored with one warning on stderr, then
// rewritten). Internal; the user-facing part is autotune_stats / clear_autotune_cache in
// ember/device.h.
//
// Environment (read when an Autotuner is made with default Options):
//  - EMBER_AUTOTUNE=off|minimal|balanced|full: the effort (unset: balanced). off = each op's
//    default variant (today's heuristics), no timing, no file. minimal times the candidates
//    marked minimal with 2 runs each, balanced those marked balanced too with 3 runs, full every
//    candidate with 5 runs.
//  - EMBER_AUTOTUNE_CACHE: the cache folder (default $XDG_CACHE_HOME/ember/autotune, else
//    $HOME/.cache/ember/autotune; neither set: no file).
//  - EMBER_CHECK=1: while tuning, every candidate's result is compared with the default's; a
//    difference beyond the op's tolerance is an ember::Error naming the key, the variant, the
//    shapes and the first differing element.
// Portable core code: the standard library only (and nlohmann_json in the .cpp).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace ember {
class Device;
}

namespace ember::autotune {

enum class Effort : uint8_t { off, minimal, balanced, full };

/// EMBER_AUTOTUNE parsed: off|minimal|balanced|full in any case, 0/false/no for off, 1/true/yes
/// for balanced; unset or empty: balanced; anything else: balanced, with a warning on stderr
/// (core/env.h).
Effort effort_from_env();
/// "off", "minimal", "balanced", "full".
const char* effort_name(Effort e);
/// The cache folder from EMBER_AUTOTUNE_CACHE (0/off: none) / XDG_CACHE_HOME / HOME ("" when
/// none is set).
std::string cache_dir_from_env();
/// A power of two >= v (v <= 1: 1): the shape class of a size.
int64_t anchor(int64_t v);

/// One variant of an op. The first candidate of a list is the default (today's heuristic): it
/// always runs, and it is what effort off uses.
struct Candidate {
  std::string name;
  Effort min_effort = Effort::minimal;  // the lowest effort that times this candidate
};

/// What tuning needs to run the op: `run(i)` runs it with candidate i, writing the op's outputs
/// (never accumulating into them: tuning runs each candidate several times).
struct Bench {
  std::function<void(size_t)> run;
  /// Waits for the device (GPU backends); called before and after each timed run.
  std::function<void()> sync;
  /// Untimed runs of each candidate before timing (GPU: compiles the kernel).
  int warmup = 0;
  /// Check mode: the op's outputs as values, read after a run; compared with the default's.
  std::function<std::vector<double>()> result;
  /// |variant - default| <= atol + rtol * |default| + max_rtol * max |default| (NaN equals NaN;
  /// all 0: bit for bit).
  double rtol = 0, atol = 0, max_rtol = 0;
  /// dtypes and shapes for check-mode messages, e.g. "f32 [1, 64, 32] @ [1, 32, 48]".
  std::function<std::string()> detail;
};

struct Options {
  Effort effort = Effort::balanced;
  std::string dir;     // cache folder; empty: no file
  bool check = false;  // compare every candidate with the default while tuning
  /// Options from the environment (EMBER_AUTOTUNE, EMBER_AUTOTUNE_CACHE, EMBER_CHECK).
  static Options from_env();
};

/// Counters since the Autotuner was made (or clear()).
struct TunerStats {
  int64_t lookups = 0;     // pick() calls that could tune (more than one candidate)
  int64_t tuned = 0;       // keys timed
  int64_t timed_runs = 0;  // candidate runs made while tuning (warm-up included)
  int64_t loaded = 0;      // entries read from the cache file
  int64_t entries = 0;     // choices held now
  std::string file;        // the cache file ("" when none)
};

class Autotuner {
 public:
  /// `stem`: the cache file's name without ".json" ("cpu", "vulkan-0"); `identity`: the device's
  /// identity recorded in the file (backend, device name and driver, CPU features).
  Autotuner(std::string stem, std::string identity, Options options = Options::from_env());

  /// The index of the candidate to run for (op, dtypes, shape): a forced variant, else the
  /// remembered choice (this process or the cache file), else candidate 0 when effort is off or
  /// only one candidate is eligible, else the fastest after timing them (bench.run) - which is
  /// then remembered and written to the file. The caller runs the op with the returned index
  /// afterwards (tuning leaves the outputs of the last timed candidate). Thread-safe; tuning
  /// runs one key at a time. Check mode: throws ember::Error on a mismatch.
  size_t pick(const std::string& op, const std::string& dtypes, const std::string& shape,
              const std::vector<Candidate>& candidates, const Bench& bench);

  /// Forces variant `name` for every key of `op` (no timing, nothing remembered); "" unforces.
  /// A name that is no candidate's forces the first candidate named `name` + "/..." (a family:
  /// "onednn" forces "onednn/item-per-thread" on a batch); with neither, it is ignored there.
  /// For tests and A/B runs.
  void force(const std::string& op, const std::string& name);
  /// Forgets every choice and the counters, and deletes the cache file.
  void clear();
  /// Re-reads the options (effort, folder, check) and forgets what was loaded (tests).
  void set_options(const Options& o);
  Options options() const;
  TunerStats stats() const;
  std::string file() const;
  const std::string& identity() const { return identity_; }

 private:
  struct Entry {
    std::string variant;
    Effort effort = Effort::balanced;
    std::vector<double> ms;  // median per timed candidate, in candidate order
    std::vector<std::string> names;
  };
  std::string read_file(const std::string& path, std::map<std::string, Entry>& got,
                        bool& found) const;
  void load_locked();
  void save_locked();
  size_t tune(const std::string& key, const std::vector<Candidate>& cands,
              const std::vector<size_t>& eligible, const Bench& bench, Entry& e);

  const std::string stem_, identity_;
  mutable std::mutex mu_;         // entries_, forced_, options_, stats_
  std::recursive_mutex tune_mu_;  // one key tuned at a time
  Options options_;
  bool loaded_ = false;
  std::map<std::string, Entry> entries_;
  std::map<std::string, std::string> forced_;
  TunerStats stats_;
  bool save_warned_ = false;  // an unwritable cache file is reported once
};

/// The device's Autotuner (made on first use from Backend::autotune_identity()); one per device
/// for the whole process. Throws ember::Error for devices that are not built/present.
Autotuner& for_device(const Device& d);
/// The cache file's stem for a device: its name with ':' as '-' ("cpu", "vulkan-0").
std::string stem_of(const Device& d);

}  // namespace ember::autotune
