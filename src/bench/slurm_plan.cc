#include "bench/slurm_plan.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "bench/bench_internal.h"
#include "tach/error.h"

namespace fs = std::filesystem;

namespace tach::bench {

std::string plan_path(const std::string& run_dir, int number) {
  return (fs::path(run_dir) / "slurm" / ("plan-" + std::to_string(number) + ".json")).string();
}

std::string plan_to_json(const SlurmPlan& plan) {
  nlohmann::json tasks = nlohmann::json::array();
  for (const auto& t : plan.tasks) tasks.push_back({{"points", t.points}, {"accuracy", t.accuracy}});
  const nlohmann::json j{{"schema", "tach.slurm_plan/1"},
                         {"submission", plan.number},
                         {"job_id", plan.job_id},
                         {"written", utc_now_iso()},
                         {"tasks", tasks}};
  return j.dump(2) + "\n";
}

void write_plan(const std::string& path, const SlurmPlan& plan) { RunStore::write_file(path, plan_to_json(plan)); }

SlurmPlan read_plan(const std::string& path) { return plan_from_json(slurp(path), path); }

SlurmPlan plan_from_json(const std::string& text, const std::string& path) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    check(j.value("schema", "") == "tach.slurm_plan/1", path + ": not a tach.slurm_plan/1 file");
    SlurmPlan plan;
    plan.number = j.at("submission");
    check(plan.number >= 1, path + ": submission numbers start at 1");
    plan.job_id = j.at("job_id");
    for (const auto& t : j.at("tasks")) plan.tasks.push_back({t.at("points"), t.at("accuracy")});
    return plan;
  } catch (const nlohmann::json::exception& e) { throw Error(path + ": " + e.what()); }
}

std::vector<SlurmPlan> read_plans(const std::string& run_dir) {
  std::vector<SlurmPlan> plans;
  const fs::path dir = fs::path(run_dir) / "slurm";
  if (!fs::is_directory(dir)) return plans;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("plan-", 0) == 0 && e.path().extension() == ".json") plans.push_back(read_plan(e.path().string()));
  }
  std::sort(plans.begin(), plans.end(), [](const SlurmPlan& a, const SlurmPlan& b) { return a.number < b.number; });
  return plans;
}

}  // namespace tach::bench
