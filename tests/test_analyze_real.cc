// tach analyze on real traces from other people's GPUs: Holistic Trace Analysis's own test data
// (tests/fixtures/analyze/hta_real/, README.md there names the source), with HTA 0.5's numbers
// saved beside each case by scripts/golden/make_hta_reference.py --real. Breakdowns within 0.5% of
// the window, overlap within 1 point, kernel types and top kernels the same; and what such traces
// bring that torch 2.x's do not (epoch timestamps, ROCm, kineto of 2022, no distributedInfo).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "analyze/gpu_time.h"
#include "analyze/op_averages.h"
#include "analyze/trace.h"
#include "tach/analyze.h"
#include "tach/error.h"
#include "test_util.h"

namespace tach::analyze {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kReal = std::string(TACH_FIXTURES) + "/analyze/hta_real/";

// The trace files of a case, by name.
std::vector<std::string> traces_of(const std::string& c) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(kReal + c))
    if (e.path().filename().string().find(".json.gz") != std::string::npos) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

json hta_of(const std::string& c) {
  std::ifstream f(kReal + c + ".hta.json");
  return json::parse(f);
}

class AgainstHta : public ::testing::TestWithParam<std::string> {};

TEST_P(AgainstHta, BreakdownsKernelsAndLaunchesAsHtaComputesThem) {
  const json hta = hta_of(GetParam());
  std::map<int, Trace> ranks;
  for (const auto& file : traces_of(GetParam())) {
    Trace t = load_trace(file);
    ranks.emplace(t.rank.value_or(0), std::move(t));
  }
  ASSERT_EQ(ranks.size(), hta["ranks"].size());
  for (const json& want : hta["ranks"]) {
    const int rank = want["rank"].get<int>();
    SCOPED_TRACE(GetParam() + " rank " + std::to_string(rank));
    ASSERT_TRUE(ranks.count(rank));
    const auto g = gpu_time(ranks.at(rank), 1 << 20);
    ASSERT_TRUE(g.has_value());
    const json& b = want["temporal_breakdown"];
    const double window = b["kernel_time(us)"].get<double>();
    const double tolerance = 0.005 * window;
    EXPECT_NEAR(g->window_ns * 1e-3, window, tolerance);
    EXPECT_NEAR(g->idle_ns * 1e-3, b["idle_time(us)"].get<double>(), tolerance);
    EXPECT_NEAR(g->compute_ns * 1e-3, b["compute_time(us)"].get<double>(), tolerance);
    EXPECT_NEAR(g->non_compute_ns * 1e-3, b["non_compute_time(us)"].get<double>(), tolerance);
    if (want["comm_comp_overlap_pct"].is_null()) {
      EXPECT_FALSE(g->comm_comp_overlap_pct.has_value());
    } else {
      ASSERT_TRUE(g->comm_comp_overlap_pct.has_value());
      EXPECT_NEAR(*g->comm_comp_overlap_pct, want["comm_comp_overlap_pct"].get<double>(), 1.0);
    }
    // Kernel types: the same types, each one's summed time within 0.5% of the window.
    std::set<std::string> types, hta_types;
    for (const auto& [type, ns] : g->kernel_types_ns) types.insert(type);
    for (const auto& [type, us] : want["kernel_types"].items()) {
      hta_types.insert(type);
      const auto it = g->kernel_types_ns.find(type);
      ASSERT_NE(it, g->kernel_types_ns.end()) << type;
      EXPECT_NEAR(it->second * 1e-3, us.get<double>(), tolerance) << type;
    }
    EXPECT_EQ(types, hta_types);
    // Every kernel: the same calls and time; the top ten the same names in the same order (HTA
    // orders by summed time, as tach; none of these traces ties there).
    std::map<std::string, const KernelStat*> mine;
    for (const auto& k : g->top_kernels) mine[k.name] = &k;
    EXPECT_EQ(mine.size(), want["kernels"].size());
    std::vector<std::pair<double, std::string>> hta_order;
    for (const auto& [name, k] : want["kernels"].items()) {
      const auto it = mine.find(name);
      ASSERT_NE(it, mine.end()) << name;
      EXPECT_EQ(it->second->calls, k["calls"].get<int64_t>()) << name;
      // HTA keeps whole µs: each call may differ by under 1 µs.
      EXPECT_NEAR(it->second->total_ns * 1e-3, k["sum"].get<double>(), 1.0 * double(it->second->calls)) << name;
      hta_order.emplace_back(-k["sum"].get<double>(), name);
    }
    std::sort(hta_order.begin(), hta_order.end());
    for (size_t i = 0; i < 10 && i < hta_order.size(); ++i)
      EXPECT_EQ(g->top_kernels[i].name, hta_order[i].second) << "top kernel " << i;
    const json& l = want["launch_stats"];
    if (!l.is_null()) {
      EXPECT_EQ(g->launch.launches, l["launches"].get<int64_t>());
      const double per_launch = 1.0 * double(g->launch.launches);
      EXPECT_NEAR(g->launch.cpu_ns * 1e-3, l["cpu_duration"].get<double>(), per_launch);
      EXPECT_NEAR(g->launch.gpu_ns * 1e-3, l["gpu_duration"].get<double>(), per_launch);
      EXPECT_NEAR(g->launch.delay_ns * 1e-3, l["launch_delay"].get<double>(), per_launch);
    }
    const json& idle = want["idle_time_breakdown"];
    EXPECT_NEAR(g->idle_by_cause.host_wait_ns * 1e-3, idle["host_wait"].get<double>(), tolerance);
    EXPECT_NEAR(g->idle_by_cause.kernel_wait_ns * 1e-3, idle["kernel_wait"].get<double>(), tolerance);
    EXPECT_NEAR(g->idle_by_cause.other_ns * 1e-3, idle["other"].get<double>(), tolerance);
  }
}

INSTANTIATE_TEST_SUITE_P(HtaTestData, AgainstHta,
                         ::testing::Values("sampled_ranks", "nccl_a100", "alexnet_a100", "v100_ns", "rocm_mi250"));

TEST(RealTraces, EpochTimestampsKeepTheirNanoseconds) {
  // The first kernel: "ts": 1712195495505582.988, "dur": 4.928. A double holds that start to a
  // quarter µs only (Python's json reads it as 1712195495505583.0); read from its digits it is
  // exact, and the kernel ends 4,928 ns after it starts.
  const Trace t = load_trace(traces_of("v100_ns")[0]);
  ASSERT_FALSE(t.device.empty());
  bool found = false;
  for (const auto& d : t.device)
    if (d.start_ns == 1712195495505582988 && d.end_ns - d.start_ns == 4928) found = true;
  EXPECT_TRUE(found);
  // Before, any time past 9e12 µs (104 days) was read as 0: every event of an epoch-stamped trace
  // started at 0, and the GPU window was 0 or a single kernel's length.
  EXPECT_GT(t.cpu.front().start_ns, int64_t(1) << 60);
}

TEST(RealTraces, TimesAreReadToTheNanosecondFromTheirDigits) {
  const Trace t = load_trace_text("t.json", R"({"traceEvents":[
    {"ph":"X","cat":"cpu_op","name":"a","ts":1712195495505583.1234,"dur":0.0005,"tid":1},
    {"ph":"X","cat":"cpu_op","name":"b","ts":-2.5,"dur":1e1,"tid":1},
    {"ph":"X","cat":"cpu_op","name":"c","ts":9e16,"dur":3,"tid":1}]})");
  ASSERT_EQ(t.cpu.size(), 3u);
  std::map<std::string, CpuEvent> by;
  for (const auto& e : t.cpu) by[t.name(e)] = e;
  EXPECT_EQ(by["a"].start_ns, 1712195495505583123);
  EXPECT_EQ(by["a"].end_ns - by["a"].start_ns, 1);  // 0.5 ns rounds up
  EXPECT_EQ(by["b"].start_ns, -2500);
  EXPECT_EQ(by["b"].end_ns, 7500);
  EXPECT_EQ(by["c"].start_ns, 0);  // beyond 146 years of µs: unset, not overflowed
  for (const char* bad :
       {R"({"traceEvents":[{"ts":-}]})", R"({"traceEvents":[{"ts":1.2.3}]})", R"({"traceEvents":[{"dur":1-2}]})"})
    EXPECT_THROW(load_trace_text("bad.json", bad), Error) << bad;
}

TEST(RealTraces, RocmLaunchesAreJoinedToTheirKernels) {
  // hipLaunchKernel and hipExtModuleLaunchKernel launch the MI250's kernels (HTA 0.5 joins only
  // the CUDA names, so its launch statistics of this trace are empty).
  const Trace t = load_trace(traces_of("rocm_mi250")[0]);
  const auto g = gpu_time(t);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->launch.launches, 14 + 2);  // 14 kernels and 2 copies, each joined to its call
}

TEST(RealTraces, Kineto2022CategoriesAndLowerCaseExternalIds) {
  const Trace t = load_trace(traces_of("kineto_2022")[0]);
  EXPECT_EQ(t.device.size(), 4u);  // "Kernel"
  int runtime = 0;
  for (const auto& e : t.cpu) runtime += t.category(e) == Category::cuda_runtime;  // "Runtime"
  EXPECT_EQ(runtime, 8);
  EXPECT_EQ(t.rank, 1);
  ASSERT_TRUE(gpu_time(t).has_value());
  // That kineto's ops name their kernels by "external id": the kernel counts under its op.
  const auto rows = op_averages(load_trace_text("old.json", R"({"traceEvents":[
    {"ph":"X","cat":"Operator","name":"aten::mm","pid":1,"tid":1,"ts":0,"dur":50,"args":{"external id":7}},
    {"ph":"X","cat":"Kernel","name":"gemm","pid":0,"tid":7,"ts":20,"dur":30,"args":{"external id":7,"stream":7}}]})"),
                                GroupBy::name);
  bool mm = false;
  for (const auto& r : rows)
    if (r.name == "aten::mm") mm = r.self_device_ns == 30000;
  EXPECT_TRUE(mm);
}

json analysis_of(const std::vector<std::string>& paths) {
  return json::parse(analyze_traces(paths, AnalyzeOptions{}).json);
}

TEST(RealTraces, TwoRanksAnalysedAsADirectory) {
  const json j = analysis_of({kReal + "sampled_ranks"});
  ASSERT_EQ(j["ranks"].size(), 2u);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(j["ranks"][size_t(r)]["rank"], r);
    EXPECT_FALSE(j["ranks"][size_t(r)]["gpu"].is_null());
    EXPECT_FALSE(j["ranks"][size_t(r)]["top_kernels"].empty());
  }
  for (const auto& n : j["notes"]) EXPECT_EQ(n.get<std::string>().find("assumed"), std::string::npos) << n;
}

TEST(RealTraces, MissingRanksAreAssumedAndSaid) {
  // What the note says is what the trace holds: rank_not_found's distributedInfo is
  // {"backend": "nccl"}, with no rank; the other two have no distributedInfo at all.
  const std::pair<const char*, const char*> cases[] = {{"no_distributed_info", "no distributedInfo"},
                                                       {"rank_not_found", "distributedInfo without a rank"},
                                                       {"rocm_mi250", "no distributedInfo"}};
  for (const auto& [c, because] : cases) {
    SCOPED_TRACE(c);
    const json j = analysis_of({kReal + c});
    ASSERT_EQ(j["ranks"].size(), 1u);
    EXPECT_EQ(j["ranks"][0]["rank"], 0);
    ASSERT_FALSE(j["notes"].empty());
    const std::string note = j["notes"][0];
    EXPECT_NE(note.find(std::string(": ") + because + "; rank 0 assumed"), std::string::npos) << note;
    EXPECT_EQ(j["traces"][0]["rank_assumed"], true);
    EXPECT_EQ(j["traces"][0]["rank_assumed_because"], because);
  }
  EXPECT_TRUE(analysis_of({kReal + "v100_ns"})["traces"][0]["rank_assumed_because"].is_null());
}

TEST(RealTraces, ACpuOnlyRankSkipsTheGpuSections) {
  const auto a = analyze_traces({kReal + "cpu_only"}, AnalyzeOptions{});
  const json j = json::parse(a.json);
  ASSERT_EQ(j["ranks"].size(), 1u);
  EXPECT_EQ(j["ranks"][0]["rank"], 34);
  EXPECT_TRUE(j["ranks"][0]["gpu"].is_null());
  EXPECT_NE(a.text.find("no GPU events in these traces"), std::string::npos) << a.text;
  // gloo:all_reduce is a c10d work: its calls count, its self time does not.
  bool gloo = false;
  for (const auto& op : j["ops"]) gloo |= op["name"] == "gloo:all_reduce" && op["calls"].get<int>() > 0;
  EXPECT_TRUE(gloo);
}

TEST(RealTraces, TheSameRankTwiceIsRefused) {
  test::TempDir dir;
  const std::string rank0 = traces_of("sampled_ranks")[0];
  fs::copy_file(rank0, dir.file("a.json.gz"));
  fs::copy_file(rank0, dir.file("b.json.gz"));
  try {
    analyze_traces({dir.path()}, AnalyzeOptions{});
    FAIL() << "two copies of rank 0 were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("both claim rank 0 over the same time"), std::string::npos) << e.what();
    // Both name rank 0 in their distributedInfo: distributedInfo is not what they lack.
    EXPECT_NE(std::string(e.what()).find("so they come from two runs"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("need distributedInfo"), std::string::npos) << e.what();
  }
  // Two copies of a trace with no distributedInfo: that is what they need.
  test::TempDir bare;
  const std::string unnamed = traces_of("no_distributed_info")[0];
  fs::copy_file(unnamed, bare.file("a.json.gz"));
  fs::copy_file(unnamed, bare.file("b.json.gz"));
  try {
    analyze_traces({bare.path()}, AnalyzeOptions{});
    FAIL() << "two copies of an unnamed rank were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("traces of different ranks need distributedInfo"), std::string::npos)
        << e.what();
  }
  // One file given twice (as itself, and by another spelling of its path) is said to be so.
  const std::string respelled = (fs::path(unnamed).parent_path() / "." / fs::path(unnamed).filename()).string();
  for (const std::vector<std::string>& twice :
       {std::vector<std::string>{rank0, rank0}, std::vector<std::string>{unnamed, respelled}}) {
    try {
      analyze_traces(twice, AnalyzeOptions{});
      FAIL() << "a trace given twice was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("is given twice: give each trace once"), std::string::npos) << e.what();
    }
  }
}

// A GPU the table of published peaks does not hold is named in the note that says no roofline.
TEST(RealTraces, AGpuWithoutAPublishedPeakIsNamed) {
  const json j = analysis_of({kReal + "rocm_mi250"});
  EXPECT_TRUE(j["roofline"].is_null());
  bool named = false;
  for (const auto& n : j["notes"])
    named |= n.get<std::string>().find("no published peak for AMD Radeon Graphics (deviceProperties' name") !=
             std::string::npos;
  EXPECT_TRUE(named) << j["notes"];
  EXPECT_EQ(analysis_of({kReal + "v100_ns"})["roofline"]["device"], "V100 SXM2");
}

// A trace with an empty event array (a profiler stopped before its first step) is analysed with
// the run's other traces, and said to hold nothing.
TEST(AnalyzeInput, ATraceWithNoEventsIsSaid) {
  test::TempDir dir;
  fs::copy_file(traces_of("cpu_only")[0], dir.file("rank-34.pt.trace.json.gz"));
  std::ofstream(dir.file("empty.pt.trace.json")) << R"({"schemaVersion": 1, "traceEvents": []})";
  const json j = analysis_of({dir.path()});
  bool said = false;
  for (const auto& n : j["notes"])
    said |= n.get<std::string>().find("empty.pt.trace.json: no event tach reads") != std::string::npos;
  EXPECT_TRUE(said) << j["notes"];
  EXPECT_FALSE(j["ops"].empty());
}

}  // namespace
}  // namespace tach::analyze
