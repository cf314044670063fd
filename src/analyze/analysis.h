// One run's traces analysed, kept as figures as well as analysis.json: what `tach analyze A B`
// compares (comparison.h) besides what `tach analyze A` prints.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyze/gpu_time.h"
#include "analyze/op_averages.h"
#include "tach/analyze.h"

namespace tach::analyze {

struct RunAnalysis {
  std::vector<std::string> files;             // the traces read, in order
  nlohmann::ordered_json json;                // schema tach.analysis/1 (docs/formats.md)
  std::string text;                           // the terminal report
  std::vector<OpRow> ops;                     // the op table, sorted as printed
  std::vector<double> step_walls_ms;          // every ProfilerStep#N's wall time, in the order read
  std::map<std::string, KernelStat> kernels;  // every kernel, copy and set, over every rank
  size_t kernel_steps = 0;                    // the steps those kernels cover: a trace's last is left out (gpu_time.h)
  bool gpu = false;                           // some trace has GPU events
};

// paths: as analyze_traces takes them (tach/analyze.h).
RunAnalysis analyse_run(const std::vector<std::string>& paths, const AnalyzeOptions& options);

// analysis.json's text: invalid UTF-8 in names (a trace's bytes) replaced by U+FFFD, not refused.
std::string analysis_json_text(const nlohmann::ordered_json& j);

}  // namespace tach::analyze
