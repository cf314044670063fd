// The rules that end a point's measured runs: a count, a time budget, or a precise enough median.
#include <cmath>
#include <sstream>

#include "bench/bench_internal.h"
#include "tach/stats.h"

namespace tach {

std::string StoppingRule::describe() const {
  std::ostringstream s;
  if (runs > 0) {
    s << "exactly " << runs << " measured runs";
    return s.str();
  }
  s << "between " << min_runs << " and " << max_runs << " measured runs, stopping";
  if (target_cv > 0) s << " once the median's relative standard error is below " << target_cv * 100 << "%";
  if (target_cv > 0 && time_budget_s > 0) s << " or";
  if (time_budget_s > 0) s << " once " << time_budget_s << " s were measured";
  return s.str();
}

namespace bench {

std::string stop_reason(const StoppingRule& rule, const std::vector<double>& latencies_s, double measured_s) {
  const auto n = static_cast<int>(latencies_s.size());
  std::ostringstream s;
  if (rule.runs > 0) {
    if (n < rule.runs) return "";
    s << "count: " << n << " runs";
    return s.str();
  }
  if (n >= rule.max_runs) {
    s << "max runs: " << n << " runs";
    return s.str();
  }
  if (n < rule.min_runs) return "";
  if (rule.target_cv > 0) {
    const Summary sum = summarize(latencies_s);
    double var = 0;
    for (double v : latencies_s) var += (v - sum.mean) * (v - sum.mean);
    const double sd = n > 1 ? std::sqrt(var / (n - 1)) : 0;
    // Standard error of the median under normal noise: sqrt(pi/2) * sd / sqrt(n).
    const double rse = sum.median > 0 ? 1.2533 * sd / (std::sqrt(double(n)) * sum.median) : 0;
    if (rse < rule.target_cv) {
      s.precision(2);
      s << "precision: median's relative standard error " << std::fixed << rse * 100 << "% < " << rule.target_cv * 100
        << "% after " << n << " runs";
      return s.str();
    }
  }
  if (rule.time_budget_s > 0 && measured_s >= rule.time_budget_s) {
    s.precision(2);
    s << "time budget: " << std::fixed << measured_s << " s >= " << rule.time_budget_s << " s after " << n << " runs";
    return s.str();
  }
  return "";
}

Distribution distribution(const std::vector<double>& v) {
  Distribution d;
  d.n = static_cast<int64_t>(v.size());
  if (v.empty()) return d;
  const Summary s = summarize(v);
  d.median = s.median;
  d.mean = s.mean;
  d.min = s.min;
  d.max = s.max;
  double var = 0;
  for (double x : v) var += (x - s.mean) * (x - s.mean);
  d.std = v.size() > 1 ? std::sqrt(var / double(v.size() - 1)) : 0;
  d.p90 = percentile(v, 0.90);
  d.p95 = percentile(v, 0.95);
  d.p99 = percentile(v, 0.99);
  return d;
}

}  // namespace bench
}  // namespace tach
