// One array task of tach bench --slurm (its points, into its own results file), and a run read
// back without measuring: what tach report and a resubmission see.
#include <filesystem>
#include <set>

#include "bench/bench_internal.h"
#include "bench/slurm_plan.h"
#include "tach/error.h"
#include "tach/slurm.h"

namespace fs = std::filesystem;

namespace tach {

SweepOutcome run_slurm_task(const std::string& run_dir, const std::string& plan_file, int task,
                            const BenchObserver& observer) {
  const bench::SlurmPlan plan = bench::read_plan(plan_file);
  check(task >= 0 && static_cast<size_t>(task) < plan.tasks.size(), plan_file + " has tasks 0 to " +
                                                                        std::to_string(plan.tasks.size() - 1) +
                                                                        "; there is no task " + std::to_string(task));
  const bench::SlurmPlan::Task& mine = plan.tasks[static_cast<size_t>(task)];
  const std::string own = "results.d/plan-" + std::to_string(plan.number) + "-task-" + std::to_string(task) + ".jsonl";
  bench::RunStore store = bench::RunStore::open(run_dir, own);
  bench::validate_sweep(store.config());
  std::set<std::string> grid;
  for (const auto& key : bench::sweep_grid(store.config())) grid.insert(key.id());
  const std::set<std::string> only(mine.points.begin(), mine.points.end());
  for (const auto& id : only)
    check(grid.count(id) != 0, plan_file + ": task " + std::to_string(task) + " names point " + id +
                                   ", which is not in the grid of " + run_dir + "'s config.json");
  bench::PointSelection selection;
  selection.only = &only;
  SweepOutcome out = bench::execute_sweep(store, observer, selection, store.config().accuracy && mine.accuracy);
  // The task's own points: the rest of the run is other tasks' to report.
  std::vector<PointResult> own_points;
  for (auto& p : out.results)
    if (only.count(p.key.id())) own_points.push_back(std::move(p));
  out.results = std::move(own_points);
  return out;
}

SweepOutcome collect_bench(const std::string& run_dir, std::vector<PointKey>* missing) {
  bench::RunStore store = bench::RunStore::open(run_dir, "");
  bench::validate_sweep(store.config(), /*here=*/false);  // read back on a login node: the GPUs are elsewhere
  bench::PointSelection nothing;
  nothing.measure = false;
  SweepOutcome out = bench::execute_sweep(store, {}, nothing, store.config().accuracy);
  if (missing) {
    missing->clear();
    for (const auto& key : bench::sweep_grid(store.config()))
      if (!store.is_finished(key)) missing->push_back(key);
  }
  return out;
}

}  // namespace tach
