// Training reports and logs: CSV, JSON and a self-contained HTML page with inline SVG curves.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "ember/train/learner.h"

namespace ember::train {

/// One row per epoch (EpochSummary::epoch, from 1): "epoch,<metric>,...,seconds" with the union of
/// metric names (sorted); a metric an epoch lacks is an empty cell. Numbers use 17 significant
/// digits.
std::string history_csv(const std::vector<EpochSummary>& history);
/// [{"epoch": 1, "seconds": 1.2, "metrics": {"train_loss": 0.5, ...}}, ...]; NaN/inf as null.
std::string history_json(const std::vector<EpochSummary>& history);
/// What the HTML report says about the run besides its history.
struct ReportInfo {
  /// Shown first, in this order, as a name / value table ({"model", "cnn"}, {"batch size",
  /// "64"}, ...). An "Ember" row with the library's version is added unless given.
  std::vector<std::pair<std::string, std::string>> settings;
  /// The metric that picks the best checkpoint ("" for none) and whether larger is better.
  std::string monitor;
  Mode monitor_mode = Mode::min;
};

/// A self-contained HTML page (no scripts, no external files): the settings, a table of each
/// metric's last and best value (best: the smallest of a loss, the largest of an accuracy,
/// precision, recall or F1) with the epoch it came from, inline SVG charts per epoch (losses;
/// accuracy and F1; top-k accuracy, each on a value axis with round 1-2-5 ticks that fits its
/// curves) and the metrics of every epoch as a table (scrolls sideways in a narrow window).
std::string history_html(const std::vector<EpochSummary>& history, const std::string& title,
                         const ReportInfo& info = {});

}  // namespace ember::train
