// tach compare on real run directories. A timing test may assert only what noise cannot break,
// so the verdicts are checked on runs whose relation is known exactly: a real run against a copy
// of itself (within noise, no change) and against a copy with every latency 1.5 times as long
// (regressed by 50%). Two live sweeps of one build are compared as well, and of them only what
// noise leaves alone is checked: every point is judged from its raw samples and its change lies
// inside its own interval. (On a quiet machine those two come out within noise; on a busy 2-core
// VM the load can differ between the runs, and then they are inconclusive, or drift between
// them by more than either drifted inside, which tach compare calls a change.) The 1.5x copy is
// a regression only where the run drifted less than 50% inside: a quiet machine. Labelled slow
// and run serially (make test-all).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tach/compare.h"
#include "test_util.h"

namespace tach {
namespace {

namespace fs = std::filesystem;

// A copy of run `from` whose every latency (raw samples and their summary) is scaled by `factor`.
void scaled_copy(const std::string& from, const std::string& to, double factor) {
  fs::copy(from, to, fs::copy_options::recursive);
  std::istringstream in(test::read_text(from + "/results.jsonl"));
  std::string line, out;
  while (std::getline(in, line)) {
    nlohmann::json p = nlohmann::json::parse(line);
    if (p.contains("batch_latency_samples_ms"))
      for (auto& v : p["batch_latency_samples_ms"]) v = v.get<double>() * factor;
    if (p.contains("batch_latency_ms"))
      for (const char* k : {"median", "mean", "std", "min", "max", "p90", "p95", "p99"})
        if (p["batch_latency_ms"].contains(k))
          p["batch_latency_ms"][k] = p["batch_latency_ms"][k].get<double>() * factor;
    out += p.dump() + "\n";
  }
  test::write_text(to + "/results.jsonl", out);
}

TEST(CompareLive, VerdictsOnRealRunsAndWhatNoiseCannotBreak) {
  const char* tach = TACH_BINARY_DIR "/tach";
  if (!fs::exists(tach)) GTEST_SKIP() << "the tach binary is not built at " << tach;
  test::TempDir root;
  auto bench = [&](const std::string& id) {
    const std::string cmd = "OMP_NUM_THREADS=2 '" + std::string(tach) +
                            "' bench -m preset:distilbert-base-uncased -b 1,4 -s 32 --runs 25 --warmup 3 "
                            "--no-progress --runs-dir '" +
                            root.path() + "' --run-id " + id + " > /dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  };
  bench("a");
  bench("b");
  const std::string a = root.path() + "/a";
  scaled_copy(a, root.path() + "/a_same", 1.0);
  scaled_copy(a, root.path() + "/a_slower", 1.5);

  const RunComparison known = compare_runs({a, root.path() + "/a_same", root.path() + "/a_slower"});
  ASSERT_EQ(known.changes.size(), 4u);  // 2 points x 2 runs against the baseline
  // The copies carry the run's own load record: where it was measured under contention or a load
  // that moved, every verdict is rightly inconclusive, and nothing here can be checked.
  for (const auto& ch : known.changes)
    if (ch.verdict == "inconclusive") GTEST_SKIP() << "needs a quiet machine: " << ch.id << " was " << ch.why;
  for (const auto& ch : known.changes) {
    EXPECT_EQ(ch.n, 25) << ch.id;
    if (ch.run == 1) {
      EXPECT_EQ(ch.verdict, "within noise") << ch.id << ": " << ch.why;
      EXPECT_NEAR(ch.latency_change, 0.0, 1e-9) << ch.id;
    } else {
      EXPECT_EQ(ch.verdict, "regressed") << ch.id << ": " << ch.why;
      EXPECT_NEAR(ch.latency_change, 0.5, 1e-6) << ch.id;
      EXPECT_NEAR(ch.throughput_change, 1 / 1.5 - 1, 1e-6) << ch.id;
    }
  }

  const RunComparison live = compare_runs({a, root.path() + "/b"});
  ASSERT_EQ(live.changes.size(), 2u);
  for (const auto& ch : live.changes) {
    EXPECT_EQ(ch.baseline_n, 25) << ch.id;
    EXPECT_EQ(ch.n, 25) << ch.id;
    EXPECT_TRUE(ch.verdict == "within noise" || ch.verdict == "improved" || ch.verdict == "regressed" ||
                ch.verdict == "inconclusive")
        << ch.verdict;
    EXPECT_LE(ch.latency_lo, ch.latency_change) << ch.id;
    EXPECT_GE(ch.latency_hi, ch.latency_change) << ch.id;
    std::printf("%s: same build, live: %s (%s)\n", ch.id.c_str(), ch.verdict.c_str(), ch.why.c_str());
  }
}

}  // namespace
}  // namespace tach
