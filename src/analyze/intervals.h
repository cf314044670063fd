// Unions and intersections of [start, end) intervals in ns: the arithmetic behind step phases and
// HTA's GPU breakdowns (its merge_kernel_intervals).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace tach::analyze {

using Interval = std::pair<int64_t, int64_t>;  // [start, end) in ns

// Sorted, non-overlapping; touching intervals are joined.
std::vector<Interval> merge_intervals(std::vector<Interval> v);
int64_t covered_ns(const std::vector<Interval>& merged);
// Of merged intervals, the part inside [lo, hi).
int64_t covered_within(const std::vector<Interval>& merged, int64_t lo, int64_t hi);
// Time covered by both merged sets.
int64_t overlap_ns(const std::vector<Interval>& a, const std::vector<Interval>& b);

}  // namespace tach::analyze
