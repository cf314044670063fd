// tach analyze: torch.profiler traces (*.pt.trace.json[.gz], as tensorboard_trace_handler and
// export_chrome_trace write them) read and summarised: the op table torch prints, steps and their
// phases, and each rank's GPU time as Holistic Trace Analysis breaks it down.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tach {

struct AnalyzeOptions {
  std::string group_by = "name";  // name | shape | stack
  std::string sort_by;  // an op column (analyze_sort_columns); default self_device on GPU traces, else self_cpu
  size_t top = 20;      // op and kernel rows printed (analysis.json keeps every op)
};

struct TraceAnalysis {
  std::vector<std::string> files;  // the traces read, in order
  std::string json;                // schema tach.analysis/1 (docs/formats.md)
  std::string text;                // the terminal report
};

// paths: trace files and directories of them (the *.pt.trace.json[.gz] inside, or where there are
// none every *.json and *.json.gz; not recursive).
// The paths are one run: a directory (one run, as tensorboard_trace_handler writes it), or trace
// files whose tables are summed (analysis.json's first note says so, naming each rank's traces).
// Throws tach::Error for a path with no trace, a file that is not a whole trace, two files that
// claim one rank over the same time, or a directory beside other paths (another run: not summed).
TraceAnalysis analyze_traces(const std::vector<std::string>& paths, const AnalyzeOptions& options);

// Two runs compared (tach analyze A B): each side's paths as analyze_traces takes them, the first
// the baseline. json: the later run's analysis with "baseline" (the first run's, whole) and
// "comparison" (the median step's change with a noise verdict, and each op and kernel on both
// sides with its deltas; docs/formats.md). text: the comparison; details: each run's own report.
struct TraceComparison {
  TraceAnalysis analysis;  // json and text as above
  std::string details;     // both runs' own reports, for summary.txt
};
TraceComparison compare_traces(const std::vector<std::string>& baseline, const std::vector<std::string>& now,
                               const AnalyzeOptions& options);

// The columns --sort-by takes.
std::vector<std::string> analyze_sort_columns();

}  // namespace tach
