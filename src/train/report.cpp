// Epoch history as CSV, JSON and an HTML page with inline SVG charts.
#include "ember/train/report.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace ember::train {

namespace {
std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}
std::string esc(const std::string& s) {
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
// The metrics' names, less "epoch" (the Learner records it as a metric for monitoring; the
// reports write it once, as an integer, from EpochSummary::epoch).
std::set<std::string> metric_names(const std::vector<EpochSummary>& h) {
  std::set<std::string> names;
  for (const auto& e : h)
    for (const auto& [k, v] : e.metrics)
      if (k != "epoch") names.insert(k);
  return names;
}

// One line chart: x = epoch (1-based), one polyline + markers per series.
std::string chart(const std::vector<EpochSummary>& h, const std::vector<std::string>& series,
                  const std::string& title) {
  constexpr double W = 560, H = 300, L = 60, R = 150, T = 30, B = 40;
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
  o << "<text x=\"" << W / 2 << "\" y=\"18\" text-anchor=\"middle\" font-size=\"14\">" << esc(title)
    << "</text>\n";
  o << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << W - L - R << "\" height=\""
    << H - T - B << "\" fill=\"none\" stroke=\"#888\"/>\n";
  if (present.empty() || h.empty()) {
    o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H / 2
      << "\" text-anchor=\"middle\">no data</text>\n</svg>\n";
    return o.str();
  }
  if (hi == lo) {
    hi += 0.5;
    lo -= 0.5;
  }
  const int64_t n = int64_t(h.size());
  auto px = [&](double epoch) { return L + (n == 1 ? 0.5 : epoch / double(n - 1)) * (W - L - R); };
  auto py = [&](double v) { return T + (hi - v) / (hi - lo) * (H - T - B); };
  for (int i = 0; i <= 4; ++i) {  // y ticks
    const double v = lo + (hi - lo) * i / 4;
    o << "<line x1=\"" << L - 4 << "\" x2=\"" << L << "\" y1=\"" << py(v) << "\" y2=\"" << py(v)
      << "\" stroke=\"#888\"/><text x=\"" << L - 6 << "\" y=\"" << py(v) + 4
      << "\" text-anchor=\"end\">" << esc(num(std::round(v * 1e4) / 1e4)) << "</text>\n";
  }
  const int64_t step = std::max<int64_t>(1, n / 10);
  for (int64_t i = 0; i < n; i += step)  // x ticks: epochs
    o << "<text x=\"" << px(double(i)) << "\" y=\"" << H - B + 16 << "\" text-anchor=\"middle\">"
      << h[size_t(i)].epoch + 1 << "</text>\n";
  o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 6
    << "\" text-anchor=\"middle\">epoch</text>\n";
  for (size_t s = 0; s < present.size(); ++s) {
    const char* color = colors[s % 6];
    std::ostringstream pts;
    for (int64_t i = 0; i < n; ++i) {
      auto it = h[size_t(i)].metrics.find(present[s]);
      if (it == h[size_t(i)].metrics.end() || !std::isfinite(it->second)) continue;
      pts << px(double(i)) << ',' << py(it->second) << ' ';
      o << "<circle cx=\"" << px(double(i)) << "\" cy=\"" << py(it->second)
        << "\" r=\"2.5\" fill=\"" << color << "\"/>\n";
    }
    o << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\" points=\""
      << pts.str() << "\"/>\n";
    const double ly = T + 16 * double(s) + 8;
    o << "<line x1=\"" << W - R + 10 << "\" x2=\"" << W - R + 30 << "\" y1=\"" << ly << "\" y2=\""
      << ly << "\" stroke=\"" << color << "\" stroke-width=\"2\"/><text x=\"" << W - R + 34
      << "\" y=\"" << ly + 4 << "\">" << esc(present[s]) << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}
}  // namespace

std::string history_csv(const std::vector<EpochSummary>& h) {
  const std::set<std::string> names = metric_names(h);
  std::ostringstream o;
  o << "epoch";
  for (const auto& n : names) o << ',' << n;
  o << ",seconds\n";
  for (const auto& e : h) {
    o << e.epoch + 1;
    for (const auto& n : names) {
      o << ',';
      auto it = e.metrics.find(n);
      if (it != e.metrics.end()) o << num(it->second);
    }
    o << ',' << num(e.seconds) << '\n';
  }
  return o.str();
}

std::string history_json(const std::vector<EpochSummary>& h) {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const auto& e : h) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : e.metrics) {
      if (std::isfinite(v))
        m[k] = v;
      else
        m[k] = nullptr;
    }
    arr.push_back({{"epoch", e.epoch + 1}, {"seconds", e.seconds}, {"metrics", m}});
  }
  return arr.dump(2) + "\n";
}

std::string history_html(const std::vector<EpochSummary>& h, const std::string& title) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" << esc(title)
    << "</title></head>\n<body style=\"font-family:sans-serif\">\n<h1>" << esc(title) << "</h1>\n";
  o << chart(h, {"train_loss", "valid_loss"}, "loss");
  o << chart(h, {"train_accuracy", "valid_accuracy", "valid_top_k_accuracy", "valid_f1"},
             "accuracy");
  // The numbers, as a table.
  const std::set<std::string> names = metric_names(h);
  o << "<table border=\"1\" cellspacing=\"0\" cellpadding=\"3\">\n<tr><th>epoch</th>";
  for (const auto& n : names) o << "<th>" << esc(n) << "</th>";
  o << "</tr>\n";
  for (const auto& e : h) {
    o << "<tr><td>" << e.epoch + 1 << "</td>";
    for (const auto& n : names) {
      auto it = e.metrics.find(n);
      char buf[32] = "";
      if (it != e.metrics.end()) std::snprintf(buf, sizeof buf, "%.6g", it->second);
      o << "<td>" << buf << "</td>";
    }
    o << "</tr>\n";
  }
  o << "</table>\n</body></html>\n";
  return o.str();
}

}  // namespace ember::train
