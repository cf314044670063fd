// tach report --png / --pptx: the charts recorded as figures while the page is composed, rendered
// to PNG files of the stated size, and packed into a deck with one slide per figure.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>

#include "report/figure_book.h"
#include "report/pptx_parts.h"
#include "report/svg_chart.h"
#include "tach/bench.h"
#include "tach/error.h"
#include "tach/report.h"
#include "test_util.h"

namespace tach {
namespace {

namespace fs = std::filesystem;

// A PNG's size from its IHDR chunk (big-endian width and height after the signature and chunk head).
std::pair<int, int> png_size(const std::string& bytes) {
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(bytes.substr(12, 4), "IHDR");
  auto be32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = (v << 8) | uint8_t(bytes[at + i]);
    return int(v);
  };
  return {be32(16), be32(20)};
}

std::string small_chart(const std::string& title) {
  report::Series s;
  s.name = "series";
  s.x = {1, 2, 4};
  s.y = {3, 2, 1};
  report::LineChartSpec spec;
  spec.title = title;
  spec.x_label = "batch size";
  spec.y_label = "ms";
  return report::line_chart(spec, {s});
}

TEST(ReportFigures, BookKeepsThePageMarkupAndMakesStandaloneDocuments) {
  report::FigureBook book;
  const std::string chart = small_chart("a & b");
  EXPECT_EQ(book.add("roofline", "first", chart), chart) << "the page gets the chart unchanged";
  book.add("roofline", "second", chart);
  book.add_grid("grid", "three in two columns", {chart, chart, chart}, 2, {"a number"});
  ASSERT_EQ(book.figures().size(), 3u);
  EXPECT_EQ(book.figures()[0].name, "roofline");
  EXPECT_EQ(book.figures()[1].name, "roofline_2");
  const std::string& doc = book.figures()[0].svg;
  EXPECT_EQ(doc.rfind("<svg", 0), 0u);
  EXPECT_NE(doc.find("<style>"), std::string::npos) << "text styles inlined";
  EXPECT_NE(doc.find("fill='#fff'"), std::string::npos) << "a white background";
  // Two columns and two rows of 460-unit-wide charts with a 12-unit gap.
  const std::string& grid = book.figures()[2].svg;
  EXPECT_NE(grid.find("width='932'"), std::string::npos) << grid.substr(0, 200);
  EXPECT_EQ(book.figures()[2].key_numbers, std::vector<std::string>{"a number"});
  EXPECT_EQ(report::figure_file_stem("cpu f32 seq 128 threads all"), "cpu_f32_seq_128_threads_all");
  EXPECT_EQ(report::figure_file_stem("--"), "figure");
  EXPECT_THROW(book.add("x", "not svg", "<div>"), Error);
}

TEST(ReportFigures, SlideTextIsEscapedAndControlCharactersDropped) {
  EXPECT_EQ(report::pptx::xml_text("a<b & \"c\"\x01'"), "a&lt;b &amp; &quot;c&quot;&#39;");
  const std::string box = report::pptx::text_box(2, "t", {0, 0, 1, 1}, {"x > y"}, 12, false, true);
  EXPECT_NE(box.find("<a:t>x &gt; y</a:t>"), std::string::npos);
  EXPECT_NE(box.find("sz=\"1200\""), std::string::npos);
}

TEST(ReportFigures, BenchRunGivesNamedPngsOfTheStatedSizeAndADeck) {
  test::TempDir dir;
  BenchConfig c;
  c.model = "preset:bert-tiny";
  c.batch_sizes = {1, 2};
  c.seq_lens = {8};
  c.warmup_runs = 1;
  c.stop.runs = 3;
  c.profile = true;
  c.runs_dir = dir.path();
  c.run_id = "r";
  const SweepOutcome out = run_bench(c);
  write_run_reports(out.config, out);
  const RunReport report = build_run_report(out.run_dir);
  std::vector<std::string> names;
  for (const auto& f : report.figures) names.push_back(f.name);
  for (const char* want : {"batch_size_comparison", "metrics_heatmap", "throughput_vs_batch_size", "memory_usage",
                           "time_breakdown", "roofline"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  EXPECT_EQ(report.title, "tach report: preset:bert-tiny");
  EXPECT_TRUE(std::any_of(report.about.begin(), report.about.end(),
                          [](const std::string& l) { return l.rfind("machine: ", 0) == 0; }));
  EXPECT_FALSE(report.findings.empty());

  const std::string plots = out.run_dir + "/plots";
  fs::create_directories(plots);
  test::write_text(plots + "/stale.png", "an older report's figure");
  test::write_text(plots + "/notes.txt", "the user's");
  const auto pngs = write_report_pngs(report, plots, 2);
  ASSERT_EQ(pngs.size(), report.figures.size());
  for (const auto& p : pngs) {
    const auto [w, h] = png_size(test::read_text(p.path));
    EXPECT_EQ(w, p.width) << p.path;
    EXPECT_EQ(h, p.height) << p.path;
  }
  EXPECT_EQ(pngs[2].width, 920) << "a 460-unit chart at scale 2";
  EXPECT_FALSE(fs::exists(plots + "/stale.png"));
  EXPECT_TRUE(fs::exists(plots + "/notes.txt")) << "only PNG files are the report's";
  EXPECT_THROW(write_report_pngs(report, plots, 0), Error);

  const std::string deck = out.run_dir + "/report.pptx";
  const int slides = write_report_pptx(report, pngs, deck);
  const int findings_slides = int((report.findings.size() + 13) / 14);
  EXPECT_EQ(slides, 1 + int(pngs.size()) + findings_slides);
  EXPECT_EQ(test::read_text(deck).substr(0, 4), std::string("PK\x03\x04", 4));
  EXPECT_FALSE(fs::exists(deck + ".tmp"));
  // A deck that cannot be written is an error, and leaves nothing behind.
  EXPECT_THROW(write_report_pptx(report, pngs, out.run_dir + "/no/such/dir/report.pptx"), Error);
  EXPECT_FALSE(fs::exists(out.run_dir + "/no"));
  EXPECT_THROW(write_report_pptx(report, {}, deck), Error) << "one PNG per figure";
}

TEST(ReportFigures, MalformedSvgIsAClearError) {
  RunReport report;
  report.figures.push_back(
      {"broken", "broken", "<svg xmlns='http://www.w3.org/2000/svg' width='10' height='10'><g>", {}});
  test::TempDir dir;
  try {
    write_report_pngs(report, dir.path(), 1);
    FAIL() << "expected an error";
  } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find("librsvg"), std::string::npos) << e.what(); }
  EXPECT_FALSE(fs::exists(dir.path() + "/broken.png"));
}

}  // namespace
}  // namespace tach
