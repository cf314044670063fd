// tach bench --train: the sweep's points and their schema, failures as results, the diagnosis on
// curves built to show each pattern, and tach compare on training runs (within one run and across
// two). The kill-and-resume check is tests/cli/kill_resume.sh train.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <sstream>

#include "bench/bench_internal.h"
#include "report/figure_book.h"
#include "report/report_sections.h"
#include "tach/bench.h"
#include "tach/compare.h"
#include "tach/device.h"
#include "tach/error.h"
#include "tach/monitor.h"
#include "tach/report.h"
#include "test_util.h"

namespace tach {
namespace {

namespace fs = std::filesystem;

BenchConfig tiny_train(const std::string& runs_dir) {
  BenchConfig c = train_sweep_defaults();
  c.model = "preset:bert-tiny";
  c.batch_sizes = {2, 4};
  c.seq_lens = {16};
  c.train.methods = {"full", "lora"};
  c.train.gradient_checkpointing = {false, true};
  c.warmup_runs = 1;
  c.stop.runs = 3;
  c.runs_dir = runs_dir;
  c.run_id = "train";
  return c;
}

TEST(TrainSweep, EveryPointIsAStepWithItsPhasesFlopsAndMemory) {
  test::TempDir root;
  BenchConfig config = tiny_train(root.path());
  config.profile = true;
  const SweepOutcome out = run_bench(config);
  ASSERT_EQ(out.results.size(), 8u);  // 2 methods x 2 checkpointing x 2 batches
  EXPECT_EQ(out.results[0].key.id(), "cpu/f32/t0/b2/s16/full/eager/gc-off");
  EXPECT_EQ(out.results[1].key.id(), "cpu/f32/t0/b4/s16/full/eager/gc-off");  // the batch innermost
  for (const auto& p : out.results) {
    SCOPED_TRACE(p.key.id());
    ASSERT_EQ(p.status, "ok") << p.reason;
    EXPECT_EQ(p.key.kind, "train");
    EXPECT_EQ(p.measured_runs, 3);
    EXPECT_EQ(p.batch_latency_samples_ms.size(), 3u);
    const auto& t = p.train;
    EXPECT_GT(t.forward_ms.median, 0);
    EXPECT_GT(t.backward_ms.median, 0);
    EXPECT_GT(t.optimizer_ms.median, 0);
    EXPECT_GE(t.data_ms.median, 0);
    // The phases fit inside the step.
    EXPECT_LE(t.forward_ms.median + t.backward_ms.median + t.optimizer_ms.median, p.batch_latency_ms.max * 1.05 + 0.1);
    EXPECT_DOUBLE_EQ(p.real_tokens_per_batch, double(p.key.batch * 16));  // synthetic rows are full
    EXPECT_GT(t.model_flops_per_step, 0);
    if (p.key.gradient_checkpointing)
      EXPECT_GT(t.hardware_flops_per_step, t.model_flops_per_step);  // the recomputed layers
    else EXPECT_DOUBLE_EQ(t.hardware_flops_per_step, t.model_flops_per_step);
    EXPECT_GT(t.mfu, 0);
    EXPECT_LT(t.mfu, 1.5);
    EXPECT_GT(t.gemm_time_share, 0);
    EXPECT_GT(p.allocator.at("gradients").peak, 0);
    EXPECT_GT(p.allocator.at("optimizer_state").peak, 0);
    EXPECT_GT(t.estimate_bytes, 0);
    if (p.key.method == "lora") EXPECT_LT(t.trainable_parameters, t.parameters / 10);
    else EXPECT_EQ(t.trainable_parameters, t.parameters);
    // The same point read back from its line.
    const PointResult back = point_from_json(point_to_json(p), "here");
    EXPECT_EQ(back.key.id(), p.key.id());
    EXPECT_DOUBLE_EQ(back.train.model_flops_per_step, t.model_flops_per_step);
    EXPECT_DOUBLE_EQ(back.train.backward_ms.median, t.backward_ms.median);
    EXPECT_EQ(back.train.precision, "f32");
  }
  // --profile: the profiled step's trace, with the backward's ops in it.
  const std::string trace = test::read_text(out.run_dir + "/traces/cpu_f32_t0_b2_s16_lora_eager_gc-on/trace.json");
  EXPECT_NE(trace.find("linear_backward"), std::string::npos);
  EXPECT_NE(trace.find("recompute"), std::string::npos);
  // LoRA keeps far fewer gradients and moments than full fine-tuning.
  EXPECT_LT(out.results[4].allocator.at("optimizer_state").peak,
            out.results[0].allocator.at("optimizer_state").peak / 10);
  // The run directory: the config says it is a training sweep, and a resume finds everything done.
  const SweepOutcome again = resume_bench(out.run_dir);
  EXPECT_EQ(again.resumed_points, 8);
  EXPECT_TRUE(again.config.train.enabled);
  EXPECT_EQ(again.config.train.methods, (std::vector<std::string>{"full", "lora"}));
  write_run_reports(again.config, again);
  EXPECT_TRUE(fs::exists(out.run_dir + "/performance_report.md"));
}

TEST(TrainSweep, APointThatCannotRunIsAResultAndBadAxesAreRefused) {
  test::TempDir root;
  BenchConfig c = tiny_train(root.path());
  c.batch_sizes = {2};
  c.seq_lens = {16, 4096};  // past bert-tiny's 512 positions
  c.train.methods = {"full"};
  c.train.gradient_checkpointing = {false};
  const SweepOutcome out = run_bench(c);
  ASSERT_EQ(out.results.size(), 2u);
  EXPECT_EQ(out.results[0].status, "ok");
  EXPECT_NE(out.results[1].status, "ok");
  EXPECT_FALSE(out.results[1].reason.empty());

  // A batch no machine holds is skipped by the estimate, with its numbers, before it runs.
  BenchConfig huge = tiny_train(root.path());
  huge.run_id = "huge";
  huge.batch_sizes = {int64_t(1) << 26};
  huge.train.methods = {"full"};
  huge.train.gradient_checkpointing = {false};
  const SweepOutcome skipped = run_bench(huge);
  ASSERT_EQ(skipped.results.size(), 1u);
  EXPECT_EQ(skipped.results[0].status, "skipped");
  EXPECT_NE(skipped.results[0].reason.find("does not fit: the estimate needs"), std::string::npos);
  EXPECT_NE(skipped.results[0].reason.find("gradient checkpointing would fit more"), std::string::npos);
  EXPECT_GT(skipped.results[0].train.estimate_bytes, skipped.results[0].train.available_bytes);

  BenchConfig bad = tiny_train(root.path());
  bad.run_id = "bad";
  bad.train.methods = {"dora"};
  EXPECT_THROW(run_bench(bad), Error);
  bad.train.methods = {"full"};
  bad.devices = {"cuda"};
  EXPECT_THROW(run_bench(bad), Error);
  bad.devices = {"cpu"};
  bad.accuracy = true;
  bad.dataset.path = "x.csv";
  EXPECT_THROW(run_bench(bad), Error);
}

// On a GPU a training point's energy is the board's, from NVML's counter over its measured steps
// (RAPL is the CPU's): J per step, per sample and per token, and a source saying so.
TEST(TrainSweep, GpuPointEnergyIsNvmlsOverTheMeasuredSteps) {
  if (cuda_devices().empty()) GTEST_SKIP() << "no CUDA device here";
  if (!GpuMonitor().available()) GTEST_SKIP() << "no NVML here: " << GpuMonitor().unavailable_reason();
  test::TempDir root;
  BenchConfig c = tiny_train(root.path());
  c.devices = {"cuda"};
  c.batch_sizes = {4};
  c.train.methods = {"full"};
  c.train.gradient_checkpointing = {false};
  c.gpu_energy_window_s = 0.3;
  const SweepOutcome out = run_bench(c);
  ASSERT_EQ(out.results.size(), 1u);
  const PointResult& p = out.results[0];
  ASSERT_EQ(p.status, "ok") << p.reason;
  if (p.energy_source.find("no total-energy counter") != std::string::npos) GTEST_SKIP() << p.energy_source;
  EXPECT_EQ(p.energy_source.rfind("NVML total energy of the GPU, whole board, over the measured steps", 0), 0u)
      << p.energy_source;
  EXPECT_GT(p.energy_j, 0);
  EXPECT_DOUBLE_EQ(p.energy_j_per_sample, p.energy_j / double(p.measured_runs * 4));
  EXPECT_GT(p.energy_j_per_token, 0);
}

TEST(TrainSweep, ConfigRoundTripsThroughJsonAndYaml) {
  BenchConfig c = tiny_train("runs");
  c.train.execs = {"eager", "fused"};
  c.train.lr = 1e-4;
  const BenchConfig back = bench_config_from_json(bench_config_to_json(c), "here");
  EXPECT_TRUE(back.train.enabled);
  EXPECT_EQ(back.train.execs, c.train.execs);
  EXPECT_EQ(back.train.gradient_checkpointing, c.train.gradient_checkpointing);
  EXPECT_DOUBLE_EQ(back.train.lr, 1e-4);
  const BenchConfig y = bench_config_from_yaml_text(
      "training:\n  method: [full, qlora]\n  exec: fused\n  gradient_checkpointing: [false, true]\n  lr: 2e-5\n",
      "t.yaml");
  EXPECT_TRUE(y.train.enabled);
  EXPECT_EQ(y.train.methods, (std::vector<std::string>{"full", "qlora"}));
  EXPECT_EQ(y.train.execs, (std::vector<std::string>{"fused"}));
  EXPECT_DOUBLE_EQ(y.train.lr, 2e-5);
  EXPECT_THROW(bench_config_from_yaml_text("training:\n  optimiser: sgd\n", "t.yaml"), Error);
}

// A training point of a constructed curve: step time `ms` (3% jitter), GEMM figures and memory.
PointResult curve_point(int64_t batch, double ms, double gemm_eff, double gemm_share, int64_t peak_bytes,
                        int64_t available, const std::string& exec = "eager", bool gc = false) {
  PointResult p;
  p.key.kind = "train";
  p.key.method = "full";
  p.key.exec = exec;
  p.key.gradient_checkpointing = gc;
  p.key.batch = batch;
  std::mt19937 rng{uint32_t(batch)};
  std::uniform_real_distribution<double> u(-0.03, 0.03);
  for (int i = 0; i < 20; ++i) p.batch_latency_samples_ms.push_back(ms * (1 + u(rng)));
  p.batch_latency_ms = bench::distribution(p.batch_latency_samples_ms);
  p.measured_runs = 20;
  p.samples_per_s = double(batch) * 1e3 / ms;
  p.train.gemm_efficiency = gemm_eff;
  p.train.gemm_time_share = gemm_share;
  p.train.mfu = 0.3;
  p.allocator["total"] = {peak_bytes, peak_bytes};
  p.peak_rss_bytes = peak_bytes;
  p.train.estimate_bytes = peak_bytes / 2;  // the estimate is half the measured peak
  p.train.available_bytes = available;
  return p;
}

// Estimate: 1 MB + 1 MB per sample (checkpointing: 0.25 MB per sample), 1 GB available.
std::optional<TrainEstimate> fake_estimate(const PointKey&, int64_t batch, bool gc) {
  return TrainEstimate{(1 << 20) + batch * (gc ? (1 << 18) : (1 << 20)), int64_t(1) << 30};
}

const TrainDiagnosis& only(const std::vector<TrainDiagnosis>& d) {
  EXPECT_EQ(d.size(), 1u);
  return d.front();
}

TEST(TrainDiagnosis, OverheadBoundCurve) {
  // 100 ms fixed + 1 ms per sample: batch 1 is almost all overhead; throughput rises to the end.
  std::vector<PointResult> pts;
  for (int64_t b : {1, 4, 16, 64}) pts.push_back(curve_point(b, 100 + double(b), 0.6, 0.5, 100 << 20, 8LL << 30));
  const auto d = diagnose_training(pts, fake_estimate, false);
  const TrainDiagnosis& x = only(d);
  EXPECT_NEAR(x.fixed_ms, 100, 3);
  EXPECT_NEAR(x.per_sample_ms, 1, 0.1);
  EXPECT_TRUE(x.overhead_bound);
  EXPECT_GT(x.fixed_share_at_smallest, 0.95);
  EXPECT_EQ(x.peak_batch, 64);
  EXPECT_FALSE(x.declines);
  // The measured peaks are twice the estimate: the largest batch is the estimate's, halved.
  EXPECT_NEAR(x.measured_over_estimate, 2.0, 1e-9);
  EXPECT_EQ(x.largest_fit, (int64_t(1) << 29) / (1 << 20) - 1);  // (2^30 / 2 - 2^20) / 2^20
  EXPECT_GT(x.largest_fit_checkpointed, 3 * x.largest_fit);
  // The fixed 100 ms falls under 10% of a step at 9 x 100 / 1 = 900 samples (the fit's own figures).
  const auto at = int64_t(std::ceil(9 * x.fixed_ms / x.per_sample_ms));
  EXPECT_NEAR(double(at), 900, 60);
  bool batch_advice = false;
  for (const auto& a : x.advice)
    batch_advice = batch_advice || a.find("Train at batch " + std::to_string(at) + " or more") != std::string::npos;
  EXPECT_TRUE(batch_advice);
}

TEST(TrainDiagnosis, APeakThenADeclineWithItsReason) {
  // Throughput: 8 → 100/s, 16 → 160/s, 32 → 200/s (the peak), 64 → 128/s.
  const auto make = [](double eff64, int64_t peak64, int64_t available) {
    return std::vector<PointResult>{
        curve_point(8, 80, 0.7, 0.6, 1 << 30, 16LL << 30), curve_point(16, 100, 0.7, 0.6, 1 << 30, 16LL << 30),
        curve_point(32, 160, 0.7, 0.6, 2LL << 30, 16LL << 30), curve_point(64, 500, eff64, 0.6, peak64, available)};
  };
  {  // the GEMMs fall from 70% to 40% of the ceiling
    const TrainDiagnosis x = only(diagnose_training(make(0.4, 3LL << 30, 16LL << 30), fake_estimate, true));
    EXPECT_EQ(x.peak_batch, 32);
    EXPECT_TRUE(x.declines);
    EXPECT_EQ(x.decline_batch, 64);
    EXPECT_NEAR(x.decline_fraction, 1 - 128.0 / 200.0, 0.01);
    ASSERT_EQ(x.decline_reasons.size(), 1u);
    EXPECT_NE(x.decline_reasons[0].find("40% of the ceiling at batch 64 against 70% at batch 32"), std::string::npos);
  }
  {  // memory: 15 of 16 GiB
    const TrainDiagnosis x = only(diagnose_training(make(0.7, 15LL << 30, 16LL << 30), fake_estimate, true));
    ASSERT_EQ(x.decline_reasons.size(), 1u);
    EXPECT_NE(x.decline_reasons[0].find("memory pressure"), std::string::npos);
    EXPECT_NE(x.decline_reasons[0].find("94%"), std::string::npos);
  }
  {  // neither: the sentence says so, with the GEMM figures
    const TrainDiagnosis x = only(diagnose_training(make(0.7, 3LL << 30, 16LL << 30), fake_estimate, true));
    ASSERT_EQ(x.decline_reasons.size(), 1u);
    EXPECT_NE(x.decline_reasons[0].find("neither memory nor"), std::string::npos);
  }
  // A flat curve within its noise does not "decline".
  std::vector<PointResult> flat = {curve_point(8, 80, 0.7, 0.6, 1 << 30, 16LL << 30),
                                   curve_point(16, 160 * 1.02, 0.7, 0.6, 1 << 30, 16LL << 30)};
  EXPECT_FALSE(only(diagnose_training(flat, fake_estimate, true)).declines);
}

TEST(TrainDiagnosis, AdviceUsesTheSiblingSeries) {
  std::vector<PointResult> pts = {curve_point(8, 100, 0.6, 0.5, 1 << 28, 8LL << 30),
                                  curve_point(16, 180, 0.6, 0.5, 1 << 28, 8LL << 30),
                                  curve_point(8, 80, 0.6, 0.5, 1 << 28, 8LL << 30, "fused"),
                                  curve_point(16, 144, 0.6, 0.5, 1 << 28, 8LL << 30, "fused"),
                                  curve_point(8, 130, 0.6, 0.5, 1 << 27, 8LL << 30, "eager", true),
                                  curve_point(16, 234, 0.6, 0.5, 1 << 27, 8LL << 30, "eager", true)};
  const auto d = diagnose_training(pts, fake_estimate, false);
  ASSERT_EQ(d.size(), 3u);
  std::string advice;
  for (const auto& a : d[0].advice) advice += a + "\n";
  EXPECT_NE(advice.find("Fused execution is measured at 1.25x eager's throughput at batch 16"), std::string::npos)
      << advice;
  EXPECT_NE(advice.find("measured here at +30% step time at batch 16"), std::string::npos) << advice;
  EXPECT_NE(advice.find("does not multiply bf16 in hardware"), std::string::npos) << advice;
  EXPECT_NE(advice.find("--gradient-accumulation-steps 4 gives 64"), std::string::npos) << advice;
  const std::string md = performance_report_md("m", pts, d);
  EXPECT_NE(md.find("## cpu f32 threads default seq 128 full fused gc-off"), std::string::npos);
}

// A sweep of two series: the first's per-series figures are time_breakdown and
// memory_by_category, the second's add its series (docs/cli.md), never a bare _2.
TEST(TrainSweepReport, PerSeriesFiguresAreNamedForTheirSeries) {
  test::TempDir dir;
  const std::vector<PointResult> pts = {curve_point(8, 100, 0.6, 0.5, 1 << 28, 8LL << 30),
                                        curve_point(16, 180, 0.6, 0.5, 1 << 28, 8LL << 30),
                                        curve_point(8, 80, 0.6, 0.5, 1 << 28, 8LL << 30, "fused"),
                                        curve_point(16, 144, 0.6, 0.5, 1 << 28, 8LL << 30, "fused")};
  std::ostringstream h;
  report::FigureBook book;
  report::train_sweep_section(h, book, pts, dir.path());
  std::vector<std::string> names;
  for (const auto& f : book.figures()) names.push_back(f.name);
  for (const char* want : {"time_breakdown", "memory_by_category", "time_breakdown_full_fused_f32_seq_128",
                           "memory_by_category_full_fused_f32_seq_128"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  for (const auto& n : names) EXPECT_EQ(n.find("_2"), std::string::npos) << n;
}

// A GPU point's time between the events around each step gets a column; a CPU sweep has none.
TEST(TrainSweepReport, GpuStepTimeIsAColumnOnlyWhereAPointHasIt) {
  test::TempDir dir;
  std::vector<PointResult> pts = {curve_point(8, 100, 0.6, 0.5, 1 << 28, 8LL << 30),
                                  curve_point(16, 180, 0.6, 0.5, 1 << 28, 8LL << 30)};
  std::ostringstream cpu_only;
  report::FigureBook book;
  report::train_sweep_section(cpu_only, book, pts, dir.path());
  EXPECT_EQ(cpu_only.str().find("GPU ms/step"), std::string::npos);
  pts[1].gpu_time_ms = bench::distribution({97.25, 97.5, 98.0});
  std::ostringstream with_gpu;
  report::FigureBook book2;
  report::train_sweep_section(with_gpu, book2, pts, dir.path());
  const std::string h = with_gpu.str();
  EXPECT_NE(h.find("<th>GPU ms/step median</th>"), std::string::npos);
  EXPECT_NE(h.find("<td>97.50</td>"), std::string::npos) << "the GPU median of the point that has one";
  EXPECT_NE(h.find("<td>n/a</td>"), std::string::npos) << "the point without one";
}

std::string write_run(const test::TempDir& root, const std::string& name, const std::vector<PointResult>& points) {
  std::string dir = root.path() + "/" + name;
  fs::create_directories(dir);
  std::string text;
  for (const auto& p : points) text += point_to_json(p) + "\n";
  test::write_text(dir + "/results.jsonl", text);
  test::write_text(dir + "/config.json", R"({"model": "preset:bert-tiny", "run_id": ")" + name + "\"}");
  return dir;
}

TEST(TrainCompare, WithinOneRunAndAcrossTwo) {
  test::TempDir root;
  // One run with checkpointing off and on: on is 30% slower at both batches.
  const std::string one = write_run(
      root, "one",
      {curve_point(8, 100, 0.6, 0.5, 1, 1), curve_point(16, 180, 0.6, 0.5, 1, 1),
       curve_point(8, 130, 0.6, 0.5, 1, 1, "eager", true), curve_point(16, 234, 0.6, 0.5, 1, 1, "eager", true)});
  CompareOptions o;
  o.by = "gradient_checkpointing";
  const RunComparison c = compare_runs({one}, o);
  ASSERT_EQ(c.changes.size(), 2u);
  EXPECT_EQ(c.changes[0].id, "cpu/f32/t0/b8/s128/full/eager");
  EXPECT_EQ(c.changes[0].verdict, "regressed");
  EXPECT_NEAR(c.changes[0].latency_change, 0.30, 0.03);
  EXPECT_NE(c.runs[1].dir.find("gc-on"), std::string::npos);
  // Two runs, eager and fused: they share no id, so exec is found and compared.
  const std::string eager = write_run(root, "eager", {curve_point(8, 100, 0.6, 0.5, 1, 1)});
  const std::string fused = write_run(root, "fused", {curve_point(8, 80, 0.6, 0.5, 1, 1, "fused")});
  const RunComparison x = compare_runs({eager, fused});
  EXPECT_EQ(x.by, "exec");
  ASSERT_EQ(x.changes.size(), 1u);
  EXPECT_EQ(x.changes[0].verdict, "improved");
  EXPECT_NE(comparison_text(x, "table").find("comparing exec"), std::string::npos);
  // One run alone needs --by; an axis with one value, or an unknown one, is refused by name.
  EXPECT_THROW(compare_runs({one}), Error);
  o.by = "exec";
  EXPECT_THROW(compare_runs({one}, o), Error);
  o.by = "colour";
  EXPECT_THROW(compare_runs({one}, o), Error);
}

}  // namespace
}  // namespace tach
