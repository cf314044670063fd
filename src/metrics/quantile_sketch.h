// A relative-error quantile sketch (DDSketch's idea: logarithmic buckets, so that any quantile
// estimate is within `accuracy` of the true value, relatively). Memory grows with the log of the
// value range, not with the count: O(1) for a long run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

namespace tach::metrics {

class QuantileSketch {
 public:
  explicit QuantileSketch(double accuracy = 0.01);
  void add(double v);
  double quantile(double q) const;  // q in [0, 1]; NaN when empty
  int64_t count() const { return count_; }
  size_t buckets() const { return positive_.size() + negative_.size(); }

 private:
  int key(double magnitude) const;
  double value(int key) const;
  double gamma_, log_gamma_;
  std::map<int, int64_t> positive_, negative_;  // bucket key -> count (negative: by magnitude)
  int64_t zeros_ = 0, count_ = 0;
};

}  // namespace tach::metrics
