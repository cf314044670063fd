// Sections of report.html that live in their own files (report/run_report.cc composes the page).
#pragma once

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tach/bench.h"
#include "tach/report.h"

namespace tach::report {

class FigureBook;  // every chart a section draws is recorded there too (report/figure_book.h)

// Each section writes its HTML to h and records its charts in figs.

// A training sweep (tach bench --train): throughput, the stacked phases of a step, memory per
// category and MFU against batch, one series per method × exec × precision × checkpointing;
// each panel also a table; then the diagnosis (performance_report.md).
void train_sweep_section(std::ostringstream& h, FigureBook& figs, const std::vector<PointResult>& points,
                         const std::filesystem::path& dir);

// Points measured on the CPU and on a GPU with every other axis equal: the GPU's speed-up, as a
// table and a bar chart. Nothing when no point has both.
void speedup_section(std::ostringstream& h, FigureBook& figs, const std::vector<PointResult>& points);

// A causal LM's decoding after each point's prefill (tach bench --decode-tokens): the steps, tokens/s
// and the median against decoding's bandwidth limits. Nothing when no point decoded.
void decoding_section(std::ostringstream& h, const std::vector<PointResult>& points);

// An inference sweep's section of report.html (sweep_report.cc): the panels over batch size, GPU
// time and energy, every metric as a heatmap, latency distributions, and every point (all: the
// failed ones too, with their reason); the charts also as figures.
void sweep_section(std::ostringstream& h, FigureBook& figs, const std::vector<PointResult>& all);

// A data-parallel training run (summary.json's distributed section): each rank's median step by
// phase, the stragglers, the communication's share and overlap, the all-reduce's bandwidth and
// the scaling efficiency. Nothing for a one-process run.
void distributed_section(std::ostringstream& h, FigureBook& figs, const nlohmann::json& distributed);

// A token classifier's eval (token_classification.json): each pass's seqeval scores (micro,
// macro and weighted), the per-entity-type table of every pass and the first pass's F1 per type.
void token_eval_section(std::ostringstream& h, FigureBook& figs, const nlohmann::json& eval);

// A question-answering model's eval (question_answering.json): each pass's SQuAD exact match and
// F1 (HasAns and NoAns for v2.0) with its settings, and the scores as bars.
void qa_eval_section(std::ostringstream& h, FigureBook& figs, const nlohmann::json& eval);

// A tach shrink run (rows with a variant and an accuracy): accuracy against median latency and
// against peak memory per batch size, the Pareto frontier drawn and tabled. Nothing otherwise.
void shrink_section(std::ostringstream& h, FigureBook& figs, const std::vector<PointResult>& points);

// report.html's stylesheet, which every kind of run's page shares.
const char* page_style();

// A tach analyze run (analysis.json: torch.profiler traces summarised, or two runs compared): its
// page, figures and findings from the JSON alone. build_run_report sends such a directory here.
bool is_analysis_run(const std::string& run_dir);
RunReport build_analysis_report(const std::string& run_dir);

}  // namespace tach::report
