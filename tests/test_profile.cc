// The profiler: schedule windows, nesting and timestamps in the trace, table totals, roofline
// verdicts on synthetic ops, the leak verdict on a leaking and a clean loop, the event cap.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <tuple>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "core/symbol_name.h"
#include "core/trace.h"
#include "profile/cpu_caches.h"
#include "profile/gpu_attribution.h"
#include "tach/model.h"
#include "tach/profile.h"
#include "test_util.h"

namespace tach {
namespace {

using Phase = ProfileSchedule::Phase;

// CUPTI names kernels by their mangled symbols; the trace and the tables show them demangled,
// without the parameter list. These are symbols CUPTI reported for tach's kernels on an H100.
TEST(KernelNames, MangledSymbolsAreDemangledWithoutParameters) {
  EXPECT_EQ(core::readable_kernel_name(
                "_ZN4tach3ops50_GLOBAL__N__604e7fca_17_embedding_cuda_cu_788bfa1716embedding_kernelIfEEvPfPKiPKT_lllb"),
            "tach::ops::embedding_kernel<float>");
  EXPECT_EQ(
      core::readable_kernel_name("_ZN4tach4cuda22flash_attention_kernelILi64ELi32EEEvNS0_20FlashAttentionParamsE"),
      "tach::cuda::flash_attention_kernel<64, 32>");
  // Not mangled (cuBLAS's own kernels) or not demangleable: unchanged.
  EXPECT_EQ(core::readable_kernel_name("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n"),
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n");
  EXPECT_EQ(core::readable_kernel_name("_Zgarbage"), "_Zgarbage");
}

TEST(ProfileSchedule, WindowsAreExact) {
  const ProfileSchedule s{1, 1, 1, 2, 2};  // skip 1, then 2 x (wait 1, warmup 1, active 2)
  const std::vector<Phase> want{Phase::skip, Phase::wait,   Phase::warmup, Phase::active, Phase::active,
                                Phase::wait, Phase::warmup, Phase::active, Phase::active, Phase::done};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(s.phase(int64_t(i)), want[i]) << "step " << i;
  const ProfileSchedule forever{0, 0, 0, 1, 0};
  EXPECT_EQ(forever.phase(1000), Phase::active);
}

ProfileData profile_bert_tiny(ProfilerOptions o, int steps) {
  auto model = load_model("preset:bert-tiny");
  const TokenBatch batch = TokenBatch::from_rows({{101, 2000, 2001, 102}, {101, 3000, 102}}, 0);
  Profiler p(o);
  p.start();
  for (int i = 0; i < steps; ++i) {
    {
      ProfileScope forward("forward");
      (void)model->classify(batch);
    }
    p.step();
  }
  p.stop();
  return p.data();
}

TEST(Profiler, RecordsOnlyActiveStepsWithModulePaths) {
  ProfilerOptions o;
  o.schedule = {1, 1, 1, 2, 1};
  const ProfileData d = profile_bert_tiny(o, 6);
  ASSERT_FALSE(d.events.empty());
  std::map<int64_t, int> per_step;
  for (const auto& e : d.events) ++per_step[e.step];
  EXPECT_EQ(per_step.size(), 2u);
  EXPECT_TRUE(per_step.count(3) && per_step.count(4)) << "steps 3 and 4 are the active ones";
  bool found = false;
  for (const auto& e : d.events)
    if (e.kind == EventKind::op && e.name == "linear" && e.path == "forward.bert.encoder.layer.1.attention")
      found = true;
  EXPECT_TRUE(found) << "an op knows its module path";
  EXPECT_EQ(d.steps.size(), 6u);
}

TEST(Profiler, TraceIsValidNestedAndMonotone) {
  ProfilerOptions o;
  o.schedule = {0, 0, 1, 2, 1};
  const ProfileData d = profile_bert_tiny(o, 3);
  const auto j = nlohmann::json::parse(chrome_trace_json(d));
  ASSERT_TRUE(j.contains("traceEvents"));
  std::map<int64_t, std::vector<std::pair<double, double>>> slices;  // tid -> (ts, end)
  for (const auto& e : j["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid"));
    if (e["ph"] == "X") {
      ASSERT_GE(e["ts"].get<double>(), 0.0);
      ASSERT_GE(e["dur"].get<double>(), 0.0);
      slices[e["tid"].get<int64_t>()].push_back(
          {e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
    }
  }
  EXPECT_TRUE(slices.size() >= 2u) << "the steps track and the main thread";
  for (auto& [tid, v] : slices) {
    // In recording order timestamps are monotone; nested slices close before their parents.
    std::stable_sort(v.begin(), v.end(),
                     [](auto& a, auto& b) { return a.first < b.first || (a.first == b.first && a.second > b.second); });
    std::vector<double> open;
    for (const auto& [ts, end] : v) {
      // Adjacent slices (one step ending where the next begins) may differ by float rounding.
      while (!open.empty() && open.back() <= ts + 1e-3) open.pop_back();
      if (!open.empty()) { EXPECT_LE(end, open.back() + 1e-3) << "slice on tid " << tid << " overlaps its parent"; }
      open.push_back(end);
    }
  }
  for (size_t i = 1; i < d.events.size(); ++i) EXPECT_LE(d.events[i - 1].start_ns, d.events[i].start_ns);
  EXPECT_FALSE(collapsed_stacks(d).empty());
}

TEST(Profiler, TableTotalsEqualTheSumOfEvents) {
  ProfilerOptions o;
  o.schedule = {0, 0, 0, 2, 1};
  const ProfileData d = profile_bert_tiny(o, 2);
  MachineCeilings c;
  c.gemm_f32_flops = 1e11;
  c.memory_bytes_per_s = 1e10;
  double ns = 0, flops = 0;
  int64_t calls = 0;
  for (const auto& e : d.events)
    if (e.kind == EventKind::op) ns += double(e.duration_ns()), flops += e.flops, ++calls;
  for (const char* g : {"op", "shape"}) {
    double t_ns = 0, t_flops = 0;
    int64_t t_calls = 0;
    for (const auto& r : op_table(d, g, "self", c)) t_ns += r.total_ns, t_flops += r.flops, t_calls += r.calls;
    EXPECT_DOUBLE_EQ(t_ns, ns) << g;
    EXPECT_DOUBLE_EQ(t_flops, flops) << g;
    EXPECT_EQ(t_calls, calls) << g;
  }
  // Self times of every span add up to the outermost spans' total: nothing counted twice.
  double self = 0, outer = 0;
  for (const auto& e : d.events) {
    self += e.self_ns;
    if (e.depth == 0) outer += double(e.duration_ns());
  }
  EXPECT_NEAR(self, outer, 1.0);
}

TEST(Roofline, SyntheticOpsAreClassified) {
  MachineCeilings c;
  c.gemm_f32_flops = 100e9;
  c.memory_bytes_per_s = 10e9;
  // 1 GFLOP over 1 MB: 10 ms at the compute ceiling, taken in 12.5 ms.
  RooflineVerdict v = roofline(1e9, 1e6, 0.0125, c);
  EXPECT_EQ(v.bound, Bound::compute);
  EXPECT_NEAR(v.achieved_fraction, 0.8, 1e-9);
  // 1 MFLOP over 1 GB: 100 ms at the memory ceiling, taken in 200 ms.
  v = roofline(1e6, 1e9, 0.2, c);
  EXPECT_EQ(v.bound, Bound::memory);
  EXPECT_NEAR(v.achieved_fraction, 0.5, 1e-9);
  // A tiny op taking 1 ms: far above both floors.
  v = roofline(1e3, 1e3, 1e-3, c);
  EXPECT_EQ(v.bound, Bound::overhead);
}

// One active step of 10 ms holding op events of the given bytes per call, 10 calls each, each
// call taking `call_ns`.
ProfileData ops_at(const std::vector<std::tuple<std::string, double, double, double>>& ops) {
  ProfileData d;
  StepSample s;
  s.active = true, s.start_ns = 0, s.end_ns = 10'000'000;
  d.steps.push_back(s);
  for (const auto& [key, flops, bytes, call_ns] : ops)
    for (int i = 0; i < 10; ++i) {
      ProfileEvent e;
      e.name = key.substr(0, key.find(" |"));
      e.detail = key.substr(key.find(" | ") + 3);
      e.start_ns = 0, e.end_ns = int64_t(call_ns), e.self_ns = call_ns;
      e.flops = flops, e.bytes = bytes;
      d.events.push_back(e);
    }
  return d;
}

// An op that beats the DRAM ceiling with bytes that fit in the last-level cache runs from the
// cache: "cache-resident", not "the ceiling is wrong". One that does not fit, or that beats the
// compute ceiling, still means the ceiling is wrong.
TEST(Roofline, CacheResidentOpsAreNotWrongCeilings) {
  MachineCeilings c;
  c.gemm_f32_flops = 100e9;
  c.memory_bytes_per_s = 10e9;
  const int64_t llc = 32 << 20;
  // 1 MiB per call in 10 us: 105 GB/s, ten times DRAM; fits the 32 MiB cache.
  // 256 MiB per call in 2.7 ms: the same rate; does not fit.
  // A GEMM of 10 MFLOP and 64 KiB in 10 us: 1 TFLOP/s, ten times the compute ceiling.
  const ProfileData d = ops_at({{"layer_norm | [64, 4096] f32", 1e3, 1 << 20, 10e3},
                                {"softmax | [4096, 16384] f32", 1e3, 256 << 20, 2.7e6},
                                {"linear | [8, 64] x [64, 64] f32", 10e6, 64 << 10, 10e3}});
  std::map<std::string, OpTableRow> rows;
  for (const auto& r : op_table(d, "op", "self", c, llc)) rows[r.key] = r;
  EXPECT_TRUE(rows["layer_norm"].cache_resident);
  EXPECT_FALSE(rows["layer_norm"].verdict.above_ceiling);
  EXPECT_FALSE(rows["softmax"].cache_resident);
  EXPECT_TRUE(rows["softmax"].verdict.above_ceiling);
  EXPECT_FALSE(rows["linear"].cache_resident);
  EXPECT_TRUE(rows["linear"].verdict.above_ceiling);
  const std::string text = op_table_text(op_table(d, "op", "self", c, llc), 10);
  EXPECT_NE(text.find("cache-resident"), std::string::npos) << text;
  const size_t at = text.find("layer_norm");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string line = text.substr(at, text.find('\n', at) - at);
  EXPECT_NE(line.find("cache-resident"), std::string::npos) << line;
  EXPECT_EQ(line.find("ceiling is wrong"), std::string::npos) << line;
  EXPECT_NE(cache_resident_note(rows["layer_norm"], llc).find("1.0 MiB per call fit in the 32.0 MiB last-level cache"),
            std::string::npos);
  const auto json = nlohmann::json::parse(op_table_json(op_table(d, "op", "self", c, llc)));
  for (const auto& r : json["rows"]) EXPECT_EQ(r["cache_resident"].get<bool>(), r["name"] == "layer_norm") << r;
  // Without a known cache size nothing is called cache-resident.
  for (const auto& r : op_table(d, "op", "self", c, 0)) EXPECT_FALSE(r.cache_resident) << r.key;
  // ceiling_violations and the bottlenecks use the machine's cache (sysfs), as big as 1 MiB on any CPU.
  if (profile::last_level_cache_bytes() < (1 << 20)) GTEST_SKIP() << "sysfs gives no last-level cache size here";
  for (const auto& v : ceiling_violations(d, c)) EXPECT_EQ(v.find("layer_norm"), std::string::npos) << v;
  bool said = false;
  for (const auto& b : bottlenecks(d, c, 3))
    said = said || (b.rfind("layer_norm", 0) == 0 && b.find("cache-resident") != std::string::npos);
  EXPECT_TRUE(said);
}

TEST(CpuCaches, LastLevelFromSysfs) {
  test::TempDir dir;
  const auto cache = [&](const char* index, const char* level, const char* type, const char* size) {
    std::filesystem::create_directories(dir.file(index));
    test::write_text(dir.file(index) + "/level", std::string(level) + "\n");
    test::write_text(dir.file(index) + "/type", std::string(type) + "\n");
    test::write_text(dir.file(index) + "/size", std::string(size) + "\n");
  };
  cache("index0", "1", "Data", "48K");
  cache("index1", "1", "Instruction", "32K");
  cache("index2", "2", "Unified", "2048K");
  cache("index3", "3", "Unified", "105M");
  EXPECT_EQ(profile::last_level_cache_bytes(dir.path()), int64_t(105) << 20);
  EXPECT_EQ(profile::last_level_cache_bytes(dir.file("absent")), 0);
}

ProfileData loop(bool leak, int steps) {
  std::vector<Tensor> kept;
  ProfilerOptions o;
  o.schedule = {0, 0, 0, steps, 1};
  Profiler p(o);
  p.start();
  for (int i = 0; i < steps; ++i) {
    {
      ProfileScope scope("cache_update");
      Tensor t = Tensor::zeros({512, 1024}, DType::f32);  // 2 MiB
      if (leak) kept.push_back(t);
    }
    p.step();
  }
  p.stop();
  return p.data();
}

TEST(LeakVerdict, CatchesALeakAndPassesACleanLoop) {
  const LeakVerdict bad = detect_leak(loop(true, 8));
  EXPECT_TRUE(bad.leak) << bad.explanation;
  ASSERT_FALSE(bad.growing_categories.empty());
  EXPECT_NE(bad.growing_categories[0].find("+2.00 MiB per step"), std::string::npos) << bad.growing_categories[0];
  ASSERT_FALSE(bad.growing_scopes.empty());
  EXPECT_EQ(bad.growing_scopes[0].rfind("cache_update", 0), 0u) << bad.growing_scopes[0];
  const LeakVerdict good = detect_leak(loop(false, 8));
  EXPECT_FALSE(good.leak) << good.explanation;
  EXPECT_TRUE(good.growing_scopes.empty());
}

// GPU activity (as CUPTI reports it) goes under the op whose span held its launch, adds to that
// op's GPU time, and becomes a GPU track with a flow from the launch in the trace; activity
// launched outside an active step is dropped. Hand-made records: no GPU is needed for the logic.
TEST(GpuActivity, KernelsGoUnderTheOpThatLaunchedThem) {
  ProfileData d;
  d.origin_ns = 1000;
  StepSample active;
  active.step = 1, active.active = true, active.start_ns = 1000, active.end_ns = 9000;
  d.steps.push_back(active);
  const auto event = [](EventKind kind, const char* name, int64_t start, int64_t end, uint16_t depth) {
    ProfileEvent e;
    e.kind = kind, e.name = name, e.start_ns = start, e.end_ns = end, e.depth = depth, e.step = 1;
    return e;
  };
  d.events = {event(EventKind::module, "layer", 1000, 8000, 0), event(EventKind::op, "linear", 1100, 1500, 1),
              event(EventKind::op, "attention", 2000, 2600, 1), event(EventKind::op, "layer_norm", 3000, 3200, 1)};
  const auto kernel = [](const char* name, int64_t launch, int64_t start, int64_t end) {
    GpuActivityEvent g;
    g.name = name, g.kind = "kernel", g.launch_ns = launch, g.start_ns = start, g.end_ns = end, g.stream = 7;
    return g;
  };
  attribute_gpu_activity(d, {kernel("gemm", 1200, 1300, 4300), kernel("gelu", 1400, 4300, 4500),
                             kernel("flash_attention", 2100, 4500, 6500), kernel("between ops", 2800, 6500, 6600),
                             kernel("before the step", 500, 600, 700)});
  ASSERT_EQ(d.gpu_activity.size(), 4u) << "the kernel launched outside the active step is dropped";
  EXPECT_DOUBLE_EQ(d.events[1].gpu_ns, 3000 + 200);  // linear: its GEMM and the GELU after it
  EXPECT_DOUBLE_EQ(d.events[2].gpu_ns, 2000);
  EXPECT_DOUBLE_EQ(d.events[3].gpu_ns, 0);
  EXPECT_EQ(d.gpu_activity[3].op, -1) << "launched while no op span was open";
  EXPECT_EQ(d.gpu_activity[0].op, 1);
  // The op table judges GPU time, and the text table shows it.
  MachineCeilings c;
  c.gemm_f32_flops = 1e12, c.memory_bytes_per_s = 1e11;
  const auto rows = op_table(d, "op", "self", c);
  const auto linear = std::find_if(rows.begin(), rows.end(), [](const OpTableRow& r) { return r.key == "linear"; });
  ASSERT_NE(linear, rows.end());
  EXPECT_DOUBLE_EQ(linear->gpu_ns, 3200);
  EXPECT_NE(op_table_text(rows, 10).find("gpu ms"), std::string::npos);
  // --sort-by gpu: linear (3.2 µs of kernels, 0.4 µs on the host) before attention (2.0, 0.6).
  const auto by_gpu = op_table(d, "op", "gpu", c);
  ASSERT_GE(by_gpu.size(), 3u);
  EXPECT_EQ(by_gpu[0].key, "linear");
  EXPECT_EQ(by_gpu[1].key, "attention");
  EXPECT_EQ(op_table(d, "op", "self", c)[0].key, "attention") << "by host time attention comes first";
  // The trace: a GPU process with the stream's track, the kernel slices, and launch flows.
  const auto trace = nlohmann::json::parse(chrome_trace_json(d));
  int gpu_slices = 0, flows = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["pid"] == 100) {
      ++gpu_slices;
      EXPECT_EQ(e["tid"], 7);
    }
    if (e["ph"] == "s") ++flows;
  }
  EXPECT_EQ(gpu_slices, 4);
  EXPECT_EQ(flows, 3);
}

TEST(Profiler, EventCapDropsAndCounts) {
  ProfilerOptions o;
  o.schedule = {0, 0, 0, 1, 1};
  o.max_events = 10;
  const ProfileData d = profile_bert_tiny(o, 1);
  EXPECT_EQ(d.events.size(), 10u);
  EXPECT_GT(d.dropped_events, 0);
}

TEST(Profiler, OffIsOffAndCostIsMeasured) {
  EXPECT_FALSE(core::tracing());
  const double ns = profiler_ns_per_event();
  EXPECT_GT(ns, 0);
  EXPECT_LT(ns, 100000) << "one span should cost well under 100 µs";
  std::cout << "[ profiler ] " << ns << " ns per recorded span\n";
}

// The JSON op table carries every CSV column, and both compute rates over the GPU time where a
// row queued GPU work (the host span then times only the launch), as docs/formats.md says.
TEST(OpTable, JsonHasEveryCsvColumnAndRatesUseGpuTime) {
  OpTableRow host, gpu;
  host.key = "layer_norm", host.calls = 2, host.total_ns = host.self_ns = 4e6, host.flops = 8e9, host.bytes = 4e9;
  gpu.key = "linear", gpu.calls = 1, gpu.total_ns = gpu.self_ns = 1e6, gpu.flops = 2e9, gpu.bytes = 1e9;
  gpu.gpu_ns = 2e6;
  const std::vector<OpTableRow> rows = {host, gpu};
  const auto json = nlohmann::json::parse(op_table_json(rows));
  std::istringstream csv(op_table_csv(rows));
  std::string header, line;
  std::getline(csv, header);
  std::stringstream columns(header);
  for (std::string col; std::getline(columns, col, ',');)
    EXPECT_TRUE(json["rows"][0].contains(col == "name" ? "name" : col)) << col << " is missing from the JSON";
  EXPECT_DOUBLE_EQ(json["rows"][0]["gflops_per_s"].get<double>(), 8e9 / 4e-3 * 1e-9);  // host time
  EXPECT_DOUBLE_EQ(json["rows"][1]["gflops_per_s"].get<double>(), 2e9 / 2e-3 * 1e-9);  // GPU time
  EXPECT_DOUBLE_EQ(json["rows"][1]["gb_per_s"].get<double>(), 1e9 / 2e-3 * 1e-9);
  EXPECT_DOUBLE_EQ(json["rows"][0]["avg_us"].get<double>(), 2000.0);
  std::getline(csv, line);
  std::getline(csv, line);
  EXPECT_NE(line.find(",1000,500,"), std::string::npos) << "the CSV's GPU row rates over GPU time: " << line;
}

}  // namespace
}  // namespace tach
