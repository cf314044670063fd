// tach analyze: HTA's definitions (kernel types, the temporal breakdown, communication overlap)
// and the step phases on small traces in torch's layout whose answers are worked out by hand
// below; and what analyze_traces refuses (two files claiming one rank at once).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "analyze/diagnosis.h"
#include "analyze/gpu_time.h"
#include "analyze/roofline.h"
#include "analyze/steps.h"
#include "analyze/trace.h"
#include "tach/analyze.h"
#include "tach/error.h"
#include "test_util.h"

namespace tach::analyze {
namespace {

using nlohmann::json;

json kernel(const std::string& name, double ts, double dur, int stream, const char* cat = "kernel") {
  return {{"ph", "X"},     {"cat", cat},
          {"name", name},  {"pid", 0},
          {"tid", stream}, {"ts", ts},
          {"dur", dur},    {"args", {{"device", 0}, {"stream", stream}, {"correlation", 1}, {"External id", 1}}}};
}
json cpu(const std::string& name, double ts, double dur, const char* cat = "cpu_op") {
  return {{"ph", "X"}, {"cat", cat}, {"name", name}, {"pid", 1},
          {"tid", 1},  {"ts", ts},   {"dur", dur},   {"args", json::object()}};
}

// Stream 7: compute [0,10) and [5,20); a copy [25,30); stream 8: an NCCL all-reduce [28,40);
// stream 7: compute [35,50). Window 50; busy [0,20) ∪ [25,50) = 45, idle 5; compute
// [0,20) ∪ [35,50) = 35; non-compute 50 - 35 - 5 = 10; communication 12, of which [35,40)
// overlaps computation: 5/12.
json gpu_trace() {
  return {{"traceEvents",
           {cpu("ProfilerStep#5", 0, 100, "user_annotation"),
            cpu("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 10, "user_annotation"),
            cpu("aten::linear", 12, 20), cpu("autograd::engine::evaluate_function: AddmmBackward0", 40, 30),
            cpu("Optimizer.step#AdamW.step", 75, 20, "user_annotation"), kernel("gemm_a", 0, 10, 7),
            kernel("gemm_b", 5, 15, 7), kernel("Memcpy HtoD (Pageable -> Device)", 25, 5, 7, "gpu_memcpy"),
            kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 28, 12, 8),
            kernel("gemm_a", 35, 15, 7)}},
          {"distributedInfo", {{"rank", 3}, {"world_size", 4}, {"backend", "nccl"}}}};
}

TEST(GpuTime, KernelTypesAsHta) {
  EXPECT_EQ(kernel_type("ncclDevKernel_AllReduce_Sum_f32_RING_LL"), KernelType::communication);
  EXPECT_EQ(kernel_type("ncclKernel_AllGather_RING_LL_Sum_int8_t"), KernelType::communication);
  EXPECT_EQ(kernel_type("Memcpy DtoD (Device -> Device)"), KernelType::memory);
  EXPECT_EQ(kernel_type("Memset (Device)"), KernelType::memory);
  EXPECT_EQ(kernel_type("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>"),
            KernelType::computation);
  EXPECT_EQ(kernel_type("sm90_xmma_gemm_bf16bf16_bf16f32"), KernelType::computation);
  EXPECT_EQ(kernel_type("cross_device_reduce_Sync_kernel"), KernelType::other);  // HTA: Sync is not compute
  EXPECT_EQ(kernel_type("at_cuda_detail::cub::DeviceMemcpy_kernel"), KernelType::other);
}

TEST(GpuTime, TemporalBreakdownAndOverlapAsHtaDefinesThem) {
  const Trace t = load_trace_text("gpu.json", gpu_trace().dump());
  ASSERT_EQ(t.rank, 3);
  const auto g = gpu_time(t, 2);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->window_ns, 50000);
  EXPECT_EQ(g->idle_ns, 5000);
  EXPECT_EQ(g->compute_ns, 35000);
  EXPECT_EQ(g->non_compute_ns, 10000);
  ASSERT_TRUE(g->comm_comp_overlap_pct.has_value());
  EXPECT_NEAR(*g->comm_comp_overlap_pct, 100.0 * 5 / 12, 1e-9);
  EXPECT_EQ(g->kernel_types_ns.at("COMPUTATION"), 40000);
  EXPECT_EQ(g->kernel_types_ns.at("MEMORY"), 5000);
  EXPECT_EQ(g->kernel_types_ns.at("COMMUNICATION"), 12000);
  ASSERT_EQ(g->top_kernels.size(), 2u);
  EXPECT_EQ(g->top_kernels[0].name, "gemm_a");  // 25 µs over 2 calls
  EXPECT_EQ(g->top_kernels[0].calls, 2);
  EXPECT_EQ(g->top_kernels[0].total_ns, 25000);
}

TEST(GpuTime, NoneWithoutDeviceEventsAndNoOverlapWithoutCommunication) {
  EXPECT_FALSE(gpu_time(load_trace_text("cpu.json", R"({"traceEvents":[]})")).has_value());
  const json one = {{"traceEvents", {kernel("gemm", 0, 10, 7)}}};
  const auto g = gpu_time(load_trace_text("one.json", one.dump()));
  ASSERT_TRUE(g.has_value());
  EXPECT_FALSE(g->comm_comp_overlap_pct.has_value());
  EXPECT_EQ(g->idle_ns, 0);
}

TEST(GpuTime, EqualsHtaOnTwoRanksOfRandomKernels) {
  // scripts/golden/make_hta_reference.py: HTA 0.5 run on these traces in the development
  // virtualenv. Breakdowns within 0.5% of the window, overlap within 1 point.
  const std::string dir = std::string(TACH_FIXTURES) + "/analyze/hta_ranks/";
  std::ifstream f(dir + "hta.json");
  const json hta = json::parse(f);
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const auto g = gpu_time(load_trace(dir + "rank" + std::to_string(rank) + ".pt.trace.json"));
    ASSERT_TRUE(g.has_value());
    const json& want = hta["temporal_breakdown"][size_t(rank)];
    ASSERT_EQ(want["rank"], rank);
    const double window = want["kernel_time(us)"].get<double>();
    EXPECT_NEAR(g->window_ns * 1e-3, window, 0.005 * window);
    EXPECT_NEAR(g->idle_ns * 1e-3, want["idle_time(us)"].get<double>(), 0.005 * window);
    EXPECT_NEAR(g->compute_ns * 1e-3, want["compute_time(us)"].get<double>(), 0.005 * window);
    EXPECT_NEAR(g->non_compute_ns * 1e-3, want["non_compute_time(us)"].get<double>(), 0.005 * window);
    ASSERT_TRUE(g->comm_comp_overlap_pct.has_value());
    EXPECT_NEAR(*g->comm_comp_overlap_pct,
                hta["comm_comp_overlap"][size_t(rank)]["comp_comm_overlap_pctg"].get<double>(), 1.0);
    // Kernel launch statistics: the same joins, so the same counts and sums.
    const json& l = hta["launch_stats"][size_t(rank)];
    EXPECT_EQ(g->launch.launches, l["launches"].get<int64_t>());
    EXPECT_NEAR(g->launch.cpu_ns * 1e-3, l["cpu_duration"].get<double>(), 1e-6);
    EXPECT_NEAR(g->launch.gpu_ns * 1e-3, l["gpu_duration"].get<double>(), 1e-6);
    EXPECT_NEAR(g->launch.delay_ns * 1e-3, l["launch_delay"].get<double>(), 1e-6);
    EXPECT_EQ(g->launch.shorter_than_launch, l["shorter_than_launch"].get<int64_t>());
    EXPECT_EQ(g->launch.runtime_outliers, l["runtime_outliers"].get<int64_t>());
    EXPECT_EQ(g->launch.delay_outliers, l["delay_outliers"].get<int64_t>());
    // Idle time by cause, summed over the streams.
    const json& idle = hta["idle_time_breakdown"][size_t(rank)];
    EXPECT_NEAR(g->idle_by_cause.host_wait_ns * 1e-3, idle["host_wait"].get<double>(), 1e-6);
    EXPECT_NEAR(g->idle_by_cause.kernel_wait_ns * 1e-3, idle["kernel_wait"].get<double>(), 1e-6);
    EXPECT_NEAR(g->idle_by_cause.other_ns * 1e-3, idle["other"].get<double>(), 1e-6);
  }
}

TEST(Steps, PhasesOfAStep) {
  // Step [0,100): data [0,10), forward from 10 to the first backward op at 40 (30), backward
  // [40,70), optimizer [75,95), other 10; GPU busy 45 of the step (see gpu_trace).
  const auto steps = step_breakdown(load_trace_text("gpu.json", gpu_trace().dump()));
  ASSERT_EQ(steps.size(), 1u);
  const StepRow& s = steps[0];
  EXPECT_EQ(s.number, 5);
  EXPECT_EQ(s.wall_ns, 100000);
  EXPECT_EQ(s.dataloader_ns, 10000);
  EXPECT_EQ(s.forward_ns, 30000);
  EXPECT_EQ(s.backward_ns, 30000);
  EXPECT_EQ(s.optimizer_ns, 20000);
  EXPECT_EQ(s.other_ns, 10000);
  EXPECT_EQ(s.gpu_busy_ns, 45000);
  EXPECT_EQ(s.gpu_idle_ns, 55000);
}

TEST(Diagnosis, EachRuleAtItsThreshold) {
  auto has = [](const std::vector<std::string>& f, const std::string& word) {
    return std::any_of(f.begin(), f.end(), [&](const std::string& s) { return s.find(word) != std::string::npos; });
  };
  DiagnosisInput in;
  EXPECT_EQ(diagnose(in), std::vector<std::string>{"no bottleneck stands out by these rules"});
  in.step_wall_ns = 1000;
  in.step_dataloader_ns = 99;
  EXPECT_FALSE(has(diagnose(in), "input-bound"));
  in.step_dataloader_ns = 100;  // 10%
  EXPECT_TRUE(has(diagnose(in), "input-bound: data loading takes 10%"));
  in.gpu = true;
  in.window_ns = 1000;
  in.idle_ns = 300;  // 30%
  in.kernels = 10;
  in.short_kernels = 4;
  EXPECT_TRUE(has(diagnose(in), "the GPU is idle 30%"));
  EXPECT_FALSE(has(diagnose(in), "launch-bound"));
  in.short_kernels = 5;  // half the kernels short: launch-bound
  EXPECT_TRUE(has(diagnose(in), "launch-bound: the GPU is idle 30% of its window and 50% of the kernels"));
  in.comm_ns = 300;
  in.comm_overlapped_ns = 201;  // 99 exposed of 1000
  EXPECT_FALSE(has(diagnose(in), "communication exposed"));
  in.comm_overlapped_ns = 200;
  EXPECT_TRUE(has(diagnose(in), "communication exposed: 10% of the GPU window"));
  in.kernel_ns = 100;
  in.memory_kernel_ns = 15;
  EXPECT_TRUE(has(diagnose(in), "copies and sets take 15% of kernel time"));
  DiagnosisInput cpu;
  cpu.top_self_cpu_op = "aten::gelu_backward";
  cpu.top_self_cpu_ns = 25;
  cpu.total_self_cpu_ns = 100;
  EXPECT_TRUE(has(diagnose(cpu), "aten::gelu_backward takes 25% of all self CPU time"));
}

// On a V100 (Volta: no TF32, no bf16) the advice for f32 GEMMs is f16 autocast, never TF32 or bf16.
TEST(Diagnosis, F32GemmAdviceOnVoltaIsF16) {
  auto finding = [](const std::vector<std::string>& f, const std::string& start) {
    for (const auto& s : f)
      if (s.rfind(start, 0) == 0) return s;
    return std::string();
  };
  DiagnosisInput in;
  in.gpu = true;
  in.kernel_ns = 100;
  in.cuda_core_gemm_ns = 40;
  in.cuda_core_gemm_kernel = "volta_sgemm_128x32_nt";
  in.f32_gemm_ns = 40;
  in.f32_gemm_ops = {"aten::mm"};
  in.f32_gemm_flops = 1000000000;
  in.f32_gemm_flops_ns = 1000000;  // 1 TFLOP/s
  const PeakFlops v100 = *published_peak("Tesla V100-SXM2-32GB");
  in.peak_f32 = v100.f32, in.peak_tf32 = v100.tf32, in.peak_bf16 = v100.bf16;
  in.peak_device = v100.device, in.peak_half = v100.half;
  const auto f = diagnose(in);
  for (const char* start : {"low tensor-core use", "f32 GEMMs"}) {
    const std::string s = finding(f, start);
    ASSERT_FALSE(s.empty()) << start << ": " << testing::PrintToString(f);
    EXPECT_NE(s.find("f16"), std::string::npos) << s;
    EXPECT_EQ(s.find("allow_tf32"), std::string::npos) << s;
    EXPECT_EQ(s.find("bfloat16"), std::string::npos) << s;
  }
  EXPECT_NE(finding(f, "f32 GEMMs").find("torch.float16"), std::string::npos) << testing::PrintToString(f);
  // On an H100 the advice stays TF32 and bf16.
  const PeakFlops h100 = *published_peak("NVIDIA H100 80GB HBM3");
  in.peak_f32 = h100.f32, in.peak_tf32 = h100.tf32, in.peak_bf16 = h100.bf16;
  in.peak_device = h100.device, in.peak_half = h100.half;
  EXPECT_NE(finding(diagnose(in), "low tensor-core use").find("allow_tf32"), std::string::npos);
}

TEST(Roofline, PublishedPeaksAndAnOpAgainstItsPrecision) {
  EXPECT_EQ(published_peak("NVIDIA H100 80GB HBM3")->device, "H100 SXM");
  EXPECT_EQ(published_peak("NVIDIA H100 PCIe")->device, "H100 PCIe");
  EXPECT_EQ(published_peak("NVIDIA H200")->device, "H200 SXM");
  EXPECT_EQ(published_peak("NVIDIA A100-SXM4-80GB")->device, "A100");
  // HTA's V100 traces name their boards so; Volta's f32 GEMMs have no TF32 to run at.
  const auto v100 = published_peak("Tesla V100-SXM2-32GB");
  ASSERT_TRUE(v100);
  EXPECT_EQ(v100->device, "V100 SXM2");
  EXPECT_DOUBLE_EQ(v100->f32, 15.7e12);
  EXPECT_DOUBLE_EQ(v100->tf32, v100->f32);
  EXPECT_DOUBLE_EQ(v100->bf16, 125e12);
  EXPECT_DOUBLE_EQ(v100->bytes_per_s, 0.9e12);
  EXPECT_EQ(published_peak("Tesla V100-PCIE-16GB")->device, "V100 PCIe");
  EXPECT_FALSE(published_peak("AMD Radeon Graphics"));
  EXPECT_EQ(published_peak("NVIDIA A10")->device, "A10");
  EXPECT_FALSE(published_peak("Radeon 780M").has_value());
  EXPECT_EQ(gemm_precision("[c10::BFloat16, c10::BFloat16]"), "bf16");
  EXPECT_EQ(gemm_precision("[float, float, Scalar]"), "f32");
  // A bf16 mm of 4096³ (2·4096³ FLOPs) whose kernel ran 200 µs on an H100 SXM: 687 TFLOP/s, 69.5%
  // of its 989.4 TFLOP/s.
  const json trace = {{"deviceProperties", {{{"id", 0}, {"name", "NVIDIA H100 80GB HBM3"}}}},
                      {"traceEvents",
                       {{{"ph", "X"},
                         {"cat", "cpu_op"},
                         {"name", "aten::mm"},
                         {"pid", 1},
                         {"tid", 1},
                         {"ts", 0},
                         {"dur", 20},
                         {"args",
                          {{"External id", 7},
                           {"Input Dims", {{4096, 4096}, {4096, 4096}}},
                           {"Input type", {"c10::BFloat16", "c10::BFloat16"}}}}},
                        {{"ph", "X"},
                         {"cat", "kernel"},
                         {"name", "sm90_xmma_gemm_bf16bf16"},
                         {"pid", 0},
                         {"tid", 7},
                         {"ts", 10},
                         {"dur", 200},
                         {"args", {{"device", 0}, {"stream", 7}, {"correlation", 3}, {"External id", 7}}}}}}};
  test::TempDir dir;
  std::ofstream(dir.file("h100.pt.trace.json")) << trace.dump();
  const json j = json::parse(analyze_traces({dir.file("h100.pt.trace.json")}, AnalyzeOptions{}).json);
  EXPECT_EQ(j["roofline"]["device"], "H100 SXM");
  const json& mm = j["ops"][0]["name"] == "aten::mm" ? j["ops"][0] : j["ops"][1];
  ASSERT_EQ(mm["name"], "aten::mm");
  EXPECT_EQ(mm["precision"], "bf16");
  EXPECT_NEAR(mm["peak_fraction"].get<double>(), 2.0 * 4096 * 4096 * 4096 / 200e-6 / 989.4e12, 1e-9);
}

TEST(AnalyzeTraces, JsonOfAGpuRank) {
  test::TempDir dir;
  std::ofstream(dir.file("rank3.pt.trace.json")) << gpu_trace().dump();
  const auto a = analyze_traces({dir.path()}, AnalyzeOptions{});
  const json j = json::parse(a.json);
  ASSERT_EQ(j["ranks"].size(), 1u);
  const json& r = j["ranks"][0];
  EXPECT_EQ(r["rank"], 3);
  EXPECT_DOUBLE_EQ(r["gpu"]["window_us"].get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(r["gpu"]["idle_us"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(r["gpu"]["compute_us"].get<double>(), 35.0);
  EXPECT_DOUBLE_EQ(r["gpu"]["non_compute_us"].get<double>(), 10.0);
  EXPECT_NEAR(r["comm_comp_overlap_pct"].get<double>(), 100.0 * 5 / 12, 1e-6);
  EXPECT_EQ(r["top_kernels"][0]["name"], "gemm_a");
  EXPECT_EQ(j["sort_by"], "self_device");  // a GPU trace sorts by device time
  EXPECT_NE(a.text.find("compute 70.0%, non-compute 20.0%, idle 10.0%"), std::string::npos) << a.text;
}

TEST(AnalyzeTraces, InvalidUtf8InNamesIsReplacedNotRefused) {
  // The reader keeps a name's bytes as they are; the JSON written replaces what is not UTF-8.
  test::TempDir dir;
  std::ofstream(dir.file("t.pt.trace.json"))
      << "{\"schemaVersion\":{\"v\":\"\xff\"},\"deviceProperties\":[{\"name\":\"\xfe\"}],\"traceEvents\":["
         "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op\xff\",\"ts\":1,\"dur\":2,\"tid\":1}]}";
  const auto a = analyze_traces({dir.file("t.pt.trace.json")}, AnalyzeOptions{});
  EXPECT_EQ(json::parse(a.json)["ops"][0]["name"], "op\xef\xbf\xbd");
}

TEST(AnalyzeTraces, AStragglerRankAndClockOffsetsAreSaid) {
  // Ranks 0 to 2 with steps of 100 µs; rank 3's take 120: 20% above the ranks' median (100).
  test::TempDir dir;
  for (int rank = 0; rank < 4; ++rank) {
    json events = json::array();
    for (int step = 0; step < 3; ++step)
      events.push_back(
          cpu("ProfilerStep#" + std::to_string(step), step * 200, rank == 3 ? 120 : 100, "user_annotation"));
    const json t = {{"traceEvents", events},
                    {"baseTimeNanoseconds", 1000000000 + rank * 2000000},
                    {"distributedInfo", {{"rank", rank}, {"world_size", 4}}}};
    std::ofstream(dir.file("r" + std::to_string(rank) + ".pt.trace.json")) << t.dump();
  }
  const auto a = analyze_traces({dir.path()}, AnalyzeOptions{});
  const json j = json::parse(a.json);
  ASSERT_EQ(j["findings"].size(), 1u) << a.text;
  EXPECT_EQ(j["findings"][0],
            "straggler: rank 3's median step, 0.120 ms, is 20% above the ranks' median; the others wait for it at "
            "every collective");
  EXPECT_DOUBLE_EQ(j["ranks"][3]["step_median_us"].get<double>(), 120.0);
  EXPECT_NE(a.text.find("clock offsets (baseTimeNanoseconds against rank 0): rank 1 +2.000 ms; rank 2 +4.000 ms;"),
            std::string::npos)
      << a.text;
}

TEST(AnalyzeTraces, TwoFilesClaimingOneRankAtOnceAreRefused) {
  test::TempDir dir;
  std::ofstream(dir.file("a.pt.trace.json")) << gpu_trace().dump();
  std::ofstream(dir.file("b.pt.trace.json")) << gpu_trace().dump();
  try {
    analyze_traces({dir.path()}, AnalyzeOptions{});
    FAIL() << "two traces of rank 3 over the same time were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("both claim rank 3 over the same time"), std::string::npos) << e.what();
  }
  // A directory without traces, and a path that does not exist, are named.
  test::TempDir empty;
  EXPECT_THROW(analyze_traces({empty.path()}, AnalyzeOptions{}), Error);
  EXPECT_THROW(analyze_traces({empty.file("absent.json")}, AnalyzeOptions{}), Error);
}

}  // namespace
}  // namespace tach::analyze
