// What one run's traces leave behind once each is read and dropped: the merged op rows, each
// trace's summary, the steps, and per rank the GPU time, kernels and memory peaks. analyse_run
// (analysis.h) builds the tables, analysis.json and the terminal report from it alone.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyze/gpu_time.h"
#include "analyze/op_averages.h"
#include "analyze/roofline.h"
#include "analyze/steps.h"

namespace tach::analyze {

struct RankState {
  int rank = 0;
  std::optional<GpuTime> gpu;  // summed over the rank's traces
  std::map<std::string, KernelStat> kernels;
  int64_t comm_ns = 0, overlapped_ns = 0;
  int64_t cpu_peak_allocated = -1, device_peak_allocated = -1;
  std::vector<std::string> files;
  std::vector<int64_t> step_walls_ns;
  int64_t base_time_ns = 0;
};

// The span of time a trace covers on its rank: two traces of one rank may not overlap.
struct FileSpan {
  std::string path;
  int rank;
  bool rank_assumed;  // the trace names no rank
  int64_t first_ns, last_ns;
};

struct RunRecords {
  std::vector<std::string> files;                                   // in the order read
  std::vector<OpRow> ops;                                           // merged over the traces, unsorted
  nlohmann::ordered_json traces = nlohmann::ordered_json::array();  // analysis.json's traces[]
  nlohmann::ordered_json notes = nlohmann::ordered_json::array();   // strings, said before the tables
  std::map<int, RankState> ranks;
  std::vector<FileSpan> spans;
  std::vector<std::pair<std::string, StepRow>> step_rows;                      // (trace, step), in the order read
  nlohmann::ordered_json device_properties = nlohmann::ordered_json::array();  // the first trace's that has any
  std::map<std::string, NameCost> costs;  // the roofline's bytes and FLOPs per op name
  size_t kernel_steps = 0;                // RunAnalysis::kernel_steps

  bool any_gpu() const;
};

// files: the traces of one run, each read, reduced and dropped before the next. several_paths:
// the user named more than one path (the note on summed traces then points to --compare).
// Throws when two traces claim one rank over the same time.
RunRecords read_run(const std::vector<std::string>& files, GroupBy group_by, bool several_paths);

int64_t median(std::vector<int64_t> v);

// k added to into[k.name]: calls and time summed, the extremes kept.
void merge_kernel(std::map<std::string, KernelStat>& into, const KernelStat& k);

}  // namespace tach::analyze
