// report.html's sweep section for an inference sweep: the panels over batch size, GPU time and
// energy, every metric as a heatmap, the latency distributions and the points' table.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <sstream>

#include "report/batch_series.h"
#include "report/figure_book.h"
#include "report/number_text.h"
#include "report/report_sections.h"
#include "report/svg_chart.h"

namespace tach::report {

namespace {

std::string mib(double bytes) { return fixed_text(bytes / (1024.0 * 1024.0), 1); }

// A series of the sweep: every axis but the batch size (a shrink variant and another engine first).
std::string series_name(const PointResult& p) {
  return who_ran(p.key) + p.key.device + " " + p.key.dtype + " seq " + std::to_string(p.key.seq_len) + " threads " +
         threads_label(p);
}

// One chart over batch size (log2), a line per series.
std::string batch_panel(const BatchSeries& by, const std::string& title, const std::string& y_label,
                        const std::function<double(const PointResult&)>& value) {
  LineChartSpec spec;
  spec.title = title;
  spec.x_label = "batch size";
  spec.y_label = y_label;
  spec.log2_x = true;
  return line_chart(spec, lines_over_batch(by, value));
}

double allocator_peak(const PointResult& p, const std::string& category) {
  auto it = p.allocator.find(category);
  return it == p.allocator.end() ? std::nan("") : double(it->second.peak);
}

// The six panels over batch size, and as figures: the six together, throughput alone, and memory
// as both measures.
void batch_panels(std::ostringstream& h, FigureBook& figs, const BatchSeries& by, bool gpu) {
  const std::vector<std::string> six = {
      batch_panel(by, "latency per sample", "ms per sample (median)",
                  [](const PointResult& p) { return p.sample_latency_ms.median; }),
      batch_panel(by, "throughput", "samples/s (batch / median latency)",
                  [](const PointResult& p) { return p.samples_per_s; }),
      batch_panel(by, "GPU memory", "MiB, allocator peak on the device",
                  [&](const PointResult& p) {
                    return gpu && p.key.device != "cpu" ? allocator_peak(p, "total") / 1048576.0 : std::nan("");
                  }),
      batch_panel(by, "CPU memory", "MiB, peak RSS of the process",
                  [](const PointResult& p) { return double(p.peak_rss_bytes) / 1048576.0; }),
      batch_panel(by, "latency per batch", "ms per batch (median)",
                  [](const PointResult& p) { return p.batch_latency_ms.median; }),
      batch_panel(by, "memory efficiency", "samples/s per GiB of peak RSS",
                  [](const PointResult& p) { return p.samples_per_s / (double(p.peak_rss_bytes) / 1073741824.0); })};
  h << "<div class='charts'>";
  for (const auto& chart : six) h << chart;
  h << "</div>";
  if (!gpu) h << "<p class='muted'>GPU memory: no point ran on a GPU.</p>";
  std::vector<std::string> best;
  for (const auto& name : by.order) {
    const PointResult* b = nullptr;
    for (const PointResult* p : by.points.at(name))
      if (!b || p->samples_per_s > b->samples_per_s) b = p;
    best.push_back(name + ": most throughput at batch " + std::to_string(b->key.batch) + ", " +
                   fixed_text(b->samples_per_s, 1) + " samples/s, " + fixed_text(b->sample_latency_ms.median, 3) +
                   " ms/sample, " + mib(double(b->peak_rss_bytes)) + " MiB peak RSS");
  }
  figs.add_grid("batch_size_comparison", "the sweep against batch size, six panels", six, 3, best);
  figs.add("throughput_vs_batch_size", "throughput against batch size", six[1], best);
  std::vector<Series> memory;
  for (const auto& name : by.order)
    for (const bool rss : {true, false}) {
      Series s;
      s.name = name + (rss ? ": peak RSS" : ": allocator peak");
      for (const PointResult* p : by.points.at(name)) {
        s.x.push_back(double(p->key.batch));
        s.y.push_back((rss ? double(p->peak_rss_bytes) : allocator_peak(*p, "total")) / 1048576.0);
      }
      memory.push_back(s);
    }
  LineChartSpec spec;
  spec.title = "memory usage";
  spec.x_label = "batch size";
  spec.y_label = "MiB (process peak RSS; allocator peak)";
  spec.log2_x = true;
  figs.add("memory_usage", "memory against batch size", line_chart(spec, memory));
}

// GPU points' own time per run (CUDA events) beside the host's latency, and energy per sample.
void gpu_time_and_energy_panels(std::ostringstream& h, const BatchSeries& by, const std::vector<PointResult>& points,
                                bool gpu, bool gpu_time) {
  if (gpu_time)
    h << "<div class='charts'>"
      << batch_panel(by, "GPU time per batch", "ms per batch (median; CUDA events around the forward, copies included)",
                     [](const PointResult& p) { return p.gpu_time_ms.n > 0 ? p.gpu_time_ms.median : std::nan(""); })
      << batch_panel(by, "host latency minus GPU time",
                     "ms per batch (medians): launch and host work the GPU did not overlap",
                     [](const PointResult& p) {
                       return p.gpu_time_ms.n > 0 ? p.batch_latency_ms.median - p.gpu_time_ms.median : std::nan("");
                     })
      << "</div>";
  const bool energy =
      std::any_of(points.begin(), points.end(), [](const PointResult& p) { return p.energy_j_per_sample >= 0; });
  if (energy)
    h << "<div class='charts'>"
      << batch_panel(
             by, "energy per sample",
             gpu ? "J per sample (RAPL: CPU package + DRAM on CPU points; NVML: the whole GPU on GPU points)"
                 : "J per sample (RAPL: CPU package + DRAM)",
             [](const PointResult& p) { return p.energy_j_per_sample >= 0 ? p.energy_j_per_sample : std::nan(""); })
      << "</div>";
  else h << "<p class='muted'>Energy: " << escape_html(points.front().energy_source) << ".</p>";
}

// The grid's metrics, each normalised over the points (0 = the best, 1 = the worst: darker is worse).
void metrics_heatmap(std::ostringstream& h, FigureBook& figs, const std::vector<PointResult>& points) {
  struct Metric {
    const char* name;
    bool higher_is_better;
    std::function<double(const PointResult&)> get;
    int decimals;
  };
  const std::vector<Metric> metrics = {
      {"ms/sample", false, [](const PointResult& p) { return p.sample_latency_ms.median; }, 3},
      {"samples/s", true, [](const PointResult& p) { return p.samples_per_s; }, 1},
      {"p95 ms/batch", false, [](const PointResult& p) { return p.batch_latency_ms.p95; }, 2},
      {"GFLOP/s", true, [](const PointResult& p) { return p.achieved_gflops_per_s; }, 1},
      {"RSS MiB", false, [](const PointResult& p) { return double(p.peak_rss_bytes) / 1048576.0; }, 0},
      {"J/sample", false,
       [](const PointResult& p) { return p.energy_j_per_sample >= 0 ? p.energy_j_per_sample : std::nan(""); }, 3},
  };
  std::vector<std::string> rows, cols;
  std::vector<std::vector<double>> level(points.size());
  std::vector<std::vector<std::string>> text(points.size());
  for (const auto& m : metrics) cols.push_back(m.name);
  for (const auto& p : points) rows.push_back(p.key.id());
  for (size_t c = 0; c < metrics.size(); ++c) {
    double lo = INFINITY, hi = -INFINITY;
    for (const auto& p : points) {
      const double v = metrics[c].get(p);
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    }
    for (size_t r = 0; r < points.size(); ++r) {
      const double v = metrics[c].get(points[r]);
      double t = std::isfinite(v) && hi > lo ? (v - lo) / (hi - lo) : (std::isfinite(v) ? 0 : std::nan(""));
      if (std::isfinite(t) && metrics[c].higher_is_better) t = 1 - t;
      level[r].push_back(t);
      text[r].push_back(std::isfinite(v) ? fixed_text(v, metrics[c].decimals) : "n/a");
    }
  }
  std::vector<std::string> best_per_metric;
  for (size_t c = 0; c < metrics.size(); ++c)
    for (size_t r = 0; r < points.size(); ++r)
      if (level[r][c] == 0) {
        best_per_metric.push_back(std::string(metrics[c].name) + ": best " + text[r][c] + " (" + rows[r] + ")");
        break;
      }
  h << "<h3>Every metric over the grid</h3><p class='muted'>Each column normalised over the points: light is "
       "the best of the run, dark the worst; the value is written in the cell.</p>"
    << figs.add("metrics_heatmap", "every metric over the grid, normalised (dark = worse)",
                heatmap("normalised metrics (dark = worse)", rows, cols, level, text), best_per_metric);
}

// The points one distribution chart compares: every axis but the batch and who ran them (a variant
// fixes its dtype, so tach shrink's variants of one device, length and threads share a chart).
std::string compared_on(const PointResult& p) {
  return p.key.device + (p.key.variant.empty() ? " " + p.key.dtype : std::string()) + " seq " +
         std::to_string(p.key.seq_len) + " threads " + threads_label(p);
}

// Per chart, one violin per series and batch size (ms per sample, so sizes share an axis), and their
// dots: every measured run's latency, per point. Where a chart holds a shrink variant or another
// engine, each violin says whose it is.
void latency_distributions(std::ostringstream& h, FigureBook& figs, const BatchSeries& by,
                           const std::vector<PointResult>& points) {
  std::vector<std::string> charts;
  std::map<std::string, std::vector<const PointResult*>> compared;
  for (const auto& name : by.order)
    for (const PointResult* p : by.points.at(name)) {
      const std::string chart = compared_on(*p);
      if (!compared.count(chart)) charts.push_back(chart);
      compared[chart].push_back(p);
    }
  h << "<h3>Latency distributions</h3><div class='charts'>";
  for (const auto& chart : charts) {
    const auto& rows = compared.at(chart);
    const bool named =
        std::any_of(rows.begin(), rows.end(), [](const PointResult* p) { return !who_ran(p->key).empty(); });
    std::vector<Distribution1D> groups;
    for (const PointResult* p : rows) {
      Distribution1D d;
      const std::string who = who_ran(p->key);
      d.name = (named ? (who.empty() ? "tach " : who) : "") + "batch " + std::to_string(p->key.batch);
      for (double ms : p->batch_latency_samples_ms) d.values.push_back(ms / double(p->key.batch));
      groups.push_back(d);
    }
    h << figs.add("latency_distribution_" + figure_file_stem(chart), "latency distributions: " + chart,
                  distribution_chart({chart, "ms per sample, one dot per measured run"}, groups));
  }
  h << "</div>";
  h << "<details><summary>every measured run's batch latency (ms), per point</summary><table><tr><th>point</th>"
       "<th>latencies in the order measured</th></tr>";
  for (const auto& p : points) {
    std::string v;
    for (double ms : p.batch_latency_samples_ms) {
      if (!v.empty()) v += ' ';
      v += fixed_text(ms, 4);
    }
    h << "<tr><td>" << escape_html(p.key.id()) << "</td><td style='text-align:left;white-space:normal'>"
      << (v.empty() ? "not kept (a tach.bench.point/1 run)" : v) << "</td></tr>";
  }
  h << "</table></details>";
}

// Every point, failed ones with their reason.
void points_table(std::ostringstream& h, const std::vector<PointResult>& all, bool gpu_time) {
  h << "<h3>Points</h3><table><tr><th>point</th><th>runs</th><th>ms/batch median</th><th>p95</th>"
    << (gpu_time ? "<th>GPU ms/batch median</th>" : "")
    << "<th>ms/sample</th><th>samples/s</th><th>tokens/s</th><th>GFLOP/s</th><th>peak RSS MiB</th>"
       "<th>allocator peak MiB</th><th>J/sample</th><th>stopped by</th></tr>";
  for (const auto& p : all) {
    if (p.status != "ok") {
      h << "<tr><td>" << escape_html(p.key.id()) << "</td><td colspan='" << (gpu_time ? 12 : 11)
        << "' style='text-align:left'>" << escape_html(p.status) << ": " << escape_html(p.reason) << "</td></tr>";
      continue;
    }
    h << "<tr><td>" << escape_html(p.key.id()) << "</td><td>" << p.measured_runs << "</td><td>"
      << fixed_text(p.batch_latency_ms.median, 3) << "</td><td>" << fixed_text(p.batch_latency_ms.p95, 3) << "</td><td>"
      << (gpu_time ? (p.gpu_time_ms.n > 0 ? fixed_text(p.gpu_time_ms.median, 3) : std::string("n/a")) + "</td><td>"
                   : std::string())
      << fixed_text(p.sample_latency_ms.median, 4) << "</td><td>" << fixed_text(p.samples_per_s, 2) << "</td><td>"
      << fixed_text(p.tokens_per_s, 0) << "</td><td>" << fixed_text(p.achieved_gflops_per_s, 1) << "</td><td>"
      << mib(double(p.peak_rss_bytes)) << "</td><td>" << mib(allocator_peak(p, "total")) << "</td><td>"
      << (p.energy_j_per_sample >= 0 ? fixed_text(p.energy_j_per_sample, 4) : "n/a") << "</td><td>"
      << escape_html(p.stopped_by) << "</td></tr>";
  }
  h << "</table>";
}

}  // namespace

void sweep_section(std::ostringstream& h, FigureBook& figs, const std::vector<PointResult>& all) {
  std::vector<PointResult> points;
  for (const auto& p : all)
    if (p.status == "ok") points.push_back(p);
  h << "<h2>Sweep</h2>";
  if (points.empty()) {
    h << "<p class='muted'>No finished points.</p>";
    return;
  }
  const BatchSeries by = batch_series(points, series_name);
  const bool gpu =
      std::any_of(points.begin(), points.end(), [](const PointResult& p) { return p.key.device != "cpu"; });
  const bool gpu_time =
      std::any_of(points.begin(), points.end(), [](const PointResult& p) { return p.gpu_time_ms.n > 0; });
  batch_panels(h, figs, by, gpu);
  gpu_time_and_energy_panels(h, by, points, gpu, gpu_time);
  metrics_heatmap(h, figs, points);
  latency_distributions(h, figs, by, points);
  points_table(h, all, gpu_time);
  decoding_section(h, all);
}

}  // namespace tach::report
