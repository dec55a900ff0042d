// Epoch history as CSV, JSON and an HTML page with inline SVG charts.
#include "ember/train/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "train/report_internal.h"

namespace ember::train {

namespace {
using detail::html_escape;
std::string esc(const std::string& s) { return html_escape(s); }

std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
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

// A value as the report's tables show it: four decimals for losses and fractions, the learning
// rate in four significant digits, a throughput as an integer.
std::string shown(const std::string& name, double v) {
  char buf[48];
  if (!std::isfinite(v))
    std::snprintf(buf, sizeof buf, "%s", std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
  else if (name == "lr")
    std::snprintf(buf, sizeof buf, "%.4g", v);
  else if (name == "samples_per_sec" || std::fabs(v) >= 1e5)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

// Which way a metric improves, by its name: -1 smaller (losses), +1 larger (accuracies,
// precision, recall, F1), 0 neither (lr, throughput).
int direction(const std::string& name) {
  if (name.find("loss") != std::string::npos) return -1;
  for (const char* k : {"accuracy", "precision", "recall", "f1"})
    if (name.find(k) != std::string::npos) return 1;
  return 0;
}

// A column heading that may break after its underscores ("valid_top_k_accuracy").
std::string breakable(const std::string& name) {
  std::string o;
  for (char c : name) o += c == '_' ? std::string("_<wbr>") : esc(std::string(1, c));
  return o;
}

// Metric names in reading order: losses, accuracies, the other scores, then the rest.
std::vector<std::string> ordered(const std::set<std::string>& names) {
  std::vector<std::string> out;
  for (const char* m : {"loss", "accuracy", "top_k_accuracy", "f1", "precision", "recall"})
    for (const char* p : {"train_", "valid_"})
      if (names.count(std::string(p) + m)) out.push_back(std::string(p) + m);
  for (const auto& n : names)
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  return out;
}

const char* const kStyle =
    "body{font-family:sans-serif;margin:16px 20px;color:#222}\n"
    "h1{font-size:22px;margin:0 0 12px}h2{font-size:17px;margin:20px 0 8px}\n"
    "table{border-collapse:collapse;font-size:13px}\n"
    "th,td{border:1px solid #ccc;padding:3px 7px}th{background:#f3f3f3}\n"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}\n"
    ".top{display:flex;flex-wrap:wrap;gap:28px;align-items:flex-start}\n"
    ".settings th{text-align:left}\n"
    ".charts{display:flex;flex-wrap:wrap;gap:12px}\n"
    ".scroll{overflow-x:auto;max-width:100%}\n"
    ".epochs th{font-weight:normal;font-size:12px;vertical-align:bottom;max-width:90px}\n";
}  // namespace

std::string history_csv(const std::vector<EpochSummary>& h) {
  const std::set<std::string> names = metric_names(h);
  std::ostringstream o;
  o << "epoch";
  for (const auto& n : names) o << ',' << n;
  o << ",seconds\n";
  for (const auto& e : h) {
    o << e.epoch;
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
    arr.push_back({{"epoch", e.epoch}, {"seconds", e.seconds}, {"metrics", m}});
  }
  return arr.dump(2) + "\n";
}

std::string history_html(const std::vector<EpochSummary>& h, const std::string& title,
                         const ReportInfo& info) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" << esc(title)
    << "</title>\n<style>\n"
    << kStyle << "</style></head>\n<body>\n<h1>" << esc(title) << "</h1>\n<div class=\"top\">\n";
  // The run's settings.
  auto settings = info.settings;
  bool has_version = false;
  for (const auto& [k, v] : settings) has_version |= k == "Ember";
  if (!has_version) settings.emplace_back("Ember", detail::ember_version());
  o << "<table class=\"settings\">\n";
  for (const auto& [k, v] : settings)
    o << "<tr><th>" << esc(k) << "</th><td>" << esc(v) << "</td></tr>\n";
  o << "<tr><th>epochs</th><td>" << h.size() << "</td></tr>\n</table>\n";

  // Each metric's last and best value.
  const std::set<std::string> names = metric_names(h);
  const std::vector<std::string> order = ordered(names);
  o << "<table class=\"summary\">\n<tr><th>metric</th><th>last</th><th>best</th><th>best "
       "epoch</th></tr>\n";
  for (const auto& n : order) {
    const int dir = direction(n);
    double best = NAN;
    int64_t best_epoch = -1;
    for (const auto& e : h) {
      auto it = e.metrics.find(n);
      if (it == e.metrics.end() || !std::isfinite(it->second) || dir == 0) continue;
      if (best_epoch < 0 || (dir < 0 ? it->second < best : it->second > best)) {
        best = it->second;
        best_epoch = e.epoch;
      }
    }
    std::string last;
    if (!h.empty())
      if (auto it = h.back().metrics.find(n); it != h.back().metrics.end())
        last = shown(n, it->second);
    o << "<tr><th>" << esc(n) << "</th><td class=\"n\">" << last << "</td><td class=\"n\">"
      << (best_epoch < 0 ? "" : shown(n, best)) << "</td><td class=\"n\">"
      << (best_epoch < 0 ? "" : std::to_string(best_epoch)) << "</td></tr>\n";
  }
  o << "</table>\n";
  if (!info.monitor.empty()) {
    // The epoch the best checkpoint holds, by the Learner's rule (first strict improvement).
    double best = NAN;
    int64_t best_epoch = -1;
    for (const auto& e : h) {
      auto it = e.metrics.find(info.monitor);
      if (it == e.metrics.end() || !std::isfinite(it->second)) continue;
      if (best_epoch < 0 ||
          (info.monitor_mode == Mode::min ? it->second < best : it->second > best)) {
        best = it->second;
        best_epoch = e.epoch;
      }
    }
    o << "<p class=\"best\">best checkpoint: "
      << (best_epoch < 0 ? std::string("none yet (") + esc(info.monitor) + " not recorded)"
                         : "epoch " + std::to_string(best_epoch) + ", " + esc(info.monitor) + " " +
                               shown(info.monitor, best))
      << "</p>\n";
  }
  o << "</div>\n";

  // The curves: each chart's series share a scale, so top-k accuracy (near 1) has its own.
  o << "<div class=\"charts\">\n";
  o << detail::svg_chart(h, {"train_loss", "valid_loss"}, "loss");
  const std::vector<std::vector<std::string>> more = {
      {"train_accuracy", "valid_accuracy", "train_f1", "valid_f1"},
      {"train_top_k_accuracy", "valid_top_k_accuracy"}};
  const char* titles[] = {"accuracy and F1", "top-k accuracy"};
  for (size_t c = 0; c < more.size(); ++c) {
    bool any = false;
    for (const auto& s : more[c]) any |= names.count(s) > 0;
    if (any) o << detail::svg_chart(h, more[c], titles[c]);
  }
  o << "</div>\n";

  // The numbers, as a table.
  o << "<h2>Metrics per epoch</h2>\n<div class=\"scroll\"><table class=\"epochs\">\n"
       "<tr><th>epoch</th>";
  for (const auto& n : order) o << "<th>" << breakable(n) << "</th>";
  o << "<th>seconds</th></tr>\n";
  for (const auto& e : h) {
    o << "<tr><td class=\"n\">" << e.epoch << "</td>";
    for (const auto& n : order) {
      auto it = e.metrics.find(n);
      o << "<td class=\"n\">" << (it == e.metrics.end() ? "" : shown(n, it->second)) << "</td>";
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", e.seconds);
    o << "<td class=\"n\">" << buf << "</td></tr>\n";
  }
  o << "</table></div>\n</body></html>\n";
  return o.str();
}

}  // namespace ember::train
