// tach compare on eval runs: the scores each run recorded, read from its files, and every later
// run's against the baseline's.
#pragma once

#include <string>
#include <vector>

#include "tach/compare.h"

namespace tach::report {

// The scores of run directory `dir`, in percent: accuracy.json (accuracy, macro-F1 per pass and
// sample size), token_classification.json (seqeval's micro precision, recall and F1, macro F1,
// word accuracy and F1 per entity type), question_answering.json (exact match and F1; HasAns and
// NoAns for v2.0). None: an empty list. A file that is not valid JSON is an error naming it.
std::vector<RunScore> read_run_scores(const std::string& dir);

// Each later run's scores against runs[0]'s with the same pass and metric, in the baseline's order
// (a score only one side has: not comparable, saying which).
std::vector<ScoreChange> compare_scores(const std::vector<CompareRun>& runs);

// "+1.25 points", "-0.40 points", "0 points"
std::string points_text(double change);

}  // namespace tach::report
