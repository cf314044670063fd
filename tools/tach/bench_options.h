// The options tach bench, eval and run share: a YAML file, then flags on top.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "tach/bench.h"
#include "tach/slurm.h"

namespace tach::cli {

struct BenchFlags {
  std::string config_file;
  BenchConfig values;  // where CLI11 writes; only the flags given are applied
  std::vector<std::string> dtypes;
  std::string resume;
  std::string format = "table";
  bool no_progress = false;
  bool report = false;  // tach bench --report: report.html at the end
  bool train = false;   // tach bench --train: a training sweep
  bool no_dropout = false;
  std::vector<std::string> methods, execs, checkpointing;
  std::string task;
  std::vector<std::pair<CLI::Option*, std::function<void(BenchConfig&)>>> given;  // applied in order

  // Defaults, the YAML file, then every flag the user gave.
  BenchConfig resolve() const;
};

// tach bench --slurm: the flags of the job array, and what a task of it runs.
struct SlurmFlags {
  bool submit = false;
  SlurmOptions options;
  std::string plan;  // --slurm-plan: a task of the array
  int task = -1;     // --slurm-task
  std::vector<CLI::Option*> submit_only;
};
void add_slurm_options(CLI::App* sub, SlurmFlags& s);

enum class BenchScope { sweep, eval, pipeline };
void add_bench_options(CLI::App* sub, BenchFlags& f, BenchScope scope);
// tach bench --train and its axes and optimizer settings.
void add_train_sweep_options(CLI::App* sub, BenchFlags& f);

// Writes summary.json, summary.txt and detailed_metrics.csv, then prints the table (format) and,
// for the terminal table, the summary.
void print_outcome(const BenchConfig& config, const SweepOutcome& out, const std::string& format);

// A sweep in which no point succeeded is an error (exit status 1) once its results are written and
// shown: the first point's reason, and where every reason is.
void check_some_point_ran(const SweepOutcome& out);

// --resume continues a run with its own config.json: any sweep flag or --config beside it is refused.
void check_resume_alone(const BenchFlags& f);

}  // namespace tach::cli
