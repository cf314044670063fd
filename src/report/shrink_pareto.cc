// The Pareto frontier of accuracy against a cost (latency or memory): which variants are worth
// having, and what each other one loses to.
#include "tach/shrink.h"

namespace tach {

namespace {

// b dominates a: at least as accurate and at most as costly, strictly better in one of the two.
bool dominates(const ParetoPoint& b, const ParetoPoint& a) {
  return b.accuracy >= a.accuracy && b.cost <= a.cost && (b.accuracy > a.accuracy || b.cost < a.cost);
}

}  // namespace

// n variants: O(n^2) comparisons, a handful of variants each.
std::vector<ParetoVerdict> pareto_frontier(const std::vector<ParetoPoint>& points) {
  std::vector<ParetoVerdict> out;
  out.reserve(points.size());
  for (const ParetoPoint& a : points) {
    ParetoVerdict v;
    v.name = a.name;
    for (const ParetoPoint& b : points)
      if (&b != &a && dominates(b, a)) v.dominated_by.push_back(b.name);
    v.on_frontier = v.dominated_by.empty();
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace tach
