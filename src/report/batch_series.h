// A sweep's finished points as the series its charts over batch size draw (report.html's
// inference and training sweeps): every axis but the batch names a series, so each series is one
// line, one point per batch size.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "report/svg_chart.h"
#include "tach/bench.h"

namespace tach::report {

// What ran a point where it is not tach's own model, as the first word of its series' name:
// "int8 ", "heads:0.5 " for a tach shrink variant, "torch " for another engine, "" otherwise. Two
// variants (f32 and heads:0.5) or two engines on the same device and dtype are then two series,
// not points of one line.
inline std::string who_ran(const PointKey& k) {
  std::string who = k.variant.empty() ? "" : k.variant + " ";
  if (k.engine != "tach") who += k.engine + " ";
  return who;
}

// Finished points per series name, each series by batch size, the series in the order their
// first point was measured.
struct BatchSeries {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const PointResult*>> points;
};

inline BatchSeries batch_series(const std::vector<PointResult>& points,
                                const std::function<std::string(const PointResult&)>& series_name) {
  BatchSeries s;
  for (const auto& p : points) {
    if (p.status != "ok") continue;
    const std::string name = series_name(p);
    if (!s.points.count(name)) s.order.push_back(name);
    s.points[name].push_back(&p);
  }
  for (auto& [name, v] : s.points)
    std::stable_sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->key.batch < b->key.batch; });
  return s;
}

// A chart's lines: per series, `value` against batch size.
inline std::vector<Series> lines_over_batch(const BatchSeries& by,
                                            const std::function<double(const PointResult&)>& value) {
  std::vector<Series> lines;
  for (const auto& name : by.order) {
    Series s;
    s.name = name;
    for (const PointResult* p : by.points.at(name)) {
      s.x.push_back(double(p->key.batch));
      s.y.push_back(value(*p));
    }
    lines.push_back(s);
  }
  return lines;
}

}  // namespace tach::report
