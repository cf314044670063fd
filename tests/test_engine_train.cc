// tach bench --train --engine: other engines' training points. With the stand-in worker
// (tests/fixtures/engines/worker.py, Python's standard library): the points, their phases, the loss
// check, a worker that dies, and LoRA refused by peft's name; with tach's python-matmul worker; and
// with the development virtualenv (~/tach-ref, or TACH_REF_PYTHON; skipped without it): torch and
// torch-compile from the same checkpoint give tach's losses.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "bench/bench_internal.h"
#include "engines/engine_names.h"
#include "tach/bench.h"
#include "tach/report.h"
#include "test_util.h"

namespace fs = std::filesystem;
using namespace tach;

namespace {

struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }
  const char* name_;
};

std::string fixture_python() { return test::fixtures_dir() + "/engines/python"; }

// A training sweep of tiny points on the DistilBERT classifier fixture (its head in the checkpoint).
BenchConfig train_sweep(const std::string& runs_dir, const std::vector<std::string>& engines,
                        const std::string& python) {
  BenchConfig c = train_sweep_defaults();
  c.model = test::fixtures_dir() + "/encoders/distilbert-cls2-f32";
  c.devices = {"cpu"};
  c.batch_sizes = {1, 2};
  c.seq_lens = {8};
  c.threads = {1};
  c.warmup_runs = 1;
  c.stop = StoppingRule{};
  c.stop.runs = 3;
  c.tensorboard = false;
  c.runs_dir = runs_dir;
  c.run_id = "r";
  c.engines = engines;
  c.python = python;
  return c;
}

// The development virtualenv's Python, or "" (the test skips) where it lacks torch and transformers.
std::string reference_python() {
  const char* home = std::getenv("HOME");
  const std::string py = std::getenv("TACH_REF_PYTHON") ? std::getenv("TACH_REF_PYTHON")
                         : home                         ? std::string(home) + "/tach-ref/bin/python"
                                                        : "";
  if (py.empty() || !fs::exists(py) ||
      std::system(("'" + py + "' -c 'import torch, transformers' > /dev/null 2>&1").c_str()) != 0)
    return "";
  return py;
}

}  // namespace

TEST(EngineTrainSweep, AnotherEnginesPointsCarryPhasesTheLossCheckAndResume) {
  test::TempDir dir;
  ScopedEnv mode("TACH_TEST_WORKER_MODE", "ok");
  BenchConfig c = train_sweep(dir.path(), {"tach", "torch"}, fixture_python());
  c.train.dropout = false;
  const SweepOutcome out = run_bench(c);
  ASSERT_EQ(out.results.size(), 4u);
  EXPECT_EQ(out.results[2].key.id(), "torch/cpu/f32/t1/b1/s8/full/eager/gc-off");
  for (const auto& p : read_run_results(out.run_dir)) {
    SCOPED_TRACE(p.key.id());
    ASSERT_EQ(p.status, "ok") << p.reason;
    EXPECT_EQ(p.key.kind, "train");
    EXPECT_EQ(p.measured_runs, 3);
    EXPECT_GT(p.train.forward_ms.median, 0);
    EXPECT_GT(p.train.backward_ms.median, 0);
    EXPECT_GT(p.train.optimizer_ms.median, 0);
    EXPECT_GT(p.samples_per_s, 0);
    if (p.key.engine == "tach") continue;
    // The stand-in's phases are a quarter of each step each: the data phase is its worker's.
    EXPECT_GT(p.train.data_ms.median, 0);
    EXPECT_EQ(p.train.data_ms.n, 3);
    // MFU as tach's: tach's model FLOPs of the same step over this median step.
    EXPECT_GT(p.train.model_flops_per_step, 0);
    EXPECT_GT(p.train.mfu, 0);
    EXPECT_EQ(p.train.loss_first, 1.0);
    // Its constant loss of 1.0 against tach's first three: checked, and a disagreement.
    EXPECT_EQ(p.engine_run.tach_losses.size(), 3u);
    EXPECT_EQ(p.engine_run.engine_losses, (std::vector<double>{1.0, 1.0, 1.0}));
    EXPECT_EQ(p.engine_run.loss_steps_compared, 3);
    EXPECT_TRUE(p.engine_run.outputs_checked);
    EXPECT_FALSE(p.engine_run.outputs_agree);
    EXPECT_EQ(p.engine_run.outputs_name, "losses of the first 3 steps");
    EXPECT_EQ(p.rss_bytes, 1 << 20);
  }
  // The findings: the disagreement first, then where the engine stands against tach.
  const std::string summary = summary_text(out.config, out);
  EXPECT_NE(summary.find("- torch/cpu/f32/t1/b1/s8/full/eager/gc-off: torch's losses of the first 3 steps DISAGREE "
                         "with tach's"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("- torch against tach: "), std::string::npos) << summary;
  const SweepOutcome again = resume_bench(out.run_dir);
  EXPECT_EQ(again.resumed_points, 4);
}

TEST(EngineTrainSweep, WithDropoutOnTheLossesAreRecordedAndTheCheckSaysWhyNot) {
  test::TempDir dir;
  ScopedEnv mode("TACH_TEST_WORKER_MODE", "ok");
  BenchConfig c = train_sweep(dir.path(), {"torch"}, fixture_python());
  c.batch_sizes = {1};
  const SweepOutcome out = run_bench(c);
  ASSERT_EQ(out.results.size(), 1u);
  const PointResult& p = out.results[0];
  ASSERT_EQ(p.status, "ok") << p.reason;
  EXPECT_FALSE(p.engine_run.outputs_checked);
  EXPECT_NE(p.engine_run.outputs_note.find("dropout is on"), std::string::npos) << p.engine_run.outputs_note;
  EXPECT_EQ(p.engine_run.engine_losses.size(), 3u);
}

TEST(EngineTrainSweep, AKilledWorkerFailsItsPointAndAFreshOneRunsTheNext) {
  test::TempDir dir;
  ScopedEnv mode("TACH_TEST_WORKER_MODE", "exit-on-time");  // its 2nd time request (the warm-up): exit 7
  BenchConfig c = train_sweep(dir.path(), {"torch"}, fixture_python());
  const SweepOutcome out = run_bench(c);
  ASSERT_EQ(out.results.size(), 2u);
  for (const auto& p : out.results) {
    SCOPED_TRACE(p.key.id());
    EXPECT_EQ(p.status, "failed");
    EXPECT_NE(p.reason.find("the worker exited (exit 7)"), std::string::npos) << p.reason;
    EXPECT_NE(p.reason.find("fixture worker: exiting on purpose"), std::string::npos) << p.reason;
  }
}

TEST(EngineTrainSweep, LoraWithoutPeftIsRefusedByNameBeforeARunDirectoryIsMade) {
  test::TempDir dir;
  ScopedEnv mode("TACH_TEST_WORKER_MODE", "ok");  // its versions list python alone
  BenchConfig c = train_sweep(dir.path(), {"tach", "torch"}, fixture_python());
  c.train.methods = {"full", "lora"};
  const std::string m = test::error_of([&] { run_bench(c); });
  EXPECT_NE(m.find("engine torch's LoRA points (--method) need the Python package peft, which"), std::string::npos)
      << m;
  EXPECT_NE(m.find("python3 -m pip install peft"), std::string::npos) << m;
  EXPECT_FALSE(fs::exists(dir.path() + "/r/results.jsonl"));
  c.train.methods = {"qlora"};
  EXPECT_NE(test::error_of([&] { run_bench(c); }).find("need the Python packages peft, bitsandbytes"),
            std::string::npos);
}

TEST(EngineTrainSweep, OnnxRuntimeIsRefusedByNameAndOtherEnginesTakeTheFirstExecOnly) {
  test::TempDir dir;
  BenchConfig c = train_sweep(dir.path(), {"tach", "onnxruntime"}, fixture_python());
  const std::string m = test::error_of([&] { check_sweep_config(c); });
  EXPECT_NE(m.find("engine onnxruntime runs inference only"), std::string::npos) << m;
  c.engines = {"tach", "torch"};
  c.train.execs = {"eager", "fused"};
  c.batch_sizes = {1};
  std::vector<std::string> ids;
  for (const auto& k : bench::sweep_grid(c)) ids.push_back(k.id());
  EXPECT_EQ(ids,
            (std::vector<std::string>{"cpu/f32/t1/b1/s8/full/eager/gc-off", "torch/cpu/f32/t1/b1/s8/full/eager/gc-off",
                                      "cpu/f32/t1/b1/s8/full/fused/gc-off"}));
}

// tach's own python-matmul worker trains (a stand-in: its losses are its own model's).
TEST(EngineTrainSweep, PythonMatmulTrainsAndRefusesLoraByName) {
  if (engines::python_package_dir().empty())
    GTEST_SKIP() << "tach's Python package with tach/engines/ is not beside this build";
  test::TempDir dir;
  BenchConfig c = train_sweep(dir.path(), {"python-matmul"}, "");
  c.batch_sizes = {2};
  c.train.methods = {"full", "lora"};
  c.train.dropout = false;
  const SweepOutcome out = run_bench(c);
  ASSERT_EQ(out.results.size(), 2u);
  const PointResult& full = out.results[0];
  ASSERT_EQ(full.status, "ok") << full.reason;
  EXPECT_GT(full.train.forward_ms.median, 0);
  EXPECT_TRUE(full.engine_run.outputs_checked);
  EXPECT_FALSE(full.engine_run.outputs_agree);  // not tach's model
  EXPECT_EQ(out.results[1].status, "failed");
  EXPECT_NE(out.results[1].reason.find("python-matmul trains all its weights (full) only, not lora"), std::string::npos)
      << out.results[1].reason;
}

// PyTorch eager and compiled from the same checkpoint and batch give tach's losses (the development
// virtualenv only): full training step by step, LoRA its first step.
TEST(EngineTrainSweep, TorchAndTorchCompileGiveTachsLosses) {
  const std::string py = reference_python();
  if (py.empty()) GTEST_SKIP() << "needs a Python with torch and transformers (~/tach-ref, or set TACH_REF_PYTHON)";
  if (engines::python_package_dir().empty())
    GTEST_SKIP() << "tach's Python package with tach/engines/ is not beside this build";
  const bool peft = std::system(("'" + py + "' -c 'import peft' > /dev/null 2>&1").c_str()) == 0;
  test::TempDir dir;
  BenchConfig c = train_sweep(dir.path(), {"torch", "torch-compile"}, py);
  c.batch_sizes = {2};
  c.train.dropout = false;
  c.train.methods = peft ? std::vector<std::string>{"full", "lora"} : std::vector<std::string>{"full"};
  const SweepOutcome out = run_bench(c);
  ASSERT_EQ(out.results.size(), peft ? 4u : 2u);
  for (const auto& p : out.results) {
    SCOPED_TRACE(p.key.id());
    ASSERT_EQ(p.status, "ok") << p.reason;
    EXPECT_TRUE(p.engine_run.outputs_checked) << p.engine_run.outputs_note;
    EXPECT_TRUE(p.engine_run.outputs_agree) << p.engine_run.max_abs_diff;
    EXPECT_LT(p.engine_run.max_abs_diff, 1e-5);
    EXPECT_EQ(p.engine_run.loss_steps_compared, p.key.method == "full" ? 3 : 1);
    EXPECT_GT(p.train.backward_ms.median, 0);
    EXPECT_EQ(p.engine_run.setup_kind, p.key.engine == "torch-compile" ? "torch.compile" : "none");
    EXPECT_GT(p.engine_run.first_call_s, 0);
  }
}

// Every head tach trains gives transformers' losses step by step from the same checkpoint and
// batch (its synthetic targets sent as the task's labels): QA's positions, the masked LM's 15% of
// tokens, a label per token (the development virtualenv only).
TEST(EngineTrainSweep, TorchGivesTachsLossesOnEveryHead) {
  const std::string py = reference_python();
  if (py.empty()) GTEST_SKIP() << "needs a Python with torch and transformers (~/tach-ref, or set TACH_REF_PYTHON)";
  if (engines::python_package_dir().empty())
    GTEST_SKIP() << "tach's Python package with tach/engines/ is not beside this build";
  for (const auto& [task, fixture] :
       std::vector<std::pair<std::string, std::string>>{{"question-answering", "distilbert-qa-f32"},
                                                        {"mlm", "distilbert-mlm-f32"},
                                                        {"token-classification", "distilbert-token-cls5-f32"}}) {
    SCOPED_TRACE(task);
    test::TempDir dir;
    BenchConfig c = train_sweep(dir.path(), {"torch"}, py);
    c.model = test::fixtures_dir() + "/train_tasks/" + fixture + "/model";
    c.train.task = task;
    c.batch_sizes = {2};
    c.train.dropout = false;
    const SweepOutcome out = run_bench(c);
    ASSERT_EQ(out.results.size(), 1u);
    const PointResult& p = out.results[0];
    ASSERT_EQ(p.status, "ok") << p.reason;
    EXPECT_TRUE(p.engine_run.outputs_checked) << p.engine_run.outputs_note;
    EXPECT_LT(p.engine_run.max_abs_diff, 1e-5);
    EXPECT_EQ(p.engine_run.loss_steps_compared, 3);
  }
}
