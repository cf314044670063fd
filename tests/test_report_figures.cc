// tach report --png / --pptx: the charts recorded as figures while the page is composed, rendered
// to PNG files of the stated size, and packed into a deck with one slide per figure.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>

#include "report/figure_book.h"
#include "report/pptx_parts.h"
#include "report/svg_chart.h"
#include "bench/bench_internal.h"
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

// One axis, one format: "8" and "16", never "8" beside "16.0"; a suffix chosen by the largest tick.
TEST(ReportFigures, TickLabelsOfAnAxisShareOneFormat) {
  using V = std::vector<std::string>;
  EXPECT_EQ(report::tick_labels({0, 4, 8, 12, 16}), (V{"0", "4", "8", "12", "16"}));
  EXPECT_EQ(report::tick_labels({0, 0.5, 1, 1.5}), (V{"0.0", "0.5", "1.0", "1.5"}));
  EXPECT_EQ(report::tick_labels({0.02, 0.04, 0.06}), (V{"0.02", "0.04", "0.06"}));
  EXPECT_EQ(report::tick_labels({0, 5000, 10000, 15000}), (V{"0", "5k", "10k", "15k"}));
  EXPECT_EQ(report::tick_labels({1, 2, 4, 8, 16, 32}), (V{"1", "2", "4", "8", "16", "32"}));
  EXPECT_EQ(report::tick_labels({-1e-17, 1}), (V{"0", "1"})) << "no -0";
  // A chart whose y ticks run 0..16 writes them alike.
  report::Series s;
  s.name = "s";
  s.x = {1, 2, 4, 8, 16};
  s.y = {16, 8, 4, 2, 1};
  report::LineChartSpec spec;
  spec.log2_x = true;
  const std::string svg = report::line_chart(spec, {s});
  EXPECT_NE(svg.find("class='tick'>16</text>"), std::string::npos);
  EXPECT_EQ(svg.find(".0</text>"), std::string::npos) << "no tick written as 16.0 beside 8";
}

// The heat scale's cells keep their text readable: black or white, whichever contrasts more, and
// set as a style, since the figures' and the page's stylesheets (text{fill:#222}) outrank a fill
// attribute: the old white text was drawn dark on the darkest cells.
TEST(ReportFigures, HeatmapTextReadsOnEveryCell) {
  for (int i = 0; i <= 100; ++i) {
    const std::string fill = report::heat_fill(i / 100.0);
    EXPECT_GE(report::contrast_ratio(report::text_colour_on(fill), fill), 4.5) << fill;  // WCAG AA
  }
  EXPECT_EQ(report::text_colour_on(report::heat_fill(1)), "#ffffff");
  EXPECT_EQ(report::text_colour_on(report::heat_fill(0)), "#000000");
  EXPECT_NEAR(report::contrast_ratio("#000000", "#ffffff"), 21, 1e-9);
  const std::string doc = report::standalone_svg(
      report::heatmap("t", {"row"}, {"dark", "light"}, {{1.0, 0.0}}, {{"dark cell", "light cell"}}));
  EXPECT_NE(doc.find("style='fill:#ffffff'>dark cell<"), std::string::npos) << doc;
  EXPECT_NE(doc.find("style='fill:#000000'>light cell<"), std::string::npos);
}

// A long y label (memory_usage's) is wrapped to the plot's height instead of running off the figure.
TEST(ReportFigures, LongAxisLabelsFitThePlot) {
  EXPECT_NEAR(report::text_width_px("MiB", 11), (1767 + 569 + 1405) / 2048.0 * 11, 1e-9);
  const std::string label = "MiB (peak RSS of the process; tach's allocator peak, both per point)";
  const auto lines = report::wrap_to_width(label, 200, 11);
  ASSERT_GE(lines.size(), 2u);
  std::string joined;
  for (const auto& l : lines) {
    EXPECT_LE(report::text_width_px(l, 11), 200) << l;
    joined += (joined.empty() ? "" : " ") + l;
  }
  EXPECT_EQ(joined, label);
  report::Series s;
  s.name = "s";
  s.x = {1, 2};
  s.y = {10, 20};
  report::LineChartSpec spec;
  spec.y_label = label;
  const std::string svg = report::line_chart(spec, {s, s});
  const double plot_height = spec.height - 28 - 46;  // the top and bottom margins; the legend adds to both
  size_t found = 0;
  for (size_t at = svg.find("rotate(-90)' text-anchor='middle' class='axis-label'>"); at != std::string::npos;
       at = svg.find("rotate(-90)' text-anchor='middle' class='axis-label'>", at + 1)) {
    const size_t from = svg.find('>', at) + 1;
    std::string text = svg.substr(from, svg.find('<', from) - from);
    if (const size_t q = text.find("&#39;"); q != std::string::npos) text.replace(q, 5, "'");
    EXPECT_LE(report::text_width_px(text, report::kChartFontPx), plot_height) << text;
    ++found;
  }
  EXPECT_GE(found, 2u) << "wrapped into lines";
}

// Times cannot be negative: a violin's density stops at 0 and its mass there is reflected back,
// and the axis does not run below 0 either.
TEST(ReportFigures, ViolinsStayAtOrAboveZero) {
  const std::vector<double> ms = {0.05, 0.08, 0.1, 0.12, 3.0};  // fast runs and one slow: the axis pads below 0.05
  const report::DensityCurve kde = report::kernel_density(ms, -1, 12, 0, 1200, 0.01);  // past every kernel's tail
  ASSERT_EQ(kde.at.size(), 1201u);
  EXPECT_DOUBLE_EQ(kde.at.front(), 0);
  // The reflected density keeps the whole mass above 0: its integral is that of n unit kernels.
  double mean = 0, var = 0;
  for (double x : ms) mean += x / ms.size();
  for (double x : ms) var += (x - mean) * (x - mean) / (ms.size() - 1);
  const double h = std::max(1.06 * std::sqrt(var) * std::pow(double(ms.size()), -0.2), 0.01);
  double area = 0;
  for (size_t i = 1; i < kde.at.size(); ++i)
    area += (kde.density[i] + kde.density[i - 1]) / 2 * (kde.at[i] - kde.at[i - 1]);
  EXPECT_NEAR(area / (double(ms.size()) * h * std::sqrt(2 * M_PI)), 1.0, 0.01);
  report::DistributionChartSpec spec;
  spec.title = "t";
  const std::string svg = report::distribution_chart(spec, {{"run", ms}});
  EXPECT_EQ(svg.find("class='tick'>-"), std::string::npos) << "no negative tick";
  // The violin's leftmost point is at or right of the axis start (x = L = 90).
  const size_t path = svg.find("<path d='M");
  ASSERT_NE(path, std::string::npos);
  EXPECT_GE(std::stod(svg.substr(path + 10)), 90.0);
}

// The title slide's machine line gives the thread counts the sweep ran, not the process's last.
TEST(ReportFigures, TitleSlideSaysTheSweepsThreadCounts) {
  test::TempDir dir;
  std::string lines;
  for (int t : {1, 2}) {
    PointResult p;
    p.key.threads = t;
    p.batch_latency_samples_ms = {2, 3, 4};
    p.batch_latency_ms = bench::distribution(p.batch_latency_samples_ms);
    p.sample_latency_ms = p.batch_latency_ms;
    p.measured_runs = 3;
    lines += point_to_json(p) + "\n";
  }
  test::write_text(dir.path() + "/results.jsonl", lines);
  test::write_text(
      dir.path() + "/summary.json",
      R"({"schema": "tach.bench.summary/1", "machine": {"cpu": "a CPU", "logical_cores": 2, "threads": 1}})");
  const RunReport report = build_run_report(dir.path());
  const auto machine = std::find_if(report.about.begin(), report.about.end(),
                                    [](const std::string& l) { return l.rfind("machine: ", 0) == 0; });
  ASSERT_NE(machine, report.about.end());
  EXPECT_NE(machine->find("1 and 2 threads"), std::string::npos) << *machine;
  EXPECT_EQ(machine->find("1 threads"), std::string::npos) << *machine;
}

// A Pareto chart (a scatter of one-point series and a frontier line): every point's marker lies
// inside the plot, not on an axis where half of it is cut, and the frontier is a dashed line with
// no markers of its own, so it never hides the variant markers it passes through.
TEST(ReportFigures, ScatterPointsAtTheExtremesAreDrawnWholeAndTheFrontierHidesNone) {
  std::vector<report::Series> series;
  const std::vector<std::pair<double, double>> points = {{2.9, 0.79}, {3.2, 0.805}, {6.0, 0.815}, {15.3, 0.81}};
  for (size_t i = 0; i < points.size(); ++i)
    series.push_back({"v" + std::to_string(i), {points[i].first}, {points[i].second}, {}, {}});
  series.push_back({"frontier", {3.2, 6.0}, {0.805, 0.815}, {}, {}, /*markers=*/false});
  report::LineChartSpec spec;
  spec.zero_y = false;
  spec.pad_x = true;
  const std::string svg = report::line_chart(spec, series);
  // The axes: the x axis at y = H - B, the y axis at x = L (the first two lines of <g class='axes'>).
  const size_t axes = svg.find("<g class='axes'");
  ASSERT_NE(axes, std::string::npos);
  auto attr = [&](size_t from, const std::string& name) {
    const size_t at = svg.find(" " + name + "='", from) + name.size() + 3;
    return std::stod(svg.substr(at, svg.find('\'', at) - at));
  };
  const double x_axis_y = attr(axes, "y1"), y_axis_x = attr(svg.find("<line", svg.find("<line", axes) + 1), "x1");
  size_t circles = 0;
  for (size_t at = svg.find("<g class='series'"); at != std::string::npos; at = svg.find("<g class='series'", at + 1)) {
    const size_t end = svg.find("</g>", at);
    const std::string group = svg.substr(at, end - at);
    if (group.find("data-name='frontier'") != std::string::npos) {
      EXPECT_EQ(group.find("<circle"), std::string::npos) << "the frontier draws no markers: " << group;
      EXPECT_EQ(group.find("<rect"), std::string::npos) << group;
      EXPECT_NE(group.find("stroke-dasharray"), std::string::npos) << group;
      continue;
    }
    for (size_t c = group.find("<circle"); c != std::string::npos; c = group.find("<circle", c + 1), ++circles) {
      const size_t abs = at + c;
      EXPECT_LT(attr(abs, "cy") + 3.8, x_axis_y) << "a marker cut by the x axis: " << group;
      EXPECT_GT(attr(abs, "cx") - 3.8, y_axis_x) << "a marker cut by the y axis: " << group;
    }
  }
  EXPECT_GE(circles, 1u) << "circles checked";
}

}  // namespace
}  // namespace tach
