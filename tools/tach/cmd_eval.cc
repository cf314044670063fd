// tach eval: the accuracy pass alone, on a labelled dataset.
#include <iostream>

#include "bench_options.h"
#include "progress.h"
#include "commands.h"
#include "tach/report.h"

namespace tach::cli {

Command add_eval_command(CLI::App& app) {
  auto f = std::make_shared<BenchFlags>();
  CLI::App* sub = app.add_subcommand(
      "eval",
      "Accuracy on a labelled dataset: accuracy, macro-F1, per-class precision/recall/F1, the confusion matrix, time "
      "and throughput, one pass per device and dtype; writes runs/<run_id>/ (accuracy.json, summary.txt, ...). An "
      "existing --run-id is refused");
  add_bench_options(sub, *f, BenchScope::eval);
  return {sub, [f] {
            const BenchConfig config = f->resolve();
            const SweepOutcome out = run_eval(config, bench_progress(false, config));
            end_bench_progress(false);
            write_run_reports(out.config, out);
            const bool synthetic = !out.models.empty() && out.models.front().synthetic_weights;
            std::cout << accuracy_text(out.accuracy, out.accuracy_dataset, synthetic);
            std::cout << "written: " << out.run_dir
                      << "/{config.json, accuracy.json, summary.json, summary.txt, run.log}\n";
            return 0;
          }};
}

}  // namespace tach::cli
