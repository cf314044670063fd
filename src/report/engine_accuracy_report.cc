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
    if (r.device == e.device && r.dtype == e.dtype && r.examples == e.examples && r.task == e.task) return &r;
  return nullptr;
}

int64_t correct(double accuracy, int64_t examples) { return std::llround(accuracy * double(examples)); }

// What one prediction is, and what the examples are, for each task.
std::string prediction_word(const std::string& task, int64_t n) {
  const std::string word = task == "token-classification" ? "tag"
                           : task == "question-answering" ? "answer"
                                                          : "prediction";
  return n == 1 ? word : word + "s";
}

std::string examples_word(const std::string& task) {
  return task == "token-classification" ? "sentences" : task == "question-answering" ? "questions" : "examples";
}

std::string differ_text(const EngineAccuracy& e) {
  if (e.differ < 0) return "tach's predictions were not kept, so none were compared";
  return std::to_string(e.differ) + " " + prediction_word(e.task, e.differ) + (e.differ == 1 ? " differs" : " differ");
}

// A per-token head's headline: seqeval's entity-level micro F1 (a fraction) or SQuAD's F1 (percent).
std::string headline_name(const std::string& task) { return task == "token-classification" ? "entity F1" : "SQuAD F1"; }

std::string headline_text(const std::string& task, double v) {
  return task == "token-classification" ? fmt("%.4f", v) : fmt("%.2f", v) + "%";
}

std::string task_line(const EngineAccuracy& e, const AccuracyResult* t, const std::string& on) {
  const double mine = accuracy_score(e.scores, "f1");
  const std::string name = headline_name(e.task);
  if (!t)
    return e.engine + "'s " + name + " is " + headline_text(e.task, mine) + " (" + on + "; tach has no pass of these " +
           examples_word(e.task) + ")";
  // Equal: every score the same, to the rounding of their sums (the same predictions score the same).
  bool equal = true;
  for (const auto& [metric, value] : e.scores) {
    const double theirs = accuracy_score(t->scores, metric);
    equal = equal && ((std::isnan(value) && std::isnan(theirs)) || std::fabs(value - theirs) <= 1e-9);
  }
  const double tachs = accuracy_score(t->scores, "f1");
  if (equal)
    return e.engine + "'s " + name + " equals tach's (" + headline_text(e.task, mine) + " on " + on + "; " +
           differ_text(e) + ")";
  const std::string delta = e.task == "token-classification" ? fmt("%+.4f", mine - tachs) : fmt("%+.2f", mine - tachs);
  return e.engine + "'s " + name + " is " + headline_text(e.task, mine) + ", tach's " + headline_text(e.task, tachs) +
         " (" + delta + " on " + on + "; " + task_scores_text(e.task, e.scores) + "; " + differ_text(e) + ")";
}

// Each column as wide as its widest cell, the first two left-aligned, the figures right-aligned.
std::string aligned_table(const std::vector<std::vector<std::string>>& rows) {
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
}

// The task of the passes (tach's first, else the engines'): "" for a sequence classifier.
std::string task_of(const std::vector<EngineAccuracy>& engines, const std::vector<AccuracyResult>& tach) {
  if (!tach.empty()) return tach.front().task;
  return engines.empty() ? std::string() : engines.front().task;
}

// The figures' columns: accuracy and macro-F1, or the task's metrics.
std::vector<std::string> metric_columns(const std::string& task) {
  if (task.empty()) return {"accuracy", "macro-F1"};
  std::vector<std::string> names;
  for (const std::string& n : accuracy_metric_names(task))
    names.push_back(n == "f1"              ? (task == "token-classification" ? "entity F1" : "F1")
                    : n == "exact_match"   ? "exact match"
                    : n == "word_accuracy" ? "word accuracy"
                                           : n);
  return names;
}

std::vector<std::string> metric_cells(const std::string& task, double accuracy, double macro_f1,
                                      const std::vector<std::pair<std::string, double>>& scores) {
  if (task.empty()) return {fmt("%.4f", accuracy), fmt("%.4f", macro_f1)};
  std::vector<std::string> cells;
  for (const std::string& n : accuracy_metric_names(task)) {
    const double v = accuracy_score(scores, n);
    cells.push_back(std::isnan(v) ? "-" : task == "question-answering" ? fmt("%.2f", v) : fmt("%.4f", v));
  }
  return cells;
}

}  // namespace

std::string task_scores_text(const std::string& task, const std::vector<std::pair<std::string, double>>& scores) {
  std::string s;
  const std::vector<std::string> columns = metric_columns(task);
  const std::vector<std::string> names = accuracy_metric_names(task);
  for (size_t i = 0; i < names.size(); ++i) {
    const double v = accuracy_score(scores, names[i]);
    s += (s.empty() ? "" : ", ") + columns[i] + " " +
         (std::isnan(v)                  ? std::string("-")
          : task == "question-answering" ? fmt("%.2f", v) + "%"
                                         : fmt("%.4f", v));
  }
  return s;
}

std::string engine_accuracy_line(const EngineAccuracy& e, const std::vector<AccuracyResult>& tach) {
  const std::string where = e.device + "/" + e.dtype;
  if (e.status != "ok") return e.engine + " " + where + ": no accuracy pass: " + e.reason;
  const std::string on = std::to_string(e.examples) + " " + examples_word(e.task) + ", " + where;
  const AccuracyResult* t = tach_pass_of(e, tach);
  if (!e.task.empty()) return task_line(e, t, on);
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
  const std::string task = task_of(engines, tach);
  std::vector<std::string> header{"engine", "device/dtype", examples_word(task)};
  for (const std::string& c : metric_columns(task)) header.push_back(c);
  header.insert(header.end(), {"differ from tach", "wall s"});
  std::vector<std::vector<std::string>> rows{header};
  const size_t figures = metric_columns(task).size();
  const auto row = [&](const std::string& engine, const std::string& where, int64_t examples,
                       std::vector<std::string> cells, const std::string& differ, double seconds) {
    std::vector<std::string> r{engine, where, std::to_string(examples)};
    r.insert(r.end(), cells.begin(), cells.end());
    r.insert(r.end(), {differ, fmt("%.2f", seconds)});
    rows.push_back(std::move(r));
  };
  for (const AccuracyResult& t : tach)
    row("tach", t.device + "/" + t.dtype, t.examples, metric_cells(t.task, t.accuracy, t.macro_f1, t.scores), "-",
        t.total_s);
  for (const EngineAccuracy& e : engines) {
    if (e.status != "ok") {
      std::vector<std::string> cells(figures, "-");
      cells.front() = "failed";
      row(e.engine, e.device + "/" + e.dtype, e.examples, cells, "-", e.wall_s);
      continue;
    }
    row(e.engine, e.device + "/" + e.dtype, e.examples, metric_cells(e.task, e.accuracy, e.macro_f1, e.scores),
        e.differ < 0 ? "not compared" : std::to_string(e.differ), e.wall_s);
  }
  std::ostringstream out;
  out << "\nAccuracy per engine (the same token ids in the same batches, scored by tach's metrics; wall s: the pass "
         "with the worker's protocol, not a timing)\n"
      << aligned_table(rows);
  for (const EngineAccuracy& e : engines)
    if (e.status != "ok") out << "  " << engine_accuracy_line(e, tach) << "\n";
  return out.str();
}

void engine_accuracy_html(std::ostringstream& h, const std::vector<EngineAccuracy>& engines,
                          const std::vector<AccuracyResult>& tach) {
  if (engines.empty()) return;
  const std::string task = task_of(engines, tach);
  const std::vector<std::string> columns = metric_columns(task);
  h << "<h3>Accuracy per engine</h3><p class='muted'>Each engine "
    << (task.empty()                     ? "classified the examples of tach's accuracy pass"
        : task == "token-classification" ? "tagged the words of tach's accuracy pass"
                                         : "answered the questions of tach's accuracy pass")
    << " from the same token ids in the same batches; tach scored every engine's predictions with the same metrics "
       "and counted those that differ from its own.</p><table><tr><th>engine</th><th>device/dtype</th><th>"
    << escape_html(examples_word(task)) << "</th>";
  for (const std::string& c : columns) h << "<th>" << escape_html(c) << "</th>";
  h << "<th>differ from tach</th><th>finding</th></tr>";
  const auto cells = [&h](const std::vector<std::string>& values) {
    for (const std::string& v : values) h << "<td>" << escape_html(v) << "</td>";
  };
  for (const AccuracyResult& t : tach) {
    h << "<tr><td>tach</td><td>" << escape_html(t.device + "/" + t.dtype) << "</td><td>" << t.examples << "</td>";
    cells(metric_cells(t.task, t.accuracy, t.macro_f1, t.scores));
    h << "<td>-</td><td>the reference</td></tr>";
  }
  for (const EngineAccuracy& e : engines) {
    const bool ok = e.status == "ok";
    h << "<tr><td>" << escape_html(e.engine) << "</td><td>" << escape_html(e.device + "/" + e.dtype) << "</td><td>"
      << e.examples << "</td>";
    if (ok) {
      cells(metric_cells(e.task, e.accuracy, e.macro_f1, e.scores));
    } else {
      std::vector<std::string> failed(columns.size(), "-");
      failed.front() = "failed";
      cells(failed);
    }
    h << "<td>"
      << (!ok            ? "-"
          : e.differ < 0 ? "not compared"
                         : std::to_string(e.differ))
      << "</td><td style='text-align:left'>" << escape_html(engine_accuracy_line(e, tach)) << "</td></tr>";
  }
  h << "</table>";
}

}  // namespace tach::report
