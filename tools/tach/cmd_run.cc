// tach run: the whole pipeline, prepare data -> bench -> profile -> report, in one run directory.
#include <iostream>
#include <map>

#include "bench_options.h"
#include "progress.h"
#include "commands.h"
#include "tach/dataset.h"
#include "tach/report.h"

namespace tach::cli {

namespace {

struct RunFlags {
  BenchFlags bench;
  bool skip_bench = false, skip_profile = false, skip_report = false;
};

int run_pipeline(const RunFlags& f) {
  BenchConfig config = f.bench.resolve();
  // 1. Data: read and check the dataset now, so that a bad column fails before minutes of sweep.
  if (!config.dataset.path.empty()) {
    const Dataset d = read_dataset(config.dataset);
    std::map<std::string, int64_t> counts;
    for (const auto& e : d.examples) ++counts[e.label];
    std::cout << "[1/4] data: " << d.examples.size() << " examples from " << d.path << " (" << d.format
              << (d.split.empty() ? "" : ", split " + d.split) << "), " << counts.size() << " labels\n";
    config.accuracy = true;
  } else {
    std::cout << "[1/4] data: no --dataset; synthetic inputs, and no accuracy pass\n";
  }
  // 2. Bench (and accuracy); 3. the profile rides on it: every point gets a profiled window
  // after its measured runs.
  config.profile = config.profile || !f.skip_profile;
  SweepOutcome out;
  if (!f.skip_bench) {
    std::cout << "[2/4] bench: " << config.model << "\n";
    out = run_bench(config, bench_progress(f.bench.no_progress, config));
    end_bench_progress(f.bench.no_progress);
  } else {
    std::cout << "[2/4] bench: skipped (--skip-bench)\n";
  }
  std::cout << "[3/4] profile: "
            << (f.skip_profile ? std::string("skipped (--skip-profile)")
                : f.skip_bench ? std::string("skipped with the bench (it profiles the bench's points)")
                               : "traces/<point>/ in " + out.run_dir + " (trace.json, op tables, stacks)")
            << "\n";
  // 4. Report.
  if (f.skip_report || f.skip_bench) {
    std::cout << "[4/4] report: " << (f.skip_report ? "skipped (--skip-report)" : "nothing to report without the bench")
              << "\n";
    return 0;
  }
  print_outcome(out.config, out, f.bench.format);  // writes summary.json, which the report reads
  std::cout << "[4/4] report: summary.txt, summary.json, detailed_metrics.csv, " << write_run_report(out.run_dir)
            << "\n";
  return 0;
}

}  // namespace

Command add_run_command(CLI::App& app) {
  auto f = std::make_shared<RunFlags>();
  CLI::App* sub = app.add_subcommand(
      "run",
      "The pipeline: prepare data -> bench (+ accuracy when a dataset is given) -> profile -> report, into one "
      "run directory; takes every tach bench option");
  add_bench_options(sub, f->bench, BenchScope::pipeline);
  sub->add_flag("--skip-bench", f->skip_bench, "Skip the sweep");
  sub->add_flag("--skip-profile", f->skip_profile, "Skip the profile");
  sub->add_flag("--skip-report", f->skip_report, "Skip the report");
  return {sub, [f] { return run_pipeline(*f); }};
}

}  // namespace tach::cli
