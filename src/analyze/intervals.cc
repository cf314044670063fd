#include "analyze/intervals.h"

#include <algorithm>

namespace tach::analyze {

std::vector<Interval> merge_intervals(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const auto& i : v) {
    if (i.second <= i.first) continue;
    if (!out.empty() && i.first <= out.back().second) {
      out.back().second = std::max(out.back().second, i.second);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

int64_t covered_ns(const std::vector<Interval>& merged) {
  int64_t t = 0;
  for (const auto& i : merged) t += i.second - i.first;
  return t;
}

int64_t covered_within(const std::vector<Interval>& merged, int64_t lo, int64_t hi) {
  int64_t t = 0;
  auto it = std::lower_bound(merged.begin(), merged.end(), Interval{lo, lo},
                             [](const Interval& a, const Interval& b) { return a.second < b.first; });
  for (; it != merged.end() && it->first < hi; ++it)
    t += std::max<int64_t>(0, std::min(hi, it->second) - std::max(lo, it->first));
  return t;
}

int64_t overlap_ns(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  int64_t t = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    t += std::max<int64_t>(0, std::min(a[i].second, b[j].second) - std::max(a[i].first, b[j].first));
    if (a[i].second < b[j].second) ++i;
    else ++j;
  }
  return t;
}

}  // namespace tach::analyze
