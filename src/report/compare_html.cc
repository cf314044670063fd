// compare.html: one self-contained page (inline styles and SVG, no script, nothing fetched) with
// the change per point as bars with intervals, the overlaid latency distributions per point, and
// every number in a table beside the pictures.
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "model/safetensors_writer.h"
#include "report/compare_scores.h"
#include "report/number_text.h"
#include "report/svg_chart.h"
#include "tach/compare.h"

namespace tach {

namespace {

using report::fixed_text;

std::string pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", v * 100);
  return buf;
}

const char* kStyle = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 16px}
h1{font-size:22px} h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0;font-variant-numeric:tabular-nums}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:right;white-space:nowrap} td:last-child{white-space:normal;text-align:left} th{background:#f5f5f5} td:first-child,th:first-child{text-align:left}
.improved{color:#0072B2;font-weight:600} .regressed{color:#D55E00;font-weight:600} .noise{color:#666}
.charts{display:flex;flex-wrap:wrap;gap:12px} svg text{font-size:11px} .chart-title{font-size:13px;font-weight:600}
.method{color:#444;max-width:900px}
)";

}  // namespace

std::string comparison_html(const RunComparison& c) {
  using report::escape_html;
  std::ostringstream h;
  h << "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>tach compare</title><style>" << kStyle
    << "</style></head><body><h1>tach compare</h1><ul>";
  for (size_t r = 0; r < c.runs.size(); ++r)
    h << "<li>run " << r << (r == 0 ? " (baseline)" : "") << ": <code>" << escape_html(c.runs[r].dir) << "</code>"
      << (c.runs[r].model.empty() ? "" : ", model " + escape_html(c.runs[r].model)) << ", " << c.runs[r].points.size()
      << " points</li>";
  h << "</ul><p class='method'>Latency is each point's median batch latency (ms, wall clock, per run); throughput: "
    << escape_html(kThroughputDefinition) << ". A change is new / baseline − 1, with a "
    << fixed_text(c.options.confidence * 100, 0) << "% percentile block-bootstrap interval from " << c.options.resamples
    << " resamples (each run's latencies cut in measurement order into blocks, whole blocks resampled with "
       "replacement, seed "
    << c.options.seed << "). Verdicts: <b>within noise</b> when the interval holds 0, the change is below "
    << fixed_text(c.options.noise_threshold * 100, 1)
    << "%, or it is no larger than the drift inside either run (how far its blocks' medians moved apart); "
       "<b>inconclusive</b> when either side was measured under contention (other processes took cores its "
       "threads needed); otherwise <b>improved</b> or "
       "<b>regressed</b>.</p>";
  h << "<p><b>" << escape_html(verdict_counts(c)) << "</b>.</p>";

  for (size_t r = 1; r < c.runs.size(); ++r) {
    std::vector<report::ChangeBar> bars;
    for (const auto& ch : c.changes)
      if (ch.run == r) bars.push_back({ch.id, ch.latency_change, ch.latency_lo, ch.latency_hi, ch.verdict});
    h << "<h2>Run " << r << " against the baseline</h2>"
      << report::change_chart("latency change per point: " + c.runs[r].dir, bars, c.options.noise_threshold);
  }

  h << "<h2>Every comparison</h2><table><tr><th>point</th><th>run</th><th>baseline median ms (n)</th><th>median ms "
       "(n)</th><th>latency change</th><th>interval</th><th>throughput change</th><th>interval</th><th>baseline "
       "samples/s</th><th>samples/s</th><th>drift (baseline, run)</th><th>verdict</th><th>why</th></tr>";
  for (const auto& ch : c.changes) {
    const bool interval = ch.baseline_n >= 2 && ch.n >= 2 && ch.verdict != "not comparable";
    const std::string cls = ch.verdict == "improved" ? "improved" : ch.verdict == "regressed" ? "regressed" : "noise";
    h << "<tr><td>" << escape_html(ch.id) << "</td><td>" << ch.run << "</td><td>"
      << fixed_text(ch.baseline_median_ms, 3) << " (" << ch.baseline_n << ")</td><td>" << fixed_text(ch.median_ms, 3)
      << " (" << ch.n << ")</td><td>" << pct(ch.latency_change) << "</td><td>"
      << (interval ? pct(ch.latency_lo) + " … " + pct(ch.latency_hi) : "–") << "</td><td>" << pct(ch.throughput_change)
      << "</td><td>" << (interval ? pct(ch.throughput_lo) + " … " + pct(ch.throughput_hi) : "–") << "</td><td>"
      << fixed_text(ch.baseline_samples_per_s, 2) << "</td><td>" << fixed_text(ch.samples_per_s, 2) << "</td><td>"
      << (interval ? fixed_text(ch.baseline_drift * 100, 1) + "%, " + fixed_text(ch.drift * 100, 1) + "%" : "–")
      << "</td><td class='" << cls << "'>" << escape_html(ch.verdict) << "</td><td>" << escape_html(ch.why)
      << "</td></tr>";
  }
  h << "</table>";

  // Distributions: per point present in the baseline, every run's raw latencies overlaid.
  h << "<h2>Latency distributions per point</h2><div class='charts'>";
  std::map<std::string, std::vector<report::Distribution1D>> by_point;
  std::vector<std::string> order;
  const auto add = [&](const std::string& id, size_t r, const std::vector<double>& samples) {
    if (!by_point.count(id)) order.push_back(id);
    by_point[id].push_back({r == 0 ? "baseline" : "run " + std::to_string(r), samples});
  };
  for (size_t r = 0; r < c.runs.size(); ++r)
    for (const auto& p : c.runs[r].points) {
      add(p.key.id(), r, p.batch_latency_samples_ms);
      if (!p.decode.step_samples_ms.empty()) add(p.key.id() + " decode", r, p.decode.step_samples_ms);
    }
  for (const auto& id : order) {
    const bool decode = id.size() > 7 && id.compare(id.size() - 7, 7, " decode") == 0;
    h << report::distribution_chart(
        {id, decode ? "decode step (ms), one dot per step" : "batch latency (ms), one dot per measured run"},
        by_point[id]);
  }
  h << "</div>";
  if (!c.scores.empty()) {
    // Eval scores: each later run's against the baseline's, in percentage points.
    h << "<h2>Eval scores</h2><p><b>" << escape_html(score_counts(c))
      << "</b>. Percent, matched by pass and metric; an eval's score is the same each time for one model, data and "
         "dtype, so any change is one.</p><table><tr><th>pass</th><th>metric</th><th>run</th><th>baseline</th>"
         "<th>score</th><th>change</th><th>verdict</th><th>why</th></tr>";
    const auto percent = [](double v) { return std::isfinite(v) ? fixed_text(v, 2) + "%" : std::string("–"); };
    for (const auto& sc : c.scores) {
      const std::string cls = sc.verdict == "higher" ? "improved" : sc.verdict == "lower" ? "regressed" : "noise";
      const double change = sc.percent - sc.baseline_percent;
      h << "<tr><td>" << escape_html(sc.pass) << "</td><td>" << escape_html(sc.metric) << "</td><td>" << sc.run
        << "</td><td>" << percent(sc.baseline_percent) << "</td><td>" << percent(sc.percent) << "</td><td>"
        << (std::isfinite(change) ? escape_html(report::points_text(change)) : "–") << "</td><td class='" << cls << "'>"
        << escape_html(sc.verdict) << "</td><td>" << escape_html(sc.why) << "</td></tr>";
    }
    h << "</table>";
  }
  if (!c.only_in.empty()) {
    h << "<h2>Points not in every run</h2><ul>";
    for (const auto& s : c.only_in) h << "<li>" << escape_html(s) << "</li>";
    h << "</ul>";
  }
  h << "</body></html>\n";
  return h.str();
}

void write_comparison_html(const RunComparison& c, const std::string& path) {
  model::write_file_atomically(path, comparison_html(c));
}

}  // namespace tach
