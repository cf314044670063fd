// `tach shrink`: ways to make a model smaller (a lower dtype, pruned heads, FFN neurons or layers,
// a distilled student) measured side by side on one dataset: each variant's accuracy (tach eval's
// pass), its latency over batch sizes under bench's stopping rule, throughput and memory, in one
// run directory, and which variants are worth having (the Pareto frontier of accuracy against
// latency and against memory).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tach/bench.h"

namespace tach {

struct ShrinkOptions {
  // The base model, the dataset and everything a variant's sweep shares: devices, batch sizes,
  // sequence lengths, threads, the stopping rule, runs_dir and run_id. Its dtypes are ignored.
  BenchConfig base;
  std::vector<std::string> dtypes{"f32"};  // --dtype: one variant each (f32, bf16, f16, int8, nf4)
  std::vector<std::string> prunes;         // --prune: "heads:0.5", "ffn:0.25", "layers:2"
  std::vector<std::string> students;       // --student: model directories (tach train --distill-from)
  // How tach prune ranks the units it removes: magnitude, or importance (first-order, on labelled
  // calibration data: calibration_data, or the run's dataset when empty, its first
  // calibration_samples examples, tokenized as the accuracy pass tokenizes).
  std::string prune_by = "magnitude";
  std::string calibration_data;
  int64_t calibration_samples = 128;
};

struct ShrinkVariant {
  std::string name;   // the rows' variant: "int8", "heads:0.5", "student:NAME" (a dtype other than f32 after '+')
  std::string kind;   // dtype | prune | student
  std::string model;  // what it loads: the base, a student, or RUN_DIR/models/<dir_name>
  std::string dtype;  // the dtype it computes in
  std::string part;   // prune: heads | ffn | layers
  double amount = 0;  // prune: the fraction (heads, ffn) or the count of layers
  std::string base;   // the base model it came from (-m), as given
  std::string dir_name() const;  // the name as a directory: "heads-0.5"
};

// A variant's model in words, as summary.txt and the variant's own run (variant.json) name it:
// its own model (a pruned one's directory with what tach prune removed, read from the
// prune_summary.json there; a student's directory) and the base model it came from, and the
// dtype it computes in. "heads:0.5  RUN/models/heads-0.5: BASE with 4 of 8 attention heads
// removed (ranked by magnitude), in f32". prune_by: how the units were ranked.
std::string describe_variant(const ShrinkVariant& variant, const std::string& prune_by);

// The variants asked for, in the order given (dtypes, prunes, students). Pruned models and students
// compute in the first dtype. A spelling tach does not know, a fraction outside [0, 1), a layer
// count that is not a positive integer, a variant given twice: tach::UsageError naming it.
std::vector<ShrinkVariant> shrink_variants(const ShrinkOptions& options);

// What a variant's measurements depend on, checked before anything is pruned or measured: its
// sweep's settings (a dtype the device lacks), a student's labels against the base model's, a
// pruning the family has no rule for (prune's own message). tach::UsageError naming the variant.
void check_shrink_variants(const ShrinkOptions& options, const std::vector<ShrinkVariant>& variants);

struct ShrinkOutcome {
  std::string run_dir;
  std::vector<ShrinkVariant> variants;
  std::vector<PointResult> rows;  // every variant × batch (× sequence length, thread count), grid order
  std::vector<std::string> findings;
  int64_t resumed_rows = 0;  // rows found in results.jsonl by --resume
};

// What a shrink run calls back: a variant starting, and each of its sweep's events.
struct ShrinkObserver {
  std::function<void(const ShrinkVariant&, size_t index, size_t total)> on_variant;
  BenchObserver bench;
};

// Creates RUN_DIR (refused when it holds a run), prunes the pruned variants into RUN_DIR/models/,
// runs each variant's sweep with its accuracy pass as tach bench --accuracy does (its own run in
// RUN_DIR/variants/<name>/), and appends its rows, each with its variant and accuracy, to
// RUN_DIR/results.jsonl; then shrink.json, summary.txt with the findings.
ShrinkOutcome run_shrink(const ShrinkOptions& options, const ShrinkObserver& observer = {});
// Continues a killed run: variants whose rows are all in are kept, a variant's sweep is resumed
// where it stopped (bench's resume), models already pruned are reused.
ShrinkOutcome resume_shrink(const std::string& run_dir, const ShrinkObserver& observer = {});

// The Pareto frontier: a variant is dominated when another is at least as accurate and at most as
// costly, and strictly better in one of the two; the frontier is every variant no other dominates
// (equal variants are both on it). Two costs closer than the sum of their noises are equal: a
// latency 1% faster in a noisy measurement dominates nothing.
struct ParetoPoint {
  std::string name;
  double accuracy = 0, cost = 0;  // cost: latency or memory, lower is better
  double cost_noise = 0;          // how far the cost may be off (the same unit), 0: exact
};
struct ParetoVerdict {
  std::string name;
  bool on_frontier = true;
  std::vector<std::string> dominated_by;  // in input order
};
std::vector<ParetoVerdict> pareto_frontier(const std::vector<ParetoPoint>& points);

// A row's median batch latency's noise for the frontier: 1% of it plus the standard error of the
// median (1.2533 s / sqrt(n)), so two rows' medians within 2% and their errors are a tie.
double latency_noise_ms(const PointResult& row);

// One row per variant and batch (the table tach shrink prints), and the findings in words: per
// batch size, the frontier against median latency and against memory, each dominated variant
// with what dominates it.
std::string shrink_table(const std::vector<PointResult>& rows);
std::vector<std::string> shrink_findings(const std::vector<PointResult>& rows);

}  // namespace tach
