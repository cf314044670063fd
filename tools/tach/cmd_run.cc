// tach run: the whole pipeline, prepare data -> bench -> profile -> report, in one run directory.
#include <iostream>
#include <map>

#include "bench_options.h"
#include "progress.h"
#include "commands.h"
#include "tach/dataset.h"
#include "tach/error.h"
#include "tach/question_answering.h"
#include "tach/report.h"
#include "tach/token_classification.h"

namespace tach::cli {

namespace {

struct RunFlags {
  BenchFlags bench;
  SlurmFlags slurm;  // taken so that every tach bench option is, and refused: the pipeline runs here
  bool skip_bench = false, skip_profile = false, skip_report = false;
};

// What tach bench takes and the pipeline cannot do, refused with what to run instead.
void check_pipeline_options(const RunFlags& f) {
  bool slurm = f.slurm.submit || !f.slurm.plan.empty() || f.slurm.task >= 0;
  for (const auto* opt : f.slurm.submit_only) slurm = slurm || opt->count() > 0;
  usage_check(
      !slurm,
      "tach run runs its pipeline here, the profile and the report on the sweep's points: on a SLURM cluster run "
      "tach bench --slurm --profile, then tach report RUN_DIR once its points are in");
  usage_check(!(f.bench.report && f.skip_report),
              "--report asks for the report that --skip-report leaves out; give one");
  check_resume_alone(f.bench);
}

// The task pass a token classifier or a question-answering model gets from --dataset ("" for
// neither: a sequence classifier's labelled rows, read and counted here).
std::string per_token_task(const BenchConfig& config) {
  if (evaluates_token_classification(config)) return "tagged words for seqeval's entity precision, recall and F1";
  if (evaluates_question_answering(config)) return "SQuAD questions for exact match and F1";
  return "";
}

int run_pipeline(const RunFlags& f) {
  check_pipeline_options(f);
  const bool resume = !f.bench.resume.empty();
  BenchConfig config = resume ? BenchConfig{} : f.bench.resolve();
  if (!resume) check_lengths_fit_model(config);  // a length past the model's positions: before any step
  // 1. Data: read and check the dataset now, so that a bad column fails before minutes of sweep.
  if (resume) {
    std::cout << "[1/4] data: as the run in " << f.bench.resume << " has it (its config.json)\n";
  } else if (!config.dataset.path.empty() && !config.train.enabled && !per_token_task(config).empty()) {
    // bench's task pass (tach eval's code) reads and checks the file before its run directory is made.
    std::cout << "[1/4] data: " << config.dataset.path << ", " << per_token_task(config)
              << " (read and checked by the bench step's accuracy pass)\n";
    config.accuracy = true;
  } else if (!config.dataset.path.empty()) {
    const Dataset d = read_dataset(config.dataset);
    std::map<std::string, int64_t> counts;
    for (const auto& e : d.examples) ++counts[e.label];
    std::cout << "[1/4] data: " << d.examples.size() << " examples from " << d.path << " (" << d.format
              << (d.split.empty() ? "" : ", split " + d.split) << "), " << counts.size() << " labels"
              << (config.train.enabled ? "; the training sweep trains on its batches" : "") << "\n";
    // A training sweep measures steps; the accuracy of what it trains is tach eval's.
    if (!config.train.enabled) {
      // The pass is this command's doing, not --accuracy's: the flag to drop is --dataset.
      check(config.head == "auto" || config.head == "sequence-classification",
            "tach run's accuracy pass (it runs when --dataset is given) has no metric for --head " + config.head +
                ": drop --dataset (tach run then measures synthetic inputs)");
      config.accuracy = true;
    }
  } else {
    std::cout << "[1/4] data: no --dataset; synthetic inputs, and no accuracy pass\n";
  }
  // 2. Bench (and accuracy); 3. the profile rides on it: every point gets a profiled window
  // after its measured runs.
  config.profile = config.profile || !f.skip_profile;
  SweepOutcome out;
  if (f.skip_bench) {
    std::cout << "[2/4] bench: skipped (--skip-bench)\n";
  } else if (resume) {
    std::cout << "[2/4] bench: resuming " << f.bench.resume << "\n";
    out = resume_bench(f.bench.resume, bench_progress(f.bench.no_progress, BenchConfig{}));
    end_bench_progress(f.bench.no_progress);
  } else {
    std::cout << "[2/4] bench: " << config.model << (config.train.enabled ? " (training steps)" : "") << "\n";
    out = run_bench(config, bench_progress(f.bench.no_progress, config));
    end_bench_progress(f.bench.no_progress);
  }
  const bool profiled = resume ? out.config.profile : !f.skip_profile;
  std::cout << "[3/4] profile: "
            << (f.skip_bench ? std::string("skipped with the bench (it profiles the bench's points)")
                : !profiled  ? std::string("skipped (--skip-profile)")
                             : "traces/<point>/ in " + out.run_dir + " (trace.json, op tables, stacks)")
            << "\n";
  // 4. Report.
  if (f.skip_report || f.skip_bench) {
    std::cout << "[4/4] report: " << (f.skip_report ? "skipped (--skip-report)" : "nothing to report without the bench")
              << "\n";
    if (!f.skip_bench) check_some_point_ran(out);
    return 0;
  }
  print_outcome(out.config, out, f.bench.format);  // writes summary.json, which the report reads
  std::cout << "[4/4] report: summary.txt, summary.json, detailed_metrics.csv, " << write_run_report(out.run_dir)
            << "\n";
  check_some_point_ran(out);
  return 0;
}

}  // namespace

Command add_run_command(CLI::App& app) {
  auto f = std::make_shared<RunFlags>();
  CLI::App* sub = app.add_subcommand(
      "run",
      "The pipeline: prepare data -> bench (+ accuracy when a dataset is given) -> profile -> report, into one "
      "run directory; takes every tach bench option (--train: a training sweep; --report: the report is "
      "written anyway; --slurm is refused: the pipeline runs here)");
  add_bench_options(sub, f->bench, BenchScope::pipeline);
  add_train_sweep_options(sub, f->bench);
  sub->add_flag("--report", f->bench.report, "Write report.html (as tach run does anyway, unless --skip-report)");
  add_slurm_options(sub, f->slurm);
  for (const char* name :
       {"--slurm", "--slurm-partition", "--slurm-time", "--slurm-cpus-per-task", "--slurm-gpus-per-task",
        "--slurm-array-parallelism", "--slurm-dry-run", "--slurm-plan", "--slurm-task"})
    sub->get_option(name)->group("tach bench's SLURM options (refused here: the pipeline runs on this machine)");
  sub->add_flag("--skip-bench", f->skip_bench, "Skip the sweep");
  sub->add_flag("--skip-profile", f->skip_profile, "Skip the profile");
  sub->add_flag("--skip-report", f->skip_report, "Skip the report");
  return {sub, [f] { return run_pipeline(*f); }};
}

}  // namespace tach::cli
