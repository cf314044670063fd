#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "tach/bench.h"
#include "tach/stats.h"

namespace tach {

const char* const kThroughputDefinition =
    "samples/s = batch / median batch latency (tokens/s and GFLOP/s: a batch's tokens and FLOPs over the same "
    "median)";

double per_second_at_median(double per_batch, double median_ms) {
  return median_ms > 0 ? per_batch * 1e3 / median_ms : 0;
}

void set_throughput_from_median(PointResult& p) {
  const double median_ms = p.batch_latency_ms.median;
  const double rows = double(p.key.batch) * double(p.key.kind == "train" ? p.train.world_size : 1);
  p.samples_per_s = per_second_at_median(rows, median_ms);
  p.batches_per_s = per_second_at_median(1, median_ms);
  p.tokens_per_s = per_second_at_median(p.real_tokens_per_batch, median_ms);
  p.achieved_gflops_per_s = per_second_at_median(p.flops_per_batch, median_ms) / 1e9;
  if (p.key.kind == "train" && p.train.ceiling_gflops_per_s > 0)
    p.train.mfu = p.achieved_gflops_per_s / p.train.ceiling_gflops_per_s;
  // A decode step makes one token for every row.
  if (p.decode.step_ms.n > 0)
    p.decode.tokens_per_s = per_second_at_median(double(p.key.batch), p.decode.step_ms.median);
}

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
