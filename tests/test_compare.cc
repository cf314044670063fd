// tach compare: points matched by key, block-bootstrap intervals over raw latencies, verdicts
// against the noise threshold, the drift inside each run and a difference in load, throughput as
// the table defines it, the formats, old runs and bad input. (test_compare_live.cc: real runs.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "bench/bench_internal.h"
#include "report/compare_verdict.h"
#include "tach/bench.h"
#include "tach/compare.h"
#include "tach/error.h"
#include "tach/report.h"
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

std::string pct_text(double x) { return std::to_string(x * 100) + "%"; }

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

// A point whose runs follow `level` (a factor over time, 0..1 across the run) times `median` ms,
// with relative jitter `spread`: the shape a shared machine's load gives a run.
PointResult drifting_point(int64_t batch, double median, const std::function<double(double)>& level, double spread,
                           uint32_t seed, int n = 40) {
  PointResult p = point(batch, median, spread, seed, n);
  for (int i = 0; i < n; ++i) p.batch_latency_samples_ms[size_t(i)] *= level(double(i) / (n - 1));
  p.batch_latency_ms = bench::distribution(p.batch_latency_samples_ms);
  p.sample_latency_ms = p.batch_latency_ms;
  return p;
}

PointResult::Load load(double other_cores, bool contended) {
  PointResult::Load l;
  l.measured = true;
  l.other_cores_mean = other_cores;
  l.other_cores_max = other_cores + 0.1;  // a steady load: its busiest stretch near its mean
  l.load_average_1m = other_cores + 1;
  l.contended = contended;
  return l;
}

TEST(CompareVerdict, TimeBlocksAreContiguousAndTheDriftIsHowFarTheirMediansMoved) {
  std::vector<double> ramp;
  for (int i = 0; i < 48; ++i) ramp.push_back(10 + i * 0.1);  // 10 .. 14.7
  const auto blocks = report::time_blocks(ramp);
  ASSERT_EQ(blocks.size(), 8u);  // 48 / 6
  std::vector<double> joined;
  for (const auto& b : blocks) {
    EXPECT_EQ(b.size(), 6u);
    joined.insert(joined.end(), b.begin(), b.end());
  }
  EXPECT_EQ(joined, ramp) << "the blocks are the samples in measurement order";
  EXPECT_EQ(report::time_blocks(std::vector<double>(5, 1.0)).size(), 2u) << "at least two blocks";
  EXPECT_EQ(report::time_blocks(std::vector<double>(500, 1.0)).size(), 8u) << "at most eight";
  // First block's median 10.25, last 14.45.
  EXPECT_NEAR(report::within_run_drift(ramp), 14.45 / 10.25 - 1, 1e-9);
  EXPECT_TRUE(report::within_drift(0.2, 0.25));
  EXPECT_TRUE(report::within_drift(-0.2, 0.25)) << "1 / 0.8 = 1.25";
  EXPECT_FALSE(report::within_drift(-0.21, 0.25));
  EXPECT_FALSE(report::within_drift(0.3, 0.25));
  EXPECT_LT(report::within_run_drift(point(1, 10, 0.01, 3, 48).batch_latency_samples_ms), 0.02) << "steady run";
  EXPECT_EQ(report::within_run_drift({7.0}), 0);
}

// Two runs of one build and one command on a machine whose load changes while they run: the
// latencies drift (a slow ramp as a job starts beside them, a spike, a lock into a slow state as
// the issue's 2-thread point did at 72 ms), and the two runs catch the drift at different
// moments. Resampled one by one, their samples called these changes; none is one.
TEST(Compare, IdenticalRunsUnderDriftingLoadAreNotAChange) {
  test::TempDir root;
  const auto ramp = [](double from, double to) { return [=](double t) { return from + (to - from) * t; }; };
  const auto spike = [](double at, double width, double height) {
    return [=](double t) { return std::abs(t - at) < width / 2 ? height : 1.0; };
  };
  // Fast (1.3 to 5.5 ms) until `when`, then locked at 72 ms.
  const auto locks_at = [](double when) { return [=](double t) { return t < when ? 1.0 : 24.0; }; };
  const std::string a =
      write_run(root, "a",
                {drifting_point(1, 10, ramp(1.0, 1.25), 0.02, 1), drifting_point(2, 20, ramp(1.0, 1.2), 0.005, 4, 48),
                 drifting_point(4, 30, spike(0.3, 0.4, 1.3), 0.02, 2), drifting_point(16, 3, locks_at(0.6), 0.3, 3)});
  const std::string b =
      write_run(root, "b",
                {drifting_point(1, 10, ramp(1.12, 1.3), 0.02, 11), drifting_point(2, 20, ramp(1.1, 1.3), 0.005, 14, 48),
                 drifting_point(4, 30, spike(0.6, 0.5, 1.3), 0.02, 12), drifting_point(16, 3, locks_at(0.4), 0.3, 13)});
  const RunComparison c = compare_runs({a, b});
  ASSERT_EQ(c.changes.size(), 4u);
  for (const auto& ch : c.changes) {
    EXPECT_EQ(ch.verdict, "within noise") << ch.id << ": " << pct_text(ch.latency_change) << " " << ch.why;
    EXPECT_GT(std::max(ch.baseline_drift, ch.drift), 0.1) << ch.id;
  }
  // A steady ramp over eight blocks: even resampled by blocks the medians differ (+8%), and only
  // the drift inside each run (their blocks 17% apart) says that could be the ramp going on.
  const PointChange& ramp8 = change_of(c, "cpu/f32/t0/b2/s128");
  EXPECT_TRUE(ramp8.significant);
  EXPECT_NE(ramp8.why.find("within the drift inside the runs"), std::string::npos) << ramp8.why;
  EXPECT_NE(comparison_text(c, "table").find("0 improved, 0 regressed, 4 within noise"), std::string::npos);
}

// What drift must not hide: a steady run against one 30% slower, or a run drifting 3% against
// one 30% slower, is a regression.
TEST(Compare, AChangeBeyondTheDriftIsStillCalled) {
  test::TempDir root;
  const auto wobble = [](double t) { return 1 + 0.03 * std::sin(6.28 * t); };
  const std::string a = write_run(root, "a", {drifting_point(1, 10, wobble, 0.02, 1), point(2, 20, 0.02, 2, 8)});
  const std::string b = write_run(root, "b", {drifting_point(1, 13, wobble, 0.02, 11), point(2, 26, 0.02, 12, 8)});
  const RunComparison c = compare_runs({a, b});
  EXPECT_EQ(change_of(c, "cpu/f32/t0/b1/s128").verdict, "regressed") << change_of(c, "cpu/f32/t0/b1/s128").why;
  EXPECT_EQ(change_of(c, "cpu/f32/t0/b2/s128").verdict, "regressed") << "8 runs a side: two blocks of four";
  EXPECT_NEAR(change_of(c, "cpu/f32/t0/b1/s128").latency_change, 0.3, 0.03);
}

// Points measured under contention are not judged: one side contended and the other not (under
// different load), both contended (the change may be the other processes', as in two runs of one
// build on a busy VM, 1.6 cores taken on each side and 25% apart), or one contended against an
// older run without a record. The same latencies with neither side contended under the same
// load, or with no record at all (older runs: unknown, not different), are judged.
TEST(Compare, RunsMeasuredUnderContentionAreInconclusive) {
  test::TempDir root;
  std::vector<PointResult> base, slow;
  for (int i = 0; i < 6; ++i) {
    base.push_back(point(1 << i, 10.0 * (i + 1), 0.02, uint32_t(i + 1)));
    slow.push_back(point(1 << i, 12.0 * (i + 1), 0.02, uint32_t(i + 11)));
  }
  base[0].load = load(0.1, false), slow[0].load = load(1.6, true);    // contended on one side only
  base[1].load = load(1.5, true), slow[1].load = load(1.6, true);     // both, alike
  base[2].load = load(1.7, true);                                     // this run has no record
  base[3].load = load(0.05, false), slow[3].load = load(0.2, false);  // neither, alike: judged
  base[5].load = load(0.1, false);                                    // uncontended against no record: judged
  // base[4], slow[4]: no load recorded (older runs): judged, and said
  const std::string a = write_run(root, "a", base), b = write_run(root, "b", slow);
  const RunComparison c = compare_runs({a, b});
  for (const char* id : {"cpu/f32/t0/b1/s128", "cpu/f32/t0/b2/s128", "cpu/f32/t0/b4/s128"}) {
    const PointChange& ch = change_of(c, id);
    EXPECT_EQ(ch.verdict, "inconclusive") << id;
    EXPECT_NEAR(ch.latency_change, 0.2, 0.03) << "the numbers are still shown";
  }
  EXPECT_NE(change_of(c, "cpu/f32/t0/b1/s128").why.find("measured under different load"), std::string::npos)
      << change_of(c, "cpu/f32/t0/b1/s128").why;
  EXPECT_NE(change_of(c, "cpu/f32/t0/b1/s128").why.find("1.60 cores used by other processes"), std::string::npos);
  EXPECT_NE(change_of(c, "cpu/f32/t0/b2/s128").why.find("contention on both sides"), std::string::npos);
  EXPECT_NE(change_of(c, "cpu/f32/t0/b4/s128").why.find("contention on one side"), std::string::npos);
  for (const char* id : {"cpu/f32/t0/b8/s128", "cpu/f32/t0/b16/s128", "cpu/f32/t0/b32/s128"})
    EXPECT_EQ(change_of(c, id).verdict, "regressed") << id << ": " << change_of(c, id).why;
  EXPECT_NE(change_of(c, "cpu/f32/t0/b16/s128").why.find("no load recorded"), std::string::npos);
  EXPECT_EQ(regressions_beyond(c, 0.05).size(), 3u) << "an inconclusive point is no regression";
  EXPECT_NE(comparison_text(c, "table").find("3 inconclusive (measured under load)"), std::string::npos);
  // The load record survives results.jsonl.
  const auto read = read_run_results(b);
  EXPECT_TRUE(read[0].load.measured && read[0].load.contended);
  EXPECT_DOUBLE_EQ(read[0].load.other_cores_mean, 1.6);
  EXPECT_FALSE(read[4].load.measured);
}

// The README's example on a machine a test suite loads: the same short bench twice, a few runs a
// point, compared. Each run is steady inside (its latencies within 2%), so neither the
// interval nor the drift can see that the second met a busy job on the other core, 40% slower.
// Neither point was contended (one thread, one core left to the job), and that was all the load
// check asked: "regressed". What ran beside differed by a core, so the change is inconclusive;
// and so it is where the job came and went while one side ran (same mean, a busier stretch), and
// where each run's default thread count followed the cores free at its start.
TEST(Compare, IdenticalRunsUnderDifferentUncontendedLoadAreInconclusive) {
  test::TempDir root;
  std::vector<PointResult> quiet, busy;
  for (int i = 0; i < 3; ++i) {
    quiet.push_back(point(1 << i, 0.21 * (i + 1), 0.01, uint32_t(i + 1), 6));
    busy.push_back(point(1 << i, 0.21 * (i + 1) * 1.4, 0.01, uint32_t(i + 11), 6));
    quiet.back().key.threads = busy.back().key.threads = 1;  // -t 1: the thread count is no difference here
    quiet.back().threads_used = busy.back().threads_used = 1;
  }
  quiet[0].load = load(0.02, false), busy[0].load = load(1.0, false);  // a job on the free core beside one side
  quiet[1].load = load(0.5, false), busy[1].load = load(0.5, false);   // the same mean, but the job came and went:
  busy[1].load.other_cores_max = 1.0;                                  // a stretch of it beside this run only
  quiet[2].load = load(0.02, false), busy[2].load = load(0.1, false);  // alike: a change, as before
  const RunComparison c = compare_runs({write_run(root, "quiet", quiet), write_run(root, "busy", busy)});
  for (const char* id : {"cpu/f32/t1/b1/s128", "cpu/f32/t1/b2/s128"}) {
    const PointChange& ch = change_of(c, id);
    EXPECT_EQ(ch.verdict, "inconclusive") << id << ": " << ch.why;
    EXPECT_NE(ch.why.find("measured under different load"), std::string::npos) << ch.why;
    EXPECT_NEAR(ch.latency_change, 0.4, 0.05) << "the numbers are still shown";
  }
  EXPECT_NE(change_of(c, "cpu/f32/t1/b1/s128").why.find("1.00 cores used by other processes"), std::string::npos);
  EXPECT_NE(change_of(c, "cpu/f32/t1/b2/s128").why.find("changed by more than 0.25 cores while this run"),
            std::string::npos)
      << change_of(c, "cpu/f32/t1/b2/s128").why;
  EXPECT_EQ(change_of(c, "cpu/f32/t1/b4/s128").verdict, "regressed") << change_of(c, "cpu/f32/t1/b4/s128").why;
  EXPECT_TRUE(regressions_beyond(c, 0.05).size() == 1) << "only the point measured under one load";

  // Two default-thread runs whose default followed the load: 2 threads at the first start, 1 at
  // the second (a job had started). They share no point id, but do once threads is left out.
  std::vector<PointResult> two, one;
  for (int i = 0; i < 2; ++i) {
    two.push_back(point(1 << i, 0.21 * (i + 1), 0.01, uint32_t(i + 21), 6));
    one.push_back(point(1 << i, 0.21 * (i + 1) * 1.4, 0.01, uint32_t(i + 31), 6));
    two.back().threads_used = 2, one.back().threads_used = 1;  // key.threads 0: the default
    two.back().load = one.back().load = load(0.02, false);
  }
  const RunComparison d = compare_runs({write_run(root, "two", two), write_run(root, "one", one)});
  EXPECT_EQ(d.by, "threads");
  ASSERT_EQ(d.changes.size(), 2u);
  for (const auto& ch : d.changes) {
    EXPECT_EQ(ch.verdict, "inconclusive") << ch.id << ": " << ch.why;
    EXPECT_NE(ch.why.find("default thread count follows the cores free"), std::string::npos) << ch.why;
  }
  // Asked for (-t 2 against -t 1), the thread counts are what is compared, and judged.
  for (auto* run : {&two, &one})
    for (auto& p : *run) p.key.threads = p.threads_used;
  const RunComparison e = compare_runs({write_run(root, "two_t", two), write_run(root, "one_t", one)});
  ASSERT_EQ(e.changes.size(), 2u);
  for (const auto& ch : e.changes) EXPECT_EQ(ch.verdict, "regressed") << ch.id << ": " << ch.why;
}

// The README's example itself: -r 3 a side. Three samples make two blocks of one and two, an
// interval that is their medians' range and a drift over a millisecond; a 40% gap between two
// such runs was called a regression. Too few to judge: not comparable, medians shown.
TEST(Compare, AFewRunsASideAreNoVerdict) {
  test::TempDir root;
  const std::string a = write_run(root, "a", {point(1, 0.21, 0.01, 1, 3), point(2, 0.3, 0.01, 2, 5)});
  const std::string b = write_run(root, "b", {point(1, 0.21 * 1.4, 0.01, 11, 3), point(2, 0.42, 0.01, 12, 6)});
  const RunComparison c = compare_runs({a, b});
  for (const char* id : {"cpu/f32/t0/b1/s128", "cpu/f32/t0/b2/s128"}) {
    const PointChange& ch = change_of(c, id);
    EXPECT_EQ(ch.verdict, "not comparable") << id << ": " << ch.why;
    EXPECT_NEAR(ch.latency_change, 0.4, 0.05) << "the medians are still compared";
  }
  EXPECT_NE(change_of(c, "cpu/f32/t0/b1/s128").why.find("3 latency samples on each side (-r 3): fewer than 6"),
            std::string::npos)
      << change_of(c, "cpu/f32/t0/b1/s128").why;
  EXPECT_NE(change_of(c, "cpu/f32/t0/b2/s128").why.find("5 latency samples on one side"), std::string::npos);
  EXPECT_TRUE(regressions_beyond(c, 0.05).empty()) << "--fail-on-regression passes";
}

// tach compare RUN --by threads said +37.8% throughput where the table said -61%: the table's
// samples/s was samples over the summed time, which a few 72 ms runs dominate, and compare's the
// batch over the median. Now both are the batch over the median, whichever way the run was written.
TEST(Compare, ThroughputChangeIsTheTablesSamplesPerSecondRatio) {
  test::TempDir root;
  PointResult one = point(4, 3.0, 0.1, 1), two = point(4, 2.0, 0.1, 2);
  one.key.threads = 1, two.key.threads = 2;
  // The 2-thread point locked at 72 ms for its last third, as under a competing load.
  for (size_t i = 20; i < two.batch_latency_samples_ms.size(); ++i) two.batch_latency_samples_ms[i] = 72;
  two.batch_latency_ms = bench::distribution(two.batch_latency_samples_ms);
  // As tach bench wrote them before: samples over the summed measured time.
  for (PointResult* p : {&one, &two}) p->samples_per_s = double(p->key.batch) * 1e3 / p->batch_latency_ms.mean;
  ASSERT_LT(two.samples_per_s / one.samples_per_s - 1, -0.5) << "the old table's figure";
  const std::string run = write_run(root, "run", {one, two});
  const std::vector<PointResult> read = read_run_results(run);
  CompareOptions by;
  by.by = "threads";
  const PointChange ch = compare_runs({run}, by).changes.at(0);  // a copy: the comparison is a temporary
  const double table_ratio = read[1].samples_per_s / read[0].samples_per_s - 1;
  EXPECT_GT(ch.throughput_change, 0) << "two threads' median is faster";
  EXPECT_NEAR(ch.throughput_change, table_ratio, 1e-9);
  EXPECT_DOUBLE_EQ(ch.baseline_samples_per_s, read[0].samples_per_s);
  EXPECT_DOUBLE_EQ(ch.samples_per_s, read[1].samples_per_s);
  EXPECT_DOUBLE_EQ(read[1].samples_per_s, 4e3 / read[1].batch_latency_ms.median);
  char cell[32];
  std::snprintf(cell, sizeof cell, "%.1f", read[1].samples_per_s);
  EXPECT_NE(results_table(read, "table").find(cell), std::string::npos) << "the table shows the same figure";
  // The throughput interval is the latency's, inverted.
  EXPECT_NEAR(ch.throughput_lo, 1 / (1 + ch.latency_hi) - 1, 1e-12);
  EXPECT_NEAR(ch.throughput_hi, 1 / (1 + ch.latency_lo) - 1, 1e-12);
}

// --by batch: a larger batch's longer latency is no regression when each row takes less time; the
// verdict follows the throughput the table shows, and --fail-on-regression gates the same.
TEST(Compare, ByBatchJudgesTheTimePerRow) {
  test::TempDir root;
  const std::string run =
      write_run(root, "run", {point(1, 10, 0.02, 1), point(4, 20, 0.02, 2), point(16, 200, 0.02, 3)});
  CompareOptions by;
  by.by = "batch";
  const RunComparison c = compare_runs({run}, by);
  ASSERT_EQ(c.changes.size(), 2u);
  const PointChange& b4 = c.changes[0];  // b1 -> b4: twice the latency, half the time per row
  EXPECT_NEAR(b4.latency_change, 1.0, 0.05);
  EXPECT_NEAR(b4.throughput_change, 1.0, 0.1);
  EXPECT_EQ(b4.verdict, "improved") << b4.why;
  EXPECT_NE(b4.why.find("time per row (batch 1 to 4)"), std::string::npos) << b4.why;
  const PointChange& b16 = c.changes[1];  // b1 -> b16: 20x the latency, 1.25x the time per row
  EXPECT_EQ(b16.verdict, "regressed") << b16.why;
  EXPECT_LT(b16.throughput_change, 0);
  ASSERT_EQ(regressions_beyond(c, 0.2).size(), 1u);
  EXPECT_TRUE(regressions_beyond(c, 0.3).empty()) << "25% per row, not the latency's +1900%";
}

}  // namespace
}  // namespace tach
