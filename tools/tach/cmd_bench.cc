// tach bench, tach eval and tach run: the sweep, the accuracy pass, and the pipeline.
#include <iostream>

#include "bench_options.h"
#include "progress.h"
#include "commands.h"
#include "tach/bench.h"
#include "tach/dataset.h"
#include "tach/error.h"
#include "tach/question_answering.h"
#include "tach/report.h"
#include "tach/slurm.h"

namespace tach::cli {

void print_outcome(const BenchConfig& config, const SweepOutcome& out, const std::string& format) {
  write_run_reports(config, out);
  if (!out.results.empty()) {
    if (format == "table" && config.train.enabled) {
      std::cout
          << "\nResults (ms per optimizer step, wall clock, and its phases' medians: data, forward with the loss, "
             "backward, optimizer; "
          << kThroughputDefinition
          << "; MFU: that model FLOP/s over the measured GEMM ceiling; memory peaks per point)\n";
    } else if (format == "table") {
      std::cout << "\nResults (ms per batch, model forward only; " << kThroughputDefinition
                << "; tokens/s counts real tokens; memory peaks per point)\n";
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

void print_submission(const SlurmSubmission& sub) {
  for (const auto& n : sub.notes) std::cerr << "tach: " << n << "\n";
  if (sub.tasks == 0) return;
  std::cout << "wrote " << sub.script << " (a job array of " << sub.tasks << " task(s) for " << sub.points
            << " point(s)" << (sub.finished_points ? ", " + std::to_string(sub.finished_points) + " already in" : "")
            << "; which task runs which points: " << sub.plan << ")\n";
  if (sub.job_id.empty()) return;
  std::cout << "submitted: job " << sub.job_id << " (" << sub.command << ")\n"
            << "follow it with squeue -j " << sub.job_id << "; each task logs to " << sub.run_dir
            << "/slurm/logs/. Once its points are in: tach report " << sub.run_dir
            << ". Points missing after it ends: tach bench --resume " << sub.run_dir << " --slurm\n";
}

// One array task: its points, then the run's summary once every point of the run is in.
int run_slurm_task_command(const BenchFlags& f, const SlurmFlags& s) {
  check(!f.resume.empty() && !s.plan.empty() && s.task >= 0,
        "--slurm-plan and --slurm-task are what sweep.sbatch runs in each array task, with --resume RUN_DIR");
  const SweepOutcome out = run_slurm_task(f.resume, s.plan, s.task, bench_progress(f.no_progress, BenchConfig{}));
  end_bench_progress(f.no_progress);
  if (!out.results.empty()) std::cout << results_table(out.results, f.format, out.config.model);
  std::vector<PointKey> missing;
  const SweepOutcome run = collect_bench(f.resume, &missing);
  if (!missing.empty()) {
    std::cerr << "tach: task " << s.task << " done; " << missing.size() << " point(s) of the run are not in yet\n";
    return 0;
  }
  // The last task to finish writes the summary; two finishing at once write the same files.
  write_run_reports(run.config, run);
  std::cerr << "tach: every point of " << f.resume << " is in: wrote summary.json, summary.txt\n";
  return 0;
}

// A question-answering model runs MLPerf's BERT shape, 384 tokens (or its positions, when fewer),
// where neither -s nor the config file gives the lengths (the default 128 is a classifier's).
BenchConfig with_task_length(const BenchFlags& f, BenchConfig c) {
  for (const auto& [opt, apply] : f.given)
    if (opt->check_lname("seq-lens") && opt->count() > 0) return c;
  if (c.train.enabled || c.seq_lens != BenchConfig{}.seq_lens || c.model.empty()) return c;
  if (const int64_t length = question_answering_bench_length(c); length > 0) c.seq_lens = {length};
  return c;
}

int run_bench_command(const BenchFlags& f, const SlurmFlags& s) {
  if (!s.plan.empty() || s.task >= 0) return run_slurm_task_command(f, s);
  for (const auto* opt : s.submit_only)
    check(opt->count() == 0 || s.submit, opt->get_name() + " is a setting of the job array: add --slurm");
  check_resume_alone(f);
  if (s.submit) {
    check(!f.report,
          "--report writes the report at the end of a run here; with --slurm the run ends on the cluster: "
          "tach report RUN_DIR once its points are in");
    print_submission(f.resume.empty() ? submit_bench_slurm(with_task_length(f, f.resolve()), s.options)
                                      : resubmit_bench_slurm(f.resume, s.options));
    return 0;
  }
  SweepOutcome out;
  if (f.resume.empty()) {
    const BenchConfig config = with_task_length(f, f.resolve());
    check_lengths_fit_model(config);
    out = run_bench(config, bench_progress(f.no_progress, config));
  } else {
    std::cerr << "tach: resuming " << f.resume << "\n";
    out = resume_bench(f.resume, bench_progress(f.no_progress, BenchConfig{}));
  }
  end_bench_progress(f.no_progress);
  if (out.rank != 0) return 0;  // under mpirun rank 0 speaks for the job and writes the run
  print_outcome(out.config, out, f.format);
  if (f.report) std::cerr << "report: " << write_run_report(out.run_dir) << "\n";
  check_some_point_ran(out);
  return 0;
}

}  // namespace

Command add_bench_command(CLI::App& app) {
  auto f = std::make_shared<BenchFlags>();
  auto slurm = std::make_shared<SlurmFlags>();
  CLI::App* sub = app.add_subcommand(
      "bench",
      "Inference sweep: latency (median, p90/p95/p99), throughput and memory over batch sizes x sequence lengths x "
      "dtypes x devices x threads, optionally accuracy; writes runs/<run_id>/. With no arguments: DistilBERT-base "
      "(synthetic weights), batch 1-32 at seq 128, f32, on the CPU; a question-answering model at seq 384 (MLPerf's "
      "BERT shape). With --train: training steps over the same axes "
      "and method x exec x gradient checkpointing, with the phase breakdown, MFU, memory per category and "
      "performance_report.md (the diagnosis of the curve).");
  add_bench_options(sub, *f, BenchScope::sweep);
  add_train_sweep_options(sub, *f);
  sub->add_flag("--report", f->report, "Also write runs/<id>/report.html (as tach report does)");
  add_slurm_options(sub, *slurm);
  return {sub, [f, slurm] { return run_bench_command(*f, *slurm); }};
}

}  // namespace tach::cli
