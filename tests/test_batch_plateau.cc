// tach bench's finding of where a batch series' throughput stops growing, and why, on synthetic
// points: compute-bound (against the ceiling of the point's own precision, TF32's for a TF32
// point), memory-bound (a peak near the device's memory, or a larger batch out of memory), neither,
// contention, no ceiling to judge by, and a series still growing; then summary.txt and .json.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tach/bench.h"
#include "tach/report.h"

namespace tach {
namespace {

constexpr double GiB = 1024.0 * 1024.0 * 1024.0;

// A finished point: `samples_per_s` and `gflops` achieved; its memory peak (a GPU point's
// allocator total, a CPU point's RSS).
PointResult point(const std::string& device, int64_t batch, double samples_per_s, double gflops,
                  double peak_bytes = 0) {
  PointResult p;
  p.key.device = device;
  p.key.batch = batch;
  p.samples_per_s = samples_per_s;
  p.achieved_gflops_per_s = gflops;
  p.batch_latency_ms.median = 1e3 * double(batch) / samples_per_s;
  p.allocator["total"] = {int64_t(peak_bytes), int64_t(peak_bytes)};
  p.peak_rss_bytes = int64_t(peak_bytes);
  return p;
}

// A device doing 100 GFLOP/s in f32 (800 in TF32, 400 in bf16), holding 80 GiB.
DeviceLimits limits(const std::string&) {
  DeviceLimits d;
  d.gemm_f32_flops = 100e9;
  d.gemm_tf32_flops = 800e9;
  d.gemm_bf16_flops = 400e9;
  d.memory_bytes = 80 * GiB;
  d.source = "measured for the test";
  return d;
}

BatchFinding only(const std::vector<PointResult>& points, const DeviceLimitsLookup& lookup = limits) {
  const auto f = batch_findings(points, 0, lookup);
  EXPECT_EQ(f.size(), 1u);
  return f.empty() ? BatchFinding{} : f.front();
}

// 100, 190, 350, 370 samples/s at batch 1, 2, 4, 8: batch 8 gains 5.7% over batch 4, under 10%.
std::vector<PointResult> levelling(const std::string& device, double gflops_at_4, double peak_at_4 = GiB) {
  return {point(device, 1, 100, gflops_at_4 / 4, GiB), point(device, 2, 190, gflops_at_4 / 2, GiB),
          point(device, 4, 350, gflops_at_4, peak_at_4), point(device, 8, 370, gflops_at_4, peak_at_4)};
}

TEST(BatchPlateau, ComputeBoundNearTheCeiling) {
  const BatchFinding f = only(levelling("cpu", 60));
  EXPECT_EQ(f.plateau_batch, 4);
  EXPECT_NEAR(f.plateau_next_gain, 370.0 / 350 - 1, 1e-9);
  EXPECT_EQ(f.plateau_bound, "compute");
  EXPECT_NEAR(f.plateau_ceiling_fraction, 0.6, 1e-9);
  EXPECT_NE(f.plateau_why.find("60% of the f32 GEMM ceiling"), std::string::npos) << f.plateau_why;
}

TEST(BatchPlateau, ATf32PointIsJudgedAgainstTheTf32Ceiling) {
  // 90 GFLOP/s would be 90% of the f32 ceiling, but TF32's is 800: 11%, so not compute-bound.
  std::vector<PointResult> pts = levelling("cuda:0", 90);
  for (auto& p : pts) p.gemm_tf32 = true;
  const BatchFinding f = only(pts);
  EXPECT_EQ(f.plateau_bound, "neither") << f.plateau_why;
  EXPECT_NEAR(f.plateau_ceiling_fraction, 90.0 / 800, 1e-9);
  EXPECT_NE(f.plateau_why.find("TF32 GEMM ceiling"), std::string::npos) << f.plateau_why;
  for (auto& p : pts) p.gemm_tf32 = false;
  EXPECT_EQ(only(pts).plateau_bound, "compute");
}

TEST(BatchPlateau, BfloatPointsMeetTheBfloatCeiling) {
  std::vector<PointResult> pts = levelling("cuda:0", 90);
  for (auto& p : pts) p.key.dtype = "bf16";
  EXPECT_NEAR(only(pts).plateau_ceiling_fraction, 90.0 / 400, 1e-9);
}

// A GPU's int8 and nf4 are weight-only (bf16 activations and GEMMs): bf16's ceiling judges them;
// the CPU's int8 its s8 GEMM's (none here: not judged).
TEST(BatchPlateau, QuantizedGpuPointsMeetTheBfloatCeiling) {
  for (const char* dtype : {"int8", "nf4"}) {
    std::vector<PointResult> pts = levelling("cuda:0", 90);
    for (auto& p : pts) p.key.dtype = dtype;
    const BatchFinding f = only(pts);
    EXPECT_NEAR(f.plateau_ceiling_fraction, 90.0 / 400, 1e-9) << dtype;
    EXPECT_NE(f.plateau_why.find("bf16 GEMM ceiling"), std::string::npos) << f.plateau_why;
  }
}

TEST(BatchPlateau, MemoryBoundNearTheDevicesMemory) {
  const BatchFinding f = only(levelling("cuda:0", 10, 70 * GiB));
  EXPECT_EQ(f.plateau_bound, "memory") << f.plateau_why;
  EXPECT_NEAR(f.plateau_memory_fraction, 70.0 / 80, 1e-9);
  EXPECT_NE(f.plateau_why.find("88% of the device's"), std::string::npos) << f.plateau_why;
}

TEST(BatchPlateau, ALargerBatchOutOfMemoryEndsTheSeriesThere) {
  std::vector<PointResult> pts = {point("cuda:0", 1, 100, 5), point("cuda:0", 2, 190, 9), point("cuda:0", 4, 350, 17)};
  PointResult failed = point("cuda:0", 8, 1, 0);
  failed.status = "failed";
  failed.reason = "out of memory on cuda:0: could not allocate 4294967296 bytes for activations";
  pts.push_back(failed);
  const BatchFinding f = only(pts);
  EXPECT_EQ(f.plateau_batch, 4);
  EXPECT_EQ(f.plateau_bound, "memory");
  EXPECT_NE(f.plateau_why.find("batch 8 ran out of memory"), std::string::npos) << f.plateau_why;
}

TEST(BatchPlateau, NeitherFarFromBothLimits) {
  const BatchFinding f = only(levelling("cuda:0", 10));
  EXPECT_EQ(f.plateau_bound, "neither");
  EXPECT_NE(f.plateau_why.find("neither compute- nor memory-bound"), std::string::npos) << f.plateau_why;
}

TEST(BatchPlateau, ContentionSaysSoInstead) {
  std::vector<PointResult> pts = levelling("cpu", 60);
  pts[3].load.measured = pts[3].load.contended = true;
  const BatchFinding f = only(pts);
  EXPECT_EQ(f.plateau_bound, "contention");
  EXPECT_NE(f.plateau_why.find("batch 8 was timed while other processes took the cores"), std::string::npos)
      << f.plateau_why;
}

TEST(BatchPlateau, NoCeilingIsNotJudged) {
  const BatchFinding f = only(levelling("cpu", 60), [](const std::string&) {
    DeviceLimits d;
    d.memory_bytes = 80 * GiB;
    d.source = "none cached";
    return d;
  });
  EXPECT_EQ(f.plateau_bound, "unknown");
  EXPECT_EQ(f.plateau_ceiling_fraction, -1);
  EXPECT_NE(f.plateau_why.find("no f32 GEMM ceiling for cpu (none cached)"), std::string::npos) << f.plateau_why;
}

TEST(BatchPlateau, StillGrowingHasNoPlateau) {
  // Doubling the batch gains 40%, then (1 to 4, two doublings at once) 20% per doubling.
  const BatchFinding f = only({point("cpu", 1, 100, 1), point("cpu", 2, 140, 1), point("cpu", 8, 201.6, 1)});
  EXPECT_EQ(f.plateau_batch, 0);
  EXPECT_EQ(f.plateau_bound, "");
}

TEST(BatchPlateau, ADeclineIsAPlateauToo) {
  const BatchFinding f = only({point("cpu", 1, 100, 50), point("cpu", 2, 180, 70), point("cpu", 4, 150, 70)});
  EXPECT_EQ(f.plateau_batch, 2);
  EXPECT_LT(f.plateau_next_gain, 0);
}

TEST(BatchPlateau, SummaryTextAndJsonSayIt) {
  BenchConfig config;
  config.model = "preset:bert-tiny";
  SweepOutcome o;
  o.run_dir = "runs/x";
  o.results = levelling("cpu", 60);
  const std::string text = summary_text(config, o);
  EXPECT_NE(text.find("Throughput stops growing at batch 4 (the next batch gains 6% per doubling, under 10%)"),
            std::string::npos)
      << text;
  const auto j = nlohmann::json::parse(summary_json(config, o)).at("findings").at(0);
  EXPECT_EQ(j.at("throughput_stops_growing_at_batch"), 4);
  EXPECT_FALSE(j.at("plateau_bound").get<std::string>().empty());
  EXPECT_FALSE(j.at("plateau_why").get<std::string>().empty());
  o.results = {point("cpu", 1, 100, 1), point("cpu", 2, 190, 1)};
  EXPECT_NE(summary_text(config, o).find("Throughput still grows at the largest batch measured"), std::string::npos);
}

}  // namespace
}  // namespace tach
