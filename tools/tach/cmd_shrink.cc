// tach shrink: the trade-off table of ways to make a model smaller (dtypes, pruning, students),
// each variant's accuracy, latency over batch sizes, throughput and memory in one run directory.
#include <iostream>

#include "commands.h"
#include "progress.h"
#include "tach/error.h"
#include "tach/report.h"
#include "tach/shrink.h"
#include "usage.h"

namespace tach::cli {

namespace {

struct ShrinkFlags {
  ShrinkOptions options;
  std::string resume;
  bool no_progress = false;
  bool report = false;
};

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (auto x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

int run_shrink_command(ShrinkFlags& f, CLI::App* sub) {
  ShrinkObserver observer;
  observer.bench = bench_progress(f.no_progress, f.options.base);
  observer.on_variant = [](const ShrinkVariant& v, size_t i, size_t n) {
    std::cerr << "tach: variant " << i + 1 << " of " << n << ": " << v.name << " (" << v.model << ", " << v.dtype
              << ")\n";
  };
  ShrinkOutcome out;
  if (!f.resume.empty()) {
    for (const CLI::Option* o : sub->get_options())
      usage_check(
          o->count() == 0 || o->check_lname("resume") || o->check_lname("no-progress") || o->check_lname("report"),
          "--resume continues a run with its own shrink.json: drop " + o->get_name());
    std::cerr << "tach: resuming " << f.resume << "\n";
    out = resume_shrink(f.resume, observer);
  } else {
    usage_check(sub->count("--model") > 0 && sub->count("--dataset") > 0,
                "tach shrink needs -m MODEL and -d DATASET (or --resume RUN_DIR)");
    out = run_shrink(f.options, observer);
  }
  end_bench_progress(f.no_progress);
  std::cout << "\nVariants (accuracy: tach eval's pass on the dataset; latency: ms per batch, the median and p95 "
               "under bench's stopping rule; peak mem: tach's allocator over the point)\n"
            << shrink_table(out.rows) << "\nFindings\n";
  for (const auto& finding : out.findings) std::cout << "- " << finding << "\n";
  std::cout << "\nwritten: " << out.run_dir
            << "/{shrink.json, config.json, results.jsonl, summary.txt, run.log, variants/, models/}\n";
  if (f.report) std::cerr << "report: " << write_run_report(out.run_dir) << "\n";
  for (const auto& p : out.rows)
    if (p.status == "ok") return 0;
  throw Error("no variant's point ran: " + (out.rows.empty() ? std::string("no rows") : out.rows.front().reason));
}

}  // namespace

Command add_shrink_command(CLI::App& app) {
  auto f = std::make_shared<ShrinkFlags>();
  BenchConfig& b = f->options.base;
  b.batch_sizes = {1, 8, 32};
  const BenchConfig d;
  CLI::App* sub = app.add_subcommand(
      "shrink",
      "Ways to make a model smaller, measured side by side on one dataset: each variant (--dtype, --prune, "
      "--student) gets tach eval's accuracy pass and bench's latency over batch sizes, throughput and memory; one "
      "run directory, a table, and the variants on the Pareto frontier of accuracy against latency and memory "
      "(tach report draws it; tach compare --by variant compares the rows)");
  sub->add_option("-m,--model", b.model, "The model: a directory with config.json and safetensors, or a hub id");
  sub->add_option("-d,--dataset", b.dataset.path,
                  "Labelled dataset for every variant's accuracy: .csv, .tsv, .jsonl, .parquet, .json with splits, "
                  "or a Hub dataset");
  sub->add_option("-k,--tokenizer", b.tokenizer,
                  "Tokenizer for the texts: tokenizer.json or a directory (default: each model directory's)");
  sub->add_option("--text-column", b.dataset.text_column, "Text column or key (default text)");
  sub->add_option("--text-pair-column", b.dataset.text_pair_column, "Second text column, for sentence pairs");
  sub->add_option("--label-column", b.dataset.label_column, "Label column or key (default label)");
  sub->add_option("--split", b.dataset.split, "Split of a JSON split file or of a Hub dataset");
  sub->add_option("--limit", b.limit, "Read at most N examples (after the seeded shuffle); 0 = all");
  sub->add_option("--dtype", f->options.dtypes,
                  "Dtype variants, comma-separated: f32, bf16, int8, nf4, f16 (cuda); pruned models and "
                  "students compute in the first (default f32)")
      ->delimiter(',');
  sub->add_option("--prune", f->options.prunes,
                  "Pruned variants, comma-separated: heads:F, ffn:F (a fraction in [0, 1) of each layer's heads or "
                  "FFN neurons), layers:N (the N lowest-ranked layers); each made by tach prune's library (ranked "
                  "as --prune-by says) into RUN_DIR/models/")
      ->delimiter(',');
  sub->add_option("--prune-by", f->options.prune_by,
                  "How pruning ranks units: magnitude (the L2 norm of each unit's weights) or importance "
                  "(first-order, on labelled calibration data, as tach prune --by importance)")
      ->check(one_of("--prune-by", {"magnitude", "importance"}))
      ->capture_default_str();
  sub->add_option("--calibration-data", f->options.calibration_data,
                  "--prune-by importance: labelled calibration data (default: -d, the data the accuracy is "
                  "measured on, which then favours the pruned models: give a training split where there is one)");
  sub->add_option("--calibration-samples", f->options.calibration_samples,
                  "--prune-by importance: score on the first N examples (default 128)")
      ->check(positive_count("--calibration-samples", "--calibration-samples values"));
  sub->add_option("--student", f->options.students,
                  "Student model directories (tach train --distill-from), repeatable or comma-separated; their "
                  "labels must be the model's")
      ->delimiter(',');
  sub->add_option(kBatchOption, b.batch_sizes,
                  "Batch sizes, comma-separated, in samples (default " + join(b.batch_sizes) + ")")
      ->delimiter(',')
      ->check(positive_count("batch size", "batch sizes"));
  sub->add_option(
         "-s,--seq-lens", b.seq_lens,
         "Sequence lengths of the timed batches, comma-separated (synthetic ids; default " + join(d.seq_lens) + ")")
      ->delimiter(',')
      ->check(positive_count("sequence length", "sequence lengths"));
  sub->add_option("--max-length", b.eval_max_length,
                  "The accuracy pass truncates texts to this many tokens, as tach eval -s (default " +
                      std::to_string(d.eval_max_length) + ")")
      ->check(positive_count("--max-length", "--max-length values"));
  sub->add_option("--eval-batch-size", b.eval_batch_size,
                  "Batch size of the accuracy pass (default " + std::to_string(d.eval_batch_size) + ")")
      ->check(positive_count("evaluation batch size", "evaluation batch sizes"));
  sub->add_option("--device", b.devices, "Devices, comma-separated: cpu, cuda, cuda:N, auto (default auto)")
      ->delimiter(',')
      ->check(device_name(true));
  sub->add_option("-t,--threads", b.threads, "Thread counts, comma-separated; 0 = the default (default 0)")
      ->delimiter(',')
      ->check(thread_count());
  sub->add_option("--warmup", b.warmup_runs, "Warm-up runs per point (default " + std::to_string(d.warmup_runs) + ")")
      ->check(non_negative_count("--warmup"));
  sub->add_option("-r,--runs", b.stop.runs, "Exactly N measured runs per point (default: bench's adaptive rule)")
      ->check(non_negative_count("--runs"));
  sub->add_option("--min-runs", b.stop.min_runs, "Adaptive rule: at least this many measured runs (default 5)");
  sub->add_option("--max-runs", b.stop.max_runs, "Adaptive rule: at most this many measured runs (default 50)");
  sub->add_option("--time-budget", b.stop.time_budget_s,
                  "Adaptive rule: stop once this many seconds were measured; 0 = off (default 5)");
  sub->add_option("--target-cv", b.stop.target_cv,
                  "Adaptive rule: stop once the median's relative standard error is below this (default 0.02)");
  sub->add_option("--seed", b.seed, "Seed for synthetic ids and the dataset shuffle (default 0)");
  sub->add_option("--runs-dir", b.runs_dir, "Where run directories go (default " + d.runs_dir + ")");
  sub->add_option("--run-id", b.run_id, "Name of the run directory (default: UTC time, model name, -shrink)");
  sub->add_option("--resume", f->resume,
                  "Continue a run that was stopped or killed (its own shrink.json): finished rows are kept, a "
                  "variant's sweep goes on where it stopped");
  sub->add_flag("--report", f->report, "Also write RUN_DIR/report.html (as tach report does)");
  sub->add_flag("--no-progress", f->no_progress, "No progress bar or lines on stderr");
  sub->footer(
      "Each variant is a tach bench --accuracy run of its own in RUN_DIR/variants/<variant>/ (the same stopping\n"
      "rule, memory books and load record), its rows copied to RUN_DIR/results.jsonl with their variant and\n"
      "accuracy. A variant is on the frontier when no other is at least as accurate and at most as slow (or as\n"
      "large), strictly better in one. tach report RUN_DIR --png --pptx draws the Pareto charts as files and\n"
      "slides.");
  return {sub, [f, sub] { return run_shrink_command(*f, sub); }};
}

}  // namespace tach::cli
