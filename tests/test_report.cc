// tach report: report.html from real run directories (a profiled sweep, an eval run): self-contained,
// every chart drawn with the expected series, and the tables holding the run's numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "report/figure_book.h"
#include "report/number_text.h"
#include "report/svg_chart.h"
#include "tach/bench.h"
#include "tach/error.h"
#include "tach/report.h"
#include "test_util.h"

namespace tach {
namespace {

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// The charts of one kind, and the series in each.
std::vector<size_t> series_per_chart(const std::string& html, const std::string& kind) {
  std::vector<size_t> out;
  const std::string open = "<svg class='chart " + kind + "'";
  for (size_t at = html.find(open); at != std::string::npos; at = html.find(open, at + 1)) {
    const size_t end = html.find("</svg>", at);
    out.push_back(count(html.substr(at, end - at), "<g class='series'"));
  }
  return out;
}

TEST(Report, ProfiledSweepHasEveryPanelTheHeatmapAndTheTables) {
  test::TempDir dir;
  BenchConfig c;
  c.model = "preset:bert-tiny";
  c.batch_sizes = {1, 2, 4};
  c.seq_lens = {8, 16};
  c.warmup_runs = 1;
  c.stop.runs = 4;
  c.profile = true;
  c.runs_dir = dir.path();
  c.run_id = "r";
  const SweepOutcome out = run_bench(c);
  write_run_reports(out.config, out);
  // A monitor timeline beside it (tach monitor -o RUN_DIR/monitor.csv), energy unavailable (-1).
  test::write_text(out.run_dir + "/monitor.csv",
                   "t_s,rss_bytes,cpu_percent,cpu_energy_j\n0,1048576,10,-1\n0.5,2097152,180,-1\n1.0,2097152,190,-1\n");
  const std::string path = write_run_report(out.run_dir);
  EXPECT_EQ(path, out.run_dir + "/report.html");
  const std::string html = test::read_text(path);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);  // nothing fetched: styles inline
  // Six panels against batch size, one series per sequence length (two), GPU memory has none.
  const auto lines = series_per_chart(html, "line-chart");
  // (the third, GPU memory, says "no data": no point ran on a GPU); then the monitor's RSS and CPU
  // (its energy column is all -1: no chart).
  EXPECT_EQ(lines, (std::vector<size_t>{2, 2, 0, 2, 2, 2, 1, 1}));
  EXPECT_NE(html.find("<h2>Monitor timeline</h2>"), std::string::npos);
  EXPECT_NE(html.find("<td>190</td>"), std::string::npos) << "every sample in the table";
  EXPECT_NE(html.find("no point ran on a GPU"), std::string::npos);
  // The heatmap: a row per point; distributions: a chart per series, a violin per batch size.
  EXPECT_EQ(series_per_chart(html, "heatmap"), std::vector<size_t>{6});
  EXPECT_EQ(series_per_chart(html, "distribution-chart"), (std::vector<size_t>{3, 3}));
  // The points table holds the run's numbers; the header the model, machine and method.
  for (const auto& p : out.results) {
    char median[32];
    std::snprintf(median, sizeof median, "%.3f", p.batch_latency_ms.median);
    EXPECT_NE(html.find(std::string("<td>") + median + "</td>"), std::string::npos) << p.key.id();
  }
  EXPECT_NE(html.find("BertForSequenceClassification"), std::string::npos);
  EXPECT_NE(html.find("exactly 4 measured runs"), std::string::npos);
  EXPECT_NE(html.find("at configure time"), std::string::npos);
  EXPECT_NE(html.find("<dt>ceilings</dt><dd>GEMM f32 "), std::string::npos);
  // The profile: op and module bars per profiled point, with a link to each trace.
  EXPECT_EQ(series_per_chart(html, "bar-chart").size(), 2u * 6u);
  EXPECT_EQ(count(html, "trace.json</a>"), 6u);
  // profile.json per point: a roofline with a point per op that has FLOPs, the gap, the bottlenecks.
  const auto roofs = series_per_chart(html, "roofline");
  ASSERT_EQ(roofs.size(), 6u);
  for (size_t n : roofs) EXPECT_GE(n, 3u) << "linear, attention, layer_norm at least";
  EXPECT_EQ(count(html, "in modules, between ops (the gap)"), 6u);
  EXPECT_EQ(count(html, "<p><b>Top bottlenecks</b></p>"), 6u);
  EXPECT_NE(html.find("<h2>Findings</h2>"), std::string::npos);
  // The violins' dots are in a table too: every raw latency.
  char raw[32];
  std::snprintf(raw, sizeof raw, "%.4f", out.results[0].batch_latency_samples_ms.back());
  EXPECT_NE(html.find(raw), std::string::npos);
}

// A GPU run's points (results.jsonl lines as a GPU sweep writes them, made from a CPU sweep's by
// moving them to cuda:0 and giving them GPU times): the GPU-time panels and column appear.
// bert-tiny at batch 1 and 2, 8 tokens, 2 runs each, with its reports written.
SweepOutcome two_point_sweep(const test::TempDir& dir, const std::string& run_id) {
  BenchConfig c;
  c.model = "preset:bert-tiny";
  c.batch_sizes = {1, 2};
  c.seq_lens = {8};
  c.warmup_runs = 0;
  c.stop.runs = 2;
  c.runs_dir = dir.path();
  c.run_id = run_id;
  SweepOutcome out = run_bench(c);
  write_run_reports(out.config, out);
  return out;
}

TEST(Report, GpuPointsShowTheirGpuTime) {
  test::TempDir dir;
  const SweepOutcome out = two_point_sweep(dir, "g");
  std::string lines;
  for (PointResult p : out.results) {
    p.key.device = "cuda:0";
    p.gpu_time_ms = p.batch_latency_ms;
    p.gpu_time_ms.median = 0.25;
    lines += point_to_json(p) + "\n";
  }
  test::write_text(out.run_dir + "/results.jsonl", lines);
  const std::string html = test::read_text(write_run_report(out.run_dir));
  EXPECT_NE(html.find("<th>GPU ms/batch median</th>"), std::string::npos);
  EXPECT_EQ(count(html, "<td>0.250</td>"), 2u) << "each point's GPU median in the table";
  EXPECT_NE(html.find("GPU time per batch"), std::string::npos);
  EXPECT_EQ(html.find("no point ran on a GPU"), std::string::npos);
}

TEST(Report, TheSamePointsOnTheCpuAndAGpuGiveTheSpeedUp) {
  test::TempDir dir;
  const SweepOutcome out = two_point_sweep(dir, "s");
  // Without a GPU point there is no speed-up section.
  EXPECT_EQ(test::read_text(write_run_report(out.run_dir)).find("CPU / GPU speed-up"), std::string::npos);
  std::string lines;
  for (PointResult p : out.results) {
    lines += point_to_json(p) + "\n";
    p.key.device = "cuda:0";  // the same point, 4 times faster
    for (double& ms : p.batch_latency_samples_ms) ms /= 4;
    p.batch_latency_ms.median /= 4;
    lines += point_to_json(p) + "\n";
  }
  test::write_text(out.run_dir + "/results.jsonl", lines);
  const std::string html = test::read_text(write_run_report(out.run_dir));
  EXPECT_NE(html.find("CPU / GPU speed-up"), std::string::npos);
  EXPECT_EQ(count(html, "<td>4.00x</td>"), 2u) << "one row per point measured on both";
  EXPECT_NE(html.find("class='chart bar-chart'"), std::string::npos);
}

// The series drawn in each chart of one kind: its <g class='series'> names, chart by chart.
std::vector<std::vector<std::string>> series_names(const std::string& html, const std::string& kind) {
  std::vector<std::vector<std::string>> out;
  const std::string open = "<svg class='chart " + kind + "'", name = "<g class='series' data-name='";
  for (size_t at = html.find(open); at != std::string::npos; at = html.find(open, at + 1)) {
    const std::string chart = html.substr(at, html.find("</svg>", at) - at);
    out.emplace_back();
    for (size_t g = chart.find(name); g != std::string::npos; g = chart.find(name, g + 1)) {
      const size_t from = g + name.size();
      out.back().push_back(chart.substr(from, chart.find('\'', from) - from));
    }
  }
  return out;
}

// A tach shrink run's rows (the same bert-tiny points as three variants: f32 and heads:0.5 in f32,
// int8): each variant is a line of its own in the panels over batch size, not a zig-zag through
// the points of two variants that share a device and dtype; the latency distributions put every
// variant's violins in one chart, each named by its variant, with the names drawn whole.
TEST(Report, EachShrinkVariantIsASeriesOfItsOwn) {
  test::TempDir dir;
  const SweepOutcome out = two_point_sweep(dir, "v");
  std::string lines;
  for (const char* variant : {"f32", "heads:0.5", "int8"})
    for (PointResult p : out.results) {
      p.key.variant = variant;
      if (p.key.variant == "int8") p.key.dtype = "int8";
      lines += point_to_json(p) + "\n";
    }
  test::write_text(out.run_dir + "/results.jsonl", lines);
  const RunReport report = build_run_report(out.run_dir);
  const std::string rest = " seq 8 threads " + threads_label(out.results[0]);
  const std::vector<std::string> variants = {"f32 cpu f32" + rest, "heads:0.5 cpu f32" + rest, "int8 cpu int8" + rest};
  const auto panels = series_names(report.html, "line-chart");
  ASSERT_GE(panels.size(), 6u);
  for (size_t k : {0, 1, 3, 4, 5}) EXPECT_EQ(panels[k], variants) << "panel " << k;  // 2: GPU memory, no data
  // Each line joins its own variant's two batch sizes, one marker each (its <title> says where).
  const size_t first = report.html.find("<svg class='chart line-chart'");
  const std::string panel = report.html.substr(first, report.html.find("</svg>", first) - first);
  for (const auto& v : variants) {
    const size_t g = panel.find("data-name='" + v + "'");
    ASSERT_NE(g, std::string::npos) << v;
    const std::string line = panel.substr(g, panel.find("</g>", g) - g);
    EXPECT_EQ(count(line, "<title>"), 2u) << line;
    EXPECT_EQ(count(line, "<title>" + v + ": 1, "), 1u) << line;
    EXPECT_EQ(count(line, "<title>" + v + ": 2, "), 1u) << line;
  }
  EXPECT_EQ(series_names(report.html, "distribution-chart"),
            (std::vector<std::vector<std::string>>{{"f32 batch 1", "f32 batch 2", "heads:0.5 batch 1",
                                                    "heads:0.5 batch 2", "int8 batch 1", "int8 batch 2"}}));
  const auto figure = std::find_if(report.figures.begin(), report.figures.end(),
                                   [](const ReportFigure& f) { return f.name.rfind("latency_distribution_", 0) == 0; });
  ASSERT_NE(figure, report.figures.end());
  EXPECT_EQ(figure->name, "latency_distribution_" + report::figure_file_stem("cpu" + rest));
  // The names end 8 units left of the plot, which starts far enough in for the longest.
  const std::string label = "text-anchor='end' class='legend'>heads:0.5 batch 2<";
  const size_t at = figure->svg.find(label);
  ASSERT_NE(at, std::string::npos);
  const size_t x = figure->svg.rfind("<text x='", at) + 9;
  EXPECT_GE(std::stod(figure->svg.substr(x)), report::text_width_px("heads:0.5 batch 2", report::kChartFontPx));
}

// A sweep with another engine's points beside tach's on the same device and dtype: a line each,
// and the violins say whose they are.
TEST(Report, AnotherEnginesPointsAreASeriesOfTheirOwn) {
  test::TempDir dir;
  const SweepOutcome out = two_point_sweep(dir, "e");
  std::string lines;
  for (const char* engine : {"tach", "torch"})
    for (PointResult p : out.results) {
      p.key.engine = engine;
      lines += point_to_json(p) + "\n";
    }
  test::write_text(out.run_dir + "/results.jsonl", lines);
  const std::string html = run_report_html(out.run_dir);
  const std::string rest = "cpu f32 seq 8 threads " + threads_label(out.results[0]);
  const auto panels = series_names(html, "line-chart");
  ASSERT_GE(panels.size(), 6u);
  for (size_t k : {0, 1, 3, 4, 5}) EXPECT_EQ(panels[k], (std::vector<std::string>{rest, "torch " + rest})) << k;
  EXPECT_EQ(
      series_names(html, "distribution-chart"),
      (std::vector<std::vector<std::string>>{{"tach batch 1", "tach batch 2", "torch batch 1", "torch batch 2"}}));
}

// A run of tach's points alone keeps its series' names and its violins' ("batch 1").
TEST(Report, TachsOwnPointsKeepTheirSeriesNames) {
  test::TempDir dir;
  const SweepOutcome out = two_point_sweep(dir, "t");
  const std::string html = run_report_html(out.run_dir);
  const std::string name = "cpu f32 seq 8 threads " + threads_label(out.results[0]);
  EXPECT_EQ(series_names(html, "line-chart")[0], std::vector<std::string>{name});
  EXPECT_EQ(series_names(html, "distribution-chart"), (std::vector<std::vector<std::string>>{{"batch 1", "batch 2"}}));
}

TEST(Report, EvalRunShowsAccuracyAndTheConfusionMatrix) {
  if (!test::shared_available()) GTEST_SKIP() << "../shared is absent";
  test::TempDir dir;
  BenchConfig c;
  c.model = test::fixtures_dir() + "/encoders/distilbert-sst2-tiny";
  c.tokenizer = test::shared_dir() + "/tokenizers/bert-base-uncased";
  c.dataset.path = test::shared_dir() + "/data/sst2/dev.tsv";
  c.runs_dir = dir.path();
  c.run_id = "eval";
  c.sample_sizes = {200};
  const SweepOutcome out = run_eval(c);
  const std::string html = run_report_html(out.run_dir);
  EXPECT_NE(html.find("<h2>Accuracy</h2>"), std::string::npos);
  char acc[32];
  std::snprintf(acc, sizeof acc, "%.4f", out.accuracy[0].accuracy);
  EXPECT_NE(html.find(std::string("<td>") + acc + "</td>"), std::string::npos);
  // The confusion matrix: a row per true label, cells holding the counts.
  EXPECT_EQ(series_per_chart(html, "heatmap"), std::vector<size_t>{out.accuracy[0].confusion.size()});
  EXPECT_NE(html.find(">" + std::to_string(out.accuracy[0].confusion[0][0]) + "</text>"), std::string::npos);
}

TEST(Report, AProfileDirectoryIsReportedToo) {
  const char* tach = TACH_BINARY_DIR "/tach";
  if (!std::filesystem::exists(tach)) GTEST_SKIP() << "the tach binary is not built at " << tach;
  test::TempDir dir;
  const std::string cmd = std::string("'") + tach + "' profile -m preset:bert-tiny -b 2 -s 8 --profiler-output-dir '" +
                          dir.path() + "' > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string html = run_report_html(dir.path());
  EXPECT_EQ(series_per_chart(html, "roofline").size(), 1u);
  EXPECT_NE(html.find("<b>Memory</b>: "), std::string::npos);
}

TEST(Report, TrainingRunsAndTheComparisonAreReported) {
  const char* tach = TACH_BINARY_DIR "/tach";
  if (!std::filesystem::exists(tach)) GTEST_SKIP() << "the tach binary is not built at " << tach;
  test::TempDir dir;
  const std::string fx = test::fixtures_dir();
  const std::string cmd = std::string("'") + tach + "' train -m " + fx + "/encoders/bert-cls2-f32 -k " + fx +
                          "/tokenizers/tiny-wordpiece -d " + fx + "/train/tiny.csv --eval-dataset " + fx +
                          "/train/tiny.csv --eval-every 2 --max-steps 4 -b 2 --method full,lora --exec eager "
                          "--no-progress --runs-dir '" +
                          dir.path() + "' --run-id cmp > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const std::string html = run_report_html(dir.path() + "/cmp");
  EXPECT_NE(html.find("<h2>Method × exec comparison</h2>"), std::string::npos);
  EXPECT_EQ(count(html, "<h2>Training: "), 2u);  // full-eager, lora-eager
  // Per run: loss, evaluation, throughput (one series each but evaluation's two), memory by category (six).
  EXPECT_EQ(series_per_chart(html, "line-chart"), (std::vector<size_t>{1, 2, 1, 6, 1, 2, 1, 6}));
  // The step split into four phases, a column per step.
  EXPECT_EQ(series_per_chart(html, "stacked-columns"), (std::vector<size_t>{4, 4}));
  EXPECT_NE(html.find("<th>eval_accuracy</th>"), std::string::npos);
  EXPECT_EQ(count(html, "<summary>every step's numbers</summary>"), 2u);
  // What the comparison printed is the comparison's run.log, not its first run's.
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/cmp/run.log"));
  for (const auto& e : std::filesystem::directory_iterator(dir.path() + "/cmp"))
    if (e.is_directory()) { EXPECT_FALSE(std::filesystem::exists(e.path() / "run.log")) << e.path(); }
}

// The report's numbers with a fixed count of decimals: printf's "%.*f", whatever the size.
TEST(ReportNumbers, FixedTextIsPrintfsFixedNotation) {
  EXPECT_EQ(report::fixed_text(0.5, 3), "0.500");
  EXPECT_EQ(report::fixed_text(1234.5678, 2), "1234.57");
  EXPECT_EQ(report::fixed_text(2.5, 0), "2");  // halves to even, as printf
  EXPECT_EQ(report::fixed_text(-1e-12, 3), "-0.000") << "the sign kept, unlike fmt's prose";
  EXPECT_EQ(report::fmt("%.3f", -1e-12), "0.000");
  EXPECT_EQ(report::fixed_text(std::nan(""), 2), "nan");
  EXPECT_EQ(report::fixed_text(-INFINITY, 1), "-inf");
  EXPECT_GT(report::fixed_text(1e60, 2).size(), 60u) << "longer than the buffers it replaced, whole";
  for (double v : {0.1, -3.14159, 6.02e23, 1e-7, 1e60})
    for (int d : {0, 1, 4, 9}) {
      char expected[512];
      std::snprintf(expected, sizeof expected, "%.*f", d, v);
      EXPECT_EQ(report::fixed_text(v, d), expected) << v << " " << d;
    }
}

TEST(Report, NotARunDirectoryIsAClearError) {
  test::TempDir dir;
  EXPECT_NE(test::error_of([&] { run_report_html(dir.path()); }).find("nothing to report"), std::string::npos);
  EXPECT_NE(test::error_of([&] { run_report_html(dir.path() + "/none"); }).find("not a directory"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/report.html"));
}

}  // namespace
}  // namespace tach
