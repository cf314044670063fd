// A shared machine, measured: other processes' CPU use under a real competing load (a child
// process spinning, outside tach's own accounting), the rule that calls work contended, a bench
// point that records the load it ran under and says so, and the default thread count that leaves
// busy cores alone. Every bound is wide enough for a machine that others load too; none times tach.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "tach/bench.h"
#include "tach/monitor.h"
#include "tach/report.h"
#include "tach/runtime.h"
#include "test_util.h"

namespace tach {
namespace {

using Clock = std::chrono::steady_clock;

// Child processes spinning on a core each, each for at most `seconds` (bounded by its own clock,
// so a test that dies leaves nothing behind for long), killed when the object goes.
class BusyChildren {
 public:
  BusyChildren(int n, double seconds) {
    for (int i = 0; i < n; ++i) {
      const pid_t pid = fork();
      if (pid == 0) {
        const auto end = Clock::now() + std::chrono::duration<double>(seconds);
        volatile uint64_t x = 0;
        while (Clock::now() < end)
          for (int k = 0; k < 100000; ++k) x = x + 1;
        _exit(0);
      }
      pids_.push_back(pid);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let them take their cores
  }
  ~BusyChildren() {
    for (pid_t p : pids_) {
      kill(p, SIGKILL);
      waitpid(p, nullptr, 0);
    }
  }

 private:
  std::vector<pid_t> pids_;
};

TEST(OtherCpuUse, ABusyChildIsAboutOneCore) {
  if (!read_cpu_times().ok) GTEST_SKIP() << "no /proc/stat here";
  CpuLoad load;
  {
    BusyChildren busy(1, 2.5);
    CpuLoadWindow window;
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // this process idle: the child is the load
    load = window.finish(1);
  }
  ASSERT_TRUE(load.measured);
  // The child keeps a core busy; other engineers' builds may add to it, never take from it.
  EXPECT_GE(load.other_cores_mean, 0.8) << describe_cpu_load(load);
  EXPECT_LE(load.other_cores_mean, online_cores() + 0.15) << describe_cpu_load(load);
  EXPECT_GE(load.other_cores_max, load.other_cores_mean);
  EXPECT_GE(load.window_s, 1.2);
  EXPECT_GE(load.load_average_1m, 0);
}

// This process's own busy threads are not other processes: a spinning thread of ours beside the
// busy child leaves the child's core counted, not two.
TEST(OtherCpuUse, OwnThreadsAreNotCounted) {
  if (!read_cpu_times().ok) GTEST_SKIP() << "no /proc/stat here";
  if (online_cores() < 2) GTEST_SKIP() << "one core: the child and this thread would share it";
  CpuLoad load;
  double own_cores = 0;
  {
    BusyChildren busy(1, 2.5);
    std::atomic<bool> stop{false};
    std::thread spin([&] {
      volatile uint64_t x = 0;
      while (!stop.load(std::memory_order_relaxed)) x = x + 1;
    });
    const CpuTimes t0 = read_cpu_times();
    CpuLoadWindow window;
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
    const CpuTimes t1 = read_cpu_times();
    load = window.finish(1);
    stop = true;
    spin.join();
    own_cores = (t1.self_s - t0.self_s) / (t1.wall_s - t0.wall_s);
  }
  // Below that, counting ours among the others would stay within the bound: nothing to tell apart.
  if (own_cores < 0.3)
    GTEST_SKIP() << "the machine is too busy: this process's spinning thread got " << own_cores << " cores";
  // Everything the machine did is others + ours; ours is not in others.
  EXPECT_LE(load.other_cores_mean + own_cores, online_cores() + 0.2) << describe_cpu_load(load);
  EXPECT_GE(load.other_cores_mean, 0.5) << describe_cpu_load(load);
}

TEST(OtherCpuUse, DifferenceOfTwoReadings) {
  CpuTimes a, b;
  a.ok = b.ok = true;
  a.wall_s = 10, b.wall_s = 12;
  a.machine_busy_s = 100, b.machine_busy_s = 103;  // 3 core-seconds in 2 s
  a.self_s = 5, b.self_s = 6;                      // 1 of them ours
  EXPECT_DOUBLE_EQ(other_cores_between(a, b), 1.0);
  b.ok = false;
  EXPECT_EQ(other_cores_between(a, b), 0);  // unknown is not "busy"
}

TEST(OtherCpuUse, ContentionRule) {
  EXPECT_FALSE(threads_share_cores(0.1, 2, 2));  // a daemon's tick
  EXPECT_TRUE(threads_share_cores(1.0, 2, 2));   // a busy loop beside two threads on two cores
  EXPECT_FALSE(threads_share_cores(1.0, 1, 2));  // one thread keeps the free core
  EXPECT_TRUE(threads_share_cores(2.0, 1, 2));   // both cores taken
  EXPECT_FALSE(threads_share_cores(6.0, 8, 16));
}

TEST(OtherCpuUse, AShortWindowIsReadOverTheMinimum) {
  if (!read_cpu_times().ok) GTEST_SKIP() << "no /proc/stat here";
  CpuLoadWindow window;
  const CpuLoad l = window.finish(1, 0.3);
  EXPECT_GE(l.window_s, 0.3);  // a few ms of ticks would say nothing
}

// A bench point measured beside busy processes records the load and is called contended: in its
// line of results.jsonl, its stopping rule's words, and the summary's findings.
TEST(BenchLoad, APointBesideBusyProcessesIsContended) {
  if (!read_cpu_times().ok) GTEST_SKIP() << "no /proc/stat here";
  test::TempDir dir;
  BenchConfig c;
  c.model = "preset:bert-tiny";
  c.devices = {"cpu"};
  c.batch_sizes = {1};
  c.seq_lens = {16};
  c.threads = {online_cores()};  // every core, so any busy process takes one the point needs
  c.warmup_runs = 1;
  c.stop.runs = 20;
  c.decode_tokens = 0;
  c.tensorboard = false;
  c.runs_dir = dir.path();
  c.run_id = "loaded";
  SweepOutcome o;
  {
    BusyChildren busy(online_cores(), 20);
    o = run_bench(c);
  }
  ASSERT_EQ(o.results.size(), 1u);
  const PointResult& p = o.results.front();
  ASSERT_EQ(p.status, "ok") << p.reason;
  ASSERT_TRUE(p.load.measured);
  // As many busy processes as cores, against as many threads: they hold about half the machine.
  EXPECT_GE(p.load.other_cores_mean, 0.35 * online_cores()) << p.load.other_cores_mean;
  EXPECT_TRUE(p.load.contended);
  EXPECT_NE(p.stopped_by.find("CONTENDED"), std::string::npos) << p.stopped_by;
  // The line keeps it under the field names the compare reads.
  const auto j = nlohmann::json::parse(point_to_json(p));
  ASSERT_TRUE(j.contains("load")) << j.dump();
  for (const char* f : {"other_cores_mean", "other_cores_max", "load_average_1m", "contended"})
    EXPECT_TRUE(j["load"].contains(f)) << f;
  EXPECT_TRUE(j["load"]["contended"].get<bool>());
  EXPECT_TRUE(point_from_json(point_to_json(p), "line").load.contended);
  const std::string summary = summary_text(o.config, o);
  EXPECT_NE(summary.find("CONTENDED: 1 of 1 points"), std::string::npos) << summary;
}

// The default thread count leaves the cores busy processes hold: with every core taken when tach
// starts, it starts one thread (tach info --json, a fresh process, so its default is chosen now).
TEST(DefaultThreads, FollowTheFreeCoresAtStart) {
  if (!read_cpu_times().ok) GTEST_SKIP() << "no /proc/loadavg here";
  const std::string cmd = "env -u OMP_NUM_THREADS " + std::string(TACH_BINARY_DIR) + "/tach info --json";
  const auto threads_now = [&] {
    FILE* f = popen(cmd.c_str(), "r");
    std::string text;
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
    pclose(f);
    const auto j = nlohmann::json::parse(text);
    return std::make_pair(j.at("threads").get<int>(), j.at("threads_default").get<std::string>());
  };
  BusyChildren busy(online_cores(), 10);
  const auto [n, why] = threads_now();
  EXPECT_EQ(n, 1) << why;
  EXPECT_NE(why.find("kept busy by other processes"), std::string::npos) << why;
}

TEST(DefaultThreads, MoreThreadsThanCoresIsAWarning) {
  EXPECT_EQ(threads_warning(0), "");
  EXPECT_EQ(threads_warning(online_cores()), "");
  const std::string w = threads_warning(online_cores() + 1);
  EXPECT_NE(w.find(std::to_string(online_cores() + 1) + " threads on " + std::to_string(online_cores()) + " cores"),
            std::string::npos)
      << w;
}

}  // namespace
}  // namespace tach
