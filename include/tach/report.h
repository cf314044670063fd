// Views of a run's results: tables in several formats, the findings in words, summary.json.
// They are derived from results.jsonl and can be rewritten at any time (tach report).
#pragma once

#include <string>
#include <vector>

#include "tach/bench.h"

namespace tach {

// format: table (for a terminal) | md | csv | json | jsonl
std::string results_table(const std::vector<PointResult>& results, const std::string& format,
                          const std::string& model_name = "");

// Every field of every point, one row per point, units in the column names.
std::string detailed_metrics_csv(const std::vector<PointResult>& results);

// The accuracy results as a table with per-class metrics and the confusion matrix.
std::string accuracy_text(const std::vector<AccuracyResult>& results, const std::string& dataset, bool synthetic_weights);

struct BatchFinding {
  std::string group;        // "cpu f32 t0 seq 128"
  int64_t best_batch = 0;   // by samples/s
  double best_samples_per_s = 0;
  int64_t best_batch_in_budget = 0;  // 0: none within the latency budget (or no budget)
  double best_in_budget_samples_per_s = 0;
  double activation_bytes_per_sample = 0, activation_bytes_fixed = 0;  // least-squares fit over batch
  double fit_r2 = 0;
  int points = 0;
};
std::vector<BatchFinding> batch_findings(const std::vector<PointResult>& results, double latency_budget_ms);

std::string summary_text(const BenchConfig& config, const SweepOutcome& outcome);
std::string summary_json(const BenchConfig& config, const SweepOutcome& outcome);

// Writes summary.json, summary.txt and detailed_metrics.csv into outcome.run_dir.
void write_run_reports(const BenchConfig& config, const SweepOutcome& outcome);

// RUN_DIR/report.html: one self-contained page (inline styles and SVG charts, no script, nothing
// fetched) with the run's header, the sweep's six panels against batch size, the normalised
// metrics heatmap, latency distributions, accuracy and the confusion matrix, the profile's op and
// module tables, and the findings; every charted number is also in a table. Returns the path.
std::string run_report_html(const std::string& run_dir);
std::string write_run_report(const std::string& run_dir);

}  // namespace tach
