// A data-parallel training run's page section: summary.json's distributed section as each rank's
// step split into its phases (a chart and a table), the stragglers, how much of the gradient
// all-reduce the backward hid, its bandwidth, and the scaling against one process.
#include <nlohmann/json.hpp>

#include "report/figure_book.h"
#include "report/number_text.h"
#include "report/report_sections.h"
#include "report/svg_chart.h"

namespace tach::report {

namespace {

std::string pct(double share) { return fmt("%.1f%%", 100 * share); }

}  // namespace

void distributed_section(std::ostringstream& h, FigureBook& figs, const nlohmann::json& d) {
  const nlohmann::json ranks = d.value("ranks", nlohmann::json::array());
  if (d.value("world_size", 1) < 2 || ranks.empty()) return;
  h << "<h3>Data-parallel: " << d.value("world_size", 0) << " ranks (" << escape_html(d.value("backend", std::string()))
    << ")</h3>";
  // Each rank's median step: its parts, with the communication the step waited for (exposed).
  const std::vector<std::pair<std::string, std::string>> parts = {
      {"data", "data_ms_median"},
      {"forward", "forward_ms_median"},
      {"backward", "backward_ms_median"},
      {"all-reduce waited for", "communication_exposed_ms_median"},
      {"optimizer", "optimizer_ms_median"}};
  std::vector<std::string> labels, names;
  std::vector<std::vector<double>> values(parts.size());
  for (const auto& r : ranks) {
    labels.push_back("rank " + std::to_string(r.value("rank", 0)));
    for (size_t k = 0; k < parts.size(); ++k) values[k].push_back(r.value(parts[k].second, 0.0));
  }
  for (const auto& p : parts) names.push_back(p.first);
  const nlohmann::json stragglers = d.value("stragglers", nlohmann::json::object());
  const std::string slowest = "slowest rank " + std::to_string(stragglers.value("slowest_rank", 0)) + " at " +
                              fmt("%.3f", stragglers.value("slowest_over_median", 0.0)) + "x the median step";
  const std::string overlap = "communication " + pct(d.value("communication_share", 0.0)) + " of the step, " +
                              pct(d.value("overlap_share", 0.0)) + " of it hidden behind the backward";
  h << "<div class='charts'>"
    << figs.add("data_parallel_ranks", "step time per rank",
                stacked_columns("median step per rank, by phase", labels, names, values, "rank", "ms, wall clock"),
                {slowest, overlap})
    << "</div>";

  h << "<table><tr><th>rank</th><th>step ms</th><th>data ms</th><th>forward ms</th><th>backward ms</th>"
       "<th>all-reduce ms</th><th>waited for ms</th><th>optimizer ms</th></tr>";
  for (const auto& r : ranks)
    h << "<tr><td>" << r.value("rank", 0) << "</td><td>" << fmt("%.2f", r.value("step_ms_median", 0.0)) << "</td><td>"
      << fmt("%.3f", r.value("data_ms_median", 0.0)) << "</td><td>" << fmt("%.2f", r.value("forward_ms_median", 0.0))
      << "</td><td>" << fmt("%.2f", r.value("backward_ms_median", 0.0)) << "</td><td>"
      << fmt("%.2f", r.value("communication_ms_median", 0.0)) << "</td><td>"
      << fmt("%.2f", r.value("communication_exposed_ms_median", 0.0)) << "</td><td>"
      << fmt("%.3f", r.value("optimizer_ms_median", 0.0)) << "</td></tr>";
  h << "</table><table><tr><th>distributed</th><th></th></tr>";
  auto row = [&](const std::string& k, const std::string& v) {
    h << "<tr><td>" << k << "</td><td>" << v << "</td></tr>";
  };
  row("stragglers", escape_html(slowest));
  row("communication", escape_html(overlap));
  row("all-reduce per step", fmt("%.2f MB", d.value("all_reduce_bytes_per_step", 0.0) / 1e6) + ", " +
                                 fmt("%.3f GB/s", d.value("all_reduce_gb_per_s", 0.0)));
  if (d.contains("scaling") && d["scaling"].is_object()) {
    const nlohmann::json& s = d["scaling"];
    row("scaling efficiency", fmt("%.1f%%", 100 * s.value("efficiency", 0.0)) + " (" +
                                  fmt("%.1f", s.value("samples_per_s", 0.0)) + " samples/s against " +
                                  fmt("%.1f", s.value("reference_samples_per_s", 0.0)) +
                                  " in one process: " + escape_html(s.value("reference", std::string())) + ")");
  } else {
    row("scaling efficiency", "not measured: give tach train --scaling-reference RUN_DIR, a one-process run");
  }
  h << "</table><p class='muted'>" << escape_html(d.value("method", std::string())) << "</p>";
}

}  // namespace tach::report
