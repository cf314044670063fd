// tach report RUN_DIR: report.html, one self-contained page (inline styles and SVG, no script,
// nothing fetched) from what the run directory holds: summary.json, results.jsonl,
// accuracy.json, token_classification.json, question_answering.json, summary.txt and traces/.
// Every chart's numbers are also in a table.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "model/safetensors_writer.h"
#include "report/engine_report.h"
#include "report/figure_book.h"
#include "report/number_text.h"
#include "report/report_sections.h"
#include "report/svg_chart.h"
#include "tach/error.h"
#include "tach/parameter_count.h"
#include "tach/report.h"
#include "tach/slurm.h"
#include "tach/system_info.h"

namespace tach {

namespace fs = std::filesystem;
using json = nlohmann::json;
using report::escape_html;

namespace {

using report::fixed_text;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::optional<json> read_json(const fs::path& p) {
  if (!fs::is_regular_file(p)) return std::nullopt;
  try {
    return json::parse(read_file(p));
  } catch (const json::exception& e) { throw Error(p.string() + ": not valid JSON (" + e.what() + ")"); }
}

std::string mib(double bytes) { return fixed_text(bytes / (1024.0 * 1024.0), 1); }

// The report while it is composed: the page, and its pieces for the PNG files and the slides.
struct Page {
  std::ostringstream h;
  report::FigureBook figs;
  std::string title;
  std::vector<std::string> about, findings;  // plain text
};

// An HTML fragment as plain text: tags dropped, the entities escape_html writes read back.
std::string plain_text(const std::string& html) {
  std::string out;
  bool tag = false;
  for (size_t i = 0; i < html.size(); ++i) {
    const char c = html[i];
    if (c == '<') tag = true;
    else if (c == '>') tag = false;
    else if (!tag && c == '&') {
      const size_t end = html.find(';', i);
      const std::string e = end == std::string::npos ? "" : html.substr(i, end - i + 1);
      const char* plain = e == "&amp;"    ? "&"
                          : e == "&lt;"   ? "<"
                          : e == "&gt;"   ? ">"
                          : e == "&quot;" ? "\""
                          : e == "&#39;"  ? "'"
                          : e == "&nbsp;" ? " "
                                          : nullptr;
      if (plain) out += plain, i = end;
      else out += c;
    } else if (!tag) out += c;
  }
  return out;
}

// Non-empty lines of a text, trimmed of trailing spaces.
std::vector<std::string> text_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

const char* kStyle = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1200px;color:#222;padding:0 16px}
h1{font-size:22px} h2{font-size:18px;margin-top:30px;border-bottom:1px solid #ddd} h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0;font-variant-numeric:tabular-nums;display:block;overflow-x:auto;max-width:100%}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:right;white-space:nowrap} th{background:#f5f5f5}
td:first-child,th:first-child{text-align:left} .charts{display:flex;flex-wrap:wrap;gap:12px}
svg text{font-size:11px} .chart-title{font-size:13px;font-weight:600} dl{display:grid;grid-template-columns:max-content auto;gap:2px 14px}
dt{color:#555} dd{margin:0} pre{background:#f7f7f7;padding:10px;white-space:pre-wrap} .muted{color:#666}
)";

// A sweep run as a SLURM job array: each submission's job and what squeue still lists, and the
// grid's points with no result yet (what tach bench --resume --slurm would submit).
template <typename Row>
void slurm_rows(Page& page, const fs::path& dir, const Row& row) {
  for (const auto& line : slurm_status(dir.string())) row("SLURM", escape_html(line));
  std::vector<PointKey> missing;
  try {
    const SweepOutcome run = collect_bench(dir.string(), &missing);
    if (missing.empty()) return;
    std::string ids;
    for (size_t i = 0; i < missing.size() && i < 6; ++i) ids += (i ? ", " : "") + missing[i].id();
    if (missing.size() > 6) ids += ", ...";
    const std::string what = std::to_string(run.results.size()) + " of " +
                             std::to_string(run.results.size() + missing.size()) + " points are in; missing: " + ids;
    row("points", escape_html(what) + " (tach bench --resume " + escape_html(dir.string()) +
                      " --slurm submits them once the job has ended)");
    page.findings.push_back("Incomplete: " + what + ".");
  } catch (const Error& e) { row("points", "the grid could not be read back: " + escape_html(e.what())); }
}

// The thread counts the points ran with, in words ("1 and 2 threads", "1 thread (default)"): what
// the sweep measured, where the machine's count would say one number for a sweep over several.
// machine_threads stands in where no point recorded its count.
std::string threads_text(const std::vector<PointResult>& points, int machine_threads) {
  std::set<std::string> labels;
  std::set<int> counts;
  for (const auto& p : points) {
    labels.insert(threads_label(p));
    counts.insert(p.threads_used ? p.threads_used : p.key.threads);
  }
  if (labels.empty() || labels == std::set<std::string>{"default"})
    return machine_threads > 0 ? std::to_string(machine_threads) + (machine_threads == 1 ? " thread" : " threads")
                               : "the default threads";
  const std::string unit = counts == std::set<int>{1} ? " thread" : " threads";
  const std::string tail = " (default)";
  if (const std::string& l = *labels.begin();
      labels.size() == 1 && l.size() > tail.size() && l.compare(l.size() - tail.size(), tail.size(), tail) == 0)
    return l.substr(0, l.size() - tail.size()) + unit + tail;  // "1 thread (default)"
  std::string out;
  size_t i = 0;
  for (const auto& l : labels) {
    out += (i == 0 ? "" : i + 1 == labels.size() ? " and " : ", ") + l;
    ++i;
  }
  return out + unit;
}

void header_section(Page& page, const fs::path& dir, const std::optional<json>& summary,
                    const std::optional<json>& config, const std::vector<PointResult>& points) {
  std::ostringstream& h = page.h;
  // config.json's model: a name (bench runs) or an object describing it (train runs).
  std::string model = dir.filename().string();
  if (config && config->contains("model")) {
    const json& m = (*config)["model"];
    if (m.is_string()) model = m.get<std::string>();
    else if (m.is_object()) model = m.value("spec", m.value("source", model));
  }
  // A tach shrink variant's own run: the variant of the base model it measured (variant.json).
  const std::optional<json> variant = read_json(dir / "variant.json");
  if (variant) model = variant->value("variant", model) + " of " + variant->value("base_model", model);
  page.title = "tach report: " + model;
  h << "<h1>" << escape_html(page.title) << "</h1><dl>";
  auto row = [&](const std::string& k, const std::string& v) {
    h << "<dt>" << k << "</dt><dd>" << v << "</dd>";
    page.about.push_back(plain_text(k + ": " + v));
  };
  row("run directory", "<code>" + escape_html(fs::absolute(dir).string()) + "</code>");
  if (variant) row("variant", escape_html(variant->value("made", std::string())));
  if (summary && summary->contains("models") && (*summary)["models"].is_array())
    for (const auto& m : (*summary)["models"])
      row("model", escape_html(m.value("architecture", std::string())) + ", " +
                       parameter_count_text(m.value("parameters", int64_t(0))) + " parameters, weights " +
                       escape_html(m.value("weights_dtype", std::string())) + ", " +
                       escape_html(m.value("task", std::string())) + "; " +
                       escape_html(m.value("source", std::string())));
  if (config && config->contains("model") && (*config)["model"].is_object()) {  // a train run describes its model here
    const json& m = (*config)["model"];
    row("model", escape_html(m.value("architecture", std::string())) + ", " +
                     parameter_count_text(m.value("parameters", int64_t(0))) + " parameters; " +
                     escape_html(m.value("source", std::string())));
    const json notes = m.value("notes", json::array());
    for (const auto& n : notes) row("note", escape_html(n.get<std::string>()));
  }
  if (config && config->contains("machine") && (*config)["machine"].is_object()) {
    const json& m = (*config)["machine"];
    row("machine", escape_html(m.value("cpu", std::string())) + ", " + threads_text(points, m.value("threads", 0)) +
                       ", ISA " + escape_html(m.value("isa", std::string())) + ", GEMM " +
                       escape_html(m.value("gemm", std::string())));
  }
  if (summary && summary->contains("machine") && (*summary)["machine"].is_object()) {
    const json& m = (*summary)["machine"];
    std::string w;
    const json warnings = m.value("warnings", json::array());
    for (const auto& x : warnings) w += "<br>warning: " + escape_html(x.get<std::string>());
    row("machine", escape_html(m.value("cpu", std::string())) + ", " + std::to_string(m.value("logical_cores", 0)) +
                       " logical cores, " + threads_text(points, m.value("threads", 0)) + ", ISA " +
                       escape_html(m.value("isa", std::string())) + ", GEMM " +
                       escape_html(m.value("gemm_library", std::string())) + ", " +
                       mib(m.value("memory_total_bytes", 0.0) / 1024) + " GiB" + w);
  }
  // The measured ceilings the roofline verdicts used (from the first profiled point, if any).
  std::optional<json> prof = read_json(dir / "profile.json");
  if (!prof && fs::is_directory(dir / "traces"))
    for (const auto& e : fs::directory_iterator(dir / "traces"))
      if (!prof && fs::exists(e.path() / "profile.json")) prof = read_json(e.path() / "profile.json");
  if (prof && prof->contains("ceilings")) {
    const json& c = (*prof)["ceilings"];
    row("ceilings", "GEMM f32 " + fixed_text(c.value("gemm_f32_flops_per_s", 0.0) / 1e9, 1) + " GFLOP/s, bf16 " +
                        fixed_text(c.value("gemm_bf16_flops_per_s", 0.0) / 1e9, 1) + " GFLOP/s, int8 " +
                        fixed_text(c.value("gemm_int8_ops_per_s", 0.0) / 1e9, 1) + " GOP/s, memory " +
                        fixed_text(c.value("memory_bytes_per_s", 0.0) / 1e9, 1) + " GB/s (" +
                        escape_html(c.value("provenance", std::string())) + ")");
  }
  if (summary && summary->value("kind", std::string()) == "eval")
    row("method", escape_html(summary->value("method", std::string())));
  if (summary && summary->contains("stopping_rule")) {
    const bool train = summary->value("kind", std::string()) == "train";
    const int warmups = summary->value("warmup_runs", 0);
    row("method", std::to_string(warmups) + (train ? " warm-up step" : " warm-up run") + (warmups == 1 ? "" : "s") +
                      " (not measured), then " + escape_html(summary->value("stopping_rule", std::string())) +
                      (train ? "; latency is the whole optimizer step (data, forward with the loss, backward, "
                               "clipping, AdamW), wall clock (steady_clock); each point builds its own model"
                             : "; latency per batch is the model forward alone, wall clock (steady_clock)") +
                      "; throughput: " + escape_html(kThroughputDefinition));
  }
  std::string first, last;
  for (const auto& p : points)
    if (!p.finished_at.empty()) {
      if (first.empty() || p.finished_at < first) first = p.finished_at;
      if (p.finished_at > last) last = p.finished_at;
    }
  if (!first.empty())
    row("date", escape_html(first) + (last != first ? " to " + escape_html(last) : "") + " (UTC, points finished)");
  if (fs::is_directory(dir / "slurm")) slurm_rows(page, dir, row);
  row("tach", escape_html(tach_version()) + " (the build writing this report)");
  h << "</dl>";
}

void accuracy_section(Page& page, const json& acc) {
  std::ostringstream& h = page.h;
  h << "<h2>Accuracy</h2><p>" << escape_html(acc.value("dataset", std::string())) << "</p>";
  const json& results = acc.at("results");
  h << "<table><tr><th>device</th><th>dtype</th><th>examples</th><th>accuracy</th><th>macro-F1</th><th>chance "
       "(majority label)</th><th>samples/s</th></tr>";
  for (const auto& r : results)
    h << "<tr><td>" << escape_html(r.value("device", std::string())) << "</td><td>"
      << escape_html(r.value("dtype", std::string())) << "</td><td>" << r.value("examples", 0) << "</td><td>"
      << fixed_text(r.value("accuracy", 0.0), 4) << "</td><td>" << fixed_text(r.value("macro_f1", 0.0), 4)
      << "</td><td>" << fixed_text(r.value("chance_accuracy", 0.0), 4) << "</td><td>"
      << fixed_text(r.value("samples_per_s", 0.0), 1) << "</td></tr>";
  h << "</table>";
  // Per class and the confusion matrix for every device and dtype (each at its largest sample
  // size, the last it ran), each titled with its own.
  std::vector<const json*> last_of_group;
  const auto group = [](const json& r) {
    return r.value("device", std::string()) + "/" + r.value("dtype", std::string());
  };
  for (const auto& r : results) {
    auto same =
        std::find_if(last_of_group.begin(), last_of_group.end(), [&](const json* g) { return group(*g) == group(r); });
    if (same == last_of_group.end()) last_of_group.push_back(&r);
    else *same = &r;
  }
  for (size_t k = 0; k < last_of_group.size(); ++k) {
    const json& last = *last_of_group[k];
    const std::string which = last.value("dtype", std::string()).empty() ? std::string() : group(last);
    const std::string examples = std::to_string(last.value("examples", 0)) + " examples";
    std::vector<std::string> labels;
    h << "<h3>Per class and confusion matrix: " << escape_html(which.empty() ? examples : which + ", " + examples)
      << "</h3>";
    h << "<table><tr><th>label</th><th>precision</th><th>recall</th><th>F1</th><th>support</th></tr>";
    const json per_class = last.value("per_class", json::array());
    for (const auto& c : per_class) {
      labels.push_back(c.value("label", std::string()));
      h << "<tr><td>" << escape_html(labels.back()) << "</td><td>" << fixed_text(c.value("precision", 0.0), 4)
        << "</td><td>" << fixed_text(c.value("recall", 0.0), 4) << "</td><td>" << fixed_text(c.value("f1", 0.0), 4)
        << "</td><td>" << c.value("support", 0) << "</td></tr>";
    }
    h << "</table>";
    const auto confusion = last.value("confusion", std::vector<std::vector<int64_t>>{});
    if (confusion.empty()) continue;
    std::vector<std::vector<double>> level;
    std::vector<std::vector<std::string>> text;
    std::vector<std::string> rows, cols;
    for (size_t i = 0; i < confusion.size(); ++i) {
      int64_t total = 0;
      for (auto v : confusion[i]) total += v;
      level.emplace_back();
      text.emplace_back();
      for (auto v : confusion[i]) {
        level.back().push_back(total ? double(v) / double(total) : 0);
        text.back().push_back(std::to_string(v));
      }
      rows.push_back("true " + (i < labels.size() ? labels[i] : std::to_string(i)));
      cols.push_back("pred " + (i < labels.size() ? labels[i] : std::to_string(i)));
    }
    // The first keeps the figure name it always had; the others carry their device and dtype.
    std::string id = k == 0 ? "confusion_matrix" : "confusion_matrix_";
    if (k > 0)
      for (char ch : which) id += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
    h << page.figs.add(
        id, "confusion matrix" + (which.empty() ? std::string() : " " + which),
        report::heatmap("confusion matrix" + (which.empty() ? std::string() : " (" + which + ")") +
                            " (counts; shade = share of the true label's row)",
                        rows, cols, level, text),
        {(which.empty() ? std::string() : which + ": ") + "accuracy " + fixed_text(last.value("accuracy", 0.0), 4) +
         ", macro-F1 " + fixed_text(last.value("macro_f1", 0.0), 4) + " over " + examples});
  }
}

// profile.json's words and numbers: the roofline, the bottlenecks, the op-sum against the step,
// the leak verdict.
// `point` names the profiled point; `suffix` tells its figures from other points' ("" for the first).
void profile_summary(Page& page, const json& p, const std::string& point, const std::string& suffix) {
  std::ostringstream& h = page.h;
  const json& c = p.at("ceilings");
  std::vector<report::RooflinePoint> pts;
  for (const auto& op : p.at("ops")) {
    const double ms = op.value("self_ms", 0.0), flops = op.value("flops", 0.0), bytes = op.value("bytes", 0.0);
    if (ms > 0 && flops > 0 && bytes > 0)
      pts.push_back({op.value("op", std::string()), flops / bytes, flops / (ms * 1e-3)});
  }
  std::vector<std::string> top;  // the three ops with the most self time, with their verdicts
  for (const auto& op : p.at("ops")) {
    if (top.size() == 3) break;
    top.push_back(op.value("op", std::string()) + ": " + fixed_text(op.value("self_ms", 0.0), 2) + " ms self, " +
                  op.value("verdict", std::string()) + ", " + fixed_text(100 * op.value("achieved_fraction", 0.0), 0) +
                  "% of its ceiling");
  }
  top.push_back("ceilings: GEMM f32 " + fixed_text(c.value("gemm_f32_flops_per_s", 0.0) / 1e9, 1) +
                " GFLOP/s, memory " + fixed_text(c.value("memory_bytes_per_s", 0.0) / 1e9, 1) + " GB/s");
  h << page.figs.add("roofline" + suffix, "roofline: " + point,
                     report::roofline_chart("roofline: each op against the measured ceilings", pts,
                                            c.value("gemm_f32_flops_per_s", 0.0), c.value("memory_bytes_per_s", 0.0)),
                     top);
  h << "<p class='muted'>Ceilings (f32 GEMM peak, memory bandwidth): " << escape_html(c.value("method", std::string()))
    << "; " << escape_html(c.value("provenance", std::string())) << "</p>";
  h << "<table><tr><th>op</th><th>calls</th><th>self ms</th><th>FLOP/byte</th><th>GFLOP/s</th><th>verdict</th>"
       "<th>of its ceiling</th></tr>";
  for (const auto& op : p.at("ops")) {
    const double ms = op.value("self_ms", 0.0), flops = op.value("flops", 0.0), bytes = op.value("bytes", 0.0);
    h << "<tr><td>" << escape_html(op.value("op", std::string())) << "</td><td>" << op.value("calls", 0) << "</td><td>"
      << fixed_text(ms, 4) << "</td><td>" << (bytes > 0 ? fixed_text(flops / bytes, 2) : "–") << "</td><td>"
      << (ms > 0 ? fixed_text(flops / (ms * 1e-3) / 1e9, 2) : "–") << "</td><td>"
      << escape_html(op.value("verdict", std::string())) << "</td><td>"
      << fixed_text(100 * op.value("achieved_fraction", 0.0), 0) << "%</td></tr>";
  }
  h << "</table>";
  const json& st = p.at("step_ms");
  const double wall = st.value("wall", 0.0);
  auto share = [&](double v) { return wall > 0 ? " (" + fixed_text(100 * v / wall, 1) + "%)" : std::string(); };
  h << "<table><tr><th>step time (" << escape_html(st.value("method", std::string())) << ")</th><th>ms</th></tr>"
    << "<tr><td>step wall time</td><td>" << fixed_text(wall, 3) << "</td></tr><tr><td>ops (the op-sum)</td><td>"
    << fixed_text(st.value("ops", 0.0), 3) << share(st.value("ops", 0.0))
    << "</td></tr><tr><td>in modules, between ops (the gap)</td><td>"
    << fixed_text(st.value("in_modules_between_ops", 0.0), 3) << share(st.value("in_modules_between_ops", 0.0))
    << "</td></tr><tr><td>outside the model</td><td>" << fixed_text(st.value("outside_model", 0.0), 3)
    << share(st.value("outside_model", 0.0)) << "</td></tr></table>";
  h << "<p><b>Top bottlenecks</b></p><ol>";
  for (const auto& b : p.at("bottlenecks")) {
    h << "<li>" << escape_html(b.get<std::string>()) << "</li>";
    page.findings.push_back(point + ": " + b.get<std::string>());
  }
  h << "</ol><p><b>Memory</b>: " << (p.at("memory").value("leak", false) ? "<b>growth across steps</b>: " : "")
    << escape_html(p.at("memory").value("explanation", std::string())) << "</p>";
}

// One profiled point: profile.json's summary, then its op and module tables (the CSVs) as bars and tables.
void profile_section(Page& page, const fs::path& traces) {
  std::ostringstream& h = page.h;
  std::vector<fs::path> dirs;
  if (fs::exists(traces / "ops_by_op.csv")) dirs.push_back(traces);  // a tach profile output directory itself
  for (const auto& e : fs::directory_iterator(traces))
    if (e.is_directory() && fs::exists(e.path() / "ops_by_op.csv")) dirs.push_back(e.path());
  if (dirs.empty()) return;
  std::sort(dirs.begin(), dirs.end());
  h << "<h2>Profile</h2><p>Op and module tables of the profiled points. The traces open in "
       "<a href='https://ui.perfetto.dev'>ui.perfetto.dev</a> (Open trace file, then the <code>trace.json</code> "
       "linked below; nothing is uploaded) or chrome://tracing.</p>";
  for (const auto& d : dirs) {
    h << "<h3>" << escape_html(d.filename().string()) << "</h3><p><a href='"
      << escape_html(fs::relative(d / "trace.json", d == traces ? traces : traces.parent_path()).string())
      << "'>trace.json</a></p>";
    // The first point's figures take the plain names (roofline.png), the others' add their point.
    const std::string suffix = d == dirs.front() ? "" : "_" + report::figure_file_stem(d.filename().string());
    if (const auto p = read_json(d / "profile.json")) profile_summary(page, *p, d.filename().string(), suffix);
    for (const char* table : {"ops_by_op.csv", "ops_by_module.csv"}) {
      std::istringstream in(read_file(d / table));
      std::string line;
      std::getline(in, line);  // header: name,calls,self_ms,total_ms,...,verdict,achieved_fraction
      std::vector<std::string> names;
      std::vector<double> ms;
      std::vector<std::vector<std::string>> rows;
      while (std::getline(in, line) && rows.size() < 15) {
        std::vector<std::string> f;
        std::string cell;
        std::istringstream ls(line);
        while (std::getline(ls, cell, ',')) f.push_back(cell);
        if (f.size() < 4) continue;
        names.push_back(f[0]);
        ms.push_back(std::atof(f[table == std::string("ops_by_op.csv") ? 2 : 3].c_str()));
        rows.push_back(f);
      }
      const bool ops = table == std::string("ops_by_op.csv");
      const std::string title = ops ? "time by op (self ms over the profiled steps)" : "time by module (total ms)";
      double sum = 0;
      for (double v : ms) sum += v;
      // The largest three: ops as shares of the listed self time; modules nest, so their totals only.
      std::vector<std::string> largest;
      for (size_t i = 0; i < names.size() && i < 3 && sum > 0; ++i)
        largest.push_back(names[i] + ": " + fixed_text(ms[i], 2) + " ms" +
                          (ops ? " (" + fixed_text(100 * ms[i] / sum, 0) + "% of the self time of the ops listed)"
                               : " in all, its children included"));
      h << page.figs.add((ops ? "time_breakdown" : "time_by_module") + suffix, title + ": " + d.filename().string(),
                         report::bar_chart(title, names, ms, "ms"), largest);
      h << "<table><tr><th>" << (ops ? "op" : "module") << "</th><th>calls</th><th>self ms</th><th>total ms</th>"
        << "<th>GFLOP/s</th><th>GB/s</th><th>verdict</th></tr>";
      for (const auto& f : rows)
        h << "<tr><td>" << escape_html(f[0]) << "</td><td>" << escape_html(f[1]) << "</td><td>" << escape_html(f[2])
          << "</td><td>" << escape_html(f[3]) << "</td><td>" << (f.size() > 8 ? escape_html(f[8]) : "") << "</td><td>"
          << (f.size() > 9 ? escape_html(f[9]) : "") << "</td><td style='text-align:left'>"
          << (f.size() > 12 ? escape_html(f[12]) : "") << "</td></tr>";
      h << "</table>";
    }
  }
}

// A CSV file (the run's own: a header row, fields quoted with "" where they hold commas) as a table.
void csv_table(std::ostringstream& h, const fs::path& path) {
  std::istringstream csv(read_file(path));
  std::string line;
  bool header = true;
  h << "<table>";
  while (std::getline(csv, line)) {
    h << "<tr>";
    std::string cell;
    bool quoted = false;
    auto emit = [&] {
      h << (header ? "<th>" : "<td>") << escape_html(cell) << (header ? "</th>" : "</td>");
      cell.clear();
    };
    for (size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (c == '"' && quoted && i + 1 < line.size() && line[i + 1] == '"') cell += '"', ++i;
      else if (c == '"') quoted = !quoted;
      else if (c == ',' && !quoted) emit();
      else cell += c;
    }
    emit();
    h << "</tr>";
    header = false;
  }
  h << "</table>";
}

// monitor.csv (tach monitor -o RUN_DIR/monitor.csv -- ...): each column over time, and the whole
// timeline as a table under a disclosure.
void monitor_section(Page& page, const fs::path& csv_path) {
  std::ostringstream& h = page.h;
  std::istringstream in(read_file(csv_path));
  std::string line;
  std::vector<std::string> cols;
  std::vector<std::vector<double>> rows;
  auto split = [](const std::string& l) {
    std::vector<std::string> f;
    std::string cell;
    std::istringstream ls(l);
    while (std::getline(ls, cell, ',')) f.push_back(cell);
    return f;
  };
  if (!std::getline(in, line)) return;
  cols = split(line);
  while (std::getline(in, line)) {
    const auto f = split(line);
    if (f.size() != cols.size()) continue;
    std::vector<double> r;
    for (const auto& x : f) r.push_back(std::atof(x.c_str()));
    rows.push_back(r);
  }
  if (rows.empty() || cols.empty() || cols[0] != "t_s") return;
  h << "<h2>Monitor timeline</h2><p class='muted'>From " << escape_html(csv_path.filename().string()) << " ("
    << rows.size() << " samples; energy columns are -1 where unavailable).</p><div class='charts'>";
  for (size_t c = 1; c < cols.size(); ++c) {
    const bool bytes = cols[c].size() > 6 && cols[c].compare(cols[c].size() - 6, 6, "_bytes") == 0;
    report::Series s;
    s.name = cols[c];
    for (const auto& r : rows)
      if (r[c] >= 0) s.x.push_back(r[0]), s.y.push_back(bytes ? r[c] / 1048576.0 : r[c]);
    if (s.x.empty()) continue;
    report::LineChartSpec spec;
    spec.title = cols[c];
    spec.x_label = "seconds since the command started";
    spec.y_label = bytes ? cols[c].substr(0, cols[c].size() - 6) + " (MiB)" : cols[c];
    h << page.figs.add("monitor_" + report::figure_file_stem(cols[c]), "monitor: " + cols[c],
                       report::line_chart(spec, {s}));
  }
  h << "</div><details><summary>every sample</summary><table><tr>";
  for (const auto& c : cols) h << "<th>" << escape_html(c) << "</th>";
  h << "</tr>";
  for (const auto& r : rows) {
    h << "<tr>";
    for (double v : r) h << "<td>" << fixed_text(v, std::abs(v) < 100 ? 3 : 0) << "</td>";
    h << "</tr>";
  }
  h << "</table></details>";
}

// A tach train run's steps.jsonl: one line per optimizer step, and the evaluations as extra lines
// (those with an eval_loss).
struct TrainingLog {
  std::vector<json> steps, evals;
};

TrainingLog read_training_log(const fs::path& path) {
  TrainingLog log;
  std::istringstream in(read_file(path));
  std::string line;
  while (std::getline(in, line)) {
    if (line.find('{') == std::string::npos) continue;
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception&) {
      continue;  // a torn last line after a kill
    }
    const json& m = j.value("metrics", json::object());
    (m.contains("eval_loss") ? log.evals : log.steps).push_back(j);
  }
  return log;
}

// One metric of the logged steps against the optimizer step (counted from 1), times scale.
report::Series step_series(const std::vector<json>& from, const std::string& name, const std::string& key,
                           double scale) {
  report::Series s;
  s.name = name;
  for (const auto& j : from)
    if (j["metrics"].contains(key)) {
      s.x.push_back(j.value("step", 0.0) + 1);
      s.y.push_back(j["metrics"].value(key, 0.0) * scale);
    }
  return s;
}

std::string step_chart(const std::string& title, const std::string& y, const std::vector<report::Series>& s,
                       bool zero = true) {
  report::LineChartSpec spec;
  spec.title = title;
  spec.x_label = "optimizer step";
  spec.y_label = y;
  spec.zero_y = zero;
  return report::line_chart(spec, s);
}

// A training run's figures are named after the combination in a comparison ("Training: lora-fused"):
// in their titles and their files, so that the combinations' PNG files do not overwrite each other.
struct TrainingFigureNames {
  std::string of_run, file_suffix;
};

TrainingFigureNames training_figure_names(const std::string& heading) {
  const std::string combination = heading == "Training" ? "" : heading.substr(heading.find(": ") + 2);
  return {combination.empty() ? "" : ": " + combination,
          combination.empty() ? "" : "_" + report::figure_file_stem(combination)};
}

// How training went: the loss, the evaluations where there are some, and the throughput.
void training_progress_figures(Page& page, const TrainingLog& log, const TrainingFigureNames& names) {
  const report::Series loss = step_series(log.steps, "train loss", "loss", 1),
                       tokens = step_series(log.steps, "tokens/s", "tokens_per_s", 1);
  page.h << page.figs.add(
      "training_loss" + names.file_suffix, "training loss" + names.of_run,
      step_chart("training loss", "loss (per step's batch)", {loss}, false),
      {loss.y.empty() ? "no loss recorded"
                      : "loss " + fixed_text(loss.y.front(), 4) + " at step 1, " + fixed_text(loss.y.back(), 4) +
                            " at step " + fixed_text(loss.x.back(), 0)});
  if (!log.evals.empty()) {
    const report::Series accuracy = step_series(log.evals, "eval accuracy", "eval_accuracy", 1);
    page.h << page.figs.add(
        "evaluation" + names.file_suffix, "evaluation" + names.of_run,
        step_chart("evaluation", "loss, accuracy", {step_series(log.evals, "eval loss", "eval_loss", 1), accuracy}),
        {accuracy.y.empty()
             ? "no accuracy recorded"
             : "eval accuracy " + fixed_text(accuracy.y.back(), 4) + " at step " + fixed_text(accuracy.x.back(), 0)});
  }
  page.h << page.figs.add("training_throughput" + names.file_suffix, "training throughput" + names.of_run,
                          step_chart("throughput", "tokens/s (real tokens, per step)", {tokens}));
}

// The step split into its phases, stacked (every step, or an even sample of 120 of them), with each
// phase's median over the charted steps.
void step_phase_figure(Page& page, const std::vector<json>& steps, const TrainingFigureNames& names) {
  std::vector<std::pair<std::string, std::string>> phases = {{"data", "data_ms"},
                                                             {"forward", "forward_ms"},
                                                             {"backward", "backward_ms"},
                                                             {"optimizer", "optimizer_ms"}};
  // A distilled run's teacher (tach train --distill-from) is a phase of its own, after the data.
  if (!steps.empty() && steps.front()["metrics"].contains("teacher_ms"))
    phases.insert(phases.begin() + 1, {"teacher", "teacher_ms"});
  std::vector<std::string> xl, labels;
  std::vector<std::vector<double>> vals(phases.size());
  const size_t stride = std::max<size_t>(1, (steps.size() + 119) / 120);
  for (size_t i = 0; i < steps.size(); i += stride) {
    xl.push_back(std::to_string(steps[i].value("step", 0) + 1));
    for (size_t k = 0; k < phases.size(); ++k) vals[k].push_back(steps[i]["metrics"].value(phases[k].second, 0.0));
  }
  for (const auto& p : phases) labels.push_back(p.first);
  std::vector<std::string> phase_medians;
  for (size_t k = 0; k < phases.size(); ++k) {
    std::vector<double> v = vals[k];
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    if (!v.empty())
      phase_medians.push_back(phases[k].first + ": median " + fixed_text(v[v.size() / 2], 2) + " ms per step");
  }
  page.h << page.figs.add(
      "time_breakdown" + names.file_suffix, "step time by phase" + names.of_run,
      report::stacked_columns(
          "step time by phase" + std::string(stride > 1 ? " (every " + std::to_string(stride) + "th step)" : ""), xl,
          labels, vals, "optimizer step", "ms, wall clock"),
      phase_medians);
}

// The allocator's bytes by category at each step's end.
void training_memory_figure(Page& page, const std::vector<json>& steps, const TrainingFigureNames& names) {
  std::vector<report::Series> mem;
  for (const char* cat : {"weights", "activations", "gradients", "optimizer_state", "workspace", "other"})
    mem.push_back(step_series(steps, cat, std::string("memory_") + cat + "_bytes", 1.0 / 1048576.0));
  page.h << page.figs.add("memory_usage" + names.file_suffix, "memory by category" + names.of_run,
                          step_chart("memory by category (allocator, at each step's end)", "MiB", mem));
}

// The charts' numbers, step by step, under a disclosure; each evaluation with the scores its task has.
void training_steps_table(std::ostringstream& h, const TrainingLog& log) {
  h << "<details><summary>every step's numbers</summary><table><tr><th>step</th><th>loss</th><th>lr</th>"
       "<th>grad norm</th><th>step ms</th><th>data ms</th><th>forward ms</th><th>backward ms</th><th>optimizer ms</th>"
       "<th>tokens/s</th><th>allocator MiB</th></tr>";
  for (const auto& j : log.steps) {
    const json& m = j["metrics"];
    h << "<tr><td>" << j.value("step", 0) + 1 << "</td><td>" << fixed_text(m.value("loss", 0.0), 5) << "</td><td>"
      << m.value("lr", 0.0) << "</td><td>" << fixed_text(m.value("grad_norm", 0.0), 4) << "</td><td>"
      << fixed_text(m.value("step_ms", 0.0), 2) << "</td><td>" << fixed_text(m.value("data_ms", 0.0), 3) << "</td><td>"
      << fixed_text(m.value("forward_ms", 0.0), 2) << "</td><td>" << fixed_text(m.value("backward_ms", 0.0), 2)
      << "</td><td>" << fixed_text(m.value("optimizer_ms", 0.0), 3) << "</td><td>"
      << fixed_text(m.value("tokens_per_s", 0.0), 1) << "</td><td>" << mib(m.value("memory_total_bytes", 0.0))
      << "</td></tr>";
  }
  for (const auto& j : log.evals) {
    const json& m = j["metrics"];
    // Only the scores the task has (a masked LM has perplexity, no accuracy): an absent one is not 0.
    std::string scores;
    for (const auto& [key, label] : {std::pair{"eval_accuracy", "accuracy"}, std::pair{"eval_macro_f1", "macro-F1"},
                                     std::pair{"eval_perplexity", "perplexity"}})
      if (m.contains(key) && m[key].is_number())
        scores += (scores.empty() ? "" : ", ") + std::string(label) + " " + fixed_text(m[key].get<double>(), 4);
    h << "<tr><td>" << j.value("step", 0) + 1 << " (eval)</td><td>" << fixed_text(m.value("eval_loss", 0.0), 5)
      << "</td><td colspan='9' style='text-align:left'>" << scores << "</td></tr>";
  }
  h << "</table></details>";
}

// summary.json as a table: the method (config.json's where the summary lacks it), the medians, the
// allocator's peak by category, and a data-parallel run's ranks.
void training_summary_table(Page& page, const fs::path& dir) {
  const auto sum = read_json(dir / "summary.json");
  if (!sum) return;
  std::ostringstream& h = page.h;
  h << "<table><tr><th>summary</th><th></th></tr>";
  auto row = [&](const std::string& k, const std::string& v) {
    h << "<tr><td>" << k << "</td><td>" << v << "</td></tr>";
  };
  std::string method = sum->value("method", std::string());
  if (const auto cfg = read_json(dir / "config.json"); method.empty() && cfg && cfg->contains("options"))
    method = (*cfg)["options"].value("method", std::string());
  row("method / exec",
      escape_html(method.empty() ? "full" : method) + " / " + escape_html(sum->value("exec", std::string())));
  row("steps", std::to_string(sum->value("steps", 0)));
  row("step ms (median)", fixed_text(sum->value("step_ms_median", 0.0), 1));
  row("tokens/s (median)", fixed_text(sum->value("tokens_per_s_median", 0.0), 1));
  if (sum->contains("phase_ms_median"))
    for (const auto& [k, v] : (*sum)["phase_ms_median"].items())
      if (v.is_number()) row(escape_html(k) + " ms (median)", fixed_text(v.get<double>(), 2));
  if (sum->contains("memory_peak_bytes") && (*sum)["memory_peak_bytes"].is_object()) {
    const json& m = (*sum)["memory_peak_bytes"];
    row("peak memory MiB (allocator, all categories)", mib(m.value("total", 0.0)));
    const json by_category = m.value("by_category", json::object());
    for (const auto& [k, v] : by_category.items())
      if (v.is_number()) row("&nbsp;&nbsp;" + escape_html(k) + " MiB", mib(v.get<double>()));
  }
  row("training time s", fixed_text(sum->value("train_seconds", 0.0), 1));
  h << "</table>";
  if (sum->contains("distributed") && (*sum)["distributed"].is_object())
    report::distributed_section(h, page.figs, (*sum)["distributed"]);
}

// A tach train run: steps.jsonl (one line per step; evaluations as extra lines), epoch_results.csv,
// summary.json. Read as files (the run directory's schema), not through the trainer's code.
void training_section(Page& page, const fs::path& dir, const std::string& heading) {
  const TrainingLog log = read_training_log(dir / "steps.jsonl");
  page.h << "<h2>" << escape_html(heading) << "</h2>";
  if (log.steps.empty()) {
    page.h << "<p class='muted'>No steps recorded.</p>";
    return;
  }
  const TrainingFigureNames names = training_figure_names(heading);
  page.h << "<div class='charts'>";
  training_progress_figures(page, log, names);
  step_phase_figure(page, log.steps, names);
  training_memory_figure(page, log.steps, names);
  page.h << "</div>";
  training_steps_table(page.h, log);
  training_summary_table(page, dir);
  if (fs::exists(dir / "epoch_results.csv")) csv_table(page.h, dir / "epoch_results.csv");
}

// tach train --method a,b --exec c,d: comparison.csv as a table, then each combination's run.
void comparison_section(Page& page, const fs::path& dir) {
  std::ostringstream& h = page.h;
  h << "<h2>Method × exec comparison</h2>";
  if (fs::exists(dir / "comparison.csv")) csv_table(h, dir / "comparison.csv");
  std::vector<fs::path> subs;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && fs::exists(e.path() / "steps.jsonl")) subs.push_back(e.path());
  std::sort(subs.begin(), subs.end());
  for (const auto& d : subs) training_section(page, d, "Training: " + d.filename().string());
}

}  // namespace

const char* report::page_style() { return kStyle; }

RunReport build_run_report(const std::string& run_dir) {
  const fs::path dir(run_dir);
  check(fs::is_directory(dir), run_dir + ": not a directory");
  if (report::is_analysis_run(run_dir)) return report::build_analysis_report(run_dir);
  const auto summary = read_json(dir / "summary.json");
  const auto config = read_json(dir / "config.json");
  const std::vector<PointResult> points = read_run_results(run_dir);
  const auto accuracy = read_json(dir / "accuracy.json");
  const auto token_eval = read_json(dir / "token_classification.json");
  const auto qa_eval = read_json(dir / "question_answering.json");
  const bool profile_dir = fs::exists(dir / "ops_by_op.csv");  // what tach profile writes
  const bool training = fs::exists(dir / "steps.jsonl");
  const bool comparison = summary && summary->value("schema", std::string()) == "tach.train_comparison/1";
  check(!points.empty() || accuracy || token_eval || qa_eval || profile_dir || training || comparison,
        run_dir +
            ": no results.jsonl, accuracy.json, token_classification.json, question_answering.json, steps.jsonl, "
            "ops_by_op.csv or analysis.json: nothing to report (is it a tach "
            "bench, eval, run, train, profile or analyze directory?)");
  Page page;
  std::ostringstream& h = page.h;
  h << "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>tach report: "
    << escape_html(dir.filename().string()) << "</title><style>" << kStyle << "</style></head><body>";
  header_section(page, dir, summary, config, points);
  const bool train_sweep = !points.empty() && points.front().key.kind == "train";
  if (train_sweep) report::train_sweep_section(h, page.figs, points, dir);
  else if (!points.empty()) report::sweep_section(page.h, page.figs, points);
  report::speedup_section(h, page.figs, points);
  report::engine_section(h, page.figs, points, run_dir);
  report::shrink_section(h, page.figs, points);
  // A per-token head's accuracy.json (tach bench --accuracy): its scores are its eval file's section.
  if (accuracy && !token_eval && !qa_eval) accuracy_section(page, *accuracy);
  if (token_eval) report::token_eval_section(h, page.figs, *token_eval);
  if (qa_eval) report::qa_eval_section(h, page.figs, *qa_eval);
  if (training) training_section(page, dir, "Training");
  if (comparison) comparison_section(page, dir);
  if (fs::is_directory(dir / "traces")) profile_section(page, dir / "traces");
  if (profile_dir) profile_section(page, dir);
  if (fs::is_regular_file(dir / "monitor.csv")) monitor_section(page, dir / "monitor.csv");
  if (fs::is_regular_file(dir / "summary.txt")) {
    const std::string text = read_file(dir / "summary.txt");
    h << "<h2>Findings</h2><pre>" << escape_html(text) << "</pre>";
    // The findings on slides: summary.txt from its "Findings" heading on (the lines above repeat the
    // header), bullets' dashes dropped (the deck draws its own).
    const std::vector<std::string> lines = text_lines(text);
    auto from =
        std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.rfind("Findings", 0) == 0; });
    from = from == lines.end() ? lines.begin() : from + 1;
    std::vector<std::string> summary_findings;
    for (auto it = from; it != lines.end(); ++it)
      summary_findings.push_back(it->rfind("- ", 0) == 0 ? it->substr(2) : *it);
    page.findings.insert(page.findings.begin(), summary_findings.begin(), summary_findings.end());
  }
  h << "<p class='muted'>Written by tach " << escape_html(tach_version())
    << " from the files in the run directory; rewrite it any time with <code>tach report " << escape_html(run_dir)
    << "</code>.</p></body></html>\n";
  return {h.str(), page.title, page.about, page.figs.figures(), page.findings};
}

std::string run_report_html(const std::string& run_dir) { return build_run_report(run_dir).html; }

std::string write_run_report(const std::string& run_dir, const RunReport& report) {
  std::string path = (fs::path(run_dir) / "report.html").string();
  model::write_file_atomically(path, report.html);
  return path;
}

std::string write_run_report(const std::string& run_dir) {
  return write_run_report(run_dir, build_run_report(run_dir));
}

}  // namespace tach
