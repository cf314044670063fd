// tach analyze: torch.profiler traces a user already has, summarised as torch and HTA would.
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "commands.h"
#include "tach/analyze.h"
#include "tach/error.h"
#include "tach/runtime.h"
#include "usage.h"

namespace tach::cli {

namespace {

namespace fs = std::filesystem;

struct AnalyzeCliOptions {
  std::vector<std::string> paths;
  AnalyzeOptions analyze;
  bool json = false;
  bool compare = false;
  std::string output_dir;
};

// Two runs to compare: --compare, or two directories (tensorboard_trace_handler writes one per run).
bool comparing(const AnalyzeCliOptions& opt) {
  if (opt.compare) return true;
  std::error_code ec;
  return opt.paths.size() == 2 && fs::is_directory(opt.paths[0], ec) && fs::is_directory(opt.paths[1], ec);
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  check(f.good(), path + ": cannot write (disk full, or no permission?)");
}

int run_analyze(const AnalyzeCliOptions& opt) {
  usage_check(!opt.compare || opt.paths.size() == 2,
              "--compare takes two paths, the baseline first (each a trace or a directory of them); " +
                  std::to_string(opt.paths.size()) + " given");
  std::string dir = opt.output_dir;
  if (dir.empty()) {
    const std::time_t t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::gmtime(&t));
    // Two analyses in one second (a script, a notebook) each get their own directory.
    const std::string base = "runs/" + std::string(buf) + "-analyze";
    dir = base;
    for (int n = 2; fs::exists(dir); ++n) dir = base + "-" + std::to_string(n);
  }
  // Before any trace is read: a bench run's summary.txt, or an earlier analysis, is never overwritten.
  refuse_run_dir_in_use(dir, {}, "give -o a new or empty directory");
  TraceAnalysis a;
  std::string details;
  if (comparing(opt)) {
    TraceComparison c = compare_traces({opt.paths[0]}, {opt.paths[1]}, opt.analyze);
    a = std::move(c.analysis);
    details = "\n" + c.details;
  } else {
    a = analyze_traces(opt.paths, opt.analyze);
  }
  fs::create_directories(dir);
  announce_run_dir(dir);
  write_file(dir + "/analysis.json", a.json + "\n");
  write_file(dir + "/summary.txt", a.text + details);
  if (opt.json) {
    std::cout << a.json << "\n";
    std::cerr << "tach: wrote " << dir << "/analysis.json and summary.txt\n";
  } else {
    std::cout << a.text << "\nwrote " << dir << "/analysis.json and summary.txt\n";
  }
  return 0;
}

}  // namespace

Command add_analyze_command(CLI::App& app) {
  auto opt = std::make_shared<AnalyzeCliOptions>();
  CLI::App* sub = app.add_subcommand(
      "analyze",
      "Read torch.profiler traces (*.pt.trace.json[.gz], from tensorboard_trace_handler or export_chrome_trace) and "
      "summarise them: the op table torch's key_averages() prints (calls, self and total CPU and device time, FLOPs, "
      "self CPU memory), each ProfilerStep's wall time split into data loading, forward, backward, optimizer and "
      "other, and each rank's GPU time as Holistic Trace Analysis breaks it down (idle, compute, non-compute; "
      "kernel types; top kernels; communication overlapped by computation), with a roofline and findings in words. "
      "A directory is one run; trace files given together are one run (their tables summed, which the output "
      "notes, naming each rank's traces); several directories are never summed. Two directories (or two paths with "
      "--compare) are two runs compared: the median step's change with a noise verdict, and each op and kernel side "
      "by side with its deltas. Writes analysis.json and summary.txt into a run "
      "directory (tach report RUN_DIR draws it)");
  sub->add_option(
         "paths", opt->paths,
         "Trace files, or directories of them (the *.pt.trace.json[.gz] inside; else every *.json and *.json.gz). "
         "One directory, or trace files (together one run); two directories: two runs compared, the first the "
         "baseline; more directories, or a directory beside other paths, are refused")
      ->required()
      ->expected(1, -1);
  sub->add_flag("--compare", opt->compare,
                "Compare two paths (traces or directories; the baseline first) rather than analyse them as one run. "
                "Two directories are compared without it");
  sub->add_flag("--json", opt->json, "Print analysis.json (schema tach.analysis/1) on stdout instead of the tables");
  sub->add_option(
         "--group-by", opt->analyze.group_by,
         "Op rows per name, per name and input shapes (shape; record_shapes), or per name and the "
         "enclosing Python frames, the five innermost (stack; with_stack; across traces and runs, matched without the "
         "object addresses torch writes in C functions' names)")
      ->check(CLI::IsMember({"name", "shape", "stack"}))
      ->capture_default_str();
  sub->add_option("--sort-by", opt->analyze.sort_by,
                  "Op column to sort by: self_cpu, cpu, self_device, device, calls, flops, self_cpu_memory, "
                  "cpu_memory, name. Default: self_device where the traces have GPU events, else self_cpu")
      ->check(CLI::IsMember(analyze_sort_columns()));
  sub->add_option("--top", opt->analyze.top, "Op and kernel rows printed (analysis.json keeps every op)")
      ->check(positive_count("--top", "--top values"))
      ->capture_default_str();
  sub->add_option(
      "-o,--output", opt->output_dir,
      "Run directory to write, new or empty (one that holds anything is refused; default runs/<time>-analyze)");
  return {sub, [opt] { return run_analyze(*opt); }};
}

}  // namespace tach::cli
