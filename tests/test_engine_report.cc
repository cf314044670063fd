// Other engines in the report: the standings the findings give (where each engine wins and by how
// much) and report.html's engine panel, from a committed two-engine run whose answer is known
// (tests/fixtures/engines/two-engine-run: torch 2x slower than tach at batch 1, 1.5x faster at 2).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "report/engine_report.h"
#include "report/figure_book.h"
#include "tach/bench.h"
#include "tach/report.h"

namespace tach {
namespace {

namespace fs = std::filesystem;

const std::string kRun = std::string(TACH_FIXTURES) + "/engines/two-engine-run";

TEST(EngineReport, StandingsSayWhereEachEngineWinsAndByHowMuch) {
  const auto points = read_run_results(kRun);
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(report::run_engines(points), (std::vector<std::string>{"tach", "torch"}));
  const auto standings = report::engine_standings(points);
  ASSERT_EQ(standings.size(), 1u);
  const report::EngineStanding& s = standings.front();
  EXPECT_EQ(s.engine, "torch");
  EXPECT_EQ(s.baseline, "tach");
  EXPECT_EQ(s.pairs, 2);
  EXPECT_EQ(s.wins, 1);
  EXPECT_NEAR(s.best, 1.5, 1e-9);
  EXPECT_EQ(s.best_point, "cpu/f32/t1/b2/s8");
  EXPECT_NEAR(s.worst, 0.5, 1e-9);
  EXPECT_EQ(s.worst_point, "cpu/f32/t1/b1/s8");

  std::ostringstream f;
  report::engine_findings(f, points);
  EXPECT_NE(f.str().find("- torch against tach: torch has the higher throughput at 1 of 2 points (0.50x to 1.50x "
                         "tach's samples/s); it leads most at cpu/f32/t1/b2/s8 (1.50x); tach leads most at "
                         "cpu/f32/t1/b1/s8 (2.00x). One-time: load 1.75 s, first call 0.052 s"),
            std::string::npos)
      << f.str();
  EXPECT_EQ(f.str().find("DISAGREE"), std::string::npos) << f.str();  // its outputs agree
}

TEST(EngineReport, PanelHasEachPointsSpeedupVerdictAgreementAndOneTimeCosts) {
  const auto points = read_run_results(kRun);
  std::ostringstream h;
  report::FigureBook figs;
  report::engine_section(h, figs, points, kRun);
  const std::string html = h.str();
  EXPECT_NE(html.find("<h2>Engines</h2>"), std::string::npos);
  // Speed-ups against tach with tach compare --by engine's verdicts in the engines' words.
  EXPECT_NE(html.find("<td>0.50x</td><td style='text-align:left'>slower than tach: -50.0% samples/s ["),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<td>1.50x</td><td style='text-align:left'>faster than tach: +50.0% samples/s ["),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("agree (logits: largest difference 3.1e-06, tolerance 0.002)"), std::string::npos);
  EXPECT_NE(html.find("<td>torch</td><td style='text-align:left'>python 3.11.7, torch 2.5.1, transformers 4.46.0"
                      "</td><td>1.75</td><td>none</td><td>0.052</td>"),
            std::string::npos)
      << html;
  ASSERT_EQ(figs.figures().size(), 1u);  // the speed-up bars, one per point of torch
  EXPECT_NE(html.find("torch cpu/f32/t1/b2/s8"), std::string::npos);
}

TEST(EngineReport, ARunOfTachAloneHasNoPanel) {
  auto points = read_run_results(kRun);
  points.erase(
      std::remove_if(points.begin(), points.end(), [](const PointResult& p) { return p.key.engine != "tach"; }),
      points.end());
  std::ostringstream h, f;
  report::FigureBook figs;
  report::engine_section(h, figs, points, kRun);
  report::engine_findings(f, points);
  EXPECT_EQ(h.str(), "");
  EXPECT_EQ(f.str(), "");
}

TEST(EngineReport, TheRunsPageCarriesThePanel) {
  const fs::path dir = fs::path(TACH_BINARY_DIR) / "tests" / "engine_report_run";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* f : {"results.jsonl", "config.json"}) fs::copy_file(fs::path(kRun) / f, dir / f);
  const RunReport r = build_run_report(dir.string());
  EXPECT_NE(r.html.find("<h2>Engines</h2>"), std::string::npos);
  EXPECT_NE(r.html.find("faster than tach"), std::string::npos);
}

}  // namespace
}  // namespace tach
