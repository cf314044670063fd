// The official SQuAD scores: exact match and token F1 of a predicted answer against the gold
// answers, each the best over the gold answers, as the SQuAD v1.1 and v2.0 evaluation scripts
// compute them (evaluate's squad and squad_v2 metrics are copies of those scripts).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tach::tasks {

// v1.1 scores every question against its answers; v2.0 adds questions without an answer (the
// empty prediction is right for those) and drops gold answers that normalise to nothing.
enum class SquadVersion { v1, v2 };

// Lower case, punctuation (ASCII, Python's string.punctuation) removed, the articles a, an, the
// removed as whole words, whitespace collapsed to single spaces.
std::string normalize_answer(const std::string& text);

struct QuestionScore {
  double exact = 0;  // 0 or 1
  double f1 = 0;     // in [0, 1]
};

// gold: the question's answer texts (v2: empty for a question without an answer).
QuestionScore score_question(const std::vector<std::string>& gold, const std::string& prediction, SquadVersion version);

// Totals in percent, as the scripts report them. The HasAns/NoAns split is v2's: questions with
// and without gold answers (v1 data has only the first kind).
struct SquadScores {
  int64_t total = 0;
  double exact = 0, f1 = 0;
  int64_t has_answer_total = 0, no_answer_total = 0;
  double has_answer_exact = 0, has_answer_f1 = 0, no_answer_exact = 0, no_answer_f1 = 0;
};

// gold[i] and predictions[i] belong to the same question.
SquadScores squad_scores(const std::vector<std::vector<std::string>>& gold, const std::vector<std::string>& predictions,
                         SquadVersion version);

}  // namespace tach::tasks
