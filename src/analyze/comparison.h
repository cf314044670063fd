// Two runs' traces side by side (tach analyze A B): the step time's change with a noise verdict,
// and each op and kernel with its time, calls and share on both sides and their deltas.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyze/analysis.h"

namespace tach::analyze {

// The change in the median step, judged as tach compare judges a point (report/compare_verdict.h):
// the steps in the order they ran are cut into blocks, whole blocks are resampled for a 95%
// interval of the median's ratio, and a change must exclude 0, exceed 2%, and exceed the drift
// inside either run (its block medians apart) to be "slower" or "faster"; else "within noise".
// A change that passes those but is no larger than the spread of either run's steps (their
// interquartile range over their median) is "inconclusive": the two runs' steps overlap, as two
// profiling cycles of one run on a busy machine do, and more steps or a quieter machine would
// tell. Fewer than 3 steps on a side is "inconclusive" too: too few to see how a run's steps spread.
struct StepVerdict {
  size_t baseline_steps = 0, steps = 0;
  double baseline_median_ms = 0, median_ms = 0;
  double change = 0, lo = 0, hi = 0;       // new median / baseline median - 1, and its interval
  double baseline_drift = 0, drift = 0;    // report::within_run_drift of each side
  double baseline_spread = 0, spread = 0;  // (75th - 25th percentile) / median of each side
  std::string verdict;                     // faster | slower | within noise | inconclusive
  std::string why;
};
inline constexpr double kStepNoiseThreshold = 0.02;  // tach compare's default (Criterion's 2%)
StepVerdict judge_steps(const std::vector<double>& baseline_ms, const std::vector<double>& now_ms);
// (75th - 25th percentile) / median, percentiles interpolated linearly; 0 for fewer than 2 values.
double relative_iqr(std::vector<double> values);

struct RunComparisonText {
  nlohmann::ordered_json json;  // analysis.json's "comparison" object (docs/formats.md)
  std::string text;             // the terminal report
};

// baseline_name, name: how the two sides are named (their paths). top: rows printed per table
// (the JSON keeps every op and kernel).
RunComparisonText compare_analyses(const RunAnalysis& baseline, const RunAnalysis& now,
                                   const std::string& baseline_name, const std::string& name, size_t top);

}  // namespace tach::analyze
