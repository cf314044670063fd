// Machine ceilings must not poison later verdicts: a measurement taken while another process
// holds a core is marked as such and not cached, and an op that beats its ceiling is reported
// as a violation instead of a verdict above 100%.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "tach/model.h"
#include "tach/profile.h"
#include "tach/runtime.h"
#include "tach/system_info.h"
#include "test_util.h"

namespace tach {
namespace {

// A child process spinning on a core for as long as the object lives.
class BusyLoop {
 public:
  BusyLoop() {
    pid_ = fork();
    if (pid_ == 0) {
      volatile uint64_t x = 0;
      for (;;) x = x + 1;
    }
  }
  ~BusyLoop() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

 private:
  pid_t pid_ = -1;
};

// Points the cache at a temporary directory for the test's lifetime.
class TempCache {
 public:
  TempCache() {
    const char* old = std::getenv("XDG_CACHE_HOME");
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv("XDG_CACHE_HOME", dir_.path().c_str(), 1);
  }
  ~TempCache() {
    if (had_) setenv("XDG_CACHE_HOME", old_.c_str(), 1);
    else unsetenv("XDG_CACHE_HOME");
  }
  bool empty() const {
    const auto d = std::filesystem::path(dir_.path()) / "tach";
    return !std::filesystem::exists(d) || std::filesystem::is_empty(d);
  }

 private:
  test::TempDir dir_;
  bool had_ = false;
  std::string old_;
};

TEST(Ceilings, MeasurementUnderLoadIsFlaggedAndNotCached) {
  TempCache cache;
  MachineCeilings c;
  {
    BusyLoop busy;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let it take its core
    c = machine_ceilings(true);
  }
  EXPECT_TRUE(c.under_load) << "other processes used " << c.other_cores << " cores";
  EXPECT_GT(c.other_cores, kMaxOtherCores);
  EXPECT_TRUE(cache.empty()) << "a loaded measurement must not be cached";
  EXPECT_NE(describe_ceilings_provenance(c).find("WARNING: measured under load"), std::string::npos);
  // The next call in this process uses the same measurement: one run judges all its points
  // against one ceiling, not one that moves with the load. Nothing on disk: a later process measures again.
  const MachineCeilings again = machine_ceilings();
  EXPECT_FALSE(again.from_cache);
  EXPECT_TRUE(again.under_load);
  EXPECT_EQ(again.gemm_f32_flops, c.gemm_f32_flops) << "measured again within the process";
  EXPECT_EQ(again.measured_at, c.measured_at);
  EXPECT_TRUE(cache.empty());
}

// Decoding's bandwidth limit measured now beside a busy process says so, with the load, in its
// method (text and JSON) and as a warning.
TEST(Ceilings, ADecodeLimitMeasuredUnderLoadSaysSo) {
  TempCache cache;
  DecodeLimit d;
  {
    BusyLoop busy;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    d = decode_limit(1e6, Device::cpu(), 1e-3);
  }
  EXPECT_NE(d.method.find("other processes used"), std::string::npos) << d.method;
  EXPECT_NE(d.warning.find("measured under load"), std::string::npos) << d.warning;
}

// A cache file must say it was measured on a quiet machine: one recording other processes above
// kMaxOtherCores, or recording no load at all (written before the load was, or by a version that
// misread it), is not used; the next call measures again.
TEST(Ceilings, ACacheFromABusyOrUnknownLoadIsNotUsed) {
  TempCache cache;
  const std::string file = machine_ceilings_cache_file();
  std::filesystem::create_directories(std::filesystem::path(file).parent_path());
  const SystemInfo sys = system_info();
  nlohmann::json j = {
      {"key", sys.cpu_model + "|" + std::to_string(sys.logical_cores) + "|" + std::to_string(threads())},
      {"gemm_f32_flops", 92.4e9},
      {"gemm_bf16_flops", 50e9},
      {"gemm_int8_ops", 200e9},
      {"memory_bytes_per_s", 20e9},
      {"memory_read_bytes_per_s", 25e9},
      {"read_streams", 4},
      {"threads", threads()},
      {"cpu", sys.cpu_model},
      {"measured_at", "2026-11-20T10:00:00Z"},
      {"method", "test"},
      {"other_cores", 0.0},
      {"load_average", 0.1}};
  test::write_text(file, j.dump());
  ASSERT_TRUE(cached_machine_ceilings().has_value()) << "a quiet cache is used";
  EXPECT_TRUE(cached_machine_ceilings()->load_measured);
  j["other_cores"] = 1.3;
  test::write_text(file, j.dump());
  EXPECT_FALSE(cached_machine_ceilings().has_value()) << "a cache measured beside 1.3 busy cores was used";
  j.erase("other_cores");
  test::write_text(file, j.dump());
  EXPECT_FALSE(cached_machine_ceilings().has_value()) << "a cache that does not say its load was used";
}

// Decoding's bandwidth limit needs only the memory: without a cache it measures the streams
// alone, says so, and caches nothing.
TEST(Ceilings, MemoryAloneWithoutACache) {
  TempCache cache;
  const MachineCeilings c = memory_bandwidth_ceiling();
  EXPECT_FALSE(c.from_cache);
  EXPECT_GT(c.memory_bytes_per_s, 0);
  EXPECT_GT(c.memory_read_bytes_per_s, 0);
  EXPECT_NE(c.method.find("measured now"), std::string::npos) << c.method;
  EXPECT_TRUE(cache.empty());
}

// Each decoding point of a sweep asks for the bandwidth: without a cache it is measured once per
// process (a second or more each time, and a limit that moved with the load from point to point).
TEST(Ceilings, MemoryAloneIsMeasuredOncePerProcess) {
  TempCache cache;
  const MachineCeilings first = memory_bandwidth_ceiling();
  const MachineCeilings second = memory_bandwidth_ceiling();
  EXPECT_EQ(second.memory_bytes_per_s, first.memory_bytes_per_s) << "measured again";
  EXPECT_EQ(second.memory_read_bytes_per_s, first.memory_read_bytes_per_s);
  EXPECT_EQ(second.measured_at, first.measured_at);
  EXPECT_TRUE(cache.empty());
}

TEST(Ceilings, CachedFigureSaysItsAgeAndLoad) {
  TempCache cache;
  const MachineCeilings first = machine_ceilings(true);
  if (first.under_load) GTEST_SKIP() << "the machine is busy (" << first.other_cores << " other cores): nothing cached";
  const MachineCeilings second = machine_ceilings();
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(second.measured_at, first.measured_at);
  // Every ceiling comes back from the cache as measured.
  EXPECT_GT(first.gemm_int8_ops, 0);
  EXPECT_GT(first.memory_read_bytes_per_s, 0);
  EXPECT_EQ(second.gemm_int8_ops, first.gemm_int8_ops);
  EXPECT_EQ(second.memory_read_bytes_per_s, first.memory_read_bytes_per_s);
  EXPECT_GE(second.age_s, 0);
  EXPECT_NE(describe_ceilings_provenance(second).find("old (other processes used"), std::string::npos)
      << describe_ceilings_provenance(second);
}

TEST(Ceilings, AnOpAboveItsCeilingIsAViolation) {
  MachineCeilings c;
  c.gemm_f32_flops = 100e9;
  c.memory_bytes_per_s = 10e9;
  // 1 GFLOP in 5 ms: twice what the compute ceiling allows.
  EXPECT_TRUE(roofline(1e9, 1e6, 0.005, c).above_ceiling);
  // Within the tolerance (105%) is noise, not a violation.
  EXPECT_FALSE(roofline(1e9, 1e6, 0.01 / 1.05, c).above_ceiling);

  // A real profile against ceilings 1000x too low, as a figure cached from a busy moment would be.
  LoadOptions lo;
  auto model = load_model("preset:bert-tiny", lo);
  const TokenBatch batch = TokenBatch::from_rows({{101, 7, 8, 9, 102}, {101, 5, 102}}, 0);
  ProfilerOptions o;
  o.schedule = {0, 0, 0, 2, 1};
  Profiler p(o);
  p.start();
  for (int i = 0; i < 2; ++i) {
    (void)model->classify(batch);
    p.step();
  }
  p.stop();
  const ProfileData d = p.data();
  MachineCeilings low;
  low.gemm_f32_flops = 1e6;
  low.memory_bytes_per_s = 1e6;
  const auto v = ceiling_violations(d, low);
  ASSERT_FALSE(v.empty());
  EXPECT_NE(v[0].find("% of its"), std::string::npos) << v[0];
  MachineCeilings high;
  high.gemm_f32_flops = 1e18;
  high.memory_bytes_per_s = 1e18;
  EXPECT_TRUE(ceiling_violations(d, high).empty());
}

// End to end: a cached ceiling far below what the machine does (as one cached from a busy moment
// would be) is caught by tach profile, which measures again and says so.
TEST(Ceilings, ProfileMeasuresAgainWhenACachedCeilingIsBeaten) {
  TempCache cache;
  MachineCeilings c = machine_ceilings(true);
  if (c.under_load || c.cache_file.empty())
    GTEST_SKIP() << "the machine is busy (" << c.other_cores << " other cores): nothing cached to doctor";
  auto j = nlohmann::json::parse(test::read_text(c.cache_file));
  j["gemm_f32_flops"] = 1e6;  // 1 MFLOP/s: every GEMM beats it
  j["memory_bytes_per_s"] = 1e6;
  test::write_text(c.cache_file, j.dump());
  test::TempDir out;
  // The same thread count as the cache's key: by default tach takes the cores other processes
  // leave free, which on a busy machine is fewer, and would look for another cache file.
  const std::string cmd = std::string(TACH_BINARY_DIR) + "/tach profile -m preset:bert-tiny -b 2 -s 16 -t " +
                          std::to_string(c.threads) + " " + "--overhead-steps 1 --profiler-output-dir " + out.path() +
                          " 2>&1";
  std::string text;
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) text.append(buf, n);
  ASSERT_EQ(pclose(p), 0) << text;
  EXPECT_NE(text.find("were below what"), std::string::npos) << text;
  EXPECT_NE(text.find("measured them again"), std::string::npos) << text;
  // Measured again: the doctored figure is gone from the cache (or, on a machine that turned busy,
  // not replaced and the run warned).
  const auto after = nlohmann::json::parse(test::read_text(c.cache_file));
  EXPECT_TRUE(after["gemm_f32_flops"].get<double>() > 1e6 || text.find("WARNING") != std::string::npos) << text;
}

}  // namespace
}  // namespace tach

namespace tach {
namespace {

// Each op is judged by the precision its detail names: an f16 attention or linear by the f16
// GEMM's ceiling, not f32's (which would call a tensor-core op faster than possible), a GPU's
// weight-only int8 and nf4 by bf16's.
TEST(Ceilings, OpsAreJudgedAtThePrecisionTheirDetailNames) {
  EXPECT_EQ(ceiling_dtype_of("attention | cudnn fused (f16)", true), DType::f16);
  EXPECT_EQ(ceiling_dtype_of("attention | cudnn fused (bf16)", true), DType::bf16);
  EXPECT_EQ(ceiling_dtype_of("linear | x [8, 64] · W [64, 64]ᵀ bf16", false), DType::bf16);
  EXPECT_EQ(ceiling_dtype_of("linear | x [8, 64] · W [64, 64]ᵀ int8", false), DType::i8);
  EXPECT_EQ(ceiling_dtype_of("linear | x [8, 64] · W [64, 64]ᵀ int8", true), DType::bf16);
  EXPECT_EQ(ceiling_dtype_of("linear | x [8, 64] · W [64, 64]ᵀ nf4", true), DType::bf16);
  EXPECT_EQ(ceiling_dtype_of("linear | x [8, 64] · W [64, 64]ᵀ nf4", false), DType::f32);
  EXPECT_EQ(ceiling_dtype_of("attention | tach tiles f32", true), DType::f32);

  GpuCeilings g;
  g.gemm_f32_flops = 50e12, g.gemm_tf32_flops = 400e12, g.gemm_bf16_flops = 700e12, g.gemm_f16_flops = 720e12;
  g.memory_bytes_per_s = 3e12;
  const MachineCeilings c = as_machine_ceilings(g);
  EXPECT_EQ(gemm_ceiling(c, DType::f16), 720e12);
  // 100 TFLOP in 0.2 s: 500 TFLOP/s is within f16's ceiling, ten times f32's.
  EXPECT_FALSE(roofline(100e12, 1e9, 0.2, c, DType::f16).above_ceiling);
  EXPECT_TRUE(roofline(100e12, 1e9, 0.2, c, DType::f32).above_ceiling);
}

}  // namespace
}  // namespace tach
