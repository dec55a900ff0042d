// The training report (report.html): the value axes' round 1-2-5 ticks, the page's settings and
// best / last values, and the page as a browser shows it. ReportBrowserTest renders a report of a
// synthetic history with headless Chromium (Debian's `chromium`, which scripts/install-deps.sh
// installs): once to a PNG and once with a probe script that measures the layout. Without
// chromium the test fails, saying so, unless EMBER_NO_BROWSER is set (then it is skipped).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "ember/train/report.h"
#include "test_util.h"
#include "train/report_internal.h"

namespace train = ember::train;
using train::detail::Axis;
using train::detail::nice_axis;
using train::detail::nice_step;

namespace {

// True when step is 1, 2 or 5 times a power of ten (up to rounding).
bool is_125(double step) {
  const double f = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
  return std::fabs(f - 1) < 1e-9 || std::fabs(f - 2) < 1e-9 || std::fabs(f - 5) < 1e-9;
}

// Twelve epochs of a run whose curves have very different ranges: losses from 2.3 down, accuracy
// around 0.8 to 0.88, top-k accuracy between 0.9981 and 0.9999 (its own chart), and values such
// as 0.1 + 0.2 whose shortest decimal form is long.
std::vector<train::EpochSummary> synthetic_history() {
  std::vector<train::EpochSummary> h(12);
  for (int e = 0; e < 12; ++e) {
    auto& m = h[size_t(e)].metrics;
    h[size_t(e)].epoch = e + 1;  // epochs count from 1
    h[size_t(e)].seconds = 4.25 + 0.01 * e;
    m["epoch"] = e + 1;
    m["train_loss"] = 2.3026 * std::exp(-0.35 * e) + 0.21;
    m["valid_loss"] = 2.1 * std::exp(-0.3 * e) + 0.1 + 0.2;
    m["train_accuracy"] = 0.8 + 0.0075 * e;
    m["valid_accuracy"] = e == 9 ? 0.885 : 0.79 + 0.0082 * std::min(e, 11);
    m["train_top_k_accuracy"] = 0.9981 + 0.00015 * e;
    m["valid_top_k_accuracy"] = 0.9983 + 0.00014 * e;
    m["valid_f1"] = 0.78 + 0.008 * e;
    m["valid_precision"] = 0.781 + 0.008 * e;
    m["valid_recall"] = 0.79 + 0.0082 * e;
    m["train_f1"] = 0.79 + 0.0074 * e;
    m["train_precision"] = 0.79 + 0.0075 * e;
    m["train_recall"] = 0.8 + 0.0075 * e;
    m["lr"] = 1e-3 * std::pow(0.9, e);
    m["samples_per_sec"] = 14123.4 + e;
  }
  return h;
}

train::ReportInfo synthetic_info() {
  train::ReportInfo info;
  info.settings = {{"dataset", "fashion-mnist"}, {"model", "mlp"},     {"device", "cpu"},
                   {"precision", "float32"},     {"batch size", "64"}, {"seed", "7"}};
  info.monitor = "valid_accuracy";
  info.monitor_mode = train::Mode::max;
  return info;
}

std::string shell_quote(const std::string& s) { return "'" + s + "'"; }

// Debian's chromium (or $EMBER_CHROMIUM), "" when there is none.
std::string find_chromium() {
  if (const char* e = std::getenv("EMBER_CHROMIUM"); e && *e) return e;
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (std::filesystem::exists(p)) return p;
  return "";
}

// Runs headless chromium on file `page` with `what` (--dump-dom or --screenshot=...); stdout to
// `out`. Returns the exit status; the browser's own messages go to `log`.
int run_chromium(const std::string& chromium, const std::string& profile, const std::string& what,
                 const std::string& page, const std::string& out, const std::string& log) {
  const std::string cmd = "timeout 120 " + shell_quote(chromium) +
                          " --headless=new --no-sandbox --no-first-run --disable-gpu"
                          " --disable-background-networking --disable-component-update"
                          " --disable-sync --hide-scrollbars --user-data-dir=" +
                          shell_quote(profile) + " --window-size=1200,1600 " + what + " " +
                          shell_quote("file://" + page) + " >" + shell_quote(out) + " 2>" +
                          shell_quote(log);
  const int st = std::system(cmd.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::string unescape_html(std::string s) {
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&amp;", "&"}}) {
    for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
      s.replace(p, from.size(), to);
  }
  return s;
}

// Measures the laid-out page and appends the figures, as JSON, in <pre id="probe">: the page's
// width against the window's, each chart's tick labels, and every SVG text that sticks out of
// its chart (a label cut at the edge).
const char* const kProbe = R"(<script>
window.addEventListener('load', () => {
  const r = {pageWidth: document.documentElement.scrollWidth, windowWidth: window.innerWidth,
             charts: [], clipped: []};
  for (const svg of document.querySelectorAll('svg')) {
    const w = svg.viewBox.baseVal.width, h = svg.viewBox.baseVal.height;
    const title = svg.querySelector('text').textContent;
    r.charts.push({title, yticks: [...svg.querySelectorAll('text.ytick')].map(t => t.textContent),
                   xticks: [...svg.querySelectorAll('text.xtick')].map(t => t.textContent)});
    for (const t of svg.querySelectorAll('text')) {
      const b = t.getBBox();
      if (b.x < 0 || b.y < 0 || b.x + b.width > w || b.y + b.height > h)
        r.clipped.push(title + ': ' + t.textContent);
    }
  }
  const pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(r);
  document.body.appendChild(pre);
});
</script>
)";

}  // namespace

TEST(ReportAxisTest, StepsAreOneTwoFiveTimesAPowerOfTen) {
  EXPECT_DOUBLE_EQ(nice_step(1), 1);
  EXPECT_DOUBLE_EQ(nice_step(1.4), 1);
  EXPECT_DOUBLE_EQ(nice_step(1.5), 2);
  EXPECT_DOUBLE_EQ(nice_step(2.9), 2);
  EXPECT_DOUBLE_EQ(nice_step(3), 5);
  EXPECT_DOUBLE_EQ(nice_step(6.9), 5);
  EXPECT_DOUBLE_EQ(nice_step(7), 10);
  EXPECT_DOUBLE_EQ(nice_step(0.18), 0.2);
  EXPECT_DOUBLE_EQ(nice_step(0.00036), 0.0005);
  EXPECT_DOUBLE_EQ(nice_step(4.2e7), 5e7);
  EXPECT_DOUBLE_EQ(nice_step(0), 1);  // not a step: the unit
  EXPECT_DOUBLE_EQ(nice_step(NAN), 1);
}

TEST(ReportAxisTest, AxesHoldTheDataWithRoundTicks) {
  struct Case {
    double lo, hi;
    double want_lo, want_hi, want_step;
    std::vector<std::string> labels;
  };
  const std::vector<Case> cases = {
      // Top-k accuracy near 1: the old labels were "0.99990000000000001" cut at the left edge.
      {0.9981, 0.9999, 0.998, 1.0, 0.0005, {"0.9980", "0.9985", "0.9990", "0.9995", "1.0000"}},
      {0.3127, 2.3026, 0, 2.5, 0.5, {"0.0", "0.5", "1.0", "1.5", "2.0", "2.5"}},
      {0.7912, 0.8812, 0.78, 0.9, 0.02, {"0.78", "0.80", "0.82", "0.84", "0.86", "0.88", "0.90"}},
      // One value: a small range around it.
      {0.7,
       0.7,
       0.66,
       0.74,
       0.01,
       {"0.66", "0.67", "0.68", "0.69", "0.70", "0.71", "0.72", "0.73", "0.74"}},
      // Zero is "0.00", never "-0.00".
      {0, 0, -0.06, 0.06, 0.02, {"-0.06", "-0.04", "-0.02", "0.00", "0.02", "0.04", "0.06"}},
      {-3.2, -1.1, -3.5, -1, 0.5, {"-3.5", "-3.0", "-2.5", "-2.0", "-1.5", "-1.0"}},
      {12, 87, 0, 100, 20, {"0", "20", "40", "60", "80", "100"}},
      // Magnitudes a fixed format would spell out in many digits: exponent form.
      {1e6, 5e7, 0, 5e7, 1e7, {"0e+00", "1e+07", "2e+07", "3e+07", "4e+07", "5e+07"}},
      {1e-6, 3e-6, 1e-6, 3e-6, 5e-7, {"1.0e-06", "1.5e-06", "2.0e-06", "2.5e-06", "3.0e-06"}},
      // Not a range: the unit axis.
      {NAN, 1, 0, 1, 0.2, {"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"}},
      {2, 1, 0, 1, 0.2, {"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"}},
  };
  for (const Case& c : cases) {
    const Axis a = nice_axis(c.lo, c.hi);
    SCOPED_TRACE(std::to_string(c.lo) + " .. " + std::to_string(c.hi));
    EXPECT_NEAR(a.lo, c.want_lo, 1e-12);
    EXPECT_NEAR(a.hi, c.want_hi, 1e-12);
    EXPECT_NEAR(a.step, c.want_step, 1e-15);
    EXPECT_EQ(a.labels, c.labels);
    ASSERT_EQ(a.ticks.size(), a.labels.size());
    EXPECT_TRUE(is_125(a.step)) << a.step;
    if (std::isfinite(c.lo) && c.lo <= c.hi) {
      EXPECT_LE(a.lo, c.lo);
      EXPECT_GE(a.hi, c.hi);
    }
  }
}

TEST(ReportAxisTest, TheDataFillsMostOfItsAxis) {
  // Over many ranges: ticks 1-2-5 apart, 4 to 12 of them, and the data at least 40% of the axis
  // (it was stretched from the data's minimum to maximum, with labels of 17 digits).
  for (double lo : {0.0, 0.0123, 0.5, 0.91, 0.9981, 3.7, 120.0, -2.0}) {
    for (double span : {1e-4, 0.0018, 0.03, 0.3, 1.7, 25.0, 900.0}) {
      const Axis a = nice_axis(lo, lo + span);
      SCOPED_TRACE(std::to_string(lo) + " + " + std::to_string(span));
      EXPECT_TRUE(is_125(a.step)) << a.step;
      EXPECT_GE(a.ticks.size(), 4u);
      EXPECT_LE(a.ticks.size(), 12u);
      EXPECT_GE(span / (a.hi - a.lo), 0.4);
      for (const std::string& l : a.labels) {
        EXPECT_LE(l.size(), 9u) << l;
        EXPECT_EQ(l.find("99999"), std::string::npos) << l;
        EXPECT_EQ(l.find("00001"), std::string::npos) << l;
      }
    }
  }
}

TEST(ReportTest, PageHasSettingsBestAndLastValuesAndOwnScaleForTopK) {
  const std::string html =
      train::history_html(synthetic_history(), "Ember training report", synthetic_info());
  for (const char* s :
       {"<tr><th>model</th><td>mlp</td></tr>", "<tr><th>precision</th><td>float32</td></tr>",
        "<tr><th>batch size</th><td>64</td></tr>", "<tr><th>seed</th><td>7</td></tr>",
        "<tr><th>device</th><td>cpu</td></tr>", "<tr><th>epochs</th><td>12</td></tr>"})
    EXPECT_NE(html.find(s), std::string::npos) << s;
  EXPECT_NE(html.find(std::string("<tr><th>Ember</th><td>") + train::detail::ember_version() +
                      "</td></tr>"),
            std::string::npos);
  // metric, last, best, best epoch: a loss's best is its minimum, an accuracy's its maximum.
  EXPECT_NE(html.find("<tr><th>valid_accuracy</th><td class=\"n\">0.8802</td><td "
                      "class=\"n\">0.8850</td><td class=\"n\">10</td></tr>"),
            std::string::npos);
  EXPECT_NE(html.find("<tr><th>train_loss</th><td class=\"n\">0.2590</td><td "
                      "class=\"n\">0.2590</td><td class=\"n\">12</td></tr>"),
            std::string::npos);
  EXPECT_NE(html.find("<tr><th>lr</th><td class=\"n\">0.0003138</td><td class=\"n\"></td>"),
            std::string::npos);
  EXPECT_NE(html.find("best checkpoint: epoch 10, valid_accuracy 0.8850"), std::string::npos);
  // Three charts; top-k accuracy is not on the accuracy chart's scale.
  EXPECT_NE(html.find(">loss</text>"), std::string::npos);
  EXPECT_NE(html.find(">accuracy and F1</text>"), std::string::npos);
  EXPECT_NE(html.find(">top-k accuracy</text>"), std::string::npos);
  const size_t acc = html.find(">accuracy and F1</text>"),
               topk = html.find(">top-k accuracy</text>");
  ASSERT_LT(acc, topk);
  EXPECT_EQ(html.substr(acc, topk - acc).find("top_k"), std::string::npos);
  EXPECT_NE(html.find(">0.9985</text>"), std::string::npos);
  // The per-epoch table scrolls inside its box; long headings may break after underscores.
  EXPECT_NE(html.find("<div class=\"scroll\"><table class=\"epochs\">"), std::string::npos);
  EXPECT_NE(html.find("<th>valid_<wbr>top_<wbr>k_<wbr>accuracy</th>"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);  // self-contained, no scripts
}

TEST(ReportTest, RegressionHistoryHasOnlyTheLossChart) {
  std::vector<train::EpochSummary> h(2);
  h[0].epoch = 1;
  h[0].metrics = {{"train_loss", 0.5}};
  h[1].epoch = 2;
  h[1].metrics = {{"train_loss", 0.25}};
  const std::string html = train::history_html(h, "r");
  EXPECT_NE(html.find(">loss</text>"), std::string::npos);
  EXPECT_EQ(html.find("accuracy"), std::string::npos);
  EXPECT_NE(html.find("<tr><th>Ember</th>"), std::string::npos);
  EXPECT_EQ(html.find("best checkpoint"), std::string::npos);  // no monitor given
}

TEST(ReportBrowserTest, ChromiumShowsRoundTicksSettingsAndAPageThatFits) {
  if (std::getenv("EMBER_NO_BROWSER"))
    GTEST_SKIP() << "EMBER_NO_BROWSER is set: the report is not rendered in a browser";
  const std::string chromium = find_chromium();
  ASSERT_FALSE(chromium.empty())
      << "chromium is not installed: scripts/install-deps.sh installs Debian's chromium for this "
         "test (or set EMBER_CHROMIUM to a Chromium binary; EMBER_NO_BROWSER=1 skips the test)";
  const ember::test::TempDir dir("report-browser");
  const std::vector<train::EpochSummary> h = synthetic_history();
  const std::string html = train::history_html(h, "Ember training report", synthetic_info());
  ember::test::write_bytes(dir / "report.html", html);
  std::string probe = html;
  probe.insert(probe.rfind("</body>"), kProbe);
  ember::test::write_bytes(dir / "probe.html", probe);

  // 1. The page as a PNG.
  int rc = run_chromium(chromium, dir / "profile", "--screenshot=" + (dir / "report.png"),
                        dir / "report.html", dir / "shot.out", dir / "shot.log");
  ASSERT_EQ(rc, 0) << ember::test::read_bytes(dir / "shot.log");
  const std::string png = ember::test::read_bytes(dir / "report.png");
  ASSERT_GT(png.size(), 20000u) << "a blank page is a few kB";
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));

  // 2. The laid-out DOM with the probe's measurements.
  rc = run_chromium(chromium, dir / "profile", "--dump-dom", dir / "probe.html", dir / "dom.html",
                    dir / "dom.log");
  ASSERT_EQ(rc, 0) << ember::test::read_bytes(dir / "dom.log");
  const std::string dom = ember::test::read_bytes(dir / "dom.html");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(dom, m, std::regex("<pre id=\"probe\">([^<]*)</pre>")))
      << "the probe did not run: " << dom.substr(0, 2000);
  const nlohmann::json r = nlohmann::json::parse(unescape_html(m[1].str()));

  // The page is no wider than the window: the metrics table scrolls within its box.
  EXPECT_LE(r["pageWidth"].get<int>(), r["windowWidth"].get<int>()) << r.dump();
  // No text sticks out of its chart (the old tick labels were cut at the left edge).
  EXPECT_TRUE(r["clipped"].empty()) << r["clipped"].dump();
  // Each chart's ticks are short round numbers 1-2-5 apart whose range the data fills.
  ASSERT_EQ(r["charts"].size(), 3u) << r.dump();
  const std::map<std::string, std::vector<std::string>> series = {
      {"loss", {"train_loss", "valid_loss"}},
      {"accuracy and F1", {"train_accuracy", "valid_accuracy", "train_f1", "valid_f1"}},
      {"top-k accuracy", {"train_top_k_accuracy", "valid_top_k_accuracy"}}};
  for (const auto& chart : r["charts"]) {
    const std::string title = chart["title"];
    SCOPED_TRACE(title);
    ASSERT_TRUE(series.count(title));
    std::vector<double> ticks;
    for (const auto& t : chart["yticks"]) {
      const std::string s = t;
      EXPECT_TRUE(std::regex_match(s, std::regex("-?[0-9]+(\\.[0-9]{1,4})?"))) << s;
      ticks.push_back(std::stod(s));
    }
    ASSERT_GE(ticks.size(), 4u);
    const double step = ticks[1] - ticks[0];
    EXPECT_TRUE(is_125(step)) << step;
    for (size_t i = 1; i < ticks.size(); ++i) EXPECT_NEAR(ticks[i] - ticks[i - 1], step, 1e-9);
    double lo = INFINITY, hi = -INFINITY;
    for (const auto& e : h)
      for (const auto& s : series.at(title)) {
        lo = std::min(lo, e.metrics.at(s));
        hi = std::max(hi, e.metrics.at(s));
      }
    EXPECT_LE(ticks.front(), lo);
    EXPECT_GE(ticks.back(), hi);
    EXPECT_GE((hi - lo) / (ticks.back() - ticks.front()), 0.4) << "the curves are squashed";
    EXPECT_EQ(chart["xticks"].front(), "1");
    EXPECT_EQ(chart["xticks"].back(), "12");
  }
  // The text a reader sees: settings, best and last values, no long float strings.
  for (const char* s : {"<th>model</th><td>mlp</td>", "<th>precision</th><td>float32</td>",
                        "<th>batch size</th><td>64</td>", "<th>seed</th><td>7</td>",
                        "best checkpoint: epoch 10, valid_accuracy 0.8850", ">0.8802<", ">0.9985<"})
    EXPECT_NE(dom.find(s), std::string::npos) << s;
  EXPECT_NE(dom.find(std::string("<th>Ember</th><td>") + train::detail::ember_version()),
            std::string::npos);
  for (const char* bad : {"99999999", "00000001", "99999997"})
    EXPECT_EQ(dom.find(bad), std::string::npos) << bad;
}
