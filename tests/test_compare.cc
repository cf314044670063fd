// tach compare: points matched by key, bootstrap intervals over raw latencies, verdicts against
// the noise threshold, the formats, old runs and bad input. (test_compare_live.cc: real runs.)
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "bench/bench_internal.h"
#include "tach/bench.h"
#include "tach/compare.h"
#include "tach/error.h"
#include "test_util.h"

namespace tach {
namespace {

namespace fs = std::filesystem;

// A point whose runs took `median` ms with relative jitter `spread` (deterministic in seed).
PointResult point(int64_t batch, double median, double spread, uint32_t seed, int n = 30) {
  PointResult p;
  p.key.batch = batch;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-spread, spread);
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(median * (1 + u(rng)));
  p.batch_latency_samples_ms = v;
  p.batch_latency_ms = bench::distribution(v);
  p.sample_latency_ms = bench::distribution(v);
  p.measured_runs = n;
  p.samples_per_s = double(batch) * 1e3 / p.batch_latency_ms.median;
  return p;
}

std::string write_run(const test::TempDir& root, const std::string& name, const std::vector<PointResult>& points,
                      const std::string& tail = "") {
  std::string dir = root.path() + "/" + name;
  fs::create_directories(dir);
  std::string text;
  for (const auto& p : points) text += point_to_json(p) + "\n";
  test::write_text(dir + "/results.jsonl", text + tail);
  test::write_text(dir + "/config.json", R"({"model": "preset:bert-tiny", "run_id": ")" + name + "\"}");
  return dir;
}

const PointChange& change_of(const RunComparison& c, const std::string& id, size_t run = 1) {
  for (const auto& ch : c.changes)
    if (ch.id == id && ch.run == run) return ch;
  throw Error("no change for " + id);
}

TEST(Compare, VerdictsFollowTheIntervalAndTheThreshold) {
  test::TempDir root;
  const std::string a = write_run(root, "a", {point(1, 10, 0.05, 1), point(8, 40, 0.05, 2), point(32, 150, 0.05, 3)});
  // b1: the same distribution, other draws; b8: 10% slower; b32: 10% faster; b64 only here.
  const std::string b = write_run(
      root, "b", {point(1, 10, 0.05, 11), point(8, 44, 0.05, 12), point(32, 135, 0.05, 13), point(64, 500, 0.05, 14)});
  const RunComparison c = compare_runs({a, b});
  EXPECT_EQ(change_of(c, "cpu/f32/t0/b1/s128").verdict, "within noise");
  const PointChange& slow = change_of(c, "cpu/f32/t0/b8/s128");
  EXPECT_EQ(slow.verdict, "regressed");
  EXPECT_NEAR(slow.latency_change, 0.10, 0.03);
  EXPECT_LT(slow.latency_lo, slow.latency_change);
  EXPECT_GT(slow.latency_hi, slow.latency_change);
  EXPECT_LT(slow.throughput_change, 0);
  EXPECT_EQ(change_of(c, "cpu/f32/t0/b32/s128").verdict, "improved");
  ASSERT_EQ(c.only_in.size(), 1u);
  EXPECT_NE(c.only_in[0].find("cpu/f32/t0/b64/s128: only in " + b), std::string::npos);
  // --fail-on-regression: 5% catches b8, 15% does not.
  EXPECT_EQ(regressions_beyond(c, 0.05).size(), 1u);
  EXPECT_TRUE(regressions_beyond(c, 0.15).empty());
}

TEST(Compare, ASmallSignificantChangeIsWithinNoise) {
  test::TempDir root;
  // 1% slower with almost no jitter: significant, but under the 2% threshold.
  const std::string a = write_run(root, "a", {point(1, 10, 0.001, 1)});
  const std::string b = write_run(root, "b", {point(1, 10.1, 0.001, 2)});
  const RunComparison c = compare_runs({a, b});
  const PointChange& ch = change_of(c, "cpu/f32/t0/b1/s128");
  EXPECT_TRUE(ch.significant);
  EXPECT_EQ(ch.verdict, "within noise");
  EXPECT_NE(ch.why.find("below the 2.0% threshold"), std::string::npos) << ch.why;
  CompareOptions strict;
  strict.noise_threshold = 0.005;
  EXPECT_EQ(change_of(compare_runs({a, b}, strict), "cpu/f32/t0/b1/s128").verdict, "regressed");
}

TEST(Compare, DeterministicAndEveryFormatHoldsTheNumbers) {
  test::TempDir root;
  const std::string a = write_run(root, "a", {point(8, 40, 0.05, 2)});
  const std::string b = write_run(root, "b", {point(8, 44, 0.05, 12)});
  const RunComparison c1 = compare_runs({a, b}), c2 = compare_runs({a, b});
  EXPECT_EQ(c1.changes[0].latency_lo, c2.changes[0].latency_lo);
  const auto j = nlohmann::json::parse(comparison_text(c1, "json"));
  EXPECT_EQ(j["schema"], "tach.compare/1");
  EXPECT_EQ(j["changes"][0]["verdict"], "regressed");
  EXPECT_DOUBLE_EQ(j["changes"][0]["latency_change"].get<double>(), c1.changes[0].latency_change);
  EXPECT_NE(comparison_text(c1, "csv").find("cpu/f32/t0/b8/s128," + a + "," + b + ",30,30,"), std::string::npos);
  EXPECT_NE(comparison_text(c1, "md").find("| cpu/f32/t0/b8/s128 | 1 |"), std::string::npos);
  EXPECT_NE(comparison_text(c1, "table").find("regressed"), std::string::npos);
  EXPECT_NE(test::error_of([&] { comparison_text(c1, "xml"); }).find("--format 'xml'"), std::string::npos);
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(Compare, HtmlPageIsSelfContainedWithEveryNumberInATable) {
  test::TempDir root;
  const std::string a = write_run(root, "a", {point(1, 10, 0.05, 1), point(8, 40, 0.05, 2)});
  const std::string b = write_run(root, "b", {point(1, 10, 0.05, 11), point(8, 44, 0.05, 12)});
  const RunComparison c = compare_runs({a, b});
  const std::string html = comparison_html(c);
  EXPECT_EQ(html.find("<script"), std::string::npos);  // nothing runs, nothing is fetched
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));
  EXPECT_EQ(html.find("https://"), std::string::npos);
  // One change chart with a bar per point, and a distribution chart per point with both runs.
  EXPECT_EQ(count(html, "class='chart change-chart'"), 1u);
  EXPECT_EQ(count(html, "class='chart distribution-chart'"), 2u);
  EXPECT_EQ(count(html, "<g class='series'"), 2u + 2u * 2u);
  // The table holds the numbers the charts show.
  char median[32];
  std::snprintf(median, sizeof median, "%.3f", c.changes[1].median_ms);
  EXPECT_NE(html.find(median), std::string::npos);
  EXPECT_NE(html.find(">regressed<"), std::string::npos);
  write_comparison_html(c, root.path() + "/compare.html");
  EXPECT_EQ(test::read_text(root.path() + "/compare.html"), html);
}

TEST(Compare, OldRunsFailedPointsAndBadInput) {
  test::TempDir root;
  PointResult old = point(1, 10, 0.05, 1);
  old.batch_latency_samples_ms.clear();  // as a tach.bench.point/1 line reads
  PointResult failed = point(8, 40, 0.05, 2);
  failed.status = "failed";
  failed.reason = "out of memory";
  // A torn last line (a kill mid-write) is left out, not an error.
  const std::string a = write_run(root, "a", {old, failed}, R"({"schema": "tach.bench.po)");
  const std::string b = write_run(root, "b", {point(1, 10, 0.05, 11), point(8, 40, 0.05, 12)});
  const RunComparison c = compare_runs({a, b});
  EXPECT_EQ(change_of(c, "cpu/f32/t0/b1/s128").verdict, "not comparable");
  EXPECT_NE(change_of(c, "cpu/f32/t0/b1/s128").why.find("no raw latencies"), std::string::npos);
  EXPECT_NE(change_of(c, "cpu/f32/t0/b8/s128").why.find("out of memory"), std::string::npos);
  EXPECT_NE(test::error_of([&] { compare_runs({a}); }).find("two runs or more"), std::string::npos);
  EXPECT_NE(test::error_of([&] {
              compare_runs({a, root.path() + "/none"});
            }).find("no results.jsonl"),
            std::string::npos);
  test::write_text(b + "/results.jsonl", "{\"schema\": \"tach.bench.point/2\"}\n");
  EXPECT_NE(test::error_of([&] { compare_runs({a, b}); }).find("results.jsonl:1"), std::string::npos);
}

}  // namespace
}  // namespace tach
