// tach bench, tach eval and tach run: the sweep, the accuracy pass, and the pipeline.
#include <iostream>

#include "bench_options.h"
#include "progress.h"
#include "commands.h"
#include "tach/bench.h"
#include "tach/dataset.h"
#include "tach/error.h"
#include "tach/report.h"

namespace tach::cli {

void print_outcome(const BenchConfig& config, const SweepOutcome& out, const std::string& format) {
  write_run_reports(config, out);
  if (!out.results.empty()) {
    if (format == "table" && config.train.enabled) {
      std::cout
          << "\nResults (ms per optimizer step, wall clock, and its phases' medians: data, forward with the loss, "
             "backward, optimizer; samples/s and tokens/s over the summed step time; MFU: model FLOP/s over the "
             "measured GEMM ceiling; memory peaks per point)\n";
    } else if (format == "table") {
      std::cout << "\nResults (ms per batch, model forward only; samples/s and tokens/s over the summed measured "
                   "time; tokens/s counts real tokens; memory peaks per point)\n";
    }
    std::cout << results_table(out.results, format, config.model);
  }
  if (format == "table") {
    std::cout << "\n" << summary_text(config, out);
    std::cout << "\nwritten: " << out.run_dir << "/{config.json, results.jsonl, summary.json, summary.txt, "
              << "detailed_metrics.csv" << (out.accuracy.empty() ? "" : ", accuracy.json")
              << (config.train.enabled ? ", performance_report.md" : "") << ", run.log"
              << (config.tensorboard ? ", tensorboard/" : "") << "}\n";
  }
}

namespace {

int run_bench_command(const BenchFlags& f) {
  if (!f.resume.empty()) {
    for (const auto& [opt, _] : f.given)
      check(opt->count() == 0, "--resume continues a run with its own config.json; drop " + opt->get_name() +
                                   " (start a new run to change the configuration)");
    check(f.config_file.empty(), "--resume continues a run with its own config.json; drop --config");
  }
  SweepOutcome out;
  if (f.resume.empty()) {
    const BenchConfig config = f.resolve();
    out = run_bench(config, bench_progress(f.no_progress, config));
  } else {
    std::cerr << "tach: resuming " << f.resume << "\n";
    out = resume_bench(f.resume, bench_progress(f.no_progress, BenchConfig{}));
  }
  end_bench_progress(f.no_progress);
  print_outcome(out.config, out, f.format);
  if (f.report) std::cerr << "report: " << write_run_report(out.run_dir) << "\n";
  return 0;
}

}  // namespace

Command add_bench_command(CLI::App& app) {
  auto f = std::make_shared<BenchFlags>();
  CLI::App* sub = app.add_subcommand(
      "bench",
      "Inference sweep: latency (median, p90/p95/p99), throughput and memory over batch sizes x sequence lengths x "
      "dtypes x devices x threads, optionally accuracy; writes runs/<run_id>/. With no arguments: DistilBERT-base "
      "(synthetic weights), batch 1-32 at seq 128, f32, on the CPU. With --train: training steps over the same axes "
      "and method x exec x gradient checkpointing, with the phase breakdown, MFU, memory per category and "
      "performance_report.md (the diagnosis of the curve).");
  add_bench_options(sub, *f, BenchScope::sweep);
  add_train_sweep_options(sub, *f);
  sub->add_flag("--report", f->report, "Also write runs/<id>/report.html (as tach report does)");
  return {sub, [f] { return run_bench_command(*f); }};
}

}  // namespace tach::cli
