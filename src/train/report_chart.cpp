// The report's SVG line charts: a value axis with round 1-2-5 ticks sized to the data, epochs on
// the x axis, one polyline per series and a legend.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "train/report_internal.h"

#ifndef EMBER_VERSION
#define EMBER_VERSION "unknown"
#endif

namespace ember::train::detail {

const char* ember_version() { return EMBER_VERSION; }

std::string html_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else if (c == '"')
      o += "&quot;";
    else
      o += c;
  }
  return o;
}

double nice_step(double x) {
  if (!(x > 0) || !std::isfinite(x)) return 1;
  const double e = std::floor(std::log10(x));
  const double p = std::pow(10.0, e);
  const double f = x / p;  // in [1, 10)
  const double n = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
  return n * p;
}

namespace {

// Labels for ticks k * step: fixed decimals as many as step has ("0.05" -> 2), or, for
// magnitudes a fixed format would spell out in many digits (from 1e6, or all below 1e-3), the
// exponent form with the significant digits that tell neighbouring ticks apart.
std::vector<std::string> tick_labels(const std::vector<double>& ticks, double step) {
  double mag = step;
  for (double t : ticks) mag = std::max(mag, std::fabs(t));
  const int step_exp = int(std::floor(std::log10(step) + 1e-9));
  std::vector<std::string> out;
  char buf[64];
  for (double t : ticks) {
    if (mag >= 1e6 || mag < 1e-3) {
      const int digits = std::clamp(int(std::floor(std::log10(mag) + 1e-9)) - step_exp, 0, 15);
      std::snprintf(buf, sizeof buf, "%.*e", digits, t);
    } else {
      std::snprintf(buf, sizeof buf, "%.*f", std::max(0, -step_exp), t);
    }
    out.push_back(buf);
  }
  return out;
}

}  // namespace

Axis nice_axis(double lo, double hi, int intervals) {
  Axis a;
  if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi || intervals < 1) {
    lo = 0;
    hi = 1;
    intervals = std::max(intervals, 1);
  }
  if (hi == lo) {  // one value: a range of 10% of it (0.1 around 0) with the value in the middle
    const double pad = lo == 0 ? 0.05 : std::fabs(lo) * 0.05;
    lo -= pad;
    hi += pad;
  }
  a.step = nice_step((hi - lo) / intervals);
  // Ticks are integer multiples of step (no accumulated rounding); the slack keeps a value that
  // is a multiple of step up to rounding from adding an interval.
  const double k0 = std::floor(lo / a.step + 1e-9), k1 = std::ceil(hi / a.step - 1e-9);
  a.lo = k0 * a.step;
  a.hi = k1 * a.step;
  for (double k = k0; k <= k1; ++k) {
    const double t = k * a.step;
    a.ticks.push_back(k == 0 ? 0.0 : t);
  }
  a.labels = tick_labels(a.ticks, a.step);
  return a;
}

std::string svg_chart(const std::vector<EpochSummary>& h, const std::vector<std::string>& series,
                      const std::string& title) {
  constexpr double W = 560, H = 300, L = 64, R = 170, T = 30, B = 40;
  const char* colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"};
  double lo = INFINITY, hi = -INFINITY;
  std::vector<std::string> present;
  for (const auto& s : series) {
    bool any = false;
    for (const auto& e : h) {
      auto it = e.metrics.find(s);
      if (it == e.metrics.end() || !std::isfinite(it->second)) continue;
      lo = std::min(lo, it->second);
      hi = std::max(hi, it->second);
      any = true;
    }
    if (any) present.push_back(s);
  }
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" viewBox=\"0 0 " << W << ' ' << H << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"18\" text-anchor=\"middle\" font-size=\"14\">"
    << html_escape(title) << "</text>\n";
  if (present.empty() || h.empty()) {
    o << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << W - L - R << "\" height=\""
      << H - T - B << "\" fill=\"none\" stroke=\"#888\"/>\n";
    o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H / 2
      << "\" text-anchor=\"middle\">no data</text>\n</svg>\n";
    return o.str();
  }
  const Axis ax = nice_axis(lo, hi);
  const int64_t n = int64_t(h.size());
  auto px = [&](int64_t i) { return L + (n == 1 ? 0.5 : double(i) / double(n - 1)) * (W - L - R); };
  auto py = [&](double v) { return T + (ax.hi - v) / (ax.hi - ax.lo) * (H - T - B); };
  for (size_t i = 0; i < ax.ticks.size(); ++i) {  // y ticks and grid lines
    const double y = py(ax.ticks[i]);
    o << "<line x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << y << "\" y2=\"" << y
      << "\" stroke=\"#e4e4e4\"/><line x1=\"" << L - 4 << "\" x2=\"" << L << "\" y1=\"" << y
      << "\" y2=\"" << y << "\" stroke=\"#888\"/><text class=\"ytick\" x=\"" << L - 6 << "\" y=\""
      << y + 4 << "\" text-anchor=\"end\">" << ax.labels[i] << "</text>\n";
  }
  o << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << W - L - R << "\" height=\""
    << H - T - B << "\" fill=\"none\" stroke=\"#888\"/>\n";
  // x ticks: epochs, every 1-2-5 step that leaves room for about ten labels.
  const int64_t step = std::max<int64_t>(1, int64_t(nice_step(double(n) / 10.0) + 0.5));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t epoch = h[size_t(i)].epoch;
    if (i != 0 && epoch % step != 0) continue;
    o << "<line x1=\"" << px(i) << "\" x2=\"" << px(i) << "\" y1=\"" << H - B << "\" y2=\""
      << H - B + 4 << "\" stroke=\"#888\"/><text class=\"xtick\" x=\"" << px(i) << "\" y=\""
      << H - B + 16 << "\" text-anchor=\"middle\">" << epoch << "</text>\n";
  }
  o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 6
    << "\" text-anchor=\"middle\">epoch</text>\n";
  for (size_t s = 0; s < present.size(); ++s) {
    const char* color = colors[s % 6];
    // One polyline per run of finite values: a NaN epoch is a gap, not a line across it.
    std::ostringstream pts;
    auto flush = [&] {
      if (!pts.str().empty())
        o << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\" points=\""
          << pts.str() << "\"/>\n";
      pts.str("");
    };
    for (int64_t i = 0; i < n; ++i) {
      auto it = h[size_t(i)].metrics.find(present[s]);
      if (it == h[size_t(i)].metrics.end() || !std::isfinite(it->second)) {
        flush();
        continue;
      }
      pts << px(i) << ',' << py(it->second) << ' ';
      o << "<circle cx=\"" << px(i) << "\" cy=\"" << py(it->second) << "\" r=\"2.5\" fill=\""
        << color << "\"/>\n";
    }
    flush();
    const double ly = T + 16 * double(s) + 8;
    o << "<line x1=\"" << W - R + 10 << "\" x2=\"" << W - R + 30 << "\" y1=\"" << ly << "\" y2=\""
      << ly << "\" stroke=\"" << color << "\" stroke-width=\"2\"/><text x=\"" << W - R + 34
      << "\" y=\"" << ly + 4 << "\">" << html_escape(present[s]) << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace ember::train::detail
