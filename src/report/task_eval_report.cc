// report.html's sections for the per-token heads' eval runs: a token classifier's seqeval scores
// (token_classification.json) and a question-answering model's SQuAD scores
// (question_answering.json), each pass a row, as the sequence classifier's accuracy section does.
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "report/eval_json.h"
#include "report/figure_book.h"
#include "report/number_text.h"
#include "report/report_sections.h"
#include "report/svg_chart.h"

namespace tach::report {

namespace {

using nlohmann::json;

std::string fixed(double v, int decimals) { return std::isnan(v) ? "–" : fixed_text(v, decimals); }

void notes(std::ostringstream& h, const json& eval) {
  const json list = eval.value("notes", json::array());
  if (list.empty()) return;
  h << "<ul>";
  for (const auto& n : list)
    if (n.is_string()) h << "<li>" << escape_html(n.get<std::string>()) << "</li>";
  h << "</ul>";
}

}  // namespace

void token_eval_section(std::ostringstream& h, FigureBook& figs, const json& eval) {
  h << "<h2>Entity scores (seqeval)</h2><p>" << escape_html(field_text(eval, "model")) << " ("
    << escape_html(field_text(eval, "architecture")) << ") on " << escape_html(field_text(eval, "dataset"))
    << ": entity-level precision, recall and F1 as seqeval's classification_report gives them (an entity counts "
       "when its type and words are both right).</p>";
  notes(h, eval);
  const json passes = eval.value("passes", json::array());
  h << "<table><tr><th>device</th><th>dtype</th><th>tags</th><th>sentences</th><th>words (cut)</th><th>precision "
       "(micro)</th><th>recall (micro)</th><th>F1 (micro)</th><th>F1 (macro)</th><th>F1 (weighted)</th><th>word "
       "accuracy</th><th>sentences/s</th></tr>";
  for (const auto& p : passes) {
    const json micro = p.value("micro", json::object());
    h << "<tr><td>" << escape_html(field_text(p, "device")) << "</td><td>" << escape_html(field_text(p, "dtype"))
      << "</td><td>" << escape_html(field_text(p, "scheme")) << "</td><td>" << p.value("sentences", int64_t(0))
      << "</td><td>" << p.value("words", int64_t(0)) << " (" << p.value("words_cut", int64_t(0)) << ")</td><td>"
      << fixed(field_number(micro, "precision"), 4) << "</td><td>" << fixed(field_number(micro, "recall"), 4)
      << "</td><td>" << fixed(field_number(micro, "f1"), 4) << "</td><td>"
      << fixed(field_number(p.value("macro", json::object()), "f1"), 4) << "</td><td>"
      << fixed(field_number(p.value("weighted", json::object()), "f1"), 4) << "</td><td>"
      << fixed(field_number(p, "word_accuracy"), 4) << "</td><td>" << fixed(field_number(p, "sentences_per_s"), 1)
      << "</td></tr>";
  }
  h << "</table>";
  // Per entity type, for every pass, and the first pass's F1 per type as bars.
  for (size_t k = 0; k < passes.size(); ++k) {
    const json& p = passes[k];
    h << "<h3>Per entity type: " << escape_html(pass_name(p)) << "</h3><table><tr><th>type</th><th>precision</th>"
      << "<th>recall</th><th>F1</th><th>support (true entities)</th><th>predicted</th><th>correct</th></tr>";
    std::vector<std::string> types;
    std::vector<double> f1;
    for (const auto& t : p.value("per_type", json::array())) {
      types.push_back(field_text(t, "type"));
      f1.push_back(field_number(t, "f1"));
      h << "<tr><td>" << escape_html(types.back()) << "</td><td>" << fixed(field_number(t, "precision"), 4)
        << "</td><td>" << fixed(field_number(t, "recall"), 4) << "</td><td>" << fixed(f1.back(), 4) << "</td><td>"
        << t.value("support", int64_t(0)) << "</td><td>" << t.value("predicted", int64_t(0)) << "</td><td>"
        << t.value("correct", int64_t(0)) << "</td></tr>";
    }
    h << "</table>";
    if (k > 0 || types.empty()) continue;
    const json micro = p.value("micro", json::object());
    h << figs.add("entity_f1", "entity F1 per type",
                  bar_chart("entity F1 per type (" + pass_name(p) + ")", types, f1, "F1"),
                  {pass_name(p) + ": entity F1 " + fixed(field_number(micro, "f1"), 4) + " (micro), precision " +
                   fixed(field_number(micro, "precision"), 4) + ", recall " + fixed(field_number(micro, "recall"), 4)});
  }
}

void qa_eval_section(std::ostringstream& h, FigureBook& figs, const json& eval) {
  const bool v2 = field_text(eval, "squad_version") == "v2.0";
  const json options = eval.value("options", json::object());
  h << "<h2>SQuAD scores</h2><p>" << escape_html(field_text(eval, "model")) << " ("
    << escape_html(field_text(eval, "architecture")) << ") on " << escape_html(field_text(eval, "dataset")) << " ("
    << escape_html(field_text(eval, "layout")) << "), SQuAD " << escape_html(field_text(eval, "squad_version"))
    << " scoring: exact match and F1 in percent, each question's best over its gold answers after the official "
       "normalisation. Windows of "
    << options.value("max_length", int64_t(0)) << " tokens sharing " << options.value("doc_stride", int64_t(0))
    << " context tokens; answers of at most " << options.value("max_answer_len", int64_t(0)) << " tokens"
    << (options.value("handle_impossible_answer", false) ? "; the empty answer competes" : "") << ".</p>";
  notes(h, eval);
  h << "<table><tr><th>device</th><th>dtype</th><th>questions</th><th>exact match</th><th>F1</th>";
  if (v2) h << "<th>HasAns exact</th><th>HasAns F1</th><th>NoAns exact</th><th>NoAns F1</th>";
  h << "<th>questions/s</th></tr>";
  std::vector<std::string> labels;
  std::vector<double> values;
  const json passes = eval.value("passes", json::array());
  for (const auto& p : passes) {
    const json s = p.value("scores", json::object());
    h << "<tr><td>" << escape_html(field_text(p, "device")) << "</td><td>" << escape_html(field_text(p, "dtype"))
      << "</td><td>" << p.value("questions", int64_t(0)) << "</td><td>" << fixed(field_number(s, "exact_match"), 2)
      << "%</td><td>" << fixed(field_number(s, "f1"), 2) << "%</td>";
    // A group with no questions has no scores (left out, as the official script leaves it out).
    for (const std::string group : {"HasAns", "NoAns"}) {
      if (!v2) break;
      if (s.contains(group + "_exact"))
        h << "<td>" << fixed(field_number(s, (group + "_exact").c_str()), 2) << "% ("
          << s.value(group + "_total", int64_t(0)) << ")</td><td>" << fixed(field_number(s, (group + "_f1").c_str()), 2)
          << "%</td>";
      else h << "<td>-</td><td>-</td>";
    }
    h << "<td>" << fixed(field_number(p, "questions_per_s"), 1) << "</td></tr>";
    labels.push_back(pass_name(p) + " exact match");
    values.push_back(field_number(s, "exact_match"));
    labels.push_back(pass_name(p) + " F1");
    values.push_back(field_number(s, "f1"));
  }
  h << "</table>";
  if (passes.empty()) return;
  const json first = passes[0].value("scores", json::object());
  h << figs.add("squad_scores", "SQuAD exact match and F1", bar_chart("SQuAD scores (%)", labels, values, "%"),
                {pass_name(passes[0]) + ": exact match " + fixed(field_number(first, "exact_match"), 2) + "%, F1 " +
                 fixed(field_number(first, "f1"), 2) + "% over " +
                 std::to_string(passes[0].value("questions", int64_t(0))) + " questions"});
}

}  // namespace tach::report
