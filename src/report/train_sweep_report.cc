// report.html's sections for a training sweep and for CPU/GPU speed-ups.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>

#include "report/batch_series.h"
#include "report/figure_book.h"
#include "report/number_text.h"
#include "report/report_sections.h"
#include "report/svg_chart.h"

namespace tach::report {

namespace {

// A series of a training sweep: every axis but the batch (another engine first).
std::string train_series(const PointResult& p) {
  const PointKey& k = p.key;
  return who_ran(k) + k.method + " " + k.exec + " " + k.dtype + (k.gradient_checkpointing ? " ckpt" : "") + " seq " +
         std::to_string(k.seq_len) + (k.threads ? " t" + std::to_string(k.threads) : std::string()) +
         (k.device != "cpu" ? " " + k.device : std::string());
}

double peak_of(const PointResult& p, const std::string& cat) {
  const auto it = p.allocator.find(cat);
  return it == p.allocator.end() ? 0 : double(it->second.peak);
}

// One line chart against batch, one series per group, and the same numbers as a table. Returns the chart.
std::string panel_with_table(std::ostringstream& h, const BatchSeries& g, const std::string& title,
                             const std::string& y_label, const std::function<double(const PointResult&)>& value,
                             int decimals) {
  LineChartSpec spec;
  spec.title = title;
  spec.x_label = "batch size";
  spec.y_label = y_label;
  spec.log2_x = true;
  std::string chart = line_chart(spec, lines_over_batch(g, value));
  h << "<div class='panel'>" << chart << "<table><tr><th>series</th><th>batch</th><th>" << escape_html(y_label)
    << "</th></tr>";
  for (const auto& name : g.order)
    for (const PointResult* p : g.points.at(name))
      h << "<tr><td>" << escape_html(name) << "</td><td>" << p->key.batch << "</td><td>"
        << (std::isfinite(value(*p)) ? fixed_text(value(*p), decimals) : "n/a") << "</td></tr>";
  h << "</table></div>";
  return chart;
}

// Per series, the batch with the most samples/s: what a slide says beside the sweep's charts.
std::vector<std::string> best_throughput_lines(const BatchSeries& g) {
  std::vector<std::string> lines;
  for (const auto& name : g.order) {
    const PointResult* best = nullptr;
    for (const PointResult* p : g.points.at(name))
      if (!best || p->samples_per_s > best->samples_per_s) best = p;
    if (best == nullptr) continue;  // a series with no points
    lines.push_back(name + ": most throughput at batch " + std::to_string(best->key.batch) + ", " +
                    fixed_text(best->samples_per_s, 1) + " samples/s, " + fixed_text(best->batch_latency_ms.median, 1) +
                    " ms/step");
  }
  return lines;
}

}  // namespace

void train_sweep_section(std::ostringstream& h, FigureBook& figs, const std::vector<PointResult>& points,
                         const std::filesystem::path& dir) {
  h << "<h2>Training sweep</h2>";
  const BatchSeries g = batch_series(points, train_series);
  if (g.order.empty()) {
    h << "<p class='muted'>No finished training points.</p>";
  } else {
    h << "<p class='muted'>Each point is an optimizer step (data, forward with the loss, backward, clipping, AdamW), "
         "wall clock, median over the measured steps; one series per method × exec × precision × checkpointing.</p>"
      << "<div class='charts'>";
    const std::string throughput = panel_with_table(
        h, g, "training throughput", "samples/s (batch / median step)",
        [](const PointResult& p) { return p.samples_per_s; }, 1);
    const std::string mfu = panel_with_table(
        h, g, "MFU", "model FLOP/s over the GEMM ceiling (%)",
        [](const PointResult& p) {
          // Against a ceiling measured under load, a figure over 100% is no efficiency: not drawn.
          const auto& t = p.train;
          return t.mfu >= 0 && !(t.ceiling_under_load && t.mfu > 1) ? 100 * t.mfu : std::nan("");
        },
        1);
    const std::string memory = panel_with_table(
        h, g, "memory", "MiB, allocator peak (all categories)",
        [](const PointResult& p) { return peak_of(p, "total") / 1048576.0; }, 1);
    const std::string step = panel_with_table(
        h, g, "step time", "ms per step (median)", [](const PointResult& p) { return p.batch_latency_ms.median; }, 2);
    h << "</div>";
    const std::vector<std::string> best = best_throughput_lines(g);
    figs.add_grid("batch_size_comparison", "training sweep against batch size", {throughput, mfu, memory, step}, 2,
                  best);
    figs.add("throughput_vs_batch_size", "training throughput against batch size", throughput, best);
    figs.add("memory_usage", "allocator peak against batch size", memory);
    // Where the time goes and where the memory goes, per series.
    const std::vector<std::string> phases = {"data", "forward", "backward", "optimizer"};
    const std::vector<std::string> cats = {"weights", "gradients", "optimizer_state", "activations", "workspace"};
    h << "<h3>Time breakdown and memory per category</h3><div class='charts'>";
    for (const auto& name : g.order) {
      // The first series' figures are time_breakdown and memory_by_category; each other series'
      // add its name (time_breakdown_lora_eager_f32_seq_128), as a second profiled point's do.
      const std::string suffix = name == g.order.front() ? "" : "_" + figure_file_stem(name);
      std::vector<std::string> x;
      std::vector<std::vector<double>> time(phases.size()), mem(cats.size());
      for (const PointResult* p : g.points.at(name)) {
        x.push_back(std::to_string(p->key.batch));
        const auto& t = p->train;
        const double v[] = {t.data_ms.median, t.forward_ms.median, t.backward_ms.median, t.optimizer_ms.median};
        for (size_t i = 0; i < phases.size(); ++i) time[i].push_back(v[i]);
        for (size_t i = 0; i < cats.size(); ++i) mem[i].push_back(peak_of(*p, cats[i]) / 1048576.0);
      }
      std::vector<std::string> at_largest;  // the phases' shares at the series' largest batch
      double step_ms = 0;
      for (const auto& t : time) step_ms += t.back();
      for (size_t i = 0; i < phases.size() && step_ms > 0; ++i)
        at_largest.push_back(phases[i] + ": " + fixed_text(time[i].back(), 1) + " ms (" +
                             fixed_text(100 * time[i].back() / step_ms, 0) + "% of the step at batch " + x.back() +
                             ")");
      h << "<div class='panel'>"
        << figs.add(
               "time_breakdown" + suffix, "time breakdown: " + name,
               stacked_columns("time breakdown: " + name, x, phases, time, "batch size", "ms per step (phase medians)"),
               at_largest)
        << figs.add("memory_by_category" + suffix, "memory per category: " + name,
                    stacked_columns("memory: " + name, x, cats, mem, "batch size", "MiB (allocator peak per category)"))
        << "<table><tr><th>batch</th>";
      for (const auto& ph : phases) h << "<th>" << ph << " ms</th>";
      for (const auto& c : cats) h << "<th>" << c << " MiB</th>";
      h << "</tr>";
      for (size_t k = 0; k < x.size(); ++k) {
        h << "<tr><td>" << x[k] << "</td>";
        for (size_t i = 0; i < phases.size(); ++i) h << "<td>" << fixed_text(time[i][k], 2) << "</td>";
        for (size_t i = 0; i < cats.size(); ++i) h << "<td>" << fixed_text(mem[i][k], 1) << "</td>";
        h << "</tr>";
      }
      h << "</table></div>";
    }
    h << "</div>";
  }
  // Every point, failed and skipped ones with their reasons.
  // On a GPU, each step's time between the events queued around it, beside the wall clock's.
  const bool gpu_time =
      std::any_of(points.begin(), points.end(), [](const PointResult& p) { return p.gpu_time_ms.n > 0; });
  h << "<h3>Points</h3><table><tr><th>point</th><th>steps</th><th>ms/step median</th><th>p95</th>"
    << (gpu_time ? "<th>GPU ms/step median</th>" : "")
    << "<th>samples/s</th>"
       "<th>tokens/s</th><th>MFU</th><th>GEMM share</th><th>GEMM efficiency</th><th>allocator peak MiB</th>"
       "<th>peak RSS MiB</th><th>loss first → last</th><th>stopped by</th></tr>";
  const auto opt_pct = [](double v) { return v >= 0 ? fixed_text(100 * v, 1) + "%" : std::string("n/a"); };
  for (const auto& p : points) {
    h << "<tr><td>" << escape_html(p.key.id()) << "</td>";
    if (p.status != "ok") {
      h << "<td colspan='" << (gpu_time ? 13 : 12) << "' style='text-align:left'>" << escape_html(p.status) << ": "
        << escape_html(p.reason) << "</td></tr>";
      continue;
    }
    const auto& t = p.train;
    h << "<td>" << p.measured_runs << "</td><td>" << fixed_text(p.batch_latency_ms.median, 2) << "</td><td>"
      << fixed_text(p.batch_latency_ms.p95, 2) << "</td><td>"
      << (gpu_time ? (p.gpu_time_ms.n > 0 ? fixed_text(p.gpu_time_ms.median, 2) : std::string("n/a")) + "</td><td>"
                   : "")
      << fixed_text(p.samples_per_s, 1) << "</td><td>" << fixed_text(p.tokens_per_s, 0) << "</td><td>"
      << escape_html(report::of_ceiling(t.mfu, t.ceiling_under_load, "%.1f%%")) << "</td><td>"
      << opt_pct(t.gemm_time_share) << "</td><td>"
      << escape_html(report::of_ceiling(t.gemm_efficiency, t.ceiling_under_load, "%.1f%%")) << "</td><td>"
      << fixed_text(peak_of(p, "total") / 1048576.0, 1) << "</td><td>"
      << fixed_text(double(p.peak_rss_bytes) / 1048576.0, 1) << "</td><td>" << fixed_text(t.loss_first, 4) << " → "
      << fixed_text(t.loss_last, 4) << "</td><td>" << escape_html(p.stopped_by) << "</td></tr>";
  }
  h << "</table>";
  std::ifstream md(dir / "performance_report.md");
  if (md) {
    std::ostringstream text;
    text << md.rdbuf();
    h << "<h3>Diagnosis (performance_report.md)</h3><pre>" << escape_html(text.str()) << "</pre>";
  }
}

void speedup_section(std::ostringstream& h, FigureBook& figs, const std::vector<PointResult>& points) {
  std::map<std::string, const PointResult*> cpu;
  for (const auto& p : points)
    if (p.status == "ok" && p.key.device == "cpu") cpu[p.key.id_without("device")] = &p;
  std::vector<std::string> labels;
  std::vector<double> speedups;
  std::ostringstream rows;
  for (const auto& p : points) {
    if (p.status != "ok" || p.key.device == "cpu") continue;
    const auto it = cpu.find(p.key.id_without("device"));
    if (it == cpu.end()) continue;
    const double s = it->second->batch_latency_ms.median / p.batch_latency_ms.median;
    labels.push_back(p.key.id_without("device") + " " + p.key.device);
    speedups.push_back(s);
    rows << "<tr><td>" << escape_html(p.key.id_without("device")) << "</td><td>" << escape_html(p.key.device)
         << "</td><td>" << fixed_text(it->second->batch_latency_ms.median, 3) << "</td><td>"
         << fixed_text(p.batch_latency_ms.median, 3) << "</td><td>" << fixed_text(s, 2) << "x</td></tr>";
  }
  if (labels.empty()) return;
  h << "<h2>CPU / GPU speed-up</h2><p class='muted'>The same point (every other axis equal) on the CPU and on a GPU: "
       "the CPU's median latency over the GPU's (a training point's: its step).</p>"
    << figs.add("gpu_speedup", "GPU speed-up over the CPU",
                bar_chart("GPU speed-up over the CPU", labels, speedups, "x (CPU ms / GPU ms)"))
    << "<table><tr><th>point</th><th>GPU</th><th>CPU ms</th><th>GPU ms</th><th>speed-up</th></tr>" << rows.str()
    << "</table>";
}

}  // namespace tach::report
