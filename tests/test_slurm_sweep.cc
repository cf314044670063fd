// tach bench --slurm without a cluster: the plan (one task per curve over batch sizes), the
// script, one task's points into its own results file, the run read back merged, and the
// resubmission of exactly the missing points. tests/cli/slurm.sh runs it on a real SLURM.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "bench/slurm_plan.h"
#include "tach/bench.h"
#include "tach/runtime.h"
#include "tach/slurm.h"
#include "test_util.h"

namespace tach {
namespace {

BenchConfig two_curves(const std::string& runs_dir) {
  BenchConfig c;
  c.model = "preset:bert-tiny";
  c.devices = {"cpu"};
  c.batch_sizes = {1, 2};
  c.seq_lens = {8, 16};
  c.warmup_runs = 0;
  c.stop.runs = 2;
  c.tensorboard = false;
  c.runs_dir = runs_dir;
  c.run_id = "s";
  return c;
}

SlurmOptions dry_run() {
  SlurmOptions o;
  o.dry_run = true;
  o.cpus_per_task = 1;
  o.array_parallelism = 3;
  o.time = "5:00";
  return o;
}

TEST(SlurmSweep, ADryRunPlansOneTaskPerCurveAndWritesTheScript) {
  test::TempDir dir;
  const SlurmSubmission sub = submit_bench_slurm(two_curves(dir.path()), dry_run());
  EXPECT_TRUE(sub.job_id.empty());
  EXPECT_EQ(sub.tasks, 2u);
  EXPECT_EQ(sub.points, 4u);
  const bench::SlurmPlan plan = bench::read_plan(sub.plan);
  ASSERT_EQ(plan.tasks.size(), 2u);
  EXPECT_EQ(plan.tasks[0].points, (std::vector<std::string>{"cpu/f32/t0/b1/s8", "cpu/f32/t0/b2/s8"}));
  EXPECT_EQ(plan.tasks[1].points, (std::vector<std::string>{"cpu/f32/t0/b1/s16", "cpu/f32/t0/b2/s16"}));
  const std::string script = test::read_text(sub.script);
  for (const char* line : {"#SBATCH --array=0-1%3\n", "#SBATCH --cpus-per-task=1\n", "#SBATCH --time=5:00\n",
                           "export OMP_NUM_THREADS=", "--slurm-task \"$SLURM_ARRAY_TASK_ID\""})
    EXPECT_NE(script.find(line), std::string::npos) << line << " in\n" << script;
  EXPECT_TRUE(std::filesystem::is_directory(dir.path() + "/s/slurm/logs")) << "sbatch makes no folders";
  EXPECT_NE(test::read_text(dir.path() + "/s/config.json").find("bert-tiny"), std::string::npos);
}

TEST(SlurmSweep, TasksWriteTheirOwnFilesAndTheRunReadsThemMerged) {
  test::TempDir dir;
  const SlurmSubmission sub = submit_bench_slurm(two_curves(dir.path()), dry_run());
  const std::string run = dir.path() + "/s";
  std::vector<PointKey> missing;
  EXPECT_TRUE(collect_bench(run, &missing).results.empty());
  EXPECT_EQ(missing.size(), 4u);

  const SweepOutcome task1 = run_slurm_task(run, sub.plan, 1);
  ASSERT_EQ(task1.results.size(), 2u);
  EXPECT_EQ(task1.results[0].key.id(), "cpu/f32/t0/b1/s16");
  EXPECT_EQ(task1.results[0].status, "ok");
  EXPECT_TRUE(std::filesystem::exists(run + "/results.d/plan-1-task-1.jsonl"));
  EXPECT_FALSE(std::filesystem::exists(run + "/results.jsonl")) << "a task writes only its own file";
  EXPECT_EQ(collect_bench(run, &missing).results.size(), 2u);
  ASSERT_EQ(missing.size(), 2u);
  EXPECT_EQ(missing[0].id(), "cpu/f32/t0/b1/s8");

  // Another task still writing: its torn last line is not a result, and not cut by a reader.
  const std::string other = run + "/results.d/plan-1-task-0.jsonl";
  const std::string line = test::read_text(run + "/results.d/plan-1-task-1.jsonl");
  test::write_text(other, line.substr(0, line.find('\n') + 1) + "{\"schema\":");
  size_t torn = 0;
  const std::vector<PointResult> merged = read_run_results(run, &torn);
  EXPECT_EQ(merged.size(), 2u) << "a point found twice counts once";
  EXPECT_EQ(torn, 10u);
  EXPECT_EQ(test::read_text(other).size(), line.find('\n') + 11) << "the reader left the file alone";

  // The resubmission plans exactly the missing curve; a complete run submits nothing.
  std::filesystem::remove(other);
  const SlurmSubmission again = resubmit_bench_slurm(run, dry_run());
  EXPECT_EQ(again.number, 2);
  EXPECT_EQ(again.finished_points, 2u);
  ASSERT_EQ(again.tasks, 1u);
  EXPECT_EQ(bench::read_plan(again.plan).tasks[0].points,
            (std::vector<std::string>{"cpu/f32/t0/b1/s8", "cpu/f32/t0/b2/s8"}));
  EXPECT_NE(again.script.find("sweep-2.sbatch"), std::string::npos);
  (void)run_slurm_task(run, again.plan, 0);
  EXPECT_EQ(collect_bench(run, &missing).results.size(), 4u);
  EXPECT_TRUE(missing.empty());
  const SlurmSubmission none = resubmit_bench_slurm(run, dry_run());
  EXPECT_EQ(none.tasks, 0u);
  ASSERT_FALSE(none.notes.empty());
  EXPECT_NE(none.notes[0].find("nothing to submit"), std::string::npos);
  EXPECT_EQ(slurm_status(run).size(), 2u);
  EXPECT_NE(slurm_status(run)[0].find("not submitted"), std::string::npos);
}

// The submitting host is often a login node: the GPUs and the bf16 GEMM are checked on the
// nodes, and GPUs per task make "auto" mean cuda.
TEST(SlurmSweep, DevicesAreLeftForTheNodesToCheck) {
  test::TempDir dir;
  BenchConfig c = two_curves(dir.path());
  c.devices = {"auto"};
  SlurmOptions o = dry_run();
  o.gpus_per_task = 1;
  const SlurmSubmission sub = submit_bench_slurm(c, o);
  EXPECT_NE(test::read_text(sub.script).find("#SBATCH --gpus-per-task=1\n"), std::string::npos);
  const auto config = nlohmann::json::parse(test::read_text(dir.path() + "/s/config.json"));
  EXPECT_EQ(config.at("devices"), nlohmann::json::array({"cuda"})) << config.at("devices");
  EXPECT_EQ(bench::read_plan(sub.plan).tasks[0].points[0], "cuda:0/f32/t0/b1/s8");
}

// Reading a run (tach report, a resubmission) is not the run: it does not announce the directory,
// so nothing is appended to the run's run.log; a task does.
TEST(SlurmSweep, OnlyATaskAnnouncesTheRunDirectory) {
  test::TempDir dir;
  const SlurmSubmission sub = submit_bench_slurm(two_curves(dir.path()), dry_run());
  std::vector<std::string> announced;
  set_run_dir_listener([&](const std::string& d) { announced.push_back(d); });
  (void)collect_bench(dir.path() + "/s");
  EXPECT_TRUE(announced.empty());
  (void)run_slurm_task(dir.path() + "/s", sub.plan, 0);
  set_run_dir_listener(nullptr);
  EXPECT_EQ(announced.size(), 1u);
}

TEST(SlurmSweep, ABadTaskOrPlanIsRefusedSayingWhy) {
  test::TempDir dir;
  const SlurmSubmission sub = submit_bench_slurm(two_curves(dir.path()), dry_run());
  const std::string run = dir.path() + "/s";
  EXPECT_NE(test::error_of([&] { run_slurm_task(run, sub.plan, 2); }).find("there is no task 2"), std::string::npos);
  bench::SlurmPlan plan = bench::read_plan(sub.plan);
  plan.tasks[0].points.push_back("cpu/f32/t0/b64/s8");
  bench::write_plan(sub.plan, plan);
  EXPECT_NE(test::error_of([&] { run_slurm_task(run, sub.plan, 0); }).find("names point cpu/f32/t0/b64/s8"),
            std::string::npos);
  test::write_text(sub.plan, "{\"schema\": \"other\"}");
  EXPECT_NE(test::error_of([&] { run_slurm_task(run, sub.plan, 0); }).find("not a tach.slurm_plan/1"),
            std::string::npos);
  SlurmOptions bad = dry_run();
  bad.partition = "a\nb";
  EXPECT_NE(test::error_of([&] { resubmit_bench_slurm(run, bad); }).find("line break"), std::string::npos);
}

}  // namespace
}  // namespace tach
