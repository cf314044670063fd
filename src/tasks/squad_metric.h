// The official SQuAD scores: exact match and token F1 of a predicted answer against the gold
// answers, each the best over the gold answers, as the SQuAD v1.1 and v2.0 evaluation scripts
// compute them (evaluate's squad and squad_v2 metrics are copies of those scripts).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tach/question_answering.h"

namespace tach::tasks {

using tach::squad_scores;
using tach::SquadScores;
using tach::SquadVersion;

// Lower case, punctuation (ASCII, Python's string.punctuation) removed, the articles a, an, the
// removed as whole words, whitespace collapsed to single spaces.
std::string normalize_answer(const std::string& text);

struct QuestionScore {
  double exact = 0;  // 0 or 1
  double f1 = 0;     // in [0, 1]
};

// gold: the question's answer texts (v2: empty for a question without an answer).
QuestionScore score_question(const std::vector<std::string>& gold, const std::string& prediction, SquadVersion version);

}  // namespace tach::tasks
