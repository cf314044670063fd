// Views of a run's results: tables in several formats, the findings in words, summary.json.
// They are derived from results.jsonl and can be rewritten at any time (tach report).
#pragma once

#include <functional>
#include <optional>
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
std::string accuracy_text(const std::vector<AccuracyResult>& results, const std::string& dataset,
                          bool synthetic_weights);

struct BatchFinding {
  std::string group;       // "cpu f32 t0 seq 128"
  int64_t best_batch = 0;  // by samples/s
  double best_samples_per_s = 0;
  int64_t best_batch_in_budget = 0;  // 0: none within the latency budget (or no budget)
  double best_in_budget_samples_per_s = 0;
  double activation_bytes_per_sample = 0, activation_bytes_fixed = 0;  // least-squares fit over batch
  double fit_r2 = 0;
  int points = 0;
  // Points measured while other processes took the cores: a comparison among them measures the
  // load, not the batch, so with any the best batch is not a finding.
  int contended_points = 0;
  bool conclusive() const { return contended_points == 0; }
  // Where throughput stops growing (batch_plateau): the first batch after which the next measured
  // batch gains less than kPlateauGainPerDoubling per doubling of the batch; 0 where it still grows
  // at the largest batch that ran (or fewer than two batches ran).
  int64_t plateau_batch = 0;
  double plateau_next_gain = 0;  // the next batch's gain per doubling there (0.04 = 4%)
  // Why, from the plateau point's own figures: "compute" (achieved FLOP/s at least
  // kComputeBoundFraction of the device's GEMM ceiling for the point's precision), "memory" (its
  // memory peak at least kMemoryBoundFraction of the device's, or a larger batch ran out of memory),
  // "contention" (it or the next point measured under load), "neither" (overhead: launches, the
  // host's work, the forward's parts that are not GEMMs), "unknown" (no ceiling to judge by);
  // "" without a plateau.
  std::string plateau_bound;
  double plateau_ceiling_fraction = -1;  // achieved FLOP/s over the ceiling; -1: no ceiling known
  double plateau_memory_fraction = -1;   // memory peak over the device's memory; -1: unknown
  std::string plateau_why;               // the verdict as a sentence, with its numbers
};

// Throughput stops growing where doubling the batch gains less than this (10%).
inline constexpr double kPlateauGainPerDoubling = 0.10;
// Compute-bound: the whole forward's achieved FLOP/s at least half the GEMM ceiling (the GEMMs,
// most of a transformer's FLOPs, then run near theirs).
inline constexpr double kComputeBoundFraction = 0.5;
// Memory-bound: the point's memory peak at least 80% of what the device holds.
inline constexpr double kMemoryBoundFraction = 0.8;

// What a device can do, for the plateau's verdict: GEMM FLOP/s per precision (0: not measured)
// and the memory it holds (bytes; 0: unknown), with where the figures came from.
struct DeviceLimits {
  double gemm_f32_flops = 0, gemm_tf32_flops = 0, gemm_bf16_flops = 0, gemm_f16_flops = 0, gemm_int8_ops = 0;
  double memory_bytes = 0;
  std::string source;  // "tach info --ceilings' cache (...)", "cuBLASLt GEMMs measured now", or why none
};
// A device's limits by its name in a point key ("cpu", "cuda:0").
using DeviceLimitsLookup = std::function<DeviceLimits(const std::string& device)>;
// This machine's: the CPU's cached ceilings (never measured here: tach info --ceilings does) and
// its memory; a GPU's ceilings measured now (about two seconds, once per device and process) and
// its memory. A device this machine cannot see: limits of 0, the source saying why.
DeviceLimits this_machine_limits(const std::string& device);

// The best batch by throughput per series, and where its throughput stops growing and why, judged
// against `limits` (none: every verdict is "unknown" unless memory or contention explains it).
std::vector<BatchFinding> batch_findings(const std::vector<PointResult>& results, double latency_budget_ms,
                                         const DeviceLimitsLookup& limits = {});

std::string summary_text(const BenchConfig& config, const SweepOutcome& outcome);
std::string summary_json(const BenchConfig& config, const SweepOutcome& outcome);

// The diagnosis of a training sweep (tach bench --train), per series (every axis but the batch).
// Every finding and piece of advice is a sentence with its numbers.
struct TrainDiagnosis {
  std::string series;  // "cpu f32 threads all seq 128 full eager gc-off"
  PointKey key;        // the series' axes (its batch: the peak's)
  int points = 0;      // finished points
  int64_t peak_batch = 0;
  double peak_samples_per_s = 0;
  int64_t sweet_spot_batch = 0;  // the smallest batch within 5% of the peak's throughput
  // Least squares over the points: median step ms = fixed_ms + per_sample_ms * batch.
  double fixed_ms = 0, per_sample_ms = 0, fit_r2 = 0;
  int64_t smallest_batch = 0;
  double fixed_share_at_smallest = 0;  // fixed_ms over the smallest batch's step
  bool overhead_bound = false;         // that share is 30% or more
  bool declines = false;               // throughput falls after the peak by more than the noise
  int64_t decline_batch = 0;
  double decline_fraction = 0;  // 1 - throughput there / the peak's
  std::vector<std::string> decline_reasons;
  // The largest batch that fits at this length, with and without gradient checkpointing: the
  // estimate scaled by measured peak / estimate (its median over the points); -1 unknown.
  int64_t largest_fit = -1, largest_fit_checkpointed = -1;
  double measured_over_estimate = 0;
  std::vector<std::string> findings, advice;
};

// The memory a training point would need by tach estimate (bytes, and what was available),
// for a batch and a checkpointing setting; nullopt when there is no estimate for the model.
struct TrainEstimate {
  int64_t total_bytes = 0, available_bytes = 0;
};
using TrainEstimator =
    std::function<std::optional<TrainEstimate>(const PointKey& key, int64_t batch, bool checkpointing)>;
// tach estimate on the run's model (LoRA on its default targets, every linear, as the points).
TrainEstimator estimator_for(const std::string& model_spec);

// bf16_gemm: whether this CPU multiplies bf16 in hardware (cpu::bf16_gemm_in_hardware): the advice
// on --dtype when the sweep did not measure the other precision; a measured one decides.
std::vector<TrainDiagnosis> diagnose_training(const std::vector<PointResult>& results, const TrainEstimator& estimate,
                                              bool bf16_gemm);
// performance_report.md: the diagnosis per series, with each series' points as a table.
std::string performance_report_md(const std::string& model, const std::vector<PointResult>& results,
                                  const std::vector<TrainDiagnosis>& diagnoses);

// Writes summary.json, summary.txt and detailed_metrics.csv into outcome.run_dir (and for a
// training sweep, performance_report.md).
void write_run_reports(const BenchConfig& config, const SweepOutcome& outcome);

// RUN_DIR/report.html: one self-contained page (inline styles and SVG charts, no script, nothing
// fetched) with the run's header, the sweep's six panels against batch size, the normalised
// metrics heatmap, latency distributions, accuracy and the confusion matrix, the profile's op and
// module tables, and the findings; every charted number is also in a table. Returns the path.
std::string run_report_html(const std::string& run_dir);
std::string write_run_report(const std::string& run_dir);

// One chart of the report as a document of its own: what --png renders and --pptx shows.
struct ReportFigure {
  std::string name;                      // the file stem: "throughput_vs_batch_size", "roofline"
  std::string title;                     // what it shows, in words
  std::string svg;                       // a standalone SVG document (white background, styles inlined)
  std::vector<std::string> key_numbers;  // the numbers a slide says beside it, each with its unit
};

// The report as it is composed: the page, and the same content in pieces for other formats.
struct RunReport {
  std::string html;
  std::string title;                  // "tach report: <model>"
  std::vector<std::string> about;     // the header's lines as plain text: model, machine, ceilings, date
  std::vector<ReportFigure> figures;  // every chart, in the page's order
  std::vector<std::string> findings;  // the findings (summary.txt, the profile's bottlenecks), one per line
};
RunReport build_run_report(const std::string& run_dir);
// RUN_DIR/report.html from a report already built. Returns the path.
std::string write_run_report(const std::string& run_dir, const RunReport& report);

// A PNG file written, and its size in pixels.
struct WrittenImage {
  std::string path;
  int width = 0, height = 0;
};

// Each figure as PLOTS_DIR/<name>.png, rendered from its SVG by librsvg at `scale` pixels per SVG
// unit (2: sharp on slides and in papers). Each file is written atomically; PNG files in PLOTS_DIR
// that no figure of this report has (an older report's) are removed.
std::vector<WrittenImage> write_report_pngs(const RunReport& report, const std::string& plots_dir, double scale);

// A slide deck (OOXML, zipped with libzip): a title slide with the model and machine, one slide per
// figure (its PNG and key numbers), and the findings. `pngs` are the figures' files, in order.
// Written atomically; returns the number of slides.
int write_report_pptx(const RunReport& report, const std::vector<WrittenImage>& pngs, const std::string& path);

// RUN_DIR/SHA256SUMS: one line per file under the directory (sorted, relative paths, as
// `sha256sum` writes them, names with a backslash or newline escaped as it escapes them), written
// atomically, so `sha256sum -c SHA256SUMS` run inside the directory checks it. Returns the count.
int64_t write_manifest(const std::string& run_dir);

// What `tach verify` finds: files changed, missing, or added since the manifest.
struct ManifestCheck {
  int64_t verified = 0;
  std::vector<std::string> changed, missing, added;
  bool ok() const { return changed.empty() && missing.empty() && added.empty(); }
};
ManifestCheck verify_manifest(const std::string& run_dir);  // an error when SHA256SUMS is absent or malformed

}  // namespace tach
