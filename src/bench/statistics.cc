#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "tach/stats.h"

namespace tach {

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * double(v.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
}

Summary summarize(std::vector<double> v) {
  Summary s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = percentile(v, 0.5);
  s.p10 = percentile(v, 0.1);
  s.p90 = percentile(v, 0.9);
  s.iqr = percentile(v, 0.75) - percentile(v, 0.25);
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
  return s;
}

double timer_overhead_seconds() {
  using clock = std::chrono::steady_clock;
  std::vector<double> per_call;
  for (int round = 0; round < 21; ++round) {
    constexpr int kCalls = 1000;
    const auto t0 = clock::now();
    for (int i = 0; i < kCalls; ++i) {
      auto t = clock::now();
      asm volatile("" : : "r"(&t) : "memory");  // keep the call from being optimised away
    }
    const auto t1 = clock::now();
    per_call.push_back(std::chrono::duration<double>(t1 - t0).count() / kCalls);
  }
  return summarize(per_call).median;
}

}  // namespace tach
