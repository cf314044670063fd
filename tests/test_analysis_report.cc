// tach report on a tach analyze run: report.html drawn from analysis.json (a comparison of two
// runs of real torch.profiler traces, tests/fixtures/analyze/compare/, and one GPU rank with a
// roofline), its figures as PNG files and slides, and a file that is no analysis.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tach/analyze.h"
#include "tach/error.h"
#include "tach/report.h"
#include "test_util.h"

namespace tach {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::string kFixtures = std::string(TACH_FIXTURES) + "/analyze/";
const std::string kBase = kFixtures + "compare/base";
const std::string kWide = kFixtures + "compare/wide";

json event(const std::string& cat, const std::string& name, double ts, double dur, json args) {
  return {{"ph", "X"}, {"cat", cat}, {"name", name}, {"pid", 1}, {"tid", 1}, {"ts", ts}, {"dur", dur}, {"args", args}};
}

// tach report on an analyze run: report.html with the comparison, the op table, the steps and
// the findings, and the figures for --png and --pptx.
TEST(AnalysisReport, PageFiguresAndSlidesOfAComparison) {
  test::TempDir dir;
  const TraceComparison c = compare_traces({kBase}, {kWide}, AnalyzeOptions{});
  test::write_text(dir.file("analysis.json"), c.analysis.json);
  const json j = json::parse(c.analysis.json);
  const RunReport r = build_run_report(dir.path());
  std::vector<std::string> names;
  for (const auto& f : r.figures) names.push_back(f.name);
  for (const char* want : {"step_time_change", "op_time_deltas", "time_breakdown", "step_phases"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  char median[32];
  std::snprintf(median, sizeof median, "%.3f", j["comparison"]["step_time"]["median_ms"].get<double>());
  EXPECT_NE(r.html.find(median), std::string::npos) << "the median step of the run compared";
  EXPECT_NE(r.html.find("step time slower"), std::string::npos);
  EXPECT_NE(r.html.find("aten::addmm"), std::string::npos);
  // The runs' paths read as paths, not as a JSON array.
  EXPECT_NE(r.html.find("Baseline: <code>" + kBase + "/base.0.pt.trace.json.gz</code>, <code>" + kBase +
                        "/base.1.pt.trace.json.gz</code>; this run: <code>" + kWide + "/wide.0.pt.trace.json.gz"),
            std::string::npos);
  EXPECT_EQ(r.html.find("[&quot;"), std::string::npos);
  EXPECT_EQ(r.html.find("[\""), std::string::npos);
  EXPECT_FALSE(r.findings.empty());
  const auto pngs = write_report_pngs(r, dir.file("plots"), 1);
  ASSERT_EQ(pngs.size(), r.figures.size());
  for (const auto& p : pngs) EXPECT_GT(fs::file_size(p.path), 1000u) << p.path;
  EXPECT_EQ(write_report_pptx(r, pngs, dir.file("report.pptx")), 1 + int(r.figures.size()) + 1)
      << "the title, one slide per figure, the findings (fewer than 14)";
  EXPECT_TRUE(fs::exists(dir.file("report.pptx")));
}

TEST(AnalysisReport, GpuRanksAndRooflineOfOneRun) {
  const json trace = {{"deviceProperties", {{{"id", 0}, {"name", "NVIDIA H100 80GB HBM3"}}}},
                      {"traceEvents",
                       {event("cpu_op", "aten::add", 40, 10,
                              {{"External id", 8},
                               {"Input Dims", {{4096, 4096}, {4096, 4096}, {}}},
                               {"Input type", {"c10::BFloat16", "c10::BFloat16", "Scalar"}}}),
                        event("kernel", "vectorized_elementwise_kernel<add>", 240, 400,
                              {{"device", 0}, {"stream", 7}, {"External id", 8}})}}};
  test::TempDir dir;
  std::ofstream(dir.file("t.pt.trace.json")) << trace.dump();
  test::write_text(dir.file("analysis.json"), analyze_traces({dir.file("t.pt.trace.json")}, AnalyzeOptions{}).json);
  const RunReport r = build_run_report(dir.path());
  std::vector<std::string> names;
  for (const auto& f : r.figures) names.push_back(f.name);
  for (const char* want : {"time_breakdown", "gpu_time", "roofline"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  EXPECT_NE(r.html.find("vectorized_elementwise_kernel&lt;add&gt;"), std::string::npos);
  EXPECT_NE(r.html.find("memory"), std::string::npos);
  EXPECT_NE(r.html.find("H100 SXM"), std::string::npos);
}

TEST(AnalysisReport, NotAnAnalysisIsSaid) {
  test::TempDir dir;
  test::write_text(dir.file("analysis.json"), "{\"schema\": \"something/1\"}");
  EXPECT_NE(test::error_of([&] { build_run_report(dir.path()); }).find("not a tach analyze result"), std::string::npos);
}

}  // namespace
}  // namespace tach
