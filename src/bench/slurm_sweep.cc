// tach bench --slurm: the run's points grouped into array tasks (RUN_DIR/slurm/plan-N.json), the
// job script that runs one group per task (sweep.sbatch), and its submission through sbatch.
// Nothing here schedules or launches anything itself: SLURM does, and each task is an ordinary
// tach bench process that measures its points (slurm_task.cc).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "bench/bench_internal.h"
#include "bench/slurm_plan.h"
#include "tach/error.h"
#include "tach/slurm.h"

namespace fs = std::filesystem;

namespace tach {

namespace {

// 'text' for a POSIX shell: single quotes, each ' written as '\''.
std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The command's standard output and error together, and its exit status.
std::string run_capture(const std::string& command, int* status) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  check(pipe != nullptr, "cannot run: " + command);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  const int rc = ::pclose(pipe);
  *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

bool on_path(const std::string& tool) {
  int status = 0;
  (void)run_capture("command -v " + tool, &status);
  return status == 0;
}

std::string this_executable() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  check(!ec, "cannot find this program's own path (/proc/self/exe): give the tach binary the tasks run");
  return exe.string();
}

// The points of one curve over batch sizes share a task: one model load measures them all.
std::vector<bench::SlurmPlan::Task> group_points(const std::vector<PointKey>& keys) {
  std::vector<bench::SlurmPlan::Task> tasks;
  std::map<std::string, size_t> task_of_curve;
  for (const auto& key : keys) {
    const std::string curve = key.id_without("batch");
    auto [it, added] = task_of_curve.emplace(curve, tasks.size());
    if (added) tasks.emplace_back();
    tasks[it->second].points.push_back(key.id());
  }
  return tasks;
}

std::string script_text(const std::string& run_dir, const std::string& run_id, const bench::SlurmPlan& plan,
                        const std::string& plan_path, const SlurmOptions& o) {
  size_t points = 0;
  for (const auto& t : plan.tasks) points += t.points.size();
  std::ostringstream s;
  s << "#!/bin/bash\n"
    << "# tach bench " << run_id << ", submission " << plan.number << ": " << plan.tasks.size() << " array task(s), "
    << points << " point(s); which task runs which points: " << plan_path << "\n"
    << "# Written by tach bench --slurm. sbatch it again to rerun this submission: points already in the run are\n"
    << "# skipped. tach bench --resume " << run_dir << " --slurm submits only the points still missing.\n"
    << "#SBATCH --job-name=tach-" << run_id << "\n"
    << "#SBATCH --array=0-" << plan.tasks.size() - 1;
  if (o.array_parallelism > 0) s << "%" << o.array_parallelism;
  s << "\n#SBATCH --ntasks=1\n"
    << "#SBATCH --output=" << run_dir << "/slurm/logs/%A_%a.out\n"
    << "#SBATCH --chdir=" << fs::current_path().string() << "\n";
  if (!o.partition.empty()) s << "#SBATCH --partition=" << o.partition << "\n";
  if (!o.time.empty()) s << "#SBATCH --time=" << o.time << "\n";
  if (o.cpus_per_task > 0) s << "#SBATCH --cpus-per-task=" << o.cpus_per_task << "\n";
  if (o.gpus_per_task > 0) s << "#SBATCH --gpus-per-task=" << o.gpus_per_task << "\n";
  s << "set -euo pipefail\n";
  // Threads 0 means every core the task was given, not every core of the node.
  if (o.cpus_per_task > 0) s << "export OMP_NUM_THREADS=\"${SLURM_CPUS_PER_TASK:-" << o.cpus_per_task << "}\"\n";
  s << "exec " << shell_quote(o.tach_binary.empty() ? this_executable() : o.tach_binary) << " bench --resume "
    << shell_quote(run_dir) << " --slurm-plan " << shell_quote(plan_path)
    << " --slurm-task \"$SLURM_ARRAY_TASK_ID\" --no-progress\n";
  return s.str();
}

void validate_options(const SlurmOptions& o) {
  check(o.cpus_per_task >= 0, "--slurm-cpus-per-task must be 1 or more (0: SLURM's default)");
  check(o.gpus_per_task >= 0, "--slurm-gpus-per-task must be 0 or more");
  check(o.array_parallelism >= 0, "--slurm-array-parallelism must be 1 or more (0: no limit)");
  for (const std::string* v : {&o.partition, &o.time})
    check(v->find_first_of("\n\r") == std::string::npos, "a --slurm option holds a line break");
}

// Writes the plan and the script, then submits the script (unless a dry run).
SlurmSubmission submit(const std::string& run_dir, const std::string& run_id, bench::SlurmPlan plan,
                       const SlurmOptions& o) {
  SlurmSubmission sub;
  sub.run_dir = run_dir;
  sub.number = plan.number;
  sub.tasks = plan.tasks.size();
  for (const auto& t : plan.tasks) sub.points += t.points.size();
  const fs::path slurm_dir = fs::path(run_dir) / "slurm";
  fs::create_directories(slurm_dir / "logs");  // sbatch opens the tasks' output files there; it makes no folders
  sub.plan = bench::plan_path(run_dir, plan.number);
  sub.script =
      (slurm_dir / (plan.number == 1 ? "sweep.sbatch" : "sweep-" + std::to_string(plan.number) + ".sbatch")).string();
  bench::write_plan(sub.plan, plan);  // before the script: a task must find its plan
  bench::RunStore::write_file(sub.script, script_text(run_dir, run_id, plan, sub.plan, o));
  fs::permissions(sub.script, fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add);
  sub.command = "sbatch --parsable " + shell_quote(sub.script);
  if (o.dry_run) {
    sub.notes.push_back("dry run: nothing submitted; submit it with " + sub.command);
    return sub;
  }
  check(on_path("sbatch"),
        "sbatch is not on PATH: --slurm submits through SLURM's sbatch (install slurm-client "
        "and point it at your cluster), or --slurm-dry-run writes " +
            sub.script + " without submitting");
  int status = 0;
  const std::string said = run_capture(sub.command, &status);
  check(status == 0, "sbatch refused the job array (exit status " + std::to_string(status) + "): " + said +
                         "\nthe script is " + sub.script + "; the run directory keeps its points");
  // --parsable prints "JOBID" or "JOBID;CLUSTER".
  sub.job_id = said.substr(0, said.find(';'));
  check(!sub.job_id.empty() && std::all_of(sub.job_id.begin(), sub.job_id.end(), ::isdigit),
        "sbatch answered '" + said + "', not a job id");
  plan.job_id = sub.job_id;
  bench::write_plan(sub.plan, plan);
  return sub;
}

// The tasks squeue still lists for a job ("" when squeue is absent or no longer knows the job).
size_t tasks_in_queue(const std::string& job_id) {
  if (job_id.empty() || !on_path("squeue")) return 0;
  int status = 0;
  const std::string out = run_capture("squeue -h -r -o %i -j " + job_id, &status);
  if (status != 0) return 0;  // a job purged from the controller's memory: squeue calls its id invalid
  std::istringstream in(out);
  std::string line;
  size_t n = 0;
  while (std::getline(in, line))
    if (!line.empty()) ++n;
  return n;
}

}  // namespace

SlurmSubmission submit_bench_slurm(const BenchConfig& given, const SlurmOptions& options) {
  validate_options(options);
  BenchConfig config = given;
  // A task that asks for GPUs runs on one: "auto" cannot be settled on the submitting host.
  if (options.gpus_per_task > 0)
    std::replace(config.devices.begin(), config.devices.end(), std::string("auto"), std::string("cuda"));
  bench::RunStore store = bench::create_sweep_run(config, /*here=*/false);
  const std::string dir = fs::absolute(store.dir()).lexically_normal().string();
  bench::SlurmPlan plan;
  plan.number = 1;
  plan.tasks = group_points(bench::sweep_grid(store.config()));
  if (store.config().accuracy) plan.tasks.front().accuracy = true;
  SlurmSubmission sub = submit(dir, store.config().run_id, plan, options);
  sub.notes.insert(sub.notes.begin(), store.notes.begin(), store.notes.end());
  return sub;
}

SlurmSubmission resubmit_bench_slurm(const std::string& run_dir, const SlurmOptions& options) {
  validate_options(options);
  const std::string dir = fs::absolute(run_dir).lexically_normal().string();
  std::vector<PointKey> missing;
  const SweepOutcome run = collect_bench(dir, &missing);
  int last = 0;
  for (const auto& earlier : bench::read_plans(dir)) {
    last = std::max(last, earlier.number);
    const size_t queued = tasks_in_queue(earlier.job_id);
    check(queued == 0, "job " + earlier.job_id + " (submission " + std::to_string(earlier.number) + " of " + dir +
                           ") still has " + std::to_string(queued) +
                           " task(s) queued or running: wait for it (squeue -j " + earlier.job_id +
                           "), or cancel it with scancel " + earlier.job_id + ", then resubmit");
  }
  bench::SlurmPlan plan;
  plan.number = last + 1;
  plan.tasks = group_points(missing);
  const bool accuracy_missing = run.config.accuracy && run.accuracy.empty();
  if (accuracy_missing) {
    if (plan.tasks.empty()) plan.tasks.emplace_back();
    plan.tasks.front().accuracy = true;
  }
  if (plan.tasks.empty()) {
    SlurmSubmission none;
    none.run_dir = dir;
    none.finished_points = run.results.size();
    none.notes.push_back("every point of " + dir + " is in (" + std::to_string(run.results.size()) +
                         "): nothing to submit; tach report " + dir + " reports it");
    return none;
  }
  SlurmSubmission sub = submit(dir, run.config.run_id, plan, options);
  sub.finished_points = run.results.size();
  return sub;
}

std::vector<std::string> slurm_status(const std::string& run_dir) {
  std::vector<std::string> lines;
  for (const auto& plan : bench::read_plans(run_dir)) {
    size_t points = 0;
    for (const auto& t : plan.tasks) points += t.points.size();
    std::string line = "submission " + std::to_string(plan.number) + ": " + std::to_string(plan.tasks.size()) +
                       " task(s), " + std::to_string(points) + " point(s), ";
    if (plan.job_id.empty()) {
      line += "not submitted (a dry run, or sbatch refused it)";
    } else {
      const size_t queued = tasks_in_queue(plan.job_id);
      line += "job " + plan.job_id + ", " +
              (queued ? std::to_string(queued) + " task(s) still queued or running (squeue)"
                      : std::string("no task in the queue"));
    }
    lines.push_back(line);
  }
  return lines;
}

}  // namespace tach
