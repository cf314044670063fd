// The metrics library: timers, throughput, metric trackers (exact and streaming), scores, GRPO,
// the training logger, the memory profiler; window edge cases, NaN, and threads.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "tach/comprehensive_profiler.h"
#include "tach/memory.h"
#include "tach/metrics.h"
#include "tach/tensor.h"
#include "test_util.h"

namespace tach {
namespace {

using test::error_of;

TEST(Timer, NamedTimersAndScopes) {
  Timer t;
  t.start("a");
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_GE(t.stop("a"), 0.004);
  { auto s = t.scope("a"); }
  EXPECT_EQ(t.stats("a").count, 2);
  EXPECT_EQ(t.summary().size(), 1u);
  EXPECT_NE(error_of([&] { t.stop("never"); }).find("without a start"), std::string::npos);
  EXPECT_EQ(t.stats("unknown").count, 0);
  EXPECT_TRUE(std::isnan(t.stats("unknown").mean));
}

// Timer, MemoryProfiler and ComprehensiveProfiler agree on devices: a CUDA device that cannot be
// used is refused at construction, by name (not a CUDA error at the first reading); the default
// is the GPU where one is usable, else the CPU.
TEST(MetricsDevice, UnusableCudaDeviceIsRefusedAtConstruction) {
  const bool gpu = cuda_available() && cuda_device_count() > 0;
  const Device bad = Device::cuda(gpu ? 64 : 0);
  const std::string want = gpu ? "device cuda:64 is not there" : "device cuda:0 cannot be used";
  const std::string timer_error = test::error_of([&] { Timer t(bad); });
  EXPECT_NE(timer_error.find("Timer: " + want), std::string::npos) << timer_error;
  EXPECT_NE(test::error_of([&] { MemoryProfiler m(bad); }).find("MemoryProfiler: " + want), std::string::npos);
  EXPECT_NE(test::error_of([&] { ComprehensiveProfiler p(bad); }).find("ComprehensiveProfiler: " + want),
            std::string::npos);
  std::string why;
  const Device d = default_metrics_device(&why);
  EXPECT_EQ(d, gpu ? Device::cuda(0) : Device::cpu());
  EXPECT_EQ(why.rfind(d.str() + ":", 0), 0u) << why;
  Timer ok(d);  // the default is always usable
  ok.start("x");
  EXPECT_GE(ok.stop("x"), 0.0);
}

TEST(Throughput, WindowAndEma) {
  ThroughputTracker tr(2, 0.5);
  EXPECT_EQ(tr.rates().samples_per_s, 0) << "no rate before two updates";
  tr.update_at(0.0, 10, 100);
  tr.update_at(1.0, 10, 100);  // 10/s
  tr.update_at(2.0, 30, 300);  // 30/s
  tr.update_at(3.0, 10, 100);  // 10/s; the window (2 intervals) covers t = 1..3: 40 samples over 2 s
  const auto r = tr.rates();
  EXPECT_DOUBLE_EQ(r.samples_per_s, 20.0);
  EXPECT_DOUBLE_EQ(r.tokens_per_s, 200.0);
  EXPECT_DOUBLE_EQ(r.ema_samples_per_s, 0.5 * 10 + 0.5 * (0.5 * 30 + 0.5 * 10));
  EXPECT_EQ(r.total_samples, 60);
  EXPECT_NE(error_of([&] { tr.update_at(1.0, 1, 1); }).find("backwards"), std::string::npos);
}

TEST(MetricTracker, ExactStatsWindowsAndNaN) {
  MetricTracker m;
  for (int i = 1; i <= 10; ++i) m.update("loss", i, i);
  m.update("loss", std::nan(""), 11);
  m.update("loss", INFINITY, 12);
  const SeriesStats all = m.stats("loss");
  EXPECT_EQ(all.count, 10);
  EXPECT_DOUBLE_EQ(all.mean, 5.5);
  EXPECT_DOUBLE_EQ(all.p50, 5.5);
  EXPECT_NEAR(all.p95, 9.55, 1e-12);
  EXPECT_EQ(m.rejected("loss"), 2);
  EXPECT_EQ(m.window_stats("loss", 3).count, 3);
  EXPECT_DOUBLE_EQ(m.window_stats("loss", 3).mean, 9.0);
  EXPECT_EQ(m.window_stats("loss", 100).count, 10) << "a window larger than the data uses all of it";
  EXPECT_EQ(m.window_stats("loss", 0).count, 0) << "an empty window";
  EXPECT_TRUE(std::isnan(m.window_stats("loss", 0).mean));
  EXPECT_EQ(m.stats("nothing").count, 0);
  m.update_batch({{"a", 1}, {"b", 2}}, 5);
  EXPECT_EQ(m.names().size(), 3u);
  EXPECT_EQ(m.history("a").at(0).first, 5);
}

TEST(MetricTracker, StreamingModeIsO1AndAccurate) {
  MetricTracker exact(MetricTracker::Mode::exact), stream(MetricTracker::Mode::streaming, 0.01);
  std::mt19937_64 rng(3);
  std::lognormal_distribution<double> d(0.0, 1.0);
  for (int i = 0; i < 100000; ++i) {
    const double v = d(rng) - 0.5;  // some negatives too
    exact.update("x", v);
    stream.update("x", v);
  }
  const SeriesStats e = exact.stats("x"), s = stream.stats("x");
  EXPECT_EQ(s.count, e.count);
  EXPECT_NEAR(s.mean, e.mean, 1e-9 * std::fabs(e.mean) + 1e-12);
  EXPECT_NEAR(s.std, e.std, 1e-9 * e.std);
  EXPECT_EQ(s.min, e.min);
  EXPECT_EQ(s.max, e.max);
  for (auto [got, want] : {std::pair{s.p50, e.p50}, {s.p95, e.p95}, {s.p99, e.p99}})
    EXPECT_NEAR(got, want, 0.02 * std::fabs(want) + 1e-3) << "sketch within ~1% relative";
  EXPECT_TRUE(stream.history("x").empty());
  EXPECT_NE(error_of([&] { stream.window_stats("x", 5); }).find("exact mode"), std::string::npos);
}

TEST(MetricTracker, ThreadSafe) {
  MetricTracker m;
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) m.update("x", 1.0);
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(m.stats("x").count, 4000);
}

TEST(ScoreDistribution, MissingAndInvalidScores) {
  ScoreDistributionTracker s;
  EXPECT_TRUE(std::isnan(s.summary().mean));
  for (std::optional<double> v : {std::optional<double>(1.0), std::optional<double>(0.0), std::optional<double>(1.0),
                                  std::optional<double>(), std::optional<double>(std::nan(""))})
    s.update(v);
  const auto r = s.summary();
  EXPECT_EQ(r.total, 5);
  EXPECT_EQ(r.valid, 3);
  EXPECT_EQ(r.invalid, 2);
  EXPECT_DOUBLE_EQ(r.invalid_rate, 0.4);
  EXPECT_DOUBLE_EQ(r.mean, 2.0 / 3.0);
  EXPECT_EQ(r.counts.at(1.0), 2);
}

TEST(Grpo, StepsAndGroupRanks) {
  GrpoTracker g;
  g.log_step(1, 0.5, 0.3, 0.01, {{"format", 1.0}});
  g.log_group(1, {1, 0, 0.5});
  g.log_group(1, {1, 1});
  const auto s = g.group_stats();
  EXPECT_EQ(s.groups, 2);
  EXPECT_DOUBLE_EQ(s.zero_variance_fraction, 0.5);
  EXPECT_DOUBLE_EQ(s.mean_best_minus_worst, 0.5);
  EXPECT_DOUBLE_EQ(s.mean_reward_by_rank.at(0), 1.0);
  EXPECT_DOUBLE_EQ(s.mean_reward_by_rank.at(2), 0.0);
  EXPECT_EQ(g.steps().stats("reward/format").count, 1);
  EXPECT_NE(error_of([&] { g.log_group(2, {}); }).find("at least one"), std::string::npos);
}

TEST(TrainingLogger, StreamsJsonlAndExports) {
  test::TempDir dir;
  TrainingLogger log(dir.file("steps.jsonl"));
  log.log_step(1, {{"loss", 2.0}}, {1.0, std::nullopt});
  log.log_step(2, {{"loss", 1.0}});
  log.save_checkpoint_metrics("epoch-1");
  std::ifstream in(dir.file("steps.jsonl"));
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    EXPECT_EQ(nlohmann::json::parse(line)["step"], lines + 1);
    ++lines;
  }
  EXPECT_EQ(lines, 2);
  const auto j = nlohmann::json::parse(log.export_all());
  EXPECT_EQ(j["schema"], "tach.training_log/1");
  EXPECT_DOUBLE_EQ(j["metrics"]["loss"]["mean"].get<double>(), 1.5);
  EXPECT_EQ(j["scores"]["invalid"], 1);
  EXPECT_TRUE(j["checkpoints"].contains("epoch-1"));
  EXPECT_TRUE(j["steps"][0]["scores"][1].is_null());
}

TEST(MemoryProfiler, BaselineAndLeak) {
  MemoryProfiler p;
  EXPECT_NE(error_of([&] { p.detect_leak(1); }).find("set_baseline"), std::string::npos);
  p.set_baseline();
  std::vector<Tensor> kept;
  for (int i = 0; i < 4; ++i) kept.push_back(Tensor::zeros({256, 1024}, DType::f32));  // 4 MiB
  const auto leak = p.detect_leak(1 << 20);
  EXPECT_TRUE(leak.leak) << leak.explanation;
  EXPECT_GE(leak.growth_bytes, 4 << 20);
  ASSERT_FALSE(leak.growing.empty());
  kept.clear();
  EXPECT_FALSE(p.detect_leak(1 << 20).leak);
  const auto snap = p.measure("after");
  EXPECT_GT(snap.rss_bytes, 0);
  EXPECT_EQ(p.history().size(), 2u);
}

// Memory tach's allocator never sees (a PyTorch loop's): the RSS against the baseline.
TEST(MemoryProfiler, ProcessLeakSeesMemoryOutsideTheAllocator) {
  MemoryProfiler p;
  EXPECT_NE(error_of([&] { p.detect_process_leak(1); }).find("set_baseline"), std::string::npos);
  p.set_baseline();
  std::vector<char> hoard(64 << 20);
  for (size_t i = 0; i < hoard.size(); i += 4096) hoard[i] = 1;  // resident, page by page
  const auto leak = p.detect_process_leak(32 << 20);
  EXPECT_TRUE(leak.leak) << leak.explanation;
  EXPECT_GE(leak.growth_bytes, 60 << 20);
  EXPECT_NE(leak.explanation.find("RSS"), std::string::npos) << leak.explanation;
  EXPECT_FALSE(p.detect_process_leak(int64_t(1) << 40).leak);
}

TEST(ComprehensiveProfiler, IterationsThroughputMemoryAndItsOwnCost) {
  ComprehensiveProfiler p;
  EXPECT_NE(error_of([&] { p.end_iteration(1); }).find("without start_iteration"), std::string::npos);
  for (int i = 0; i < 4; ++i) {
    p.start_iteration();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    p.end_iteration(8, 1024);
  }
  p.start_iteration();
  EXPECT_NE(error_of([&] { p.start_iteration(); }).find("not ended"), std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  p.end_iteration(8, 1024);
  EXPECT_EQ(p.iterations(), 5);
  const auto j = nlohmann::json::parse(p.to_json());
  EXPECT_EQ(j["schema"], "tach.comprehensive_profile/1");
  EXPECT_EQ(j["device"], "cpu");
  EXPECT_EQ(j["timing"]["iteration"]["count"], 5);
  EXPECT_GE(j["timing"]["iteration"]["min_sec"].get<double>(), 0.002);
  EXPECT_NEAR(j["throughput"]["tokens_per_sec"].get<double>(), 128 * j["throughput"]["samples_per_sec"].get<double>(),
              1e-6 * j["throughput"]["tokens_per_sec"].get<double>());
  EXPECT_EQ(j["throughput"]["total_samples"], 40);
  EXPECT_GT(j["memory"]["peak_allocated_gb"].get<double>(), 0);
  EXPECT_GT(j["overhead"]["per_iteration_sec"].get<double>(), 0);
  test::TempDir dir;
  p.export_to_json(dir.path() + "/sub/profile.json");
  EXPECT_EQ(nlohmann::json::parse(test::read_text(dir.path() + "/sub/profile.json"))["timing"]["iteration"]["count"],
            5);
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/sub/profile.json.tmp"));
  // Nothing measured yet: statistics are null, never zeros that look measured.
  const auto empty = nlohmann::json::parse(ComprehensiveProfiler().to_json());
  EXPECT_TRUE(empty["timing"]["iteration"]["mean_sec"].is_null());
}

}  // namespace
}  // namespace tach
