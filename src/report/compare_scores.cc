#include "report/compare_scores.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "report/eval_json.h"
#include "tach/error.h"

namespace tach::report {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::optional<json> read_json(const fs::path& p) {
  if (!fs::is_regular_file(p)) return std::nullopt;
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  try {
    return json::parse(s.str());
  } catch (const json::exception& e) { throw Error(p.string() + ": not valid JSON (" + e.what() + ")"); }
}

// accuracy.json: a pass per device, dtype and sample size; accuracy and macro-F1 are fractions.
void accuracy_scores(const json& acc, std::vector<RunScore>& out) {
  const std::string dataset = field_text(acc, "dataset");
  for (const json& r : acc.value("results", json::array())) {
    if (r.contains("task")) continue;  // a per-token head's pass: its scores are read from its eval file
    const std::string examples = std::to_string(r.value("examples", int64_t(0)));
    const std::string pass = (r.contains("device") ? pass_name(r) : std::string("first pass")) + " n=" + examples;
    const std::string data = dataset + ", " + examples + " examples";
    out.push_back({pass, "accuracy", 100 * field_number(r, "accuracy"), data});
    out.push_back({pass, "macro-F1", 100 * field_number(r, "macro_f1"), data});
  }
}

// token_classification.json: seqeval's scores are fractions.
void token_scores(const json& eval, std::vector<RunScore>& out) {
  const std::string dataset = field_text(eval, "dataset");
  for (const json& p : eval.value("passes", json::array())) {
    const std::string pass = pass_name(p);
    const std::string data = dataset + ", " + std::to_string(p.value("sentences", int64_t(0))) + " sentences, " +
                             field_text(p, "scheme") + " tags";
    const json micro = p.value("micro", json::object()), macro = p.value("macro", json::object());
    out.push_back({pass, "entity F1 (micro)", 100 * field_number(micro, "f1"), data});
    out.push_back({pass, "entity precision (micro)", 100 * field_number(micro, "precision"), data});
    out.push_back({pass, "entity recall (micro)", 100 * field_number(micro, "recall"), data});
    out.push_back({pass, "entity F1 (macro)", 100 * field_number(macro, "f1"), data});
    out.push_back({pass, "word accuracy", 100 * field_number(p, "word_accuracy"), data});
    for (const json& t : p.value("per_type", json::array()))
      out.push_back({pass, "F1 " + field_text(t, "type"), 100 * field_number(t, "f1"), data});
  }
}

// question_answering.json: the official scripts' scores are percent already.
void squad_scores(const json& eval, std::vector<RunScore>& out) {
  const json options = eval.value("options", json::object());
  const std::string settings = "SQuAD " + field_text(eval, "squad_version") + ", windows of " +
                               std::to_string(options.value("max_length", int64_t(0))) + " tokens";
  for (const json& p : eval.value("passes", json::array())) {
    const std::string pass = pass_name(p);
    const std::string data = field_text(eval, "dataset") + ", " + std::to_string(p.value("questions", int64_t(0))) +
                             " questions, " + settings;
    const json s = p.value("scores", json::object());
    out.push_back({pass, "exact match", field_number(s, "exact_match"), data});
    out.push_back({pass, "F1", field_number(s, "f1"), data});
    if (s.contains("HasAns_exact")) {
      out.push_back({pass, "HasAns exact match", field_number(s, "HasAns_exact"), data});
      out.push_back({pass, "HasAns F1", field_number(s, "HasAns_f1"), data});
    }
    if (s.contains("NoAns_exact")) {
      out.push_back({pass, "NoAns exact match", field_number(s, "NoAns_exact"), data});
      out.push_back({pass, "NoAns F1", field_number(s, "NoAns_f1"), data});
    }
  }
}

std::string percent_text(double v) {
  if (std::isnan(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", v);
  return buf;
}

}  // namespace

std::string points_text(double change) {
  if (change == 0) return "0 points";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%+.2f points", change);
  return buf;
}

std::vector<RunScore> read_run_scores(const std::string& dir) {
  std::vector<RunScore> out;
  const fs::path d(dir);
  if (const auto acc = read_json(d / "accuracy.json")) accuracy_scores(*acc, out);
  if (const auto tok = read_json(d / "token_classification.json")) token_scores(*tok, out);
  if (const auto qa = read_json(d / "question_answering.json")) squad_scores(*qa, out);
  return out;
}

std::vector<ScoreChange> compare_scores(const std::vector<CompareRun>& runs) {
  std::vector<ScoreChange> out;
  if (runs.empty()) return out;
  for (size_t r = 1; r < runs.size(); ++r) {
    std::map<std::pair<std::string, std::string>, const RunScore*> later;
    for (const RunScore& s : runs[r].scores) later[{s.pass, s.metric}] = &s;
    for (const RunScore& a : runs[0].scores) {
      ScoreChange c;
      c.pass = a.pass, c.metric = a.metric, c.run = r, c.baseline_percent = a.percent;
      const auto it = later.find({a.pass, a.metric});
      if (it == later.end()) {
        if (runs[r].scores.empty()) continue;  // a bench run against an eval run: its latencies say it
        c.percent = std::nan("");
        c.verdict = "not comparable";
        c.why = "only the baseline has it";
        out.push_back(c);
        continue;
      }
      const RunScore& b = *it->second;
      later.erase(it);
      c.percent = b.percent;
      if (a.data != b.data) {
        c.verdict = "not comparable";
        c.why = "other data: the baseline's " + a.data + "; this run's " + b.data;
      } else if (std::isnan(a.percent) || std::isnan(b.percent)) {
        c.verdict = std::isnan(a.percent) && std::isnan(b.percent) ? "same" : "not comparable";
        c.why = "no score (" + percent_text(a.percent) + " against " + percent_text(b.percent) + ")";
      } else {
        const double change = b.percent - a.percent;
        c.verdict = change > 0 ? "higher" : change < 0 ? "lower" : "same";
        c.why = points_text(change);
      }
      out.push_back(c);
    }
    if (runs[0].scores.empty()) continue;
    for (const RunScore& s : runs[r].scores)  // left in `later`: this run's alone, in its order
      if (later.count({s.pass, s.metric}))
        out.push_back({s.pass, s.metric, r, std::nan(""), s.percent, "not comparable", "only this run has it"});
  }
  return out;
}

}  // namespace tach::report
