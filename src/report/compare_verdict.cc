#include "report/compare_verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tach::report {

namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t m = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + long(m), v.end());
  const double hi = v[m];
  if (v.size() % 2) return hi;
  return (*std::max_element(v.begin(), v.begin() + long(m)) + hi) / 2;
}

double quantile_sorted(const std::vector<double>& v, double q) {
  const double pos = q * double(v.size() - 1);
  const auto lo = size_t(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
}

// One bootstrap draw: as many blocks as there are, picked with replacement, their samples pooled.
double resampled_median(const std::vector<std::vector<double>>& blocks, std::vector<double>& pool,
                        std::mt19937_64& rng) {
  std::uniform_int_distribution<size_t> pick(0, blocks.size() - 1);
  pool.clear();
  for (size_t b = 0; b < blocks.size(); ++b) {
    const auto& block = blocks[pick(rng)];
    pool.insert(pool.end(), block.begin(), block.end());
  }
  return median_of(pool);
}

std::string cores(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string load_words(const PointResult::Load& l) {
  return cores(l.other_cores_mean) + " cores used by other processes (mean; max " + cores(l.other_cores_max) +
         ", load average " + cores(l.load_average_1m) + ")" + (l.contended ? ", contended" : ", not contended");
}

}  // namespace

std::vector<std::vector<double>> time_blocks(const std::vector<double>& samples) {
  const size_t n = samples.size();
  if (n < 2) return {samples};
  const size_t k = std::clamp<size_t>(n / 6, 2, 8);
  std::vector<std::vector<double>> blocks(k);
  // Block b holds samples [b n / k, (b + 1) n / k): sizes differ by one at most.
  for (size_t b = 0; b < k; ++b)
    blocks[b].assign(samples.begin() + long(b * n / k), samples.begin() + long((b + 1) * n / k));
  return blocks;
}

double within_run_drift(const std::vector<double>& samples) {
  if (samples.size() < 2) return 0;
  std::vector<double> medians;
  for (const auto& b : time_blocks(samples)) medians.push_back(median_of(b));
  const auto [lo, hi] = std::minmax_element(medians.begin(), medians.end());
  return *lo > 0 ? *hi / *lo - 1 : 0;
}

bool within_drift(double change, double drift) {
  // As ratios, so that a halving and a doubling weigh alike.
  return std::max(1 + change, 1 / (1 + change)) <= 1 + drift;
}

RatioInterval block_bootstrap_ratio(const std::vector<double>& base, const std::vector<double>& now, double confidence,
                                    int resamples, std::mt19937_64& rng) {
  RatioInterval r;
  r.change = median_of(now) / median_of(base) - 1;
  const auto base_blocks = time_blocks(base), now_blocks = time_blocks(now);
  std::vector<double> ratios, pool;
  ratios.reserve(size_t(resamples));
  for (int i = 0; i < resamples; ++i) {
    const double b = resampled_median(base_blocks, pool, rng);
    ratios.push_back(resampled_median(now_blocks, pool, rng) / b - 1);
  }
  std::sort(ratios.begin(), ratios.end());
  const double tail = (1 - confidence) / 2;
  r.lo = quantile_sorted(ratios, tail);
  r.hi = quantile_sorted(ratios, 1 - tail);
  return r;
}

LoadCheck load_check(const PointResult& baseline, const PointResult& now) {
  LoadCheck c;
  const PointResult::Load &a = baseline.load, &b = now.load;
  c.known = a.measured && b.measured;
  const bool a_contended = a.measured && a.contended, b_contended = b.measured && b.contended;
  const auto unsteady = [](const PointResult::Load& l) {
    return l.measured && l.other_cores_max - l.other_cores_mean > kLoadDifferenceCores;
  };
  const bool differ = c.known && (std::abs(a.other_cores_mean - b.other_cores_mean) > kLoadDifferenceCores ||
                                  std::abs(a.other_cores_max - b.other_cores_max) > kLoadDifferenceCores);
  c.inconclusive = a_contended || b_contended || differ || unsteady(a) || unsteady(b);
  if (!c.inconclusive) return c;
  const std::string both = (a.measured ? "the baseline with " + load_words(a) : "the baseline without a load record") +
                           ", this run with " + (b.measured ? load_words(b) : "no load record");
  if (a_contended && b_contended) {
    c.why = "measured under contention on both sides, so the change may be the other processes': " + both;
  } else if (a_contended || b_contended) {
    c.why = (c.known ? "measured under different load: " : "measured under contention on one side: ") + both;
  } else if (unsteady(a) || unsteady(b)) {
    c.why = std::string("measured under different load: other processes' use changed by more than ") +
            cores(kLoadDifferenceCores) + " cores while " +
            (unsteady(a) && unsteady(b) ? "each run"
             : unsteady(a)              ? "the baseline"
                                        : "this run") +
            " was measured (its busiest stretch against its mean): " + both;
  } else {
    c.why =
        "measured under different load (what runs beside a point shares its caches, memory bandwidth and "
        "clock, contended or not): " +
        both;
  }
  return c;
}

}  // namespace tach::report
