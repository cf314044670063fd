// tach compare on real runs: two sweeps of one build are called within noise, and a sweep with
// half the threads is called regressed. Meaningful only on a quiet machine, so labelled slow and
// run serially (make test-all).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "tach/compare.h"
#include "test_util.h"

namespace tach {
namespace {

namespace fs = std::filesystem;

// Real runs of one build: slow (two sweeps), and meaningful only on a quiet machine, so labelled
// slow and run serially.
TEST(CompareLive, SameBuildIsWithinNoiseAndFewerThreadsRegress) {
  const char* tach = TACH_BINARY_DIR "/tach";
  if (!fs::exists(tach)) GTEST_SKIP() << "the tach binary is not built at " << tach;
  test::TempDir root;
  auto bench = [&](const std::string& id, const std::string& env) {
    const std::string cmd = env + " '" + std::string(tach) +
                            "' bench -m preset:distilbert-base-uncased -b 1,4 -s 32 --runs 25 --warmup 3 "
                            "--no-progress --runs-dir '" + root.path() + "' --run-id " + id + " > /dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  };
  bench("a", "OMP_NUM_THREADS=2");
  bench("b", "OMP_NUM_THREADS=2");
  bench("one_thread", "OMP_NUM_THREADS=1");
  const RunComparison c = compare_runs({root.path() + "/a", root.path() + "/b", root.path() + "/one_thread"});
  for (const auto& ch : c.changes) {
    if (ch.run == 1) {
      EXPECT_EQ(ch.verdict, "within noise") << ch.id << ": " << ch.why;
    } else {
      EXPECT_EQ(ch.verdict, "regressed") << ch.id << ": " << ch.why;
    }
  }
}

}  // namespace
}  // namespace tach
