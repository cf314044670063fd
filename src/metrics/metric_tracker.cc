// MetricTracker: exact series (windows possible) or O(1) streaming statistics per metric.
#include <algorithm>
#include <cmath>
#include <limits>

#include "metrics/quantile_sketch.h"
#include "tach/error.h"
#include "tach/metrics.h"
#include "tach/stats.h"

namespace tach {

// Order statistics and moments of a series (numpy's percentiles, std with n - 1).
SeriesStats series_stats(const std::vector<double>& v) {
  SeriesStats s;
  if (v.empty()) return s;
  s.count = int64_t(v.size());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / double(v.size());
  double m2 = 0;
  for (double x : v) m2 += (x - s.mean) * (x - s.mean);
  s.std = v.size() > 1 ? std::sqrt(m2 / double(v.size() - 1)) : 0;
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  s.min = *lo;
  s.max = *hi;
  s.p50 = percentile(v, 0.50);
  s.p95 = percentile(v, 0.95);
  s.p99 = percentile(v, 0.99);
  return s;
}

struct MetricTracker::Series {
  std::vector<std::pair<int64_t, double>> values;  // exact mode
  // streaming mode: Welford's running mean and M2, extremes, and the sketch
  int64_t n = 0;
  double mean = 0, m2 = 0, min = 0, max = 0;
  std::unique_ptr<metrics::QuantileSketch> sketch;
  int64_t rejected = 0;
};

MetricTracker::MetricTracker(Mode mode, double accuracy) : mode_(mode), accuracy_(accuracy) {
  check(accuracy > 0 && accuracy < 0.5, "MetricTracker: the sketch's relative accuracy must be in (0, 0.5)");
}
MetricTracker::~MetricTracker() = default;

void MetricTracker::update(const std::string& name, double value, int64_t step) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = series_[name];
  if (!slot) {
    slot = std::make_unique<Series>();
    if (mode_ == Mode::streaming) slot->sketch = std::make_unique<metrics::QuantileSketch>(accuracy_);
  }
  Series& s = *slot;
  if (!std::isfinite(value)) {
    ++s.rejected;
    return;
  }
  if (mode_ == Mode::exact) {
    s.values.emplace_back(step, value);
    return;
  }
  ++s.n;
  const double d = value - s.mean;
  s.mean += d / double(s.n);
  s.m2 += d * (value - s.mean);
  s.min = s.n == 1 ? value : std::min(s.min, value);
  s.max = s.n == 1 ? value : std::max(s.max, value);
  s.sketch->add(value);
}

void MetricTracker::update_batch(const std::map<std::string, double>& values, int64_t step) {
  for (const auto& [name, v] : values) update(name, v, step);
}

SeriesStats MetricTracker::stats(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = series_.find(name);
  if (it == series_.end()) return {};
  const Series& s = *it->second;
  if (mode_ == Mode::exact) {
    std::vector<double> v;
    v.reserve(s.values.size());
    for (const auto& p : s.values) v.push_back(p.second);
    return series_stats(v);
  }
  SeriesStats r;
  if (s.n == 0) return r;
  r.count = s.n;
  r.mean = s.mean;
  r.std = s.n > 1 ? std::sqrt(s.m2 / double(s.n - 1)) : 0;
  r.min = s.min;
  r.max = s.max;
  r.p50 = std::clamp(s.sketch->quantile(0.50), s.min, s.max);
  r.p95 = std::clamp(s.sketch->quantile(0.95), s.min, s.max);
  r.p99 = std::clamp(s.sketch->quantile(0.99), s.min, s.max);
  return r;
}

SeriesStats MetricTracker::window_stats(const std::string& name, size_t n) const {
  check(mode_ == Mode::exact, "MetricTracker: windows need exact mode (streaming mode keeps no values)");
  std::lock_guard<std::mutex> lock(mu_);
  auto it = series_.find(name);
  if (it == series_.end() || n == 0) return {};
  const auto& vals = it->second->values;
  const size_t first = vals.size() > n ? vals.size() - n : 0;
  std::vector<double> v;
  for (size_t i = first; i < vals.size(); ++i) v.push_back(vals[i].second);
  return series_stats(v);
}

int64_t MetricTracker::rejected(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = series_.find(name);
  return it == series_.end() ? 0 : it->second->rejected;
}

std::vector<std::string> MetricTracker::names() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, _] : series_) out.push_back(name);
  return out;
}

std::vector<std::pair<int64_t, double>> MetricTracker::history(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = series_.find(name);
  return it == series_.end() ? std::vector<std::pair<int64_t, double>>{} : it->second->values;
}

}  // namespace tach
