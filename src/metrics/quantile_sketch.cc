#include "metrics/quantile_sketch.h"

#include <cmath>
#include <limits>

namespace tach::metrics {

namespace {
constexpr double kMinMagnitude = 1e-12;  // below this a value counts as zero
}

QuantileSketch::QuantileSketch(double accuracy)
    : gamma_((1 + accuracy) / (1 - accuracy)), log_gamma_(std::log((1 + accuracy) / (1 - accuracy))) {}

int QuantileSketch::key(double m) const { return static_cast<int>(std::ceil(std::log(m) / log_gamma_)); }

// The bucket (gamma^(k-1), gamma^k] is represented by the point with equal relative error to
// both ends: 2 gamma^k / (gamma + 1).
double QuantileSketch::value(int k) const { return 2.0 * std::pow(gamma_, k) / (gamma_ + 1.0); }

void QuantileSketch::add(double v) {
  ++count_;
  if (std::fabs(v) < kMinMagnitude) ++zeros_;
  else if (v > 0) ++positive_[key(v)];
  else ++negative_[key(-v)];
}

double QuantileSketch::quantile(double q) const {
  if (count_ == 0) return std::numeric_limits<double>::quiet_NaN();
  q = q < 0 ? 0 : (q > 1 ? 1 : q);
  // The rank of the order statistic numpy's "lower" interpolation would pick.
  const auto rank = static_cast<int64_t>(q * double(count_ - 1));
  int64_t seen = 0;
  for (auto it = negative_.rbegin(); it != negative_.rend(); ++it) {  // most negative first
    seen += it->second;
    if (seen > rank) return -value(it->first);
  }
  seen += zeros_;
  if (seen > rank) return 0;
  for (const auto& [k, n] : positive_) {
    seen += n;
    if (seen > rank) return value(k);
  }
  return value(positive_.rbegin()->first);
}

}  // namespace tach::metrics
