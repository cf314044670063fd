// analyse_run: one run's traces read (run_records.h), then its analysis.json, findings and
// terminal report built from what they left behind.
#include <algorithm>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "analyze/analysis.h"
#include "analyze/op_averages.h"
#include "analyze/report_format.h"
#include "analyze/roofline.h"
#include "analyze/run_ceilings.h"
#include "analyze/run_findings.h"
#include "analyze/run_json.h"
#include "analyze/run_records.h"
#include "analyze/run_text.h"
#include "tach/analyze.h"
#include "tach/error.h"

namespace tach {
namespace {

namespace fs = std::filesystem;
// Ordered: analysis.json lists each object's fields in the order docs/cli.md gives them.
using json = nlohmann::ordered_json;
using namespace tach::analyze;

bool is_json_name(const std::string& name) {
  auto ends = [&](const std::string& s) {
    return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  return ends(".json") || ends(".json.gz");
}

std::vector<std::string> expand(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      // tensorboard_trace_handler's files where there are any (*.pt.trace.json[.gz]: other JSON
      // beside them is not a trace), else every JSON file.
      std::vector<std::string> inside, handler;
      for (const auto& entry : fs::directory_iterator(p, ec)) {
        const std::string name = entry.path().filename().string();
        if (!entry.is_regular_file() || !is_json_name(name)) continue;
        inside.push_back(entry.path().string());
        if (name.find(".pt.trace.json") != std::string::npos) handler.push_back(entry.path().string());
      }
      if (!handler.empty()) inside = handler;
      std::sort(inside.begin(), inside.end());
      check(!inside.empty(), p + ": no trace files (*.json, *.json.gz) in this directory");
      files.insert(files.end(), inside.begin(), inside.end());
    } else {
      check(fs::exists(p, ec), p + ": no such file or directory");
      files.push_back(p);
    }
  }
  check(!files.empty(), "no trace given");
  // One file twice would count each of its events twice (or, by its rank, refuse as two claims).
  std::map<std::string, std::string> seen;  // canonical path: the path as given
  for (const auto& f : files) {
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(f, ec);
    const auto [it, fresh] = seen.emplace(ec ? f : canonical.string(), f);
    check(fresh, f + (it->second == f ? "" : " (" + it->second + ")") + " is given twice: give each trace once");
  }
  return files;
}

}  // namespace

std::vector<std::string> analyze_sort_columns() { return analyze::sort_columns(); }

namespace analyze {

RunAnalysis analyse_run(const std::vector<std::string>& paths, const AnalyzeOptions& options) {
  const GroupBy group_by = parse_group_by(options.group_by);
  if (!options.sort_by.empty()) {
    std::vector<OpRow> none;
    sort_rows(none, options.sort_by);  // a usage error for an unknown column, before any reading
  }
  // A directory is one run (tensorboard_trace_handler writes one per run): beside other paths it
  // would be summed with another run's traces, so it is refused rather than summed.
  if (paths.size() > 1)
    for (const auto& p : paths) {
      std::error_code ec;
      check(!fs::is_directory(p, ec),
            p + ": a directory is one run, and " + std::to_string(paths.size()) +
                " paths were given to analyse as one run; give one directory, or the trace files of one run "
                "(together one run), or compare two runs (tach analyze BASELINE_DIR NEW_DIR, or --compare A B)");
    }
  RunRecords run = read_run(expand(paths), group_by, paths.size() > 1);
  const bool any_gpu = run.any_gpu();
  const std::string sort_by = !options.sort_by.empty() ? options.sort_by : any_gpu ? "self_device" : "self_cpu";
  sort_rows(run.ops, sort_by);

  json j;
  j["schema"] = "tach.analysis/1";
  j["traces"] = run.traces;
  j["notes"] = run.notes;
  j["group_by"] = options.group_by;
  j["sort_by"] = sort_by;
  j["device_properties"] = run.device_properties;
  RunCeilings ceilings = choose_ceilings(any_gpu, run.device_properties, run.notes);
  // The memory side: each op the cost model takes (op_cost.h), its bytes against the bandwidth.
  if (!ceilings.roofline.is_null()) ceilings.roofline["ops"] = roofline_ops(run.ops, run.costs, *ceilings.peak);
  j["notes"] = run.notes;
  j["roofline"] = ceilings.roofline;
  j["ops"] = ops_json(run.ops, group_by, ceilings.peak);
  j["steps"] = steps_json(run.step_rows);
  j["ranks"] = ranks_json(run.ranks, options.top);
  j["findings"] = run_findings(run, run.ops, ceilings.roofline, ceilings.peak);

  RunAnalysis out;
  out.files = run.files;
  out.kernel_steps = run.kernel_steps;
  out.gpu = any_gpu;
  out.text = run_text(run, j, ceilings.peak, group_by, options.top);
  out.ops = std::move(run.ops);
  for (const auto& [file, st] : run.step_rows) out.step_walls_ms.push_back(us(st.wall_ns) * 1e-3);
  for (const auto& [rank, r] : run.ranks)
    for (const auto& [name, k] : r.kernels) merge_kernel(out.kernels, k);
  out.json = std::move(j);
  return out;
}

std::string analysis_json_text(const nlohmann::ordered_json& j) {
  // Names are the trace's bytes: invalid UTF-8 is replaced (U+FFFD) rather than refused.
  return j.dump(1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace analyze

TraceAnalysis analyze_traces(const std::vector<std::string>& paths, const AnalyzeOptions& options) {
  analyze::RunAnalysis run = analyze::analyse_run(paths, options);
  return {run.files, analyze::analysis_json_text(run.json), run.text};
}

}  // namespace tach
