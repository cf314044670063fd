// Other engines' accuracy passes (tach bench --engine ... --accuracy) beside tach's: the table of
// summary.txt and the terminal, the findings' lines and report.html's rows, from one reading of
// each engine against tach's pass of the same device, dtype and examples.
#include <algorithm>
#include <cmath>

#include "report/engine_report.h"
#include "report/number_text.h"
#include "report/svg_chart.h"
#include "tach/report.h"

namespace tach::report {

namespace {

const AccuracyResult* tach_pass_of(const EngineAccuracy& e, const std::vector<AccuracyResult>& tach) {
  for (const AccuracyResult& r : tach)
    if (r.device == e.device && r.dtype == e.dtype && r.examples == e.examples) return &r;
  return nullptr;
}

int64_t correct(double accuracy, int64_t examples) { return std::llround(accuracy * double(examples)); }

std::string differ_text(const EngineAccuracy& e) {
  if (e.differ < 0) return "tach's predictions were not kept, so none were compared";
  return std::to_string(e.differ) + (e.differ == 1 ? " prediction differs" : " predictions differ");
}

}  // namespace

std::string engine_accuracy_line(const EngineAccuracy& e, const std::vector<AccuracyResult>& tach) {
  const std::string where = e.device + "/" + e.dtype;
  if (e.status != "ok") return e.engine + " " + where + ": no accuracy pass: " + e.reason;
  const std::string on = std::to_string(e.examples) + " examples, " + where;
  const AccuracyResult* t = tach_pass_of(e, tach);
  if (!t)
    return e.engine + "'s accuracy is " + fmt("%.4f", e.accuracy) + " (" + on + "; tach has no pass of these examples)";
  if (correct(e.accuracy, e.examples) == correct(t->accuracy, t->examples))
    return e.engine + "'s accuracy equals tach's (" + fmt("%.4f", e.accuracy) + " on " + on + "; " + differ_text(e) +
           ")";
  return e.engine + "'s accuracy is " + fmt("%.4f", e.accuracy) + ", tach's " + fmt("%.4f", t->accuracy) + " (" +
         fmt("%+.4f", e.accuracy - t->accuracy) + " on " + on + "; " + differ_text(e) + ")";
}

void engine_accuracy_findings(std::ostringstream& s, const std::vector<EngineAccuracy>& engines,
                              const std::vector<AccuracyResult>& tach) {
  for (const EngineAccuracy& e : engines) s << "- " << engine_accuracy_line(e, tach) << "\n";
}

std::string engine_accuracy_text(const std::vector<EngineAccuracy>& engines, const std::vector<AccuracyResult>& tach) {
  if (engines.empty()) return "";
  std::vector<std::vector<std::string>> rows{
      {"engine", "device/dtype", "examples", "accuracy", "macro-F1", "differ from tach", "wall s"}};
  // Each column as wide as its widest cell, the first two left-aligned, the figures right-aligned.
  const auto table = [&rows] {
    std::vector<size_t> width(rows.front().size(), 0);
    for (const auto& r : rows)
      for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
    std::string t;
    for (const auto& r : rows) {
      std::string line = " ";
      for (size_t i = 0; i < r.size(); ++i) {
        const std::string pad(width[i] - r[i].size(), ' ');
        line += " " + (i < 2 ? r[i] + pad : pad + r[i]);
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      t += line + "\n";
    }
    return t;
  };
  for (const AccuracyResult& t : tach)
    rows.push_back({"tach", t.device + "/" + t.dtype, std::to_string(t.examples), fmt("%.4f", t.accuracy),
                    fmt("%.4f", t.macro_f1), "-", fmt("%.2f", t.total_s)});
  for (const EngineAccuracy& e : engines) {
    if (e.status != "ok") {
      rows.push_back(
          {e.engine, e.device + "/" + e.dtype, std::to_string(e.examples), "failed", "-", "-", fmt("%.2f", e.wall_s)});
      continue;
    }
    rows.push_back({e.engine, e.device + "/" + e.dtype, std::to_string(e.examples), fmt("%.4f", e.accuracy),
                    fmt("%.4f", e.macro_f1), e.differ < 0 ? "not compared" : std::to_string(e.differ),
                    fmt("%.2f", e.wall_s)});
  }
  std::ostringstream out;
  out << "\nAccuracy per engine (the same token ids in the same batches, scored by tach's metrics; wall s: the pass "
         "with the worker's protocol, not a timing)\n"
      << table();
  for (const EngineAccuracy& e : engines)
    if (e.status != "ok") out << "  " << engine_accuracy_line(e, tach) << "\n";
  return out.str();
}

void engine_accuracy_html(std::ostringstream& h, const std::vector<EngineAccuracy>& engines,
                          const std::vector<AccuracyResult>& tach) {
  if (engines.empty()) return;
  h << "<h3>Accuracy per engine</h3><p class='muted'>Each engine classified the examples of tach's accuracy pass "
       "from the same token ids in the same batches; tach scored every engine's predictions with the same metrics "
       "and counted those that differ from its own.</p><table><tr><th>engine</th><th>device/dtype</th>"
       "<th>examples</th><th>accuracy</th><th>macro-F1</th><th>differ from tach</th><th>finding</th></tr>";
  for (const AccuracyResult& t : tach)
    h << "<tr><td>tach</td><td>" << escape_html(t.device + "/" + t.dtype) << "</td><td>" << t.examples << "</td><td>"
      << fmt("%.4f", t.accuracy) << "</td><td>" << fmt("%.4f", t.macro_f1)
      << "</td><td>-</td><td>the reference</td></tr>";
  for (const EngineAccuracy& e : engines) {
    const bool ok = e.status == "ok";
    h << "<tr><td>" << escape_html(e.engine) << "</td><td>" << escape_html(e.device + "/" + e.dtype) << "</td><td>"
      << e.examples << "</td><td>" << (ok ? fmt("%.4f", e.accuracy) : "failed") << "</td><td>"
      << (ok ? fmt("%.4f", e.macro_f1) : "-") << "</td><td>"
      << (!ok            ? "-"
          : e.differ < 0 ? "not compared"
                         : std::to_string(e.differ))
      << "</td><td style='text-align:left'>" << escape_html(engine_accuracy_line(e, tach)) << "</td></tr>";
  }
  h << "</table>";
}

}  // namespace tach::report
