// report.html's panel for a tach shrink run: accuracy against median latency and against memory,
// each variant a point and the frontier a line, per batch size, with the frontier's verdicts in a
// table beside the charts.
#include <algorithm>
#include <map>

#include "report/figure_book.h"
#include "report/number_text.h"
#include "report/report_sections.h"
#include "report/svg_chart.h"
#include "tach/shrink.h"

namespace tach::report {

namespace {

double memory_mib(const PointResult& p) {
  const auto it = p.allocator.find("total");
  return it == p.allocator.end() ? 0 : double(it->second.peak) / 1048576.0;
}

// One chart: every variant a series of one point, then the frontier joined in cost order (a dashed
// line without markers of its own, so the variants' markers on it stay visible).
std::string pareto_chart(const std::string& title, const std::string& x_label,
                         const std::vector<const PointResult*>& rows, double (*cost)(const PointResult&),
                         double (*noise)(const PointResult&), std::vector<std::string>* frontier_names) {
  std::vector<ParetoPoint> points;
  std::vector<Series> series;
  for (const PointResult* p : rows) {
    points.push_back({p->key.variant, p->accuracy.accuracy, cost(*p), noise(*p)});
    series.push_back({p->key.variant, {cost(*p)}, {p->accuracy.accuracy}, {}, {}});
  }
  const std::vector<ParetoVerdict> verdicts = pareto_frontier(points);
  std::vector<ParetoPoint> frontier;
  for (size_t i = 0; i < verdicts.size(); ++i)
    if (verdicts[i].on_frontier) frontier.push_back(points[i]);
  std::sort(frontier.begin(), frontier.end(), [](const auto& a, const auto& b) { return a.cost < b.cost; });
  Series line{"frontier", {}, {}, {}, {}, /*markers=*/false};
  for (const auto& f : frontier) {
    line.x.push_back(f.cost), line.y.push_back(f.accuracy);
    frontier_names->push_back(f.name);
  }
  series.push_back(line);
  LineChartSpec spec;
  spec.title = title;
  spec.x_label = x_label;
  spec.y_label = "accuracy";
  spec.zero_y = false;
  spec.pad_x = true;
  return line_chart(spec, series);
}

double latency_ms(const PointResult& p) { return p.batch_latency_ms.median; }
double exact(const PointResult&) { return 0; }

}  // namespace

void shrink_section(std::ostringstream& h, FigureBook& figs, const std::vector<PointResult>& points) {
  // Rows that compete: every axis but the variant equal, each with its accuracy.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const PointResult*>> groups;
  for (const auto& p : points) {
    if (p.key.variant.empty() || p.status != "ok" || !p.accuracy.measured) continue;
    const std::string id = p.key.id_without("variant");
    if (!groups.count(id)) order.push_back(id);
    groups[id].push_back(&p);
  }
  if (order.empty()) return;
  h << "<h2>Variants: accuracy against latency and memory</h2><p class='muted'>Each variant's accuracy is tach "
       "eval's pass on the run's dataset; latency is the median batch latency under bench's stopping rule; memory "
       "is the peak of tach's allocator over the point (every category). A variant is on the frontier when no "
       "other is at least as accurate and at most as costly; the line joins the frontier.</p>";
  for (const std::string& id : order) {
    const auto& rows = groups.at(id);
    std::vector<std::string> fast, small;
    const std::string stem = figure_file_stem(id);
    // Drawn first: each chart fills its frontier's names, which its slide's key numbers then say.
    const std::string latency_chart =
        pareto_chart("accuracy against median latency, " + id, "median batch latency (ms)", rows, latency_ms,
                     latency_noise_ms, &fast);
    const std::string memory_chart =
        pareto_chart("accuracy against peak memory, " + id, "peak memory (MiB)", rows, memory_mib, exact, &small);
    const auto names = [](const std::vector<std::string>& v) {
      std::string s;
      for (const auto& n : v) s += (s.empty() ? "" : ", ") + n;
      return s;
    };
    h << "<h3>" << escape_html(id) << "</h3><div class='panel'>"
      << figs.add("pareto_latency_" + stem, "accuracy against latency: " + id, latency_chart,
                  {"frontier: " + names(fast)})
      << figs.add("pareto_memory_" + stem, "accuracy against memory: " + id, memory_chart,
                  {"frontier: " + names(small)})
      << "<table><tr><th>variant</th><th>dtype</th><th>accuracy</th><th>median ms</th><th>peak MiB</th>"
         "<th>latency frontier</th><th>memory frontier</th></tr>";
    for (const PointResult* p : rows) {
      const bool on_fast = std::count(fast.begin(), fast.end(), p->key.variant) > 0;
      const bool on_small = std::count(small.begin(), small.end(), p->key.variant) > 0;
      h << "<tr><td>" << escape_html(p->key.variant) << "</td><td>" << escape_html(p->key.dtype) << "</td><td>"
        << fmt("%.4f", p->accuracy.accuracy) << "</td><td>" << fmt("%.3f", latency_ms(*p)) << "</td><td>"
        << fmt("%.3f", memory_mib(*p)) << "</td><td>" << (on_fast ? "on" : "dominated") << "</td><td>"
        << (on_small ? "on" : "dominated") << "</td></tr>";
    }
    h << "</table></div>";
  }
}

}  // namespace tach::report
