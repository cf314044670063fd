// What a profile means: step accounting (ops against the step, the gap named), the leak
// verdict from the memory timeline, and the top bottlenecks in words.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "profile/cpu_caches.h"
#include "tach/profile.h"
#include "tach/stats.h"
#include "tach/plain_number.h"

namespace tach {

namespace {

std::string mib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / 1048576.0);
  return buf;
}

// Least-squares slope and R^2 of y over x = 0, 1, 2, ...
void fit(const std::vector<double>& y, double* slope, double* r2) {
  const double n = double(y.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double x = double(i);
    sx += x, sy += y[i], sxx += x * x, sxy += x * y[i], syy += y[i] * y[i];
  }
  const double den = n * sxx - sx * sx;
  *slope = den > 0 ? (n * sxy - sx * sy) / den : 0;
  const double vy = n * syy - sy * sy;
  *r2 = den > 0 && vy > 0 ? (n * sxy - sx * sy) * (n * sxy - sx * sy) / (den * vy) : 0;
}

}  // namespace

StepAccounting step_accounting(const ProfileData& d) {
  StepAccounting a;
  std::map<int64_t, double> ops, modules;
  for (const auto& e : d.events) {
    const bool outermost_op = e.kind == EventKind::op;  // ops do not nest in one another
    if (outermost_op) ops[e.step] += double(e.duration_ns());
    if (e.kind != EventKind::op && e.depth == 0)
      modules[e.step] += double(e.duration_ns());  // outermost spans: the model's forward, user scopes
  }
  std::vector<double> step, op, inside, outside;
  for (const auto& s : d.steps) {
    if (!s.active) continue;
    const double wall = double(s.end_ns - s.start_ns);
    step.push_back(wall);
    op.push_back(ops[s.step]);
    inside.push_back(std::max(0.0, modules[s.step] - ops[s.step]));
    outside.push_back(std::max(0.0, wall - modules[s.step]));
  }
  a.step_ns = summarize(step).median;
  a.ops_ns = summarize(op).median;
  a.inside_modules_ns = summarize(inside).median;
  a.outside_ns = summarize(outside).median;
  return a;
}

LeakVerdict detect_leak(const ProfileData& d, int64_t threshold_bytes) {
  LeakVerdict v;
  std::vector<const StepSample*> samples;
  for (const auto& s : d.steps)
    if (s.allocator_total_bytes || s.rss_bytes) samples.push_back(&s);
  if (samples.size() < 3) {
    v.explanation = "fewer than 3 memory samples: no verdict (profile more steps, or log memory more often)";
    return v;
  }
  // The first sample is the baseline (as a memory profiler's set_baseline); growth after it counts.
  for (int c = 0; c < kMemoryCategoryCount; ++c) {
    std::vector<double> y;
    for (const auto* s : samples) y.push_back(double(s->allocator_bytes[size_t(c)]));
    double slope = 0, r2 = 0;
    fit(y, &slope, &r2);
    const double growth = y.back() - y.front();
    // Steady growth: the fit explains the series, and the total passes the threshold.
    if (growth > double(threshold_bytes) && r2 > 0.8 && slope > 0) {
      v.leak = true;
      v.growing_categories.push_back(std::string(memory_category_name(MemoryCategory(c))) + ": +" + mib(slope) +
                                     " per step, +" + mib(growth) + " over " + std::to_string(samples.size()) +
                                     " samples (R^2 " + plain_number(r2, 3) + ")");
      v.bytes_per_step += slope;
    }
  }
  // Scopes whose allocations outlive them: net bytes (allocated - freed) per step, by path.
  std::map<std::string, double> net;
  int64_t active = 0;
  for (const auto& s : d.steps) active += s.active;
  for (const auto& e : d.events) {
    if (e.kind == EventKind::op) continue;
    net[e.path.empty() ? e.name : e.path + "." + e.name] += double(e.allocated_bytes - e.freed_bytes);
  }
  std::vector<std::pair<double, std::string>> grew;
  for (const auto& [path, bytes] : net)
    if (active > 0 && bytes / double(active) > double(threshold_bytes) / double(samples.size()))
      grew.push_back({bytes, path});
  std::sort(grew.rbegin(), grew.rend());
  // Scopes return their outputs, so some net allocation per scope is normal: name them only
  // when the totals grow.
  for (size_t i = 0; v.leak && i < grew.size() && i < 5; ++i)
    v.growing_scopes.push_back(grew[i].second + ": +" + mib(grew[i].first / double(active)) + " kept per step");
  if (v.leak)
    v.explanation = "memory grows steadily across steps (beyond " + mib(double(threshold_bytes)) +
                    "): " + std::to_string(v.growing_categories.size()) + " categories";
  else
    v.explanation = "no steady growth beyond " + mib(double(threshold_bytes)) + " across " +
                    std::to_string(samples.size()) + " memory samples";
  return v;
}

std::vector<std::string> ceiling_violations(const ProfileData& d, const MachineCeilings& c) {
  std::vector<std::string> out;
  for (const auto& r : op_table(d, "shape", "self", c)) {
    if (!r.verdict.above_ceiling) continue;
    char line[320];
    std::snprintf(line, sizeof line, "%s ran at %.0f%% of its %s ceiling", r.key.c_str(),
                  r.verdict.achieved_fraction * 100, r.verdict.bound == Bound::memory ? "memory" : "GEMM");
    out.push_back(line);
  }
  return out;
}

std::vector<std::string> bottlenecks(const ProfileData& d, const MachineCeilings& c, size_t top) {
  std::vector<std::string> out;
  const auto rows = op_table(d, "shape", "self", c);
  for (size_t i = 0; i < rows.size() && out.size() < top; ++i) {
    const auto& r = rows[i];
    char head[160];
    std::snprintf(head, sizeof head,
                  "%s takes %.1f%% of the steps (%lld calls), %s at %.0f%% of its ceiling: ", r.key.c_str(),
                  r.percent_of_steps, static_cast<long long>(r.calls), bound_name(r.verdict.bound),
                  r.verdict.achieved_fraction * 100);
    std::string advice;
    const std::string op = r.key.substr(0, r.key.find(" |"));
    if (r.cache_resident) {
      std::snprintf(head, sizeof head, "%s takes %.1f%% of the steps (%lld calls), ", r.key.c_str(), r.percent_of_steps,
                    static_cast<long long>(r.calls));
      advice = cache_resident_note(r, profile::last_level_cache_bytes()) + " (" +
               std::to_string(int(std::lround(r.verdict.achieved_fraction * 100))) +
               "% of it); larger shapes that spill the cache would be bound by DRAM";
    } else if (r.verdict.bound == Bound::compute)
      advice = op == "linear" ? "fewer FLOPs move it: a smaller model, shorter sequences (less padding: bucketing), or "
                                "a faster GEMM dtype where the CPU has native bf16/AMX"
                              : "it is doing useful arithmetic near the peak; reduce the work it is given";
    else if (r.verdict.bound == Bound::memory)
      advice =
          "fewer bytes move it: fuse it with its neighbour, keep activations in a narrower dtype, or batch more "
          "rows per weight read";
    else
      advice =
          "it is far from both ceilings: per-call overhead (small shapes, many calls, threading and dispatch) "
          "dominates; larger batches or fused kernels move it";
    out.push_back(std::string(head) + advice);
  }
  return out;
}

}  // namespace tach
