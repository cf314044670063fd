// tach shrink's table and findings, from its rows alone (results.jsonl): per batch size, which
// variants are on the frontier of accuracy against latency and against memory, and what dominates
// each other one.
#include <algorithm>
#include <functional>
#include <map>
#include <sstream>

#include "report/number_text.h"
#include "tach/shrink.h"

namespace tach {

namespace {

using report::fmt;

// The rows that compete: every axis but the variant (and the dtype it fixes) equal.
std::string frontier_group(const PointResult& p) { return p.key.id_without("variant"); }

double memory_of(const PointResult& p) {
  const auto it = p.allocator.find("total");
  return it == p.allocator.end() ? 0 : double(it->second.peak);
}

std::string mib(double bytes) { return fmt(bytes < 10 * 1048576.0 ? "%.2f MiB" : "%.1f MiB", bytes / 1048576.0); }

struct Group {
  std::string id;
  std::vector<const PointResult*> rows;
};

// Groups of measured rows with an accuracy, in the order first seen.
std::vector<Group> groups_of(const std::vector<PointResult>& rows) {
  std::vector<Group> groups;
  std::map<std::string, size_t> index;
  for (const auto& p : rows) {
    if (p.status != "ok" || !p.accuracy.measured || p.key.variant.empty()) continue;
    const std::string id = frontier_group(p);
    auto [it, fresh] = index.emplace(id, groups.size());
    if (fresh) groups.push_back({id, {}});
    groups[it->second].rows.push_back(&p);
  }
  return groups;
}

// "frontier: f32, int8; heads:0.5 dominated by int8 (0.8200 at 3.1 ms)"
std::string frontier_line(const Group& g, const std::string& cost_name,
                          const std::function<double(const PointResult&)>& cost,
                          const std::function<double(const PointResult&)>& noise,
                          const std::function<std::string(double)>& cost_text) {
  std::vector<ParetoPoint> points;
  for (const PointResult* p : g.rows) points.push_back({p->key.variant, p->accuracy.accuracy, cost(*p), noise(*p)});
  const std::vector<ParetoVerdict> verdicts = pareto_frontier(points);
  std::string on, off;
  for (size_t i = 0; i < verdicts.size(); ++i) {
    const ParetoVerdict& v = verdicts[i];
    const std::string here = "accuracy " + fmt("%.4f", points[i].accuracy) + " at " + cost_text(points[i].cost);
    if (v.on_frontier) {
      on += (on.empty() ? "" : ", ") + v.name + " (" + here + ")";
      continue;
    }
    std::string by;
    for (const std::string& d : v.dominated_by) by += (by.empty() ? "" : ", ") + d;
    off += "; " + v.name + " (" + here + ") is dominated by " + by;
  }
  return "accuracy against " + cost_name + ", " + g.id + ": on the frontier " + on + off;
}

}  // namespace

std::vector<std::string> shrink_findings(const std::vector<PointResult>& rows) {
  std::vector<std::string> out;
  const std::vector<Group> groups = groups_of(rows);
  for (const Group& g : groups) {
    out.push_back(frontier_line(
        g, "median batch latency", [](const PointResult& p) { return p.batch_latency_ms.median; }, latency_noise_ms,
        [](double ms) { return fmt("%.3g ms", ms); }));
    out.push_back(frontier_line(
        g, "peak memory (tach's allocator, all categories)", memory_of, [](const PointResult&) { return 0.0; }, mib));
  }
  if (groups.empty()) out.push_back("no variant has a measured row with an accuracy: no frontier to draw");
  for (const auto& p : rows)
    if (p.status == "ok" && p.load.contended) {
      out.push_back(
          "some rows were measured while other processes used the cores their threads needed (load.contended in "
          "results.jsonl): their latencies are the shared machine's, and a frontier drawn from them may move on a "
          "quiet one");
      break;
    }
  for (const auto& p : rows)
    if (p.status != "ok") out.push_back(p.key.id() + " " + p.status + ": " + p.reason);
  return out;
}

std::string shrink_table(const std::vector<PointResult>& rows) {
  size_t w = 7;
  for (const auto& p : rows) w = std::max(w, p.key.variant.size());
  std::ostringstream t;
  const auto cell = [](const std::string& s, size_t width) {
    return s.size() >= width ? s + " " : s + std::string(width - s.size() + 1, ' ');
  };
  t << cell("variant", w) << cell("dtype", 5) << cell("batch", 5) << cell("seq", 4) << cell("accuracy", 8)
    << cell("macro-F1", 8) << cell("p50 ms", 9) << cell("p95 ms", 9) << cell("samples/s", 10) << cell("peak mem", 10)
    << cell("weights", 10) << "load\n";
  for (const auto& p : rows) {
    const auto weights = p.allocator.find("weights");
    t << cell(p.key.variant, w) << cell(p.key.dtype, 5) << cell(std::to_string(p.key.batch), 5)
      << cell(std::to_string(p.key.seq_len), 4);
    if (p.status != "ok") {
      t << p.status << ": " << p.reason << "\n";
      continue;
    }
    t << cell(p.accuracy.measured ? fmt("%.4f", p.accuracy.accuracy) : "-", 8)
      << cell(p.accuracy.measured ? fmt("%.4f", p.accuracy.macro_f1) : "-", 8)
      << cell(fmt("%.3f", p.batch_latency_ms.median), 9) << cell(fmt("%.3f", p.batch_latency_ms.p95), 9)
      << cell(fmt("%.1f", p.samples_per_s), 10) << cell(mib(memory_of(p)), 10)
      << cell(weights == p.allocator.end() ? "-" : mib(double(weights->second.current)), 10)
      << (!p.load.measured   ? "unknown"
          : p.load.contended ? "contended"
                             : "quiet")
      << "\n";
  }
  return t.str();
}

}  // namespace tach
