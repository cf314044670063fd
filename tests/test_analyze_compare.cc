// tach analyze A B (two runs of real torch.profiler traces compared: the step verdict and the ops
// side by side) and the roofline's memory side (bytes from the recorded shapes and dtypes, verdicts
// against a bandwidth). The traces are tests/fixtures/analyze/
// compare/ (scripts/golden/make_compare_traces.py: two cycles of 8 steps of one run, base/, and a
// run four times wider, wide/) and train/.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "analyze/comparison.h"
#include "analyze/diagnosis.h"
#include "analyze/op_cost.h"
#include "analyze/roofline.h"
#include "analyze/trace.h"
#include "tach/analyze.h"
#include "tach/error.h"
#include "test_util.h"

namespace tach::analyze {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::string kFixtures = std::string(TACH_FIXTURES) + "/analyze/";
const std::string kBase = kFixtures + "compare/base";
const std::string kWide = kFixtures + "compare/wide";

json compared(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  return json::parse(compare_traces(a, b, AnalyzeOptions{}).analysis.json);
}

TEST(OpCost, GemmsLinearAttentionAndElementwiseFromTheirShapes) {
  // addmm(bias [256], a [64, 128], b [128, 256]) in f32: 2·64·128·256 FLOPs; a, b, bias read, [64, 256] written.
  auto c = op_cost("aten::addmm", "[[256], [64, 128], [128, 256], [], []]", "[float, float, float, Scalar, Scalar]");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->flops, 2 * 64 * 128 * 256);
  EXPECT_EQ(c->bytes, (256 + 64 * 128 + 128 * 256 + 64 * 256) * 4);
  c = op_cost("aten::bmm", "[[8, 32, 16], [8, 16, 32]]", "[c10::BFloat16, c10::BFloat16]");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->flops, 2 * 8 * 32 * 16 * 32);
  EXPECT_EQ(c->bytes, (8 * 32 * 16 + 8 * 16 * 32 + 8 * 32 * 32) * 2);
  // linear(x [4, 16, 64], w [256, 64], b [256]): M = 64 rows.
  c = op_cost("aten::linear", "[[4, 16, 64], [256, 64], [256]]", "[float, float, float]");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->flops, 2 * 64 * 64 * 256 + 64 * 256);
  EXPECT_EQ(c->bytes, (4 * 16 * 64 + 256 * 64 + 256 + 64 * 256) * 4);
  c = op_cost("aten::scaled_dot_product_attention", "[[2, 4, 128, 32], [2, 4, 128, 32], [2, 4, 128, 32], [], []]",
              "[c10::Half, c10::Half, c10::Half, Scalar, bool]");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->flops, 2LL * 2 * 4 * 128 * 128 * 64);
  EXPECT_EQ(c->bytes, 4LL * 2 * 4 * 128 * 32 * 2);
  // add(x [8, 32, 64], y [64]) broadcasts: 8·32·64 out; each input read once.
  c = op_cost("aten::add", "[[8, 32, 64], [64], []]", "[float, float, Scalar]");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->flops, 8 * 32 * 64);
  EXPECT_EQ(c->bytes, (8 * 32 * 64 + 64 + 8 * 32 * 64) * 4);
  c = op_cost("aten::gelu", "[[8, 256], []]", "[c10::BFloat16, std::string_view]");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->bytes, 2 * 8 * 256 * 2);
  // Not in the model, or shapes that do not fit it.
  EXPECT_FALSE(op_cost("aten::conv2d", "[[1, 3, 8, 8], [4, 3, 3, 3]]", "[float, float]"));
  EXPECT_FALSE(op_cost("aten::mm", "[[4, 5], [6, 7]]", "[float, float]"));
  EXPECT_FALSE(op_cost("aten::add", "[[4, 5], [6]]", "[float, float]"));
  EXPECT_FALSE(op_cost("aten::mm", "not shapes", "[float, float]"));
}

TEST(OpCost, ParsesTheShapeAndTypeTextTorchWrites) {
  EXPECT_EQ(*parse_shapes("[[8, 32], [], [64]]"), (std::vector<std::vector<int64_t>>{{8, 32}, {}, {64}}));
  EXPECT_EQ(*parse_shapes("[]"), std::vector<std::vector<int64_t>>{});
  EXPECT_FALSE(parse_shapes("[[8, 32]"));
  EXPECT_FALSE(parse_shapes("[[8, x]]"));
  EXPECT_EQ(parse_types("[float, c10::BFloat16, Scalar]"),
            (std::vector<std::string>{"float", "c10::BFloat16", "Scalar"}));
  EXPECT_EQ(element_bytes("float"), 4);
  EXPECT_EQ(element_bytes("c10::Half"), 2);
  EXPECT_EQ(element_bytes("long int"), 8);
  EXPECT_EQ(element_bytes("Scalar"), 0);
}

// The model's GEMM FLOPs over a real trace equal torch's own (key_averages' flops, with_flops),
// and every call of them is costed: the bytes cover the same calls torch counted.
TEST(Roofline, CostsOfARealTraceCoverTorchsCallsAndFlops) {
  std::ifstream f(kBase + "/key_averages.json");
  ASSERT_TRUE(f.good()) << "fixture missing: scripts/golden/make_compare_traces.py writes it";
  const json ref = json::parse(f)["cycles"][0]["by_name"];
  std::map<std::string, NameCost> costs;
  add_trace_costs(load_trace(kBase + "/base.0.pt.trace.json.gz"), costs);
  int checked = 0;
  for (const auto& r : ref) {
    const std::string name = r["key"];
    if (name != "aten::addmm" && name != "aten::mm" && name != "aten::bmm" && name != "aten::linear") continue;
    ASSERT_TRUE(costs.count(name)) << name;
    EXPECT_EQ(costs[name].calls, r["count"].get<int64_t>()) << name;
    EXPECT_EQ(costs[name].costed_calls, costs[name].calls) << name;
    if (name != "aten::linear") { EXPECT_EQ(costs[name].flops, r["flops"].get<int64_t>()) << name; }
    EXPECT_GT(costs[name].bytes, 0) << name;
    EXPECT_EQ(costs[name].precision, "f32");
    ++checked;
  }
  EXPECT_GE(checked, 2) << "the fixture has no GEMMs to check";
}

TEST(Roofline, PublishedBandwidthWithItsSource) {
  const auto h100 = published_peak("NVIDIA H100 80GB HBM3");
  ASSERT_TRUE(h100);
  EXPECT_DOUBLE_EQ(h100->bytes_per_s, 3.35e12);
  EXPECT_NE(h100->bandwidth_source.find("H100 datasheet"), std::string::npos);
  EXPECT_DOUBLE_EQ(published_peak("NVIDIA A100-SXM4-80GB")->bytes_per_s, 2.039e12);
  EXPECT_DOUBLE_EQ(published_peak("NVIDIA A100-SXM4-40GB")->bytes_per_s, 1.555e12);
  EXPECT_DOUBLE_EQ(published_peak("NVIDIA H200")->bytes_per_s, 4.8e12);
  const Bound b = roofline_bound(100, 100, 1e12, 1e11);  // intensity 1 under a ridge of 10
  EXPECT_TRUE(b.memory_bound);
  EXPECT_DOUBLE_EQ(b.ridge, 10);
  EXPECT_DOUBLE_EQ(b.attainable_flops, 1e11);
  EXPECT_FALSE(roofline_bound(2000, 100, 1e12, 1e11).memory_bound);
}

json event(const std::string& cat, const std::string& name, double ts, double dur, json args) {
  return {{"ph", "X"}, {"cat", cat}, {"name", name}, {"pid", 1}, {"tid", 1}, {"ts", ts}, {"dur", dur}, {"args", args}};
}

// On an H100: a bf16 GEMM of 4096³ is compute-bound (intensity 1365 FLOP/byte against a ridge of
// 295); an add of two [4096, 4096] bf16 tensors is memory-bound (1/6 FLOP/byte), and as it takes
// most of the kernel time the diagnosis names it.
TEST(Roofline, GpuOpsJudgedAgainstTheBandwidthAndTheDiagnosisSaysSo) {
  const json trace = {
      {"deviceProperties", {{{"id", 0}, {"name", "NVIDIA H100 80GB HBM3"}}}},
      {"traceEvents",
       {event("cpu_op", "aten::mm", 0, 20,
              {{"External id", 7},
               {"Input Dims", {{4096, 4096}, {4096, 4096}}},
               {"Input type", {"c10::BFloat16", "c10::BFloat16"}}}),
        event("kernel", "sm90_xmma_gemm_bf16bf16", 30, 200, {{"device", 0}, {"stream", 7}, {"External id", 7}}),
        event("cpu_op", "aten::add", 40, 10,
              {{"External id", 8},
               {"Input Dims", {{4096, 4096}, {4096, 4096}, {}}},
               {"Input type", {"c10::BFloat16", "c10::BFloat16", "Scalar"}}}),
        event("kernel", "vectorized_elementwise_kernel<add>", 240, 400,
              {{"device", 0}, {"stream", 7}, {"External id", 8}})}}};
  test::TempDir dir;
  std::ofstream(dir.file("h100.pt.trace.json")) << trace.dump();
  const json j = json::parse(analyze_traces({dir.file("h100.pt.trace.json")}, AnalyzeOptions{}).json);
  ASSERT_TRUE(j["roofline"].is_object());
  EXPECT_DOUBLE_EQ(j["roofline"]["memory_bytes_per_s"].get<double>(), 3.35e12);
  const json& ops = j["roofline"]["ops"];
  ASSERT_EQ(ops.size(), 2u);
  const json& add = ops[0]["name"] == "aten::add" ? ops[0] : ops[1];
  const json& mm = ops[0]["name"] == "aten::mm" ? ops[0] : ops[1];
  const double n = 4096.0 * 4096;
  EXPECT_EQ(add["bound"], "memory");
  EXPECT_EQ(add["bytes"].get<int64_t>(), int64_t(3 * n * 2));
  EXPECT_NEAR(add["intensity"].get<double>(), 1.0 / 6, 1e-12);
  EXPECT_NEAR(add["bandwidth_fraction"].get<double>(), 3 * n * 2 / 400e-6 / 3.35e12, 1e-9);
  EXPECT_NEAR(add["ridge"].get<double>(), 989.4e12 / 3.35e12, 1e-9);
  EXPECT_EQ(mm["bound"], "compute");
  EXPECT_NEAR(mm["intensity"].get<double>(), 2 * n * 4096 / (3 * n * 2), 1e-6);
  bool said = false;
  for (const auto& f : j["findings"]) said |= f.get<std::string>().rfind("memory-bound: aten::add", 0) == 0;
  EXPECT_TRUE(said) << j["findings"].dump();
}

// A real A100 trace that kept no kernels (HTA's test data): its ops' CPU times are launches, so
// neither the A100's peaks nor this machine's ceilings judge them.
TEST(Roofline, NoneForAGpuRunWhoseTraceKeptNoKernels) {
  const json j = json::parse(
      analyze_traces({kFixtures + "hta_real/no_distributed_info/distributed_info_not_found.json.gz"}, AnalyzeOptions{})
          .json);
  ASSERT_FALSE(j["device_properties"].empty());
  EXPECT_TRUE(j["roofline"].is_null()) << j["roofline"].dump();
  bool said = false;
  for (const auto& n : j["notes"]) said |= n.get<std::string>().find("hold no kernels") != std::string::npos;
  EXPECT_TRUE(said) << j["notes"].dump();
  for (const auto& o : j["ops"]) EXPECT_TRUE(o["peak_fraction"].is_null()) << o.dump();
}

TEST(CompareSteps, VerdictsOnSeries) {
  // 12 steps each, the second 20% slower with 1% spread: slower.
  std::vector<double> a, b, c;
  for (int i = 0; i < 12; ++i) {
    a.push_back(10 + 0.1 * (i % 3));
    b.push_back(12 + 0.1 * ((i + 1) % 3));
    c.push_back(10 + 0.1 * ((i + 2) % 3));
  }
  EXPECT_EQ(judge_steps(a, b).verdict, "slower");
  EXPECT_EQ(judge_steps(b, a).verdict, "faster");
  EXPECT_EQ(judge_steps(a, c).verdict, "within noise");
  // A run whose level moved 30% while it ran: a 20% change is within its drift.
  std::vector<double> drifting;
  for (int i = 0; i < 12; ++i) drifting.push_back(i < 6 ? 10 : 13);
  const StepVerdict v = judge_steps(a, drifting);
  EXPECT_EQ(v.verdict, "within noise") << v.why;
  // A 20% change in steps that spread 50% about their median: the runs overlap.
  std::vector<double> wide_a, wide_b;
  for (int i = 0; i < 12; ++i) {
    wide_a.push_back(i % 2 ? 7.5 : 12.5);
    wide_b.push_back(i % 2 ? 9 : 15);
  }
  EXPECT_NEAR(relative_iqr(wide_a), 0.5, 1e-12);
  const StepVerdict overlap = judge_steps(wide_a, wide_b);
  EXPECT_EQ(overlap.verdict, "inconclusive") << overlap.why;
  EXPECT_EQ(judge_steps({10, 11}, {20, 21}).verdict, "inconclusive");
  EXPECT_EQ(judge_steps({}, a).verdict, "inconclusive");
}

// Two profiling cycles of one run are the same run measured twice: no faster or slower.
TEST(CompareRuns, TwoCyclesOfOneRunAreNotFasterOrSlower) {
  const json j = compared({kBase + "/base.0.pt.trace.json.gz"}, {kBase + "/base.1.pt.trace.json.gz"});
  const json& st = j["comparison"]["step_time"];
  EXPECT_EQ(st["baseline_steps"], 12);
  EXPECT_EQ(st["steps"], 12);
  // The first cycle's steps were slower (on a busy machine), but no more than each cycle's steps
  // spread: no verdict of a change.
  EXPECT_NE(st["verdict"], "faster") << st.dump();
  EXPECT_NE(st["verdict"], "slower") << st.dump();
  // Every op on both sides, the same calls per step.
  for (const auto& o : j["comparison"]["ops"]) {
    ASSERT_TRUE(o["baseline"].is_object() && o["new"].is_object()) << o.dump();
    EXPECT_DOUBLE_EQ(o["delta"]["calls"].get<double>(), 0) << o.dump();
  }
}

TEST(StableFrame, DropsTheObjectAddressesTorchWritesInFrameNames) {
  EXPECT_EQ(stable_frame("<built-in method view of Tensor object at 0x7fd7ea11c740>"),
            "<built-in method view of Tensor object>");
  EXPECT_EQ(stable_frame("<built-in method get of dict object at 0x7fd8029c4740>"),
            "<built-in method get of dict object>");
  // What does not vary from run to run is kept: file, line, function, a module's name.
  EXPECT_EQ(stable_frame("torch/nn/modules/linear.py(130): forward"), "torch/nn/modules/linear.py(130): forward");
  EXPECT_EQ(stable_frame("nn.Module: Linear_0"), "nn.Module: Linear_0");
  EXPECT_EQ(stable_frame("<built-in function linear>"), "<built-in function linear>");
  EXPECT_EQ(stable_frame("look at 0x then"), "look at 0x then");
}

// Two profiling cycles of one training run (train/trainer.{0,1}, with_stack): its ops are called
// from the same lines both times, but torch names each C function by its repr, with the address
// of the tensor, dict or function record it is bound to, different at each cycle. Grouped by
// stack, every op of an op name that both cycles call equally often is on both sides.
TEST(CompareRuns, StackRowsOfTwoCyclesMatchAcrossObjectAddresses) {
  const std::string a = kFixtures + "train/trainer.0.pt.trace.json.gz",
                    b = kFixtures + "train/trainer.1.pt.trace.json.gz";
  AnalyzeOptions by_stack;
  by_stack.group_by = "stack";
  const json s = json::parse(compare_traces({a}, {b}, by_stack).analysis.json)["comparison"]["ops"];
  const json n = compared({a}, {b})["comparison"]["ops"];
  std::map<std::string, double> same_calls;  // op names both cycles call equally often
  for (const auto& o : n)
    if (o["baseline"].is_object() && o["new"].is_object() && o["delta"]["calls"].get<double>() == 0)
      same_calls[o["name"]] = o["baseline"]["calls"].get<double>();
  ASSERT_GT(same_calls.size(), 20u);
  std::map<std::string, double> matched_calls;
  size_t rows_with_addresses = 0;
  for (const auto& o : s) {
    const std::string name = o["name"];
    EXPECT_EQ(o["detail"].get<std::string>().find(" at 0x"), std::string::npos) << o.dump();
    if (!same_calls.count(name)) continue;
    EXPECT_TRUE(o["baseline"].is_object() && o["new"].is_object()) << o.dump();
    if (o["baseline"].is_object() && o["new"].is_object()) matched_calls[name] += o["baseline"]["calls"].get<double>();
    rows_with_addresses += o["detail"].get<std::string>().find(" object>") != std::string::npos;
  }
  EXPECT_GT(rows_with_addresses, 10u);  // the case at stake is there
  for (const auto& [name, calls] : same_calls) EXPECT_DOUBLE_EQ(matched_calls[name], calls) << name;
}

// One run of two traces (two processes or cycles) merges its stack rows the same way.
TEST(OpAverages, StackRowsOfSeveralTracesOfARunAreMerged) {
  AnalyzeOptions by_stack, by_name;
  by_stack.group_by = "stack";
  const RunAnalysis run = analyse_run({kFixtures + "train"}, by_stack);
  const RunAnalysis names = analyse_run({kFixtures + "train"}, by_name);
  const RunAnalysis first = analyse_run({kFixtures + "train/trainer.0.pt.trace.json.gz"}, by_stack);
  std::map<std::string, int64_t> calls;
  for (const auto& r : run.ops) {
    calls[r.name] += r.calls;
    for (const auto& f : r.stack) EXPECT_EQ(f.find(" at 0x"), std::string::npos) << f;
  }
  for (const auto& r : names.ops) EXPECT_EQ(calls[r.name], r.calls) << r.name;
  // Each cycle alone keeps torch's own frames; merged, the two cycles add no rows of their own.
  bool first_has_addresses = false;
  for (const auto& r : first.ops)
    for (const auto& f : r.stack) first_has_addresses |= f.find(" at 0x") != std::string::npos;
  EXPECT_TRUE(first_has_addresses);
  EXPECT_LE(run.ops.size(), first.ops.size());
}

// The same model four times wider: slower steps, and its GEMMs take more time per step.
TEST(CompareRuns, AWiderModelIsSlowerAndItsGemmsSaySo) {
  const json j = compared({kBase}, {kWide});
  const json& c = j["comparison"];
  EXPECT_EQ(c["per"], "step");
  EXPECT_EQ(c["op_time"], "self_cpu");
  EXPECT_EQ(c["step_time"]["verdict"], "slower") << c["step_time"].dump();
  EXPECT_GT(c["step_time"]["ci"][0].get<double>(), 0);
  // The top level is the wider run's analysis; the baseline's is whole beside it.
  EXPECT_EQ(j["baseline"]["schema"], "tach.analysis/1");
  EXPECT_EQ(j["steps"].size(), 24u);
  EXPECT_EQ(j["baseline"]["steps"].size(), 24u);
  const auto addmm =
      std::find_if(c["ops"].begin(), c["ops"].end(), [](const json& o) { return o["name"] == "aten::addmm"; });
  ASSERT_NE(addmm, c["ops"].end());
  EXPECT_GT((*addmm)["delta"]["time_us"].get<double>(), 0);
  EXPECT_GT((*addmm)["delta"]["time_change"].get<double>(), 0);
  EXPECT_DOUBLE_EQ((*addmm)["delta"]["calls"].get<double>(), 0);
  // Shares on each side sum to 1 over the ops.
  double base_share = 0, new_share = 0;
  for (const auto& o : c["ops"]) {
    if (o["baseline"].is_object()) base_share += o["baseline"]["share"].get<double>();
    if (o["new"].is_object()) new_share += o["new"]["share"].get<double>();
  }
  EXPECT_NEAR(base_share, 1, 1e-9);
  EXPECT_NEAR(new_share, 1, 1e-9);
  // The ops' per-step times are the analyses' totals over their 24 steps.
  const auto base_addmm = std::find_if(j["baseline"]["ops"].begin(), j["baseline"]["ops"].end(),
                                       [](const json& o) { return o["name"] == "aten::addmm"; });
  EXPECT_NEAR((*addmm)["baseline"]["self_cpu_us"].get<double>(), (*base_addmm)["self_cpu_us"].get<double>() / 24, 1e-6);
}

// Real GPU traces (scripts/golden/make_gpu_compare_traces.py on an NVIDIA H200): a transformer
// block in f32, then in bf16. bf16 is faster; its GEMMs are compute-bound and its elementwise adds
// memory-bound against the H200's 4.8 TB/s, which the findings say.
TEST(CompareRuns, GpuF32AgainstBf16OnAnH200) {
  const std::string f32 = kFixtures + "gpu_compare/f32", bf16 = kFixtures + "gpu_compare/bf16";
  const json j = compared({f32}, {bf16});
  const json& c = j["comparison"];
  EXPECT_EQ(c["op_time"], "self_device");
  // The printed change: "gone" and "new" only for ops on one side; ops launching no kernel on
  // either side (aten::linear, aten::t: 0 ms of device time both times) have none to give.
  AnalyzeOptions all;
  all.top = 1000;
  const std::string text = compare_traces({f32}, {bf16}, all).analysis.text;
  for (const char* both : {"aten::linear ", "aten::t ", "aten::as_strided "}) {
    const size_t at = text.find(std::string("\n") + both);
    ASSERT_NE(at, std::string::npos) << both << text;
    const std::string line = text.substr(at + 1, text.find('\n', at + 1) - at - 1);
    EXPECT_EQ(line.find("gone"), std::string::npos) << line;
    EXPECT_EQ(line.find("new"), std::string::npos) << line;
  }
  EXPECT_NE(text.find("aten::_efficient_attention_forward"), std::string::npos);
  EXPECT_EQ(c["step_time"]["verdict"], "faster") << c["step_time"].dump();
  ASSERT_FALSE(c["kernels"].empty());
  // Every step launches the same kernels: whole calls per step, over the steps the kernels cover
  // (HTA's reading leaves the last step's out).
  for (const auto& k : c["kernels"])
    for (const char* side : {"baseline", "new"})
      if (k[side].is_object()) {
        const double calls = k[side]["calls"].get<double>();
        EXPECT_NEAR(calls, std::round(calls), 1e-9) << k.dump();
      }
  // Ops proper only: no kernel or step annotation rows among them.
  for (const auto& o : c["ops"]) {
    EXPECT_EQ(o["name"].get<std::string>().rfind("ProfilerStep", 0), std::string::npos) << o["name"];
    EXPECT_EQ(o["name"].get<std::string>().find("gemm"), std::string::npos) << o["name"];
  }
  const json& r = j["roofline"];
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r["device"], "H200 SXM");
  auto op = [&](const std::string& name) {
    for (const auto& o : r["ops"])
      if (o["name"] == name) return o;
    ADD_FAILURE() << name << " not in the roofline";
    return json();
  };
  const json add = op("aten::add"), addmm = op("aten::addmm");
  EXPECT_EQ(add["bound"], "memory");
  EXPECT_EQ(add["precision"], "bf16");
  EXPECT_GT(add["bandwidth_fraction"].get<double>(), 0.3);
  EXPECT_LE(add["bandwidth_fraction"].get<double>(), 1.0) << "an H200 add cannot beat its bandwidth";
  EXPECT_EQ(addmm["bound"], "compute");
  EXPECT_LE(addmm["peak_fraction"].get<double>(), 1.0);
  bool said = false;
  for (const auto& f : j["findings"]) said |= f.get<std::string>().rfind("memory-bound:", 0) == 0;
  EXPECT_TRUE(said) << j["findings"].dump();
}

// The f32 run's time is in cuBLAS's FFMA kernels (sm80_xmma_gemm_f32f32_..._ffma_...), addmm at
// about 74% of the H200's f32 peak: the findings name the f32 GEMMs, what bf16 and TF32 would give
// at most from the H200's peaks, and the low tensor-core use. The bf16 run's GEMMs are on tensor
// cores (nvjet_sm90_...): neither finding.
TEST(Diagnosis, F32GemmsAndLowTensorCoreUseOnAnH200ButNotInBf16) {
  auto findings = [](const std::string& dir) {
    const json j = json::parse(analyze_traces({kFixtures + "gpu_compare/" + dir}, AnalyzeOptions{}).json);
    std::map<std::string, std::string> by_head;
    for (const auto& f : j["findings"]) {
      const std::string s = f.get<std::string>();
      by_head[s.substr(0, s.find(':'))] = s;
    }
    return by_head;
  };
  const auto f32 = findings("f32");
  ASSERT_TRUE(f32.count("f32 GEMMs")) << testing::PrintToString(f32);
  const std::string& gemms = f32.at("f32 GEMMs");
  EXPECT_NE(gemms.find("aten::addmm"), std::string::npos) << gemms;
  EXPECT_NE(gemms.find("74% of the H200 SXM's f32 peak"), std::string::npos) << gemms;
  // 989.4 / (0.7446 x 67) and 494.7 / (0.7446 x 67): the peaks over the rate reached.
  EXPECT_NE(gemms.find("at most 19.8x faster"), std::string::npos) << gemms;
  EXPECT_NE(gemms.find("allow_tf32 = True (TF32 peak 494.7 TFLOP/s) at most 9.9x"), std::string::npos) << gemms;
  ASSERT_TRUE(f32.count("low tensor-core use")) << testing::PrintToString(f32);
  EXPECT_NE(f32.at("low tensor-core use").find("90% of kernel time"), std::string::npos)
      << f32.at("low tensor-core use");
  EXPECT_FALSE(f32.count("no bottleneck stands out by these rules"));
  const auto bf16 = findings("bf16");
  EXPECT_FALSE(bf16.count("f32 GEMMs")) << testing::PrintToString(bf16);
  EXPECT_FALSE(bf16.count("low tensor-core use")) << testing::PrintToString(bf16);
}

// Kernel names as cuBLAS and cuDNN write them: CUDA-core (FFMA) GEMMs against tensor-core ones.
TEST(Diagnosis, CudaCoreGemmKernelsByName) {
  EXPECT_TRUE(is_cuda_core_gemm_kernel("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_ffma_aligna4"));
  EXPECT_TRUE(is_cuda_core_gemm_kernel("ampere_sgemm_128x64_tn"));
  EXPECT_FALSE(is_cuda_core_gemm_kernel("sm80_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x16"));
  EXPECT_FALSE(is_cuda_core_gemm_kernel("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn"));
  EXPECT_FALSE(is_cuda_core_gemm_kernel("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT"));
  EXPECT_FALSE(is_cuda_core_gemm_kernel("void at::native::vectorized_elementwise_kernel<4, ffma_like>"));
}

// Several paths never change meaning silently: a directory is one run, so several with other paths
// are refused (three unrelated runs were summed into one table); trace files given together are
// one run, and the notes say so and which trace is which rank's.
TEST(RunsGiven, SeveralDirectoriesAreRefusedAndSeveralFilesSaidToBeOneRun) {
  const std::vector<std::string> three = {kFixtures + "train", kFixtures + "infer", kBase};
  try {
    analyze_traces(three, AnalyzeOptions{});
    ADD_FAILURE() << "three runs' directories were summed into one";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(kFixtures + "train: a directory is one run, and 3 paths were given"), std::string::npos)
        << what;
    EXPECT_NE(what.find("--compare A B"), std::string::npos) << what;
  }
  const std::string a = kFixtures + "train/trainer.0.pt.trace.json.gz", b = kBase + "/base.0.pt.trace.json.gz";
  const json j = json::parse(analyze_traces({a, b}, AnalyzeOptions{}).json);
  ASSERT_FALSE(j["notes"].empty());
  EXPECT_EQ(j["notes"][0], "2 traces analysed as one run (their tables summed): rank 0: " + a + ", " + b +
                               ". tach analyze --compare A B compares two runs.");
  // One directory of several traces is one run too, and says so.
  const json one = json::parse(analyze_traces({kFixtures + "train"}, AnalyzeOptions{}).json);
  ASSERT_FALSE(one["notes"].empty());
  EXPECT_EQ(one["notes"][0].get<std::string>().rfind("2 traces analysed as one run", 0), 0u) << one["notes"].dump();
}

TEST(CompareRuns, TwoStepsASideAreInconclusive) {
  const json j =
      compared({kFixtures + "train/trainer.0.pt.trace.json.gz"}, {kFixtures + "train/trainer.1.pt.trace.json.gz"});
  EXPECT_EQ(j["comparison"]["step_time"]["verdict"], "inconclusive");
}

}  // namespace
}  // namespace tach::analyze
