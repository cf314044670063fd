// The options tach bench, eval and run share: a YAML file, then flags on top.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "tach/bench.h"

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
  std::vector<std::pair<CLI::Option*, std::function<void(BenchConfig&)>>> given;  // applied in order

  // Defaults, the YAML file, then every flag the user gave.
  BenchConfig resolve() const;
};

enum class BenchScope { sweep, eval, pipeline };
void add_bench_options(CLI::App* sub, BenchFlags& f, BenchScope scope);
// tach bench --train and its axes and optimizer settings.
void add_train_sweep_options(CLI::App* sub, BenchFlags& f);

// Writes summary.json, summary.txt and detailed_metrics.csv, then prints the table (format) and,
// for the terminal table, the summary.
void print_outcome(const BenchConfig& config, const SweepOutcome& out, const std::string& format);

}  // namespace tach::cli
