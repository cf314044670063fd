#include "analyze/comparison.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <sstream>

#include "report/compare_verdict.h"
#include "report/number_text.h"

namespace tach::analyze {
namespace {

using json = nlohmann::ordered_json;
using report::fmt;

std::string pct(double fraction) { return fmt("%+.1f%%", 100 * fraction); }

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string pad(std::string s, size_t width, bool right = true) {
  if (s.size() > width) s = s.substr(0, width - 3) + "...";
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

// One row's figures on one side: already divided by that side's step count where both have steps.
struct Side {
  bool present = false;
  double calls = 0, time_us = 0, self_cpu_us = 0, self_device_us = 0, share = 0;
};

json side_json(const Side& s, bool device) {
  if (!s.present) return nullptr;
  json o = {{"calls", s.calls}, {"time_us", s.time_us}};
  if (device) o["self_device_us"] = s.self_device_us;
  o["self_cpu_us"] = s.self_cpu_us;
  o["share"] = s.share;
  return o;
}

json delta_json(const Side& a, const Side& b) {
  return {{"time_us", b.time_us - a.time_us},
          {"time_change", a.present && b.present && a.time_us > 0 ? json(b.time_us / a.time_us - 1) : json(nullptr)},
          {"calls", b.calls - a.calls},
          {"share_points", 100 * (b.share - a.share)}};
}

struct Row {
  std::string key, name, detail;  // detail: input shapes or stack, by the grouping
  std::string type;               // kernels: COMPUTATION, ...
  Side base, now;
};

// Rows by |time delta|, largest first; ties by name.
void sort_by_delta(std::vector<Row>& rows) {
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    const double da = std::fabs(a.now.time_us - a.base.time_us), db = std::fabs(b.now.time_us - b.base.time_us);
    return da != db ? da > db : a.key < b.key;
  });
}

// Python frames are matched as stable_frame writes them: the object addresses in torch's frame
// names differ from run to run.
std::string row_key(const OpRow& r) {
  std::string k = r.name + '\x1f' + r.shapes;
  for (const auto& f : r.stack) k += '\x1f' + stable_frame(f);
  return k;
}

// ops: self device time where either run has GPU events (what the GPU spent), else self CPU time.
std::vector<Row> op_rows(const RunAnalysis& a, const RunAnalysis& b, bool device, double per_a, double per_b) {
  std::map<std::string, size_t> index;
  std::vector<Row> rows;
  // Ops proper: annotations (ProfilerStep#N, record_function spans) hold ops rather than time of
  // their own, and kernels, also rows of torch's table, are compared in the kernels table.
  auto add = [&](const RunAnalysis& run, double per, bool baseline) {
    double total = 0;
    for (const auto& r : run.ops)
      if (r.kind == RowKind::cpu) total += double(device ? r.self_device_ns : r.self_cpu_ns);
    for (const auto& r : run.ops) {
      if (r.kind != RowKind::cpu) continue;
      const std::string key = row_key(r);
      auto [it, fresh] = index.emplace(key, rows.size());
      if (fresh) {
        Row row;
        row.key = key;
        row.name = r.name;
        row.detail = r.shapes;
        for (const auto& f : r.stack) row.detail += (row.detail.empty() ? "" : " <- ") + stable_frame(f);
        rows.push_back(row);
      }
      // Summed: rows of one run whose frames differ only by addresses share a key.
      Side& s = baseline ? rows[it->second].base : rows[it->second].now;
      s.present = true;
      s.calls += double(r.calls) / per;
      s.self_cpu_us += double(r.self_cpu_ns) * 1e-3 / per;
      s.self_device_us += double(r.self_device_ns) * 1e-3 / per;
      s.time_us = device ? s.self_device_us : s.self_cpu_us;
      s.share += total > 0 ? double(device ? r.self_device_ns : r.self_cpu_ns) / total : 0;
    }
  };
  add(a, per_a, true);
  add(b, per_b, false);
  sort_by_delta(rows);
  return rows;
}

std::vector<Row> kernel_rows(const RunAnalysis& a, const RunAnalysis& b, double per_a, double per_b) {
  std::map<std::string, Row> rows;
  auto add = [&](const RunAnalysis& run, double per, bool baseline) {
    double total = 0;
    for (const auto& [name, k] : run.kernels) total += double(k.total_ns);
    for (const auto& [name, k] : run.kernels) {
      Row& row = rows[name];
      row.key = row.name = name;
      row.type = kernel_type_name(k.type);
      Side& s = baseline ? row.base : row.now;
      s.present = true;
      s.calls = double(k.calls) / per;
      s.time_us = double(k.total_ns) * 1e-3 / per;
      s.share = total > 0 ? double(k.total_ns) / total : 0;
    }
  };
  add(a, per_a, true);
  add(b, per_b, false);
  std::vector<Row> out;
  for (auto& [name, r] : rows) out.push_back(std::move(r));
  sort_by_delta(out);
  return out;
}

std::string ms_text(const Side& s) { return s.present ? fmt("%.3f", s.time_us * 1e-3) : "-"; }
std::string calls_text(const Side& s) { return s.present ? fmt("%.4g", s.calls) : "-"; }
std::string share_text(const Side& s) { return s.present ? fmt("%.1f%%", 100 * s.share) : "-"; }

// The change in time: "gone" and "new" only for a row on one side; "from 0" where the baseline's
// time was 0, "-" where both were (ops whose time is their kernels', with none).
std::string change_text(const Row& r) {
  if (!r.now.present) return "gone";
  if (!r.base.present) return "new";
  if (r.base.time_us > 0) return pct(r.now.time_us / r.base.time_us - 1);
  return r.now.time_us > 0 ? "from 0" : "-";
}

void table_text(std::ostringstream& s, const std::vector<Row>& rows, size_t top, bool kernels) {
  s << pad("name", kernels ? 60 : 44, false) << pad("base ms", 11) << pad("new ms", 11) << pad("delta ms", 11)
    << pad("change", 9) << pad("base calls", 11) << pad("new calls", 10) << pad("base share", 11)
    << pad("new share", 10) << "\n";
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const Row& r = rows[i];
    const std::string change = change_text(r);
    s << pad(r.name, kernels ? 60 : 44, false) << pad(ms_text(r.base), 11) << pad(ms_text(r.now), 11)
      << pad(fmt("%+.3f", (r.now.time_us - r.base.time_us) * 1e-3), 11) << pad(change, 9) << pad(calls_text(r.base), 11)
      << pad(calls_text(r.now), 10) << pad(share_text(r.base), 11) << pad(share_text(r.now), 10);
    if (!r.detail.empty()) s << "  " << r.detail;
    s << "\n";
  }
}

}  // namespace

double relative_iqr(std::vector<double> v) {
  if (v.size() < 2) return 0;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) {
    const double pos = q * double(v.size() - 1);
    const auto lo = size_t(pos);
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
  };
  const double m = at(0.5);
  return m > 0 ? (at(0.75) - at(0.25)) / m : 0;
}

StepVerdict judge_steps(const std::vector<double>& a, const std::vector<double>& b) {
  StepVerdict v;
  v.baseline_steps = a.size();
  v.steps = b.size();
  v.baseline_median_ms = median_of(a);
  v.median_ms = median_of(b);
  if (a.empty() || b.empty()) {
    v.verdict = "inconclusive";
    v.why = std::string("no ProfilerStep#N spans in ") +
            (a.empty() && b.empty() ? "either run"
             : a.empty()            ? "the baseline"
                                    : "this run") +
            " (torch.profiler's schedule and prof.step() write them): no step time to compare";
    return v;
  }
  v.change = v.baseline_median_ms > 0 ? v.median_ms / v.baseline_median_ms - 1 : 0;
  if (a.size() < 3 || b.size() < 3) {
    v.verdict = "inconclusive";
    v.why = std::to_string(a.size()) + " and " + std::to_string(b.size()) +
            " steps: at least 3 on each side are needed to see how much a run's steps spread (more profiled steps: "
            "the schedule's active or repeat)";
    return v;
  }
  // Seeded: the same traces give the same verdict.
  std::mt19937_64 rng(0);
  const report::RatioInterval r = report::block_bootstrap_ratio(a, b, 0.95, 10000, rng);
  v.change = r.change, v.lo = r.lo, v.hi = r.hi;
  v.baseline_drift = report::within_run_drift(a);
  v.drift = report::within_run_drift(b);
  v.baseline_spread = relative_iqr(a);
  v.spread = relative_iqr(b);
  const double drift = std::max(v.baseline_drift, v.drift), spread = std::max(v.baseline_spread, v.spread);
  if (r.lo <= 0 && r.hi >= 0) {
    v.verdict = "within noise";
    v.why = "not significant: the 95% interval, " + pct(r.lo) + " to " + pct(r.hi) + ", holds 0";
  } else if (std::fabs(r.change) < kStepNoiseThreshold) {
    v.verdict = "within noise";
    v.why = pct(r.change) + " is below the " + fmt("%.0f%%", 100 * kStepNoiseThreshold) + " threshold";
  } else if (report::within_drift(r.change, drift)) {
    v.verdict = "within noise";
    v.why = pct(r.change) + " is within the spread inside the runs: " +
            (v.baseline_drift >= v.drift ? "the baseline's" : "this run's") + " steps drifted " +
            fmt("%.1f%%", 100 * drift) + " while it ran";
  } else if (report::within_drift(r.change, spread)) {
    v.verdict = "inconclusive";
    v.why = pct(r.change) + " median step (95% interval " + pct(r.lo) + " to " + pct(r.hi) +
            ") is no larger than the spread of " + (v.baseline_spread >= v.spread ? "the baseline's" : "this run's") +
            " steps (interquartile range " + fmt("%.1f%%", 100 * spread) +
            " of the median): the two runs' steps overlap; more profiled steps, or a quieter machine, would tell";
  } else {
    v.verdict = r.change > 0 ? "slower" : "faster";
    v.why = pct(r.change) + " median step (95% interval " + pct(r.lo) + " to " + pct(r.hi) + "), beyond the drift (" +
            fmt("%.1f%%", 100 * drift) + ") and the spread of the steps (" + fmt("%.1f%%", 100 * spread) +
            ") inside either run";
  }
  return v;
}

RunComparisonText compare_analyses(const RunAnalysis& a, const RunAnalysis& b, const std::string& baseline_name,
                                   const std::string& name, size_t top) {
  const StepVerdict steps = judge_steps(a.step_walls_ms, b.step_walls_ms);
  // Per step where both runs have steps (runs profiled for different step counts compare alike),
  // else over the whole traces.
  const bool per_step = !a.step_walls_ms.empty() && !b.step_walls_ms.empty();
  const double per_a = per_step ? double(a.step_walls_ms.size()) : 1.0;
  const double per_b = per_step ? double(b.step_walls_ms.size()) : 1.0;
  const bool device = a.gpu || b.gpu;
  const std::vector<Row> ops = op_rows(a, b, device, per_a, per_b);
  const bool kernels_per_step = per_step && a.kernel_steps > 0 && b.kernel_steps > 0;
  const std::vector<Row> kernels = kernel_rows(a, b, kernels_per_step ? double(a.kernel_steps) : 1.0,
                                               kernels_per_step ? double(b.kernel_steps) : 1.0);

  json j;
  j["baseline"] = {{"paths", a.files}, {"steps", a.step_walls_ms.size()}};
  j["new"] = {{"paths", b.files}, {"steps", b.step_walls_ms.size()}};
  j["per"] = per_step ? "step" : "run";
  j["op_time"] = device ? "self_device" : "self_cpu";
  j["step_time"] = {{"baseline_steps", steps.baseline_steps},
                    {"steps", steps.steps},
                    {"baseline_median_ms", steps.baseline_median_ms},
                    {"median_ms", steps.median_ms},
                    {"change", steps.change},
                    {"ci", steps.lo != 0 || steps.hi != 0 ? json::array({steps.lo, steps.hi}) : json(nullptr)},
                    {"baseline_drift", steps.baseline_drift},
                    {"drift", steps.drift},
                    {"baseline_spread", steps.baseline_spread},
                    {"spread", steps.spread},
                    {"verdict", steps.verdict},
                    {"why", steps.why}};
  json jops = json::array();
  for (const auto& r : ops) {
    json o = {{"name", r.name}};
    if (!r.detail.empty()) o["detail"] = r.detail;
    o["baseline"] = side_json(r.base, device);
    o["new"] = side_json(r.now, device);
    o["delta"] = delta_json(r.base, r.now);
    jops.push_back(std::move(o));
  }
  j["ops"] = std::move(jops);
  json jk = json::array();
  for (const auto& r : kernels)
    jk.push_back({{"name", r.name},
                  {"type", r.type},
                  {"baseline", side_json(r.base, false)},
                  {"new", side_json(r.now, false)},
                  {"delta", delta_json(r.base, r.now)}});
  j["kernels"] = std::move(jk);

  std::ostringstream s;
  s << "tach analyze: " << name << " (" << b.files.size() << " trace" << (b.files.size() == 1 ? "" : "s")
    << ") against the baseline " << baseline_name << " (" << a.files.size() << " trace"
    << (a.files.size() == 1 ? "" : "s") << ")\n\n";
  s << "Step time: ";
  if (steps.baseline_steps && steps.steps)
    s << "median " << fmt("%.3f", steps.baseline_median_ms) << " ms -> " << fmt("%.3f", steps.median_ms) << " ms ("
      << pct(steps.change) << "; " << steps.baseline_steps << " and " << steps.steps << " steps): ";
  s << steps.verdict << "\n  " << steps.why << "\n";
  const std::string unit = per_step ? " per step" : " over the traces";
  s << "\nOps (" << (device ? "self device" : "self CPU") << " time" << unit << "; by the size of the change; "
    << std::min(top, ops.size()) << " of " << ops.size() << ")\n";
  table_text(s, ops, top, false);
  if (!kernels.empty()) {
    s << "\nKernels (GPU time" << unit << "; by the size of the change; " << std::min(top, kernels.size()) << " of "
      << kernels.size() << ")\n";
    table_text(s, kernels, top, true);
  } else {
    s << "\nKernels: no GPU events in either run\n";
  }
  return {std::move(j), s.str()};
}

}  // namespace tach::analyze

namespace tach {

namespace {

std::string side_name(const std::vector<std::string>& paths) {
  std::string s;
  for (const auto& p : paths) s += (s.empty() ? "" : " + ") + p;
  return s;
}

}  // namespace

TraceComparison compare_traces(const std::vector<std::string>& baseline, const std::vector<std::string>& now,
                               const AnalyzeOptions& options) {
  const analyze::RunAnalysis a = analyze::analyse_run(baseline, options);
  const analyze::RunAnalysis b = analyze::analyse_run(now, options);
  analyze::RunComparisonText c = analyze::compare_analyses(a, b, side_name(baseline), side_name(now), options.top);
  nlohmann::ordered_json j = b.json;
  j["baseline"] = a.json;
  j["comparison"] = std::move(c.json);
  TraceComparison out;
  out.analysis.files = a.files;
  out.analysis.files.insert(out.analysis.files.end(), b.files.begin(), b.files.end());
  out.analysis.json = analyze::analysis_json_text(j);
  out.analysis.text = std::move(c.text);
  out.details =
      "This run: " + side_name(now) + "\n" + b.text + "\nThe baseline: " + side_name(baseline) + "\n" + a.text;
  return out;
}

}  // namespace tach
