// tach report on a tach analyze run: report.html from analysis.json (torch.profiler traces
// summarised), with the same charts, PNG files and slides as the other runs. The page reads only
// the JSON, so the report room needs nothing of the analyze room (which sits below it).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "report/figure_book.h"
#include "report/number_text.h"
#include "report/report_sections.h"
#include "report/svg_chart.h"
#include "tach/error.h"
#include "tach/report.h"
#include "tach/system_info.h"

namespace tach {

namespace fs = std::filesystem;
using json = nlohmann::json;
using report::escape_html;
using report::fmt;

namespace {

constexpr size_t kRows = 25;  // rows of each long table on the page (analysis.json keeps them all)

double num_or(const json& o, const char* key, double fallback = 0) {
  return o.contains(key) && o[key].is_number() ? o[key].get<double>() : fallback;
}
std::string str_or(const json& o, const char* key) {
  return o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : std::string();
}
std::string ms(double us, const char* format = "%.3f") { return fmt(format, us * 1e-3); }

struct Page {
  std::ostringstream h;
  report::FigureBook figs;
  std::vector<std::string> about, findings;
};

void header(Page& page, const fs::path& dir, const json& a) {
  std::ostringstream& h = page.h;
  auto row = [&](const std::string& k, const std::string& v) {
    h << "<dt>" << escape_html(k) << "</dt><dd>" << escape_html(v) << "</dd>";
    page.about.push_back(k + ": " + v);
  };
  h << "<dl>";
  row("run directory", fs::absolute(dir).string());
  // tach profile --engine: which engine ran the calls, and its one-time costs.
  if (a.contains("engine") && a["engine"].is_object()) {
    const json& e = a["engine"];
    row("engine", str_or(e, "name") + ", " + str_or(e, "task") + " (" + str_or(e, "versions") + "); load " +
                      fmt("%.2f", num_or(e, "load_s")) + " s, first call " + fmt("%.3f", num_or(e, "first_call_s")) +
                      " s, outside the profile");
  }
  const json traces = a.value("traces", json::array());
  for (const auto& t : traces) {
    const std::string assumed_because = str_or(t, "rank_assumed_because");
    row("trace", str_or(t, "path") + " (rank " + std::to_string(t.value("rank", 0)) +
                     (t.value("rank_assumed", false)
                          ? ", assumed: " + (assumed_because.empty() ? "the trace names none" : assumed_because)
                          : std::string()) +
                     "; " + std::to_string(t.value("cpu_events", 0)) + " CPU events, " +
                     std::to_string(t.value("device_events", 0)) + " device events)");
  }
  for (const auto& d : a.value("device_properties", json::array()))
    if (d.is_object() && d.contains("name")) row("device", str_or(d, "name"));
  if (a.contains("roofline") && a["roofline"].is_object()) {
    const json& r = a["roofline"];
    row("peaks", str_or(r, "device") + ": f32 " + fmt("%.1f", num_or(r, "f32_flops") * 1e-12) + " TFLOP/s, bf16 " +
                     fmt("%.1f", num_or(r, "bf16_flops") * 1e-12) + " TFLOP/s (" + str_or(r, "source") + "); memory " +
                     fmt("%.1f", num_or(r, "memory_bytes_per_s") * 1e-9) + " GB/s (" + str_or(r, "memory_source") +
                     ")");
  }
  for (const auto& n : a.value("notes", json::array()))
    if (n.is_string()) row("note", n.get<std::string>());
  row("tach", tach_version() + " (the build writing this report)");
  h << "</dl>";
}

// One side of a comparison row: "-" where the op is absent there.
std::string side_ms(const json& side) { return side.is_object() ? ms(num_or(side, "time_us")) : "-"; }
std::string side_calls(const json& side) { return side.is_object() ? fmt("%.4g", num_or(side, "calls")) : "-"; }
std::string side_share(const json& side) { return side.is_object() ? fmt("%.1f%%", 100 * num_or(side, "share")) : "-"; }

void comparison_table(std::ostringstream& h, const json& rows, const std::string& what) {
  h << "<table><tr><th>" << what << "</th><th>baseline ms</th><th>new ms</th><th>delta ms</th><th>change</th>"
    << "<th>baseline calls</th><th>new calls</th><th>baseline share</th><th>new share</th></tr>";
  size_t n = 0;
  for (const auto& r : rows) {
    if (n++ == kRows) break;
    const json& d = r["delta"];
    const std::string change = d["time_change"].is_number() ? fmt("%+.1f%%", 100 * d["time_change"].get<double>())
                               : r["baseline"].is_null()    ? "new"
                                                            : "gone";
    std::string name = str_or(r, "name");
    if (r.contains("detail")) {
      name += ' ';
      name += str_or(r, "detail");
    }
    h << "<tr><td>" << escape_html(name) << "</td><td>" << side_ms(r["baseline"]) << "</td><td>" << side_ms(r["new"])
      << "</td><td>" << fmt("%+.3f", num_or(d, "time_us") * 1e-3) << "</td><td>" << change << "</td><td>"
      << side_calls(r["baseline"]) << "</td><td>" << side_calls(r["new"]) << "</td><td>" << side_share(r["baseline"])
      << "</td><td>" << side_share(r["new"]) << "</td></tr>";
  }
  h << "</table>";
}

// A run's paths as the user gave them, each in <code>, comma-separated (not the JSON array).
std::string paths_list(const json& side) {
  std::string out;
  if (!side.is_object() || !side.contains("paths") || !side["paths"].is_array()) return "-";
  for (const auto& p : side["paths"])
    if (p.is_string()) out += (out.empty() ? "" : ", ") + ("<code>" + escape_html(p.get<std::string>()) + "</code>");
  return out.empty() ? "-" : out;
}

// Two runs: the step time's verdict as a bar with its interval, and ops and kernels side by side.
void comparison_section(Page& page, const json& c) {
  std::ostringstream& h = page.h;
  const json& st = c["step_time"];
  const std::string unit = str_or(c, "per") == "step" ? "per step" : "over the traces";
  h << "<h2>Comparison</h2><p>Baseline: " << paths_list(c["baseline"]) << "; this run: " << paths_list(c["new"])
    << ".</p>";
  const std::string verdict = "step time " + str_or(st, "verdict") + ": " + str_or(st, "why");
  page.findings.push_back(verdict);
  h << "<p><b>" << escape_html(verdict) << "</b></p>";
  h << "<table><tr><th>step time</th><th>baseline</th><th>this run</th></tr><tr><td>steps</td><td>"
    << st.value("baseline_steps", 0) << "</td><td>" << st.value("steps", 0) << "</td></tr><tr><td>median ms</td><td>"
    << fmt("%.3f", num_or(st, "baseline_median_ms")) << "</td><td>" << fmt("%.3f", num_or(st, "median_ms"))
    << "</td></tr><tr><td>drift inside the run</td><td>" << fmt("%.1f%%", 100 * num_or(st, "baseline_drift"))
    << "</td><td>" << fmt("%.1f%%", 100 * num_or(st, "drift")) << "</td></tr></table>";
  if (st["ci"].is_array()) {
    // The change chart colours "improved" and "regressed": a faster step is an improvement.
    const std::string v = str_or(st, "verdict");
    const report::ChangeBar bar{"median step", num_or(st, "change"), st["ci"][0].get<double>(),
                                st["ci"][1].get<double>(),
                                v == "faster"   ? "improved"
                                : v == "slower" ? "regressed"
                                                : v};
    h << "<div class='charts'>"
      << page.figs.add(
             "step_time_change", "median step time against the baseline",
             report::change_chart("median step time: change against the baseline (95% interval)", {bar}, 0.02),
             {verdict})
      << "</div>";
  }
  const std::string time = str_or(c, "op_time") == "self_device" ? "self device" : "self CPU";
  const json ops = c.value("ops", json::array());
  std::vector<std::string> labels;
  std::vector<double> deltas;
  std::string largest;
  // Bars draw sizes: each change's size, its sign in the label.
  for (size_t i = 0; i < ops.size() && i < 12; ++i) {
    const double delta = num_or(ops[i]["delta"], "time_us") * 1e-3;
    labels.push_back(str_or(ops[i], "name") + (delta >= 0 ? " (+)" : " (-)"));
    deltas.push_back(std::fabs(delta));
    if (i == 0) largest = str_or(ops[i], "name") + ": " + fmt("%+.3f", delta) + " ms " + unit;
  }
  if (!labels.empty())
    h << "<div class='charts'>"
      << page.figs.add(
             "op_time_deltas", "ops whose time changed most",
             report::bar_chart("op " + time + " time change, ms " + unit + " (+ more, - less than the baseline)",
                               labels, deltas, "ms"),
             {largest})
      << "</div>";
  h << "<h3>Ops (" << time << " time " << unit << ", largest change first)</h3>";
  comparison_table(h, ops, "op");
  const json kernels = c.value("kernels", json::array());
  if (!kernels.empty()) {
    h << "<h3>Kernels (GPU time " << unit << ", largest change first)</h3>";
    comparison_table(h, kernels, "kernel");
  }
}

void ops_section(Page& page, const json& a) {
  std::ostringstream& h = page.h;
  const json ops = a.value("ops", json::array());
  const bool device = std::any_of(ops.begin(), ops.end(), [](const json& o) { return num_or(o, "device_us") > 0; });
  const char* key = device ? "self_device_us" : "self_cpu_us";
  std::vector<const json*> cpu_ops;  // ops proper: step spans and annotations hold the ops, not time of their own
  for (const auto& o : ops)
    if (str_or(o, "kind") == "cpu") cpu_ops.push_back(&o);
  std::stable_sort(cpu_ops.begin(), cpu_ops.end(),
                   [&](const json* x, const json* y) { return num_or(*x, key) > num_or(*y, key); });
  std::vector<std::string> names, top;
  std::vector<double> values;
  double sum = 0;
  for (const json* o : cpu_ops) sum += num_or(*o, key);
  for (size_t i = 0; i < cpu_ops.size() && i < 15; ++i) {
    names.push_back(str_or(*cpu_ops[i], "name"));
    values.push_back(num_or(*cpu_ops[i], key) * 1e-3);
    if (i < 3 && sum > 0)
      top.push_back(names.back() + ": " + fmt("%.3f", values.back()) + " ms (" +
                    fmt("%.0f%%", 100 * num_or(*cpu_ops[i], key) / sum) + " of all ops' " +
                    (device ? "self device" : "self CPU") + " time)");
  }
  h << "<h2>Ops</h2><p>The op table torch's <code>key_averages()</code> prints, from the traces (sorted by "
    << escape_html(str_or(a, "sort_by")) << ").</p>";
  if (!names.empty())
    h << "<div class='charts'>"
      << page.figs.add("time_breakdown", "time by op",
                       report::bar_chart(std::string("time by op (") + (device ? "self device" : "self CPU") + " ms)",
                                         names, values, "ms"),
                       top)
      << "</div>";
  h << "<table><tr><th>name</th><th>calls</th><th>self CPU ms</th><th>CPU ms</th><th>self device ms</th>"
       "<th>device ms</th><th>GFLOP</th><th>GFLOP/s</th><th>% peak</th><th>self CPU memory MiB</th></tr>";
  size_t n = 0;
  for (const auto& o : ops) {
    if (n++ == kRows) break;
    const double flops = num_or(o, "flops");
    h << "<tr><td>" << escape_html(str_or(o, "name")) << "</td><td>" << o.value("calls", 0) << "</td><td>"
      << ms(num_or(o, "self_cpu_us")) << "</td><td>" << ms(num_or(o, "cpu_us")) << "</td><td>"
      << ms(num_or(o, "self_device_us")) << "</td><td>" << ms(num_or(o, "device_us")) << "</td><td>"
      << (flops > 0 ? fmt("%.3f", flops * 1e-9) : "-") << "</td><td>"
      << (o["flops_per_s"].is_number() ? fmt("%.2f", o["flops_per_s"].get<double>() * 1e-9) : "-") << "</td><td>"
      << (o["peak_fraction"].is_number() ? fmt("%.1f%%", 100 * o["peak_fraction"].get<double>()) : "-") << "</td><td>"
      << fmt("%.2f", num_or(o, "self_cpu_memory_bytes") / (1024.0 * 1024)) << "</td></tr>";
  }
  h << "</table>";
}

void steps_section(Page& page, const json& a) {
  const json steps = a.value("steps", json::array());
  if (steps.empty()) return;
  std::ostringstream& h = page.h;
  const std::vector<std::pair<std::string, const char*>> parts = {{"data loading", "dataloader_us"},
                                                                  {"forward", "forward_us"},
                                                                  {"backward", "backward_us"},
                                                                  {"optimizer", "optimizer_us"},
                                                                  {"other", "other_us"}};
  std::vector<std::string> labels, names;
  std::vector<std::vector<double>> values(parts.size());
  std::vector<double> walls;
  for (const auto& s : steps) {
    labels.push_back(std::to_string(s.value("step", 0)));
    walls.push_back(num_or(s, "wall_us") * 1e-3);
    for (size_t k = 0; k < parts.size(); ++k) values[k].push_back(num_or(s, parts[k].second) * 1e-3);
  }
  for (const auto& p : parts) names.push_back(p.first);
  std::vector<double> sorted = walls;
  std::sort(sorted.begin(), sorted.end());
  const double median =
      sorted.size() % 2 ? sorted[sorted.size() / 2] : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
  h << "<h2>Steps</h2><div class='charts'>"
    << page.figs.add("step_phases", "each step's wall time by phase",
                     report::stacked_columns("ProfilerStep wall time by phase", labels, names, values, "step", "ms"),
                     {std::to_string(steps.size()) + " steps, median " + fmt("%.3f", median) + " ms"})
    << "</div><table><tr><th>step</th><th>wall ms</th><th>data ms</th><th>forward ms</th><th>backward ms</th>"
       "<th>optimizer ms</th><th>other ms</th><th>GPU busy</th></tr>";
  for (const auto& s : steps) {
    const double wall = num_or(s, "wall_us");
    h << "<tr><td>" << s.value("step", 0) << "</td><td>" << ms(wall) << "</td><td>" << ms(num_or(s, "dataloader_us"))
      << "</td><td>" << ms(num_or(s, "forward_us")) << "</td><td>" << ms(num_or(s, "backward_us")) << "</td><td>"
      << ms(num_or(s, "optimizer_us")) << "</td><td>" << ms(num_or(s, "other_us")) << "</td><td>"
      << (s["gpu_busy_us"].is_number() && wall > 0 ? fmt("%.1f%%", 100 * s["gpu_busy_us"].get<double>() / wall) : "-")
      << "</td></tr>";
  }
  h << "</table>";
}

void gpu_section(Page& page, const json& a) {
  const json ranks = a.value("ranks", json::array());
  std::vector<const json*> gpu;
  for (const auto& r : ranks)
    if (r["gpu"].is_object()) gpu.push_back(&r);
  if (gpu.empty()) return;
  std::ostringstream& h = page.h;
  std::vector<std::string> labels;
  const std::vector<std::pair<std::string, const char*>> parts = {{"compute", "compute_us"},
                                                                  {"non-compute", "non_compute_us"},
                                                                  {"idle", "idle_us"}};
  std::vector<std::vector<double>> values(parts.size());
  std::vector<std::string> key;
  for (const json* r : gpu) {
    const json& g = (*r)["gpu"];
    labels.push_back("rank " + std::to_string(r->value("rank", 0)));
    for (size_t k = 0; k < parts.size(); ++k) values[k].push_back(num_or(g, parts[k].second) * 1e-3);
    const double w = num_or(g, "window_us");
    if (w > 0 && key.size() < 4)
      key.push_back(labels.back() + ": compute " + fmt("%.1f%%", 100 * num_or(g, "compute_us") / w) + ", idle " +
                    fmt("%.1f%%", 100 * num_or(g, "idle_us") / w));
  }
  std::vector<std::string> names;
  for (const auto& p : parts) names.push_back(p.first);
  h << "<h2>GPU time per rank</h2><p>As Holistic Trace Analysis defines it: the window from the rank's first kernel "
       "to its last, split into compute, non-compute (only communication or memory kernels) and idle.</p>"
    << "<div class='charts'>"
    << page.figs.add("gpu_time", "GPU time per rank",
                     report::stacked_columns("GPU window per rank", labels, names, values, "rank", "ms"), key)
    << "</div>";
  for (const json* r : gpu) {
    const json& g = (*r)["gpu"];
    h << "<h3>rank " << r->value("rank", 0) << "</h3><table><tr><th>window ms</th><th>compute ms</th>"
      << "<th>non-compute ms</th><th>idle ms</th><th>communication overlapped</th></tr><tr><td>"
      << ms(num_or(g, "window_us")) << "</td><td>" << ms(num_or(g, "compute_us")) << "</td><td>"
      << ms(num_or(g, "non_compute_us")) << "</td><td>" << ms(num_or(g, "idle_us")) << "</td><td>"
      << ((*r)["comm_comp_overlap_pct"].is_number() ? fmt("%.1f%%", (*r)["comm_comp_overlap_pct"].get<double>())
                                                    : "no communication")
      << "</td></tr></table><table><tr><th>kernel type</th><th>ms</th></tr>";
    const json types = r->value("kernel_types_us", json::object());
    for (const auto& [type, v] : types.items())
      h << "<tr><td>" << escape_html(type) << "</td><td>" << ms(v.get<double>()) << "</td></tr>";
    h << "</table><table><tr><th>top kernel</th><th>type</th><th>calls</th><th>total ms</th><th>mean us</th></tr>";
    for (const auto& k : r->value("top_kernels", json::array()))
      h << "<tr><td>" << escape_html(str_or(k, "name")) << "</td><td>" << escape_html(str_or(k, "type")) << "</td><td>"
        << k.value("calls", 0) << "</td><td>" << ms(num_or(k, "total_us")) << "</td><td>"
        << fmt("%.2f", num_or(k, "mean_us")) << "</td></tr>";
    h << "</table>";
  }
}

void roofline_section(Page& page, const json& a) {
  if (!a.contains("roofline") || !a["roofline"].is_object()) return;
  const json& r = a["roofline"];
  const json ops = r.value("ops", json::array());
  if (ops.empty()) return;
  std::ostringstream& h = page.h;
  std::vector<report::RooflinePoint> points;
  std::vector<std::string> key;
  for (const auto& o : ops) {
    points.push_back({str_or(o, "name"), num_or(o, "intensity"), num_or(o, "flops_per_s")});
    if (key.size() < 3)
      key.push_back(str_or(o, "name") + ": " + fmt("%.2f", num_or(o, "intensity")) + " FLOP/byte, " +
                    str_or(o, "bound") + "-bound, " + fmt("%.1f%%", 100 * num_or(o, "bandwidth_fraction")) +
                    " of the bandwidth");
  }
  // The chart draws one compute ceiling: the half-precision one where ops ran in bf16 or f16 (the
  // f32 line would sit under them), else f32.
  const bool half = std::any_of(ops.begin(), ops.end(), [](const json& o) {
    return str_or(o, "precision") == "bf16" || str_or(o, "precision") == "f16";
  });
  const double peak = num_or(r, half ? "bf16_flops" : "f32_flops");
  key.push_back(str_or(r, "device") + ": " + (half ? "bf16 " : "f32 ") + fmt("%.1f", peak * 1e-9) +
                " GFLOP/s, memory " + fmt("%.1f", num_or(r, "memory_bytes_per_s") * 1e-9) + " GB/s");
  h << "<h2>Roofline</h2><p>Each op's FLOPs and bytes moved from the shapes and dtypes the trace recorded, "
       "against "
    << escape_html(str_or(r, "device")) << " (" << escape_html(str_or(r, "source"))
    << "; memory: " << escape_html(str_or(r, "memory_source")) << ").</p><div class='charts'>"
    << page.figs.add("roofline", "roofline: each op against the peaks",
                     report::roofline_chart("roofline: each op against the " + std::string(half ? "bf16" : "f32") +
                                                " peak and the bandwidth",
                                            points, peak, num_or(r, "memory_bytes_per_s")),
                     key)
    << "</div><table><tr><th>op</th><th>calls</th><th>ms</th><th>FLOP/byte</th><th>ridge</th><th>GFLOP/s</th>"
       "<th>GB/s</th><th>% peak</th><th>% bandwidth</th><th>bound</th></tr>";
  size_t n = 0;
  for (const auto& o : ops) {
    if (n++ == kRows) break;
    h << "<tr><td>" << escape_html(str_or(o, "name")) << "</td><td>" << o.value("calls", 0) << "</td><td>"
      << ms(num_or(o, "time_us")) << "</td><td>" << fmt("%.2f", num_or(o, "intensity")) << "</td><td>"
      << fmt("%.1f", num_or(o, "ridge")) << "</td><td>" << fmt("%.2f", num_or(o, "flops_per_s") * 1e-9) << "</td><td>"
      << fmt("%.2f", num_or(o, "bytes_per_s") * 1e-9) << "</td><td>"
      << (o["peak_fraction"].is_number() ? fmt("%.1f%%", 100 * o["peak_fraction"].get<double>()) : "-") << "</td><td>"
      << fmt("%.1f%%", 100 * num_or(o, "bandwidth_fraction")) << "</td><td>" << escape_html(str_or(o, "bound"))
      << "</td></tr>";
  }
  h << "</table>";
}

}  // namespace

namespace report {

bool is_analysis_run(const std::string& run_dir) { return fs::is_regular_file(fs::path(run_dir) / "analysis.json"); }

RunReport build_analysis_report(const std::string& run_dir) {
  const fs::path dir(run_dir);
  const fs::path file = dir / "analysis.json";
  std::ifstream in(file, std::ios::binary);
  check(in.good(), file.string() + ": cannot be read");
  json a;
  try {
    a = json::parse(in);
  } catch (const json::exception& e) { throw Error(file.string() + ": not valid JSON (" + e.what() + ")"); }
  check(a.is_object() && a.value("schema", std::string()) == "tach.analysis/1",
        file.string() + ": not a tach analyze result (schema tach.analysis/1)");
  Page page;
  const bool comparison = a.contains("comparison") && a["comparison"].is_object();
  const std::string title = std::string("tach report: ") + (comparison ? "traces compared" : "traces analysed") + " (" +
                            dir.filename().string() + ")";
  std::ostringstream& h = page.h;
  h << "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>" << escape_html(title) << "</title><style>"
    << page_style() << "</style></head><body><h1>" << escape_html(title) << "</h1>";
  header(page, dir, a);
  if (comparison) comparison_section(page, a["comparison"]);
  if (comparison) h << "<h2>This run</h2>";
  ops_section(page, a);
  steps_section(page, a);
  gpu_section(page, a);
  roofline_section(page, a);
  h << "<h2>Findings</h2><ul>";
  for (const auto& f : a.value("findings", json::array()))
    if (f.is_string()) {
      h << "<li>" << escape_html(f.get<std::string>()) << "</li>";
      page.findings.push_back(f.get<std::string>());
    }
  h << "</ul><p class='muted'>Written by tach " << escape_html(tach_version())
    << " from analysis.json; rewrite it any time with <code>tach report " << escape_html(run_dir)
    << "</code>.</p></body></html>\n";
  return {h.str(), title, page.about, page.figs.figures(), page.findings};
}

}  // namespace report

}  // namespace tach
