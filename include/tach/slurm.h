// tach bench --slurm: a sweep as a SLURM job array. The run directory is made here (config.json),
// the points are grouped into tasks (one task per curve over batch sizes: one model load each),
// RUN_DIR/slurm/sweep.sbatch runs one group per array task, and sbatch submits it. Every task
// appends its points to its own file under RUN_DIR/results.d/, so tasks on different nodes never
// write the same file; the run's results are results.jsonl and those files merged when read.
#pragma once

#include <string>
#include <vector>

#include "tach/bench.h"

namespace tach {

struct SlurmOptions {
  std::string partition;      // sbatch --partition (empty: the cluster's default)
  std::string time;           // sbatch --time per task, e.g. 30:00 (empty: the partition's default)
  int cpus_per_task = 0;      // sbatch --cpus-per-task (0: SLURM's default); threads 0 then means these cores
  int gpus_per_task = 0;      // sbatch --gpus-per-task (0: none)
  int array_parallelism = 0;  // at most this many tasks at once (sbatch --array=0-N%P; 0: no limit)
  bool dry_run = false;       // write the script and the plan, print the command, submit nothing
  std::string tach_binary;    // what the tasks run (default: this process's own executable)
};

// One submission: its plan (which points each array task runs) and what sbatch said.
struct SlurmSubmission {
  std::string run_dir;
  int number = 1;       // 1 for the sweep, 2, 3, ... for each --resume --slurm
  std::string script;   // RUN_DIR/slurm/sweep.sbatch (sweep-N.sbatch for resubmissions)
  std::string plan;     // RUN_DIR/slurm/plan-N.json
  std::string command;  // the sbatch command line
  std::string job_id;   // sbatch's job id; empty on a dry run
  size_t tasks = 0, points = 0;
  size_t finished_points = 0;  // already in the run (resubmission)
  std::vector<std::string> notes;
};

// A new sweep (the config as tach bench resolves it), submitted as a job array.
SlurmSubmission submit_bench_slurm(const BenchConfig& config, const SlurmOptions& options);
// The points of run_dir that have no result yet, submitted again. Refused while an earlier
// submission of the run still has tasks queued or running.
SlurmSubmission resubmit_bench_slurm(const std::string& run_dir, const SlurmOptions& options);

// One array task: the points plan's task `task` names, appended to results.d/plan-N-task-T.jsonl
// (and, when the plan gives it the accuracy pass, accuracy.json). results: this task's points.
SweepOutcome run_slurm_task(const std::string& run_dir, const std::string& plan, int task,
                            const BenchObserver& observer = {});

// The run as its files hold it, without measuring anything: every grid point found (merged from
// every results file), the accuracy pass if written. missing: the grid's points with no result.
SweepOutcome collect_bench(const std::string& run_dir, std::vector<PointKey>* missing = nullptr);

// What the run's SLURM submissions are doing now, in words: one line per submission with its job
// id and how many of its tasks squeue still lists. Empty when the run was never submitted.
std::vector<std::string> slurm_status(const std::string& run_dir);

}  // namespace tach
