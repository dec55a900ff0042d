// Training reports and logs: CSV, JSON and a self-contained HTML page with inline SVG curves.
#pragma once
#include <string>
#include <vector>

#include "ember/train/learner.h"

namespace ember::train {

/// One row per epoch: "epoch,<metric>,...,seconds" with the union of metric names (sorted);
/// a metric an epoch lacks is an empty cell. Numbers use 17 significant digits.
std::string history_csv(const std::vector<EpochSummary>& history);
/// [{"epoch": 0, "seconds": 1.2, "metrics": {"train_loss": 0.5, ...}}, ...]; NaN/inf as null.
std::string history_json(const std::vector<EpochSummary>& history);
/// A self-contained HTML page (no scripts, no external files) with one inline SVG chart for the
/// losses (train_loss, valid_loss) and one for the accuracies, per epoch, with axes and legend.
std::string history_html(const std::vector<EpochSummary>& history, const std::string& title);

}  // namespace ember::train
