// Pieces of the HTML report (report.cpp) that the tests reach directly: the value axis of a chart
// (round 1-2-5 ticks) and the SVG line chart (report_chart.cpp).
#pragma once
#include <string>
#include <vector>

#include "ember/train/learner.h"

namespace ember::train::detail {

/// A value axis from lo to hi with ticks every `step` (1, 2 or 5 times a power of ten), lo and hi
/// being multiples of step, and tick labels with as many decimals as step needs ("0.85", "2",
/// "1.5e+07" for very large or small magnitudes).
struct Axis {
  double lo = 0, hi = 1, step = 0.2;
  std::vector<double> ticks;
  std::vector<std::string> labels;
};

/// The axis that holds [lo, hi] (the range of the data) with about `intervals` intervals
/// (Heckbert's "nice numbers", Graphics Gems 1990): step = the 1-2-5 number nearest
/// (hi - lo) / intervals, ends rounded out to multiples of step. A single value (lo == hi) gets
/// a small range around it. Non-finite or reversed input gives the axis [0, 1].
Axis nice_axis(double lo, double hi, int intervals = 5);

/// The 1-2-5 number (1, 2 or 5 times a power of ten) nearest x > 0, by Heckbert's thresholds.
double nice_step(double x);

/// One SVG line chart of `series` over the epochs of `history` (x: epoch, y: the series' values
/// on nice_axis of their finite values), with a legend; "no data" when none of the series has a
/// finite value. Tick labels carry class "ytick" / "xtick".
std::string svg_chart(const std::vector<EpochSummary>& history,
                      const std::vector<std::string>& series, const std::string& title);

/// s with <, >, & and " written as HTML entities.
std::string html_escape(const std::string& s);

/// The Ember version the library was built as (CMake's PROJECT_VERSION, e.g. "0.1.0").
const char* ember_version();

}  // namespace ember::train::detail
