// RUN_DIR/slurm/plan-N.json: which points each array task of submission N measures, and the job
// id sbatch gave it (not public: tach bench --slurm's own bookkeeping).
#pragma once

#include <string>
#include <vector>

namespace tach::bench {

struct SlurmPlan {
  struct Task {
    std::vector<std::string> points;  // point ids (PointKey::id)
    bool accuracy = false;            // this task also runs the accuracy pass
  };
  int number = 1;
  std::string job_id;  // empty until sbatch answers (and for a dry run)
  std::vector<Task> tasks;
};

std::string plan_path(const std::string& run_dir, int number);
void write_plan(const std::string& path, const SlurmPlan& plan);  // atomically
SlurmPlan read_plan(const std::string& path);                     // errors name the file
std::string plan_to_json(const SlurmPlan& plan);
SlurmPlan plan_from_json(const std::string& text, const std::string& where);
std::vector<SlurmPlan> read_plans(const std::string& run_dir);  // every submission, by number

}  // namespace tach::bench
