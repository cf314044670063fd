// Run-to-run comparison (tach compare): points matched by key across bench runs, the change in
// median latency and throughput with a bootstrap confidence interval over blocks of the raw
// per-run latencies in time order, and a verdict against a noise threshold (as Criterion.rs words
// it), against the drift inside each run, and against a difference in load.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tach/bench.h"

namespace tach {

struct CompareOptions {
  double noise_threshold = 0.02;  // a relative change smaller than this is "within noise" (Criterion's 2%)
  double confidence = 0.95;       // of the bootstrap interval
  int resamples = 10000;          // bootstrap resamples per point
  uint64_t seed = 0;              // the resampling is deterministic
  // Compare the values of one axis (exec, gradient_checkpointing, method, dtype, device, threads,
  // seq_len, batch) against each other: every run's points are pooled, points that differ only in
  // that axis are matched, and the first value seen (in the first run) is the baseline. One run
  // is enough. Empty: points are matched by their whole id across runs; when two runs share no id
  // but do once one axis is left out (one run eager, the other fused), that axis is used, and said.
  std::string by;
};

// A score an eval run recorded (accuracy.json; a token classifier's token_classification.json;
// a question-answering model's question_answering.json), in percent.
struct RunScore {
  std::string pass;    // "cpu/f32" (accuracy.json's sample sizes: "cpu/f32 n=200")
  std::string metric;  // "accuracy", "macro-F1", "entity F1 (micro)", "F1 PER", "exact match", "HasAns F1", ...
  double percent = 0;  // NaN: no score (seqeval's average over no entity types)
  std::string data;    // what it was measured on: the dataset, its size, the tag scheme or SQuAD version
};

struct CompareRun {
  std::string dir;
  std::string model;        // config.json's model
  std::string started_at;   // from the run id / config, when known
  bool allow_tf32 = false;  // config.json's allow_tf32: its f32 GEMMs on a GPU ran on TF32 tensor cores
  std::vector<PointResult> points;
  // Per point (as points): it ran tach's default thread count (no -t), which follows the cores
  // free when tach started, so a difference in it is a difference in load.
  std::vector<bool> default_threads;
  std::vector<RunScore> scores;  // an eval run's, or a bench run's accuracy pass
};

// A score of a later run against the baseline's, matched by pass and metric. Scores are
// deterministic for a model, data and dtype, so any difference is one (no interval).
struct ScoreChange {
  std::string pass, metric;
  size_t run = 0;
  double baseline_percent = 0, percent = 0;
  std::string verdict;  // higher | lower | same | not comparable (other data, or a score missing)
  std::string why;      // "+1.25 points", "other data: ..."
};

struct PointChange {
  std::string id;                 // device/dtype/tTHREADS/bBATCH/sSEQ[/method/exec/gc-on|off], less the `by` axis
  size_t run = 0;                 // index of the run compared with the baseline (runs[0])
  int64_t baseline_n = 0, n = 0;  // raw samples on each side
  double baseline_median_ms = 0, median_ms = 0;
  double baseline_samples_per_s = 0, samples_per_s = 0;  // batch / median latency
  // Relative changes (0.05 = +5%): new median / baseline median - 1, with the bootstrap interval.
  double latency_change = 0, latency_lo = 0, latency_hi = 0;
  double throughput_change = 0, throughput_lo = 0, throughput_hi = 0;
  // The interval of the time per row excludes 0: the latency's where the batches match (a
  // --by batch comparison judges the time per row, so a larger batch's longer latency with less
  // time for each row is an improvement).
  bool significant = false;
  // How far each run's level moved while it ran (its time blocks' medians apart, over its median):
  // a change no larger is within noise (compare_verdict.h).
  double baseline_drift = 0, drift = 0;
  // improved | regressed | within noise | inconclusive (measured under contention) | not
  // comparable (a side without raw samples, or failed)
  std::string verdict;
  std::string why;  // "not significant", "below the 2% threshold", "+8.1% latency", a failure's reason
};

struct RunComparison {
  CompareOptions options;
  std::vector<CompareRun> runs;      // runs[0] is the baseline
  std::vector<PointChange> changes;  // per later run, per point both have, in the baseline's order
  std::vector<std::string> only_in;  // "POINT: only in RUN[, RUN]" for points not in every run
  std::vector<ScoreChange> scores;   // eval scores, per later run, in the baseline's order
  std::string by;                    // the axis compared (empty: whole ids across runs)
  std::string note;                  // how the points were matched, when not by whole ids
  // Settings of the runs that change what a point computes, where they differ from the
  // baseline's (TF32 on one side only): said above the table, never left to be found.
  std::vector<std::string> settings_differ;
};

// Reads each run directory's results.jsonl (a torn last line after a kill is left out) and
// compares every later run with the first (or, with options.by, every value of that axis with the
// first). Training points compare their step latency and throughput. Eval runs (accuracy.json,
// token_classification.json, question_answering.json) compare their scores, without `by`. Fewer
// than two runs without `by`, or a directory with neither results.jsonl nor scores, is an error.
RunComparison compare_runs(const std::vector<std::string>& run_dirs, const CompareOptions& options = {});

// format: table (terminal) | md | csv | json (schema tach.compare/1). Eval scores follow the
// latency table as a table of their own (csv: after a blank line, or alone when there is no point).
std::string comparison_text(const RunComparison& comparison, const std::string& format);

// compare.html: a self-contained page (inline styles and SVG, no script, nothing fetched): the
// change per point with its interval, the overlaid raw latency distributions per point, and a
// table with every number. write_ writes it atomically.
std::string comparison_html(const RunComparison& comparison);
void write_comparison_html(const RunComparison& comparison, const std::string& path);

// "N comparisons: A improved, B regressed, C within noise[, D inconclusive (...)][, E not comparable]"
std::string verdict_counts(const RunComparison& comparison);

// "N eval scores: A higher, B lower, C the same[, D not comparable]"
std::string score_counts(const RunComparison& comparison);

// The points whose time per row (their latency, where the batches match) regressed by more than
// pct (0.05 = 5%), as verdict says regressed.
std::vector<const PointChange*> regressions_beyond(const RunComparison& comparison, double pct);

}  // namespace tach
